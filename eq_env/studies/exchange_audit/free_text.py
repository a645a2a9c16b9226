"""``eq-env free-text``: the cheap-talk collapse measured — artifacts vs text only vs action only.

The paper compares a proposer that attaches a reasoning artifact (typed claims c and a free text t) with one that
sends its action alone, and names the missing baseline itself: no pure free-text regime. The configuration field
``regime`` (:func:`~eq_env.exchange_audit.rules.withhold`) makes the three a property of the game, played by the
*same* proposer on the *same* states:

* ``artifacts`` — claims and text reach the validator and the audit (the paper);
* ``text_only`` — the typed claims are withheld; the text (and its cost) goes through. An audit finds none of the
  claims it needs and is inconclusive: it verifies nothing and fines nothing, and the rule validator blocks after
  it (the paper's rule for an audit missing claims);
* ``action_only`` — nothing of the artifact is sent or charged (the paper's no-explanation baseline).

The honest proposer's text says what its claims say (:func:`~eq_env.baselines.exchange_audit.scripted.explanation_text`:
intent, risk and net delta against their limits, "within limits"), so under the ``"paper"`` preset — claims and
text both judged from the proposer's noisy observation — text-only carries the artifacts' information without
their structure. That separates the two:

* **information content** = text-only (read by a validator that reads text) − action-only;
* **structure** (typed, auditable claims) = artifacts − text-only.

Validators: the paper's ``rule`` engine (reads the typed claims, never the text), the scripted ``text_reader``
(the same rule with the claim test replaced by a keyword/number reading of the text,
:func:`~eq_env.baselines.exchange_audit.scripted.text_reader_decision`), and any given (e.g. the LLM validator ungated,
``llm:gate=none``, which reads both). Proposers: ``honest``, ``silent`` (the paper's action-only proposer; under
every regime it equals the honest proposer under ``action_only``), and the strategic mimic ``strategic:p=1``: it
lies whenever it believes its trade non-compliant, shading its numbers inside the safe margin and writing, word
for word, the text an honest proposer writes for a compliant hedge at those numbers (its claims assert
compliance too).

Metrics per (q, regime, validator, proposer), mean ± std over seeds: approval rate, bad approval rate (approved
and non-compliant, over all episodes), welfare, ambiguous approval and welfare, and the proposer's payoff (does
lying pay?). Writes ``free_text.csv`` (every condition), ``free_text.md`` (the decomposition across q and every
condition at ``q``), ``free_text.png`` (welfare and ambiguous approval of the honest proposer, welfare and bad
approvals of the mimic, against q), ``results.jsonl`` (one record per run: re-running the command resumes from
it) and ``summary.md`` (the tables and what they measured).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eq_env.agents.exchange_audit.dry_run import dry_run
from eq_env.core.cli import (
    Command,
    add_backend_flags,
    add_flag_groups,
    configure_flag_groups,
    episodes_arg,
    executor_of,
    failures,
    fill_spec,
    int_in,
    jobs_arg,
    out_dir,
    seed_arg,
    seeds_arg,
)
from eq_env.core.executors import Executor
from eq_env.core.experiments import (
    ENGINES,
    Condition,
    ResultsStore,
    aggregate,
    check_runs,
    failed_runs,
    llm_columns,
    llm_report,
    paired_difference,
    run_all,
)
from eq_env.core.policy import parse_policy_spec
from eq_env.core.report import fmt_number, markdown_table, mean_std, plot_lines, write_csv
from eq_env.exchange_audit.config import PRESETS, REGIMES, ExchangeAuditConfig
from eq_env.studies.exchange_audit import paper
from eq_env.studies.exchange_audit.flags import audit_intensities, audit_intensity

__all__ = ["BASE_VALIDATORS", "METRICS", "FreeTextOptions", "conditions", "free_text", "proposers"]

BASE_VALIDATORS = ("rule", "text_reader")
# the metrics reported, in the order of the tables (names of eq_env.exchange_audit.records.METRICS)
METRICS = (
    "approval_rate",
    "ambiguous_approval_rate",
    "bad_approval_rate",
    "welfare",
    "ambiguous_welfare",
    "proposer_payoff",
    "audit_rate",
    "audit_fail_rate",
)
COLUMNS = ("q", "regime", "validator", "proposer", "policy", *(f"{m}_{s}" for m in METRICS for s in ("mean", "std")))
_REGIME_NAMES = {"artifacts": "artifacts", "text_only": "text only", "action_only": "action only"}


@dataclass(frozen=True)
class FreeTextOptions:
    """What ``eq-env free-text`` runs (the defaults are its default run)."""

    qs: tuple[float, ...] = paper.TABLE1_QS
    q: float = 0.3  # the q of the every-condition table; one of qs
    seeds: int = 5
    first_seed: int = 0
    episodes: int = 20_000
    words: int = 18
    preset: str = "paper"
    validators: tuple[str, ...] = ()  # given validators, after the rule and the text reader
    engine: str = "auto"
    concurrency: int = 8

    def __post_init__(self) -> None:
        for name in ("seeds", "episodes", "concurrency"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.first_seed, bool) or not isinstance(self.first_seed, int) or self.first_seed < 0:
            raise ValueError(f"first_seed must be a non-negative integer, got {self.first_seed!r}")
        if isinstance(self.words, bool) or not isinstance(self.words, int) or not 0 <= self.words <= 60:
            raise ValueError(f"words must be an integer in [0, 60] (the paper's max_words), got {self.words!r}")
        if not self.qs or len(set(self.qs)) != len(self.qs) or not all(0.0 <= q <= 1.0 for q in self.qs):
            raise ValueError(f"qs must be distinct audit intensities in [0, 1], at least one, got {list(self.qs)}")
        if self.q not in self.qs:
            raise ValueError(
                f"q ({self.q:g}, the q of the every-condition table) must be one of qs "
                f"({', '.join(f'{q:g}' for q in self.qs)})"
            )
        if self.preset not in ExchangeAuditConfig.PRESETS:
            raise ValueError(f"preset must be one of {sorted(ExchangeAuditConfig.PRESETS)}, got {self.preset!r}")
        object.__setattr__(self, "qs", tuple(sorted(float(q) for q in self.qs)))  # (tables and lines run in q order)


def proposers(opts: FreeTextOptions) -> dict[str, str]:
    """The three proposers (name → spec): honest, silent, and the strategic mimic."""
    truth = ",claims_from=truth" if ExchangeAuditConfig.from_preset(opts.preset).reveal_compliance else ""
    return {
        "honest": f"honest:words={opts.words}{truth}",
        "silent": f"silent{truth.replace(',', ':', 1)}",
        "mimic": f"strategic:p=1,words={opts.words}{truth}",
    }


def _validators(opts: FreeTextOptions) -> dict[str, str]:
    """The validators (name → spec): the rule, the text reader, then the given ones named by their policy."""
    out = {name: name for name in BASE_VALIDATORS}
    for spec in opts.validators:
        name = parse_policy_spec(spec)[0]
        label, k = name, 2
        while label in out:  # (two LLM validators, say: llm, llm_2)
            label, k = f"{name}_{k}", k + 1
        out[label] = spec
    return out


def conditions(opts: FreeTextOptions) -> list[Condition]:
    """Every (q, regime, validator, proposer) condition, labelled."""
    base = ExchangeAuditConfig.from_preset(opts.preset)
    out = []
    for q in opts.qs:
        for regime in REGIMES:
            config = base.replace(q=q, regime=regime)
            for validator, vspec in _validators(opts).items():
                for proposer, pspec in proposers(opts).items():
                    out.append(
                        Condition(
                            config,
                            {"proposer": pspec, "validator": vspec},
                            opts.episodes,
                            (("q", q), ("regime", regime), ("validator", validator), ("proposer", proposer)),
                        )
                    )
    return out


def free_text(
    out: str | Path,
    opts: FreeTextOptions | None = None,
    *,
    progress: bool | None = None,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """Run the experiment of the module docstring and write its files; returns the rows, the decomposition,
    the seconds taken and, under ``failed``, the runs with failed episodes (LLM validators).

    ``executor``: where the runs go (default: here, one by one; local worker processes or a Ray cluster,
    see :mod:`eq_env.core.executors`): the files are the same bytes on every backend. Runs with an LLM
    validator stay in this process on every backend (the regimes of a state share one answer)."""
    opts = opts or FreeTextOptions()
    started = time.perf_counter()
    conds = conditions(opts)  # (every spec checked) before --out is made: a refused run leaves nothing
    check_runs(conds, opts.engine, 1)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = list(range(opts.first_seed, opts.first_seed + opts.seeds))
    records = run_all(
        conds,
        seeds,
        ResultsStore(out / "results.jsonl"),
        engine=opts.engine,
        progress=progress,
        desc="free text",
        concurrency=opts.concurrency,
        executor=executor,
    )
    results = {c.labels: (c, summary, per_seed) for c, summary, per_seed in aggregate(conds, records)}
    rows = []
    for c, summary, _ in results.values():
        labels = dict(c.labels)
        stats = {f"{m}_{s}": summary[m][i] for m in METRICS for i, s in enumerate(("mean", "std"))}
        rows.append({**labels, "policy": c.policy("proposer"), **stats})
    write_csv(out / "free_text.csv", rows, COLUMNS)
    split = _decomposition(opts, results)
    tables = _split_markdown(split) + "\n" + _conditions_markdown(opts, rows)
    (out / "free_text.md").write_text(tables)
    _figure(out / "free_text.png", opts, rows)
    files = ["free_text.csv", "free_text.md", "free_text.png", "results.jsonl", "summary.md"]
    llm_rows = llm_report(conds, records)
    if llm_rows:
        write_csv(out / "llm_costs.csv", llm_rows, llm_columns(ExchangeAuditConfig.NAME))
        files.append("llm_costs.csv")
    elapsed = time.perf_counter() - started
    engines = sorted({r["engine"] for r in records})
    (out / "summary.md").write_text(_summary(opts, rows, split, tables, seeds, engines, elapsed, files))
    return {"rows": rows, "decomposition": split, "seconds": elapsed, "files": files, "failed": failed_runs(records)}


def _get(results: dict[Any, Any], **labels: Any) -> tuple[Condition, Any, Any]:
    return results[tuple(labels.items())]  # type: ignore[no-any-return]


def _decomposition(opts: FreeTextOptions, results: dict[Any, Any]) -> list[dict[str, Any]]:
    """Per q, the honest proposer's ambiguous welfare under the three regimes and the paired differences
    (mean and 95% interval over seeds): total = artifacts (rule) − action only (rule); information = text only
    (text reader) − action only; structure = artifacts − text only (text reader); collapse = text only read
    by the rule − action only (what the rule makes of text alone)."""
    rows = []
    metric = "ambiguous_welfare"
    for q in opts.qs:
        artifacts, text, action, text_rule = (
            _get(results, q=q, regime=regime, validator=validator, proposer="honest")[2]
            for regime, validator in (
                ("artifacts", "rule"),
                ("text_only", "text_reader"),
                ("action_only", "rule"),
                ("text_only", "rule"),
            )
        )
        row: dict[str, Any] = {"q": q}
        for name, per_seed in (
            ("artifacts", artifacts),
            ("text_only", text),
            ("action_only", action),
            ("text_only_rule", text_rule),
        ):
            values = [m[metric] for m in per_seed.values()]
            row[name] = sum(values) / len(values) if values else math.nan
        for name, (a, b) in (
            ("total", (artifacts, action)),
            ("information", (text, action)),
            ("structure", (artifacts, text)),
            ("collapse", (text_rule, action)),
        ):
            mean, low, high, _ = paired_difference(a, b, metric)
            row[name], row[f"{name}_low"], row[f"{name}_high"] = mean, low, high
        rows.append(row)
    return rows


def _gap(row: dict[str, Any], name: str) -> str:
    low, high = row[f"{name}_low"], row[f"{name}_high"]
    interval = "" if math.isnan(low) else f" [{fmt_number(low, '+.2f')}, {fmt_number(high, '+.2f')}]"
    return fmt_number(row[name], "+.2f") + interval


def _split_markdown(split: Sequence[dict[str, Any]]) -> str:
    body = [
        [
            f"{r['q']:g}",
            fmt_number(r["artifacts"], ".2f"),
            fmt_number(r["text_only"], ".2f"),
            fmt_number(r["text_only_rule"], ".2f"),
            fmt_number(r["action_only"], ".2f"),
            _gap(r, "total"),
            _gap(r, "information"),
            _gap(r, "structure"),
        ]
        for r in split
    ]
    headers = [
        "q",
        "artifacts (rule)",
        "text only (text reader)",
        "text only (rule)",
        "action only",
        "total gain",
        "information",
        "structure",
    ]
    return (
        "The honest proposer's ambiguous welfare by regime, and its gain from artifacts split into information "
        "(text only, read, − action only) and structure (artifacts − text only); paired over seeds, 95% "
        "intervals.\n\n" + markdown_table(headers, body)
    )


def _conditions_markdown(opts: FreeTextOptions, rows: Sequence[dict[str, Any]]) -> str:
    body = []
    order = list(proposers(opts))
    validators = list(_validators(opts))
    shown = sorted(
        (r for r in rows if r["q"] == opts.q),
        key=lambda r: (order.index(r["proposer"]), validators.index(r["validator"]), REGIMES.index(r["regime"])),
    )
    for r in shown:
        body.append(
            [
                r["proposer"],
                r["validator"],
                _REGIME_NAMES[r["regime"]],
                *(
                    mean_std(r[f"{m}_mean"], r[f"{m}_std"], 3 if m == "bad_approval_rate" else 2)
                    for m in (
                        "approval_rate",
                        "ambiguous_approval_rate",
                        "bad_approval_rate",
                        "welfare",
                        "proposer_payoff",
                    )
                ),
            ]
        )
    headers = [
        "proposer",
        "validator",
        "regime",
        "approval",
        "amb. approval",
        "bad approval",
        "welfare",
        "proposer payoff",
    ]
    return f"Every condition at q = {opts.q:g} (mean ± std over seeds).\n\n" + markdown_table(headers, body)


def _figure(path: Path, opts: FreeTextOptions, rows: Sequence[dict[str, Any]]) -> None:
    colours = {"artifacts": "tab:blue", "text_only": "tab:orange", "action_only": "tab:grey"}
    styles = ["-o", "--s", ":^", "-.v", "-x", "--d"]
    validators = list(_validators(opts))

    def series(proposer: str, metric: str) -> list[dict[str, Any]]:
        out = []
        for k, validator in enumerate(validators):
            for regime in REGIMES:
                mine = sorted(
                    (r for r in rows if (r["proposer"], r["validator"], r["regime"]) == (proposer, validator, regime)),
                    key=lambda r: r["q"],
                )
                out.append(
                    {
                        "label": f"{_REGIME_NAMES[regime]}, {validator}",
                        "x": [r["q"] for r in mine],
                        "y": [r[f"{metric}_mean"] for r in mine],
                        "yerr": [r[f"{metric}_std"] for r in mine],
                        "style": {"fmt": styles[k % len(styles)], "color": colours[regime]},
                    }
                )
        return out

    plot_lines(
        path,
        [
            {"ylabel": "honest: ambiguous welfare", "series": series("honest", "ambiguous_welfare")},
            {"ylabel": "honest: ambiguous approval", "series": series("honest", "ambiguous_approval_rate")},
            {"ylabel": "mimic: welfare", "series": series("mimic", "welfare")},
            {"ylabel": "mimic: bad approval rate", "series": series("mimic", "bad_approval_rate")},
        ],
        xlabel="audit intensity q",
        title=f"Artifacts vs text only vs action only (preset {opts.preset}, {opts.words}-word texts)",
    )


def _at(rows: Sequence[dict[str, Any]], **labels: Any) -> dict[str, Any]:
    return next(r for r in rows if all(r[k] == v for k, v in labels.items()))


def _summary(
    opts: FreeTextOptions,
    rows: Sequence[dict[str, Any]],
    split: Sequence[dict[str, Any]],
    tables: str,
    seeds: Sequence[int],
    engines: Sequence[str],
    elapsed: float,
    files: Sequence[str],
) -> str:
    ends = split[:1] if len(split) == 1 else [split[0], split[-1]]  # (one q: said once)

    def at_ends(name: str, sep: str = ", ") -> str:
        return sep.join(f"{_gap(r, name)} at q = {r['q']:g}" for r in ends)

    def shared(r: dict[str, Any]) -> bool:
        """Information and structure both add to a gain: a share of a loss means nothing, nor does one beyond
        0–100% (the other part then being negative)."""
        return r["total"] > 0 and 0 <= r["information"] <= r["total"]

    shares = [
        f"{r['information'] / r['total']:.0%} of the whole gain from artifacts at q = {r['q']:g} ({_gap(r, 'total')})"
        for r in ends
        if shared(r)
    ]
    totals = f"; that is {' and '.join(shares)}" if shares else f"; the whole gain from artifacts is {at_ends('total')}"
    lines = [
        "# The free-text regime: artifacts vs text only vs action only",
        "",
        f"Preset {opts.preset}, {opts.words}-word texts, seeds {seeds[0]}–{seeds[-1]} × {opts.episodes} episodes per "
        f"condition, engine {', '.join(engines)}, {elapsed:.1f} s. Proposers: {', '.join(proposers(opts).values())}; "
        f"validators: {', '.join(_validators(opts).values())}.",
        "",
        "## What was measured",
        "",
        "- **The rule validator reads no text**, so withholding the claims leaves it the action alone (its "
        "decisions are those of action only, episode for episode): the honest proposer's ambiguous welfare under "
        f"text only minus action only is {at_ends('collapse', ' and ')}, the text's word cost.",
        f"- **Information content** (text only read by the text reader, minus action only): "
        f"{at_ends('information')}{totals}.",
        f"- **Structure** (artifacts minus text only, read): {at_ends('structure')}. Text cannot be audited: every "
        "audit of a text-only submission is inconclusive, so the validator pays for it and blocks where a typed "
        "artifact's audit verifies the trade; but only typed claims are fined when they are wrong, sincere "
        "mistakes included (a proposer that judges compliance from a noisy observation makes them, NO_TRADE "
        "claims included).",
        _mimic_line(opts, rows),
        "",
        "## Tables",
        "",
        tables,
        "",
        f"Files: {', '.join(files)}. Every number comes from `eq-env free-text` (re-run it to resume; the same "
        "flags give the same numbers). Every condition of a seed sees the same states and audit coins, so the "
        "differences above are paired seed by seed.",
        "",
    ]
    return "\n".join(lines)


def _mimic_line(opts: FreeTextOptions, rows: Sequence[dict[str, Any]]) -> str:
    """The strategic mimic at ``opts.q``: its bad approvals and its payoff, per regime, for the two scripted
    validators."""
    q, L = opts.q, ExchangeAuditConfig.from_preset(opts.preset).L
    parts = []
    for validator in BASE_VALIDATORS:
        cells = [_at(rows, q=q, proposer="mimic", validator=validator, regime=regime) for regime in REGIMES]
        bad = ", ".join(f"{_REGIME_NAMES[c['regime']]} {c['bad_approval_rate_mean']:.3f}" for c in cells)
        pay = ", ".join(f"{_REGIME_NAMES[c['regime']]} {fmt_number(c['proposer_payoff_mean'], '+.2f')}" for c in cells)
        parts.append(f"{validator}: bad approvals {bad}; its payoff {pay}")
    fines = ", ".join(
        f"{_REGIME_NAMES[c['regime']]} {_fine(c, L):.3f}"
        for c in (_at(rows, q=q, proposer="mimic", validator="rule", regime=regime) for regime in REGIMES)
    )
    return (
        f"- **The strategic mimic** at q = {q:g} (it lies whenever it believes its trade non-compliant, with the "
        f"honest proposer's text for a compliant hedge) — {'; '.join(parts)}. Its bad approvals come from normal "
        "episodes, where both scripted validators judge the reported numbers (which the lie shades inside the "
        "limits) and only an audit can tell; the text decides only borderline episodes, which this game makes "
        "compliant, so reading it approves no more lies. Without typed claims a lie is never fined: its "
        f"expected fine (L × audited × failed) is {fines} per episode."
    )


def _fine(row: dict[str, Any], L: float) -> float:
    failed = row["audit_fail_rate_mean"]
    return 0.0 if math.isnan(failed) else L * row["audit_rate_mean"] * failed


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
def _free_text_arguments(ft: argparse.ArgumentParser) -> None:
    ft.add_argument("--out", type=out_dir, required=True, help="output directory (re-running resumes from it)")
    ft.add_argument(
        "--qs",
        type=audit_intensities,
        default="0,0.1,0.3,0.5,0.7,1",
        help="the q grid: distinct audit intensities in [0, 1] (default the paper's 0,0.1,0.3,0.5,0.7,1)",
    )
    ft.add_argument(
        "--q", type=audit_intensity, default=0.3, help="the q of the every-condition table, one of --qs (default 0.3)"
    )
    ft.add_argument("--seeds", type=seeds_arg, default=5, help="seeds per condition (default 5)")
    ft.add_argument("--first-seed", type=seed_arg, default=0, help="first seed (default 0)")
    ft.add_argument("--episodes", type=episodes_arg, default=20_000, help="episodes per seed (default 20000)")
    ft.add_argument(
        "--words",
        type=int_in(0, 60, " (the paper's max_words is 60)"),
        default=18,
        help="words of the honest and mimic proposers' texts (default 18, about GPT-4.1's average)",
    )
    ft.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="paper",
        help="game preset (default paper: claims and text both judged from the proposer's noisy "
        "observation, so they carry the same information)",
    )
    ft.add_argument(
        "--validator",
        action="append",
        default=[],
        metavar="SPEC",
        help="another validator beside the rule and the text reader, e.g. 'llm:gate=none' (the LLM "
        "validator ungated); repeatable",
    )
    ft.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="batch: vectorised (scripted policies); aec: step the PettingZoo environment; auto: batch "
        "whenever possible",
    )
    ft.add_argument(
        "--jobs",
        type=jobs_arg,
        help="worker processes (default 1); with --backend ray, the CPUs of the Ray instance started here",
    )
    add_backend_flags(ft)
    add_flag_groups(ft, "OUT/llm_cache", ["validator"])


def _free_text(args: argparse.Namespace) -> int:
    validators = tuple(fill_spec(spec, args) for spec in args.validator)
    executor = executor_of(args, default_jobs=1)
    opts = FreeTextOptions(
        qs=tuple(args.qs),
        q=args.q,
        seeds=args.seeds,
        first_seed=args.first_seed,
        episodes=args.episodes,
        words=args.words,
        preset=args.preset,
        validators=validators,
        engine=args.engine,
        concurrency=getattr(args, "concurrency", 8),
    )
    if getattr(args, "dry_run", False):
        return dry_run(
            ExchangeAuditConfig.from_preset(args.preset).replace(regime="text_only"), {"validator": list(validators)}
        )
    configure_flag_groups(args, args.out / "llm_cache")
    result = free_text(args.out, opts, progress=None, executor=executor)
    print((args.out / "free_text.md").read_text())
    print(f"wrote {', '.join(result['files'])} to {args.out} in {result['seconds']:.1f} s")
    return failures(args.command, result["failed"], getattr(args, "cache", None))


COMMAND = Command(
    "free-text",
    "the cheap-talk collapse: artifacts vs text only vs action only, across q",
    _free_text_arguments,
    _free_text,
    "The same proposers (honest, silent, and a strategic mimic whose lies carry the honest text) under three "
    "regimes — typed claims and text, text only (claims withheld: audits are inconclusive), action only — "
    "against the rule validator, a scripted text reader and any --validator given: approval, bad approval, "
    "welfare and ambiguous approval across --qs, and the honest proposer's gain from artifacts split into "
    "information and structure. Writes free_text.csv, free_text.md, free_text.png, results.jsonl and "
    "summary.md into --out. Re-running resumes.",
    "finished runs (and LLM episodes) are saved in --out; run the same command to resume",
)
