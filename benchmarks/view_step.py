"""Single-agent view step cost: µs per step of each exchange–audit view against ``CartPole-v1``, same run.

Every environment is made with ``gymnasium.make`` (its standard wrappers), driven by the same loop —
``step(action)``, then ``reset()`` when the episode ends — with actions sampled beforehand, so the loop
times the environment only. A view's step is one whole episode of the one-shot game, so each of its steps
is followed by a reset; CartPole resets every ~20 steps. Best of ``--repeats`` runs, interleaved.

Then SB3's ``make_vec_env(id)`` (one env in a ``DummyVecEnv``, which resets it itself), made as SB3 makes it
by default (``render_mode="rgb_array"``, what SB3 asks for) and with ``env_kwargs={"render_mode": None}``,
timed in the same process: the ratio should be about 1 (a view that renders keeps its fast path and draws
a picture only when ``render()`` is called). Skipped, saying so, without stable-baselines3 (the rl extra).

    python benchmarks/view_step.py [--steps 50000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import gymnasium

import eq_env  # noqa: F401  (registers the views)

VIEWS = {
    "proposer view (rule validator)": ("eq_env/ExchangeAuditProposer-v0", {}),
    "validator view (honest proposer)": ("eq_env/ExchangeAuditValidator-v0", {}),
    "validator view (strategic proposer)": ("eq_env/ExchangeAuditValidator-v0", {"proposer": "strategic"}),
}
REFERENCE = ("CartPole-v1", {})


def us_per_step(env_id: str, kwargs: dict[str, Any], steps: int, seed: int = 0) -> float:
    env = gymnasium.make(env_id, **kwargs)
    env.action_space.seed(seed)
    actions = [env.action_space.sample() for _ in range(steps)]
    env.reset(seed=seed)
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return (time.perf_counter() - start) / steps * 1e6


def vec_us_per_step(env_id: str, env_kwargs: dict[str, Any], steps: int, seed: int = 0) -> float:
    """µs per step of ``make_vec_env(env_id, n_envs=1, env_kwargs=env_kwargs)``."""
    import numpy as np
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env(env_id, n_envs=1, seed=seed, env_kwargs=env_kwargs)
    venv.action_space.seed(seed)
    actions = [np.array([venv.action_space.sample()]) for _ in range(steps)]
    venv.reset()
    start = time.perf_counter()
    for action in actions:
        venv.step(action)
    elapsed = time.perf_counter() - start
    venv.close()
    return elapsed / steps * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3, help="best of N (less noise from the machine)")
    args = parser.parse_args()
    runs: dict[str, list[float]] = {name: [] for name in [*VIEWS, "CartPole-v1"]}
    for _ in range(args.repeats):
        for name, (env_id, kwargs) in VIEWS.items():
            runs[name].append(us_per_step(env_id, kwargs, args.steps))
        runs["CartPole-v1"].append(us_per_step(*REFERENCE, args.steps))
    ref = min(runs["CartPole-v1"])
    print(f"{'CartPole-v1 (reference)':38s} {ref:7.1f} µs/step")
    for name in VIEWS:
        best = min(runs[name])
        print(f"{name:38s} {best:7.1f} µs/step  ratio {best / ref:5.2f}x CartPole  (target <= 2.0x)")
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        print("make_vec_env: skipped (stable-baselines3 is not installed: pip install 'eq-env[rl]')")
        return
    print("make_vec_env(id), SB3's default render_mode='rgb_array' against env_kwargs={'render_mode': None}:")
    for name, (env_id, kwargs) in VIEWS.items():
        default, plain = [], []
        for _ in range(args.repeats):
            default.append(vec_us_per_step(env_id, kwargs, args.steps))
            plain.append(vec_us_per_step(env_id, {**kwargs, "render_mode": None}, args.steps))
        d, p = min(default), min(plain)
        print(f"{name:38s} {d:7.1f} vs {p:7.1f} µs/step  ratio {d / p:5.2f}x")


if __name__ == "__main__":
    main()
