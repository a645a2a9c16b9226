"""The Einstein puzzle's own ``eq-env`` commands.

``eq-env einstein plan`` runs the oracle planner over the frozen suite (or
generated puzzles) and prints the mean optimal plan length per comm mode and
size beside the paper's 4-object figures, with the planning time.
``eq-env train --env einstein-puzzle`` trains one seat with MaskablePPO against a
partner (:mod:`eq_env.baselines.einstein_puzzle.rl`), or both seats with RLlib
(``--backend rllib``).
(``eq-env play --env einstein-puzzle`` plays games with any policies and
prints the metrics.)
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import statistics
import sys
from collections.abc import Mapping, Sequence

from eq_env.core.cli import Command, int_in, list_of, out_dir, positive_float

__all__ = ["COMMANDS", "PAPER_PLAN_LENGTHS", "describe_config", "dry_run"]

# The paper's mean shortest solution on 4 objects (its planner; "none" with lucky guesses).
PAPER_PLAN_LENGTHS = {"provide_and_seek": 7.5, "provide_only": 7.5, "seek_only": 8.8, "none": 5.8}


def describe_config(config: object) -> str:
    """The parameters ``eq-env play`` shows beside the preset."""
    c = config
    return f"n={c.n}, comm_mode={c.comm_mode}, puzzles={c.puzzles}, step limit {c.step_limit}"  # type: ignore[attr-defined]


def dry_run(config: object, policies: Mapping[str, Sequence[str]]) -> int:
    """``--dry-run``: what each LLM player among ``policies`` (role → specs) would be sent on its first turn
    of seed 0's first game, and the grammar its reply must follow; nothing is called."""
    from eq_env import einstein_puzzle_v0
    from eq_env.agents.einstein_puzzle.prompt import render_messages
    from eq_env.core.policy import make_policy
    from eq_env.einstein_puzzle.grammar import GRAMMAR

    env = einstein_puzzle_v0.env(config=config)
    shown = 0
    for role, specs in policies.items():
        for spec in dict.fromkeys(specs):
            policy = make_policy(spec, role, "einstein-puzzle")
            if not hasattr(policy, "prompt_version"):
                continue
            env.reset(seed=0)
            while env.agent_selection != role:  # (the top seat sees the game after the bottom seat's pass)
                env.step(env.unwrapped.action_space(env.agent_selection).n - 1)
            text = env.observe(role)["text"]
            messages = render_messages(text, policy.prompt_version, reasoning=bool(getattr(policy, "reasoning", False)))
            print(f"===== {role}: {policy!r}, prompt {policy.prompt_version} =====")
            for m in messages:
                print(f"--- {m['role']} ---\n{m['content']}")
            print(f"--- reply: one action ---\n{GRAMMAR}\n")
            shown += 1
    if not shown:
        print("no LLM player among the policies: nothing would be sent")
    return 0


def _modes(text: str) -> list[str]:
    from eq_env.einstein_puzzle.rules import COMM_MODES

    if text == "all":
        return list(COMM_MODES)
    modes = list_of(str, "comm modes", distinct=True)(text)
    bad = [m for m in modes if m not in COMM_MODES]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown comm mode(s) {bad}; choose from {', '.join(COMM_MODES)} or all")
    return modes


_RANGE = re.compile(r"\s*([0-9]+)\s*-\s*([0-9]+)\s*")  # LOW-HIGH (a leading "-" is a negative count)


def _sizes(text: str) -> list[int]:
    """``4``, ``4,6`` or ``4-8``."""
    parse = int_in(4, 16)
    matched = _RANGE.fullmatch(text)
    if matched:
        a, b = parse(matched[1]), parse(matched[2])
        if a > b:
            raise argparse.ArgumentTypeError(f"expected LOW-HIGH with LOW <= HIGH, got {text!r}")
        return list(range(a, b + 1))
    return list_of(parse, "object counts in [4, 16]", distinct=True)(text)


def _plan_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=_sizes, default=[4], help="object counts: 4, 4,6 or 4-8 (default 4)")
    parser.add_argument("--comm-mode", type=_modes, default=_modes("all"), dest="comm_modes",
                        help="comm modes, comma-separated, or all (default)")  # fmt: skip
    parser.add_argument("--puzzles", type=int_in(1, 100_000), default=300,
                        help="puzzles per size: the suite's first (n ≤ 8), else generated (default 300)")  # fmt: skip
    parser.add_argument("--generated", action="store_true", help="generated puzzles (seed 0) even for n ≤ 8")
    parser.add_argument("--time-limit", type=positive_float, default=60.0,
                        help="seconds per puzzle before it is reported unsolved (default 60)")  # fmt: skip
    parser.add_argument("--out", type=out_dir, help="also write plans.csv (one row per puzzle and mode) here")


