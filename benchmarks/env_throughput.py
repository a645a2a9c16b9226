"""AEC environment throughput: agent steps per second with random legal actions.

Our environment and PettingZoo's own ``rps_v2`` are driven by the same loop
(standard wrappers, ``action_space(agent).sample(mask)``) in the same
process, and the ratios are printed twice: counting every agent step, and
counting only live ones (an agent that is done still takes one ``step(None)``;
that is half of our steps, since every episode is one proposal, but few of
rps_v2's). Needs pygame for rps_v2: ``pip install -e ".[bench]"``.

    python benchmarks/env_throughput.py [--steps 200000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any


def agent_steps_per_second(env: Any, steps: int, seed: int = 0) -> tuple[float, float]:
    """(all agent steps per second, live agent steps per second): a done agent's step(None) counts
    only in the first; it is half of our steps (one-shot game) but few of rps_v2's."""
    env.reset(seed=seed)
    for agent in env.possible_agents:
        env.action_space(agent).seed(seed)
    done = live = 0
    start = time.perf_counter()
    while done < steps:
        for agent in env.agent_iter():
            obs, _, termination, truncation, _ = env.last()
            if termination or truncation:
                action = None
            else:
                mask = obs.get("action_mask") if isinstance(obs, dict) else None
                action = env.action_space(agent).sample(mask)
                live += 1
            env.step(action)
            done += 1
        env.reset()
    elapsed = time.perf_counter() - start
    return done / elapsed, live / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3, help="best of N (less noise from the machine)")
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from pettingzoo.classic import rps_v2
        except ImportError as err:  # pragma: no cover
            raise SystemExit(f"rps_v2 needs pygame: pip install -e '.[bench]' ({err})") from None
    from eq_env import exchange_audit_v0

    # interleaved, best of N each: both see the same state of the machine
    ours_runs, ref_runs = [], []
    for _ in range(args.repeats):
        ours_runs.append(agent_steps_per_second(exchange_audit_v0.env(), args.steps))
        ref_runs.append(agent_steps_per_second(rps_v2.env(), args.steps))
    ours, ref = max(ours_runs), max(ref_runs)
    ours_live, ref_live = max(r[1] for r in ours_runs), max(r[1] for r in ref_runs)
    print(f"exchange_audit_v0 AEC:  {ours[0]:>10,.0f} agent steps/s ({ours_live:,.0f} live)")
    print(f"rps_v2 AEC (reference): {ref[0]:>10,.0f} agent steps/s ({ref_live:,.0f} live)")
    print(f"ratio ours / rps_v2, all agent steps:  {ours[0] / ref[0]:.2f}x  (target >= 1.0x)")
    print(f"ratio ours / rps_v2, live agent steps: {ours_live / ref_live:.2f}x")
    sample_share = sampling_share(exchange_audit_v0.env(), args.steps // 10)
    print(f"share of our loop spent sampling the random actions: {sample_share:.0%}")


def sampling_share(env: Any, episodes: int) -> float:
    """Fraction of the loop's time spent in ``action_space.sample`` (the structured proposer action)."""
    env.reset(seed=0)
    spent = 0.0
    start = time.perf_counter()
    for _ in range(episodes):
        for agent in env.agent_iter():
            obs, _, termination, truncation, _ = env.last()
            t = time.perf_counter()
            action = None if termination or truncation else env.action_space(agent).sample(obs.get("action_mask"))
            spent += time.perf_counter() - t
            env.step(action)
        env.reset()
    return spent / (time.perf_counter() - start)


if __name__ == "__main__":
    main()
