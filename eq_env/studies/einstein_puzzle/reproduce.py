"""``eq-env reproduce --env einstein-puzzle``: the paper's verifier and communication experiments, offline.

The paper (Peng et al., arXiv 2510.25595) measures fine-tuned LLM players on the collaborative puzzle under
four communication modes and 4–8 objects, with and without a verifier that screens their candidate actions
(+10 to +40 points of success with the reasoning verifier). Its models are not available offline, so the
scripted players stand in for them, in both seats:

* ``planner`` — the decentralised planner (a strong, deterministic player);
* ``random`` — a uniformly random legal action (the weakest player);
* ``noisy`` — ``noisy:base=planner,epsilon=0.2``: the planner, with a random legal action 20% of the time
  (an imperfect model);
* ``llm`` — with ``--player llm --model M --base-url U``: the LLM player (spec ``llm``, the LLM flags filled
  in), its verified form being ``llm:...,verifier=V,k=4``.

Each player is run without a verifier and screened by each verifier (``affordance``, ``communication``,
``reasoning``: ``verified:base=<player>,verifier=V,k=4``), in every comm mode and for every n. Every
(condition, seed) run goes through the core's resumable experiments (:func:`eq_env.core.experiments.run_all`):
``results.jsonl`` gets one line per run as it finishes, and the same command run again resumes, recomputing
nothing it has. Writes into the output directory:

* ``table_success.csv`` / ``table_success.md`` — success rate per player × verifier × comm mode, a row per n
  (mean ± std over seeds), and the verifier gains;
* ``table_gains.csv`` — each verifier's gain in success rate (points over no verifier, averaged over n, with
  a paired 95% interval over seeds) per player and comm mode, beside the paper's +10 to +40;
* ``table_metrics.csv`` — success, steps, rejected placements, rule-inconsistent actions, partial success,
  illegal actions and verifier interventions per condition (mean ± std over seeds);
* ``figure_success.png`` — success against n, a panel per player and comm mode, a line per verifier;
* ``table_plans.csv`` / ``table_plans.md`` — the oracle's mean optimal plan length on the frozen suite per
  comm mode and n (4–8), beside the paper's at n = 4;
* ``taxonomy.csv`` — error-taxonomy counts per condition (first seed), when
  :mod:`eq_env.einstein_puzzle.taxonomy` provides ``counts(records)``; cached in ``taxonomy.jsonl`` (a line
  per condition, in the conditions' order whatever the backend and ``--jobs``);
* ``results.jsonl`` — one record per condition and seed, with the full configuration;
* ``summary.md`` — the tables and a plain reading: what agrees with the paper, what differs and why.

Python use::

    from eq_env.studies.einstein_puzzle.reproduce import ReproduceOptions, reproduce
    result = reproduce("runs/einstein", ReproduceOptions(episodes=20, seeds=2, sizes=(4, 6)))
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eq_env.core.cli import Command
from eq_env.core.executors import Call, Executor, LocalExecutor
from eq_env.core.experiments import (
    Condition,
    EpisodeStore,
    ResultsStore,
    aggregate,
    check_runs,
    failed_runs,
    llm_columns,
    llm_report,
    paired_difference,
    run_all,
    run_key,
)
from eq_env.core.policy import format_policy_spec, parse_policy_spec
from eq_env.core.report import fmt_number, markdown_table, mean_std, plot_lines, write_csv
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.rules import COMM_MODES

__all__ = [
    "DEFAULT_PLAYERS",
    "PAPER_GAIN",
    "PLAYER_KINDS",
    "VERIFIER_SETTINGS",
    "ReproduceOptions",
    "add_arguments",
    "condition_specs",
    "conditions",
    "reproduce",
    "run",
]

PLAYER_KINDS = ("planner", "random", "noisy", "llm")
DEFAULT_PLAYERS = ("planner", "random", "noisy")
VERIFIER_SETTINGS = ("none", "affordance", "communication", "reasoning")
PAPER_GAIN = (10.0, 40.0)  # the reasoning verifier's gain in the paper, points of success rate
PAPER_HUMANS = {"provide_and_seek": 0.922, "none": 0.911, "provide_only": 0.778}  # the paper's human study
METRIC_COLUMNS = (
    "success_rate",
    "steps",
    "rejected_placements",
    "rule_inconsistent",
    "partial_success",
    "illegal_actions",
    "verifier_interventions",
)
MODE_NAMES = {
    "provide_and_seek": "provide & seek",
    "provide_only": "provide only",
    "seek_only": "seek only",
    "none": "none",
}
DEFAULT_SECONDS = 135  # the default command's measured time with --jobs 2 on 2 cores (runs 70 s, taxonomy 65 s)


@dataclass(frozen=True)
class ReproduceOptions:
    """What ``eq-env reproduce --env einstein-puzzle`` runs.

    Attributes:
        episodes, seeds, first_seed: episodes per run; seeds ``first_seed … first_seed + seeds - 1``.
        sizes, comm_modes: the object counts and communication modes.
        players: the player kinds (``planner``, ``random``, ``noisy``, ``llm``), both seats the same.
        verifiers: the verifier settings (``none`` and any of the three verifiers).
        epsilon: the noisy planner's probability of a random legal action.
        k: candidates a verifier screens.
        puzzles: ``generated`` (a new puzzle per episode and seed) or ``suite`` (the frozen suite's puzzle
            i mod 300: every seed plays the same puzzles).
        llm: the ``llm`` spec (flags filled in) used for the ``llm`` kind.
        jobs, concurrency: worker processes; LLM episodes in flight.
        plan_puzzles: suite puzzles per n the oracle plans (0: no plan-length table).
    """

    episodes: int = 100
    seeds: int = 2
    first_seed: int = 0
    sizes: tuple[int, ...] = (4, 5, 6, 7, 8)
    comm_modes: tuple[str, ...] = COMM_MODES
    players: tuple[str, ...] = DEFAULT_PLAYERS
    verifiers: tuple[str, ...] = VERIFIER_SETTINGS
    epsilon: float = 0.2
    k: int = 4
    puzzles: str = "generated"
    llm: str = "llm"
    jobs: int = 2
    concurrency: int = 8
    plan_puzzles: int = 300
    engine: str = field(default="auto")

    def __post_init__(self) -> None:
        for name in ("episodes", "seeds", "jobs", "concurrency", "k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not self.sizes or not all(isinstance(n, int) and 4 <= n <= 16 for n in self.sizes):
            raise ValueError(f"sizes must be object counts in [4, 16], got {self.sizes!r}")
        if self.puzzles == "suite" and max(self.sizes) > 8:
            raise ValueError(f"the suite has puzzles of 4 to 8 objects, got n={max(self.sizes)}")
        if self.puzzles not in ("generated", "suite"):
            raise ValueError(f"puzzles must be 'generated' or 'suite', got {self.puzzles!r}")
        for name, values, allowed in (
            ("comm_modes", self.comm_modes, COMM_MODES),
            ("players", self.players, PLAYER_KINDS),
            ("verifiers", self.verifiers, VERIFIER_SETTINGS),
        ):
            bad = [v for v in values if v not in allowed]
            if not values or bad or len(set(values)) != len(values):
                raise ValueError(f"{name} must be distinct values among {', '.join(allowed)}, got {list(values)}")
        if "none" not in self.verifiers:
            raise ValueError("verifiers must include 'none': the gains are measured over it")
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {self.epsilon!r}")
        if isinstance(self.plan_puzzles, bool) or not 0 <= self.plan_puzzles <= 300:
            raise ValueError(f"plan_puzzles must be in [0, 300], got {self.plan_puzzles!r}")

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.first_seed, self.first_seed + self.seeds))


def base_spec(kind: str, opts: ReproduceOptions) -> str:
    """The policy spec of a player kind without a verifier."""
    if kind == "noisy":
        return format_policy_spec("noisy", {"base": "planner", "epsilon": opts.epsilon})
    if kind == "llm":
        return opts.llm
    return kind


def player_spec(kind: str, verifier: str, opts: ReproduceOptions) -> str:
    """The policy spec of a player kind under a verifier setting: the base spec for ``none``;
    ``verified:base=<spec>,verifier=V,k=K`` for a scripted player; ``llm:...,verifier=V,k=K`` for the LLM."""
    base = base_spec(kind, opts)
    if verifier == "none":
        return base
    if kind == "llm":
        name, kwargs = parse_policy_spec(base)
        return format_policy_spec(name, {**kwargs, "verifier": verifier, "k": opts.k})
    return format_policy_spec("verified", {"base": base, "verifier": verifier, "k": opts.k})


Labels = tuple[tuple[str, Any], ...]


def condition_specs(opts: ReproduceOptions) -> list[tuple[Labels, EinsteinPuzzleConfig, str]]:
    """(labels, configuration, policy spec of both seats) of every condition, without building the
    policies (an LLM policy not registered yet can still be listed): player × verifier × comm mode × n."""
    out: list[tuple[Labels, EinsteinPuzzleConfig, str]] = []
    for kind in opts.players:
        for verifier in opts.verifiers:
            spec = player_spec(kind, verifier, opts)
            for mode in opts.comm_modes:
                for n in opts.sizes:
                    cfg = EinsteinPuzzleConfig(n=n, comm_mode=mode, puzzles=opts.puzzles)
                    out.append((_labels(kind, verifier, mode, n), cfg, spec))
    return out


def conditions(opts: ReproduceOptions) -> list[Condition]:
    """Every condition (policies checked now: a bad spec fails before anything runs)."""
    return [
        Condition(cfg, {"player_0": spec, "player_1": spec}, opts.episodes, labels)
        for labels, cfg, spec in condition_specs(opts)
    ]


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------
def taxonomy_counts() -> Any:
    """``eq_env.einstein_puzzle.taxonomy.counts`` if that module exists and has it, else ``None``."""
    name = "eq_env.einstein_puzzle.taxonomy"
    try:
        if importlib.util.find_spec(name) is None:
            return None
        counts = getattr(importlib.import_module(name), "counts", None)
    except Exception:  # a module being written may not import yet: no taxonomy then
        return None
    return counts if callable(counts) else None


def _episodes_of(condition: Condition, seed: int, episode_dir: Path) -> list[Any]:
    """The episode records of one run: an LLM run's from its saved episodes, a scripted one's played again
    (deterministic given the seed: the same episodes as recorded)."""
    from eq_env.core.policy import make_policy
    from eq_env.core.runner import FailedEpisode, is_async, play

    spec = condition.game
    policies = {role: make_policy(p, role, spec) for role, p in condition.policies}
    if any(is_async(p) for p in policies.values()):
        saved = EpisodeStore(episode_dir / f"{condition.key}-{seed}.jsonl", spec).load()
        return [e for _, e in sorted(saved.items()) if not isinstance(e, FailedEpisode)]
    return play(spec, condition.config, policies, episodes=condition.episodes, seed=seed)


def _taxonomy_record(condition: Condition, seed: int, episode_dir: Path) -> dict[str, Any]:
    counts = taxonomy_counts()
    assert counts is not None
    episodes = _episodes_of(condition, seed, episode_dir)
    try:  # (its puzzles are generated under the condition's configuration)
        result = counts(episodes, config=condition.config)
    except TypeError:
        result = counts(episodes)
    table = {str(k): v for k, v in dict(result).items()} if isinstance(result, Mapping) else {"counts": str(result)}
    return {
        "key": run_key(condition, seed),
        "labels": dict(condition.labels),
        "counts": {"games": len(episodes), **table},
    }


def _taxonomy(conds: Sequence[Condition], seed: int, out: Path, executor: Executor) -> list[dict[str, Any]]:
    """Error-taxonomy counts per condition on ``seed``, cached in ``taxonomy.jsonl`` (resumable). Scripted
    conditions go to ``executor`` (they play their episodes again); LLM ones are counted here, from the
    episodes this process saved."""
    store = ResultsStore(out / "taxonomy.jsonl")
    done = store.load()
    unique = {c.key: c for c in conds}
    todo = [c for k, c in unique.items() if run_key(c, seed) not in done]
    if todo:
        if not executor.runs_inline(len(todo)) and not any(_is_llm(c) for c in todo):
            # as the core's run_all does: this process alone writes the records, as each arrives
            calls: list[Call] = [((c, seed, out / "episodes"), {}) for c in todo]
            names = [f"taxonomy of {run_key(c, seed)}" for c in todo]
            with contextlib.closing(executor.map_unordered(_taxonomy_record, calls, names)) as finished:
                for record in finished:
                    store.append(record)
                    done[record["key"]] = record
        else:
            for c in todo:
                record = _taxonomy_record(c, seed, out / "episodes")
                store.append(record)
                done[record["key"]] = record
    _write_in_order(store, [run_key(c, seed) for c in unique.values()])
    return [{**dict(c.labels), **done[run_key(c, seed)]["counts"]} for c in conds]


def _write_in_order(store: ResultsStore, keys: Sequence[str]) -> None:
    """Rewrite ``store``'s file with one record per key (the last), those of ``keys`` first in that order, the
    others after as first written — atomically, and only if it is not so already. Records are appended as
    they finish (a killed run keeps them), in an order that depends on the workers; the file left behind
    must not."""
    records = store.records()
    latest = {r["key"]: r for r in records}
    wanted = [k for k in keys if k in latest] + [k for k in latest if k not in set(keys)]
    if [r["key"] for r in records] == wanted:
        return
    tmp = store.path.with_suffix(f".tmp{os.getpid()}")
    try:
        with tmp.open("w") as fh:
            for key in wanted:
                fh.write(json.dumps(latest[key], allow_nan=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, store.path)
    finally:
        tmp.unlink(missing_ok=True)


def _is_llm(condition: Condition) -> bool:
    return any(parse_policy_spec(p)[0] == "llm" or '"llm' in p or "=llm" in p for _, p in condition.policies)


def plan_lengths(sizes: Sequence[int], modes: Sequence[str], puzzles: int) -> list[dict[str, Any]]:
    """The oracle's mean optimal plan length on the suite's first ``puzzles`` puzzles per n (4–8) and mode,
    with the paper's at n = 4."""
    from eq_env.einstein_puzzle.planner import mean_plan_length
    from eq_env.einstein_puzzle.suite import SUITE_SIZES, load_suite
    from eq_env.studies.einstein_puzzle.plan import PAPER_PLAN_LENGTHS

    rows = []
    for n in sizes:
        if n not in SUITE_SIZES or puzzles == 0:
            continue
        suite = load_suite(n)[:puzzles]
        for mode in modes:
            rows.append(
                {
                    "n": n,
                    "comm_mode": mode,
                    "puzzles": len(suite),
                    "oracle_mean_length": mean_plan_length(suite, mode),
                    "paper_mean_length": PAPER_PLAN_LENGTHS.get(mode) if n == 4 else None,
                }
            )
    return rows


