"""One seat of the Einstein puzzle trained with Stable-Baselines3, and the trained model as a policy.

:func:`train` trains MaskablePPO (sb3-contrib; or PPO) in one seat of the single-agent view
``eq_env/EinsteinPuzzle-v0`` (:mod:`eq_env.einstein_puzzle.views`: the seat's numeric observation, the
legal actions as ``action_masks()``) with a fixed partner policy in the other seat (default the
decentralised ``planner``), then evaluates it on held-out seeds through the runner — greedy (the most
likely legal action), sampled (drawn from the model's masked distribution), and ``random`` legal play
in the same seat as the baseline — with the partner unchanged. It writes into a directory:

* ``model.zip`` (the SB3 model) and ``policy.json`` (seat, algorithm, the game configuration, the
  partner, seed, steps);
* ``learning_curve.csv`` and ``learning_curve.png`` (mean episode reward per rollout);
* ``eval.json`` (the runner's metrics of each evaluation, written as each finishes).

``eq-env train --env einstein-puzzle --backend sb3 --out DIR`` runs it. The saved model is then the
policy ``sb3:path=DIR`` of either seat (``eq-env play --env einstein-puzzle --player_0 sb3:path=DIR``;
``sb3:path=DIR,deterministic=false`` samples): it reads the numeric observation the view reads and
applies the observation's action mask. Trained in one seat, it plays best in that one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.baselines.sb3 import SB3ViewPolicy, ViewTraining, check_view_training, train_view
from eq_env.core.policy import Policy
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.spaces import layout, n_actions
from eq_env.einstein_puzzle.spec import ID

__all__ = [
    "EVAL_SEEDS",
    "METRICS",
    "SB3_SUMMARY",
    "SELF",
    "SELF_METRICS",
    "SB3Seat",
    "hyperparameters",
    "sb3_policy",
    "train",
]

EVAL_SEEDS = (1000, 1001, 1002)  # held out: training's environments play seeds seed, seed + 1, ...
METRICS = ("success_rate", "steps", "partial_success", "rejected_placements", "rule_inconsistent")
SELF_METRICS = ("success_rate", "steps", "rejected_placements", "shares", "asks")  # self-play: what it says too
SEATS = ("player_0", "player_1")
SELF = "self"  # the partner of self-play: the policy being trained, in both seats


def hyperparameters(timesteps: int, n_envs: int) -> dict[str, Any]:
    """PPO's settings for the view: rollouts of about 512 steps in all (games of 8 to 30 turns; fewer when
    fewer steps are asked), minibatches of 128, SB3's other defaults (which learn four-object puzzles with the
    planner in 12,000 steps)."""
    n_steps = max(8, min(512, timesteps) // n_envs)
    return {"n_steps": n_steps, "batch_size": min(128, n_steps * n_envs)}


def _observe(observation: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The view's numeric observation and action mask, from the environment's."""
    return np.asarray(observation["observation"], np.float32), np.asarray(observation["action_mask"], bool)


def _env_action(action: int, observation: Mapping[str, Any], meta: Mapping[str, Any]) -> int:
    return action  # (the view's action space is the environment's)


def sb3_policy(path: str, role: str, deterministic: bool = True) -> SB3ViewPolicy:
    """A seat trained with ``eq-env train --env einstein-puzzle --backend sb3``, loaded from its directory."""
    return SB3ViewPolicy(path, role, env=ID, observe=_observe, env_action=_env_action, deterministic=deterministic)


class SB3Seat:
    """The factory ``sb3:path=DIR[,deterministic=false]`` of one seat (a module-level class: it pickles)."""

    def __init__(self, role: str) -> None:
        self.role = role

    def __call__(self, path: str, deterministic: bool = True) -> SB3ViewPolicy:
        return sb3_policy(path, self.role, deterministic)


SB3_SUMMARY = "A seat trained with eq-env train --env einstein-puzzle --backend sb3, loaded from its directory."


