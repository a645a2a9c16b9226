"""Benchmarks of a model: a named, versioned battery of tasks, each one game's conditions with the model in
its LLM roles (``eq-env bench``).

A :class:`BenchTask` is what one game contributes: the conditions it plays for a model (built from the
model's :class:`BenchModel`), the seeds, how its records read as a table (:class:`TaskReport`, with the
paper's reference numbers beside the model's and one *main metric* for leaderboards), and what one episode
of a condition is expected to ask of the model (:class:`Estimate`, for ``--dry-run`` and ``--max-usd``).
A :class:`Battery` is an ordered tuple of tasks under a version name (``bench-v1``) that published scores
cite; a task's conditions, seeds and sizes are part of that version — change them and the battery's name
changes too.

This module knows no game: the games' ``bench.py`` modules define their tasks and :mod:`eq_env.studies.bench`
assembles the batteries. Runs go through :func:`eq_env.core.experiments.run_all`, so they are recorded as
they finish, resumed, and replayed from the answer cache with no request.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eq_env.core.experiments import Condition
from eq_env.core.policy import format_policy_spec
from eq_env.core.report import from_json_number, printable
from eq_env.core.stats import mean_interval

__all__ = [
    "FAILED_LIMIT",
    "FALLBACK_LIMIT",
    "RATE",
    "Battery",
    "BenchModel",
    "BenchTask",
    "Cell",
    "Estimate",
    "Metric",
    "TaskReport",
    "error_bars",
    "metric_cells",
    "score_caveats",
    "seed_values",
]


@dataclass(frozen=True)
class Metric:
    """A column of a task's table.

    ``key`` names the value in a run record's ``metrics`` (or one the task computes itself);
    ``higher_is_better`` says which way is good (None: neither — words, steps), which the leaderboards and
    the card's arrows use. ``bounds`` is the range of the metric's values (``RATE``, (0, 1), for a rate): the
    card cuts a Student-t interval that runs past it (a rate of 0.9 over 3 seeds can have a bound above 1).
    """

    key: str
    title: str
    higher_is_better: bool | None = True
    digits: int = 3
    bounds: tuple[float, float] | None = None


RATE = (0.0, 1.0)  # the bounds of a rate or a share
COUNT = (0.0, math.inf)  # the bounds of a count, a length or a number of tokens


@dataclass(frozen=True)
class Cell:
    """A metric over seeds: the mean of the per-seed values and its 95% Student-t interval (NaN bounds with
    one seed; NaN mean with none)."""

    mean: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Cell:
        """The cell of per-seed values (NaN values, where a seed has no value, left out)."""
        return cls(*mean_interval(values))

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}

    def within(self, bounds: tuple[float, float] | None) -> Cell:
        """The cell with its interval cut to ``bounds`` (NaN bounds stay NaN)."""
        if bounds is None:
            return self
        lo, hi = bounds
        return Cell(
            self.mean,
            self.low if math.isnan(self.low) else min(max(self.low, lo), hi),
            self.high if math.isnan(self.high) else min(max(self.high, lo), hi),
            self.n,
        )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Cell:
        mean, low, high = (from_json_number(d[k]) for k in ("mean", "low", "high"))
        return cls(mean, low, high, int(d["n"]))


@dataclass(frozen=True)
class Estimate:
    """What one episode of a condition is expected to ask of the model: requests, and tokens per request.

    Estimates, not bounds: a task derives them from its prompts (rendered on a real observation, four
    characters a token) and the length of a typical reply, and says how in its docstring.
    """

    requests: float
    prompt_tokens: float
    completion_tokens: float


@dataclass(frozen=True)
class TaskReport:
    """A task's table and headline, made from its records.

    Attributes:
        metrics: the columns, in order.
        rows: (row label, {metric key: Cell}) — one row per condition group the task reports
            (``artifacts, q=0.3``...); a metric a row does not have is simply absent.
        main: the task's main metric over seeds (the leaderboard's number for this task).
        reference: (row label, {metric key: the paper's number as text, e.g. "0.42" or "0.30–0.45"}) —
            beside the model's; rows without a published number are absent.
        figure: keyword arguments of :func:`eq_env.core.report.plot_lines` except ``path``
            (``{"panels": [...], "xlabel": ..., "xticklabels": ...}``), or None.
        notes: short sentences the card prints under the table (what a row means, where the reference
            comes from, what differs from the paper).
    """

    metrics: tuple[Metric, ...]
    rows: tuple[tuple[str, Mapping[str, Cell]], ...]
    main: Cell
    reference: tuple[tuple[str, Mapping[str, str]], ...] = ()
    figure: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class BenchModel:
    """The model under test, as every ``llm`` policy and LLM answerer takes it.

    ``params`` holds what the LLM flags set besides the model and endpoint (``temperature``, ``seed``,
    ``max_tokens``...); :meth:`spec` writes a policy spec from them.
    """

    model: str
    base_url: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def spec(self, name: str = "llm", **extra: Any) -> str:
        """A policy spec of ``name`` with the model, the endpoint (when given), ``params`` and ``extra``."""
        kwargs: dict[str, Any] = {"model": self.model}
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        kwargs.update(self.params)
        kwargs.update(extra)
        return format_policy_spec(name, kwargs)


@dataclass(frozen=True)
class BenchTask:
    """One task of a battery: one game, the model in some of its roles.

    Attributes:
        name: ``GAME/what`` (``exchange-audit/proposer``); unique in a battery, stable across versions.
        title: a heading for the card.
        env: the game's registered name.
        main: the main metric (also one of the report's ``metrics``).
        prompts: the prompt templates it uses, with their versions (``"exchange-audit proposer v1"``).
        conditions: ``conditions(model, quick)`` — every condition the task plays (labels say which row
            each belongs to); ``quick`` is the ``--quick`` battery.
        seeds: ``seeds(quick)`` — every condition is played on each (at least 2, for intervals).
        report: ``report(conditions, records)`` — the table; ``records[i * len(seeds) + j]`` is condition
            ``i`` on seed ``j`` (:func:`~eq_env.core.experiments.run_all`'s order).
        estimate: ``estimate(condition)`` — per episode, for ``--dry-run`` and ``--max-usd``.
        reference_source: where the reference numbers come from (a paper and its table), for the card.
    """

    name: str
    title: str
    env: str
    main: Metric
    prompts: tuple[str, ...]
    conditions: Callable[[BenchModel, bool], Sequence[Condition]]
    seeds: Callable[[bool], Sequence[int]]
    report: Callable[[Sequence[Condition], Sequence[Mapping[str, Any]]], TaskReport]
    estimate: Callable[[Condition], Estimate]
    reference_source: str = ""


@dataclass(frozen=True)
class Battery:
    """A named, versioned, ordered set of tasks at one size (``bench-v1``; ``bench-v1-quick``, the same tasks
    at their ``quick`` sizes)."""

    name: str
    tasks: tuple[BenchTask, ...]
    quick: bool = False
    description: str = ""
    whole: tuple[str, ...] = ()  # a selection (:meth:`select`): every task name of the battery it is part of

    def __post_init__(self) -> None:
        names = [t.name for t in self.tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"battery {self.name}: task names repeat: {names}")

    def select(self, wanted: Sequence[str]) -> Battery:
        """The part of this battery named by ``wanted``: task names (``einstein-puzzle/with-planner``) or games
        (``einstein-puzzle``: its every task), in the battery's order; the same runs, seeds and sizes, so a
        later run of the whole battery in the same directory plays only the rest. A ValueError (one line)
        for a name that is neither."""
        names = [t.name for t in self.tasks]
        games = list(dict.fromkeys(t.env for t in self.tasks))
        for w in wanted:
            if w not in names and w not in games:
                raise ValueError(
                    f"--tasks {w!r}: {self.name} has no such task or game; its tasks: {', '.join(names)} "
                    f"(or a game: {', '.join(games)})"
                )
        chosen = tuple(t for t in self.tasks if t.name in wanted or t.env in wanted)
        if len(chosen) == len(self.tasks):
            return self
        return Battery(self.name, chosen, self.quick, self.description, whole=tuple(names))

    def task(self, name: str) -> BenchTask:
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(f"battery {self.name} has no task {name!r}; it has {[t.name for t in self.tasks]}")


def error_bars(cells: Sequence[Cell], bounds: tuple[float, float] | None = None) -> list[list[float]]:
    """``plot_lines``' ``yerr`` for these cells: [below, above] the mean, the interval cut to ``bounds`` (so a
    figure agrees with the card's table); 0 where a cell has no interval."""
    cut = [c.within(bounds) for c in cells]
    return [
        [0.0 if math.isnan(c.low) else c.mean - c.low for c in cut],
        [0.0 if math.isnan(c.high) else c.high - c.mean for c in cut],
    ]


def seed_values(
    records: Sequence[Mapping[str, Any]], key: str, *, where: Callable[[Mapping[str, Any]], bool] | None = None
) -> list[float]:
    """Per seed, the mean of metric ``key`` over the records (runs) of that seed that ``where`` keeps.

    For a row pooling several conditions (q values, say): each seed's value is the mean over the row's
    conditions where that metric is defined (NaN when none is). A run whose every episode failed has no
    metrics: it counts as undefined, never as a zero.
    """
    by_seed: dict[int, list[float]] = {}
    for r in records:
        if where is not None and not where(r):
            continue
        v = from_json_number(r.get("metrics", {}).get(key, math.nan))
        by_seed.setdefault(int(r["seed"]), [])
        if not math.isnan(v):
            by_seed[int(r["seed"])].append(v)
    return [math.fsum(vs) / len(vs) if vs else math.nan for _, vs in sorted(by_seed.items())]


def metric_cells(
    records: Sequence[Mapping[str, Any]],
    metrics: Sequence[Metric],
    *,
    where: Callable[[Mapping[str, Any]], bool] | None = None,
) -> dict[str, Cell]:
    """{metric key: Cell over seeds} of the records ``where`` keeps (see :func:`seed_values`)."""
    return {m.key: Cell.of(seed_values(records, m.key, where=where)) for m in metrics}


# ---------------------------------------------------------------------------
# Running a battery
# ---------------------------------------------------------------------------
CARD_VERSION = 1  # card.json's layout


@dataclass(frozen=True)
class Plan:
    """What a battery still has to play for a model: per task, runs left and the estimated cost."""

    rows: tuple[dict[str, Any], ...]  # per task: task, runs, runs_left, episodes_left, requests, tokens, usd

    def total(self, key: str) -> float:
        return math.fsum(float(r[key]) for r in self.rows)


@dataclass(frozen=True)
class BenchOutcome:
    """How :func:`run_battery` ended: ``complete`` (every run recorded, the card made), ``budget`` (stopped
    before a chunk whose estimated cost would exceed ``max_usd``) or ``failing`` (stopped after a chunk in
    which every episode failed: the endpoint is down or refuses, and the rest would only fail too). The
    runs played are kept in every case."""

    status: str
    spent_usd: float
    runs_played: int
    runs_left: int
    next_usd: float = 0.0
    card: dict[str, Any] | None = None
    failed: tuple[tuple[str, int, int], ...] = ()
    error: str = ""  # status ``failing``: the first error of the chunk whose every episode failed


def _conditions(battery: Battery, model: BenchModel) -> dict[str, tuple[list[Condition], list[int]]]:
    out = {}
    for task in battery.tasks:
        conds, seeds = list(task.conditions(model, battery.quick)), [int(s) for s in task.seeds(battery.quick)]
        if not conds or len(seeds) < 2:
            raise ValueError(
                f"task {task.name}: expected conditions and at least 2 seeds, got "
                f"{len(conds)} conditions and {len(seeds)} seeds"
            )
        out[task.name] = (conds, seeds)
    return out


def _cost(task: BenchTask, runs: Sequence[tuple[Condition, int]], prices: tuple[float, float]) -> dict[str, float]:
    """The estimated cost of ``runs``: (condition, episodes left to play) pairs."""
    requests = prompt = completion = 0.0
    for c, episodes in runs:
        e = task.estimate(c)
        n = e.requests * episodes
        requests += n
        prompt += n * e.prompt_tokens
        completion += n * e.completion_tokens
    return {
        "requests": requests,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "usd": (prompt * prices[0] + completion * prices[1]) / 1e6,
    }


def _episodes_left(out: Path, condition: Condition, seed: int) -> int:
    """The episodes of a run still to play: all of them, less those an earlier command played to the end
    (saved in ``out/episodes``: a run killed mid-way, or one whose failed episodes alone are played again)."""
    from eq_env.core.experiments import EpisodeStore
    from eq_env.core.runner import FailedEpisode

    path = Path(out) / "episodes" / f"{condition.key}-{seed}.jsonl"
    if not path.exists():
        return condition.episodes
    played = EpisodeStore(path, condition.game).load().values()
    return condition.episodes - sum(not isinstance(e, FailedEpisode) for e in played)


def _check_record(record: Mapping[str, Any]) -> None:
    """A run record's fields that the tasks' reports read (a hand-edited or foreign line fails here, in one
    line naming it, not in a report): a run record's, and its labels."""
    from eq_env.core.experiments import check_run_record

    check_run_record({"labels": None, **record})  # (labels, which a run record may lack, are read here)


def _finished(store: Any) -> set[str]:
    latest = {r["key"]: r for r in store.records(check=_check_record)}  # (the last record of a key counts)
    return {k for k, r in latest.items() if not r.get("failed")}


def plan(battery: Battery, model: BenchModel, out: Path, prices: tuple[float, float] = (0.0, 0.0)) -> Plan:
    """``--dry-run``: per task, the runs left (those not recorded in ``out``, or recorded with failed episodes),
    their episodes left (less those saved played to the end) and what these are estimated to ask: requests,
    prompt and completion tokens, dollars at ``prices`` (per million prompt and completion tokens). Answers
    already in the cache would cost nothing: the estimate counts them."""
    from eq_env.core.experiments import ResultsStore, run_key

    done = _finished(ResultsStore(Path(out) / "results.jsonl"))
    planned = _conditions(battery, model)
    rows = []
    for task in battery.tasks:
        conds, seeds = planned[task.name]
        left = [(c, _episodes_left(out, c, s)) for c in conds for s in seeds if run_key(c, s) not in done]
        rows.append(
            {
                "task": task.name,
                "runs": len(conds) * len(seeds),
                "runs_left": len(left),
                "episodes_left": sum(n for _, n in left),
                **_cost(task, left, prices),
            }
        )
    return Plan(tuple(rows))


def _billed(records: Sequence[Mapping[str, Any]], prices: tuple[float, float]) -> float:
    """Dollars the requests behind ``records`` were billed (cached answers cost nothing)."""
    prompt = completion = 0
    for r in records:
        for part in (r.get("llm") or {}).values():
            if isinstance(part, Mapping):
                t = part.get("transport", {})
                prompt += t.get("billed_prompt_tokens", 0)
                completion += t.get("billed_completion_tokens", 0)
    return (prompt * prices[0] + completion * prices[1]) / 1e6


def _billed_before(out: Path, todo: Sequence[Condition], seed: int, prices: tuple[float, float]) -> float:
    """Dollars an earlier command was billed for these runs: the episodes it played (a killed run's, or the
    failed ones of a run played again) are in ``out/episodes``, and a run's record bills every attempt."""
    from eq_env.core.experiments import EpisodeStore
    from eq_env.core.runner import FailedEpisode, llm_summary

    total = 0.0
    for c in {c.key: c for c in todo}.values():
        path = Path(out) / "episodes" / f"{c.key}-{seed}.jsonl"
        if path.exists():
            history = EpisodeStore(path, c.game).history()
            done = [e for e in history if not isinstance(e, FailedEpisode)]
            failed = [e for e in history if isinstance(e, FailedEpisode)]
            total += _billed([{"llm": llm_summary(c.game, c.config, done, failed)}], prices)
    return total


def run_battery(
    battery: Battery,
    model: BenchModel,
    out: Path,
    *,
    prices: tuple[float, float] = (0.0, 0.0),
    max_usd: float | None = None,
    concurrency: int = 8,
    progress: bool | None = None,
    command: str = "",
) -> BenchOutcome:
    """Play every run of ``battery`` for ``model`` into ``out`` and write its card; resumable.

    Runs are played task by task, a seed at a time (a *chunk*: every condition of the task on that seed, so
    the conditions that share answers — the two regimes of a state — are played together), all in one
    :func:`~eq_env.core.policy.new_run` scope. Each run is recorded in ``out/results.jsonl`` as it finishes;
    run again, only what is missing is played. With ``max_usd``, a chunk is started only if the dollars
    billed so far in this call plus the chunk's estimate stay within it; otherwise the call stops there
    (status ``budget``), and running it again — with a larger budget — goes on from there. The estimate is
    the task's (:class:`Estimate`), scaled up by how far the bill of the chunks played so far exceeded their
    estimates: the budget is checked between chunks, so only a chunk whose cost its estimate understates
    — the first, before there is a bill to calibrate by — can take the bill past ``max_usd``.
    """
    from tqdm.auto import tqdm

    from eq_env.core.experiments import ResultsStore, failed_runs, run_all, run_key
    from eq_env.core.policy import new_run

    out = Path(out)
    store = ResultsStore(out / "results.jsonl")
    planned = _conditions(battery, model)
    done = _finished(store)
    chunks = []
    for task in battery.tasks:
        conds, seeds = planned[task.name]
        for s in seeds:
            todo = [c for c in conds if run_key(c, s) not in done]
            if todo:
                chunks.append((task, todo, s))
    total = sum(len(c) * len(planned[t.name][1]) for t, (c, _) in ((t, planned[t.name]) for t in battery.tasks))
    left = sum(len(todo) for _, todo, _ in chunks)
    spent, played = 0.0, 0
    bar = tqdm(
        total=total,
        initial=total - left,
        desc=f"{battery.name} {printable(model.model)}",
        unit="run",
        disable=None if progress is None else not progress,
    )
    try:
        with new_run():
            estimated = 0.0  # the estimates of the chunks played, to calibrate the next chunk's by the bill
            for i, (task, todo, seed) in enumerate(chunks):
                estimate = _cost(task, [(c, _episodes_left(out, c, seed)) for c in todo], prices)["usd"]
                # an estimate that proved low (longer prompts, more re-asks) is scaled up by what the chunks so
                # far really cost; never down, so cached answers do not make the budget optimistic
                calibrated = estimate * max(1.0, spent / estimated if estimated > 0 else 1.0)
                if max_usd is not None and spent + calibrated > max_usd:
                    return BenchOutcome("budget", spent, played, sum(len(t) for _, t, _ in chunks[i:]), calibrated)
                bar.set_postfix_str(task.name)
                before = _billed_before(out, todo, seed, prices)
                played_now = run_all(
                    todo, [seed], store, progress=progress, concurrency=concurrency, desc=f"{task.name}, seed {seed}"
                )
                spent += _billed(list({r["key"]: r for r in played_now}.values()), prices) - before
                estimated += estimate
                played += len(todo)
                bar.update(len(todo))
                if all(len(r.get("failed") or ()) == int(r["episodes"]) for r in played_now):
                    # a circuit breaker: an endpoint that fails everything would fail the rest of the battery
                    # too, after every retry of every request (tens of minutes), and score nothing
                    error = next((f["error"] for r in played_now for f in r.get("failed") or ()), "")
                    left_now = sum(len(t) for _, t, _ in chunks[i + 1 :])
                    return BenchOutcome("failing", spent, played, left_now, error=str(error))
    finally:
        bar.close()
    latest = store.load()
    records = {
        t.name: [latest[run_key(c, s)] for c in planned[t.name][0] for s in planned[t.name][1]] for t in battery.tasks
    }
    card = make_card(battery, model, planned, records, prices, out)
    failed = failed_runs([r for rs in records.values() for r in rs])
    return BenchOutcome("complete", spent, played, 0, card=card, failed=tuple(failed))


FALLBACK_LIMIT = 0.10  # above this share of the model's decisions made by fallbacks, a score is not the model's
FAILED_LIMIT = 0.05  # above this share of failed episodes, a score covers too little of the task


def score_caveats(llm: Mapping[str, Any]) -> list[str]:
    """Why a task's score does not rank its model (the card marks it, the leaderboard does not make it best):
    too many fallbacks — invalid replies made the policy's scripted fallback act (NO_TRADE, BLOCK, pass...),
    which can score well by itself — or too many failed episodes, left out of the metrics."""
    out = []
    calls, episodes = from_json_number(llm["calls"]), from_json_number(llm["episodes"])
    fallbacks, failed = from_json_number(llm["fallbacks"]), from_json_number(llm["failed_episodes"])
    if calls > 0 and fallbacks / calls > FALLBACK_LIMIT:
        out.append(
            f"{fallbacks / calls:.0%} of the model's decisions were fallbacks (over "
            f"{FALLBACK_LIMIT:.0%}): the score is the fallback policy's, not the model's"
        )
    if episodes > 0 and failed / episodes > FAILED_LIMIT:
        out.append(
            f"{failed / episodes:.0%} of the episodes failed (over {FAILED_LIMIT:.0%}): the score covers "
            "only the episodes that did not"
        )
    return out


_LLM_TOTALS = (
    "episodes",
    "failed_episodes",
    "calls",
    "fallbacks",
    "reasks",
    "usage_estimated",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
)


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name).strip("-")


def make_card(
    battery: Battery,
    model: BenchModel,
    planned: Mapping[str, tuple[list[Condition], list[int]]],
    records: Mapping[str, Sequence[Mapping[str, Any]]],
    prices: tuple[float, float],
    out: Path,
) -> dict[str, Any]:
    """The model card's data (``card.json``), its figures written under ``out/figures``; nothing in it
    depends on how the runs were played (no times, no requests, no bills), so a replay from the cache
    gives the same card byte for byte."""
    from eq_env.core.experiments import llm_report
    from eq_env.core.redact import mask_urls
    from eq_env.core.report import json_number, plot_lines
    from eq_env.version import __version__

    tasks = []
    for task in battery.tasks:
        conds, seeds = planned[task.name]
        rs = records[task.name]
        report = task.report(conds, rs)
        bounds = {m.key: m.bounds for m in report.metrics}
        figure = None
        if report.figure:
            figure = f"figures/{_slug(task.name)}.png"
            plot_lines(Path(out) / figure, **dict(report.figure))
        # the model's policies exactly (every parameter spelled out: sampling, prompt version), for citing
        from eq_env.core.experiments import canonical_spec
        from eq_env.core.policy import parse_policy_spec

        policies: dict[str, list[str]] = {}
        for c in conds:
            for role, spec in c.policies:
                if parse_policy_spec(spec)[0] == "llm" and (full := canonical_spec(spec, role, c.game)) not in (
                    policies.setdefault(role, [])
                ):
                    policies[role].append(full)
        totals = dict.fromkeys(_LLM_TOTALS, 0.0)
        for row in llm_report(conds, rs, prices):
            for k in _LLM_TOTALS:
                totals[k] += row.get(k, 0)
        tasks.append(
            {
                "name": task.name,
                "title": task.title,
                "env": task.env,
                "seeds": seeds,
                "runs": len(rs),
                "prompts": list(task.prompts),
                "main": {
                    "key": task.main.key,
                    "title": task.main.title,
                    "higher_is_better": task.main.higher_is_better,
                    "digits": task.main.digits,
                    "cell": _cell_json(report.main.within(task.main.bounds)),
                },
                "metrics": [
                    {"key": m.key, "title": m.title, "higher_is_better": m.higher_is_better, "digits": m.digits}
                    for m in report.metrics
                ],
                "rows": [
                    {"label": label, "cells": {k: _cell_json(c.within(bounds.get(k))) for k, c in cells.items()}}
                    for label, cells in report.rows
                ],
                "reference": [{"label": label, "values": dict(values)} for label, values in report.reference],
                "reference_source": task.reference_source,
                "notes": list(report.notes),
                "figure": figure,
                "llm": {k: json_number(v) for k, v in totals.items()},
                "policies": policies,
            }
        )
    return {
        "card": CARD_VERSION,
        "battery": battery.name,
        "quick": battery.quick,
        "eq_env": __version__,
        "model": model.model,
        "endpoint": mask_urls(model.base_url) if model.base_url else None,
        "params": {k: json_number(v) if isinstance(v, float) else v for k, v in sorted(model.params.items())},
        "prices": list(prices),
        "tasks": tasks,
        # (only for a part of the battery: a whole battery's card is as it was)
        **({"part_of": len(battery.whole)} if battery.whole else {}),
    }


def _cell_json(cell: Cell) -> dict[str, Any]:
    from eq_env.core.report import json_number

    return {k: json_number(v) for k, v in cell.to_dict().items()}