def _plan(args: argparse.Namespace) -> int:
    from eq_env.einstein_puzzle.suite import SUITE_SIZE, SUITE_SIZES

    if not args.generated and args.puzzles > SUITE_SIZE and any(n in SUITE_SIZES for n in args.n):
        print(f"eq-env einstein plan: error: argument --puzzles: the suite has {SUITE_SIZE} puzzles per size; "
              "add --generated to plan more, generated ones", file=sys.stderr)  # fmt: skip
        return 2
    if args.out is not None:  # now, not after the planning: an output that cannot be made loses nothing
        try:
            args.out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            print(f"eq-env einstein plan: error: argument --out: cannot create {args.out}: {err.strerror}",
                  file=sys.stderr)  # fmt: skip
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
        puzzles = (load_suite(n)[: args.puzzles] if from_suite
                   else [generate(n, puzzle_rng(0, i)) for i in range(args.puzzles)])  # fmt: skip
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
                rows.append({"n": n, "comm_mode": mode, "puzzle": i, "length": result.length or "",
                             "seconds": f"{result.seconds:.6f}", "status": status})  # fmt: skip
            mean = statistics.fmean(lengths) if lengths else math.nan
            paper = PAPER_PLAN_LENGTHS.get(mode) if n == 4 else None
            table.append((n, mode, source, len(puzzles), len(lengths), over, unsolved, mean,
                          statistics.median(times) if times else math.nan, paper))  # fmt: skip
    header = ("n", "comm mode", "puzzles from", "count", "planned", "over limit", "budget out", "mean length",
              "median s", "paper")  # fmt: skip
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


def _einstein_arguments(parser: argparse.ArgumentParser) -> None:
    from eq_env.einstein_puzzle import demos, human

    sub = parser.add_subparsers(dest="einstein_command", required=True, metavar="{plan,demos,play}")
    plan = sub.add_parser("plan", help="the oracle planner's optimal plan lengths per comm mode and size",
                          description=_PLAN_DESCRIPTION)  # fmt: skip
    _plan_arguments(plan)
    for name, module in (("demos", demos), ("play", human)):
        doc = (module.__doc__ or "").strip()
        cmd = sub.add_parser(name, help=doc.split("\n")[0], description=doc)
        module.add_arguments(cmd)


_PLAN_DESCRIPTION = (
    "Plan every puzzle with the exact oracle planner and print the mean optimal plan length per size and comm "
    "mode (beside the paper's 7.5, 7.5, 8.8 and 5.8 turns at 4 objects) and the median planning time."
)


def _einstein(args: argparse.Namespace) -> int:
    from eq_env.einstein_puzzle import demos, human

    return {"plan": _plan, "demos": demos.run, "play": human.run}[args.einstein_command](args)


def _reproduce_arguments(parser: argparse.ArgumentParser) -> None:
    from eq_env.einstein_puzzle import reproduce

    reproduce.add_arguments(parser)


def _reproduce(args: argparse.Namespace) -> int:
    from eq_env.einstein_puzzle import reproduce

    return reproduce.run(args)


def _train_arguments(parser: argparse.ArgumentParser) -> None:
    from eq_env.baselines.rllib import add_rllib_flags
    from eq_env.core.cli import add_config_flags, seed_arg, timesteps_arg
    from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig

    parser.add_argument(
        "--backend",
        choices=("sb3", "rllib"),
        default="sb3",
        help="sb3: one seat with MaskablePPO against a fixed partner (default, as exchange-audit's train: "
        "Stable-Baselines3 is a core dependency); rllib: both players at once, one PPO module shared by the "
        "two seats (pip install 'eq-env[rllib]')",
    )
    parser.add_argument("--out", type=out_dir, required=True, help="directory for the model and its reports")
    parser.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--eval-seeds",
        type=list_of(seed_arg, "seeds", distinct=True),
        default="1000,1001,1002",
        help="held-out seeds for the evaluation (default 1000,1001,1002)",
    )
    parser.add_argument(
        "--eval-episodes", type=int_in(1, 1_000_000), default=100, help="episodes per evaluation seed (default 100)"
    )
    sb3 = parser.add_argument_group("with --backend sb3 (one seat, Stable-Baselines3)")
    sb3.add_argument("--role", choices=("player_0", "player_1"), help="the seat to train (default player_0)")
    sb3.add_argument("--partner", help="the other seat's policy spec (default planner, the decentralised planner)")
    sb3.add_argument("--algo", choices=("maskable_ppo", "ppo"), help="maskable_ppo (sb3-contrib, default) or ppo")
    sb3.add_argument(
        "--timesteps",
        type=timesteps_arg,
        help="environment steps (turns of the seat) to train on, at least 64 (default 20000)",
    )
    sb3.add_argument(
        "--n-envs", type=int_in(1, 4096), help="environments stepped together, seeded seed, seed+1, ... (default 8)"
    )
    add_config_flags(parser, EinsteinPuzzleConfig)
    add_rllib_flags(parser, unset=True)  # (None when not given: refused with --backend sb3)


