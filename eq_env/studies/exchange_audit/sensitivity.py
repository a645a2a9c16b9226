"""``eq-env sensitivity``: how much the LLM proposer's results depend on its prompt and its model.

The paper ran one model (GPT-4.1) with one prompt. This command runs the LLM proposer with every prompt
variant (the versioned templates ``agents/exchange_audit/prompts/proposer_<variant>.txt``: ``v1``, the
default, and ``terse_v1``, ``compliance_v1``, ``payoff_v1``, ``roleplay_v1``; ``--variants`` chooses) and
every model given, through the reproduction's conditions: the with-artifacts and action-only regimes
(the action-only regime strips the same reply, ``llm:strip=true``) at each q of the grid, against the
paper's rule validator, on the same seeds — every variant and model sees the same positions, noise and
audit coins (common random numbers). Runs go through :func:`eq_env.core.experiments.run_all`: they are
recorded (``results.jsonl``, ``episodes/``, the answers in ``llm_cache/``), resumed when the command is run
again, replayed with no request by ``--cache read``; an episode whose endpoint gave no answer after the
retries is recorded as failed and counted, not measured.

**The metrics.** Welfare, ambiguous welfare, approval, bad approval, words, misreporting
(:data:`~eq_env.exchange_audit.records.METRICS`) and the LLM failure rate: (failed episodes + fallback
calls, where no valid reply came after the re-asks) / episodes. For a seed, a metric's value is its mean
over the q grid, defined where the metric is defined at every q (not where a run at some q has no value —
every episode failed, say: a mean over part of the grid would mix q's). For each model, regime and metric the
tables give:

* per variant, the mean over seeds and its 95% Student-t interval;
* the spread across variants: the smallest and largest variant mean and the range between them;
* **between vs within**: a two-way analysis of variance without replication (variants × seeds, the seeds
  as blocks since every variant plays the same seeds): the F-test of the variant effect against the
  residual seed-to-seed noise, with (k − 1, (k − 1)(n − 1)) degrees of freedom for k variants and n seeds
  (:func:`eq_env.core.stats.blocked_anova`); ``between SD`` is the SD of the variant means, ``within SD``
  the residual SD. p < 0.05 says the prompt changes the metric by more than seed noise explains.

The artifacts regime shows every metric, and the action-only regime the outcomes (welfare, ambiguous
welfare, approval, bad approval): its reply is the same sample stripped of claims and text, so its words
are 0 and its misreporting and failures are the artifacts regime's. ``net gain`` is the artifacts regime's
ambiguous welfare minus the action-only regime's, seed by seed (the paper's Table 1 gain).

**Offline.** ``--demo`` starts the local scripted server (:mod:`eq_env.agents.exchange_audit.demo`): a scripted
model per prompt variant — honest, terse, verbose, misreporting, sometimes refusing — and a second model
answering the same through a hostile transport (429s, 5xx, an outage, malformed and injected replies), so
the command, its tables and its failure accounting can be seen without a key. Its numbers describe the
script, not a language model.

Writes ``sensitivity_conditions.csv`` (every model, variant, regime and q), ``sensitivity_variants.csv``
(per variant, pooled over q), ``sensitivity_spread.csv`` (per model, regime and metric), ``sensitivity.md``,
``sensitivity.png``, ``llm_costs.csv`` and ``summary.md``.
"""

from __future__ import annotations

import argparse
import math
import shlex
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from eq_env.agents.exchange_audit.dry_run import dry_run
from eq_env.core.cli import (
    Command,
    configure_flag_groups,
    episodes_arg,
    failures,
    fill_spec,
    list_of,
    model_names,
    out_dir,
    seed_arg,
    seeds_arg,
    shown,
)
from eq_env.core.experiments import (
    Condition,
    ResultsStore,
    check_runs,
    failed_runs,
    llm_columns,
    llm_report,
    run_all,
)
from eq_env.core.policy import format_policy_spec, parse_policy_spec
from eq_env.core.report import fmt_number, from_json_number, markdown_table, plot_lines, write_csv
from eq_env.core.stats import blocked_anova, mean_interval
from eq_env.exchange_audit.config import PRESETS, ExchangeAuditConfig
from eq_env.studies.exchange_audit.flags import audit_intensities
from eq_env.studies.exchange_audit.reproduce import REGIMES, _llm_paragraph

__all__ = [
    "DEFAULT_QS",
    "METRICS",
    "SensitivityOptions",
    "conditions",
    "prompt_variants",
    "sensitivity",
    "variant_spec",
]

