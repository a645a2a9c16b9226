"""Einstein puzzle AEC throughput: agent steps per second with random legal actions, against tictactoe.

Our environment (4 and 8 objects) and PettingZoo's ``classic/tictactoe-v3`` are
driven by the same loop in the same process — the standard wrappers,
``env.last()``, ``action_space(agent).sample(observation["action_mask"])``,
``env.step(action)``, a done agent's ``step(None)`` — interleaved, best of N
runs each, so both see the same state of the machine. Every observation of ours
holds the numeric view, the action mask and the paper's text. Target: a ratio
of at least 1.0x.

    python benchmarks/einstein_env.py [--steps 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any


def agent_steps_per_second(env: Any, steps: int, seed: int = 0) -> float:
    """Agent steps per second (a done agent's ``step(None)`` included) over at least ``steps`` of them."""
    env.reset(seed=seed)
    for agent in env.possible_agents:
        env.action_space(agent).seed(seed)
    done = 0
    start = time.perf_counter()
    while done < steps:
        for agent in env.agent_iter():
            obs, _, termination, truncation, _ = env.last()
            action = None if termination or truncation else env.action_space(agent).sample(obs["action_mask"])
            env.step(action)
            done += 1
        env.reset()
    return done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3, help="best of N (less noise from the machine)")
    args = parser.parse_args()
    with warnings.catch_warnings():  # (pettingzoo.classic warns on import)
        warnings.simplefilter("ignore")
        from pettingzoo.classic import tictactoe_v3
    from eq_env import einstein_puzzle_v0

    sizes = (4, 8)
    runs: dict[str, list[float]] = {"tictactoe": [], **{f"n={n}": [] for n in sizes}}
    for _ in range(args.repeats):
        runs["tictactoe"].append(agent_steps_per_second(tictactoe_v3.env(), args.steps))
        for n in sizes:
            runs[f"n={n}"].append(agent_steps_per_second(einstein_puzzle_v0.env(n=n), args.steps))
    reference = max(runs["tictactoe"])
    print(f"tictactoe_v3 AEC (reference):     {reference:>10,.0f} agent steps/s")
    for n in sizes:
        ours = max(runs[f"n={n}"])
        print(f"einstein_puzzle_v0 AEC, {n} objects: {ours:>10,.0f} agent steps/s   "
              f"ratio {ours / reference:.2f}x  (target >= 1.0x)")  # fmt: skip


if __name__ == "__main__":
    main()
