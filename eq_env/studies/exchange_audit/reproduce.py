"""``eq-env reproduce``: the paper's tables and figure from scripted policies, offline, in seconds.

Writes into the output directory:

* ``table1.csv`` / ``table1.md`` — ambiguous welfare and approval against the
  audit intensity q, with artifacts (the honest proposer) and action only
  (the silent proposer), mean ± std over seeds, the paired net gain with a 95%
  interval, and the paper's GPT-4.1 numbers beside ours;
* ``table1_text_length.csv`` — the artifacts regime again with the paper's
  13-word scripted text, to show what text length alone does;
* ``table2.csv`` / ``table2.md`` — at q = 0.3, the incentive sweep
  (V, L) ∈ {(1, 2), (2, 1), (1, 4)} and the budget sweep B ∈ {1, 2, 4}, for a
  truth-knowing honest, a sincere honest and a strategic proposer;
* ``figure4.png`` — the paper's Figure 4 with our curves and its points;
* ``results.jsonl`` — one record per condition and seed with the full
  configuration (re-running the command resumes from it);
* ``summary.md`` — all of the above and a plain reading of where we agree
  with the paper and why we differ where we do.

The proposers know their true compliance (preset ``"paper_scripted"``), as
the paper's scripted trader did.
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
from eq_env.core.policy import format_policy_spec, parse_policy_spec, policy_entry
from eq_env.core.report import fmt_number, markdown_table, mean_std, plot_lines, write_csv
from eq_env.exchange_audit.config import PRESETS, ExchangeAuditConfig
from eq_env.studies.exchange_audit import paper

__all__ = ["REGIMES", "ReproduceOptions", "reproduce"]

REGIMES = ("artifacts", "action_only")
GPT41_WORDS = 18  # GPT-4.1 averaged about 17-18 words; the paper's scripted trader wrote 13
SCRIPTED_WORDS = 13
TABLE2_Q = 0.3

TABLE1_COLUMNS = (
    "q",
    "regime",
    "proposer",
    "ambiguous_welfare_mean",
    "ambiguous_welfare_std",
    "ambiguous_approval_mean",
    "ambiguous_approval_std",
    "bad_approval_mean",
    "bad_approval_std",
    "avg_words_mean",
    "net_gain_mean",
    "net_gain_ci_low",
    "net_gain_ci_high",
    "paper_ambiguous_welfare_mean",
    "paper_ambiguous_welfare_std",
    "paper_ambiguous_approval",
    "paper_ambiguous_approval_min",
    "paper_net_gain",
)
TABLE2_COLUMNS = (
    "scenario",
    "V",
    "L",
    "B",
    "proposer",
    "policy",
    "audit_fail_mean",
    "audit_fail_std",
    "bad_approval_mean",
    "bad_approval_std",
    "ambiguous_approval_mean",
    "ambiguous_approval_std",
    "paper_audit_fail_mean",
    "paper_audit_fail_std",
    "paper_bad_approval_mean",
    "paper_bad_approval_std",
    "paper_ambiguous_approval_mean",
    "paper_ambiguous_approval_std",
)


@dataclass(frozen=True)
class ReproduceOptions:
    """What ``eq-env reproduce`` runs. Defaults: the paper's 5 seeds x 200 episodes."""

    seeds: int = 5
    episodes: int = 200
    words: int = GPT41_WORDS
    first_seed: int = 0
    engine: str = "auto"
    jobs: int = 1
    proposer: str | None = None  # None: the scripted proposers; else this spec (e.g. an LLM) everywhere
    validator: str = "rule"
    preset: str = "paper_scripted"
    concurrency: int = 8

    @property
    def scripted(self) -> bool:
        return self.proposer is None

    def __post_init__(self) -> None:
        for name in ("seeds", "episodes", "jobs", "concurrency"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.words, bool) or not isinstance(self.words, int) or not 0 <= self.words <= 60:
            raise ValueError(f"words must be an integer in [0, 60] (the paper's max_words), got {self.words!r}")


def _proposers(opts: ReproduceOptions) -> dict[str, str]:
    """Table 2's proposers: the three scripted ones, or the one given."""
    if not opts.scripted:
        assert opts.proposer is not None
        return {parse_policy_spec(opts.proposer)[0]: opts.proposer}
    words = opts.words
    return {
        "honest": f"honest:claims_from=truth,words={words}",
        "honest_sincere": f"honest:claims_from=observation,words={words}",
        "strategic": f"strategic:trigger=payoff,claims_from=truth,words={words}",
    }


