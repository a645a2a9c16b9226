"""The exchange–audit game vectorised over episodes, for policies that can act in bulk.

:func:`simulate` plays ``n`` episodes of one seed in a few dozen numpy
operations per chunk. It draws the same random numbers as the AEC
environment (:class:`~eq_env.exchange_audit.rules.DrawStream`), applies the
same arithmetic in the same order, and asks each policy for all its actions
at once through an optional method::

    proposer.act_batch(views: ProposerBatch) -> SubmissionBatch
    validator.act_batch(views: ValidatorBatch) -> np.ndarray  # bool, True = APPROVE

A policy is *batchable* when its own class defines ``act_batch`` (a subclass
that overrides behaviour but not ``act_batch`` is played through the AEC
environment instead). For the same seed the per-episode outcomes equal those
of :func:`eq_env.exchange_audit.runner.play`, which a test checks episode by episode.

What the batch does not reproduce: the value of a ``confidence`` claim (only
whether an audit would accept it, which is all the game uses), and the free
text itself unless a validator reads it: for a validator whose class sets
``reads_text = True`` the proposers are asked for their texts
(``ProposerBatch.with_texts``) and send them in ``SubmissionBatch.texts``.

The free-text regimes (``config.regime``, :func:`~eq_env.exchange_audit.rules.withhold`) apply to the
submissions before the audit and the validator see them (:func:`withhold_batch`), as the game does.

Claim schemas (:mod:`eq_env.exchange_audit.schema`): the claims a schema adds
ride in ``SubmissionBatch.extra_claims`` (name → float64 column, NaN where
not made, a bool as 1/0); the audit checks the schema's pool with its
declared checks on whole columns, and ``audit_checked`` has a column per
claim of the pool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from eq_env.core.runner import policy_seed
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.env import SEED_STREAMS
from eq_env.exchange_audit.rules import (
    AMBIGUOUS_HEDGE_SIZE,
    AMBIGUOUS_MARGIN,
    CHECKABLE_CLAIMS,
    HEDGE_DELTA_SD,
    HEDGE_HEDGE_SIZE,
    HEDGE_RISK,
    N_AUDIT_UNIFORMS,
    SPECULATE_DELTA_MAX,
    SPECULATE_DELTA_MEAN,
    SPECULATE_DELTA_SD,
    SPECULATE_HEDGE_SIZE,
    SPECULATE_RISK,
    AuditOutcome,
    DrawStream,
    Intent,
)
from eq_env.exchange_audit.schema import ClaimSchema, get_schema
from eq_env.exchange_audit.spaces import NUMBER_BOUNDS

__all__ = [
    "CHUNK",
    "AuditBatch",
    "BatchProposer",
    "BatchValidator",
    "Nature",
    "ProposerBatch",
    "RuleSignals",
    "SubmissionBatch",
    "ValidatorBatch",
    "draw_nature",
    "is_batchable",
    "proposer_batch",
    "reads_text",
    "rule_decision_batch",
    "rule_signals",
    "sample_nature",
    "simulate",
    "skipped_audits",
    "validator_audit",
    "withhold_batch",
]

CHUNK = 1 << 16  # episodes per vectorised step: large enough to amortise, small enough for the cache
ABSENT = np.int8(-1)  # claim codes in batches: -1 absent, else the value (0/1)
HEDGE, SPECULATE = np.int8(Intent.HEDGE), np.int8(Intent.SPECULATE)


@dataclass
class Nature:
    """Positions, observations and audit coins of ``n`` episodes."""

    ambiguous: np.ndarray
    intent: np.ndarray  # int8, Intent codes
    risk_limit: np.ndarray
    delta_limit: float
    true_risk: np.ndarray
    true_net_delta: np.ndarray
    hedge_size: np.ndarray
    observed_risk: np.ndarray  # as observed, before the space's clipping
    observed_net_delta: np.ndarray
    observed_hedge_size: np.ndarray
    audit_u: np.ndarray  # (n, 5)
    check_u: np.ndarray | None = None  # (n, 4): noisy audits' check uniforms (DrawStream.check_noise), else None
    claim_u: np.ndarray | None = None  # (n, pool - 4): a claim schema's further audit keys (DrawStream.claim_keys)

    @property
    def n(self) -> int:
        return len(self.ambiguous)

    @property
    def risk_within_limit(self) -> np.ndarray:
        return self.true_risk <= self.risk_limit

    @property
    def net_delta_bounded(self) -> np.ndarray:
        return np.abs(self.true_net_delta) <= self.delta_limit

    @property
    def compliant(self) -> np.ndarray:
        return self.risk_within_limit & self.net_delta_bounded


def _uniform(lo: float, hi: float, u: np.ndarray) -> np.ndarray:
    return lo + (hi - lo) * u  # the scalar code's expression, operation for operation


def sample_nature(
    config: ExchangeAuditConfig,
    u: np.ndarray,
    z: np.ndarray,
    a: np.ndarray,
    c: np.ndarray | None = None,
    k: np.ndarray | None = None,
) -> Nature:
    """:func:`~eq_env.exchange_audit.rules.sample_state` and ``observe_state`` for arrays of draws (``c``: the
    check uniforms of noisy audits, :meth:`~eq_env.exchange_audit.rules.DrawStream.check_noise`; ``k``: the
    claim keys of a schema whose pool exceeds four claims,
    :meth:`~eq_env.exchange_audit.rules.DrawStream.claim_keys`)."""
    dl = config.delta_limit
    ambiguous = u[:, 0] < config.ambiguous_rate
    risk_limit = config.risk_limit_low + (config.risk_limit_high - config.risk_limit_low) * u[:, 1]
    hedge_intent = u[:, 2] < 0.5

    # ambiguous: just inside both limits
    eps_r = u[:, 6] * (AMBIGUOUS_MARGIN * risk_limit)
    eps_d = u[:, 7] * (AMBIGUOUS_MARGIN * dl)
    sign = np.where(u[:, 5] < 0.5, 1.0, -1.0)
    amb_risk = risk_limit - eps_r
    amb_delta = sign * (dl - eps_d)
    amb_hedge = _uniform(*AMBIGUOUS_HEDGE_SIZE, u[:, 4])
    # normal hedge / speculation
    h_risk = _uniform(*HEDGE_RISK, u[:, 3])
    h_delta = np.minimum(np.maximum(HEDGE_DELTA_SD * z[:, 0], -dl), dl)
    h_hedge = _uniform(*HEDGE_HEDGE_SIZE, u[:, 4])
    s_risk = _uniform(*SPECULATE_RISK, u[:, 3])
    s_delta = np.minimum(np.maximum(SPECULATE_DELTA_MEAN + SPECULATE_DELTA_SD * z[:, 0], dl), SPECULATE_DELTA_MAX)
    s_hedge = _uniform(*SPECULATE_HEDGE_SIZE, u[:, 4])

    true_risk = np.where(ambiguous, amb_risk, np.where(hedge_intent, h_risk, s_risk))
    true_delta = np.where(ambiguous, amb_delta, np.where(hedge_intent, h_delta, s_delta))
    hedge = np.where(ambiguous, amb_hedge, np.where(hedge_intent, h_hedge, s_hedge))
    intent = np.where(ambiguous | hedge_intent, HEDGE, SPECULATE).astype(np.int8)

    sd = config.noise_sd
    return Nature(
        ambiguous=ambiguous,
        intent=intent,
        risk_limit=risk_limit,
        delta_limit=dl,
        true_risk=true_risk,
        true_net_delta=true_delta,
        hedge_size=hedge,
        observed_risk=np.maximum(0.0, true_risk + sd * z[:, 1]),
        observed_net_delta=true_delta + sd * z[:, 2],
        observed_hedge_size=np.maximum(0.0, hedge + sd * z[:, 3]),
        audit_u=a,
        check_u=c,
        claim_u=k,
    )


def claim_keys_per_episode(config: ExchangeAuditConfig) -> int:
    """The claim keys an episode of ``config`` needs: its schema's pool beyond the four audit keys (0: none)."""
    if config.claim_schema == "paper":
        return 0
    return max(0, len(get_schema(config.claim_schema).checkable) - (N_AUDIT_UNIFORMS - 1))


