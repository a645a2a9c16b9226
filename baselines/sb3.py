"""Generic Stable-Baselines3 plumbing for any game's single-agent view: the algorithms, a training loop
with a progress bar and a learning curve, and where a trained model is saved.

A game's RL module (e.g. :mod:`eq_env.baselines.exchange_audit.rl`) builds its views and hyperparameters and
calls :func:`learn`; what it saves is its own. A game whose view has one ``Discrete`` action (the Einstein
puzzle's seat, a belief-coordination executor) calls :func:`train_view` instead, which saves the model,
its learning curve and its evaluations in one layout, read back by :class:`SB3ViewPolicy` (the game's
``sb3:path=DIR`` policy). Training is single-threaded (``torch.set_num_threads(1)``):
on a couple of cores, the small networks of these baselines run far slower spread over threads.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ALGOS",
    "VIEW_ALGOS",
    "SB3ViewPolicy",
    "ViewTraining",
    "check_view_training",
    "learn",
    "sb3_class",
    "steps_run",
    "train_view",
    "write_curve",
]

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
            self.bar = tqdm(
                total=steps_run(timesteps, hyperparameters, n_envs),
                desc=desc,
                unit="step",
                disable=None if progress is None else not progress,
            )

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

    write_csv(
        out / "learning_curve.csv", [{"timesteps": t, "mean_reward": r} for t, r in curve], ["timesteps", "mean_reward"]
    )
    if curve:
        plot_lines(
            out / "learning_curve.png",
            [
                {
                    "ylabel": "mean episode reward",
                    "series": [
                        {"label": title, "x": [t for t, _ in curve], "y": [r for _, r in curve], "style": {"fmt": "-"}}
                    ],
                }
            ],
            xlabel="timesteps",
        )


# ---------------------------------------------------------------------------
# One role trained on a game's single-agent view, and the saved model as a policy
# ---------------------------------------------------------------------------
VIEW_FORMAT = 1  # policy.json's "format" for a view training: bump when what is saved changes
VIEW_ALGOS = ("maskable_ppo", "ppo")  # a Discrete view: PPO, with the view's action masks or without


@dataclass
class ViewTraining:
    """What :func:`train_view` did: where it saved the model, how long it took, and its evaluations
    (label → the game's metrics as (mean, std over seeds))."""

    path: Path
    env: str
    role: str
    algo: str
    timesteps: int  # asked for; SB3 runs to the end of its last rollout, ``steps_run`` in all
    steps_run: int
    seconds: float
    curve: list[tuple[int, float]]
    evaluations: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)

    def table(self, metrics: Sequence[str]) -> str:
        """The evaluations as a Markdown table: a row per label, ``mean ± std`` of each of ``metrics``."""
        from eq_env.core.report import markdown_table, no_negative_zeros

        rows = [[label, *(_mean_std(summary.get(m)) for m in metrics)] for label, summary in self.evaluations.items()]
        return no_negative_zeros(markdown_table(["policy", *metrics], rows))


def _mean_std(value: tuple[float, float] | None) -> str:
    if value is None or math.isnan(value[0]):
        return "—"
    mean, std = value
    return f"{mean:.3f}" if math.isnan(std) else f"{mean:.3f} ± {std:.3f}"