def _regimes(opts: ReproduceOptions) -> dict[str, str]:
    """Table 1's two regimes: the proposer with artifacts, and the same proposer's action alone.

    A given proposer that can strip its own artifact (an LLM: ``strip=true``) does so, which
    reuses its sample for the same state; any other is paired with the scripted silent proposer.
    """
    if opts.scripted:
        return {"artifacts": f"honest:claims_from=truth,words={opts.words}", "action_only": "silent:claims_from=truth"}
    assert opts.proposer is not None
    name, kwargs = parse_policy_spec(opts.proposer)
    strippable = "strip" in policy_entry(name, "proposer").parameters()
    stripped = format_policy_spec(name, {**kwargs, "strip": True})
    return {"artifacts": opts.proposer, "action_only": stripped if strippable else "silent:claims_from=truth"}


def conditions(opts: ReproduceOptions) -> list[Condition]:
    """Every condition of the reproduction, labelled for its table."""
    base = ExchangeAuditConfig.from_preset(opts.preset)
    regimes = _regimes(opts)
    out = []
    for q in paper.TABLE1_QS:
        cfg = base.replace(q=q)
        for regime, spec in regimes.items():
            out.append(
                Condition(
                    cfg, _pair(spec, opts.validator), opts.episodes, (("table", "table1"), ("regime", regime), ("q", q))
                )
            )
        if opts.scripted and opts.words != SCRIPTED_WORDS:
            out.append(
                Condition(
                    cfg,
                    _pair(f"honest:claims_from=truth,words={SCRIPTED_WORDS}", opts.validator),
                    opts.episodes,
                    (("table", "table1_text_length"), ("regime", "artifacts"), ("q", q)),
                )
            )
    for scenario, params in paper.TABLE2_SCENARIOS.items():
        cfg = base.replace(q=TABLE2_Q, **params)
        for who, spec in _proposers(opts).items():
            out.append(
                Condition(
                    cfg,
                    _pair(spec, opts.validator),
                    opts.episodes,
                    (("table", "table2"), ("scenario", scenario), ("proposer", who)),
                )
            )
    return out


def _pair(proposer: str, validator: str) -> dict[str, str]:
    return {"proposer": proposer, "validator": validator}