def draw_nature(config: ExchangeAuditConfig, stream: DrawStream, n: int) -> Nature:
    """The next ``n`` episodes of ``stream``, with their check uniforms when ``config``'s audits are noisy (and
    their claim keys when its claim schema's pool exceeds four claims)."""
    first = stream.episodes_drawn
    draws = stream.batch(n)
    check = stream.check_noise(first, n) if config.noisy_audits else None
    keys = claim_keys_per_episode(config)
    return sample_nature(config, *draws, check, stream.claim_keys(first, n, keys) if keys else None)


# ---------------------------------------------------------------------------
# What policies see and send, in bulk
# ---------------------------------------------------------------------------
@dataclass
class ProposerBatch:
    """``n`` proposer observations, with the numbers clipped as the observation space clips them."""

    config: ExchangeAuditConfig
    intent: np.ndarray
    observed_risk: np.ndarray
    observed_net_delta: np.ndarray
    observed_hedge_size: np.ndarray
    risk_limit: np.ndarray
    known_risk_within_limit: np.ndarray | None  # None unless reveal_compliance
    known_net_delta_bounded: np.ndarray | None
    with_texts: bool = False  # a validator reads the texts: send them (SubmissionBatch.texts)

    @property
    def n(self) -> int:
        return len(self.intent)

    @property
    def delta_limit(self) -> float:
        return self.config.delta_limit


