"""Generic Stable-Baselines3 plumbing for any game's single-agent view: the algorithms, a training loop
with a progress bar and a learning curve, and where a trained model is saved.

A game's RL module (e.g. :mod:`eq_env.baselines.exchange_audit.rl`) builds its views and hyperparameters and
calls :func:`learn`; what it saves is its own. Training is single-threaded (``torch.set_num_threads(1)``):
on a couple of cores, the small networks of these baselines run far slower spread over threads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ALGOS", "learn", "sb3_class", "steps_run", "write_curve"]

ALGOS = ("ppo", "maskable_ppo", "dqn")


def sb3_class(algo: str) -> Any:
    """The SB3 (or sb3-contrib) class of ``algo``."""
    if algo == "ppo":
        from stable_baselines3 import PPO

        return PPO
    if algo == "dqn":
        from stable_baselines3 import DQN

        return DQN
    if algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")


def steps_run(timesteps: int, hyperparameters: Mapping[str, Any], n_envs: int) -> int:
    """The environment steps ``learn(total_timesteps=timesteps)`` really takes: it stops at the end of the
    rollout (PPO: ``n_steps`` per environment; DQN: ``train_freq`` steps per environment) that reaches it."""
    per_env = hyperparameters["n_steps"] if "n_steps" in hyperparameters else hyperparameters.get("train_freq", 1)
    chunk = int(per_env) * n_envs
    return -(-timesteps // chunk) * chunk


def learn(
    make_env: Callable[[], Any],
    *,
    algo: str,
    timesteps: int,
    seed: int,
    hyperparameters: Mapping[str, Any],
    n_envs: int = 8,
    progress: bool | None = None,
    desc: str = "train",
    make_vec_env: Callable[[int], Any] | None = None,
) -> tuple[Any, list[tuple[int, float]], float]:
    """Train an ``algo`` model on ``n_envs`` copies of ``make_env()`` (one batched forward pass for all,
    seeded ``seed``, ``seed + 1``...). Returns (the model, the learning curve — mean episode reward at
    the end of each rollout —, seconds).

    ``make_vec_env(n_envs)``, when given, builds a native vectorised environment (an SB3 ``VecEnv`` that
    steps all ``n_envs`` at once, seeded the same way) used instead of a ``DummyVecEnv`` of ``make_env()``."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor
    from tqdm.auto import tqdm

    torch.set_num_threads(1)
    env: Any
    if make_vec_env is not None:
        env = VecMonitor(make_vec_env(n_envs))  # episode rewards for the learning curve, as Monitor gives
    else:
        env = DummyVecEnv([lambda: Monitor(make_env())] * n_envs)
    env.seed(seed)
    env.reset()
    curve: list[tuple[int, float]] = []

    class Curve(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            # SB3 collects whole rollouts, so it runs past ``timesteps`` to the end of the last one
            self.bar = tqdm(total=steps_run(timesteps, hyperparameters, n_envs), desc=desc, unit="step",
                            disable=None if progress is None else not progress)  # fmt: skip

        def _on_step(self) -> bool:
            self.bar.update(self.model.n_envs)
            return True

        def _on_rollout_end(self) -> None:
            buffer = self.model.ep_info_buffer
            if buffer:
                curve.append((self.num_timesteps, float(np.mean([e["r"] for e in buffer]))))

        def _on_training_end(self) -> None:
            self.bar.close()

    model = sb3_class(algo)("MlpPolicy", env, seed=seed, verbose=0, device="cpu", **hyperparameters)
    started = time.perf_counter()
    model.learn(total_timesteps=timesteps, callback=Curve())
    return model, curve, time.perf_counter() - started


def write_curve(out: Path, curve: list[tuple[int, float]], title: str) -> None:
    """``learning_curve.csv`` and ``learning_curve.png`` in ``out``."""
    from eq_env.core.report import plot_lines, write_csv

    write_csv(out / "learning_curve.csv", [{"timesteps": t, "mean_reward": r} for t, r in curve],
              ["timesteps", "mean_reward"])  # fmt: skip
    if curve:
        plot_lines(out / "learning_curve.png",
                   [{"ylabel": "mean episode reward", "series": [{"label": title, "x": [t for t, _ in curve],
                                                                 "y": [r for _, r in curve], "style": {"fmt": "-"}}]}],
                   xlabel="timesteps")  # fmt: skip