def reproduce(
    out: Path | str,
    opts: ReproduceOptions | None = None,
    *,
    progress: bool | None = None,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """Run everything and write the files listed in the module docstring; returns the table rows, the
    time taken and, under ``failed``, the runs with failed episodes (LLM policies): (key, failed, episodes).

    ``executor``: where the runs go (default: ``opts.jobs`` local worker processes; a
    :class:`~eq_env.core.executors.RayExecutor` for a Ray cluster): the files are the same bytes on
    every backend. Runs with an LLM proposer or validator stay in this process on every backend, so that
    the regimes of a state share one answer."""
    opts = opts or ReproduceOptions()
    started = time.perf_counter()
    conds = conditions(opts)  # (checks every policy spec) before --out is made: a refused run leaves nothing
    check_runs(conds, opts.engine, opts.jobs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = list(range(opts.first_seed, opts.first_seed + opts.seeds))
    records = run_all(
        conds,
        seeds,
        ResultsStore(out / "results.jsonl"),
        engine=opts.engine,
        jobs=opts.jobs,
        progress=progress,
        desc="reproduce",
        concurrency=opts.concurrency,
        executor=executor,
    )
    results = {c.labels: (summary, per_seed) for c, summary, per_seed in aggregate(conds, records)}
    engines = sorted({r["engine"] for r in records})

    def get(**labels: Any) -> tuple[dict[str, tuple[float, float]], dict[int, dict[str, float]]]:
        return results[tuple(labels.items())]

    # -- Table 1 -------------------------------------------------------------
    regime_names = (
        {"artifacts": f"honest (truth, {opts.words} words)", "action_only": "silent"}
        if opts.scripted
        else _regimes(opts)
    )
    t1_rows: list[dict[str, Any]] = []
    for q in paper.TABLE1_QS:
        art, art_seeds = get(table="table1", regime="artifacts", q=q)
        act, act_seeds = get(table="table1", regime="action_only", q=q)
        gain = paired_difference(art_seeds, act_seeds, "ambiguous_welfare")
        p = paper.TABLE1[q]
        for regime, summary in (("artifacts", art), ("action_only", act)):
            paper_welfare = p[regime]
            assert isinstance(paper_welfare, tuple)
            approval_known = paper.FIGURE4_ACTION_ONLY_APPROVAL.get(q) if regime == "action_only" else None
            t1_rows.append(
                {
                    "q": q,
                    "regime": regime,
                    "proposer": regime_names[regime],
                    "ambiguous_welfare_mean": summary["ambiguous_welfare"][0],
                    "ambiguous_welfare_std": summary["ambiguous_welfare"][1],
                    "ambiguous_approval_mean": summary["ambiguous_approval_rate"][0],
                    "ambiguous_approval_std": summary["ambiguous_approval_rate"][1],
                    "bad_approval_mean": summary["bad_approval_rate"][0],
                    "bad_approval_std": summary["bad_approval_rate"][1],
                    "avg_words_mean": summary["words"][0],
                    "net_gain_mean": gain[0] if regime == "artifacts" else None,
                    "net_gain_ci_low": gain[1] if regime == "artifacts" else None,
                    "net_gain_ci_high": gain[2] if regime == "artifacts" else None,
                    "paper_ambiguous_welfare_mean": paper_welfare[0],
                    "paper_ambiguous_welfare_std": paper_welfare[1],
                    "paper_ambiguous_approval": approval_known,
                    "paper_ambiguous_approval_min": (
                        paper.FIGURE4_ARTIFACTS_APPROVAL_MIN if regime == "artifacts" else None
                    ),
                    "paper_net_gain": p["net_gain"] if regime == "artifacts" else None,
                }
            )
    write_csv(out / "table1.csv", t1_rows, TABLE1_COLUMNS)
    length_rows = []
    if opts.scripted and opts.words != SCRIPTED_WORDS:
        for q in paper.TABLE1_QS:
            s13, _ = get(table="table1_text_length", regime="artifacts", q=q)
            length_rows.append(
                {
                    "q": q,
                    "regime": "artifacts",
                    "proposer": f"honest (truth, {SCRIPTED_WORDS} words)",
                    "ambiguous_welfare_mean": s13["ambiguous_welfare"][0],
                    "ambiguous_welfare_std": s13["ambiguous_welfare"][1],
                    "ambiguous_approval_mean": s13["ambiguous_approval_rate"][0],
                    "ambiguous_approval_std": s13["ambiguous_approval_rate"][1],
                    "bad_approval_mean": s13["bad_approval_rate"][0],
                    "bad_approval_std": s13["bad_approval_rate"][1],
                    "avg_words_mean": s13["words"][0],
                    "paper_ambiguous_welfare_mean": paper.TABLE1[q]["artifacts"][0],  # type: ignore[index]
                    "paper_ambiguous_welfare_std": paper.TABLE1[q]["artifacts"][1],  # type: ignore[index]
                }
            )
        write_csv(out / "table1_text_length.csv", length_rows, TABLE1_COLUMNS)
    table1_md = _table1_markdown(t1_rows)
    (out / "table1.md").write_text(table1_md)

    # -- Table 2 -------------------------------------------------------------
    t2_rows: list[dict[str, Any]] = []
    for scenario, params in paper.TABLE2_SCENARIOS.items():
        p2 = paper.TABLE2[scenario]
        for who, spec in _proposers(opts).items():
            summary, _ = get(table="table2", scenario=scenario, proposer=who)
            t2_rows.append(
                {
                    "scenario": scenario,
                    "V": params["V"],
                    "L": params["L"],
                    "B": params["B"],
                    "proposer": who,
                    "policy": spec,
                    "audit_fail_mean": summary["audit_fail_rate"][0],
                    "audit_fail_std": summary["audit_fail_rate"][1],
                    "bad_approval_mean": summary["bad_approval_rate"][0],
                    "bad_approval_std": summary["bad_approval_rate"][1],
                    "ambiguous_approval_mean": summary["ambiguous_approval_rate"][0],
                    "ambiguous_approval_std": summary["ambiguous_approval_rate"][1],
                    "paper_audit_fail_mean": p2["audit_fail"][0],
                    "paper_audit_fail_std": p2["audit_fail"][1],
                    "paper_bad_approval_mean": p2["bad_approval"][0],
                    "paper_bad_approval_std": p2["bad_approval"][1],
                    "paper_ambiguous_approval_mean": p2["ambiguous_approval"][0],
                    "paper_ambiguous_approval_std": p2["ambiguous_approval"][1],
                }
            )
    write_csv(out / "table2.csv", t2_rows, TABLE2_COLUMNS)
    table2_md = _table2_markdown(t2_rows)
    (out / "table2.md").write_text(table2_md)

    # -- Figure 4 ------------------------------------------------------------
    _figure4(out / "figure4.png", t1_rows, opts)

    files = [
        "table1.csv",
        "table1.md",
        "table1_text_length.csv",
        "table2.csv",
        "table2.md",
        "figure4.png",
        "results.jsonl",
        "summary.md",
    ]
    llm_rows = llm_report(conds, records)
    if llm_rows:
        write_csv(out / "llm_costs.csv", llm_rows, llm_columns(ExchangeAuditConfig.NAME))
        files.append("llm_costs.csv")
    if not length_rows:
        files.remove("table1_text_length.csv")
        (out / "table1_text_length.csv").unlink(missing_ok=True)  # stale, from a run with other --words
    elapsed = time.perf_counter() - started
    summary_md = _summary(
        opts, seeds, engines, t1_rows, length_rows, t2_rows, table1_md, table2_md, elapsed, files, llm_rows
    )
    (out / "summary.md").write_text(summary_md)
    return {
        "table1": t1_rows,
        "table1_text_length": length_rows,
        "table2": t2_rows,
        "seconds": elapsed,
        "failed": failed_runs(records),
    }


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------
def _rows(rows: Sequence[dict[str, Any]], regime: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["regime"] == regime]


def _table1_markdown(rows: Sequence[dict[str, Any]]) -> str:
    art, act = _rows(rows, "artifacts"), _rows(rows, "action_only")
    body = []
    for a, b in zip(art, act, strict=True):
        body.append(
            [
                f"{a['q']:.1f}",
                mean_std(a["ambiguous_welfare_mean"], a["ambiguous_welfare_std"]),
                mean_std(a["paper_ambiguous_welfare_mean"], a["paper_ambiguous_welfare_std"]),
                mean_std(b["ambiguous_welfare_mean"], b["ambiguous_welfare_std"]),
                mean_std(b["paper_ambiguous_welfare_mean"], b["paper_ambiguous_welfare_std"]),
                f"{_fmt(a['net_gain_mean'], '+.2f')} [{_fmt(a['net_gain_ci_low'], '+.2f')}, "
                f"{_fmt(a['net_gain_ci_high'], '+.2f')}]",
                f"{a['paper_net_gain']:+.2f}",
                mean_std(a["ambiguous_approval_mean"], a["ambiguous_approval_std"]),
                mean_std(b["ambiguous_approval_mean"], b["ambiguous_approval_std"]),
            ]
        )
    headers = [
        "q",
        "artifacts (ours)",
        "artifacts (paper)",
        "action only (ours)",
        "action only (paper)",
        "net gain (ours, 95% CI)",
        "net gain (paper)",
        "amb. approval, artifacts",
        "amb. approval, action only",
    ]
    return (
        "Ambiguous welfare (mean ± std over seeds) and ambiguous approval vs audit intensity q.\n\n"
        + markdown_table(headers, body)
    )


def _table2_markdown(rows: Sequence[dict[str, Any]]) -> str:
    body = []
    for r in rows:
        body.append(
            [
                r["scenario"],
                f"V={r['V']:g}, L={r['L']:g}, B={r['B']}",
                r["proposer"],
                mean_std(r["audit_fail_mean"], r["audit_fail_std"]),
                mean_std(r["bad_approval_mean"], r["bad_approval_std"], 3),
                mean_std(r["ambiguous_approval_mean"], r["ambiguous_approval_std"]),
                f"{r['paper_audit_fail_mean']:.2f} / {r['paper_bad_approval_mean']:.3f} / "
                f"{r['paper_ambiguous_approval_mean']:.2f}",
            ]
        )
    headers = [
        "scenario",
        "params",
        "proposer",
        "audit fail",
        "bad approval",
        "amb. approval",
        "paper (GPT-4.1): fail / bad / amb.",
    ]
    return f"At q = {TABLE2_Q} (mean ± std over seeds).\n\n" + markdown_table(headers, body)


def _figure4(path: Path, rows: Sequence[dict[str, Any]], opts: ReproduceOptions) -> None:
    art, act = _rows(rows, "artifacts"), _rows(rows, "action_only")
    qs = [r["q"] for r in art]
    ours = {"color": "tab:blue"}, {"color": "tab:orange"}
    theirs = {"fmt": "s", "color": "tab:blue", "mfc": "white"}, {"fmt": "s", "color": "tab:orange", "mfc": "white"}
    approval_points = paper.FIGURE4_ACTION_ONLY_APPROVAL
    panels: list[dict[str, Any]] = [
        {
            "ylabel": "ambiguous approval rate",
            "series": [
                {
                    "label": f"artifacts (ours, {opts.words} words)",
                    "x": qs,
                    "style": ours[0],
                    "y": [r["ambiguous_approval_mean"] for r in art],
                    "yerr": [r["ambiguous_approval_std"] for r in art],
                },
                {
                    "label": "action only (ours)",
                    "x": qs,
                    "style": ours[1],
                    "y": [r["ambiguous_approval_mean"] for r in act],
                    "yerr": [r["ambiguous_approval_std"] for r in act],
                },
                {
                    "label": "paper: artifacts > 0.96",
                    "hline": paper.FIGURE4_ARTIFACTS_APPROVAL_MIN,
                    "style": {"color": "tab:blue"},
                },
                {
                    "label": "paper: action only",
                    "x": list(approval_points),
                    "y": list(approval_points.values()),
                    "style": theirs[1],
                },
            ],
        },
        {
            "ylabel": "ambiguous welfare",
            "series": [
                {
                    "label": f"artifacts (ours, {opts.words} words)",
                    "x": qs,
                    "style": ours[0],
                    "y": [r["ambiguous_welfare_mean"] for r in art],
                    "yerr": [r["ambiguous_welfare_std"] for r in art],
                },
                {
                    "label": "action only (ours)",
                    "x": qs,
                    "style": ours[1],
                    "y": [r["ambiguous_welfare_mean"] for r in act],
                    "yerr": [r["ambiguous_welfare_std"] for r in act],
                },
                {
                    "label": "artifacts (paper, GPT-4.1)",
                    "x": qs,
                    "style": theirs[0],
                    "y": [r["paper_ambiguous_welfare_mean"] for r in art],
                    "yerr": [r["paper_ambiguous_welfare_std"] for r in art],
                },
                {
                    "label": "action only (paper, GPT-4.1)",
                    "x": qs,
                    "style": theirs[1],
                    "y": [r["paper_ambiguous_welfare_mean"] for r in act],
                    "yerr": [r["paper_ambiguous_welfare_std"] for r in act],
                },
            ],
        },
    ]
    title = f"Figure 4: scripted proposers vs the paper ({opts.seeds} seeds x {opts.episodes} episodes)"
    plot_lines(path, panels, xlabel="audit intensity q", title=title)


def _fmt(x: float, spec: str) -> str:
    return "—" if x is None or math.isnan(x) else fmt_number(x, spec)


def _llm_paragraph(rows: Sequence[dict[str, Any]]) -> str:
    total = {
        k: sum(r[k] for r in rows)
        for k in (
            "episodes",
            "failed_episodes",
            "calls",
            "fallbacks",
            "reasks",
            "prompt_tokens",
            "completion_tokens",
            "cost_usd",
            "requests",
            "retries",
            "cache_hits",
        )
    }
    return (
        f"**LLM calls** (`llm_costs.csv` has them per condition). {total['calls']} calls over "
        f"{total['episodes']} episodes: {total['failed_episodes']} episodes failed (no answer after retries), "
        f"{total['fallbacks']} calls fell back after {total['reasks']} invalid replies in all; "
        f"{total['prompt_tokens']:,} prompt and {total['completion_tokens']:,} completion tokens "
        f"(${total['cost_usd']:.4f} at the given prices); {total['requests']} requests were made, "
        f"{total['retries']} of them retries, and {total['cache_hits']} answers came from the cache (a sample "
        "shared by the two regimes of one state counts there)."
    )


def _files_line(files: Sequence[str]) -> str:
    return (
        "Files: " + ", ".join(f"`{f}`" for f in files) + ". `results.jsonl` holds one record per condition and "
        "seed with the full configuration and policies; running the command again resumes from it, and "
        "`eq-env rerun DIR/results.jsonl KEY` runs any one record again and checks it."
    )


def _generic_reading(
    t1: Sequence[dict[str, Any]],
    t2: Sequence[dict[str, Any]],
    gap: float,
    worst: dict[str, Any],
    gains: Sequence[tuple[float, float, float]],
) -> list[str]:
    """The reading for a proposer other than the scripted ones: what was measured, against the paper."""
    art, act = _rows(t1, "artifacts"), _rows(t1, "action_only")
    lines = [
        f"**With artifacts.** Ambiguous welfare differs from the paper's GPT-4.1 by at most {_fmt(gap, '.3f')} "
        f"(at q = {worst['q']:g}); ambiguous approval ranges "
        f"{_fmt(_extreme(min, [r['ambiguous_approval_mean'] for r in art]), '.2f')}–"
        f"{_fmt(_extreme(max, [r['ambiguous_approval_mean'] for r in art]), '.2f')} (the paper: above 0.96), "
        f"with {_fmt(_extreme(min, [r['avg_words_mean'] for r in art]), '.1f')}–"
        f"{_fmt(_extreme(max, [r['avg_words_mean'] for r in art]), '.1f')} words of text (GPT-4.1: about 17–18).",
        "",
        f"**Action only.** Ambiguous approval goes from {_fmt(act[0]['ambiguous_approval_mean'], '.1%')} at q = 0 "
        f"to {_fmt(act[-1]['ambiguous_approval_mean'], '.1%')} at q = 1 (the paper: about 9% to 0%).",
        "",
        f"**Net gain.** {_fmt(_extreme(min, [g[0] for g in gains]), '+.2f')} to "
        f"{_fmt(_extreme(max, [g[0] for g in gains]), '+.2f')} in ambiguous welfare (paper: +1.40 to +1.61).",
        "",
    ]
    diffs = {
        metric: [abs(r[f"{metric}_mean"] - r[f"paper_{metric}_mean"]) for r in t2]
        for metric in ("audit_fail", "bad_approval", "ambiguous_approval")
    }
    lines.append(
        "**Table 2.** Mean absolute difference from GPT-4.1 over the six scenarios: audit fail "
        f"{_fmt(_nanmean(diffs['audit_fail']), '.3f')}, bad approval {_fmt(_nanmean(diffs['bad_approval']), '.3f')}, "
        f"ambiguous approval {_fmt(_nanmean(diffs['ambiguous_approval']), '.3f')}."
    )
    lines.append("")
    return lines


def _nanmean(values: Sequence[float]) -> float:
    defined = [v for v in values if not math.isnan(v)]
    return sum(defined) / len(defined) if defined else math.nan


def _extreme(pick: Any, values: Sequence[float]) -> float:
    """``min`` or ``max`` of the defined values (NaN if none is)."""
    defined = [v for v in values if not math.isnan(v)]
    return pick(defined) if defined else math.nan


def _command(opts: ReproduceOptions) -> str:
    parts = [
        "eq-env reproduce --out DIR",
        f"--seeds {opts.seeds}",
        f"--episodes {opts.episodes}",
        f"--words {opts.words}",
    ]
    defaults = ReproduceOptions()
    if opts.first_seed != defaults.first_seed:
        parts.append(f"--first-seed {opts.first_seed}")
    if opts.engine != defaults.engine:
        parts.append(f"--engine {opts.engine}")
    if opts.jobs != defaults.jobs:
        parts.append(f"--jobs {opts.jobs}")
    if opts.proposer is not None:
        parts.append(f"--proposer '{opts.proposer}'")
    if opts.validator != defaults.validator:
        parts.append(f"--validator '{opts.validator}'")
    if opts.preset != defaults.preset:
        parts.append(f"--preset {opts.preset}")
    return " ".join(parts)


def _words_phrase(words: int) -> str:
    if words in (17, 18):
        return f"{words} words, about GPT-4.1's average"
    if words == SCRIPTED_WORDS:
        return f"{words} words, as the paper's scripted trader"
    return f"{words} words (GPT-4.1 averaged about 17–18, the paper's script 13)"


def _summary(
    opts: ReproduceOptions,
    seeds: Sequence[int],
    engines: Sequence[str],
    t1: Sequence[dict[str, Any]],
    t1_13: Sequence[dict[str, Any]],
    t2: Sequence[dict[str, Any]],
    table1_md: str,
    table2_md: str,
    elapsed: float,
    files: Sequence[str],
    llm_rows: Sequence[dict[str, Any]] = (),
) -> str:
    art, act = _rows(t1, "artifacts"), _rows(t1, "action_only")
    gaps = [abs(r["ambiguous_welfare_mean"] - r["paper_ambiguous_welfare_mean"]) for r in art]
    defined = [g for g in gaps if not math.isnan(g)]
    gap = max(defined) if defined else math.nan
    worst = art[gaps.index(gap)] if defined else art[0]
    min_art_approval = _extreme(min, [r["ambiguous_approval_mean"] for r in art])
    act0, act1 = act[0], act[-1]
    act_gap = [r["paper_ambiguous_welfare_mean"] - r["ambiguous_welfare_mean"] for r in act]
    gains = [(r["net_gain_mean"], r["net_gain_ci_low"], r["net_gain_ci_high"]) for r in art]
    who = "scripted policies" if opts.scripted else f"`{opts.proposer}`"
    cfg = ExchangeAuditConfig.from_preset(opts.preset)  # the constants the reading quotes come from it
    informed = (
        "the proposer knows its true compliance, as the paper's scripted trader did"
        if cfg.reveal_compliance
        else "the proposer sees only its noisy observation"
    )
    lines = [
        f"# Reproducing the exchange–audit paper with {who}",
        "",
        f"Command: `{_command(opts)}`. Seeds {seeds[0]}..{seeds[-1]}, {opts.episodes} episodes each, "
        f"engine of the recorded runs: {', '.join(engines)}; {elapsed:.1f} s. Preset `{opts.preset}` (the "
        f"paper's mechanics; {informed}). Validator: `{opts.validator}`. Every condition of a seed sees the "
        "same positions, noise and audit coins, so the net gain is a paired difference (95% t-interval over "
        "seeds). Standard deviations are over seeds (ddof = 1).",
        "",
        "## Table 1",
        "",
        table1_md,
        "![Figure 4](figure4.png)",
        "",
        "## Table 2",
        "",
        table2_md,
        "## Reading",
        "",
    ]
    if not opts.scripted:
        lines += _generic_reading(t1, t2, gap, worst, gains)
        if llm_rows:
            lines += [_llm_paragraph(llm_rows), ""]
        lines.append(_files_line(files))
        return "\n".join(lines) + "\n"
    # Artifacts
    if defined:
        within = "within" if gap <= 0.03 + 1e-12 else "not within"
        closeness = (
            f"our honest proposer's ambiguous welfare is {within} 0.03 of the paper's at every q (largest gap "
            f"{gap:.3f}, at q = {worst['q']:g})"
        )
    else:
        closeness = "no run had an ambiguous episode, so ambiguous welfare is undefined"
    approved = (
        "in every ambiguous episode at every q"
        if min_art_approval >= 1.0
        else f"in at least {_fmt(min_art_approval, '.1%')} of ambiguous episodes at every q"
    )
    lines.append(
        f"**With artifacts.** Writing {_words_phrase(opts.words)}, {closeness}. It is approved {approved} "
        "(the paper: above 96%): it knows it is compliant and says so, and an audit of true claims passes. "
        f"Its ambiguous welfare is then {2 * cfg.V:g} − {cfg.alpha:g}·words − {cfg.audit_cost:g}·(audit rate): the "
        f"text's length and the audit's cost are all that separate it from the ideal {2 * cfg.V:g}."
    )
    if t1_13:
        w13 = [r["ambiguous_welfare_mean"] for r in t1_13]
        delta = cfg.alpha * (opts.words - SCRIPTED_WORDS)
        lines.append(
            f"With the paper's scripted 13-word text (`table1_text_length.csv`) the same proposer earns "
            f"{_fmt(_extreme(min, w13), '.2f')}–{_fmt(_extreme(max, w13), '.2f')}, {abs(delta):.2f} "
            f"{'more' if delta > 0 else 'less'} "
            f"than with {opts.words} words: α = {cfg.alpha:g} per word is the whole difference."
        )
    lines.append("")
    # Action only
    lines.append(
        f"**Action only.** Without claims or text the borderline trade is approved only through the safe margin, "
        f"when observation noise puts the reported numbers more than {cfg.safe_margin:g} inside both limits: "
        f"{_fmt(act0['ambiguous_approval_mean'], '.1%')} of ambiguous episodes at q = 0 (the paper: about 9%), "
        f"and {_fmt(act1['ambiguous_approval_mean'], '.1%')} at q = 1 (the paper: 0%), where every episode is "
        f"audited and an audit of a claim-less submission is inconclusive. The paper's action-only welfare minus "
        f"ours is {_fmt(_extreme(min, act_gap), '+.2f')} to {_fmt(_extreme(max, act_gap), '+.2f')} across q. "
        "Our scripted proposer "
        "always asks in an ambiguous episode (it knows the trade is compliant), so a block is worth 0; an LLM "
        f"that sometimes declines to trade collects the NO_TRADE welfare of {2 * cfg.no_trade_payoff:g} instead, "
        "which would raise the "
        "paper's numbers — a likely but unverified explanation, since the paper does not report its action-only "
        "request rate."
    )
    lines.append("")
    if any(math.isnan(g[1]) for g in gains):
        intervals = "the intervals need at least two seeds"
    elif all(g[1] > 0 for g in gains):
        intervals = "every 95% interval lies above zero"
    else:
        intervals = "not every 95% interval lies above zero"
    lines.append(
        "**Net gain.** Artifacts beat action only by "
        f"{_fmt(_extreme(min, [g[0] for g in gains]), '+.2f')} to {_fmt(_extreme(max, [g[0] for g in gains]), '+.2f')}"
        " in ambiguous "
        f"welfare (paper: +1.40 to +1.61); {intervals}."
    )
    lines.append("")
    # Table 2
    by = {(r["scenario"], r["proposer"]): r for r in t2}
    honest_fails = [by[(s, "honest")]["audit_fail_mean"] for s in paper.TABLE2_SCENARIOS]
    honest_fail = _extreme(max, honest_fails)
    sincere = [by[(s, "honest_sincere")]["audit_fail_mean"] for s in paper.TABLE2_SCENARIOS]
    paper_fail = [paper.TABLE2[s]["audit_fail"][0] for s in paper.TABLE2_SCENARIOS]
    tempt = by[("temptation", "strategic")]
    base = by[("baseline", "strategic")]
    sure = cfg.no_trade_payoff
    q, v_base = TABLE2_Q, paper.TABLE2_SCENARIOS["baseline"]["V"]
    v_t, l_t = paper.TABLE2_SCENARIOS["temptation"]["V"], paper.TABLE2_SCENARIOS["temptation"]["L"]
    lie = (1 - q) * v_t - q * l_t  # a false claim always checked (B = 4): P(caught) = 1
    budgets = ", ".join(f"{paper.TABLE2_SCENARIOS[s]['B']:g}" for s in ("spot_check", "partial_audit", "full_audit"))
    sincere_gap = _nanmean([abs(a - b) for a, b in zip(sincere, paper_fail, strict=True)])
    between = all(h <= p <= x for h, p, x in zip(honest_fails, paper_fail, sincere, strict=True))
    relation = (
        "in every scenario between our truth-knowing proposer and our *sincere* one"
        if between
        else "not always between our truth-knowing proposer and our *sincere* one"
    )
    by_budget = [by[(s, "honest_sincere")]["audit_fail_mean"] for s in ("spot_check", "partial_audit", "full_audit")]
    budget_trend = "rise with B" if by_budget[0] < by_budget[1] < by_budget[2] else "do not move monotonically with B"
    lines.append(
        f"**Table 2.** The truth-knowing honest proposer's largest audit fail rate is {_fmt(honest_fail, '.2f')}: "
        f"its claims are true. GPT-4.1 failed {min(paper_fail):.2f}–{max(paper_fail):.2f} of audits, {relation}, "
        f"which judges compliance from its noisy observation and fails {_fmt(_extreme(min, sincere), '.2f')}–"
        f"{_fmt(_extreme(max, sincere), '.2f')} (mean absolute gap to GPT-4.1: {_fmt(sincere_gap, '.2f')}): wrong "
        f"beliefs are punished exactly like lies. The strategic proposer lies only when lying pays in expectation, "
        f"(1 − q)·V − q·P(caught)·L > {sure:g} (the NO_TRADE payoff): that never holds at V = {v_base:g} (baseline "
        f"bad approval {_fmt(base['bad_approval_mean'], '.3f')}), but under temptation (V = {v_t:g}, L = {l_t:g}: "
        f"{1 - q:g}·{v_t:g} − {q:g}·{l_t:g} = {lie:g} > {sure:g}) "
        f"it misreports and its bad approval rate is {_fmt(tempt['bad_approval_mean'], '.3f')} (GPT-4.1: "
        f"{paper.TABLE2['temptation']['bad_approval'][0]:.3f}). "
        f"The sincere proposer's fail rates {budget_trend} (B = {budgets}: "
        + ", ".join(_fmt(x, ".2f") for x in by_budget)
        + (")." if budget_trend != "rise with B" else "): fewer checks per audit catch fewer of its mistakes.")
    )
    lines.append("")
    lines.append(_files_line(files))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
def _reproduce_arguments(rep: argparse.ArgumentParser) -> None:
    rep.add_argument("--out", type=out_dir, required=True, help="output directory")
    rep.add_argument("--seeds", type=seeds_arg, default=5, help="seeds per condition (default 5, as the paper)")
    rep.add_argument("--first-seed", type=seed_arg, default=0, help="first seed (default 0)")
    rep.add_argument("--episodes", type=episodes_arg, default=200, help="episodes per seed (default 200, as the paper)")
    rep.add_argument(
        "--words",
        type=int_in(0, 60, " (the paper's max_words is 60)"),
        default=18,
        help="words of the honest proposer's text (default 18, about GPT-4.1's average; the paper's "
        "scripted trader wrote 13)",
    )
    rep.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="batch: vectorised (scripted policies); aec: step the PettingZoo environment; "
        "auto: batch whenever possible",
    )
    rep.add_argument(
        "--jobs",
        type=jobs_arg,
        help="worker processes (default 1); with --backend ray, the CPUs of the Ray instance started here",
    )
    add_backend_flags(rep)
    rep.add_argument(
        "--proposer",
        help="run the paper's experiments with this proposer instead of the scripted "
        "ones, e.g. 'llm' (its action-only regime strips the same replies)",
    )
    rep.add_argument("--validator", default="rule", help="validator spec (default: the paper's rule engine)")
    rep.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="paper_scripted",
        help="game preset (default paper_scripted: the proposer knows its true compliance)",
    )
    add_flag_groups(rep, "OUT/llm_cache", ["proposer", "validator"])


