"""The exchange–audit game: rules (:mod:`.rules`), configuration (:mod:`.config`),
space encoding (:mod:`.spaces`), PettingZoo adapters (:mod:`.env`)."""

from eq_env.exchange_audit.config import PRESETS, ExchangeAuditConfig
from eq_env.exchange_audit.rules import (
    Artifact,
    AuditOutcome,
    AuditRecord,
    Claims,
    Decision,
    Intent,
    Payoffs,
    Proposal,
    ProposerAction,
    ProposerView,
    PublicInfo,
    State,
    Submission,
    ValidatorView,
)
from eq_env.exchange_audit.spaces import ActionError, ExchangeAuditSpaces

__all__ = [
    "PRESETS",
    "ActionError",
    "Artifact",
    "AuditOutcome",
    "AuditRecord",
    "Claims",
    "Decision",
    "ExchangeAuditConfig",
    "ExchangeAuditSpaces",
    "Intent",
    "Payoffs",
    "Proposal",
    "ProposerAction",
    "ProposerView",
    "PublicInfo",
    "State",
    "Submission",
    "ValidatorView",
]
