"""Belief coordination's speed: the batch engine against the PettingZoo environment it equals, and ECON's training.

Prints questions per second of the parallel environment (random executor actions, the majority coordinator),
of the batch engine on the same questions (the ratio is what experiments gain from it), and ECON's gradient
steps per second (batches of 256 questions, one thread), all measured in this process::

    python benchmarks/belief_coordination.py [--questions 2000]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=300, help="ECON gradient steps to time")
    args = parser.parse_args()

    import torch

    from eq_env import belief_coordination_v0
    from eq_env.baselines.belief_coordination.econ import ECONHyper, train_econ
    from eq_env.belief_coordination import batch as engine
    from eq_env.belief_coordination.config import BeliefCoordinationConfig

    torch.set_num_threads(1)
    config = BeliefCoordinationConfig(action_space="grid")
    env = belief_coordination_v0.parallel_env(config=config)
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for i in range(args.questions):
        obs, _ = env.reset(seed=1, options={"episode": i})
        while env.agents:
            actions = {a: None if obs[a]["idle"] else int(rng.integers(config.grid_size)) for a in env.agents}
            if not obs["coordinator"]["idle"]:
                actions["coordinator"] = int(np.argmax(obs["coordinator"]["observation"][1::3]))
            obs, *_ = env.step(actions)
    env_rate = args.questions / (time.perf_counter() - started)

    started = time.perf_counter()
    batch = engine.episodes_batch(config, 1, range(args.questions))
    prepared = time.perf_counter()
    index = rng.integers(0, config.grid_size, (args.questions, config.n_executors))
    t, p = config.grid_point(index)
    engine.play(batch, config, lambda r, f: (t, p))
    done = time.perf_counter()
    batch_rate = args.questions / (done - started)
    play_rate = args.questions / (done - prepared)

    started = time.perf_counter()
    train_econ(config, replace(ECONHyper(), steps=args.steps, eval_every=10**9), seed=0, progress=False)
    econ_rate = args.steps / (time.perf_counter() - started)

    print(f"parallel environment: {env_rate:,.0f} questions/s (3 executors, random grid actions, majority)")
    print(
        f"batch engine: {batch_rate:,.0f} questions/s including gathering the questions "
        f"({batch_rate / env_rate:.0f}x), "
        f"{play_rate:,.0f} questions/s playing them ({play_rate / env_rate:.0f}x)"
    )
    print(
        f"ECON training: {econ_rate:.0f} gradient steps/s of 256 questions on one thread "
        f"({econ_rate * 256:,.0f} questions/s, {econ_rate * 256 / env_rate:.0f}x the environment)"
    )


if __name__ == "__main__":
    main()
