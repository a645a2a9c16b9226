"""Einstein puzzle generation: puzzles per second by size, against the target and the frozen suite's loader.

Generates puzzles with the default knobs (``generator.generate``, a fresh
seeded generator per puzzle, as the environment draws them) and prints the
rate per object count with its ratio to the target of 1,000 puzzles/s at 8
objects; then the rate of reading and checking the shipped suite
(``suite.load_suite``, 1,500 puzzles) for reference, in the same process.

    python benchmarks/einstein_generator.py [--puzzles 5000] [--n 4 8 12 16]
"""

from __future__ import annotations

import argparse
import time

from eq_env.einstein_puzzle import suite
from eq_env.einstein_puzzle.generator import generate, puzzle_rng

TARGET = 1_000.0  # puzzles/s at n = 8


def rate(n: int, puzzles: int) -> float:
    start = time.perf_counter()
    for i in range(puzzles):
        generate(n, puzzle_rng(0, i))
    return puzzles / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--puzzles", type=int, default=5_000)
    parser.add_argument("--n", type=int, nargs="+", default=[4, 8, 12, 16])
    args = parser.parse_args()
    for n in args.n:
        r = rate(n, args.puzzles)
        print(f"generate, {n:2d} objects: {r:10,.0f} puzzles/s   {r / TARGET:6.1f}x the target of {TARGET:,.0f}/s")
    start = time.perf_counter()
    suite._load.cache_clear()
    loaded = sum(len(v) for v in suite.load_suite().values())
    seconds = time.perf_counter() - start
    print(f"load_suite (reference): {loaded / seconds:10,.0f} puzzles/s ({loaded} puzzles read, checked, validated)")


if __name__ == "__main__":
    main()
