"""The Einstein puzzle's oracle planner: time to the optimal plan, and the optimal plan's length.

Per object count and communication mode, over N generated puzzles (the
generator's default knobs, seeds 0…N−1; ``--suite``: the frozen suite's first
N, 4–8 objects) played fresh with the default step limit: the median and 95th
percentile of the planning time, the mean optimal plan length, how many
puzzles have no plan within the step limit, how many ran out of the per-puzzle
time limit, and the median time over its target (0.1 s up to 6 objects, 1 s at
7–8, 10 s beyond). At 4 objects the mean plan length is printed beside the
paper's (7.5 provide & seek, 7.5 provide only, 8.8 seek only, 5.8 none with
lucky guesses).

    python benchmarks/einstein_planner.py [--n 4 5 6 7 8 12] [--puzzles 50] [--modes none seek_only]
"""

from __future__ import annotations

import argparse
import time
from statistics import mean, median

import numpy as np

from eq_env.einstein_puzzle.generator import generate
from eq_env.einstein_puzzle.planner import PlannerBudgetExceeded, solve
from eq_env.einstein_puzzle.rules import COMM_MODES, Puzzle, new_game

PAPER_MEAN_4 = {"provide_and_seek": 7.5, "provide_only": 7.5, "seek_only": 8.8, "none": 5.8}


def target(n: int) -> float:
    """The median planning time each object count must stay under."""
    return 0.1 if n <= 6 else 1.0 if n <= 8 else 10.0


def puzzles(n: int, count: int, suite: bool) -> list[Puzzle]:
    if suite and 4 <= n <= 8:
        from eq_env.einstein_puzzle.suite import load_suite

        return list(load_suite(n)[:count])
    return [generate(n, np.random.default_rng(seed)) for seed in range(count)]


def measure(batch: list[Puzzle], mode: str, time_limit: float) -> dict[str, float]:
    times: list[float] = []
    lengths: list[int] = []
    no_plan = timeouts = 0
    for p in batch:
        start = time.perf_counter()
        try:
            length = solve(new_game(p, mode), time_limit=time_limit).length
            if length is None:
                no_plan += 1
            else:
                lengths.append(length)
        except PlannerBudgetExceeded:
            timeouts += 1
        times.append(time.perf_counter() - start)  # a time-out counts as its limit: the median stays honest
    return {"median": median(times), "p95": float(np.percentile(times, 95)), "max": max(times),
            "length": mean(lengths) if lengths else float("nan"), "no_plan": no_plan, "timeouts": timeouts}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[4, 5, 6, 7, 8, 12], help="object counts")
    parser.add_argument("--puzzles", type=int, default=50, help="puzzles per object count")
    parser.add_argument("--modes", nargs="+", choices=COMM_MODES, default=list(COMM_MODES))
    parser.add_argument("--suite", action="store_true", help="the frozen suite's puzzles (4-8 objects)")
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds per puzzle before giving up")
    args = parser.parse_args()

    print(f"{'n':>3} {'mode':<17} {'median s':>9} {'p95 s':>8} {'max s':>8} {'/target':>8} {'mean len':>9} "
          f"{'paper':>6} {'no plan':>8} {'timeout':>8}")  # fmt: skip
    for n in args.n:
        batch = puzzles(n, args.puzzles, args.suite)
        for mode in args.modes:
            r = measure(batch, mode, args.time_limit)
            paper = f"{PAPER_MEAN_4[mode]:6.1f}" if n == 4 else f"{'':6}"
            print(f"{n:>3} {mode:<17} {r['median']:9.4f} {r['p95']:8.3f} {r['max']:8.2f} "
                  f"{r['median'] / target(n):8.4f} {r['length']:9.2f} {paper} {r['no_plan']:>8} "
                  f"{r['timeouts']:>8}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