SB3_FLAGS = ("role", "partner", "algo", "timesteps", "n_envs")


def _train(args: argparse.Namespace) -> int:
    from eq_env.baselines.rllib import RLLIB_FLAGS, fill_rllib_defaults, run_from_args
    from eq_env.core.cli import config_from_args, given_flags
    from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig

    config = config_from_args(args, EinsteinPuzzleConfig)
    if args.backend == "sb3":
        given = given_flags(args, RLLIB_FLAGS)
        if given:
            raise ValueError(f"{', '.join(given)} go(es) with --backend rllib; --backend sb3 trains one seat")
        return _train_sb3(args, config)
    given = given_flags(args, SB3_FLAGS)
    if given:
        raise ValueError(f"{', '.join(given)} go(es) with --backend sb3: --backend rllib trains both seats with PPO")
    fill_rllib_defaults(args)
    return run_from_args("einstein-puzzle", args, config)


def _train_sb3(args: argparse.Namespace, config: object) -> int:
    from eq_env.baselines.einstein_puzzle.rl import METRICS, train

    role = args.role or "player_0"
    partner = args.partner or "planner"
    result = train(
        args.out,
        role=role,
        partner=partner,
        config=config,  # type: ignore[arg-type]
        algo=args.algo or "maskable_ppo",
        timesteps=args.timesteps or 20_000,
        seed=args.seed,
        n_envs=args.n_envs or 8,
        eval_seeds=args.eval_seeds,
        eval_episodes=args.eval_episodes,
        progress=None,
    )
    asked = f" ({result.timesteps} asked; SB3 ends on a whole rollout)" if result.steps_run != result.timesteps else ""
    print(
        f"trained {role} ({result.algo}) with {partner} as partner for {result.steps_run} steps{asked} in "
        f"{result.seconds:.1f} s ({result.steps_run / result.seconds:.0f} steps/s, one thread); saved to {result.path}"
    )
    print(f"use it in either seat: eq-env play --env einstein-puzzle --{role} sb3:path={result.path}")
    print(
        f"evaluation with {partner} as partner on held-out seeds {', '.join(map(str, args.eval_seeds))}, "
        f"{args.eval_episodes} games each (mean ± std over seeds); greedy: the most likely legal action, sampled: "
        "drawn from the model's masked distribution:\n"
    )
    print(result.table(METRICS))
    print(f"wrote model.zip, policy.json, learning_curve.csv, learning_curve.png and eval.json to {result.path}")
    return 0


COMMANDS = (
    Command(
        "train",
        "train one seat with MaskablePPO, or both players with RLlib (with --env einstein-puzzle)",
        _train_arguments,
        _train,
        "Train one seat (--role) with Stable-Baselines3's MaskablePPO on the single-agent view, against a fixed "
        "--partner; the model is saved into --out and evaluated on held-out seeds, greedy and sampled, beside "
        "random play in that seat; it is then the policy spec 'sb3:path=OUT' of either seat. With --backend "
        "rllib: both seats at once with RLlib's multi-agent PPO (one module shared by the two symmetric seats, "
        "masked actions) on Ray; the checkpoint, a learning curve and the metrics on held-out seeds go into "
        "--out, and the checkpoint is then the policy spec 'rllib:path=OUT' of either seat.",
        "nothing was saved",
    ),
    Command(
        "einstein",
        "the Einstein puzzle's tools: plan, demos, play",
        _einstein_arguments,
        _einstein,
        "The collaborative Einstein puzzle's own tools: `plan` (the oracle planner's plan lengths), `demos` "
        "(fine-tuning data from the oracle's games), `play` (a person in one seat, in the terminal).",
    ),
    Command(
        "reproduce",
        "the paper's experiments on the Einstein puzzle (with --env einstein-puzzle)",
        _reproduce_arguments,
        _reproduce,
        "Success, steps, rejected placements, rule-inconsistent actions and partial success per comm mode and n, "
        "for scripted (or LLM) players with and without each verifier; the oracle's plan lengths beside the "
        "paper's. Re-running resumes.",
        "finished runs are saved in --out; run the same command to resume",
    ),
)