def train(
    out: str | Path,
    *,
    role: str = "player_0",
    partner: str = "planner",
    config: EinsteinPuzzleConfig | None = None,
    algo: str = "maskable_ppo",
    timesteps: int = 20_000,
    seed: int = 0,
    n_envs: int = 8,
    eval_seeds: Sequence[int] = EVAL_SEEDS,
    eval_episodes: int = 100,
    progress: bool | None = None,
    on_evaluation: Any = None,
) -> ViewTraining:
    """Train seat ``role`` with ``partner`` (a policy spec) in the other seat, save it into ``out`` and
    evaluate it (see the module docstring). Environment ``i`` of ``n_envs`` plays seed ``seed + i``'s
    games; the evaluation plays ``eval_episodes`` games of each of ``eval_seeds``, which training never
    sees. ``on_evaluation(result)`` is called after each evaluation.

    ``partner="self"``: self-play — one policy in both seats (:class:`~eq_env.einstein_puzzle.views.
    EinsteinPuzzleSelfPlayEnv`), evaluated with itself in both seats (greedy, sampled), then with the
    planner as the partner it never trained with (the zero-shot question), beside random play in both."""
    from eq_env.core.policy import make_policy
    from eq_env.core.runner import evaluate
    from eq_env.einstein_puzzle.views import EinsteinPuzzleEnv, EinsteinPuzzleSelfPlayEnv

    if role not in SEATS:
        raise ValueError(f"role must be one of {SEATS}, got {role!r}")
    check_view_training(
        algo=algo, timesteps=timesteps, seed=seed, n_envs=n_envs, eval_seeds=eval_seeds, eval_episodes=eval_episodes
    )
    config = config or EinsteinPuzzleConfig()
    other = SEATS[1 - SEATS.index(role)]
    if not isinstance(partner, str):
        raise ValueError(f"partner must be a policy spec (it is saved with the model), got {partner!r}")
    if partner != SELF:
        try:
            make_policy(partner, other, ID)  # refused now, not after the training
        except ValueError as err:
            raise ValueError(f"partner: {err}") from None

    def run(policies: dict[str, Policy | str]) -> dict[str, tuple[float, float]]:
        return evaluate(ID, config, policies, episodes=eval_episodes, seeds=list(eval_seeds), progress=progress).summary

    def both(path: Path, deterministic: bool) -> dict[str, Policy | str]:
        return {seat: sb3_policy(str(path), seat, deterministic) for seat in SEATS}

    make_env: Any
    if partner == SELF:
        evaluations = [
            ("self-play, greedy", lambda path: run(both(path, True))),
            ("self-play, sampled", lambda path: run(both(path, False))),
            ("with planner, greedy", lambda path: run({role: sb3_policy(str(path), role), other: "planner"})),
            (
                "with planner, sampled",
                lambda path: run({role: sb3_policy(str(path), role, False), other: "planner"}),
            ),
            ("random (baseline)", lambda path: run(dict.fromkeys(SEATS, "random"))),
        ]
        make_env = lambda: EinsteinPuzzleSelfPlayEnv(config=config)  # noqa: E731
    else:
        evaluations = [
            ("greedy", lambda path: run({role: sb3_policy(str(path), role), other: partner})),
            ("sampled", lambda path: run({role: sb3_policy(str(path), role, False), other: partner})),
            ("random (baseline)", lambda path: run({role: "random", other: partner})),
        ]
        make_env = lambda: EinsteinPuzzleEnv(partner, seat=role, config=config)  # noqa: E731
    meta = {
        "config": config.to_dict(),
        "partner": partner,
        "observation_size": layout(config.n).size,
        "actions": n_actions(config.n),
    }
    return train_view(
        out,
        make_env,
        env=ID,
        role=role,
        algo=algo,
        timesteps=timesteps,
        seed=seed,
        n_envs=n_envs,
        hyperparameters=hyperparameters(timesteps, n_envs),
        meta=meta,
        evaluations=evaluations,
        eval_seeds=eval_seeds,
        eval_episodes=eval_episodes,
        progress=progress,
        on_evaluation=on_evaluation,
    )
