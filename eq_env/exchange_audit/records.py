"""The exchange–audit game's episode record and metrics (the paper's, and a few more).

:class:`EpisodeRecord` is one finished episode, flat and JSON-ready;
:func:`compute_metrics` computes :data:`METRICS` from records or from the
batch engine's columns, which :func:`records_to_columns` reproduces from
records, so both engines are measured by one function.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from eq_env.exchange_audit.env import PROPOSER, VALIDATOR
from eq_env.exchange_audit.rules import (
    REQUIRED_CLAIMS,
    AuditOutcome,
    Claims,
    EpisodeOutcome,
    Intent,
    ProposerAction,
)
from eq_env.exchange_audit.schema import get_schema
from eq_env.exchange_audit.spaces import NUMBER_BOUNDS

__all__ = ["METRICS", "EpisodeRecord", "compute_metrics", "record_episode", "records_to_columns"]


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished episode, flat and JSON-ready."""

    seed: int
    episode: int
    ambiguous: bool
    intent: str
    compliant: bool
    risk_limit: float
    delta_limit: float
    true_risk: float
    true_net_delta: float
    observed_risk: float
    observed_net_delta: float
    observed_hedge_size: float
    proposer_action: str
    reported_intent: str
    reported_risk: float
    reported_net_delta: float
    reported_hedge_size: float
    claim_intent: str | None
    claim_risk_within_limit: bool | None
    claim_net_delta_bounded: bool | None
    claim_risk_metric: float | None
    claim_confidence: float | None
    words: int
    tokens: int
    audit_outcome: str
    audit_checked: tuple[str, ...]
    audit_failed: tuple[str, ...]
    decision: str
    approved: bool
    proposer_payoff: float
    validator_payoff: float
    welfare: float
    proposer_info: dict[str, Any] | None = None  # what an LLM policy reports: tokens, fallbacks, transport
    validator_info: dict[str, Any] | None = None
    # the claims a claim schema adds (name -> value, a label for an enum), None under the paper's schema
    claim_extra: dict[str, Any] | None = None
    # the agent whose action, forbidden by its mask, ended the episode (played as BLOCK: the environment's
    # illegal_actions="terminate"); None in every episode the runner plays (it never sends one)
    illegal_action: str | None = None

    @property
    def infos(self) -> dict[str, dict[str, Any]]:
        """What each agent's policy reported (LLM policies: tokens, fallbacks, transport), by agent."""
        return {a: i for a, i in ((PROPOSER, self.proposer_info), (VALIDATOR, self.validator_info)) if i}

    @property
    def audited(self) -> bool:
        return self.audit_outcome != AuditOutcome.SKIPPED.name

    @property
    def misreported(self) -> bool:
        """A request whose reported position differs from what the proposer observed (intent: from the truth).

        A NO_TRADE's reported numbers are not acted on, so they do not count."""
        if self.proposer_action != ProposerAction.REQUEST_APPROVAL.name:
            return False
        low, high = NUMBER_BOUNDS
        observed = np.clip([self.observed_risk, self.observed_net_delta, self.observed_hedge_size], low, high)
        reported = (self.reported_risk, self.reported_net_delta, self.reported_hedge_size)
        return self.reported_intent != self.intent or any(
            abs(r - o) > 1e-9 for r, o in zip(reported, observed.tolist(), strict=True)
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeRecord:
        """The record ``data`` holds (e.g. a JSON line); a ValueError names a missing or mistyped field."""
        from eq_env.core.records import checked_fields

        return cls(**checked_fields(cls, data))

    @classmethod
    def from_outcome(
        cls,
        outcome: EpisodeOutcome,
        seed: int,
        episode: int,
        proposer_info: dict[str, Any] | None = None,
        validator_info: dict[str, Any] | None = None,
    ) -> EpisodeRecord:
        s, v, sub, audit = outcome.state, outcome.view, outcome.submission, outcome.audit
        c, p = sub.artifact.claims, sub.proposal
        return cls(
            seed=seed,
            episode=episode,
            ambiguous=s.ambiguous,
            intent=s.intent.name,
            compliant=s.compliant,
            risk_limit=s.risk_limit,
            delta_limit=s.delta_limit,
            true_risk=s.true_risk,
            true_net_delta=s.true_net_delta,
            observed_risk=v.observed_risk,
            observed_net_delta=v.observed_net_delta,
            observed_hedge_size=v.observed_hedge_size,
            proposer_action=sub.action.name,
            reported_intent=p.intent.name,
            reported_risk=p.risk,
            reported_net_delta=p.net_delta,
            reported_hedge_size=p.hedge_size,
            claim_intent=None if c.intent is None else c.intent.name,
            claim_risk_within_limit=c.risk_within_limit,
            claim_net_delta_bounded=c.net_delta_bounded,
            claim_risk_metric=c.risk_metric,
            claim_confidence=c.confidence,
            words=sub.artifact.words,
            tokens=sub.artifact.tokens,
            audit_outcome=audit.outcome.name,
            audit_checked=audit.checked,
            audit_failed=audit.failed,
            decision=outcome.decision.name,
            approved=outcome.approved,
            proposer_payoff=outcome.payoffs.proposer,
            validator_payoff=outcome.payoffs.validator,
            welfare=outcome.payoffs.welfare,
            proposer_info=proposer_info,
            validator_info=validator_info,
            claim_extra=_claim_extra(c, v.public.claim_schema),
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["audit_checked"] = list(self.audit_checked)
        out["audit_failed"] = list(self.audit_failed)
        if self.claim_extra is None:
            del out["claim_extra"]  # (the paper's records: as they were before claim schemas)
        if self.illegal_action is None:
            del out["illegal_action"]  # (legal play's records: as they were)
        return out


def _claim_extra(claims: Claims, claim_schema: str) -> dict[str, Any] | None:
    """A record's ``claim_extra``: every claim the schema adds, None where not made (None for the paper's)."""
    if claim_schema == "paper":
        return None
    schema = get_schema(claim_schema)
    made = dict(claims.extra)
    return {c.name: None if c.name not in made else c.to_json(made[c.name]) for c in schema.extra}


def record_episode(env: Any, seed: int, episode: int, infos: Mapping[str, Any]) -> EpisodeRecord:
    """The record of the episode a raw environment just finished (``infos``: what each agent's policy
    reported)."""
    outcome = env.game.outcome
    if outcome is None:
        raise RuntimeError("the episode is not over: no outcome to record")
    record = EpisodeRecord.from_outcome(outcome, seed, episode, infos.get(PROPOSER), infos.get(VALIDATOR))
    illegal = getattr(env, "illegal_action", None)
    return record if illegal is None else replace(record, illegal_action=illegal)


# ---------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------
METRICS: dict[str, str] = {
    "approval_rate": "approved / episodes",
    "bad_approval_rate": "approved and non-compliant / episodes",
    "welfare": "mean welfare per episode",
    "words": "mean words of free text",
    "ambiguous_approval_rate": "approved / ambiguous episodes",
    "ambiguous_welfare": "mean welfare over ambiguous episodes",
    "audit_rate": "audited / episodes",
    "audit_fail_rate": "failed / audited episodes (undefined without audits)",
    "request_rate": "REQUEST_APPROVAL / episodes",
    "claim_truthfulness": "stated intent/limit claims that are true / all stated",
    "misreport_rate": "requests whose reported position differs from the observed one / episodes",
    "proposer_payoff": "mean proposer payoff",
    "validator_payoff": "mean validator payoff",
}


def _code(value: str | bool | None, kind: type[Intent] | None = None) -> int:
    """A claim or intent as the batch engine codes it: -1 absent, else the value."""
    if value is None:
        return -1
    if kind is not None:
        return int(kind[value])  # type: ignore[index]
    return int(bool(value))


def records_to_columns(records: Sequence[EpisodeRecord], claim_schema: str = "paper") -> dict[str, np.ndarray]:
    """Per-episode column arrays, the same keys and codes as the batch engine produces.

    Codes: intents as :class:`Intent` values; claims -1 absent, else the value
    (intent code, or 0/1); audit outcomes as :class:`AuditOutcome` values. Under another ``claim_schema``
    the audit columns run over its pool, and each claim it adds has a ``claim_<name>`` column (float64, NaN
    where not made), as the batch engine's.
    """
    schema = get_schema(claim_schema)
    pool = schema.checkable
    n = len(records)
    stated = np.zeros(n)
    true = np.zeros(n)
    for i, r in enumerate(records):
        truth = {
            "intent": r.intent,
            "risk_within_limit": r.true_risk <= r.risk_limit,
            "net_delta_bounded": abs(r.true_net_delta) <= r.delta_limit,
        }
        for name in REQUIRED_CLAIMS:
            claim = getattr(r, f"claim_{name}")
            if claim is not None:
                stated[i] += 1
                true[i] += claim == truth[name]

    def col(name: str, dtype: Any) -> np.ndarray:
        return np.array([getattr(r, name) for r in records], dtype=dtype)

    def checks(name: str) -> np.ndarray:
        return np.array([[c in getattr(r, name) for c in pool] for r in records], dtype=bool).reshape(n, len(pool))

    def extra(claim: Any) -> np.ndarray:
        def code(r: EpisodeRecord) -> float:
            value = (r.claim_extra or {}).get(claim.name)
            return math.nan if value is None else float(claim.normalise(value))

        return np.array([code(r) for r in records], dtype=np.float64)

    outcome = np.array([AuditOutcome[r.audit_outcome] for r in records], dtype=np.int8)
    return {
        "ambiguous": col("ambiguous", bool),
        "intent": np.array([_code(r.intent, Intent) for r in records], dtype=np.int8),
        "compliant": col("compliant", bool),
        "risk_limit": col("risk_limit", np.float64),
        "true_risk": col("true_risk", np.float64),
        "true_net_delta": col("true_net_delta", np.float64),
        "observed_risk": col("observed_risk", np.float64),
        "observed_net_delta": col("observed_net_delta", np.float64),
        "requested": np.array([r.proposer_action == ProposerAction.REQUEST_APPROVAL.name for r in records], dtype=bool),
        "reported_intent": np.array([_code(r.reported_intent, Intent) for r in records], dtype=np.int8),
        "reported_risk": col("reported_risk", np.float64),
        "reported_net_delta": col("reported_net_delta", np.float64),
        "reported_hedge_size": col("reported_hedge_size", np.float64),
        "claim_intent": np.array([_code(r.claim_intent, Intent) for r in records], dtype=np.int8),
        "claim_risk_within_limit": np.array([_code(r.claim_risk_within_limit) for r in records], dtype=np.int8),
        "claim_net_delta_bounded": np.array([_code(r.claim_net_delta_bounded) for r in records], dtype=np.int8),
        "words": col("words", np.float64),
        "tokens": col("tokens", np.float64),
        "audited": outcome != AuditOutcome.SKIPPED,
        "audit_outcome": outcome,
        "audit_checked": checks("audit_checked"),
        "audit_failed_checks": checks("audit_failed"),
        "audit_failed": outcome == AuditOutcome.FAIL,
        "approved": col("approved", bool),
        "claims_stated": stated,
        "claims_true": true,
        "misreported": np.array([r.misreported for r in records], dtype=bool),
        **{f"claim_{c.name}": extra(c) for c in schema.extra},
        "proposer_payoff": col("proposer_payoff", np.float64),
        "validator_payoff": col("validator_payoff", np.float64),
        "welfare": col("welfare", np.float64),
    }


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else math.nan


def compute_metrics(columns: Mapping[str, np.ndarray] | Sequence[EpisodeRecord]) -> dict[str, float]:
    """The metrics of :data:`METRICS` for one run (NaN where undefined)."""
    cols = records_to_columns(columns) if not isinstance(columns, Mapping) else columns
    amb, audited = cols["ambiguous"], cols["audited"]
    stated = float(cols["claims_stated"].sum())
    return {
        "approval_rate": _mean(cols["approved"]),
        "bad_approval_rate": _mean(cols["approved"] & ~cols["compliant"]),
        "welfare": _mean(cols["welfare"]),
        "words": _mean(cols["words"]),
        "ambiguous_approval_rate": _mean(cols["approved"][amb]),
        "ambiguous_welfare": _mean(cols["welfare"][amb]),
        "audit_rate": _mean(audited),
        "audit_fail_rate": _mean(cols["audit_failed"][audited]),
        "request_rate": _mean(cols["requested"]),
        "claim_truthfulness": float(cols["claims_true"].sum()) / stated if stated else math.nan,
        "misreport_rate": _mean(cols["misreported"]),
        "proposer_payoff": _mean(cols["proposer_payoff"]),
        "validator_payoff": _mean(cols["validator_payoff"]),
    }