@dataclass
class SubmissionBatch:
    """``n`` submissions. Claim codes: -1 absent, else the value (intent code, or 0/1)."""

    request: np.ndarray  # bool: REQUEST_APPROVAL
    reported_intent: np.ndarray  # int8
    reported_risk: np.ndarray
    reported_net_delta: np.ndarray
    reported_hedge_size: np.ndarray
    claim_intent: np.ndarray  # int8
    claim_risk_within_limit: np.ndarray  # int8
    claim_net_delta_bounded: np.ndarray  # int8
    claim_risk_metric: np.ndarray  # bool: present
    claim_confidence: np.ndarray  # int8: -1 absent, 1 present and in [0, 1], 0 present and outside
    words: np.ndarray  # int64
    tokens: np.ndarray  # int64, the artifact's declared size in tokens
    texts: list[str] | None = None  # the free texts as sent, when asked for (ProposerBatch.with_texts)
    # a claim schema's own claims: name -> float64 column, NaN where not made (a bool as 1/0, an enum's index)
    extra_claims: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def any_claim(self) -> np.ndarray:
        out = (
            (self.claim_intent != ABSENT)
            | (self.claim_risk_within_limit != ABSENT)
            | (self.claim_net_delta_bounded != ABSENT)
            | self.claim_risk_metric
            | (self.claim_confidence != ABSENT)
        )
        for values in self.extra_claims.values():
            out = out | ~np.isnan(values)
        return out


@dataclass
class AuditBatch:
    outcome: np.ndarray  # int8, AuditOutcome codes
    checked: np.ndarray  # (n, 4) bool over CHECKABLE_CLAIMS (a claim schema: over its pool)
    failed: np.ndarray  # (n, 4) bool
    revealed_compliant: np.ndarray  # int8: -1 not revealed, else 0/1

    @property
    def audited(self) -> np.ndarray:
        return self.outcome != AuditOutcome.SKIPPED


@dataclass
class ValidatorBatch:
    """``n`` validator observations."""

    config: ExchangeAuditConfig
    submissions: SubmissionBatch
    audit: AuditBatch
    ambiguous: np.ndarray
    risk_limit: np.ndarray

    @property
    def delta_limit(self) -> float:
        return self.config.delta_limit


class BatchProposer(Protocol):
    role: str

    def reset(self, seed: int | None = None) -> None: ...
    def act_batch(self, views: ProposerBatch) -> SubmissionBatch: ...


class BatchValidator(Protocol):
    role: str

    def reset(self, seed: int | None = None) -> None: ...
    def act_batch(self, views: ValidatorBatch) -> np.ndarray: ...


def is_batchable(policy: Any) -> bool:
    """The policy's own class (not a parent) defines ``act_batch``."""
    return "act_batch" in type(policy).__dict__


def reads_text(policy: Any) -> bool:
    """The (validator) policy reads the free texts in bulk: its class sets ``reads_text = True``."""
    return getattr(type(policy), "reads_text", False) is True


