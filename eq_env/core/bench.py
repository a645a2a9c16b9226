"""Benchmarks of a model: a named, versioned battery of tasks, each one game's conditions with the model in
its LLM roles (``eq-env bench``).

A :class:`BenchTask` is what one game contributes: the conditions it plays for a model (built from the
model's :class:`BenchModel`), the seeds, how its records read as a table (:class:`TaskReport`, with the
paper's reference numbers beside the model's and one *main metric* for leaderboards), and what one episode
of a condition is expected to ask of the model (:class:`Estimate`, for ``--dry-run`` and ``--max-usd``).
A :class:`Battery` is an ordered tuple of tasks under a version name (``bench-v1``) that published scores
cite; a task's conditions, seeds and sizes are part of that version — change them and the battery's name
changes too.

This module knows no game: the games' ``bench.py`` modules define their tasks and :mod:`eq_env.bench`
assembles the batteries. Runs go through :func:`eq_env.core.experiments.run_all`, so they are recorded as
they finish, resumed, and replayed from the answer cache with no request.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eq_env.core.experiments import Condition
from eq_env.core.policy import format_policy_spec
from eq_env.core.report import from_json_number
from eq_env.core.stats import mean_interval

__all__ = [
    "Battery",
    "BenchModel",
    "BenchTask",
    "Cell",
    "Estimate",
    "Metric",
    "TaskReport",
    "metric_cells",
    "seed_values",
]


@dataclass(frozen=True)
class Metric:
    """A column of a task's table.

    ``key`` names the value in a run record's ``metrics`` (or one the task computes itself);
    ``higher_is_better`` says which way is good (None: neither — words, steps), which the leaderboards and
    the card's arrows use.
    """

    key: str
    title: str
    higher_is_better: bool | None = True
    digits: int = 3


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
    """A named, versioned, ordered set of tasks (``bench-v1``)."""

    name: str
    tasks: tuple[BenchTask, ...]
    description: str = ""

    def __post_init__(self) -> None:
        names = [t.name for t in self.tasks]
        if len(set(names)) != len(names):
            raise ValueError(f"battery {self.name}: task names repeat: {names}")

    def task(self, name: str) -> BenchTask:
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(f"battery {self.name} has no task {name!r}; it has {[t.name for t in self.tasks]}")


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
