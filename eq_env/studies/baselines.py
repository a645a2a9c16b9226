"""``eq-env baselines``: the RL baseline table — each game's settings, trained on several seeds, evaluated on
held-out seeds greedy and sampled, reported as rliable recommends.

::

    eq-env baselines --out runs/baselines                  # the full table (hours on 2 cores: see the docs)
    eq-env baselines --out runs/baselines --preset quick   # small budgets, 2 seeds: minutes (what CI runs)
    eq-env baselines --out runs/baselines --only einstein-puzzle/self-play   # the baselines whose name starts so
    eq-env baselines --out runs/baselines --backend ray    # each training a Ray task (pip install 'eq-env[ray]')
    eq-env baselines --list                                # what would run, with its budget, and nothing else

**A baseline** is one (game, setting, learner) — e.g. the Einstein puzzle's self-play at n = 4 in provide &
seek with SB3 MaskablePPO — with a headline metric and a **reference**: what the game's own strong policy
scores in the same setting (the best response, the planner), so that each result is also a ratio to it. A
**run** trains a baseline on one training seed (seed ``i`` of ``--seeds k`` is ``10·i``: its environments play
seeds ``10·i`` to ``10·i + 7``) and evaluates the model on held-out seeds (1000–1002, never trained on), once
greedy (the most likely action) and once sampled (drawn from the policy's distribution); each of the two is
one number per run, the mean over the evaluation's episodes and seeds (a value-based learner, which has no
distribution to sample, is scored greedy only). A self-play baseline is also scored in **cross-play**: run
``i``'s model in the first seat with run ``i + 1``'s in the second, greedy, on the same held-out seeds — a
partner it never trained with, the zero-shot coordination question; the table's ``cross_play`` is the mean
over the ``k − 1`` pairs.

**What is written** into ``--out``, as runs finish:

* ``results.jsonl``: a line per run (and per reference, and per cross-play pair), flushed as each finishes:
  a killed command run again skips what is recorded and trains only the rest; the models in
  ``runs/<baseline>/seed<i>/``;
* ``baselines.csv`` and ``baselines.md``: per baseline and evaluation mode, the interquartile mean (IQM)
  over the seeds with its 95% percentile-bootstrap interval, the mean, the reference and the ratio
  IQM / reference;
* ``curves.png``: the learning curves (training episodes' mean reward, sampled actions as PPO trains; a
  learner that measures its curve otherwise says what on its panel),
  mean over seeds with a 95% bootstrap interval, a panel per baseline;
* ``ratios.png``: each baseline's IQM / reference with its interval, greedy and sampled;
* ``summary.md``: what was run (the command's preset, seeds, budgets, the package version), the table,
  the aggregate IQM of the ratios over every baseline (runs pooled, seeds resampled within each baseline:
  rliable's stratified bootstrap) and the figures.

The statistics are ours (no rliable dependency) and follow Agarwal et al. (2021), "Deep RL at the edge of
the statistical precipice": the IQM is the mean of the middle 50% of the runs (the trimmed mean that cuts
⌊k/4⌋ runs at each end of k), intervals are percentile bootstraps of 2,000 resamples drawn from a fixed
generator, so the same results give the same table.

A game lists its baselines in ``eq_env.studies.<game>.baselines`` (:data:`GAME_MODULES`); this module knows
none of them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.core.cli import Command, int_in, out_dir
from eq_env.core.report import from_json_number, json_number

__all__ = [
    "COMMAND",
    "EVAL_SEEDS",
    "GAME_MODULES",
    "PRESETS",
    "RLLIB_UNIT",
    "TORCHRL_UNIT",
    "Baseline",
    "Bound",
    "Budget",
    "all_baselines",
    "bootstrap_interval",
    "iqm",
    "means",
    "not_installed",
    "rllib_run",
    "run_baselines",
    "torchrl_fingerprint",
    "torchrl_missing",
    "torchrl_run",
    "train_seed",
]

GAME_MODULES = (
    "eq_env.studies.exchange_audit.baselines",
    "eq_env.studies.einstein_puzzle.baselines",
    "eq_env.studies.belief_coordination.baselines",
)
PRESETS = ("full", "quick")
EVAL_SEEDS = (1000, 1001, 1002)  # held out: training seed 10·i plays seeds 10·i … 10·i + 7 (i < 99)
MODES = ("greedy", "sampled")
RESAMPLES = 2000
FORMAT = 1  # a results.jsonl record's "format": bump when what a record holds changes


@dataclass(frozen=True)
class Budget:
    """How much one run of a baseline trains and evaluates."""

    timesteps: int
    eval_episodes: int  # per evaluation seed


@dataclass(frozen=True)
class Baseline:
    """One (game, setting, learner) of the table.

    ``train(out, seed, budget, eval_seeds)`` trains into ``out`` and returns ``{"greedy": {metric: value},
    "sampled": {...}, "curve": [[timesteps, mean reward], ...], "steps_run": int}``; ``reference(budget,
    eval_seeds)`` returns ``{metric: value}`` of the reference policy on the same evaluation. Both are
    module-level functions (a run is sent to a worker process or a Ray task by the baseline's name).
    """

    name: str  # unique, "game/setting/...": --only matches its start
    game: str
    setting: str
    learner: str
    metric: str  # the headline metric (higher is better)
    reference_label: str
    train: Callable[..., dict[str, Any]]
    reference: Callable[..., dict[str, float]]
    budgets: Mapping[str, Budget]  # preset -> budget; a preset it lacks leaves it out (quick: a few rows)
    shown: tuple[str, ...] = ()  # other metrics the table shows beside the headline one
    fingerprint: str = ""  # what else decides its results (the game's configuration): part of a run's key
    modes: tuple[str, ...] = ("greedy", "sampled")  # a value-based learner acts greedily only: ("greedy",)
    unit: str = "steps"  # what ``Budget.timesteps`` counts (environment steps unless the learner says)
    curve: str = "training episodes' mean reward"  # what its learning curve's y is
    # ``cross(model_a, model_b, budget, eval_seeds) -> {metric: value}``: run i's model in the first seat with
    # run i + 1's in the second, greedy (a self-play learner's zero-shot partner: a copy trained apart)
    cross: Callable[..., dict[str, float]] | None = None
    # what it needs that is not installed (e.g. RLlib): a one-line message, or None; such a baseline is listed
    # and reported as not run, never trained half-way
    missing: Callable[[], str | None] | None = None

    def __post_init__(self) -> None:
        if not self.modes or self.modes[0] != "greedy" or not set(self.modes) <= set(MODES):
            raise ValueError(f"{self.name}: modes must be ('greedy',) or ('greedy', 'sampled'), got {self.modes!r}")


class Bound:
    """``fn`` with a baseline's name as its first argument: a game's one ``train`` (or ``reference``)
    function serving all its baselines (a module-level class: it pickles)."""

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        self.fn, self.name = fn, name

    def __call__(self, *args: Any) -> Any:
        return self.fn(self.name, *args)


def means(summary: Mapping[str, tuple[float, float]]) -> dict[str, float]:
    """A runner summary's (mean, std over seeds) as the means a run record keeps."""
    return {k: float(mean) for k, (mean, _) in summary.items()}


RLLIB_BATCH = 2000  # environment steps an RLlib iteration samples (eq_env.baselines.rllib's default)
RLLIB_UNIT = f"iterations of {RLLIB_BATCH} steps"  # an RLlib row's Budget.timesteps


def rllib_run(
    env: str,
    config: Any,
    out: Path,
    seed: int,
    budget: Budget,
    eval_seeds: Sequence[int],
    *,
    modules: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """An RLlib row's run: every role of ``env`` trained at once with RLlib PPO for ``budget.timesteps``
    iterations (:func:`eq_env.baselines.rllib.train`; ``modules``: role → module when not the game's), on 8
    environments sampled in the driver (training seeds ``seed`` … ``seed + 7``, as the SB3 rows), then scored
    greedy and sampled with every role played by its module. The curve: the training episodes' return summed
    over the modules (a shared module's already sums its roles'), per iteration."""
    from eq_env.baselines.rllib import RLlibPolicy, train
    from eq_env.core.runner import evaluate
    from eq_env.core.spec import env_spec

    result = train(
        env,
        out,
        iterations=budget.timesteps,
        seed=seed,
        config=config,
        env_runners=0,
        envs_per_runner=8,
        batch=RLLIB_BATCH,
        eval_seeds=eval_seeds,
        eval_episodes=budget.eval_episodes,
        progress=False,
        modules=modules,
    )
    roles = env_spec(env).roles
    sampled = {role: RLlibPolicy(out, role, deterministic=False) for role in roles}
    played = evaluate(env, config, sampled, episodes=budget.eval_episodes, seeds=list(eval_seeds))
    return {
        "greedy": means(result.evaluation),
        "sampled": means(played.summary),
        "curve": [
            (int(row["iteration"]) * RLLIB_BATCH, float(sum(v for k, v in row.items() if k.startswith("return_"))))
            for row in result.curve
        ],
        "steps_run": int(result.curve[-1]["env_steps"]) if result.curve else 0,
    }


def rllib_missing() -> str | None:
    """Why RLlib rows cannot run here (one line), or None."""
    from eq_env.baselines.rllib import rllib_missing as missing

    why = missing()
    return None if why is None else why.replace("--backend rllib needs", "needs")


TORCHRL_UNIT = "environment steps (TorchRL frames)"  # a TorchRL row's Budget.timesteps


def torchrl_run(
    env: str, config: Any, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]
) -> dict[str, Any]:
    """A TorchRL row's run: every agent of ``env`` trained at once with MAPPO (:func:`eq_env.baselines.torchrl.
    train`: a shared actor per TorchRL group, a centralised critic) for ``budget.timesteps`` frames of the
    numeric observation mode, its environment seeded with ``seed``; then scored greedy and sampled with every
    role played by its group's actor, on the game's text environment as the other rows are. The curve: the
    training episodes' return summed over every agent, per collected batch."""
    from eq_env.baselines.torchrl import TorchRLPolicy, train
    from eq_env.core.runner import evaluate
    from eq_env.core.spec import env_spec

    result = train(env, out, config=config, frames=budget.timesteps, seed=seed, eval_seeds=eval_seeds, progress=False)
    scored = {}
    for how, deterministic in (("greedy", True), ("sampled", False)):
        policies = {role: TorchRLPolicy(out, role, deterministic) for role in env_spec(env).roles}
        played = evaluate(env, config, policies, episodes=budget.eval_episodes, seeds=list(eval_seeds))
        scored[how] = means(played.summary)
    return {
        **scored,
        "curve": [(int(row["frames"]), float(row["return"])) for row in result.curve if row["episodes"] > 0],
        "steps_run": result.frames,
    }


def torchrl_missing() -> str | None:
    """Why TorchRL rows cannot run here (one line), or None."""
    from eq_env.baselines.torchrl import torchrl_missing as missing

    return missing()


def torchrl_fingerprint(setting: str, config: Any) -> str:
    """A TorchRL row's fingerprint: its setting, MAPPO's hyperparameters and the game's configuration (a change
    of any of them trains the row again)."""
    from eq_env.baselines.torchrl import TorchRLHyper

    return json.dumps(["torchrl", setting, dataclasses.asdict(TorchRLHyper()), config.to_dict()], sort_keys=True)


def train_seed(i: int) -> int:
    """The training seed of run ``i`` (its environments play seeds ``10·i`` … ``10·i + 7``)."""
    return 10 * i


def all_baselines() -> list[Baseline]:
    """Every game's baselines, in the order of :data:`GAME_MODULES`."""
    import importlib

    out: list[Baseline] = []
    for name in GAME_MODULES:
        out.extend(importlib.import_module(name).BASELINES)
    names = [b.name for b in out]
    if len(set(names)) != len(names):
        raise RuntimeError(f"baseline names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    return out


def _by_name() -> dict[str, Baseline]:
    return {b.name: b for b in all_baselines()}


# ---------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------
def iqm(values: Sequence[float]) -> float:
    """The interquartile mean: the mean of ``values`` without the ⌊k/4⌋ lowest and highest of k
    (``scipy.stats.trim_mean(values, 0.25)``, rliable's IQM)."""
    x = np.sort(np.asarray(values, np.float64))
    if not x.size:
        return math.nan
    cut = x.size // 4
    return float(x[cut : x.size - cut].mean())


def bootstrap_interval(
    groups: Sequence[Sequence[float] | np.ndarray], statistic: str = "iqm", *, seed: int = 0
) -> tuple[float, float]:
    """The 95% percentile-bootstrap interval of ``statistic`` (``"iqm"`` or ``"mean"``) over the pooled values
    of ``groups``, each group resampled on its own (stratified: a baseline's seeds stay that baseline's). One
    group: the plain bootstrap. A fixed generator: the same values give the same interval."""
    arrays = [np.asarray(g, np.float64) for g in groups if len(g)]
    if not arrays:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    resamples = np.hstack([a[rng.integers(0, a.size, (RESAMPLES, a.size))] for a in arrays])  # one row each
    if statistic == "iqm":
        ordered = np.sort(resamples, axis=1)
        cut = ordered.shape[1] // 4
        stats = ordered[:, cut : ordered.shape[1] - cut].mean(axis=1)
    elif statistic == "mean":
        stats = resamples.mean(axis=1)
    else:
        raise ValueError(f"statistic must be 'iqm' or 'mean', got {statistic!r}")
    low, high = np.percentile(stats, [2.5, 97.5])
    return float(low), float(high)


# ---------------------------------------------------------------------------
# runs
# ---------------------------------------------------------------------------
def _key(kind: str, baseline: str, preset: str, seed: int | list[int] | None) -> str:
    """A run's key: what decides its results (a baseline whose budget or configuration changed runs again)."""
    from eq_env.version import __version__

    b = _by_name()[baseline]
    budget = dataclasses.asdict(b.budgets[preset])
    return json.dumps([FORMAT, __version__, kind, baseline, preset, seed, budget, b.fingerprint], sort_keys=True)


def run_one(name: str, preset: str, index: int, out: str) -> dict[str, Any]:
    """Train baseline ``name`` on training seed ``index`` at ``preset``'s budget and evaluate it: the record
    (the game's training sets torch's threads: one)."""
    baseline = _by_name()[name]
    budget = baseline.budgets[preset]
    seed = train_seed(index)
    where = Path(out) / "runs" / name / f"seed{index}"
    started = time.perf_counter()
    result = baseline.train(where, seed, budget, EVAL_SEEDS)
    return {
        "key": _key("run", name, preset, index),
        "kind": "run",
        "baseline": name,
        "preset": preset,
        "index": index,
        "seed": seed,
        "timesteps": budget.timesteps,
        "steps_run": int(result["steps_run"]),
        "eval_seeds": list(EVAL_SEEDS),
        "eval_episodes": budget.eval_episodes,
        "greedy": _numbers(result["greedy"]),
        "sampled": _numbers(result["sampled"]),
        "curve": [[int(t), json_number(r)] for t, r in result["curve"]],
        "seconds": round(time.perf_counter() - started, 1),
        "model": str(where),
    }


def reference_one(name: str, preset: str) -> dict[str, Any]:
    """The reference's metrics of baseline ``name`` on its evaluation at ``preset``: the record."""
    baseline = _by_name()[name]
    budget = baseline.budgets[preset]
    return {
        "key": _key("reference", name, preset, None),
        "kind": "reference",
        "baseline": name,
        "preset": preset,
        "eval_seeds": list(EVAL_SEEDS),
        "eval_episodes": budget.eval_episodes,
        "metrics": _numbers(baseline.reference(budget, EVAL_SEEDS)),
    }


def cross_one(name: str, preset: str, index: int, out: str) -> dict[str, Any]:
    """Run ``index``'s model of baseline ``name`` in the first seat with run ``index + 1``'s in the second, on
    the evaluation seeds, greedy: the record."""
    baseline = _by_name()[name]
    assert baseline.cross is not None
    budget = baseline.budgets[preset]
    models = [Path(out) / "runs" / name / f"seed{i}" for i in (index, index + 1)]
    for model in models:
        if not model.is_dir():
            raise FileNotFoundError(f"{model}: the model of a recorded run is missing (cross-play needs it)")
    return {
        "key": _key("cross", name, preset, [index, index + 1]),
        "kind": "cross",
        "baseline": name,
        "preset": preset,
        "pair": [index, index + 1],
        "eval_seeds": list(EVAL_SEEDS),
        "eval_episodes": budget.eval_episodes,
        "greedy": _numbers(baseline.cross(*models, budget, EVAL_SEEDS)),
    }


def _numbers(metrics: Mapping[str, float]) -> dict[str, Any]:
    """Metrics for JSON (NaN, e.g. the steps of games never won, as null)."""
    return {k: json_number(float(v)) for k, v in metrics.items()}


def _number(metrics: Mapping[str, Any], name: str) -> float:
    return from_json_number(metrics.get(name))


def _nanmean(values: Sequence[float]) -> float:
    """The mean of the defined values (a game's steps are undefined when it is never won), NaN if none is."""
    defined = [v for v in values if not math.isnan(v)]
    return float(np.mean(defined)) if defined else math.nan


def _check_record(record: Mapping[str, Any]) -> None:
    kind = record.get("kind")
    if kind == "run":
        for field, kind_of in (("baseline", str), ("greedy", dict), ("sampled", dict), ("curve", list)):
            if not isinstance(record.get(field), kind_of):
                raise ValueError(f"a run record needs {field!r} ({kind_of.__name__})")
    elif kind == "reference":
        if not isinstance(record.get("metrics"), dict):
            raise ValueError("a reference record needs 'metrics' (dict)")
    elif kind == "cross":
        if not isinstance(record.get("greedy"), dict) or not isinstance(record.get("pair"), list):
            raise ValueError("a cross record needs 'greedy' (dict) and 'pair' (list)")
    else:
        raise ValueError(f"'kind' must be 'run', 'reference' or 'cross', got {kind!r}")


def select(preset: str, only: Sequence[str] = ()) -> list[Baseline]:
    """The baselines of ``preset`` whose names start with one of ``only`` (every one when empty); a prefix
    that matches none is a ValueError naming it."""
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")
    chosen = [b for b in all_baselines() if preset in b.budgets]
    for prefix in only:
        if not any(b.name.startswith(prefix) for b in chosen):
            raise ValueError(
                f"--only {prefix}: no baseline of preset {preset} has a name that starts so "
                f"(eq-env baselines --list --preset {preset} names them)"
            )
    return [b for b in chosen if not only or any(b.name.startswith(p) for p in only)]


def run_baselines(
    out: str | Path,
    *,
    preset: str = "full",
    seeds: int = 5,
    only: Sequence[str] = (),
    executor: Any = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Run what ``results.jsonl`` in ``out`` lacks, then write the tables, figures and summary (see the module
    docstring). Returns the table's rows and the aggregate."""
    from tqdm.auto import tqdm

    from eq_env.core.executors import LocalExecutor
    from eq_env.core.experiments import ResultsStore

    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= 99:
        raise ValueError(f"seeds must be an integer from 1 to 99, got {seeds!r}")
    listed = select(preset, only)
    not_run = not_installed(listed)
    chosen = [b for b in listed if b.name not in not_run]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    store = ResultsStore(out / "results.jsonl")
    executor = executor or LocalExecutor(1)
    with store.exclusive():
        done = store.load(_check_record)
        todo: list[tuple[Callable[..., dict[str, Any]], tuple[Any, ...], str]] = []
        for b in chosen:
            if _key("reference", b.name, preset, None) not in done:
                todo.append((reference_one, (b.name, preset), f"{b.name} reference"))
            for i in range(seeds):
                if _key("run", b.name, preset, i) not in done:
                    todo.append((run_one, (b.name, preset, i, str(out)), f"{b.name} seed {i}"))
        # (a cross-play pair needs its two runs' models: played after every run)
        pairs = [
            (cross_one, (b.name, preset, i, str(out)), f"{b.name} seeds {i} × {i + 1}")
            for b in chosen
            if b.cross is not None
            for i in range(seeds - 1)
            if _key("cross", b.name, preset, [i, i + 1]) not in done
        ]
        total = len(todo) + len(pairs)
        bar = tqdm(total=total, desc="baselines", unit="run", disable=None if progress is None else not progress)
        try:
            _execute(executor, todo, store, bar)
            _execute(executor, pairs, store, bar)
        finally:
            bar.close()
        store.compact()
        records = list(store.load(_check_record).values())
    return write_report(out, chosen, records, preset=preset, seeds=seeds, not_run=not_run)


def not_installed(chosen: Sequence[Baseline]) -> dict[str, str]:
    """The baselines of ``chosen`` that need what is not installed here: name → the one-line reason."""
    reasons = {b.name: b.missing() for b in chosen if b.missing is not None}
    return {name: why for name, why in reasons.items() if why}


def _execute(
    executor: Any, todo: Sequence[tuple[Callable[..., dict[str, Any]], tuple[Any, ...], str]], store: Any, bar: Any
) -> None:
    """Run ``todo``'s calls on ``executor``, each record appended to ``store`` as it comes."""
    from eq_env.core.executors import Call

    if not todo:
        return
    if executor.runs_inline(len(todo)):
        for fn, args, _ in todo:
            store.append(fn(*args))
            bar.update(1)
    else:
        calls: list[Call] = [((fn, args), {}) for fn, args, _ in todo]
        for record in executor.map_unordered(_call, calls, [name for *_, name in todo]):
            store.append(record)
            bar.update(1)


def _call(fn: Callable[..., dict[str, Any]], args: tuple[Any, ...]) -> dict[str, Any]:
    return fn(*args)


# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------
def _current(
    chosen: Sequence[Baseline], records: Sequence[Mapping[str, Any]], preset: str, seeds: int
) -> list[Mapping[str, Any]]:
    """The records the table is made of: of a chosen baseline at ``preset``, within the first ``seeds`` runs,
    and under the baseline's key as it is now (a run recorded before its budget, configuration or the package
    changed stays in results.jsonl, and out of the table)."""
    names = {b.name for b in chosen}
    kept = []
    for r in records:
        if r.get("preset") != preset or r.get("baseline") not in names:
            continue
        if r["kind"] == "run" and r["index"] < seeds:
            seed: int | list[int] | None = r["index"]
        elif r["kind"] == "cross" and r["pair"][1] < seeds:
            seed = list(r["pair"])
        elif r["kind"] == "reference":
            seed = None
        else:
            continue
        if r["key"] == _key(r["kind"], r["baseline"], preset, seed):
            kept.append(r)
    return kept


def _rows(chosen: Sequence[Baseline], records: Sequence[Mapping[str, Any]], preset: str, seeds: int) -> list[dict]:
    runs: dict[str, list[Mapping[str, Any]]] = {}
    refs: dict[str, Mapping[str, Any]] = {}
    crosses: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        if r.get("preset") != preset:
            continue
        if r["kind"] == "run" and r["index"] < seeds:
            runs.setdefault(r["baseline"], []).append(r)
        elif r["kind"] == "reference":
            refs[r["baseline"]] = r
        elif r["kind"] == "cross" and r["pair"][1] < seeds:
            crosses.setdefault(r["baseline"], []).append(r)
    rows = []
    for b in chosen:
        mine = sorted(runs.get(b.name, []), key=lambda r: r["index"])
        reference = _number(refs[b.name]["metrics"], b.metric) if b.name in refs else math.nan
        for mode in b.modes:
            values = [_number(r[mode], b.metric) for r in mine]
            center = iqm(values)
            low, high = bootstrap_interval([values])
            row: dict[str, Any] = {
                "baseline": b.name,
                "game": b.game,
                "setting": b.setting,
                "learner": b.learner,
                "mode": mode,
                "metric": b.metric,
                "seeds": len(values),
                "eval_episodes": mine[0]["eval_episodes"] * len(mine[0]["eval_seeds"]) if mine else 0,
                "iqm": center,
                "low": low,
                "high": high,
                "mean": float(np.mean(values)) if values else math.nan,
                "reference_label": b.reference_label,
                "reference": reference,
                "ratio": center / reference if reference else math.nan,
                "ratio_low": low / reference if reference else math.nan,
                "ratio_high": high / reference if reference else math.nan,
                "values": values,
            }
            for m in b.shown:
                row[m] = _nanmean([_number(r[mode], m) for r in mine])
                row[f"reference_{m}"] = _number(refs[b.name]["metrics"], m) if b.name in refs else math.nan
            if b.cross is not None and mode == "greedy":  # (the pairs' mean headline metric, over seeds−1 pairs)
                row["cross_play"] = _nanmean([_number(r["greedy"], b.metric) for r in crosses.get(b.name, [])])
                row["reference_cross_play"] = reference
            rows.append(row)
    return rows


def _aggregate(rows: Sequence[Mapping[str, Any]], mode: str) -> tuple[float, float, float, int]:
    """IQM of every run's ratio to its reference (runs pooled) with the stratified bootstrap interval."""
    groups = [[v / r["reference"] for v in r["values"]] for r in rows if r["mode"] == mode and r["reference"]]
    groups = [g for g in groups if g]
    if not groups:
        return math.nan, math.nan, math.nan, 0
    low, high = bootstrap_interval(groups)
    return iqm([v for g in groups for v in g]), low, high, len(groups)


def _fmt(x: float, digits: int = 3) -> str:
    return "—" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _table(rows: Sequence[Mapping[str, Any]]) -> str:
    from eq_env.core.report import markdown_table, no_negative_zeros

    lines = []
    for r in rows:
        extra = "; ".join(
            f"{m} {_fmt(r[m], 2)} (ref. {_fmt(r[f'reference_{m}'], 2)})"
            for m in r
            if m not in _ROW_FIELDS and not m.startswith("reference_") and m != "values"
        )
        lines.append(
            [
                r["setting"],
                r["learner"],
                r["mode"],
                f"{r['metric']} {_fmt(r['iqm'])} [{_fmt(r['low'])}, {_fmt(r['high'])}]",
                f"{r['reference_label']} {_fmt(r['reference'])}",
                f"{_fmt(r['ratio'], 2)} [{_fmt(r['ratio_low'], 2)}, {_fmt(r['ratio_high'], 2)}]",
                str(r["seeds"]),
                extra or "",
            ]
        )
    headers = ["setting", "learner", "policy", "IQM [95% CI]", "reference", "ratio [95% CI]", "seeds", "also"]
    return no_negative_zeros(markdown_table(headers, lines))


_ROW_FIELDS = {
    "baseline",
    "game",
    "setting",
    "learner",
    "mode",
    "metric",
    "seeds",
    "eval_episodes",
    "iqm",
    "low",
    "high",
    "mean",
    "reference_label",
    "reference",
    "ratio",
    "ratio_low",
    "ratio_high",
}


def _curves(path: Path, chosen: Sequence[Baseline], records: Sequence[Mapping[str, Any]], preset: str) -> None:
    from eq_env.core.report import plot_lines

    panels = []
    for b in chosen:
        mine = [r for r in records if r["kind"] == "run" and r["baseline"] == b.name and r["preset"] == preset]
        curves = [r["curve"] for r in mine if r["curve"]]
        if not curves:
            continue
        length = min(len(c) for c in curves)  # (the same budget: the same rollouts, so the same x)
        x = [curves[0][i][0] for i in range(length)]
        ys = np.array([[from_json_number(c[i][1]) for i in range(length)] for c in curves])
        mean = ys.mean(axis=0)
        band = np.array([bootstrap_interval([ys[:, i]], "mean") for i in range(length)])
        panels.append(
            {
                "title": f"{b.setting} ({len(curves)} seeds)",
                "ylabel": b.curve,
                "series": [
                    {
                        "label": b.learner,
                        "x": x,
                        "y": mean.tolist(),
                        "yerr": [np.maximum(mean - band[:, 0], 0).tolist(), np.maximum(band[:, 1] - mean, 0).tolist()],
                        "style": {"fmt": "-", "capsize": 0, "alpha": 0.8},
                    }
                ],
            }
        )
    if panels:
        plot_lines(
            path,
            panels,
            xlabel="environment steps",
            title="learning curves: mean over seeds, 95% bootstrap interval (each panel's y as labelled; "
            "training rewards as the learner gets them)",
        )


def _ratios(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Each baseline's IQM / reference with its interval, greedy and sampled: a row per baseline."""
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, safe in workers

    names = [r["baseline"] for r in rows if r["mode"] == "greedy"]
    if not names:
        return
    fig = Figure(figsize=(8.0, 1.2 + 0.32 * len(names)), layout="constrained")
    ax = fig.subplots()
    place = {name: len(names) - 1 - i for i, name in enumerate(names)}
    for k, mode in enumerate(MODES):
        mine = [r for r in rows if r["mode"] == mode]  # (a greedy-only baseline has no sampled row)
        y = [place[r["baseline"]] + (0.5 - k) * 0.3 for r in mine]
        x = [r["ratio"] for r in mine]
        low = [max(r["ratio"] - r["ratio_low"], 0) if not math.isnan(r["ratio"]) else 0 for r in mine]
        high = [max(r["ratio_high"] - r["ratio"], 0) if not math.isnan(r["ratio"]) else 0 for r in mine]
        ax.errorbar(x, y, xerr=[low, high], fmt="o", capsize=3, markersize=4, label=mode)
    ax.axvline(1.0, linestyle="--", linewidth=1, color="gray", label="the reference")
    ax.set_yticks(range(len(names)), list(reversed(names)), fontsize=8)
    ax.set_xlabel("IQM over seeds / the reference's score (95% bootstrap interval)")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower left")
    fig.suptitle("each baseline's score as a ratio to its reference", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)


def write_report(
    out: Path,
    chosen: Sequence[Baseline],
    records: Sequence[Mapping[str, Any]],
    *,
    preset: str,
    seeds: int,
    not_run: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``baselines.csv``, ``baselines.md``, ``curves.png``, ``ratios.png`` and ``summary.md`` from the records
    (``not_run``: the chosen baselines left out, name → why, said in the summary)."""
    from eq_env.core.report import write_csv
    from eq_env.version import __version__

    records = _current(chosen, records, preset, seeds)
    rows = _rows(chosen, records, preset, seeds)
    columns = list(dict.fromkeys(c for r in rows for c in r if c != "values"))  # (rows' metrics differ)
    write_csv(out / "baselines.csv", [{k: v for k, v in r.items() if k != "values"} for r in rows], columns)
    table = _table(rows)
    (out / "baselines.md").write_text(table + "\n")
    _curves(out / "curves.png", chosen, records, preset)
    _ratios(out / "ratios.png", rows)
    aggregate = {mode: _aggregate(rows, mode) for mode in MODES}
    budgets = "\n".join(
        f"| {b.name} | {b.budgets[preset].timesteps} {b.unit} | {b.budgets[preset].eval_episodes} × {len(EVAL_SEEDS)} |"
        for b in chosen
    )
    # (a TorchRL row trains on one environment, seeded 10·i once: it continues its own generator)
    one_env = "; a TorchRL row on one environment seeded 10·i" if any(b.unit == TORCHRL_UNIT for b in chosen) else ""
    lines = [
        f"# RL baselines (eq_env {__version__}, preset {preset})",
        "",
        f"{seeds} training seed(s) per baseline (seed i trains on seeds 10·i … 10·i + 7{one_env}), each model "
        f"evaluated on held-out seeds {', '.join(map(str, EVAL_SEEDS))}: greedy (the most likely action) and sampled "
        "(drawn from the policy's distribution), each one number per run. IQM: interquartile mean over the "
        "seeds; [95% CI]: percentile bootstrap over the seeds (2,000 resamples); ratio: IQM / the reference's "
        "score on the same evaluation.",
        "",
        table,
        "",
        "Aggregate over the baselines (IQM of every run's ratio to its reference, runs pooled; 95% stratified "
        "bootstrap interval, seeds resampled within each baseline):",
        "",
    ]
    for mode, (center, low, high, count) in aggregate.items():
        lines.append(f"* {mode}: {_fmt(center, 3)} [{_fmt(low, 3)}, {_fmt(high, 3)}] over {count} baseline(s)")
    lines += [
        "",
        "![learning curves](curves.png)",
        "",
        "![ratios to the references](ratios.png)",
        "",
        "| baseline | training per run | evaluation episodes (per seed × seeds) |",
        "|---|---|---|",
        budgets,
        "",
    ]
    if not_run:
        lines += ["Not run here (each needs what is not installed):", ""]
        lines += [f"* {name}: {why}" for name, why in not_run.items()]
        lines.append("")
    (out / "summary.md").write_text("\n".join(lines))
    return {"rows": rows, "aggregate": aggregate, "not_run": dict(not_run or {})}


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
def _arguments(parser: argparse.ArgumentParser) -> None:
    from eq_env.core.executors import BACKENDS

    parser.add_argument("--out", type=out_dir, help="directory for results.jsonl, the models, tables and figures")
    parser.add_argument(
        "--preset", choices=PRESETS, default="full", help="full (default): budgets that learn; quick: small ones"
    )
    parser.add_argument(
        "--seeds", type=int_in(1, 99), help="training seeds per baseline (default 5; 2 with --preset quick)"
    )
    parser.add_argument(
        "--only", action="append", default=[], metavar="PREFIX", help="only the baselines whose names start so"
    )
    parser.add_argument("--list", action="store_true", help="list the baselines and their budgets, and stop")
    parser.add_argument("--backend", choices=BACKENDS, default="local", help="local (default) or ray")
    parser.add_argument("--jobs", type=int_in(1, 1024), help="parallel runs (local: processes; default 1)")
    parser.add_argument("--ray-address", help="with --backend ray: a running cluster's HOST:PORT")


def _run(args: argparse.Namespace) -> int:
    from eq_env.core.executors import executor_from_args

    seeds = args.seeds or (2 if args.preset == "quick" else 5)
    chosen = select(args.preset, args.only)
    if args.list:
        not_run = not_installed(chosen)
        for b in chosen:
            budget = b.budgets[args.preset]
            print(
                f"{b.name}  ({b.learner}; {budget.timesteps} {b.unit} × {seeds} seeds; reference: {b.reference_label})"
                + (f"  [not run here: {not_run[b.name]}]" if b.name in not_run else "")
            )
        return 0
    if args.out is None:
        raise ValueError("--out is required (or --list)")
    executor = executor_from_args(args.backend, args.jobs, args.ray_address, default_jobs=1)
    result = run_baselines(args.out, preset=args.preset, seeds=seeds, only=args.only, executor=executor)
    print((Path(args.out) / "baselines.md").read_text(), end="")
    for mode, (center, low, high, count) in result["aggregate"].items():
        print(f"aggregate ratio to the references, {mode}: IQM {_fmt(center)} [{_fmt(low)}, {_fmt(high)}] ({count})")
    for name, why in result["not_run"].items():
        print(f"not run: {name}: {why}")
    print(f"wrote results.jsonl, baselines.csv, baselines.md, curves.png, ratios.png and summary.md to {args.out}")
    return 0


COMMAND = Command(
    "baselines",
    "train every game's RL baselines on several seeds and write the baseline table",
    _arguments,
    _run,
    "Train each baseline (a game's setting with a learner) on --seeds training seeds, evaluate each model on "
    "held-out seeds greedy and sampled, and write the table (interquartile mean over seeds, bootstrap "
    "intervals, the ratio to the game's reference policy), learning curves and summary.md into --out. "
    "Results are recorded as they finish: the same command run again resumes.",
    "what finished is in results.jsonl; run the same command again to go on",
)