DEFAULT_QS = (0.0, 0.3, 1.0)
METRICS = {  # metric: (what the tables call it, digits)
    "welfare": ("welfare", 3),
    "ambiguous_welfare": ("ambiguous welfare", 3),
    "approval_rate": ("approval", 3),
    "bad_approval_rate": ("bad approval", 3),
    "words": ("words", 1),
    "misreport_rate": ("misreporting", 3),
    "llm_failure_rate": ("LLM failure rate", 3),
}
OUTCOMES = ("welfare", "ambiguous_welfare", "approval_rate", "bad_approval_rate")  # the action-only regime's
GAIN = "net_gain"  # the pseudo-regime: artifacts minus action only, ambiguous welfare


def prompt_variants() -> list[str]:
    """The proposer's prompt variants, ``v1`` (the default) first."""
    from eq_env.agents.exchange_audit.policies import prompt_variants as variants

    found = variants("proposer")
    return ["v1", *(v for v in found if v != "v1")] if "v1" in found else found


@dataclass(frozen=True)
class SensitivityOptions:
    """What ``eq-env sensitivity`` runs.

    Attributes:
        proposers: one ``llm`` proposer spec per model (``llm:model=gpt-4.1,base_url=...``); each is run with
            every variant (its ``prompt_version`` is set per variant). Models are told apart by name.
        variants: prompt variants (default: all there are).
        validators: the validator spec, one for all models or one per model (default the paper's rule).
        demo: serve the models from the local scripted server (see the module docstring).
    """

    proposers: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    qs: tuple[float, ...] = DEFAULT_QS
    regimes: tuple[str, ...] = REGIMES
    seeds: int = 5
    first_seed: int = 0
    episodes: int = 50
    preset: str = "paper_scripted"
    validators: tuple[str, ...] = ("rule",)
    concurrency: int = 8
    demo: bool = False

    def __post_init__(self) -> None:
        for name in ("seeds", "episodes", "concurrency"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.first_seed, bool) or not isinstance(self.first_seed, int) or self.first_seed < 0:
            raise ValueError(f"first_seed must be a non-negative integer, got {self.first_seed!r}")
        if not self.proposers:
            raise ValueError("sensitivity needs at least one model (--model), or --demo")
        for spec in self.proposers:
            if parse_policy_spec(spec)[0] != "llm":
                raise ValueError(f"sensitivity runs the LLM proposer: expected an 'llm' spec, got {spec!r}")
        models = self.models
        if len(set(models)) != len(models):
            raise ValueError(f"models must be distinct, got {', '.join(models)}")
        known = prompt_variants()
        if not self.variants:
            object.__setattr__(self, "variants", tuple(known))
        for v in self.variants:
            if v not in known:
                raise ValueError(f"unknown prompt variant {v!r}; available: {', '.join(known)}")
        if len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants must be distinct, got {', '.join(self.variants)}")
        if not self.qs or len(set(self.qs)) != len(self.qs):
            raise ValueError(f"qs must be distinct audit intensities, at least one, got {list(self.qs)}")
        if (
            not self.regimes
            or any(r not in REGIMES for r in self.regimes)
            or len(set(self.regimes)) != len(self.regimes)
        ):
            raise ValueError(f"regimes must be distinct ones of {', '.join(REGIMES)}, got {list(self.regimes)}")
        if len(self.validators) not in (1, len(self.proposers)):
            raise ValueError(
                f"give one validator, or one per model ({len(self.proposers)}), got {len(self.validators)}"
            )

    @property
    def models(self) -> list[str]:
        return [str(parse_policy_spec(s)[1].get("model", "gpt-4.1")) for s in self.proposers]

    def validator(self, i: int) -> str:
        return self.validators[i if len(self.validators) > 1 else 0]


def variant_spec(base: str, variant: str, regime: str) -> str:
    """The proposer spec ``base`` with the prompt ``variant``, stripped in the action-only regime."""
    name, kwargs = parse_policy_spec(base)
    kwargs = {**kwargs, "prompt_version": variant}
    if regime == "action_only":
        kwargs["strip"] = True
    return format_policy_spec(name, kwargs)