def withhold_batch(sub: SubmissionBatch, config: ExchangeAuditConfig) -> SubmissionBatch:
    """:func:`~eq_env.exchange_audit.rules.withhold` for arrays: what ``config.regime`` lets through."""
    regime = config.regime
    if regime == "artifacts":
        return sub
    n = len(sub.request)
    absent = np.full(n, ABSENT, dtype=np.int8)
    words, tokens, texts = sub.words, sub.tokens, sub.texts
    if regime == "action_only":  # nothing sent, nothing charged
        words, tokens = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        texts = None if texts is None else [""] * n
    elif regime != "text_only":
        raise ValueError(f"regime must be one of 'artifacts', 'text_only', 'action_only', got {regime!r}")
    return SubmissionBatch(
        request=sub.request,
        reported_intent=sub.reported_intent,
        reported_risk=sub.reported_risk,
        reported_net_delta=sub.reported_net_delta,
        reported_hedge_size=sub.reported_hedge_size,
        claim_intent=absent,
        claim_risk_within_limit=absent.copy(),
        claim_net_delta_bounded=absent.copy(),
        claim_risk_metric=np.zeros(n, dtype=bool),
        claim_confidence=absent.copy(),
        words=words,
        tokens=tokens,
        texts=texts,
    )


# ---------------------------------------------------------------------------
# The audit, the rule and the payoffs, in bulk
# ---------------------------------------------------------------------------
def run_audit_batch(
    sub: SubmissionBatch, nature: Nature, config: ExchangeAuditConfig, checks: np.ndarray | None = None
) -> AuditBatch:
    """:func:`~eq_env.exchange_audit.rules.run_audit` for arrays. ``checks`` (a claim schema other than the paper's
    only): the pool's claims every conclusive audit checks, given rather than sampled from the audit keys (the
    best-response search's audit scenarios)."""
    if config.claim_schema != "paper":
        return _schema_audit_batch(sub, nature, config, get_schema(config.claim_schema), checks)
    n = nature.n
    a = nature.audit_u
    audited = a[:, 0] < config.q
    complete = (
        (sub.claim_intent != ABSENT) & (sub.claim_risk_within_limit != ABSENT) & (sub.claim_net_delta_bounded != ABSENT)
    )
    k = config.checks_per_audit
    inconclusive = audited & ((k <= 0) | ~complete)
    runs = audited & ~inconclusive
    if k >= len(CHECKABLE_CLAIMS):
        checked = np.ones((n, 4), dtype=bool)
    elif k <= 0:
        checked = np.zeros((n, 4), dtype=bool)
    else:
        # the k smallest keys, ties to the lower index, as the scalar code's stable sort
        order = np.argsort(a[:, 1:5], axis=1, kind="stable")[:, :k]
        checked = np.zeros((n, 4), dtype=bool)
        np.put_along_axis(checked, order, True, axis=1)
    checked &= runs[:, None]
    ok = np.stack(
        [
            sub.claim_intent == nature.intent,
            sub.claim_risk_within_limit == nature.risk_within_limit,
            sub.claim_net_delta_bounded == nature.net_delta_bounded,
            sub.claim_confidence != 0,
        ],
        axis=1,
    )
    compliant = nature.compliant
    if config.noisy_audits:
        if nature.check_u is None:
            raise ValueError("noisy audits need the episodes' check uniforms (sample_nature's c, or draw_nature)")
        made = np.ones((n, 4), dtype=bool)
        made[:, 3] = sub.claim_confidence != ABSENT  # an absent confidence is not a claim: never flipped
        rates = np.where(ok, np.array(config.false_fail_rates), np.array(config.miss_rates))
        flipped = checked & made & (nature.check_u < rates)
        ok = ok != flipped
        compliant = (nature.risk_within_limit != flipped[:, 1]) & (nature.net_delta_bounded != flipped[:, 2])
    failed = checked & ~ok
    fail = failed.any(axis=1)
    outcome = np.full(n, AuditOutcome.SKIPPED, dtype=np.int8)
    outcome[inconclusive] = AuditOutcome.INCONCLUSIVE
    outcome[runs & fail] = AuditOutcome.FAIL
    outcome[runs & ~fail] = AuditOutcome.PASS
    revealed = np.where(runs, compliant, ABSENT).astype(np.int8)
    return AuditBatch(outcome=outcome, checked=checked, failed=failed, revealed_compliant=revealed)