def check_view_training(
    *, algo: str, timesteps: int, seed: int, n_envs: int, eval_seeds: Sequence[int], eval_episodes: int
) -> None:
    """A ValueError naming the argument for a bad one; the evaluation's seeds held out from training's
    (environment ``i`` trains on seed ``seed + i``)."""
    from eq_env.core.runner import check_seeds

    if algo not in VIEW_ALGOS:
        raise ValueError(f"algo must be one of {VIEW_ALGOS}, got {algo!r}")
    for name, value, low in (("timesteps", timesteps, 64), ("n_envs", n_envs, 1), ("eval_episodes", eval_episodes, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer of at least {low}, got {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    shared = sorted(s for s in set(check_seeds(eval_seeds)) if seed <= s < seed + n_envs)
    if shared:
        raise ValueError(
            f"eval seeds {','.join(map(str, shared))} would evaluate on training episodes: seed {seed} "
            f"with {n_envs} environments trains on seeds {seed}-{seed + n_envs - 1}"
        )


def train_view(
    out: str | Path,
    make_env: Callable[[], Any],
    *,
    env: str,
    role: str,
    algo: str,
    timesteps: int,
    seed: int,
    n_envs: int,
    hyperparameters: Mapping[str, Any],
    meta: Mapping[str, Any],
    evaluations: Sequence[tuple[str, Callable[[Path], dict[str, tuple[float, float]]]]],
    eval_seeds: Sequence[int],
    eval_episodes: int,
    progress: bool | None = None,
    on_evaluation: Callable[[ViewTraining], None] | None = None,
) -> ViewTraining:
    """Train ``algo`` on ``n_envs`` copies of the view ``make_env()`` (:func:`learn`), save it into ``out``,
    then run each of ``evaluations`` (label, ``fn(out) -> metrics``: ``eval_episodes`` episodes of each of
    ``eval_seeds``, which ``eval.json`` records beside them) in turn.

    ``out`` gets ``model.zip``, ``policy.json`` (``meta`` with the game, role, algorithm, seed and steps:
    what :class:`SB3ViewPolicy` reads back), ``learning_curve.csv/.png``, and, rewritten after each
    evaluation so that an interrupted one keeps the finished ones, ``eval.json`` (``seeds``, ``episodes`` and
    ``evaluations``: label → metric → mean and std over the seeds; a label says greedy or sampled). ``on_evaluation`` is
    called after each (e.g. to print it)."""
    from eq_env.core.report import json_number
    from eq_env.core.spec import env_spec

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)  # (an unwritable --out fails now, not after the training)
    model, curve, seconds = learn(
        make_env,
        algo=algo,
        timesteps=timesteps,
        seed=seed,
        hyperparameters=hyperparameters,
        n_envs=n_envs,
        progress=progress,
        desc=f"train {role} ({algo})",
    )
    model.save(out / "model.zip")
    run = int(model.num_timesteps)
    game = env_spec(env).id
    saved = {
        "format": VIEW_FORMAT,
        "env": game,
        "role": role,
        "algo": algo,
        **meta,
        "timesteps": timesteps,
        "steps_run": run,
        "seed": seed,
        "n_envs": n_envs,
        "seconds": seconds,
    }
    (out / "policy.json").write_text(json.dumps(saved, indent=2) + "\n")
    write_curve(out, curve, f"{role} ({algo})")
    result = ViewTraining(out, game, role, algo, timesteps, run, seconds, curve)
    for label, evaluate in evaluations:
        result.evaluations[label] = evaluate(out)
        (out / "eval.json").write_text(
            json.dumps(
                {
                    "seeds": list(eval_seeds),
                    "episodes": eval_episodes,  # per seed; std is over the seeds
                    "evaluations": {
                        label: {k: {"mean": json_number(m), "std": json_number(s)} for k, (m, s) in summary.items()}
                        for label, summary in result.evaluations.items()
                    },
                },
                indent=2,
            )
            + "\n"
        )
        if on_evaluation is not None:
            on_evaluation(result)
    return result


class SB3ViewPolicy:
    """A model :func:`train_view` saved, playing ``role`` of its game through the runner.

    The game's RL module says how the role's observation (as ``env.last()`` gives it) becomes the
    view's numeric observation and action mask (``observe``), and how the model's action becomes the
    environment's (``env_action``). ``deterministic``: the most likely legal action (default), else one
    drawn from the model's distribution with the policy's own generator (seeded by ``reset``: the same
    seed plays the same games).

    Args:
        path: the directory ``eq-env train`` wrote, or its ``model.zip``.
    """

    def __init__(
        self,
        path: str | Path,
        role: str,
        *,
        env: str,
        observe: Callable[[Mapping[str, Any]], tuple[np.ndarray, np.ndarray | None]],
        env_action: Callable[[int, Mapping[str, Any], Mapping[str, Any]], Any],
        deterministic: bool = True,
    ) -> None:
        from eq_env.core.spec import env_spec

        given = Path(path)
        self.path = given.parent if given.suffix == ".zip" else given
        meta_path = self.path / "policy.json"
        if not meta_path.is_file() or not (self.path / "model.zip").is_file():
            raise ValueError(
                f"{given} is not a trained model: no policy.json and model.zip there (train one with "
                f"eq-env train --env {env_spec(env).name} --backend sb3)"
            )
        try:
            self.meta: dict[str, Any] = json.loads(meta_path.read_text())
        except ValueError as err:
            raise ValueError(f"{meta_path}: not JSON ({err})") from None
        game = env_spec(env).id
        if not isinstance(self.meta, dict) or self.meta.get("env") != game:
            trained = self.meta.get("env") if isinstance(self.meta, dict) else None
            raise ValueError(f"{given} holds a model of {trained!r}, not of {game}")
        if self.meta.get("format") != VIEW_FORMAT:
            raise ValueError(
                f"{given} was saved in format {self.meta.get('format')!r}, this package reads "
                f"{VIEW_FORMAT}: train it again"
            )
        if not isinstance(deterministic, bool):
            raise ValueError(f"deterministic must be true or false, got {deterministic!r}")
        self.role = role
        self.deterministic = deterministic
        self._observe, self._env_action = observe, env_action
        self.rng = np.random.default_rng()
        import torch

        torch.set_num_threads(1)
        self.model = sb3_class(self.meta["algo"]).load(self.path / "model.zip", device="cpu")
        self.masked = self.meta["algo"] == "maskable_ppo"
        self._size = int(self.meta["observation_size"])

    def __repr__(self) -> str:
        how = "greedy" if self.deterministic else "sampled"  # (what a score of it must say: eq-env play prints this)
        return f"SB3ViewPolicy({str(self.path)!r}, role={self.role!r}, algo={self.meta['algo']!r}, {how})"

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def probabilities(self, observation: Mapping[str, Any]) -> np.ndarray:
        """The model's probability of each action of the view for this observation (0 for a masked one
        when the model was trained with masks)."""
        import torch

        vector, mask = self._observe(observation)
        if vector.shape != (self._size,):
            raise ValueError(
                f"sb3:path={self.path} was trained on another configuration of the game (the "
                f"{self.role}'s observation has {vector.size} numbers, the model {self._size}; its "
                "policy.json has the configuration): train it on this one"
            )
        policy = self.model.policy
        tensor, _ = policy.obs_to_tensor(vector)
        with torch.no_grad():
            if self.masked and mask is not None:
                dist = policy.get_distribution(tensor, action_masks=np.asarray(mask, bool)[None])
            else:
                dist = policy.get_distribution(tensor)
            return np.asarray(dist.distribution.probs[0], np.float64)

    def act(self, observation: Mapping[str, Any]) -> Any:
        probs = self.probabilities(observation)
        if self.deterministic:
            action = int(np.argmax(probs))
        else:
            action = int(self.rng.choice(len(probs), p=probs / probs.sum()))
        return self._env_action(action, observation, self.meta)