def conditions(opts: SensitivityOptions) -> list[Condition]:
    """Every (model, variant, q, regime) condition, labelled with them."""
    base = ExchangeAuditConfig.from_preset(opts.preset)
    out = []
    for i, (model, proposer) in enumerate(zip(opts.models, opts.proposers, strict=True)):
        for variant in opts.variants:
            for q in opts.qs:
                cfg = base.replace(q=q)
                for regime in opts.regimes:
                    policies = {"proposer": variant_spec(proposer, variant, regime), "validator": opts.validator(i)}
                    labels = (("model", model), ("variant", variant), ("regime", regime), ("q", q))
                    out.append(Condition(cfg, policies, opts.episodes, labels))
    return out


@contextmanager
def demo_endpoint() -> Iterator[str]:
    """The demo's local scripted server, under its fixed name
    (:data:`eq_env.agents.exchange_audit.demo.DEMO_ENDPOINT`)."""
    from eq_env.agents.client import alias_endpoint
    from eq_env.agents.exchange_audit.demo import DEMO_ENDPOINT, DEMO_MODELS, SensitivityDemoScript
    from eq_env.agents.fake_server import ScriptedLLMServer

    with ScriptedLLMServer(SensitivityDemoScript(), models=DEMO_MODELS) as server:
        yield alias_endpoint(DEMO_ENDPOINT, server.url)


# ---------------------------------------------------------------------------
# Per-seed values
# ---------------------------------------------------------------------------
def _failure_rate(record: Mapping[str, Any]) -> float:
    """(failed episodes + fallback calls) / episodes of one run."""
    llm = record.get("llm") or {}
    fallbacks = sum(int(part.get("fallbacks", 0)) for part in llm.values() if isinstance(part, Mapping))
    return (int(llm.get("failed_episodes", 0)) + fallbacks) / int(record["episodes"])


def _values(record: Mapping[str, Any]) -> dict[str, float]:
    metrics = {k: from_json_number(v) for k, v in record["metrics"].items()}
    return {
        **{m: metrics.get(m, math.nan) for m in METRICS if m != "llm_failure_rate"},
        "llm_failure_rate": _failure_rate(record),
    }


def _grid_mean(values: Sequence[float]) -> float:
    """The mean over the q grid; NaN if the metric is undefined at any q (a mean over part of the grid would
    compare one seed's or variant's q's with another's)."""
    return math.nan if any(math.isnan(v) for v in values) else math.fsum(values) / len(values)


Cell = tuple[str, str, str, float]  # (model, variant, regime, q)
Pooled = Mapping[tuple[str, str, str, str], Mapping[int, float]]  # (model, regime, metric, variant): {seed: value}


def _per_seed(
    conds: Sequence[Condition], records: Sequence[Mapping[str, Any]]
) -> dict[Cell, dict[int, dict[str, float]]]:
    """{(model, variant, regime, q): {seed: metric values}} from the run records."""
    by_key = {(r["condition"], int(r["seed"])): r for r in records}
    out: dict[Cell, dict[int, dict[str, float]]] = {}
    for c in conds:
        cell = (c.label("model"), c.label("variant"), c.label("regime"), c.label("q"))
        out[cell] = {seed: _values(r) for (key, seed), r in sorted(by_key.items()) if key == c.key}
    return out


def _pooled(
    per_seed: Mapping[Cell, Mapping[int, Mapping[str, float]]], opts: SensitivityOptions
) -> dict[tuple[str, str, str, str], dict[int, float]]:
    """{(model, regime, metric, variant): {seed: mean over the q grid}}, with the net gain as a regime."""
    seeds = range(opts.first_seed, opts.first_seed + opts.seeds)
    out: dict[tuple[str, str, str, str], dict[int, float]] = {}
    for model in opts.models:
        for variant in opts.variants:
            for regime in opts.regimes:
                for metric in METRICS:
                    out[(model, regime, metric, variant)] = {
                        s: _grid_mean(
                            [per_seed[(model, variant, regime, q)].get(s, {}).get(metric, math.nan) for q in opts.qs]
                        )
                        for s in seeds
                    }
            if set(REGIMES) <= set(opts.regimes):
                gains = {}
                for s in seeds:
                    diffs = []
                    for q in opts.qs:
                        art = per_seed[(model, variant, "artifacts", q)].get(s, {}).get("ambiguous_welfare", math.nan)
                        act = per_seed[(model, variant, "action_only", q)].get(s, {}).get("ambiguous_welfare", math.nan)
                        diffs.append(art - act)
                    gains[s] = _grid_mean(diffs)
                out[(model, GAIN, "ambiguous_welfare", variant)] = gains
    return out


