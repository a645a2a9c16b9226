"""``eq-env einstein plan``: the oracle planner over the frozen suite (or generated puzzles).

Prints the mean optimal plan length per comm mode and size beside the paper's 4-object figures, with the
planning time.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys

from eq_env.core.cli import int_in, out_dir, positive_float
from eq_env.studies.einstein_puzzle.flags import comm_modes, object_counts

__all__ = ["PAPER_PLAN_LENGTHS", "PLAN_DESCRIPTION", "add_arguments", "run"]

# The paper's mean shortest solution on 4 objects (its planner; "none" with lucky guesses).
PAPER_PLAN_LENGTHS = {"provide_and_seek": 7.5, "provide_only": 7.5, "seek_only": 8.8, "none": 5.8}


PLAN_DESCRIPTION = (
    "Plan every puzzle with the exact oracle planner and print the mean optimal plan length per size and comm "
    "mode (beside the paper's 7.5, 7.5, 8.8 and 5.8 turns at 4 objects) and the median planning time."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=object_counts, default=[4], help="object counts: 4, 4,6 or 4-8 (default 4)")
    parser.add_argument(
        "--comm-mode",
        type=comm_modes,
        default=comm_modes("all"),
        dest="comm_modes",
        help="comm modes, comma-separated, or all (default)",
    )
    parser.add_argument(
        "--puzzles",
        type=int_in(1, 100_000),
        default=300,
        help="puzzles per size: the suite's first (n ≤ 8), else generated (default 300)",
    )
    parser.add_argument("--generated", action="store_true", help="generated puzzles (seed 0) even for n ≤ 8")
    parser.add_argument(
        "--time-limit",
        type=positive_float,
        default=60.0,
        help="seconds per puzzle before it is reported unsolved (default 60)",
    )
    parser.add_argument("--out", type=out_dir, help="also write plans.csv (one row per puzzle and mode) here")


def run(args: argparse.Namespace) -> int:
    from eq_env.einstein_puzzle.suite import SUITE_SIZE, SUITE_SIZES

    if not args.generated and args.puzzles > SUITE_SIZE and any(n in SUITE_SIZES for n in args.n):
        print(
            f"eq-env einstein plan: error: argument --puzzles: the suite has {SUITE_SIZE} puzzles per size; "
            "add --generated to plan more, generated ones",
            file=sys.stderr,
        )
        return 2
    if args.out is not None:  # now, not after the planning: an output that cannot be made loses nothing
        try:
            args.out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            print(
                f"eq-env einstein plan: error: argument --out: cannot create {args.out}: {err.strerror}",
                file=sys.stderr,
            )
            return 2
    return _plan_run(args)


def _plan_run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from eq_env.einstein_puzzle.generator import generate, puzzle_rng
    from eq_env.einstein_puzzle.planner import PlannerBudgetExceeded, solve
    from eq_env.einstein_puzzle.rules import new_game
    from eq_env.einstein_puzzle.suite import SUITE, SUITE_SIZES, load_suite

    rows, table = [], []
    for n in args.n:
        from_suite = n in SUITE_SIZES and not args.generated
        puzzles = (
            load_suite(n)[: args.puzzles]
            if from_suite
            else [generate(n, puzzle_rng(0, i)) for i in range(args.puzzles)]
        )
        source = SUITE if from_suite else "generated, seed 0"
        for mode in args.comm_modes:
            lengths, times, unsolved, over = [], [], 0, 0
            for i, puzzle in enumerate(tqdm(puzzles, desc=f"n={n} {mode}", unit="puzzle", disable=None)):
                try:
                    result = solve(new_game(puzzle, mode), time_limit=args.time_limit)
                except PlannerBudgetExceeded:
                    unsolved += 1
                    rows.append(
                        {"n": n, "comm_mode": mode, "puzzle": i, "length": "", "seconds": "", "status": "budget"}
                    )
                    continue
                times.append(result.seconds)
                status = "solved" if result.length is not None else "over the step limit"
                if result.length is None:
                    over += 1
                else:
                    lengths.append(result.length)
                rows.append(
                    {
                        "n": n,
                        "comm_mode": mode,
                        "puzzle": i,
                        "length": result.length or "",
                        "seconds": f"{result.seconds:.6f}",
                        "status": status,
                    }
                )
            mean = statistics.fmean(lengths) if lengths else math.nan
            paper = PAPER_PLAN_LENGTHS.get(mode) if n == 4 else None
            table.append(
                (
                    n,
                    mode,
                    source,
                    len(puzzles),
                    len(lengths),
                    over,
                    unsolved,
                    mean,
                    statistics.median(times) if times else math.nan,
                    paper,
                )
            )
    header = (
        "n",
        "comm mode",
        "puzzles from",
        "count",
        "planned",
        "over limit",
        "budget out",
        "mean length",
        "median s",
        "paper",
    )
    print("Oracle planner: the shortest justified joint plan of each puzzle (paper: 4 objects, its planner)\n")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for n, mode, source, count, planned, over, unsolved, mean, median, paper in table:
        shown = "—" if paper is None else f"{paper:.1f}"
        print(
            f"{n} | {mode} | {source} | {count} | {planned} | {over} | {unsolved} | {mean:.2f} | {median:.4f} | {shown}"
        )
    if args.out is not None:
        path = args.out / "plans.csv"
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["n", "comm_mode", "puzzle", "length", "seconds", "status"])
            writer.writeheader()
            writer.writerows(rows)
        print(f"\nwrote {path}", file=sys.stderr)
    return 0
