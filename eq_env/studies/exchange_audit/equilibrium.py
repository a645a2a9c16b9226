"""``eq-env equilibrium``: best responses of both roles and their incentive to deviate.

The searches are :mod:`eq_env.exchange_audit.equilibrium`'s (exact over the audit, Monte Carlo over states);
this module holds the command's flags and its report.
"""

from __future__ import annotations

import argparse
import math

from eq_env.core.cli import (
    MAX_EPISODES,
    Command,
    add_config_flags,
    config_from_args,
    int_in,
    seed_arg,
)
from eq_env.exchange_audit.config import ExchangeAuditConfig


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
def _equilibrium_arguments(eq: argparse.ArgumentParser) -> None:
    eq.add_argument("--validator", default="rule", help="the validator the proposer responds to (default rule)")
    eq.add_argument("--proposer", help="the proposer the validator responds to (default: the honest proposer)")
    eq.add_argument(
        "--episodes",
        type=int_in(4, MAX_EPISODES, " (half to choose, half to measure, two each)"),
        default=100_000,
        help="episodes drawn (default 100000)",
    )
    eq.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    add_config_flags(eq, ExchangeAuditConfig)


def _equilibrium(args: argparse.Namespace) -> int:
    from eq_env.exchange_audit.equilibrium import (
        analytic_threshold,
        game_threshold,
        proposer_best_response,
        validator_best_response,
    )
    from eq_env.exchange_audit.schema import get_schema

    config = config_from_args(args, ExchangeAuditConfig)
    proposer = args.proposer or ("honest:claims_from=truth" if config.reveal_compliance else "honest")
    print(
        f"game: q={config.q:g}, B={config.checks_per_audit}, V={config.V:g}, L={config.L:g}; "
        f"{args.episodes} episodes (half to choose, half to measure); audit exact, states Monte Carlo\n"
    )
    for role, spec in (("validator", args.validator), ("proposer", proposer)):
        trained = _trained(spec, role)
        if trained:
            print(f"the {role} is a trained policy, {trained}, on the episodes drawn from seed {args.seed}\n")
    print(
        proposer_best_response(config, args.validator, episodes=args.episodes, seed=args.seed, progress=None).summary()
    )
    print()
    print(
        validator_best_response(
            config, proposer, reference=args.validator, episodes=args.episodes, seed=args.seed, progress=None
        ).summary()
    )
    pool = len(get_schema(config.claim_schema).checkable)
    q_star = analytic_threshold(config.V, config.L, config.checks_per_audit, lies=1, pool=pool)
    if math.isinf(q_star):
        eq3 = "eq. 3 never deters a one-claim lie (no q up to 1 does)"
    elif q_star == 0:
        eq3 = "by eq. 3 a one-claim lie never pays"
    else:
        eq3 = f"eq. 3 deters a one-claim lie from q = {q_star:.3f}"
    # the lie earns (1 - q)·V (approved unless audited, never fined) against NO_TRADE's sure payoff
    V, sure = config.V, config.no_trade_payoff
    if V <= sure:
        lie = f"never pays (approved, it earns V = {V:g}, no more than NO_TRADE's sure {sure:g})"
    elif sure < 0:
        lie = f"pays at every q (even blocked, its 0 beats NO_TRADE's {sure:g})"
    else:
        lie = f"pays while q < {game_threshold(config):.3f}"
    print(f"\n{eq3}; in this game a lie that shades the numbers and states no false claim {lie}")
    return 0


def _trained(spec: str, role: str) -> str | None:
    """How a trained policy (its repr says greedy or sampled) plays, else None: a score of it must say so."""
    from eq_env.core.policy import make_policy

    shown = repr(make_policy(spec, role))
    for how, text in (("greedy", "plays greedily (its most likely action)"), ("sampled", "samples its actions")):
        if shown.endswith(f", {how})"):
            return f"{shown}: it {text}"
    return None


COMMAND = Command(
    "equilibrium",
    "best responses of both roles and their incentive to deviate",
    _equilibrium_arguments,
    _equilibrium,
    "Search the proposer's best response to the validator, and the validator's best response to the proposer "
    "(exact over the audit, Monte Carlo over states); print both gaps and the deviations found.",
)