def _shown(opts: SensitivityOptions) -> list[tuple[str, str]]:
    """The (regime, metric) rows of the tables, in order."""
    rows = []
    if "artifacts" in opts.regimes:
        rows += [("artifacts", m) for m in METRICS]
    if "action_only" in opts.regimes:
        rows += [("action_only", m) for m in OUTCOMES]
    if set(REGIMES) <= set(opts.regimes):
        rows.append((GAIN, "ambiguous_welfare"))
    return rows


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------
def _condition_rows(per_seed: Mapping[Cell, Mapping[int, Mapping[str, float]]]) -> list[dict[str, Any]]:
    rows = []
    for (model, variant, regime, q), seeds in per_seed.items():
        row: dict[str, Any] = {"model": model, "variant": variant, "regime": regime, "q": q, "seeds": len(seeds)}
        for metric in METRICS:
            mean, low, high, _ = mean_interval([v[metric] for v in seeds.values()])
            row.update({f"{metric}_mean": mean, f"{metric}_ci_low": low, f"{metric}_ci_high": high})
        rows.append(row)
    return rows


def _variant_rows(pooled: Pooled, opts: SensitivityOptions) -> list[dict[str, Any]]:
    rows = []
    for model in opts.models:
        for regime, metric in _shown(opts):
            for variant in opts.variants:
                mean, low, high, n = mean_interval(list(pooled[(model, regime, metric, variant)].values()))
                rows.append(
                    {
                        "model": model,
                        "regime": regime,
                        "metric": metric,
                        "variant": variant,
                        "mean": mean,
                        "ci_low": low,
                        "ci_high": high,
                        "seeds": n,
                    }
                )
    return rows


def _spread_rows(
    pooled: Pooled, variant_rows: Sequence[Mapping[str, Any]], opts: SensitivityOptions
) -> list[dict[str, Any]]:
    rows = []
    for model in opts.models:
        for regime, metric in _shown(opts):
            here = [r for r in variant_rows if (r["model"], r["regime"], r["metric"]) == (model, regime, metric)]
            means = {r["variant"]: r["mean"] for r in here if not math.isnan(r["mean"])}
            test = blocked_anova({v: pooled[(model, regime, metric, v)] for v in opts.variants})
            low = min(means, key=means.__getitem__) if means else ""
            high = max(means, key=means.__getitem__) if means else ""
            rows.append(
                {
                    "model": model,
                    "regime": regime,
                    "metric": metric,
                    "min": means[low] if means else math.nan,
                    "min_variant": low,
                    "max": means[high] if means else math.nan,
                    "max_variant": high,
                    "range": means[high] - means[low] if means else math.nan,
                    "between_sd": test.between_sd,
                    "within_sd": test.within_sd,
                    "f": test.f,
                    "df_variants": test.df_treatments,
                    "df_residual": test.df_residual,
                    "p": test.p,
                    "seeds": test.blocks,
                }
            )
    return rows


def _num(x: float, digits: int, sign: bool = False) -> str:
    return "—" if x is None or math.isnan(x) else fmt_number(x, f"{'+' if sign else ''}.{digits}f")


def _interval(r: Mapping[str, Any], digits: int, sign: bool) -> str:
    if math.isnan(r["mean"]):
        return "—"
    if math.isnan(r["ci_low"]):
        return _num(r["mean"], digits, sign)
    return f"{_num(r['mean'], digits, sign)} [{_num(r['ci_low'], digits, sign)}, {_num(r['ci_high'], digits, sign)}]"


def _test_cell(r: Mapping[str, Any]) -> str:
    if math.isnan(r["f"]):
        return "—"
    f = "inf" if math.isinf(r["f"]) else f"{r['f']:.2f}"
    p = "< 0.001" if r["p"] < 0.001 else f"{r['p']:.3f}"
    return f"F({r['df_variants']}, {r['df_residual']}) = {f}, p {'' if p.startswith('<') else '= '}{p}"


