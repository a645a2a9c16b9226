"""The repeated exchange–audit game (issue 14, item 1): rounds of the one-shot game under an audit policy.

:mod:`.game` the rules and configuration (horizon, public record, audit policies), :mod:`.env` the PettingZoo
adapters (the manual), :mod:`.records` episode records and metrics, :mod:`.spec` its registration,
:mod:`.views` the proposer's Gymnasium view, :mod:`.dp` the proposer's best response by dynamic programming
over the reputation state, :mod:`.experiment` ``eq-env repeated``.
"""

from eq_env.exchange_audit.repeated.game import (
    AUDIT_POLICIES,
    RepeatedConfig,
    RepeatedGame,
    Reputation,
    RoundRecord,
    Verdict,
    audit_intensity,
    audit_verdict,
    next_reputation,
)

__all__ = [
    "AUDIT_POLICIES",
    "RepeatedConfig",
    "RepeatedGame",
    "Reputation",
    "RoundRecord",
    "Verdict",
    "audit_intensity",
    "audit_verdict",
    "next_reputation",
]
