"""``eq-env selfplay``: alternate training of the proposer and the validator for K rounds (fictitious play).

The training loop is :func:`eq_env.baselines.exchange_audit.rl.selfplay`; this module holds the command's flags
and its report.
"""

from __future__ import annotations

import argparse

from eq_env.core.cli import (
    MAX_ROUNDS,
    Command,
    add_config_flags,
    config_from_args,
    int_in,
    out_dir,
    seed_arg,
    timesteps_arg,
)
from eq_env.exchange_audit.config import ExchangeAuditConfig


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
def _selfplay_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--rounds", type=int_in(1, MAX_ROUNDS), default=3, help="rounds of proposer-then-validator (default 3)"
    )
    sp.add_argument("--timesteps", type=timesteps_arg, default=30_000, help="steps per training, at least 64")
    sp.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    sp.add_argument("--algo", choices=("ppo", "maskable_ppo"), default="ppo")
    sp.add_argument(
        "--opponents",
        choices=("all", "latest"),
        default="all",
        help="each training faces every policy the other role has played so far, one drawn per "
        "episode (default: fictitious play), or its latest only (best-response dynamics, which "
        "cycle)",
    )
    sp.add_argument(
        "--out",
        type=out_dir,
        required=True,
        help="output directory: selfplay.csv/.md/.png and a model per training (round<R>_<role>/)",
    )
    add_config_flags(sp, ExchangeAuditConfig)


def _selfplay(args: argparse.Namespace) -> int:
    from eq_env.baselines.exchange_audit.rl import selfplay

    selfplay(
        args.out,
        rounds=args.rounds,
        timesteps=args.timesteps,
        seed=args.seed,
        config=config_from_args(args, ExchangeAuditConfig),
        algo=args.algo,
        progress=None,
        opponents=args.opponents,
    )
    print((args.out / "selfplay.md").read_text())
    print(f"wrote selfplay.csv, selfplay.md, selfplay.png and a model per training to {args.out}")
    return 0


COMMAND = Command(
    "selfplay",
    "alternate training of the proposer and the validator for K rounds",
    _selfplay_arguments,
    _selfplay,
    "Each round trains the proposer, then the validator, each against every policy the other role has played "
    "so far, one drawn per episode (fictitious play; --opponents latest: the latest only); the first "
    "proposer faces the rule validator; prints approval, bad approval, welfare and both payoffs after each "
    "training and writes them to --out (selfplay.csv/.md/.png). Re-running resumes.",
    "finished trainings are saved in --out; run the same command to resume",
)
