"""``eq-env train``: train a proposer or a validator with Stable-Baselines3 (or both with RLlib), and evaluate it.

The training itself is :func:`eq_env.baselines.exchange_audit.rl.train` (SB3) and
:func:`eq_env.baselines.rllib.run_from_args` (RLlib); this module holds the command's flags and its report.
"""

from __future__ import annotations

import argparse

from eq_env.core.cli import (
    Command,
    add_config_flags,
    config_from_args,
    episodes_arg,
    int_in,
    list_of,
    out_dir,
    seed_arg,
    timesteps_arg,
)
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.studies.exchange_audit.flags import audit_intensity


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
def _train_arguments(tr: argparse.ArgumentParser) -> None:
    tr.add_argument(
        "--backend",
        choices=("sb3", "rllib"),
        default="sb3",
        help="sb3: one role against a fixed other (default); rllib: both roles at once, RLlib's "
        "multi-agent PPO (pip install 'eq-env[rllib]')",
    )
    tr.add_argument("--role", choices=("proposer", "validator"), help="the role to train (sb3; required there)")
    tr.add_argument("--algo", choices=("ppo", "maskable_ppo", "dqn"), default="ppo")
    tr.add_argument(
        "--timesteps",
        type=timesteps_arg,
        default=50_000,
        help="environment steps (= episodes) to train on, at least 64",
    )
    tr.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    tr.add_argument("--out", type=out_dir, required=True, help="directory for the model and its reports")
    tr.add_argument("--opponent", help="the other role's policy spec (default: rule validator / honest proposer)")
    tr.add_argument("--reward-mode", choices=("individual", "welfare"), default="individual")
    intensities = list_of(audit_intensity, "audit intensities in [0, 1]")
    tr.add_argument(
        "--audit-intensities",
        type=intensities,
        metavar="Q1,Q2,...",
        help="comma-separated audit intensities, each episode's q drawn from them",
    )
    tr.add_argument("--q-values", dest="audit_intensities", type=intensities, help=argparse.SUPPRESS)  # deprecated
    tr.add_argument(
        "--eval-seeds",
        type=list_of(seed_arg, "seeds", distinct=True),
        default="1000,1001,1002",
        help="held-out seeds for the evaluation (default 1000,1001,1002)",
    )
    tr.add_argument(
        "--eval-episodes", type=episodes_arg, default=2000, help="episodes per evaluation seed (default 2000)"
    )
    tr.add_argument(
        "--n-envs",
        type=int_in(1, 4096),
        default=8,
        help="environments stepped together, seeded seed, seed+1, ... (default 8)",
    )
    tr.add_argument(
        "--no-vec-env",
        dest="vectorised",
        action="store_false",
        help="step the environments as single views in SB3's DummyVecEnv instead of the native "
        "vectorised environment (the same episodes, slower)",
    )
    add_config_flags(tr, ExchangeAuditConfig)
    from eq_env.baselines.rllib import add_rllib_flags

    add_rllib_flags(tr)


def _train(args: argparse.Namespace) -> int:
    if args.backend == "rllib":
        return _train_rllib(args)
    if args.role is None:
        raise ValueError("--role is required with --backend sb3 (--backend rllib trains both roles)")
    if args.ray_address is not None:
        raise ValueError("--ray-address goes with --backend rllib")
    from eq_env.baselines.exchange_audit.rl import train

    config = config_from_args(args, ExchangeAuditConfig)
    result = train(
        args.role,
        args.out,
        algo=args.algo,
        timesteps=args.timesteps,
        seed=args.seed,
        config=config,
        opponent=args.opponent,
        reward_mode=args.reward_mode,
        audit_intensities=args.audit_intensities,
        eval_seeds=args.eval_seeds,
        eval_episodes=args.eval_episodes,
        progress=None,
        n_envs=args.n_envs,
        vectorised=args.vectorised,
    )
    asked = f" ({result.timesteps} asked; SB3 ends on a whole rollout)" if result.steps_run != result.timesteps else ""
    print(
        f"trained {result.role} ({result.algo}) for {result.steps_run} steps{asked} in {result.seconds:.1f} s "
        f"({result.steps_per_second:.0f} steps/s); saved to {result.path}"
    )
    print(f"use it anywhere a policy goes: --{result.role} sb3:path={result.path}")
    print(
        f"evaluation on held-out seeds {', '.join(map(str, args.eval_seeds))}, {args.eval_episodes} episodes each, "
        f"the trained {result.role} greedy (its most likely action); mean and std over the seeds:\n"
    )
    print(result.table())
    return 0


def _train_rllib(args: argparse.Namespace) -> int:
    from eq_env.baselines.rllib import run_from_args

    given = {
        "--role": args.role is not None,
        "--algo": args.algo != "ppo",
        "--opponent": args.opponent is not None,
        "--reward-mode": args.reward_mode != "individual",
        "--audit-intensities": args.audit_intensities is not None,
    }
    sb3_only = [flag for flag, was_given in given.items() if was_given]
    if sb3_only:
        raise ValueError(
            f"{', '.join(sb3_only)} go(es) with --backend sb3: --backend rllib trains both roles "
            "with PPO, each on its own payoff, at the configuration's q"
        )
    return run_from_args("exchange-audit", args, config_from_args(args, ExchangeAuditConfig))


COMMAND = Command(
    "train",
    "train a proposer or validator with Stable-Baselines3 (or both with RLlib) and evaluate it",
    _train_arguments,
    _train,
    "Train one role on its single-agent view against a fixed policy for the other role; save the model, its "
    "configuration and a learning curve into --out; print its metrics on held-out seeds. The saved model is "
    "then the policy spec 'sb3:path=OUT'. With --backend rllib: both roles at once (a PPO module each, "
    "RLlib multi-agent, on Ray), saved as the policy spec 'rllib:path=OUT' of either role.",
)