def _markdown(
    variant_rows: Sequence[Mapping[str, Any]], spread: Sequence[Mapping[str, Any]], opts: SensitivityOptions, model: str
) -> str:
    body = []
    for regime, metric in _shown(opts):
        label, digits = METRICS[metric]
        sign = regime == GAIN
        cells = [
            _interval(r, digits, sign)
            for r in variant_rows
            if (r["model"], r["regime"], r["metric"]) == (model, regime, metric)
        ]
        s = next(r for r in spread if (r["model"], r["regime"], r["metric"]) == (model, regime, metric))
        span = (
            "—"
            if math.isnan(s["range"])
            else (
                f"{_num(s['range'], digits)} ({_num(s['min'], digits, sign)} {s['min_variant']} – "
                f"{_num(s['max'], digits, sign)} {s['max_variant']})"
            )
        )
        body.append([regime.replace("_", " ") if regime != GAIN else "net gain", label, *cells, span, _test_cell(s)])
    headers = ["regime", "metric", *opts.variants, "range (min – max)", "variants vs seeds"]
    return markdown_table(headers, body)


def _figure(path: Path, variant_rows: Sequence[Mapping[str, Any]], opts: SensitivityOptions) -> None:
    panels = []
    shown = [(r, m) for r, m in _shown(opts) if r != "action_only"] or _shown(opts)  # (action only: its own)
    width = 0.3 / max(len(opts.models) - 1, 1)
    for regime, metric in shown:
        series = []
        for i, model in enumerate(opts.models):
            rows = [r for r in variant_rows if (r["model"], r["regime"], r["metric"]) == (model, regime, metric)]
            offset = (i - (len(opts.models) - 1) / 2) * width
            low = [r["mean"] - r["ci_low"] if not math.isnan(r["ci_low"]) else 0.0 for r in rows]
            high = [r["ci_high"] - r["mean"] if not math.isnan(r["ci_high"]) else 0.0 for r in rows]
            series.append(
                {
                    "label": model,
                    "x": [j + offset for j in range(len(rows))],
                    "y": [r["mean"] for r in rows],
                    "yerr": [low, high],
                    "style": {"fmt": "o"},
                }
            )
        name = METRICS[metric][0] if regime != GAIN else "net gain (ambiguous welfare, artifacts − action only)"
        panels.append({"ylabel": name if regime in ("artifacts", GAIN) else f"{name} ({regime})", "series": series})
    title = (
        f"Prompt sensitivity: mean over q in {{{', '.join(f'{q:g}' for q in opts.qs)}}}, 95% interval over "
        f"{opts.seeds} seeds" + (" (scripted demo models)" if opts.demo else "")
    )
    plot_lines(path, panels, xlabel="prompt variant", title=title, xticklabels=list(opts.variants))


# ---------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------
def sensitivity(out: Path | str, opts: SensitivityOptions, *, progress: bool | None = None) -> dict[str, Any]:
    """Run the experiment of the module docstring and write its files; returns the spread rows, the variant
    rows, the time taken, ``failed`` (runs with failed episodes: key, failed, episodes) and, for ``--demo``,
    ``served`` (the requests the local server answered).

    No executor: every run has an LLM proposer, and LLM runs stay in this process on every backend (the
    two regimes of a state share one answer, which runs in other processes would ask for twice)."""
    started = time.perf_counter()
    out = Path(out)
    server = demo_endpoint() if opts.demo else nullcontext(None)
    with server as endpoint:
        if endpoint is not None:
            opts = _on_demo_endpoint(opts, endpoint)
        conds = conditions(opts)  # (checks every spec) before --out is made: a refused run leaves nothing
        check_runs(conds, "auto", 1)
        out.mkdir(parents=True, exist_ok=True)
        seeds = list(range(opts.first_seed, opts.first_seed + opts.seeds))
        records = run_all(
            conds,
            seeds,
            ResultsStore(out / "results.jsonl"),
            progress=progress,
            desc="sensitivity",
            concurrency=opts.concurrency,
        )
    per_seed = _per_seed(conds, records)
    pooled = _pooled(per_seed, opts)
    condition_rows = _condition_rows(per_seed)
    variant_rows = _variant_rows(pooled, opts)
    spread = _spread_rows(pooled, variant_rows, opts)
    metric_columns = [f"{m}_{s}" for m in METRICS for s in ("mean", "ci_low", "ci_high")]
    write_csv(
        out / "sensitivity_conditions.csv",
        condition_rows,
        ["model", "variant", "regime", "q", "seeds", *metric_columns],
    )
    write_csv(out / "sensitivity_variants.csv", variant_rows, list(variant_rows[0]))
    write_csv(out / "sensitivity_spread.csv", spread, list(spread[0]))
    tables = {m: _markdown(variant_rows, spread, opts, m) for m in opts.models}
    (out / "sensitivity.md").write_text("".join(f"### Model `{m}`\n\n{t}\n" for m, t in tables.items()))
    _figure(out / "sensitivity.png", variant_rows, opts)
    llm_rows = llm_report(conds, records)
    write_csv(out / "llm_costs.csv", llm_rows, llm_columns(ExchangeAuditConfig.NAME))
    elapsed = time.perf_counter() - started
    (out / "summary.md").write_text(_summary(opts, tables, spread, variant_rows, llm_rows, elapsed))
    return {"spread": spread, "variants": variant_rows, "seconds": elapsed, "failed": failed_runs(records)}