def _reproduce(args: argparse.Namespace) -> int:
    proposer = fill_spec(args.proposer, args) if args.proposer else None
    validator = fill_spec(args.validator, args)
    executor = executor_of(args, default_jobs=1)
    opts = ReproduceOptions(
        seeds=args.seeds,
        episodes=args.episodes,
        words=args.words,
        first_seed=args.first_seed,
        engine=args.engine,
        jobs=args.jobs or 1,
        proposer=proposer,
        validator=validator,
        preset=args.preset,
        concurrency=getattr(args, "concurrency", 8),
    )
    if getattr(args, "dry_run", False):
        return dry_run(
            ExchangeAuditConfig.from_preset(args.preset), {"proposer": [proposer or "honest"], "validator": [validator]}
        )
    configure_flag_groups(args, args.out / "llm_cache")
    result = reproduce(args.out, opts, progress=None, executor=executor)
    print((args.out / "table1.md").read_text())
    print((args.out / "table2.md").read_text())
    wrote = sorted(p.name for p in args.out.iterdir() if not p.name.startswith("."))  # (not the results' lock)
    print(f"wrote {', '.join(wrote)} to {args.out} in {result['seconds']:.1f} s")
    return failures(args.command, result["failed"], getattr(args, "cache", None))


COMMAND = Command(
    "reproduce",
    "the paper's tables and figure, offline, from scripted policies",
    _reproduce_arguments,
    _reproduce,
    "Run every experiment the paper reports with scripted policies and write table1.csv/.md, table2.csv/.md, "
    "figure4.png, results.jsonl and summary.md into --out. Re-running resumes.",
    "finished runs (and LLM episodes) are saved in --out; run the same command to resume",
)
