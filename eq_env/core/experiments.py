"""Conditions, runs and their results: the machinery behind ``reproduce`` and ``sweep``, for any game.

A :class:`Condition` is one configuration of a game with one policy spec per
role and a number of episodes; a *run* is a condition played on one seed. Runs
are keyed by what determines their results (game, configuration, canonical
policy specs, episodes, package version, the source of a ``module:Class``
policy), so two conditions that are the same
experiment under different labels share one run; a record's ``labels`` are
those of the condition that ran it first. Each finished run becomes one JSON
line in a results file, written (and flushed to disk) as soon as it finishes.
A killed job loses at most the runs in flight: started again with the same
results file it skips every run already recorded, so the final results are
exactly those of an uninterrupted job.

Runs use the game's batch engine when it has one and every policy can act in
bulk, and its AEC environment otherwise; both give the same per-episode
outcomes. Every condition of a seed sees the same chance events (common random
numbers), so :func:`paired_difference` compares two conditions seed by seed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import reprlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from eq_env.core.executors import Executor, LocalExecutor
from eq_env.core.policy import (
    Role,
    is_import_path,
    join_spec,
    make_policy,
    new_run,
    parse_policy_spec,
    policy_entry,
    source_fingerprint,
    spec_parameters,
)
from eq_env.core.redact import mask_urls
from eq_env.core.report import from_json_number, json_number
from eq_env.core.runner import (
    Episode,
    FailedEpisode,
    episode_from_dict,
    is_async,
    llm_summary,
    play,
    play_concurrent,
    summarize,
)
from eq_env.core.spec import EnvSpec, env_spec, spec_for_config

__all__ = [
    "ENGINES",
    "Condition",
    "EpisodeStore",
    "ResultsStore",
    "aggregate",
    "canonical_spec",
    "check_run_record",
    "check_runs",
    "failed_runs",
    "llm_columns",
    "llm_report",
    "paired_difference",
    "rerun",
    "run_all",
    "run_one",
    "set_price_source",
    "t_quantile_975",
]

ENGINES = ("auto", "batch", "aec")


def canonical_spec(spec: str, role: Role, env: Any = None) -> str:
    """A policy spec with every parameter spelled out and sorted, so equal policies key alike.

    Parameters a policy declares as not affecting its results
    (``RUNTIME_PARAMETERS``) are left out; a policy's ``canonical_parameters``
    classmethod, if any, resolves defaults that come from the environment.
    """
    name, _ = parse_policy_spec(spec)
    entry = policy_entry(name, role, env)
    params = {**entry.parameters(), **spec_parameters(spec, entry)}  # (an import path's typed by its signature)
    resolve = getattr(entry.factory, "canonical_parameters", None)
    if callable(resolve):  # e.g. an LLM's endpoint left to $OPENAI_BASE_URL: key by the one it will use
        params = resolve(params)
    runtime = getattr(entry.factory, "RUNTIME_PARAMETERS", ())
    keep = sorted(k for k in params if k not in runtime)
    return join_spec(name, [f"{k}={params[k]!r}" for k in keep])


@dataclass(frozen=True)
class Condition:
    """One configuration of a game, one policy spec per role, a number of episodes, and labels for reports.

    ``Condition(config, {"player": "planner", "partner": "random"}, 200)``: the game is the one
    ``config`` configures. ``policies`` is kept as (role, spec) pairs in the game's role order.
    """

    config: Any
    policies: Any  # a {role: spec} mapping when given; (role, spec) pairs once made
    episodes: int
    labels: tuple[tuple[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        if isinstance(self.episodes, bool) or not isinstance(self.episodes, int) or self.episodes < 1:
            raise ValueError(f"episodes must be a positive integer, got {self.episodes!r}")
        spec = spec_for_config(self.config)
        given = dict(self.policies)
        spec.check_roles(list(given))
        for role, policy in given.items():
            if not isinstance(policy, str):
                raise TypeError(f"a condition's policies are spec strings (they key its results), got {policy!r}")
            make_policy(policy, role, spec)  # fail now, not in a worker an hour later
        # specs are written into results and tables: never with a credential in them (the process
        # keeps the real endpoint in memory, see eq_env.agents.client.register_endpoint)
        object.__setattr__(self, "policies", tuple((role, mask_urls(given[role])) for role in spec.roles))

    @property
    def game(self) -> EnvSpec:
        """The game this condition plays."""
        return spec_for_config(self.config)

    def policy(self, role: str) -> str:
        """The policy spec of ``role``."""
        return dict(self.policies)[role]

    def label(self, name: str, default: Any = None) -> Any:
        return dict(self.labels).get(name, default)

    def identity(self) -> dict[str, Any]:
        """What determines the results (labels do not; the package version does, since code changes may).

        A ``module:Class`` policy's code is the user's, not the package's: its key holds
        :func:`~eq_env.core.policy.source_fingerprint` of the module it names (under ``"code"``, absent when
        every policy is registered, so their keys stay as they were), so an edited class plays again.
        """
        from eq_env.version import __version__

        spec = self.game
        names = {role: parse_policy_spec(policy)[0] for role, policy in self.policies}
        code = {role: source_fingerprint(name) for role, name in names.items() if ":" in name and is_import_path(name)}
        return {
            "eq_env": __version__,
            **({"env": spec.id} if spec.key_env else {}),
            "config": self.config.to_dict(),
            **{role: canonical_spec(policy, role, spec) for role, policy in self.policies},
            "episodes": self.episodes,
            **({"code": code} if code else {}),
        }

    @functools.cached_property
    def key(self) -> str:  # cached: run_all asks for it per run, and it costs a registry walk
        blob = json.dumps(self.identity(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def run_key(condition: Condition, seed: int) -> str:
    return f"{condition.key}/{seed}"


def _engine_for(spec: EnvSpec, policies: Mapping[str, Any], engine: str) -> str:
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    batchable = spec.batch is not None and all(spec.batch.is_batchable(p) for p in policies.values())
    if engine == "batch" and not batchable:
        shown = " / ".join(map(repr, policies.values()))
        raise ValueError(f"the batch engine needs policies that act in bulk; {shown} do not")
    return "batch" if engine != "aec" and batchable else "aec"


class EpisodeStore:
    """One run's episodes, a JSON line each, appended as they finish (so an LLM run resumes mid-run)."""

    def __init__(self, path: Path, env: Any = None) -> None:
        self.path = path
        self.env = env_spec(env)
        self._results = ResultsStore(path)

    def load(self) -> dict[int, Episode]:
        """The latest episode recorded under each index (a failure retried later is replaced)."""
        return {e.episode: e for e in self.history()}

    def history(self) -> list[Episode]:
        """Every attempt recorded, in the order written: a failure retried later comes before its retry
        (the file is never compacted: it is the record of what each attempt cost). A line that is not an
        episode record is an error naming the file, the line and the field."""
        episodes: list[Episode] = []
        self._results.records(check=lambda record: episodes.append(episode_from_dict(self.env, record)))
        return episodes

    def append(self, episode: Episode) -> None:
        self._results.append({"key": str(episode.episode), **episode.to_dict()})


