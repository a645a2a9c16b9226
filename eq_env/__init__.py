"""eq_env: multi-agent environments where agents exchange verifiable reasoning.

Importing the package registers its environments with PettingZoo, and the
single-agent view of each role with Gymnasium::

    import eq_env, pettingzoo, gymnasium
    env = pettingzoo.make("aec", "eq_env/exchange-audit-v0", q=0.3)
    proposer_env = gymnasium.make("eq_env/ExchangeAuditProposer-v0", validator="rule", q=0.3)
"""

from __future__ import annotations

import gymnasium
import pettingzoo

from eq_env import exchange_audit_v0
from eq_env.exchange_audit import ExchangeAuditConfig

__version__ = "0.1.0"
__all__ = ["ENV_IDS", "GYM_IDS", "ExchangeAuditConfig", "__version__", "exchange_audit_v0"]

# id -> versioned module; tests and tools iterate over this, so a new
# environment is tested the day it is registered.
ENV_IDS = {"eq_env/exchange-audit-v0": "eq_env.exchange_audit_v0"}

for _id, _module in ENV_IDS.items():
    if _id not in pettingzoo.aec_registry:
        pettingzoo.register("aec", _id, entry_point=f"{_module}:env")
        pettingzoo.register("parallel", _id, entry_point=f"{_module}:parallel_env")

# Single-agent views of one role against fixed policies for the other (for SB3 and other RL libraries).
GYM_IDS = {
    "eq_env/ExchangeAuditProposer-v0": "eq_env.exchange_audit.views:ExchangeAuditProposerEnv",
    "eq_env/ExchangeAuditValidator-v0": "eq_env.exchange_audit.views:ExchangeAuditValidatorEnv",
}
for _id, _entry in GYM_IDS.items():
    if _id not in gymnasium.registry:
        gymnasium.register(id=_id, entry_point=_entry)