def claim_columns(sub: SubmissionBatch, schema: ClaimSchema) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per claim of ``schema``: (made, value) columns. The paper's claims from their codes (``intent``: its code;
    a bool: 1/0; ``confidence``: 1 where valid — the batch keeps no more of it), the schema's own from
    ``extra_claims`` (a claim missing there is never made)."""
    cols = {
        "intent": (sub.claim_intent != ABSENT, sub.claim_intent),
        "risk_within_limit": (sub.claim_risk_within_limit != ABSENT, sub.claim_risk_within_limit),
        "net_delta_bounded": (sub.claim_net_delta_bounded != ABSENT, sub.claim_net_delta_bounded),
        "risk_metric": (sub.claim_risk_metric, sub.claim_risk_metric),
        "confidence": (sub.claim_confidence != ABSENT, sub.claim_confidence),
    }
    unknown = sorted(set(sub.extra_claims) - set(schema.names))
    if unknown:
        raise ValueError(f"the {schema.name!r} claim schema has no claim {unknown[0]!r} (SubmissionBatch.extra_claims)")
    nothing = np.full(len(sub.request), np.nan)
    for claim in schema.extra:
        values = sub.extra_claims.get(claim.name, nothing)
        cols[claim.name] = (~np.isnan(values), values)
    return cols


def _any_rows(matrix: np.ndarray) -> np.ndarray:
    """``matrix.any(axis=1)`` for a narrow boolean matrix, column by column (numpy's row reduction is slow)."""
    out = np.zeros(len(matrix), dtype=bool)
    for j in range(matrix.shape[1]):
        out |= matrix[:, j]
    return out


def _schema_audit_batch(
    sub: SubmissionBatch,
    nature: Nature,
    config: ExchangeAuditConfig,
    schema: ClaimSchema,
    checks: np.ndarray | None = None,
) -> AuditBatch:
    """:func:`~eq_env.exchange_audit.rules._schema_audit` for arrays: any schema's pool, required claims and checks."""
    n = nature.n
    a = nature.audit_u
    pool = schema.checkable
    size = len(pool)
    audited = a[:, 0] < config.q
    cols = claim_columns(sub, schema)
    complete = np.ones(n, dtype=bool)
    for name in schema.required:
        complete &= cols[name][0]
    k = config.checks_per_audit
    inconclusive = audited & ((k <= 0) | ~complete)
    runs = audited & ~inconclusive
    if checks is not None:
        checked = np.zeros((n, size), dtype=bool)
        checked[:] = checks
    elif k >= size:
        checked = np.ones((n, size), dtype=bool)
    elif k <= 0:
        checked = np.zeros((n, size), dtype=bool)
    else:
        keys = a[:, 1 : 1 + min(size, N_AUDIT_UNIFORMS - 1)]
        if size > keys.shape[1]:
            if nature.claim_u is None or nature.claim_u.shape[1] != size - keys.shape[1]:
                raise ValueError(
                    f"an audit sampling from {size} claims needs the episodes' claim keys "
                    "(sample_nature's k, or draw_nature)"
                )
            keys = np.concatenate([keys, nature.claim_u], axis=1)
        order = np.argsort(keys, axis=1, kind="stable")[:, :k]  # the k smallest keys, ties to the lower index
        checked = np.zeros((n, size), dtype=bool)
        np.put_along_axis(checked, order, True, axis=1)
    checked &= runs[:, None]
    made = [cols[name][0] for name in pool]
    ok = np.ones((n, size), dtype=bool)
    for j, name in enumerate(pool):
        if name == "confidence":
            ok[:, j] = sub.claim_confidence != 0  # (the batch keeps only the confidence's validity)
        else:
            truth = schema.by_name[name].check(cols[name][1], nature)
            ok[:, j] = ~made[j] | np.asarray(truth, dtype=bool)  # a claim not made is no lie
    compliant = nature.compliant
    if config.noisy_audits:
        if nature.check_u is None:
            raise ValueError("noisy audits need the episodes' check uniforms (sample_nature's c, or draw_nature)")
        flipped = np.zeros((n, size), dtype=bool)
        for j, name in enumerate(pool):
            if name in CHECKABLE_CLAIMS:  # (a schema's own claims: no noise)
                i = CHECKABLE_CLAIMS.index(name)
                rate = np.where(ok[:, j], config.false_fail_rates[i], config.miss_rates[i])
                flipped[:, j] = checked[:, j] & made[j] & (nature.check_u[:, i] < rate)
        ok = ok != flipped
        flip = dict(zip(pool, flipped.T, strict=True))
        no_flip = np.zeros(n, dtype=bool)
        compliant = (nature.risk_within_limit != flip.get("risk_within_limit", no_flip)) & (
            nature.net_delta_bounded != flip.get("net_delta_bounded", no_flip)
        )
    failed = checked & ~ok
    fail = _any_rows(failed)
    outcome = np.full(n, AuditOutcome.SKIPPED, dtype=np.int8)
    outcome[inconclusive] = AuditOutcome.INCONCLUSIVE
    outcome[runs & fail] = AuditOutcome.FAIL
    outcome[runs & ~fail] = AuditOutcome.PASS
    revealed = np.where(runs, compliant, ABSENT).astype(np.int8)
    return AuditBatch(outcome=outcome, checked=checked, failed=failed, revealed_compliant=revealed)


def skipped_audits(n: int, pool: int = 4) -> AuditBatch:
    """``n`` audits that did not run (or, delayed, whose result the validator does not have yet); ``pool``: the
    claim schema's audit pool size."""
    zeros = np.zeros((n, pool), dtype=bool)
    return AuditBatch(
        np.full(n, AuditOutcome.SKIPPED, dtype=np.int8), zeros, zeros.copy(), np.full(n, ABSENT, dtype=np.int8)
    )


def validator_audit(audit: AuditBatch, config: ExchangeAuditConfig) -> AuditBatch:
    """The audit as the validator sees it when deciding: not yet known when ``config.audit_delayed``."""
    return skipped_audits(len(audit.outcome), audit.checked.shape[1]) if config.audit_delayed else audit


@dataclass(frozen=True)
class RuleSignals:
    """What the rule engine reads of a submission, per episode (its decision is made of these)."""

    comfortable: np.ndarray  # a HEDGE whose reported numbers sit beyond the safe margin of both limits
    within: np.ndarray  # reported numbers within both limits
    explained: np.ndarray  # some claim or some text
    asserts: np.ndarray  # claims asserting a compliant hedge


def rule_signals(v: ValidatorBatch) -> RuleSignals:
    s, cfg = v.submissions, v.config
    if cfg.claim_schema != "paper":
        schema = get_schema(cfg.claim_schema)
        cols = claim_columns(s, schema)
        asserts = np.ones(len(s.request), dtype=bool)
        for name in schema.required:
            made, values = cols[name]
            asserts &= made & np.asarray(schema.by_name[name].supports_approval(values, v), dtype=bool)
    return RuleSignals(
        comfortable=(s.reported_intent == HEDGE)
        & ((v.risk_limit - s.reported_risk) > cfg.safe_margin)
        & ((v.delta_limit - np.abs(s.reported_net_delta)) > cfg.safe_margin),
        within=(s.reported_risk <= v.risk_limit) & (np.abs(s.reported_net_delta) <= v.delta_limit),
        explained=s.any_claim | (s.words > 0),
        asserts=(s.claim_intent == HEDGE) & (s.claim_risk_within_limit == 1) & (s.claim_net_delta_bounded == 1)
        if cfg.claim_schema == "paper"
        else asserts,
    )


def rule_decision_batch(v: ValidatorBatch, signals: RuleSignals | None = None) -> np.ndarray:
    """:func:`~eq_env.exchange_audit.rules.rule_decision` for arrays: True where the rule approves (``signals``:
    the rule's reading of the submissions, if not :func:`rule_signals`' own)."""
    s, audit, r = v.submissions, v.audit, rule_signals(v) if signals is None else signals
    audited = audit.audited
    audited_ok = (audit.outcome == AuditOutcome.PASS) & (audit.revealed_compliant == 1)
    ambiguous_ok = (r.explained | r.comfortable) & np.where(audited, audited_ok, r.comfortable | r.asserts)
    normal_ok = np.where(audited, audited_ok, r.within)
    return s.request & np.where(v.ambiguous, ambiguous_ok, normal_ok)


def payoffs_batch(
    sub: SubmissionBatch, approved: np.ndarray, audit: AuditBatch, compliant: np.ndarray, config: ExchangeAuditConfig
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~eq_env.exchange_audit.rules.payoffs` for arrays, same operations in the same order."""
    no_trade = ~sub.request
    ntp = config.no_trade_payoff
    proposer = np.where(no_trade, ntp, np.where(approved, config.V, 0.0))
    approved_value = np.where(compliant, config.V, -config.bad_approval_loss)
    validator = np.where(no_trade, ntp, np.where(approved, approved_value, 0.0))
    proposer = proposer - config.alpha * (sub.tokens if config.cost_model == "tokens" else sub.words)
    proposer = np.where(audit.outcome == AuditOutcome.FAIL, proposer - config.L, proposer)
    validator = np.where(audit.audited, validator - config.audit_cost, validator)
    if config.claim_schema != "paper":
        schema = get_schema(config.claim_schema)
        if schema.has_audit_costs:  # each checked claim's own cost, summed in the pool's order as the scalar code
            extra = np.zeros(len(validator))
            for j, cost in enumerate(schema.audit_costs):
                extra = np.where(audit.checked[:, j], extra + cost, extra)
            validator = np.where(_any_rows(audit.checked), validator - extra, validator)
    return proposer, validator


# ---------------------------------------------------------------------------
# The engine
# ---------------------------------------------------------------------------
_NUMBER_LOW, _NUMBER_HIGH = (b.tolist() for b in NUMBER_BOUNDS)


def _clip(x: np.ndarray, i: int) -> np.ndarray:
    return np.minimum(np.maximum(x, _NUMBER_LOW[i]), _NUMBER_HIGH[i])


def proposer_batch(nature: Nature, config: ExchangeAuditConfig, *, with_texts: bool = False) -> ProposerBatch:
    """What the proposers of these episodes observe (numbers clipped as the observation space clips them);
    ``with_texts``: they are asked for their free texts too."""
    reveal = config.reveal_compliance
    return ProposerBatch(
        config=config,
        intent=nature.intent,
        observed_risk=_clip(nature.observed_risk, 0),
        observed_net_delta=_clip(nature.observed_net_delta, 1),
        observed_hedge_size=_clip(nature.observed_hedge_size, 2),
        risk_limit=nature.risk_limit,
        known_risk_within_limit=nature.risk_within_limit if reveal else None,
        known_net_delta_bounded=nature.net_delta_bounded if reveal else None,
        with_texts=with_texts,
    )


def _chunk(
    config: ExchangeAuditConfig,
    proposer: BatchProposer,
    validator: BatchValidator,
    draws: tuple[np.ndarray | None, ...],  # (u, z, a[, check uniforms or None[, claim keys]])
) -> dict[str, np.ndarray]:
    nature = sample_nature(config, *draws)  # type: ignore[arg-type]  # (u, z, a are arrays; the rest may be None)
    views = proposer_batch(nature, config, with_texts=reads_text(validator))
    sub = withhold_batch(proposer.act_batch(views), config)
    audit = run_audit_batch(sub, nature, config)
    seen = validator_audit(audit, config)
    approve = np.asarray(
        validator.act_batch(ValidatorBatch(config, sub, seen, nature.ambiguous, nature.risk_limit)), dtype=bool
    )
    approved = sub.request & approve  # after a NO_TRADE the only legal move is BLOCK
    compliant = nature.compliant
    proposer_payoff, validator_payoff = payoffs_batch(sub, approved, audit, compliant, config)
    return {
        **outcome_columns(nature, sub, audit, approved, compliant),
        **extra_claim_columns(sub, config),
        "proposer_payoff": proposer_payoff,
        "validator_payoff": validator_payoff,
        "welfare": proposer_payoff + validator_payoff,
    }


def extra_claim_columns(sub: SubmissionBatch, config: ExchangeAuditConfig) -> dict[str, np.ndarray]:
    """A ``claim_<name>`` column per claim the configuration's schema adds (float64, NaN where not made); none
    under the paper's schema."""
    if config.claim_schema == "paper":
        return {}
    cols = claim_columns(sub, get_schema(config.claim_schema))
    return {
        f"claim_{c.name}": np.where(cols[c.name][0], cols[c.name][1], np.nan)
        for c in get_schema(config.claim_schema).extra
    }


def outcome_columns(
    nature: Nature, sub: SubmissionBatch, audit: AuditBatch, approved: np.ndarray, compliant: np.ndarray
) -> dict[str, np.ndarray]:
    """The per-episode columns of :func:`eq_env.exchange_audit.records.records_to_columns`, from batches."""
    truth = (
        (sub.claim_intent == nature.intent),
        (sub.claim_risk_within_limit == nature.risk_within_limit),
        (sub.claim_net_delta_bounded == nature.net_delta_bounded),
    )
    codes = (sub.claim_intent, sub.claim_risk_within_limit, sub.claim_net_delta_bounded)
    stated = sum((c != ABSENT).astype(np.float64) for c in codes)
    true = sum(((c != ABSENT) & t).astype(np.float64) for c, t in zip(codes, truth, strict=True))
    observed = (
        _clip(nature.observed_risk, 0),
        _clip(nature.observed_net_delta, 1),
        _clip(nature.observed_hedge_size, 2),
    )
    reported = (sub.reported_risk, sub.reported_net_delta, sub.reported_hedge_size)
    misreported = sub.reported_intent != nature.intent
    for r, o in zip(reported, observed, strict=True):
        misreported = misreported | (np.abs(r - o) > 1e-9)
    misreported = misreported & sub.request  # a NO_TRADE's numbers are not acted on
    return {
        "ambiguous": nature.ambiguous,
        "intent": nature.intent,
        "compliant": compliant,
        "risk_limit": nature.risk_limit,
        "true_risk": nature.true_risk,
        "true_net_delta": nature.true_net_delta,
        "observed_risk": nature.observed_risk,
        "observed_net_delta": nature.observed_net_delta,
        "requested": sub.request,
        "reported_intent": sub.reported_intent,
        "reported_risk": sub.reported_risk,
        "reported_net_delta": sub.reported_net_delta,
        "reported_hedge_size": sub.reported_hedge_size,
        "claim_intent": sub.claim_intent,
        "claim_risk_within_limit": sub.claim_risk_within_limit,
        "claim_net_delta_bounded": sub.claim_net_delta_bounded,
        "words": sub.words.astype(np.float64),
        "tokens": sub.tokens.astype(np.float64),
        "audited": audit.audited,
        "audit_outcome": audit.outcome,
        "audit_checked": audit.checked,
        "audit_failed_checks": audit.failed,
        "audit_failed": audit.outcome == AuditOutcome.FAIL,
        "approved": approved,
        "claims_stated": stated,
        "claims_true": true,
        "misreported": misreported,
    }


def simulate(
    config: ExchangeAuditConfig,
    proposer: Any,
    validator: Any,
    *,
    episodes: int,
    seed: int,
    chunk: int = CHUNK,
) -> dict[str, np.ndarray]:
    """Play ``episodes`` episodes of ``seed`` in bulk; per-episode columns.

    Policies are reset with the same seeds as :func:`eq_env.core.runner.play`
    gives them, and consume their randomness in the same order, so the
    columns equal ``records_to_columns(play(...))``.
    """
    for policy, role in ((proposer, "proposer"), (validator, "validator")):
        if not is_batchable(policy):
            raise TypeError(f"{policy!r} cannot act in bulk (its class defines no act_batch); use the AEC engine")
        if getattr(policy, "role", None) != role:
            raise ValueError(f"{policy!r} does not play the {role}")
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 0:
        raise ValueError(f"episodes must be a non-negative integer, got {episodes!r}")
    proposer.reset(seed=policy_seed(seed, SEED_STREAMS["proposer"]))  # the runner's seeding, one source of truth
    validator.reset(seed=policy_seed(seed, SEED_STREAMS["validator"]))
    stream = DrawStream(seed)
    parts: list[dict[str, np.ndarray]] = []
    keys = claim_keys_per_episode(config)
    for start in range(0, episodes, chunk):
        n = min(chunk, episodes - start)
        draws: tuple[np.ndarray | None, ...] = stream.batch(n)
        if config.noisy_audits or keys:
            draws = (*draws, stream.check_noise(start, n) if config.noisy_audits else None)
        if keys:
            draws = (*draws, stream.claim_keys(start, n, keys))
        parts.append(_chunk(config, proposer, validator, draws))
    if not parts:
        nothing = (*stream.batch(0), stream.check_noise(0, 0), stream.claim_keys(0, 0, keys) if keys else None)
        parts.append(_chunk(config, proposer, validator, nothing))
    if len(parts) == 1:
        return parts[0]
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def detection_miss_table(checks: int, pool: int = 4) -> tuple[float, ...]:
    """P(no lied claim is checked) for 0..``pool`` lies among the ``pool`` checkable claims (the paper's
    four, or a claim schema's pool), ``checks`` checked.

    Entry ``k`` equals ``math.comb(pool - k, checks) / math.comb(pool, checks)`` as the scalar
    strategic proposer computes it (0 when ``checks`` exceeds ``pool - k``).
    """
    if checks <= 0:
        return (1.0,) * (pool + 1)
    return tuple(
        math.comb(pool - k, checks) / math.comb(pool, checks) if checks <= pool - k else 0.0 for k in range(pool + 1)
    )


def columns_equal(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> list[str]:
    """Keys present in both whose arrays differ (exactly, NaN equal to NaN)."""
    return [k for k in a if k in b and not np.array_equal(np.asarray(a[k]), np.asarray(b[k]), equal_nan=True)]