def run_one(
    condition: Condition,
    seed: int,
    engine: str = "auto",
    *,
    episode_dir: Path | None = None,
    concurrency: int = 8,
) -> dict[str, Any]:
    """Play one condition on one seed; the JSON-ready result record.

    Policies with ``aact`` (LLM policies) play ``concurrency`` episodes at a
    time; with ``episode_dir`` each finished episode is saved at once under
    it, and a run started again skips those already played to the end —
    failed ones are played again. Failed episodes
    (see :class:`~eq_env.core.runner.FailedEpisode`) are counted, not measured;
    the record lists them under ``failed``.
    """
    spec = condition.game
    policies = {role: make_policy(policy, role, spec) for role, policy in condition.policies}
    used = _engine_for(spec, policies, engine)
    extra: dict[str, Any] = {}
    if used == "batch":
        assert spec.batch is not None
        metrics = spec.compute_metrics(
            spec.batch.simulate(condition.config, policies, episodes=condition.episodes, seed=seed)
        )
    elif any(is_async(p) for p in policies.values()):
        store = EpisodeStore(episode_dir / f"{condition.key}-{seed}.jsonl", spec) if episode_dir else None
        history = store.history() if store else []
        latest = {e.episode: e for e in history}
        done = {i: e for i, e in latest.items() if not isinstance(e, FailedEpisode)}
        save = store.append if store else None
        new = play_concurrent(
            spec,
            condition.config,
            dict(condition.policies),
            episodes=condition.episodes,
            seed=seed,
            concurrency=concurrency,
            skip=done,
            on_episode=save,
        )
        episodes = sorted([*done.values(), *new], key=lambda e: e.episode)
        records = [e for e in episodes if not isinstance(e, FailedEpisode)]
        metrics = spec.compute_metrics(records)
        failed = [e for e in episodes if isinstance(e, FailedEpisode)]
        # earlier attempts at the episodes played again: what they cost is still part of the bill
        superseded = [e for e in history if isinstance(e, FailedEpisode)]
        extra["llm"] = llm_summary(spec, condition.config, records, failed, superseded)
        extra["failed"] = [e.to_dict() for e in failed]
    else:
        metrics = spec.compute_metrics(play(spec, condition.config, policies, episodes=condition.episodes, seed=seed))
    return {
        "key": run_key(condition, seed),
        "condition": condition.key,
        "seed": seed,
        "env": spec.id,
        "labels": dict(condition.labels),
        "policies": dict(condition.policies),
        "episodes": condition.episodes,
        "config": condition.config.to_dict(),
        "engine": used,
        "metrics": {k: json_number(v) for k, v in metrics.items()},
        **extra,
    }


