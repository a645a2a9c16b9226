"""The repeated exchange–audit game: rounds of the one-shot game under an audit policy.

:mod:`.rules` the rules and configuration (horizon, public record, audit policies), :mod:`.env` the PettingZoo
adapters (the manual), :mod:`.records` episode records and metrics, :mod:`.spec` its registration,
:mod:`.views` the proposer's Gymnasium view, :mod:`.dp` the proposer's best response by dynamic programming
over the reputation state (its experiment, ``eq-env repeated``, is
:mod:`eq_env.studies.exchange_audit.repeated.experiment`).
"""

from eq_env.exchange_audit.repeated.rules import (
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
