"""``eq-env train --env einstein-puzzle``: one seat with MaskablePPO against a partner
(:mod:`eq_env.baselines.einstein_puzzle.rl`), or both seats with RLlib (``--backend rllib``).
"""

from __future__ import annotations

import argparse

from eq_env.core.cli import Command, int_in, list_of, out_dir


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
    sb3.add_argument(
        "--partner",
        help="the other seat's policy spec (default planner, the decentralised planner), or self: self-play, one "
        "policy in both seats (it learns from scratch with --strict-mask: docs/guide/einstein-puzzle.md)",
    )
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
    from eq_env.baselines.einstein_puzzle.rl import METRICS, SELF, SELF_METRICS, train

    role = args.role or "player_0"
    partner = args.partner or "planner"
    if partner == SELF and args.role:
        raise ValueError("--role goes with a fixed --partner: --partner self trains one policy for both seats")
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
    who = "both seats by self-play" if partner == SELF else f"{role} ({result.algo}) with {partner} as partner"
    print(
        f"trained {who} for {result.steps_run} steps{asked} in {result.seconds:.1f} s "
        f"({result.steps_run / result.seconds:.0f} steps/s, one thread); saved to {result.path}"
    )
    if partner == SELF:
        print(
            f"use it in both seats: eq-env play --env einstein-puzzle --player_0 sb3:path={result.path} "
            f"--player_1 sb3:path={result.path}"
        )
    else:
        print(f"use it in either seat: eq-env play --env einstein-puzzle --{role} sb3:path={result.path}")
    against = "itself in both seats, then with the planner as partner" if partner == SELF else f"{partner} as partner"
    print(
        f"evaluation with {against} on held-out seeds {', '.join(map(str, args.eval_seeds))}, "
        f"{args.eval_episodes} games each (mean ± std over seeds); greedy: the most likely legal action, sampled: "
        "drawn from the model's masked distribution:\n"
    )
    print(result.table(SELF_METRICS if partner == SELF else METRICS))
    print(f"wrote model.zip, policy.json, learning_curve.csv, learning_curve.png and eval.json to {result.path}")
    return 0


COMMAND = Command(
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
)
