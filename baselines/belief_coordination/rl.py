"""One executor of belief coordination trained with Stable-Baselines3, and the trained model as a policy.

:func:`train` trains PPO (or MaskablePPO: every grid point is legal, so it learns as PPO does) on the view
``eq_env/BeliefCoordinationExecutor-v0`` (:mod:`eq_env.belief_coordination.views`): one executor choosing
its (T, p) on the grid, the other executors and the coordinator held fixed (default ``fixed`` and
``majority``). Its best response is the most profitable unilateral deviation, the review's second
falsifier of ECON's equilibrium. It is evaluated in the same view on held-out seeds — greedy (the most
likely grid point), sampled (drawn from the model's distribution), and *no deviation* (the seat played as
the executors' policy plays it) — and the difference in reward between the trained executor and no
deviation is the deviation gain. It writes into a directory:

* ``model.zip`` (the SB3 model) and ``policy.json`` (the game configuration the model chose on, the other
  policies, seed, steps);
* ``learning_curve.csv`` and ``learning_curve.png`` (mean episode reward per rollout);
* ``eval.json`` (the metrics of each evaluation, written as each finishes).

``eq-env train --env belief-coordination --backend sb3 --out DIR`` runs it. The saved model is then the
executor policy ``sb3:path=DIR`` (``eq-env play --env belief-coordination --executor sb3:path=DIR``, every
executor playing it; ``deterministic=false`` samples): it reads the executor's features and answers the
(T, p) of the grid point it chooses, in whichever executor action space the game has (the nearest grid
point of another grid, the Box's normalised (T, p); a (T, p) outside the game's ranges is refused).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.baselines.sb3 import SB3ViewPolicy, ViewTraining, check_view_training, train_view
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.rules import EXECUTOR_FEATURES
from eq_env.belief_coordination.spec import ID

__all__ = ["EVAL_SEEDS", "METRICS", "SB3_SUMMARY", "evaluate_seat", "hyperparameters", "sb3_policy", "train"]

EVAL_SEEDS = (1000, 1001, 1002)  # held out: training's environments play seeds seed, seed + 1, ...
METRICS = ("reward", "accuracy", "alignment", "contribution", "temperature", "penalty")
SB3_SUMMARY = (
    "An executor trained with eq-env train --env belief-coordination --backend sb3, loaded from its directory."
)


def hyperparameters(timesteps: int, n_envs: int) -> dict[str, Any]:
    """PPO's settings for the view, whose episodes are a step per round (one by default): short rollouts, many
    updates, the reward undiscounted to the commit."""
    rollout = int(min(2048, max(64, timesteps // 10)))
    n_steps = max(8, rollout // n_envs)
    size = n_steps * n_envs
    batch = max(d for d in range(1, min(256, size) + 1) if size % d == 0)  # divides the rollout: no ragged batch
    return {
        "n_steps": n_steps,
        "batch_size": batch,
        "learning_rate": 1e-3,
        "n_epochs": 5,
        "ent_coef": 0.01,
        "gamma": 1.0,
        "gae_lambda": 1.0,
    }


def _observe(observation: Mapping[str, Any]) -> tuple[np.ndarray, None]:
    return np.asarray(observation["observation"], np.float32), None  # (every grid point is legal)


def _env_action(action: int, observation: Mapping[str, Any], meta: Mapping[str, Any]) -> Any:
    """The model's grid point, as the (T, p) it stands for, in the game's executor action space."""
    from eq_env.baselines.belief_coordination.scripted import as_action

    trained = BeliefCoordinationConfig.from_dict(meta["config"])
    t, p = trained.grid_point(action)
    return as_action(observation, float(t), float(p))


def sb3_policy(path: str, deterministic: bool = True) -> SB3ViewPolicy:
    """An executor trained with ``eq-env train --env belief-coordination --backend sb3``, loaded from its
    directory."""
    return SB3ViewPolicy(
        path, "executor", env=ID, observe=_observe, env_action=_env_action, deterministic=deterministic
    )


def evaluate_seat(
    view: Any,
    choose: Callable[[Any], Any],
    *,
    seeds: Sequence[int],
    episodes: int,
    reset: Callable[[int], None],
    progress: bool | None = False,
) -> dict[str, tuple[float, float]]:
    """:data:`METRICS` of ``episodes`` episodes of each of ``seeds`` in the view, this seat playing
    ``choose(view)``; ``reset(seed)`` first (the seat's policy). Mean and sample std over seeds.
    ``progress=None``: a bar per seed on a terminal, as the runner shows."""
    from tqdm.auto import tqdm

    per_seed: list[dict[str, float]] = []
    for seed in seeds:
        reset(seed)
        rows: list[dict[str, float]] = []
        view.reset(seed=seed)
        for _ in tqdm(
            range(episodes), desc=f"seed {seed}", unit="ep", disable=None if progress is None else not progress
        ):
            done = False
            while not done:
                _, reward, terminated, truncated, info = view.step(choose(view))
                done = terminated or truncated
            rows.append(
                {
                    "reward": reward,
                    "accuracy": info["ts"],
                    "alignment": info["al"],
                    "contribution": info["cc"],
                    "temperature": info["temperature"],
                    "penalty": info["penalty"],
                }
            )
            view.reset()
        per_seed.append({m: float(np.mean([r[m] for r in rows])) for m in METRICS})
    return {
        m: (
            float(np.mean([s[m] for s in per_seed])),
            float(np.std([s[m] for s in per_seed], ddof=1)) if len(per_seed) > 1 else float("nan"),
        )
        for m in METRICS
    }


def train(
    out: str | Path,
    *,
    executors: str = "fixed",
    coordinator: str = "majority",
    agent: str = "executor_0",
    config: BeliefCoordinationConfig | None = None,
    algo: str = "ppo",
    timesteps: int = 20_000,
    seed: int = 0,
    n_envs: int = 8,
    eval_seeds: Sequence[int] = EVAL_SEEDS,
    eval_episodes: int = 500,
    progress: bool | None = None,
    on_evaluation: Any = None,
) -> ViewTraining:
    """Train executor ``agent`` with the other executors playing ``executors`` and the commit ``coordinator``
    (policy specs), save it into ``out`` and evaluate it (see the module docstring). ``config`` must choose on
    the grid (default: the paper's game with ``action_space="grid"``). Environment ``i`` of ``n_envs`` plays
    seed ``seed + i``'s questions; the evaluation plays ``eval_episodes`` questions of each of ``eval_seeds``,
    which training never sees."""
    from eq_env.belief_coordination.env import ROLES_STREAMS
    from eq_env.belief_coordination.views import BeliefCoordinationExecutorEnv
    from eq_env.core.runner import agent_stream, policy_seed

    check_view_training(
        algo=algo, timesteps=timesteps, seed=seed, n_envs=n_envs, eval_seeds=eval_seeds, eval_episodes=eval_episodes
    )
    config = config or BeliefCoordinationConfig(action_space="grid")
    if config.action_space != "grid":
        raise ValueError(
            "the SB3 executor chooses on the (T, p) grid: its configuration needs action_space='grid', "
            f"got {config.action_space!r}"
        )
    for name, value in (("executors", executors), ("coordinator", coordinator)):
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a policy spec (it is saved with the model), got {value!r}")

    def make() -> BeliefCoordinationExecutorEnv:
        return BeliefCoordinationExecutorEnv(executors, coordinator, agent=agent, config=config)

    view = make()  # (a bad spec or agent is refused now, not after the training)
    index = config.executors.index(agent)

    def model(deterministic: bool) -> Callable[[Path], dict[str, tuple[float, float]]]:
        def run(path: Path) -> dict[str, tuple[float, float]]:
            policy = sb3_policy(str(path), deterministic)
            return evaluate_seat(
                view,
                lambda v: policy.act(v.agent_observation()),
                seeds=eval_seeds,
                episodes=eval_episodes,
                reset=lambda s: policy.reset(policy_seed(s, agent_stream(ROLES_STREAMS["executor"], index))),
                progress=progress,
            )

        return run

    evaluations = [
        ("greedy", model(True)),
        ("sampled", model(False)),
        (
            f"no deviation ({executors})",
            lambda path: evaluate_seat(
                view,
                lambda v: v.team_action(),
                seeds=eval_seeds,
                episodes=eval_episodes,
                reset=lambda s: None,
                progress=progress,
            ),
        ),
    ]
    meta = {
        "config": config.to_dict(),
        "agent": agent,
        "executors": executors,
        "coordinator": coordinator,
        "observation_size": EXECUTOR_FEATURES,
        "actions": config.grid_size,
    }
    return train_view(
        out,
        make,
        env=ID,
        role="executor",
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
