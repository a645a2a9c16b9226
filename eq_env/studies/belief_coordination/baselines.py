"""Belief coordination's rows of ``eq-env baselines`` (:mod:`eq_env.studies.baselines`).

The game as ``eq-env train --env belief-coordination`` plays it: 3 executors choosing (T, p) on the grid,
the sensitive simulated answerer, the majority coordinator. Two learners:

* **one executor's deviation** (``executor``): SB3 PPO in ``executor_0``'s seat, the other executors
  ``fixed`` (:func:`eq_env.baselines.belief_coordination.rl.train`) — the review's second falsifier as a
  learning problem. The reference is the seat's best *fixed* grid point against the same team, chosen on the
  evaluation itself (so an upper bound among constant choices); PPO, which sees the question's features, may
  beat it. Beside it: ``no_deviation``, the team's reward with the seat played as ``fixed`` plays it.
* **the team** (``econ``): ECON (:func:`eq_env.baselines.belief_coordination.econ.train_econ`: a belief
  network per executor and a QMIX mixer), which acts greedily — a value-based learner has no distribution to
  sample, so the row has no sampled column. The reference is the tuned fixed point: the one grid point that,
  played by every executor, scores best on 4,096 training questions (the ``tuned`` method of ``eq-env
  reproduce --env belief-coordination``), scored on the same held-out questions.

* **the whole team** (``team-torchrl``): every executor (one actor they share) and the coordinator (its own,
  choosing whose answer is committed) trained at once with TorchRL's MAPPO on the numeric observation mode
  (needs the ``compat`` extra) — the coordinator's learner. The reference is the tuned fixed point with the
  majority coordinator, played in the game's environment on the same held-out seeds.

The headline metric is the shared reward per question; accuracy is shown beside it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.studies.baselines import (
    TORCHRL_UNIT,
    Baseline,
    Bound,
    Budget,
    means,
    torchrl_fingerprint,
    torchrl_missing,
    torchrl_run,
)

__all__ = ["BASELINES", "CONFIG"]

CONFIG = BeliefCoordinationConfig(action_space="grid")  # eq-env train --env belief-coordination's game
TEAM = "fixed"  # the executors the trained seat deviates from
POOL = 4096  # the tuned fixed point's training questions


def _view(config: BeliefCoordinationConfig) -> Any:
    from eq_env.belief_coordination.views import BeliefCoordinationExecutorEnv

    return BeliefCoordinationExecutorEnv(TEAM, "majority", agent="executor_0", config=config)


def train_executor(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, Any]:
    """``executor_0`` trained with PPO against the ``fixed`` team, scored greedy and sampled."""
    from eq_env.baselines.belief_coordination.rl import train

    result = train(
        out,
        executors=TEAM,
        config=CONFIG,
        timesteps=budget.timesteps,
        seed=seed,
        eval_seeds=eval_seeds,
        eval_episodes=budget.eval_episodes,
        progress=False,
    )
    no_deviation = means(result.evaluations[f"no deviation ({TEAM})"])["reward"]
    return {
        "greedy": {**means(result.evaluations["greedy"]), "no_deviation": no_deviation},
        "sampled": {**means(result.evaluations["sampled"]), "no_deviation": no_deviation},
        "curve": result.curve,
        "steps_run": result.steps_run,
    }


def best_fixed_point(name: str, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, float]:
    """The seat's best constant grid point against the team, on the evaluation itself (every grid point
    played on the same questions; the best one's metrics)."""
    from eq_env.baselines.belief_coordination.rl import evaluate_seat

    view = _view(CONFIG)

    def constant(g: int) -> Any:
        return lambda v: g

    scored = [
        evaluate_seat(view, constant(g), seeds=eval_seeds, episodes=budget.eval_episodes, reset=lambda s: None)
        for g in range(CONFIG.grid_size)
    ]
    best = max(range(len(scored)), key=lambda g: scored[g]["reward"][0])
    no_deviation = evaluate_seat(
        view, lambda v: v.team_action(), seeds=eval_seeds, episodes=budget.eval_episodes, reset=lambda s: None
    )
    return {**means(scored[best]), "no_deviation": no_deviation["reward"][0]}


def _held_out(config: BeliefCoordinationConfig, budget: Budget, eval_seeds: Sequence[int]) -> list[Any]:
    from eq_env.belief_coordination import batch as engine

    return [engine.episodes_batch(config, s, range(budget.eval_episodes)) for s in eval_seeds]


def _score(config: BeliefCoordinationConfig, batches: Sequence[Any], choose: Any) -> dict[str, float]:
    """Reward and accuracy, the mean over the evaluation seeds of each seed's mean."""
    from eq_env.belief_coordination import batch as engine

    outcomes = [engine.play(b, config, choose) for b in batches]
    return {
        "reward": float(np.mean([o.reward.mean() for o in outcomes])),
        "accuracy": float(np.mean([o.ts.mean() for o in outcomes])),
    }