def reproduce(
    out: Path | str,
    opts: ReproduceOptions | None = None,
    *,
    progress: bool | None = None,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """Run every condition (resuming from ``out/results.jsonl``) and write the files the module docstring
    lists. Returns the rows of each table, the time taken and, under ``failed``, the runs with failed
    episodes (LLM policies): (key, failed, episodes).

    ``executor``: where the runs and the taxonomy's counts go (default: ``opts.jobs`` local worker
    processes; a :class:`~eq_env.core.executors.RayExecutor` for a Ray cluster): the tables are the same
    bytes on every backend. LLM runs stay in this process on every backend (one answer per state)."""
    opts = opts or ReproduceOptions()
    started = time.perf_counter()
    conds = conditions(opts)  # checks every policy spec before --out is made: a refused run leaves nothing
    check_runs(conds, opts.engine, opts.jobs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = opts.seed_list
    executor = executor or LocalExecutor(opts.jobs)
    records = run_all(
        conds,
        seeds,
        ResultsStore(out / "results.jsonl"),
        engine=opts.engine,
        jobs=opts.jobs,
        progress=progress,
        desc="reproduce einstein-puzzle",
        concurrency=opts.concurrency,
        executor=executor,
    )
    results = {c.labels: (summary, per_seed) for c, summary, per_seed in aggregate(conds, records)}
    policies = {c.labels: c.policy("player_0") for c in conds}

    metric_rows = _metric_rows(opts, results, policies)
    write_csv(out / "table_metrics.csv", metric_rows, _metric_columns())
    gain_rows = _gain_rows(opts, results)
    write_csv(out / "table_gains.csv", gain_rows, GAIN_COLUMNS)
    success_rows = [{k: r[k] for k in SUCCESS_COLUMNS} for r in metric_rows]
    write_csv(out / "table_success.csv", success_rows, SUCCESS_COLUMNS)
    success_md = _success_markdown(opts, success_rows, gain_rows)
    (out / "table_success.md").write_text(success_md)
    _figure(out / "figure_success.png", opts, success_rows)

    plans = plan_lengths(opts.sizes, opts.comm_modes, opts.plan_puzzles)
    files = ["table_success.csv", "table_success.md", "table_gains.csv", "table_metrics.csv", "figure_success.png"]
    if plans:
        write_csv(out / "table_plans.csv", plans, PLAN_COLUMNS)
        (out / "table_plans.md").write_text(_plans_markdown(plans))
        files += ["table_plans.csv", "table_plans.md"]
    taxonomy: list[dict[str, Any]] = []
    if taxonomy_counts() is not None:
        taxonomy = _taxonomy(conds, seeds[0], out, executor)
        columns = ["player", "verifier", "comm_mode", "n"]
        columns += sorted({k for row in taxonomy for k in row} - set(columns))
        write_csv(out / "taxonomy.csv", taxonomy, columns)
        files += ["taxonomy.csv", "taxonomy.jsonl"]
    llm_rows = llm_report(conds, records)
    if llm_rows:
        write_csv(out / "llm_costs.csv", llm_rows, llm_columns(EinsteinPuzzleConfig.NAME))
        files.append("llm_costs.csv")
    files += ["results.jsonl", "summary.md"]
    elapsed = time.perf_counter() - started
    summary = _summary(opts, metric_rows, gain_rows, success_md, plans, taxonomy, files, elapsed)
    (out / "summary.md").write_text(summary)
    return {
        "success": success_rows,
        "gains": gain_rows,
        "metrics": metric_rows,
        "plans": plans,
        "taxonomy": taxonomy,
        "seconds": elapsed,
        "failed": failed_runs(records),
        "files": files,
    }


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------
SUCCESS_COLUMNS = ("player", "verifier", "comm_mode", "n", "success_rate_mean", "success_rate_std")
GAIN_COLUMNS = (
    "player",
    "comm_mode",
    "verifier",
    "gain_points",
    "gain_ci_low",
    "gain_ci_high",
    "seeds",
    "gain_min_over_n",
    "gain_max_over_n",
    "success_without",
    "success_with",
    "paper_gain_low",
    "paper_gain_high",
    "within_paper_range",
)
PLAN_COLUMNS = ("n", "comm_mode", "puzzles", "oracle_mean_length", "paper_mean_length")

Results = Mapping[Labels, tuple[dict[str, tuple[float, float]], dict[int, dict[str, float]]]]


def _labels(kind: str, verifier: str, mode: str, n: int) -> Labels:
    return (("player", kind), ("verifier", verifier), ("comm_mode", mode), ("n", n))


def _metric_columns() -> tuple[str, ...]:
    cols: list[str] = ["player", "verifier", "comm_mode", "n", "policy"]
    for m in METRIC_COLUMNS:
        cols += [f"{m}_mean", f"{m}_std"]
    return tuple(cols)


def _metric_rows(opts: ReproduceOptions, results: Results, policies: Mapping[Labels, str]) -> list[dict[str, Any]]:
    rows = []
    for labels, _, _ in condition_specs(opts):
        summary, _ = results[labels]
        row: dict[str, Any] = {**dict(labels), "policy": policies[labels]}
        for m in METRIC_COLUMNS:
            row[f"{m}_mean"], row[f"{m}_std"] = summary[m]
        rows.append(row)
    return rows


def _gain_rows(opts: ReproduceOptions, results: Results) -> list[dict[str, Any]]:
    """Each verifier's gain over none, per player and mode: success averaged over n, paired by seed."""
    rows = []
    for kind in opts.players:
        for mode in opts.comm_modes:

            def per_seed(verifier: str, kind: str = kind, mode: str = mode) -> dict[int, dict[str, float]]:
                by_seed: dict[int, list[float]] = {}
                for n in opts.sizes:
                    for seed, metrics in results[_labels(kind, verifier, mode, n)][1].items():
                        by_seed.setdefault(seed, []).append(metrics["success_rate"])
                return {s: {"success": statistics.fmean(v)} for s, v in by_seed.items() if len(v) == len(opts.sizes)}

            without = per_seed("none")
            for verifier in opts.verifiers:
                if verifier == "none":
                    continue
                mean, low, high, used = paired_difference(per_seed(verifier), without, "success")
                # a gain lies within [-success without, 1 - success without]: a t-interval on few seeds may not
                base = statistics.fmean(v["success"] for v in without.values()) if without else math.nan
                if not math.isnan(low) and not math.isnan(base):
                    low, high = max(low, -base), min(high, 1.0 - base)
                by_n = [
                    results[_labels(kind, verifier, mode, n)][0]["success_rate"][0]
                    - results[_labels(kind, "none", mode, n)][0]["success_rate"][0]
                    for n in opts.sizes
                ]
                points = 100 * mean
                rows.append(
                    {
                        "player": kind,
                        "comm_mode": mode,
                        "verifier": verifier,
                        "gain_points": points,
                        "gain_ci_low": 100 * low,
                        "gain_ci_high": 100 * high,
                        "seeds": used,
                        "gain_min_over_n": 100 * min(by_n),
                        "gain_max_over_n": 100 * max(by_n),
                        "success_without": _nanmean([s["success"] for s in without.values()]),
                        "success_with": _nanmean([s["success"] for s in per_seed(verifier).values()]),
                        "paper_gain_low": PAPER_GAIN[0],
                        "paper_gain_high": PAPER_GAIN[1],
                        "within_paper_range": (
                            PAPER_GAIN[0] <= _round1(points) <= PAPER_GAIN[1] if not math.isnan(points) else None
                        ),
                    }
                )
    return rows


def _round1(x: float) -> float:
    """As the tables show it (one decimal), so the reading and the table agree."""
    return float(fmt_number(x, ".1f"))


def _nanmean(values: Sequence[float]) -> float:
    defined = [v for v in values if not math.isnan(v)]
    return statistics.fmean(defined) if defined else math.nan


def _points(x: float) -> str:
    return "—" if x is None or math.isnan(x) else fmt_number(x, "+.1f")


def _pct(x: float) -> str:
    return "—" if x is None or math.isnan(x) else fmt_number(100 * x, ".1f") + "%"


def _success_markdown(opts: ReproduceOptions, rows: Sequence[dict[str, Any]], gains: Sequence[dict[str, Any]]) -> str:
    by = {(r["player"], r["verifier"], r["comm_mode"], r["n"]): r for r in rows}
    parts = []
    for kind in opts.players:
        parts.append(f"### {kind} (`{base_spec(kind, opts)}` in both seats)\n")
        headers = ["n"] + [f"{MODE_NAMES[m]}: {v}" for m in opts.comm_modes for v in opts.verifiers]
        body = []
        for n in opts.sizes:
            cells: list[Any] = [n]
            for m in opts.comm_modes:
                for v in opts.verifiers:
                    r = by[(kind, v, m, n)]
                    cells.append(mean_std(r["success_rate_mean"], r["success_rate_std"]))
            body.append(cells)
        parts.append(markdown_table(headers, body))
    parts.append(_gains_markdown(gains))
    return "\n".join(parts)


def _gains_markdown(gains: Sequence[dict[str, Any]]) -> str:
    headers = [
        "player",
        "comm mode",
        "verifier",
        "success without",
        "success with",
        "gain (points)",
        "95% CI",
        "range over n",
        "paper",
    ]
    body = [
        [
            g["player"],
            MODE_NAMES[g["comm_mode"]],
            g["verifier"],
            _pct(g["success_without"]),
            _pct(g["success_with"]),
            _points(g["gain_points"]),
            f"[{_points(g['gain_ci_low'])}, {_points(g['gain_ci_high'])}]",
            f"{_points(g['gain_min_over_n'])} … {_points(g['gain_max_over_n'])}",
            f"+{PAPER_GAIN[0]:g} to +{PAPER_GAIN[1]:g}" if g["verifier"] == "reasoning" else "—",
        ]
        for g in gains
    ]
    return "### Verifier gains in success rate (points over no verifier, mean over n)\n\n" + markdown_table(
        headers, body
    )


def _plans_markdown(plans: Sequence[dict[str, Any]]) -> str:
    headers = ["n", "comm mode", "puzzles", "oracle mean length", "paper"]
    body = [
        [
            p["n"],
            MODE_NAMES[p["comm_mode"]],
            p["puzzles"],
            fmt_number(p["oracle_mean_length"], ".2f"),
            "—" if p["paper_mean_length"] is None else f"{p['paper_mean_length']:.1f}",
        ]
        for p in plans
    ]
    return markdown_table(headers, body)


def _figure(path: Path, opts: ReproduceOptions, rows: Sequence[dict[str, Any]]) -> None:
    by = {(r["player"], r["verifier"], r["comm_mode"], r["n"]): r for r in rows}
    panels = []
    for kind in opts.players:
        for mode in opts.comm_modes:
            series = []
            for v in opts.verifiers:
                ys = [by[(kind, v, mode, n)]["success_rate_mean"] for n in opts.sizes]
                errs = [by[(kind, v, mode, n)]["success_rate_std"] for n in opts.sizes]
                series.append(
                    {
                        "label": f"verifier: {v}",
                        "x": list(opts.sizes),
                        "y": ys,
                        "yerr": [0.0 if math.isnan(e) else e for e in errs],
                    }
                )
            panels.append({"ylabel": f"{kind}, {MODE_NAMES[mode]}: success", "series": series})
    title = f"Success against n ({opts.seeds} seeds x {opts.episodes} episodes; both seats the same player)"
    plot_lines(path, panels, xlabel="objects n", title=title)


# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------
def _command(opts: ReproduceOptions) -> str:
    d = ReproduceOptions()
    parts = [
        "eq-env reproduce --env einstein-puzzle --out DIR",
        f"--episodes {opts.episodes}",
        f"--seeds {opts.seeds}",
        f"--n {','.join(map(str, opts.sizes))}",
    ]
    if opts.comm_modes != d.comm_modes:
        parts.append(f"--comm-mode {','.join(opts.comm_modes)}")
    parts.append(f"--jobs {opts.jobs}")
    if opts.players != d.players:
        parts.append(f"--player {','.join(opts.players)}")
    if opts.verifiers != d.verifiers:
        parts.append(f"--verifiers {','.join(opts.verifiers)}")
    for name, flag in (
        ("first_seed", "--first-seed"),
        ("epsilon", "--epsilon"),
        ("k", "--k"),
        ("puzzles", "--puzzles"),
        ("plan_puzzles", "--plan-puzzles"),
    ):
        if getattr(opts, name) != getattr(d, name):
            parts.append(f"{flag} {getattr(opts, name)}")
    return " ".join(parts)


def _mean_of(rows: Sequence[dict[str, Any]], column: str, **where: Any) -> float:
    return _nanmean([r[column] for r in rows if all(r[k] == v for k, v in where.items())])


def _gain(gains: Sequence[dict[str, Any]], kind: str, verifier: str, mode: str) -> dict[str, Any] | None:
    return next((g for g in gains if (g["player"], g["verifier"], g["comm_mode"]) == (kind, verifier, mode)), None)


def _gain_list(gains: Sequence[dict[str, Any]], kind: str, verifier: str, opts: ReproduceOptions) -> str:
    parts = []
    for mode in opts.comm_modes:
        g = _gain(gains, kind, verifier, mode)
        if g is not None:
            parts.append(f"{_points(g['gain_points'])} ({MODE_NAMES[mode]})")
    return ", ".join(parts)


def _reading(opts: ReproduceOptions, metrics: Sequence[dict[str, Any]], gains: Sequence[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    has = set(opts.verifiers)
    low, high = PAPER_GAIN
    for kind in opts.players:
        base = _mean_of(metrics, "success_rate_mean", player=kind, verifier="none")
        text = f"**{kind}.** Without a verifier it succeeds in {_pct(base)} of games on average over modes and n."
        if "reasoning" in has:
            reasoning = [g for g in gains if g["player"] == kind and g["verifier"] == "reasoning"]
            inside = sum(bool(g["within_paper_range"]) for g in reasoning)
            text += (
                f" The reasoning verifier changes success by {_gain_list(gains, kind, 'reasoning', opts)} "
                f"points; {inside} of {len(reasoning)} modes fall within the paper's +{low:g} to +{high:g}."
            )
        for v in ("affordance", "communication"):
            if v in has:
                text += f" The {v} verifier: {_gain_list(gains, kind, v, opts)}."
        if kind == "planner":
            rule = _mean_of(metrics, "rule_inconsistent_mean", player=kind, verifier="none")
            text += (
                f" The planner plays only rational actions ({fmt_number(rule, '.2f')} rule-inconsistent "
                "actions per game) and is deterministic, so the k candidates a verifier draws are one and "
                "the same action: a verifier has nothing to correct and no alternative to offer."
            )
        elif kind == "random":
            shown = [v for v in ("affordance", "communication") if v in has]
            rates = {v: _mean_of(metrics, "verifier_interventions_mean", player=kind, verifier=v) for v in shown}
            if shown:
                quiet = all(not math.isnan(r) and r < 0.1 for r in rates.values())
                text += (
                    " Random play draws only from the legal-action mask, which already enforces what the "
                    "affordance and communication verifiers check (reachable bins, known unshared "
                    f"constraints), so they {'almost never' if quiet else 'only sometimes'} reject a candidate ("
                    + ", ".join(f"{fmt_number(r, '.2f')} interventions per game for {v}" for v, r in rates.items())
                    + "); the paper's models emit malformed and illegal actions, which these verifiers catch."
                )
            text += (
                " The reasoning verifier turns random legal actions into rational ones." if "reasoning" in has else ""
            )
            if "reasoning" in has:
                small, large = min(opts.sizes), max(opts.sizes)
                s_small = _mean_of(metrics, "success_rate_mean", player=kind, verifier="reasoning", n=small)
                s_large = _mean_of(metrics, "success_rate_mean", player=kind, verifier="reasoning", n=large)
                text += (
                    f" With it, success goes from {_pct(s_small)} at n = {small} to {_pct(s_large)} at "
                    f"n = {large} (mean over modes): four random candidates find a rational action less "
                    "often when more actions are legal."
                )
        elif kind == "noisy":
            steps_noisy = _mean_of(metrics, "steps_mean", player=kind, verifier="none")
            steps_plan = _mean_of(metrics, "steps_mean", player="planner", verifier="none")
            lost = _mean_of(metrics, "success_rate_mean", player="planner", verifier="none") - base
            if "planner" in opts.players and not math.isnan(lost):
                text += (
                    f" The noise costs {fmt_number(100 * lost, '.1f')} points of success against the planner "
                    f"alone, and turns: {fmt_number(steps_noisy, '.1f')} steps per won game against the "
                    f"planner's {fmt_number(steps_plan, '.1f')}. A wrong placement is rejected and leaves the "
                    "board as it was, and the planner picks up where the random action left it, so a random "
                    "action mostly costs a turn; games are lost when those turns run into the step limit."
                )
            else:
                text += f" It takes {fmt_number(steps_noisy, '.1f')} steps per won game."
            if "reasoning" in has:
                steps_v = _mean_of(metrics, "steps_mean", player=kind, verifier="reasoning")
                rule_0 = _mean_of(metrics, "rule_inconsistent_mean", player=kind, verifier="none")
                rule_v = _mean_of(metrics, "rule_inconsistent_mean", player=kind, verifier="reasoning")
                text += (
                    f" The reasoning verifier screens the noise out: {fmt_number(steps_v, '.1f')} steps and "
                    f"{fmt_number(rule_v, '.2f')} rule-inconsistent actions per game (without: "
                    f"{fmt_number(rule_0, '.2f')}). Its success gain is bounded by what the noise cost; "
                    "the paper's fine-tuned models failed far more often without a verifier, leaving "
                    f"+{low:g} to +{high:g} points to win."
                )
        elif kind == "llm":
            text += " (An LLM player: its numbers are the model's, compared with the paper's models directly.)"
        lines += [text, ""]
    if "none" in opts.comm_modes and len(opts.comm_modes) > 1:
        parts = []
        for kind in opts.players:
            by_mode = {
                m: _mean_of(metrics, "success_rate_mean", player=kind, verifier="none", comm_mode=m)
                for m in opts.comm_modes
            }
            parts.append(f"{kind}: " + ", ".join(f"{MODE_NAMES[m]} {_pct(s)}" for m, s in by_mode.items()))
        rejected = _mean_of(
            metrics, "rejected_placements_mean", player=opts.players[0], verifier="none", comm_mode="none"
        )
        rejected_ps = (
            _mean_of(
                metrics,
                "rejected_placements_mean",
                player=opts.players[0],
                verifier="none",
                comm_mode="provide_and_seek",
            )
            if "provide_and_seek" in opts.comm_modes
            else math.nan
        )
        lines += [
            "**Communication modes** (success without a verifier, mean over n): " + "; ".join(parts) + ". "
            "As in the paper, playing without communication does not doom a team: it guesses, a wrong guess is "
            "rejected and rules a bin out, and the team tries again (the paper: no-communication agents above "
            "81%, humans 91.1% without against 92.2% with provide & seek). Guessing costs rejected placements: "
            f"{fmt_number(rejected, '.2f')} per game for {opts.players[0]} in `none`"
            + (f" against {fmt_number(rejected_ps, '.2f')} with provide & seek" if not math.isnan(rejected_ps) else "")
            + " (the paper's humans: 3.64 against 1.92).",
            "",
        ]
    return lines


def _plans_reading(plans: Sequence[dict[str, Any]]) -> list[str]:
    at4 = [p for p in plans if p["n"] == 4 and p["paper_mean_length"] is not None]
    if not at4:
        return []
    diffs = [p["oracle_mean_length"] - p["paper_mean_length"] for p in at4]
    order_ours = [p["comm_mode"] for p in sorted(at4, key=lambda p: p["oracle_mean_length"])]
    order_paper = [p["comm_mode"] for p in sorted(at4, key=lambda p: p["paper_mean_length"])]
    same = "the same as" if order_ours == order_paper else "not the same as"
    return [
        f"**Plan lengths.** At n = 4 the oracle's mean optimal plans on the suite differ from the paper's by "
        f"{fmt_number(min(diffs), '+.2f')} to {fmt_number(max(diffs), '+.2f')} turns; the ordering of the modes is "
        f"{same} the paper's. The paper's figures come from its own planner and puzzles, which are not public; "
        "the sample of puzzles alone moves these means by a few tenths of a turn.",
        "",
    ]


def _summary(
    opts: ReproduceOptions,
    metrics: Sequence[dict[str, Any]],
    gains: Sequence[dict[str, Any]],
    success_md: str,
    plans: Sequence[dict[str, Any]],
    taxonomy: Sequence[dict[str, Any]],
    files: Sequence[str],
    elapsed: float,
) -> str:
    seeds = opts.seed_list
    puzzles = (
        "the frozen suite's puzzle i mod 300 (every seed the same puzzles)"
        if opts.puzzles == "suite"
        else "generated puzzles, new ones per episode and seed"
    )
    lines = [
        f"# Reproducing the collaborative Einstein puzzle (Peng et al., arXiv 2510.25595): {', '.join(opts.players)}",
        "",
        f"Command: `{_command(opts)}`. Seeds {seeds[0]}..{seeds[-1]}, {opts.episodes} episodes per condition "
        f"and seed, {puzzles}; {elapsed:.1f} s. Both seats play the same player. A verifier screens k = {opts.k} "
        "candidates and plays the first it accepts (else the least bad). Standard deviations are over seeds "
        "(ddof = 1); gains are paired by seed (every condition of a seed sees the same puzzles).",
        "",
        "The paper measured fine-tuned Llama 3.1 8B and Qwen 2.5 7B. "
        + (f"Here the LLM player is `{opts.llm}`. " if "llm" in opts.players else "")
        + (
            "The scripted players stand in for models that are not available offline: the planner (strong), "
            f"random legal play (weak) and the noisy planner (the planner with {fmt_number(100 * opts.epsilon, 'g')}% "
            "random legal actions). "
            if set(opts.players) - {"llm"}
            else ""
        )
        + "The paper's numbers are its models'; what can agree is the direction and rough size of the effects.",
        "",
        "## Success",
        "",
        success_md,
        "![success against n](figure_success.png)",
        "",
        "## Reading",
        "",
        *_reading(opts, metrics, gains),
        *_plans_reading(plans),
    ]
    if plans:
        lines += ["## Oracle plan lengths (suite)", "", _plans_markdown(plans)]
    if taxonomy:
        lines += [
            "## Error taxonomy: failed games by category (first seed; `taxonomy.csv`)",
            "",
            _taxonomy_markdown(taxonomy),
            "",
        ]
    else:
        lines += ["No error taxonomy: `eq_env.einstein_puzzle.taxonomy.counts` was not available.", ""]
    lines += [
        "Files: " + ", ".join(f"`{f}`" for f in files) + ". `table_metrics.csv` has steps, rejected placements, "
        "rule-inconsistent actions, partial success, illegal actions and verifier interventions per condition. "
        "Running the command again resumes from `results.jsonl`; `eq-env rerun DIR/results.jsonl KEY` runs any "
        "one record again and checks it.",
    ]
    return "\n".join(lines) + "\n"


def _taxonomy_markdown(rows: Sequence[dict[str, Any]]) -> str:
    keys = sorted({k for r in rows for k in r} - {"player", "verifier", "comm_mode", "n"})
    totals: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        t = totals.setdefault((r["player"], r["verifier"]), dict.fromkeys(keys, 0.0))
        for k in keys:
            value = r.get(k)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                t[k] += value
    body = [[p, v, *(fmt_number(t[k], "g") for k in keys)] for (p, v), t in totals.items()]
    return "Summed over comm modes and n:\n\n" + markdown_table(["player", "verifier", *keys], body)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------
def _players(text: str) -> list[str]:
    from eq_env.core.cli import list_of

    players = list_of(str, "player kinds", distinct=True)(text)
    bad = [p for p in players if p not in PLAYER_KINDS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown player kind(s) {bad}; choose from {', '.join(PLAYER_KINDS)}")
    return players


def _verifiers(text: str) -> list[str]:
    from eq_env.core.cli import list_of

    values = list_of(str, "verifier settings", distinct=True)(text)
    bad = [v for v in values if v not in VERIFIER_SETTINGS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown verifier(s) {bad}; choose from {', '.join(VERIFIER_SETTINGS)}")
    if "none" not in values:
        raise argparse.ArgumentTypeError("the settings must include none: gains are measured over it")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``eq-env reproduce --env einstein-puzzle``."""
    from eq_env.core.cli import (
        add_backend_flags,
        add_flag_groups,
        episodes_arg,
        int_in,
        jobs_arg,
        number_type,
        out_dir,
        seed_arg,
    )
    from eq_env.core.cli import seeds_arg as seeds_type
    from eq_env.core.experiments import ENGINES
    from eq_env.core.spec import registered_envs
    from eq_env.studies.einstein_puzzle.flags import comm_modes as _modes
    from eq_env.studies.einstein_puzzle.flags import object_counts as _sizes

    parser.description = (
        (parser.description or "") + f" The default run (3 players x 4 verifier settings x 4 comm modes x n = 4-8, "
        f"2 seeds x 100 episodes) took {DEFAULT_SECONDS} s with --jobs 2 on 2 cores (about half of it the error "
        "taxonomy, when eq_env.einstein_puzzle.taxonomy is there)."
    )
    names = [s.name for s in registered_envs()] + [s.id for s in registered_envs()]
    parser.add_argument("--env", choices=names, metavar="NAME", help="the game (einstein-puzzle here)")
    parser.add_argument("--out", type=out_dir, required=True, help="output directory (re-running resumes from it)")
    parser.add_argument(
        "--episodes", type=episodes_arg, default=100, help="episodes per condition and seed (default 100)"
    )
    parser.add_argument("--seeds", type=seeds_type, default=2, help="seeds per condition (default 2)")
    parser.add_argument("--first-seed", type=seed_arg, default=0, help="first seed (default 0)")
    parser.add_argument(
        "--n",
        type=_sizes,
        default=[4, 5, 6, 7, 8],
        dest="sizes",
        help="object counts: 4, 4,6 or 4-8 (default 4-8; the paper trains on 4-6, tests 7-8)",
    )
    parser.add_argument(
        "--comm-mode",
        type=_modes,
        default=list(COMM_MODES),
        dest="comm_modes",
        help="comm modes, comma-separated, or all (default)",
    )
    parser.add_argument(
        "--player",
        type=_players,
        default=list(DEFAULT_PLAYERS),
        dest="players",
        help="player kinds, comma-separated, both seats the same: planner (decentralised), random, "
        "noisy (the planner with --epsilon random legal actions), llm (with the LLM flags) "
        "(default planner,random,noisy)",
    )
    parser.add_argument(
        "--verifiers",
        type=_verifiers,
        default=list(VERIFIER_SETTINGS),
        help="verifier settings, comma-separated, including none (default: none,affordance,communication,reasoning)",
    )
    parser.add_argument(
        "--epsilon",
        type=number_type(float, "a probability in [0, 1]", lambda v: 0 <= v <= 1),
        default=0.2,
        help="the noisy planner's random-action probability (default 0.2)",
    )
    parser.add_argument("--k", type=int_in(1, 64), default=4, help="candidates a verifier screens (default 4)")
    parser.add_argument(
        "--puzzles",
        choices=("generated", "suite"),
        default="generated",
        help="generated (new puzzles per episode and seed; default) or suite (the frozen suite, n <= 8)",
    )
    parser.add_argument(
        "--plan-puzzles",
        type=int_in(0, 300),
        default=300,
        help="suite puzzles per n for the oracle's plan lengths (default 300; 0: skip)",
    )
    parser.add_argument("--engine", choices=ENGINES, default="auto", help="aec or batch (auto: whatever fits)")
    parser.add_argument(
        "--jobs",
        type=jobs_arg,
        help="worker processes (default 2); with --backend ray, the CPUs of the Ray instance started here",
    )
    add_backend_flags(parser)
    add_flag_groups(parser, "OUT/llm_cache", ["player"])


def options_from_args(args: argparse.Namespace) -> ReproduceOptions:
    """The options the parsed flags ask for (the LLM spec filled from the LLM flags)."""
    from eq_env.core.cli import fill_spec

    return ReproduceOptions(
        episodes=args.episodes,
        seeds=args.seeds,
        first_seed=args.first_seed,
        sizes=tuple(args.sizes),
        comm_modes=tuple(args.comm_modes),
        players=tuple(args.players),
        verifiers=tuple(args.verifiers),
        epsilon=args.epsilon,
        k=args.k,
        puzzles=args.puzzles,
        llm=fill_spec("llm", args) if "llm" in args.players else "llm",
        jobs=args.jobs or 2,
        concurrency=getattr(args, "concurrency", 8),
        plan_puzzles=args.plan_puzzles,
        engine=args.engine,
    )


def _dry_run(opts: ReproduceOptions) -> int:
    from eq_env.core.cli import dry_run
    from eq_env.einstein_puzzle.spec import SPEC

    specs = condition_specs(opts)
    print(
        f"{len(specs)} conditions x {opts.seeds} seeds = {len(specs) * opts.seeds} runs of {opts.episodes} "
        "episodes; the policies (both seats):"
    )
    for spec in dict.fromkeys(s for _, _, s in specs):
        print(f"  {spec}")
    if "llm" not in opts.players:
        return 0
    llm = [s for _, _, s in specs if parse_policy_spec(s)[0] == "llm"]
    return dry_run(
        SPEC, EinsteinPuzzleConfig(n=opts.sizes[0], comm_mode=opts.comm_modes[0]), {"player_0": llm, "player_1": llm}
    )


def run(args: argparse.Namespace) -> int:
    """``eq-env reproduce --env einstein-puzzle``: run, print the tables, say what was written."""
    from eq_env.core.cli import configure_flag_groups, executor_of, failures

    if args.puzzles == "suite" and max(args.sizes) > 8:
        print(
            "eq-env reproduce: error: argument --n: the suite has puzzles of 4 to 8 objects; use --puzzles "
            "generated for more",
            file=sys.stderr,
        )
        return 2
    opts = options_from_args(args)
    executor = executor_of(args, default_jobs=opts.jobs)
    if getattr(args, "dry_run", False):
        return _dry_run(opts)
    configure_flag_groups(args, args.out / "llm_cache")
    result = reproduce(args.out, opts, progress=None, executor=executor)
    print((args.out / "table_success.md").read_text())
    print(f"wrote {', '.join(result['files'])} to {args.out} in {result['seconds']:.1f} s")
    return failures(args.command, result["failed"], getattr(args, "cache", None))


COMMAND = Command(
    "reproduce",
    "the paper's experiments on the Einstein puzzle (with --env einstein-puzzle)",
    add_arguments,
    run,
    "Success, steps, rejected placements, rule-inconsistent actions and partial success per comm mode and n, "
    "for scripted (or LLM) players with and without each verifier; the oracle's plan lengths beside the "
    "paper's. Re-running resumes.",
    "finished runs are saved in --out; run the same command to resume",
)
