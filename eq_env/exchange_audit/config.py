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
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["COST_MODELS", "PRESETS", "ExchangeAuditConfig", "FieldRange"]

COST_MODELS = ("words", "tokens")


@dataclass(frozen=True)
class FieldRange:
    """Closed range ``[low, high]`` a numeric field must lie in."""

    low: float
    high: float
    integer: bool = False
    low_open: bool = False  # the range is (low, high]

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        high = "inf)" if math.isinf(self.high) else f"{self.high:g}]"
        return f"{kind} in {'(' if self.low_open else '['}{self.low:g}, {high}"

    def __contains__(self, value: float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def check(self, name: str, value: Any) -> int | float:
        """``value`` as the field ``name`` stores it, or a ValueError naming ``name`` and this range."""
        return _checked_number(name, value, self)


def _param(default: Any, low: float, high: float, doc: str, integer: bool = False, low_open: bool = False) -> Any:
    return field(default=default, metadata={"range": FieldRange(low, high, integer, low_open), "doc": doc})


@dataclass(frozen=True)
class ExchangeAuditConfig:
    """Parameters of one exchange–audit game (the paper preset by default).

    Use :meth:`from_preset` or :meth:`replace` to derive variants; the
    instance itself is immutable and hashable, so it can key caches and
    sweep results.
    """

    q: float = _param(0.3, 0.0, 1.0, "audit intensity: probability an episode is audited")
    B: int | None = _param(4, 0, math.inf, "audit budget: claim types checked per audit (None or >= 4: all four)", True)
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
    cost_model: str = field(
        default="words",
        metadata={"doc": "what alpha is charged per: 'words' of free text (the paper) or 'tokens' of the artifact"},
    )
    reveal_compliance: bool = field(
        default=False,
        metadata={
            "doc": "the proposer also observes whether its true risk and net delta are within the limits "
            "(the paper's scripted trader read this from the state)"
        },
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "reveal_compliance":
                if not isinstance(value, (bool, np.bool_)):
                    raise ValueError(f"reveal_compliance must be True or False, got {value!r}")
                object.__setattr__(self, f.name, bool(value))
                continue
            if f.name == "B" and value is None:
                continue
            if f.name == "cost_model":
                if value not in COST_MODELS:
                    raise ValueError(f"cost_model must be one of {COST_MODELS}, got {value!r}")
                continue
            object.__setattr__(self, f.name, _checked_number(f.name, value, f.metadata["range"]))
        if self.risk_limit_low > self.risk_limit_high:
            raise ValueError(
                f"risk_limit_low ({self.risk_limit_low:g}) must not exceed risk_limit_high ({self.risk_limit_high:g})"
            )

    # -- derived -------------------------------------------------------------
    @property
    def checks_per_audit(self) -> int:
        """Number of claim types an audit checks (B capped at the pool of four)."""
        return 4 if self.B is None else min(self.B, 4)

    # -- construction ----------------------------------------------------------
    @classmethod
    def from_preset(cls, preset: str = "paper", /, **overrides: Any) -> ExchangeAuditConfig:
        """The named preset, with ``overrides`` applied (validated).

        ``preset`` is positional-only, so an override named ``preset`` is an unknown parameter, not a clash.
        """
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
        return PRESETS[preset].replace(**overrides)

    def replace(self, **overrides: Any) -> ExchangeAuditConfig:
        """A copy with some fields changed; unknown names raise ``ValueError``."""
        unknown = set(overrides) - set(self.field_names())
        if unknown:
            raise ValueError(
                f"unknown exchange-audit parameter(s) {sorted(unknown)}; valid names: {', '.join(self.field_names())}"
            )
        return dataclasses.replace(self, **overrides)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExchangeAuditConfig:
        return cls().replace(**data)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))


def _checked_number(name: str, value: Any, rng: FieldRange) -> int | float:
    """``value`` as a plain int or float if it lies in ``rng``, else a ValueError naming ``name``.

    numpy scalars are accepted (sweeps often iterate over ``np.linspace``);
    booleans and strings are not. Types are normalised so that equal configs
    hash and serialise identically.
    """
    error = ValueError(f"{name} must be {rng.describe()}, got {_shown(value)}")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise error
    try:
        if rng.integer:
            if isinstance(value, numbers.Integral):
                number: int | float = int(value)
            else:
                if not float(value).is_integer():
                    raise error
                number = int(float(value))
        else:
            number = float(value)
    except OverflowError:  # an integer no float can hold: out of every range we have
        raise error from None
    if (isinstance(number, float) and math.isnan(number)) or number not in rng:
        raise error
    return number


def _shown(value: Any) -> str:
    """``repr(value)``, with a huge integer shortened so the error stays one readable line."""
    text = repr(value)
    if len(text) > 40 and isinstance(value, numbers.Integral):
        return f"{text[:12]}... (an integer of {len(text.lstrip('-'))} digits)"
    return text


PRESETS: dict[str, ExchangeAuditConfig] = {
    "paper": ExchangeAuditConfig(),
    "paper_main_script": ExchangeAuditConfig(ambiguous_rate=0.4),
    "paper_scripted": ExchangeAuditConfig(reveal_compliance=True),
}
