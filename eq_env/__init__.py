"""eq_env: multi-agent environments where agents exchange verifiable reasoning.

Importing the package registers its environments with PettingZoo::

    import eq_env, pettingzoo
    env = pettingzoo.make("aec", "eq_env/exchange-audit-v0", q=0.3)
"""

from __future__ import annotations

import pettingzoo

from eq_env import exchange_audit_v0
from eq_env.exchange_audit import ExchangeAuditConfig

__version__ = "0.1.0"
__all__ = ["ENV_IDS", "ExchangeAuditConfig", "__version__", "exchange_audit_v0"]

# id -> versioned module; tests and tools iterate over this, so a new
# environment is tested the day it is registered.
ENV_IDS = {"eq_env/exchange-audit-v0": "eq_env.exchange_audit_v0"}

for _id, _module in ENV_IDS.items():
    if _id not in pettingzoo.aec_registry:
        pettingzoo.register("aec", _id, entry_point=f"{_module}:env")
        pettingzoo.register("parallel", _id, entry_point=f"{_module}:parallel_env")
