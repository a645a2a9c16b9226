"""eq_env: multi-agent environments where agents exchange verifiable reasoning.

Importing the package registers every game with PettingZoo, and the
single-agent view of each role with Gymnasium::

    import eq_env, pettingzoo, gymnasium
    env = pettingzoo.make("aec", "eq_env/exchange-audit-v0", q=0.3)
    proposer_env = gymnasium.make("eq_env/ExchangeAuditProposer-v0", validator="rule", q=0.3)
    puzzle_env = pettingzoo.make("aec", "eq_env/einstein-puzzle-v0", n=5, comm_mode="seek_only")
    team = pettingzoo.make("parallel", "eq_env/belief-coordination-v0", n_executors=5)
    rounds = pettingzoo.make("aec", "eq_env/exchange-audit-repeated-v0", rounds=10, audit_policy="decay")

The games are :mod:`eq_env.core.spec` registrations (``eq_env.core.spec.registered_envs()``);
the ids and views below are derived from them.
"""

from __future__ import annotations

from eq_env import belief_coordination_v0, einstein_puzzle_v0, exchange_audit_repeated_v0, exchange_audit_v0
from eq_env.belief_coordination import BeliefCoordinationConfig
from eq_env.core.padding import flatten_numeric, pad_numeric
from eq_env.core.spec import registered_envs
from eq_env.einstein_puzzle import EinsteinPuzzleConfig
from eq_env.exchange_audit import ExchangeAuditConfig
from eq_env.exchange_audit import spec as _exchange_audit  # noqa: F401 - registers the game (first: the default)

# isort: split
from eq_env.einstein_puzzle import spec as _einstein_puzzle  # noqa: F401 - registers the game (after the default)

# isort: split
from eq_env.belief_coordination import spec as _belief_coordination  # noqa: F401 - registers the game (third)

# isort: split
from eq_env.exchange_audit.repeated import spec as _exchange_audit_repeated  # noqa: F401 - registers the game
from eq_env.version import __version__

__all__ = [
    "ENV_IDS",
    "GYM_IDS",
    "BeliefCoordinationConfig",
    "EinsteinPuzzleConfig",
    "ExchangeAuditConfig",
    "__version__",
    "belief_coordination_v0",
    "einstein_puzzle_v0",
    "exchange_audit_repeated_v0",
    "exchange_audit_v0",
    "flatten_numeric",
    "pad_numeric",
]

# id -> versioned module, and the single-agent views of one role against fixed policies for the other (for
# SB3 and other RL libraries), of the games this package registers (register_env registered them with
# PettingZoo and Gymnasium).
ENV_IDS = {spec.id: spec.entry for spec in registered_envs(installed=False)}
GYM_IDS = {view: entry for spec in registered_envs(installed=False) for view, entry in spec.views.items()}