def train_team(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, Any]:
    """ECON trained for ``budget.timesteps`` gradient steps (of 256 questions), scored greedily."""
    from eq_env.baselines.belief_coordination.econ import ECONHyper, train_econ

    hyper = replace(ECONHyper(), steps=budget.timesteps, eval_every=max(1, budget.timesteps // 15))
    econ, curve = train_econ(CONFIG, hyper, seed=seed, progress=False)
    econ.save(out)
    greedy = _score(CONFIG, _held_out(CONFIG, budget, eval_seeds), econ.chooser())
    return {
        "greedy": greedy,
        "sampled": {},  # (a value-based learner acts greedily: nothing to sample)
        # x: questions trained on; y: the greedy team's held-out reward on ECON's own curve seed
        "curve": [(row["step"] * hyper.batch_size, row["reward"]) for row in curve],
        "steps_run": budget.timesteps * hyper.batch_size,
    }


def tuned_fixed_point(name: str, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, float]:
    """Every executor at the one grid point that scores best on :data:`POOL` training questions."""
    from eq_env.belief_coordination import batch as engine
    from eq_env.studies.belief_coordination.reproduce import _fixed, _tuned

    pool = engine.training_batch(CONFIG, np.random.default_rng(np.random.SeedSequence(0, spawn_key=(43,))), POOL)
    t, p = (float(x) for x in CONFIG.grid_point(_tuned(CONFIG, pool)))
    return _score(CONFIG, _held_out(CONFIG, budget, eval_seeds), _fixed(t, p))


def train_torchrl_team(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, Any]:
    """Every executor (one shared actor) and the coordinator (its own) trained at once with TorchRL MAPPO on the
    numeric observation mode, scored greedy and sampled in the game's environment."""
    from eq_env.belief_coordination.spec import ID

    return torchrl_run(ID, CONFIG, out, seed, budget, eval_seeds)


def tuned_team(name: str, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, float]:
    """The tuned fixed point (as :func:`tuned_fixed_point` finds it) played by every executor with the majority
    coordinator, in the game's environment on the same held-out seeds as the learners."""
    from eq_env.belief_coordination import batch as engine
    from eq_env.belief_coordination.spec import ID
    from eq_env.core.runner import evaluate
    from eq_env.studies.belief_coordination.reproduce import _tuned

    pool = engine.training_batch(CONFIG, np.random.default_rng(np.random.SeedSequence(0, spawn_key=(43,))), POOL)
    t, p = (float(x) for x in CONFIG.grid_point(_tuned(CONFIG, pool)))
    policies = {"executor": f"fixed:temperature={t!r},penalty={p!r}", "coordinator": "majority"}
    ev = evaluate(ID, CONFIG, policies, episodes=budget.eval_episodes, seeds=list(eval_seeds))
    return means(ev.summary)


_FINGERPRINT = json.dumps([TEAM, CONFIG.to_dict()], sort_keys=True)

BASELINES = (
    Baseline(
        name="belief-coordination/executor",
        game="belief-coordination",
        setting="belief coordination executor_0 vs fixed team, N = 3",
        learner="SB3 PPO",
        metric="reward",
        reference_label="best fixed grid point",
        train=Bound(train_executor, "belief-coordination/executor"),
        reference=Bound(best_fixed_point, "belief-coordination/executor"),
        budgets={"full": Budget(20_000, 500), "quick": Budget(512, 10)},
        shown=("accuracy", "no_deviation"),
        fingerprint=_FINGERPRINT,
    ),
    Baseline(
        name="belief-coordination/econ",
        game="belief-coordination",
        setting="belief coordination team (ECON), N = 3",
        learner="ECON (QMIX, ours)",
        metric="reward",
        reference_label="tuned fixed point",
        train=Bound(train_team, "belief-coordination/econ"),
        reference=Bound(tuned_fixed_point, "belief-coordination/econ"),
        budgets={"full": Budget(1500, 500), "quick": Budget(50, 50)},
        shown=("accuracy",),
        fingerprint=_FINGERPRINT,
        modes=("greedy",),
        unit="gradient steps of 256 questions",
        curve="held-out reward, greedy (ECON's own curve seed)",
    ),
    Baseline(
        name="belief-coordination/team-torchrl",
        game="belief-coordination",
        setting="belief coordination team, executors and coordinator learning, N = 3",
        learner="TorchRL MAPPO, the executors' shared actor and centralised critic, the coordinator's own",
        metric="reward",
        reference_label="tuned fixed point, majority",
        train=Bound(train_torchrl_team, "belief-coordination/team-torchrl"),
        reference=Bound(tuned_team, "belief-coordination/team-torchrl"),
        budgets={"full": Budget(40_000, 500), "quick": Budget(2000, 20)},
        shown=("accuracy",),
        fingerprint=torchrl_fingerprint("team-torchrl", CONFIG),
        unit=TORCHRL_UNIT,
        curve="training episodes' return, every agent summed",
        missing=torchrl_missing,
    ),
)
