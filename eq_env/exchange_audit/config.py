"""One validated configuration for the exchange–audit game.

Every parameter of the paper's game is a field of :class:`ExchangeAuditConfig`,
named with the paper's symbol where it has one (``q``, ``B``, ``V``, ``L``).
An invalid value raises :class:`ValueError` naming the field and its allowed
range, so a typo in a sweep fails at once rather than after an hour of runs.

Presets:

``"paper"``
    The mechanics of the paper's code, which produced its tables: V = 1,
    L = 2, α = 0.02 per word, c = 0.1 per audit, B = 4, max 60 words, half of
    the episodes ambiguous (its experiment scripts), noise SD 0.05, q = 0.3.
    The proposer observes what the spec lists (true intent, noisy numbers,
    limits, payoff parameters), not its true compliance; the paper's
    *scripted* trader also read that from the state, which
    ``reveal_compliance=True`` (or the ``"paper_scripted"`` preset) gives.
``"paper_main_script"``
    As ``"paper"`` but with ``ambiguous_rate = 0.4``, the value of the
    paper's main script.
``"paper_scripted"``
    As ``"paper"`` with ``reveal_compliance=True``: the information the
    paper's scripted trader had.

Fields added after the first results were keyed (noisy audits; the free-text ``regime``) are left out
of :meth:`ExchangeAuditConfig.to_dict` at their defaults, so a configuration
that does not use them keys its results as before they existed.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from eq_env.core.config import FieldRange, GameConfig, checked_number, choice, flag, number
from eq_env.exchange_audit.schema import SCHEMA_NAMES, get_schema

__all__ = ["COST_MODELS", "PRESETS", "REGIMES", "ExchangeAuditConfig", "FieldRange"]

COST_MODELS = ("words", "tokens")
# What of the proposer's artifact reaches the validator and the audit (rules.withhold).
REGIMES = ("artifacts", "text_only", "action_only")


def _param(default: Any, low: float, high: float, doc: str, integer: bool = False, low_open: bool = False) -> Any:
    return number(default, low, high, doc, integer=integer, low_open=low_open)


@dataclass(frozen=True)
class ExchangeAuditConfig(GameConfig):
    """Parameters of one exchange–audit game (the paper preset by default).

    Use :meth:`from_preset` or :meth:`replace` to derive variants; the
    instance itself is immutable and hashable, so it can key caches and
    sweep results.
    """

    NAME: ClassVar[str] = "exchange-audit"
    DEFAULT_PRESET: ClassVar[str] = "paper"

    q: float = _param(0.3, 0.0, 1.0, "audit intensity: probability an episode is audited")
    B: int | None = number(
        4,
        0,
        math.inf,
        "audit budget: claim types checked per audit (None or >= the claim "
        "schema's pool: all of it, four in the paper's)",
        integer=True,
        none="all",
    )
    V: float = _param(1.0, 0.0, 1e6, "approval reward (proposer, and validator if compliant)")
    L: float = _param(2.0, 0.0, 1e6, "penalty to the proposer for a failed audit")
    alpha: float = _param(0.02, 0.0, 1e3, "cost per word of free text, charged to the proposer")
    audit_cost: float = _param(0.1, 0.0, 1e6, "cost c of one audit, charged to the validator")
    max_words: int = _param(60, 0, 10_000, "free text is truncated to this many words", True)
    ambiguous_rate: float = _param(0.5, 0.0, 1.0, "probability an episode is ambiguous")
    noise_sd: float = _param(0.05, 0.0, 1.0, "SD of the proposer's observation noise")
    delta_limit: float = _param(0.3, 0.0, 1.5, "limit on |net delta|", low_open=True)
    risk_limit_low: float = _param(0.8, 0.0, 3.0, "risk limit ~ U(risk_limit_low, risk_limit_high)", low_open=True)
    risk_limit_high: float = _param(1.2, 0.0, 3.0, "upper end of the risk limit's range", low_open=True)
    safe_margin: float = _param(0.05, 0.0, 1.0, "margin of the rule's 'comfortable' test")
    no_trade_payoff: float = _param(1.0, -1e6, 1e6, "payoff to each agent for NO_TRADE")
    bad_approval_loss: float = _param(10.0, 0.0, 1e6, "validator's loss for approving a non-compliant trade")
    max_text_chars: int = _param(
        100_000, 1, 10_000_000, "longest raw free text (characters) an action may carry, before truncation", True
    )
    max_artifact_tokens: int = _param(
        4096, 0, 1_000_000, "largest token count a proposer may declare for its artifact", True
    )
    cost_model: str = choice(
        "words", COST_MODELS, "what alpha is charged per: 'words' of free text (the paper) or 'tokens' of the artifact"
    )
    reveal_compliance: bool = flag(
        False,
        "the proposer also observes whether its true risk and net delta are within the limits "
        "(the paper's scripted trader read this from the state)",
    )
    # Noisy audits: a checked claim's verdict is flipped with these probabilities, per
    # claim type: a true claim fails at its false-fail rate (epsilon_1), a lie passes at its miss rate
    # (epsilon_0); the audit's reading of a limit whose claim it checked flips with the verdict.
    false_fail_intent: float = _param(0.0, 0.0, 1.0, "noisy audits: P(a checked true intent claim fails)")
    false_fail_risk_within_limit: float = _param(
        0.0, 0.0, 1.0, "noisy audits: P(a checked true risk_within_limit claim fails)"
    )
    false_fail_net_delta_bounded: float = _param(
        0.0, 0.0, 1.0, "noisy audits: P(a checked true net_delta_bounded claim fails)"
    )
    false_fail_confidence: float = _param(0.0, 0.0, 1.0, "noisy audits: P(a checked valid confidence claim fails)")
    miss_intent: float = _param(0.0, 0.0, 1.0, "noisy audits: P(a checked false intent claim passes)")
    miss_risk_within_limit: float = _param(
        0.0, 0.0, 1.0, "noisy audits: P(a checked false risk_within_limit claim passes)"
    )
    miss_net_delta_bounded: float = _param(
        0.0, 0.0, 1.0, "noisy audits: P(a checked false net_delta_bounded claim passes)"
    )
    miss_confidence: float = _param(0.0, 0.0, 1.0, "noisy audits: P(a checked out-of-range confidence claim passes)")
    audit_delayed: bool = flag(
        False,
        "the audit's result arrives after the decision: the validator decides as if unaudited; "
        "the audit's cost and the penalty L on a failed audit still apply",
    )
    # The free-text regime: which part of the artifact is sent (rules.withhold).
    regime: str = choice(
        "artifacts",
        REGIMES,
        "what of the artifact reaches the validator and the audit: 'artifacts' (typed claims and text, the "
        "paper), 'text_only' (the typed claims are withheld: an audit is then inconclusive) or 'action_only' "
        "(nothing: neither sent nor charged)",
    )
    # Claim schemas: the registered schema whose claim types the proposer may state, the
    # audit checks and the rule engine requires (eq_env.exchange_audit.schema). Its choices are the live
    # registry, so a schema registered in Python is accepted too.
    claim_schema: str = field(
        default="paper",
        metadata={
            "choices": SCHEMA_NAMES,
            "doc": "claim schema: the registered set of claim types ('paper': the "
            "paper's five; 'rich': adds a conditional hedge-cover claim and a required risk interval)",
        },
    )

    def validate(self) -> None:
        if self.risk_limit_low > self.risk_limit_high:
            raise ValueError(
                f"risk_limit_low ({self.risk_limit_low:g}) must not exceed risk_limit_high ({self.risk_limit_high:g})"
            )

    # -- derived -------------------------------------------------------------
    @property
    def false_fail_rates(self) -> tuple[float, float, float, float]:
        """epsilon_1 per checkable claim, in the order of ``game.CHECKABLE_CLAIMS``."""
        return (
            self.false_fail_intent,
            self.false_fail_risk_within_limit,
            self.false_fail_net_delta_bounded,
            self.false_fail_confidence,
        )

    @property
    def miss_rates(self) -> tuple[float, float, float, float]:
        """epsilon_0 per checkable claim, in the order of ``game.CHECKABLE_CLAIMS``."""
        return (self.miss_intent, self.miss_risk_within_limit, self.miss_net_delta_bounded, self.miss_confidence)

    @property
    def noisy_audits(self) -> bool:
        """Some audit verdict may be wrong (a false-fail or a miss rate above 0)."""
        return any(self.false_fail_rates) or any(self.miss_rates)

    def with_audit_noise(self, miss: float = 0.0, false_fail: float = 0.0) -> ExchangeAuditConfig:
        """A copy with the same miss rate (epsilon_0) and false-fail rate (epsilon_1) for every claim type."""
        return self.replace(
            **{f"miss_{name}": miss for name in _NOISY_CLAIMS},
            **{f"false_fail_{name}": false_fail for name in _NOISY_CLAIMS},
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields; those added after results were first keyed (:data:`KEYED_ONLY_IF_SET`) only when not at
        their default, so a configuration without them keys its results as before they existed."""
        data = super().to_dict()
        for name in KEYED_ONLY_IF_SET:
            if data[name] == _DEFAULTS[name]:
                del data[name]
        return data

    @property
    def checks_per_audit(self) -> int:
        """Number of claim types an audit checks (B capped at the claim schema's pool; four in the paper's)."""
        pool = 4 if self.claim_schema == "paper" else len(get_schema(self.claim_schema).checkable)
        return pool if self.B is None else min(self.B, pool)


_NOISY_CLAIMS = ("intent", "risk_within_limit", "net_delta_bounded", "confidence")
# The fields that make audits noisy or delayed.
AUDIT_OPTIONS = (
    *(f"false_fail_{name}" for name in _NOISY_CLAIMS),
    *(f"miss_{name}" for name in _NOISY_CLAIMS),
    "audit_delayed",
    "claim_schema",
)
# Fields added after results were first keyed by their configuration: left out of to_dict at default.
KEYED_ONLY_IF_SET = (*AUDIT_OPTIONS, "regime")
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ExchangeAuditConfig)}

_checked_number = checked_number  # (the name the tests and older code use)


PRESETS: dict[str, ExchangeAuditConfig] = {
    "paper": ExchangeAuditConfig(),
    "paper_main_script": ExchangeAuditConfig(ambiguous_rate=0.4),
    "paper_scripted": ExchangeAuditConfig(reveal_compliance=True),
}
ExchangeAuditConfig.PRESETS = PRESETS