def _on_demo_endpoint(opts: SensitivityOptions, endpoint: str) -> SensitivityOptions:
    """The options with every proposer (and LLM validator) spec pointed at the demo server."""

    def point(spec: str) -> str:
        name, kwargs = parse_policy_spec(spec)
        return format_policy_spec(name, {**kwargs, "base_url": endpoint}) if name == "llm" else spec

    return replace(opts, proposers=tuple(map(point, opts.proposers)), validators=tuple(map(point, opts.validators)))


def _digests(opts: SensitivityOptions) -> str:
    from eq_env.agents.exchange_audit.policies import PROMPT_DIR
    from eq_env.agents.llm import template_digest

    return ", ".join(f"`{v}` ({template_digest(PROMPT_DIR, 'proposer', v)})" for v in opts.variants)


def _reading(spread: Sequence[Mapping[str, Any]], variant_rows: Sequence[Mapping[str, Any]], model: str) -> list[str]:
    """What the tables of one model say: the artifacts' gain under every variant, then which metrics the prompt
    moves by more than seed noise."""
    rows = [r for r in spread if r["model"] == model]

    def name(r: Mapping[str, Any]) -> str:
        regime = "net gain" if r["regime"] == GAIN else r["regime"].replace("_", " ")
        return f"{METRICS[r['metric']][0]} ({regime})"

    lines = [f"**`{model}`.**"]
    gains = [r for r in variant_rows if r["model"] == model and r["regime"] == GAIN]
    if gains:
        above = [r["variant"] for r in gains if r["ci_low"] > 0]
        intervals = sum(not math.isnan(r["ci_low"]) for r in gains)  # (one seed: none)
        spread_row = next(r for r in rows if r["regime"] == GAIN)
        lines[0] += (
            f" Artifacts against action only, in ambiguous welfare: {_num(spread_row['min'], 3, True)} "
            f"({spread_row['min_variant']}) to {_num(spread_row['max'], 3, True)} ({spread_row['max_variant']}) across "
            + (
                f"variants; the 95% interval lies above zero for {len(above)} of {intervals} variants"
                + (f" ({', '.join(above)})." if 0 < len(above) < intervals else ".")
                if intervals
                else "variants; no interval (it needs two seeds with the variant defined)."
            )
        )
    tested = [r for r in rows if not math.isnan(r["p"])]
    if not tested:
        agree = any(r["df_variants"] >= 1 and r["seeds"] >= 2 for r in rows)  # testable, but nothing varied
        why = (
            "the variants agree seed by seed on every metric with two seeds defined: no difference to weigh"
            if agree
            else "it needs at least two variants and two seeds with every variant defined"
        )
        return [*lines, "", f"No test: {why}."]
    moved = [r for r in tested if r["p"] < 0.05]
    lines += [
        "",
        "The prompt variant moves by more than seed noise (p < 0.05):"
        if moved
        else "No metric differs across variants by more than seed noise (every p ≥ 0.05).",
    ]
    for r in moved:
        digits = METRICS[r["metric"]][1]
        lines.append(
            f"- {name(r)}: {_num(r['min'], digits)} ({r['min_variant']}) to {_num(r['max'], digits)} "
            f"({r['max_variant']}); {_test_cell(r)}"
        )
    flat = [r for r in tested if r["p"] >= 0.05]
    if flat and moved:
        lines += ["", "Not distinguishable from seed noise: " + ", ".join(map(name, flat)) + "."]
    return lines