class ResultsStore:
    """A JSON-lines file of run records, appended and flushed one run at a time."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def records(self, check: Callable[[dict[str, Any]], Any] | None = None) -> list[dict[str, Any]]:
        """Every record, in the order written.

        A torn last line (a kill mid-write: it does not end in a newline) is dropped and cut from the file.
        A complete line that is not a record — a JSON object with a string ``"key"`` — is an error naming
        the file and line, as is a record for which ``check`` (a callable, given each record) raises ValueError.
        Blank lines are skipped.
        """
        if not self.path.exists():
            return []
        records: list[dict[str, Any]] = []
        good_bytes = 0
        with self.path.open("rb") as fh:
            lines = fh.readlines()
        for i, raw in enumerate(lines):
            if not raw.endswith(b"\n"):  # only the last line can: the write never finished
                with self.path.open("r+b") as fh:
                    fh.truncate(good_bytes)
                break
            good_bytes += len(raw)
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except (ValueError, RecursionError):  # (nested past the parser's stack: no record of ours is)
                record = None
            if not isinstance(record, dict) or not isinstance(record.get("key"), str):
                raise ValueError(
                    f"{self.path}:{i + 1} is not a run record (expected a JSON object with a string 'key'); "
                    "remove or fix that line"
                )
            if check is not None:
                try:
                    check(record)
                except ValueError as err:
                    raise ValueError(f"{self.path}:{i + 1}: {err}") from None
            records.append(record)
        return records

    def load(self, check: Callable[[dict[str, Any]], Any] | None = None) -> dict[str, dict[str, Any]]:
        """Records by run key; where a key was written again (a run resumed), the last record. ``check`` as
        for :meth:`records` (:func:`check_run_record` for a file of run records)."""
        return {r["key"]: r for r in self.records(check)}

    def compact(self) -> None:
        """Rewrite the file with one record per key (the last), atomically, if it holds older ones: a run
        with failed episodes is written again each time it is resumed, and the file must not grow
        without bound."""
        records = self.records()
        latest = {r["key"]: r for r in records}
        if len(latest) == len(records):
            return
        tmp = self.path.with_suffix(f".tmp{os.getpid()}")
        try:
            with tmp.open("w") as fh:
                for record in latest.values():  # in the order each key was first written
                    fh.write(json.dumps(record, allow_nan=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the file for one run: a second run writing into the same results at once (its appends, and
        the compaction's rewrite) would lose records, so it is refused with one line instead."""
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock, as before
            yield
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with (self.path.parent / f".{self.path.name}.lock").open("a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise ValueError(
                    f"another run is writing to {self.path} right now; wait for it to finish, or choose another --out"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def append(self, record: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, allow_nan=False) + "\n"
        with self.path.open("a") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


_RUN_FIELDS: tuple[tuple[str, type, str, bool], ...] = (  # name, type, what else it must be, whether required
    ("condition", str, "", True),
    ("seed", int, ", at least 0", True),
    ("episodes", int, ", at least 1", True),
    ("metrics", dict, "", True),
    ("labels", dict, "", False),
    ("failed", list, "", False),
    ("llm", dict, "", False),
)


def check_run_record(record: Mapping[str, Any]) -> None:
    """A ValueError naming the field of a run record (a line of ``results.jsonl``) that is missing or not what
    resuming, ``rerun`` and the tables read (``ResultsStore.records(check=...)`` adds the file and line).

    JSON's ``true`` is no seed, though Python's bool is an int: ``int(True)`` would run seed 1.
    """
    for name, kind, more, required in _RUN_FIELDS:
        if name not in record and not required:
            continue
        value = record.get(name)
        low = 1 if name == "episodes" else 0
        if isinstance(value, bool) or not isinstance(value, kind) or (isinstance(value, int) and value < low):
            got = reprlib.repr(value) if name in record else "nothing (the field is missing)"  # (cut to a line)
            raise ValueError(
                f"run record {record['key']!r}: expected {name!r} of type {kind.__name__}{more}, got "
                f"{got}; remove or fix that line (a run whose line is gone is played again)"
            )


def check_runs(conditions: Sequence[Condition], engine: str, jobs: int) -> None:
    """Refuse, before anything is created, what :func:`run_all` would refuse once
    running: a bad engine or job count, or the batch engine for policies that cannot act in bulk."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    for c in {(c.game.id, c.policies): c for c in conditions}.values():  # once per game and set of policies
        _engine_for(c.game, {role: make_policy(p, role, c.game) for role, p in c.policies}, engine)


@new_run()
def run_all(
    conditions: Sequence[Condition],
    seeds: Sequence[int],
    store: ResultsStore,
    *,
    engine: str = "auto",
    jobs: int = 1,
    progress: bool | None = None,
    desc: str = "runs",
    concurrency: int = 8,
    executor: Executor | None = None,
) -> list[dict[str, Any]]:
    """Every (condition, seed) run, skipping those already in ``store``; records in condition × seed order.

    Runs go to ``executor`` (default: a process pool of ``jobs`` workers, see
    :mod:`eq_env.core.executors`; with ``jobs=1`` they run here, one by one) and
    are recorded by this process as they finish, in whatever order; the
    returned list (and any table made from it) does not depend on that order,
    nor on the executor. Runs with LLM policies stay in this
    process, one at a time (their episodes are concurrent already, and the two
    regimes of a state must share one answer, which separate processes would
    ask for twice). A recorded run with failed episodes counts as unfinished:
    run again, it plays those episodes again (and only those).
    """
    check_runs(conditions, engine, jobs)
    wanted = [(c, s) for c in conditions for s in seeds]
    with store.exclusive():
        return _run_all(store, wanted, engine, executor or LocalExecutor(jobs), progress, desc, concurrency)


def _run_all(
    store: ResultsStore,
    wanted: list[tuple[Condition, int]],
    engine: str,
    executor: Executor,
    progress: bool | None,
    desc: str,
    concurrency: int,
) -> list[dict[str, Any]]:
    store.compact()
    done = store.load(check_run_record)
    episode_dir = store.path.parent / "episodes"
    # one run per key: conditions that are the same experiment share it (with the first one's labels)
    todo, seen = [], {k for k, r in done.items() if not r.get("failed")}
    for c, s in wanted:
        if (key := run_key(c, s)) not in seen:
            seen.add(key)
            todo.append((c, s))
    llm = {c.key: _has_llm(c) for c, _ in todo}
    here = [(c, s) for c, s in todo if llm[c.key]]
    pooled = [(c, s) for c, s in todo if not llm[c.key]]
    distinct = len({run_key(c, s) for c, s in wanted})
    bar = tqdm(
        total=distinct,
        initial=distinct - len(todo),
        desc=desc,
        unit="run",
        disable=None if progress is None else not progress,
    )
    if executor.runs_inline(len(pooled)):
        here, pooled = todo, []
    try:
        for c, s in here:
            record = run_one(c, s, engine, episode_dir=episode_dir, concurrency=concurrency)
            store.append(record)
            done[record["key"]] = record
            bar.update(1)
        if pooled:
            calls = [((c, s, engine), {"episode_dir": episode_dir, "concurrency": concurrency}) for c, s in pooled]
            names = [run_key(c, s) for c, s in pooled]
            # the executor's workers only compute: this process alone writes the results, as each arrives
            with contextlib.closing(executor.map_unordered(run_one, calls, names)) as finished:
                for record in finished:
                    store.append(record)
                    done[record["key"]] = record
                    bar.update(1)
    finally:
        bar.close()
    store.compact()  # runs played again (failed episodes retried) replaced their records
    return [done[run_key(c, s)] for c, s in wanted]


def _has_llm(condition: Condition) -> bool:
    return any(is_async(make_policy(policy, role, condition.game)) for role, policy in condition.policies)


def failed_runs(records: Iterable[Mapping[str, Any]]) -> list[tuple[str, int, int]]:
    """(run key, failed episodes, episodes) of every run with failed episodes."""
    unique = {r["key"]: r for r in records}
    return [(k, len(r["failed"]), int(r["episodes"])) for k, r in unique.items() if r.get("failed")]


def rerun(record: Mapping[str, Any], engine: str = "auto") -> dict[str, Any]:
    """Run the condition and seed of one results record again (from its stored game, configuration and
    policies)."""
    return run_one(condition_of(record), int(record["seed"]), engine)


def record_policies(record: Mapping[str, Any]) -> dict[str, str]:
    """A results record's policy spec per role (records written before there were several games name
    the first game's roles at their top level)."""
    if isinstance(record.get("policies"), Mapping):
        return dict(record["policies"])
    spec = env_spec(record.get("env"))
    return {role: record[role] for role in spec.roles if role in record}


def condition_of(record: Mapping[str, Any]) -> Condition:
    """The condition a results record ran."""
    spec = env_spec(record.get("env"))
    return Condition(
        spec.config.from_dict(record["config"]),
        record_policies(record),
        int(record["episodes"]),
        tuple(record.get("labels", {}).items()),
    )


def _metrics_of(record: Mapping[str, Any]) -> dict[str, float]:
    return {k: from_json_number(v) for k, v in record["metrics"].items()}


def aggregate(
    conditions: Sequence[Condition], records: Iterable[Mapping[str, Any]]
) -> list[tuple[Condition, dict[str, tuple[float, float]], dict[int, dict[str, float]]]]:
    """For each condition: (condition, {metric: (mean, std over seeds)}, {seed: metrics})."""
    by_condition: dict[str, dict[int, dict[str, float]]] = {}
    for r in records:
        by_condition.setdefault(r["condition"], {})[int(r["seed"])] = _metrics_of(r)
    out = []
    for c in conditions:
        per_seed = dict(sorted(by_condition.get(c.key, {}).items()))
        metrics = c.game.metrics
        out.append(
            (
                c,
                summarize(per_seed.values(), metrics) if per_seed else dict.fromkeys(metrics, (math.nan, math.nan)),
                per_seed,
            )
        )
    return out


_LLM_COUNTS = (
    "seeds",
    "episodes",
    "failed_episodes",
    "calls",
    "fallbacks",
    "reasks",
    "gated",
    "usage_estimated",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "requests",
    "retries",
    "cache_hits",
    "transport_errors",
    "billed_prompt_tokens",
    "billed_completion_tokens",
    "billed_usd",
)


def llm_columns(env: Any = None) -> tuple[str, ...]:
    """The columns of ``llm_costs.csv`` for a game: the condition, its policy per role, then the counts."""
    return ("condition", *env_spec(env).roles, *_LLM_COUNTS)


def _no_prices() -> tuple[float, float]:
    return 0.0, 0.0


_price_source: Callable[[], tuple[float, float]] = _no_prices


def set_price_source(source: Callable[[], tuple[float, float]]) -> None:
    """Where :func:`llm_report` reads dollars per million prompt and completion tokens when not given them
    (:mod:`agents` points it at its settings, see ``eq_env.agents.client.configure``)."""
    global _price_source
    _price_source = source


def llm_report(
    conditions: Sequence[Condition], records: Iterable[Mapping[str, Any]], prices: tuple[float, float] | None = None
) -> list[dict[str, Any]]:
    """Per condition, summed over its seeds: what LLM policies cost and how they fared.

    ``prompt_tokens``, ``completion_tokens`` and ``cost_usd`` (at ``prices`` dollars per million
    prompt and completion tokens) are what the condition's samples cost when drawn — what running it
    alone, from scratch, costs. ``billed_*`` is what playing it cost: less when answers came from the
    cache or were shared with another condition (the two regimes of a state), more when failed episodes
    were attempted, in this run or in an earlier one that this run resumed. ``usage_estimated``
    counts calls whose endpoint reported no usage (tokens estimated at four characters a token).
    """
    if prices is None:
        prices = _price_source()
    totals: dict[str, dict[str, Any]] = {}
    unique = {r["key"]: r for r in records}  # a run shared by identical conditions counts once
    for r in unique.values():
        llm = r.get("llm")
        if not llm:
            continue
        t = totals.setdefault(r["condition"], dict.fromkeys(_LLM_COUNTS, 0))
        t["seeds"] += 1
        t["episodes"] += int(r["episodes"])
        t["failed_episodes"] += llm.get("failed_episodes", 0)
        for part in llm.values():
            if not isinstance(part, Mapping):  # (failed_episodes)
                continue
            for k in ("calls", "fallbacks", "reasks", "gated", "usage_estimated", "prompt_tokens", "completion_tokens"):
                t[k] += part.get(k, 0)
            transport = part.get("transport", {})
            for k, src in (
                ("requests", "requests"),
                ("retries", "retries"),
                ("cache_hits", "cache_hits"),
                ("transport_errors", "errors"),
                ("billed_prompt_tokens", "billed_prompt_tokens"),
                ("billed_completion_tokens", "billed_completion_tokens"),
            ):
                t[k] += transport.get(src, 0)
    rows, seen = [], set()
    for c in conditions:
        if c.key in totals and c.key not in seen:
            seen.add(c.key)
            t = totals[c.key]
            t["cost_usd"] = (t["prompt_tokens"] * prices[0] + t["completion_tokens"] * prices[1]) / 1e6
            t["billed_usd"] = (t["billed_prompt_tokens"] * prices[0] + t["billed_completion_tokens"] * prices[1]) / 1e6
            rows.append({"condition": c.key, **dict(c.policies), **t})
    return rows


# Two-sided 95% quantiles of Student's t by degrees of freedom (scipy is not a dependency).
_T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
    16: 2.120,
    17: 2.110,
    18: 2.101,
    19: 2.093,
    20: 2.086,
    25: 2.060,
    30: 2.042,
    40: 2.021,
    60: 2.000,
    120: 1.980,
}


def t_quantile_975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom.

    Between rows of the table the nearest smaller ``df`` is used, whose
    quantile is larger: intervals err on the wide side.
    """
    if df < 1:
        return math.nan
    return _T975[max(k for k in _T975 if k <= df)]


def paired_difference(
    a: Mapping[int, Mapping[str, float]], b: Mapping[int, Mapping[str, float]], metric: str
) -> tuple[float, float, float, int]:
    """Mean over common seeds of ``a[seed][metric] - b[seed][metric]``, with a 95% t-interval.

    Both conditions saw the same chance events on each
    seed, so the per-seed differences are free of the sampling noise that
    separates two independent runs. Returns (mean, low, high, seeds used).
    """
    diffs = np.array(
        [
            a[s][metric] - b[s][metric]
            for s in sorted(set(a) & set(b))
            if not (math.isnan(a[s][metric]) or math.isnan(b[s][metric]))
        ]
    )
    n = len(diffs)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(diffs.mean())
    if n == 1:
        return mean, math.nan, math.nan, 1
    half = t_quantile_975(n - 1) * float(diffs.std(ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half, n