def _command(opts: SensitivityOptions) -> str:
    """The command line that runs ``opts`` (endpoint and LLM settings left out: they may hold secrets)."""
    parts = ["eq-env sensitivity --out DIR"]
    parts += ["--demo"] if opts.demo else []
    parts += [f"--model {shlex.quote(m)}" for m in opts.models]  # (a model name is anything: quoted for a shell)
    if tuple(opts.variants) != tuple(prompt_variants()):
        parts.append(f"--variants {','.join(opts.variants)}")
    parts.append(f"--qs {','.join(f'{q:g}' for q in opts.qs)}")
    if tuple(opts.regimes) != REGIMES:
        parts.append(f"--regimes {','.join(opts.regimes)}")
    parts += [f"--seeds {opts.seeds}", f"--episodes {opts.episodes}"]
    if opts.first_seed:
        parts.append(f"--first-seed {opts.first_seed}")
    if opts.preset != "paper_scripted":
        parts.append(f"--preset {opts.preset}")
    if set(opts.validators) != {"rule"}:
        parts.append(f"--validator {shlex.quote(parse_policy_spec(opts.validators[0])[0])}")
    return " ".join(parts)


def _summary(
    opts: SensitivityOptions,
    tables: Mapping[str, str],
    spread: Sequence[Mapping[str, Any]],
    variant_rows: Sequence[Mapping[str, Any]],
    llm_rows: Sequence[dict[str, Any]],
    elapsed: float,
) -> str:
    seeds = f"{opts.first_seed}..{opts.first_seed + opts.seeds - 1}"
    lines = [
        "# Sensitivity of the LLM proposer to its prompt and its model",
        "",
        f"Command: `{_command(opts)}`; {elapsed:.1f} s.",
        "",
        f"Models: {', '.join(f'`{m}`' for m in opts.models)}"
        + (" (scripted demo models on the local server, not language models)" if opts.demo else "")
        + f". Prompt variants (template digest): {_digests(opts)}. Regimes: {', '.join(opts.regimes)}; q in "
        f"{{{', '.join(f'{q:g}' for q in opts.qs)}}}; seeds {seeds}, {opts.episodes} episodes each; preset "
        f"`{opts.preset}`; validator {', '.join(f'`{v}`' for v in dict.fromkeys(opts.validators))}. Every "
        "variant and model plays the same positions, noise and audit coins on a seed.",
        "",
        "A seed's value is the metric's mean over the q grid; cells give the mean over seeds and its 95% "
        "t-interval. *range* is the largest minus the smallest variant mean. *variants vs seeds* is the F-test "
        "of a two-way analysis of variance without replication (variants × seeds, the seeds as blocks): does "
        "the variant move the metric by more than the residual seed-to-seed noise? The LLM failure rate "
        "counts failed episodes (no answer after the retries) and fallbacks (no valid reply after the "
        "re-asks) per episode; failed episodes are left out of the other metrics. Each p-value is that "
        "metric's own test, not corrected for the number of metrics tested.",
        "",
    ]
    if opts.demo:
        from eq_env.agents.exchange_audit.demo import BEHAVIOURS

        lines += [
            "The demo's scripted behaviours, by variant: "
            + ", ".join(f"`{v}` {BEHAVIOURS.get(v, 'honest')}" for v in opts.variants)
            + "; `demo-hostile` answers the same through a hostile transport (one prompt in twenty always "
            "refused with a 503, others first met with a 429, a 500 or malformed JSON, or answered with an "
            "injected instruction). See `agents/exchange_audit/demo.py`.",
            "",
        ]
    for model, table in tables.items():
        lines += [f"## Model `{model}`", "", table, ""]
    lines += ["![metrics by prompt variant](sensitivity.png)", "", "## Reading", ""]
    for model in opts.models:
        lines += [*_reading(spread, variant_rows, model), ""]
    if llm_rows:
        lines += [_llm_paragraph(llm_rows), ""]
    lines.append(
        "Files: `sensitivity_conditions.csv` (every model, variant, regime and q), `sensitivity_variants.csv`, "
        "`sensitivity_spread.csv`, `sensitivity.md`, `sensitivity.png`, `llm_costs.csv`. `results.jsonl` "
        "holds one record per condition and seed; running the command again resumes from it, and "
        "`--cache read --cache-dir DIR/llm_cache` replays the recorded answers without a request."
    )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
def _variant(text: str) -> str:
    known = prompt_variants()
    if text not in known:
        raise argparse.ArgumentTypeError(f"no prompt variant {shown(text)}; available: {', '.join(known)}")
    return text


def _regime(text: str) -> str:
    from eq_env.studies.exchange_audit.reproduce import REGIMES

    if text not in REGIMES:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(REGIMES)}, got {shown(text)}")
    return text


def _sensitivity_arguments(se: argparse.ArgumentParser) -> None:
    from eq_env.agents.cli import LLM_FLAGS  # (the command runs the LLM proposer: its flags, --model repeatable)

    se.add_argument("--out", type=out_dir, required=True, help="output directory")
    se.add_argument(
        "--demo",
        action="store_true",
        help="serve scripted models from a local server (no key, "
        "no network): a behaviour per prompt variant, and a second model behind a hostile "
        "transport",
    )
    se.add_argument(
        "--variants",
        type=list_of(_variant, "prompt variants", distinct=True),
        help="prompt variants to compare (default: every proposer_<variant>.txt template)",
    )
    se.add_argument(
        "--qs",
        type=audit_intensities,
        default=",".join(f"{q:g}" for q in DEFAULT_QS),
        help="the q grid (default %(default)s)",
    )
    se.add_argument(
        "--regimes",
        type=list_of(_regime, "regimes", distinct=True),
        default="artifacts,action_only",
        help="artifacts (claims and text), action_only (the same reply stripped), or both (default %(default)s)",
    )
    se.add_argument("--seeds", type=seeds_arg, default=5, help="seeds per condition (default 5)")
    se.add_argument("--first-seed", type=seed_arg, default=0, help="first seed (default 0)")
    se.add_argument("--episodes", type=episodes_arg, default=50, help="episodes per seed (default 50)")
    se.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="paper_scripted",
        help="game preset (default paper_scripted: the proposer knows its true compliance)",
    )
    se.add_argument(
        "--validator",
        default="rule",
        help="validator spec (default: the paper's rule engine); an 'llm' validator is played by the model under test",
    )
    LLM_FLAGS.add(se, "OUT/llm_cache", ["proposer", "validator"], many_models=True)


def _sensitivity(args: argparse.Namespace) -> int:
    from eq_env.agents.exchange_audit.demo import DEMO_MODELS

    models: list[str | None] = [*model_names(args, DEMO_MODELS)]
    proposers, validators = [], []
    for model in models or [None]:  # (no --model: $EQ_ENV_MODEL, else gpt-4.1, as every LLM command)
        one = argparse.Namespace(**{**vars(args), "model": model})
        proposers.append(fill_spec("llm", one))
        validators.append(fill_spec(args.validator, one))
    opts = SensitivityOptions(
        proposers=tuple(proposers),
        variants=tuple(args.variants or ()),
        qs=tuple(args.qs),
        regimes=tuple(args.regimes),
        seeds=args.seeds,
        first_seed=args.first_seed,
        episodes=args.episodes,
        preset=args.preset,
        validators=tuple(validators),
        concurrency=args.concurrency,
        demo=args.demo,
    )
    if args.dry_run:  # one prompt per variant (of the first model): what would be sent
        return dry_run(
            ExchangeAuditConfig.from_preset(args.preset),
            {
                "proposer": [variant_spec(proposers[0], v, "artifacts") for v in opts.variants],
                "validator": [validators[0]],
            },
        )
    configure_flag_groups(args, args.out / "llm_cache")
    result = sensitivity(args.out, opts, progress=None)
    print((args.out / "sensitivity.md").read_text())
    wrote = sorted(p.name for p in args.out.iterdir() if not p.name.startswith("."))  # (not the results' lock)
    print(f"wrote {', '.join(wrote)} to {args.out} in {result['seconds']:.1f} s")
    code = failures(args.command, result["failed"], args.cache)
    if args.demo and code:  # (the advice to run again cannot help here: the outage is part of the script)
        print(
            "(--demo: demo-hostile's outage is scripted, so these episodes fail again on every run; the status "
            "3 shows how a real run reports failures)"
        )
    return code


COMMAND = Command(
    "sensitivity",
    "the LLM proposer over prompt variants and models: each metric's spread across variants",
    _sensitivity_arguments,
    _sensitivity,
    "For each model (--model, repeatable) and prompt variant (--variants): the reproduction's artifacts and "
    "action-only regimes across --qs, recorded, resumable and replayable (--cache read). Writes per-variant "
    "means with 95% intervals, the spread across variants and an F-test of variants against seed noise: "
    "sensitivity_conditions.csv, sensitivity_variants.csv, sensitivity_spread.csv, sensitivity.md, "
    "sensitivity.png, llm_costs.csv and summary.md into --out. --demo runs scripted models on a local server. "
    "Every run has an LLM proposer, and LLM runs stay in this process (the two regimes of a state share one "
    "answer): it takes no --backend.",
    "finished runs and LLM episodes are saved in --out, the answers in its llm_cache; run the same command to resume",
)
