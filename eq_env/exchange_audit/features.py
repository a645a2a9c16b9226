"""Numeric features of the observations and a discrete artifact space, for RL and best responses.

Both roles' observations become flat float32 vectors (what an MLP policy
takes); the same function works on one typed view or on a batch, so a policy
trained on the single-agent Gymnasium views acts identically in the batch
engine.

The proposer's *artifact space* discretises what it can send, relative to its
observation (this is the space the RL proposer acts in and the best-response
search enumerates):

============  ======================================================
component     choices
============  ======================================================
action        0 NO_TRADE, 1 REQUEST_APPROVAL
intent        0 report the true intent, 1 report HEDGE
numbers       0 report the observed numbers, 1 shade them just inside the safe margin
claim intent  0 omit, 1 assert HEDGE, 2 state SPECULATE
claim risk    0 omit, 1 assert within limit, 2 state not within
claim delta   0 omit, 1 assert bounded, 2 state not bounded
text          0, 6 or 18 words
============  ======================================================

(2·2·2·3·3·3·3 = 648 artifacts.) The honest proposer is in the space: it
reports what it sees and states each claim as it believes it.

A claim schema other than the paper's (:mod:`eq_env.exchange_audit.schema`)
appends one component per claim type it adds that says how policies state
it: 0 omit, 1 state it sincerely (from the observation), 2 state it
favourably (asserting compliance, about the reported position). The
``"rich"`` schema's space has 648·3·3 = 5832 artifacts. :func:`artifact_nvec`,
:func:`all_artifacts` and friends take the schema (or its name); without
one they are the paper's.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np

from eq_env.exchange_audit.batch import ABSENT, HEDGE, SPECULATE, ProposerBatch, SubmissionBatch, ValidatorBatch
from eq_env.exchange_audit.rules import (
    Artifact,
    AuditOutcome,
    Claims,
    Intent,
    Proposal,
    ProposerAction,
    ProposerView,
    Submission,
    ValidatorView,
    estimated_tokens,
)
from eq_env.exchange_audit.schema import PAPER, ClaimSchema, Position, get_schema

__all__ = [
    "ARTIFACT_NVEC",
    "ARTIFACT_WORDS",
    "N_ARTIFACTS",
    "PROPOSER_FEATURES",
    "VALIDATOR_FEATURES",
    "all_artifacts",
    "artifact_index",
    "artifact_nvec",
    "artifact_submission",
    "artifact_submissions",
    "describe_artifact",
    "observed_position",
    "proposer_features",
    "proposer_features_batch",
    "validator_features",
    "validator_features_batch",
]

ARTIFACT_NVEC = (2, 2, 2, 3, 3, 3, 3)
ARTIFACT_WORDS = (0, 6, 18)
N_ARTIFACTS = int(np.prod(ARTIFACT_NVEC))
SHADE = 0.01  # reported numbers sit this far inside the safe margin when shaded


def _schema(schema: ClaimSchema | str | None) -> ClaimSchema:
    if schema is None:
        return PAPER
    return schema if isinstance(schema, ClaimSchema) else get_schema(schema)


def artifact_nvec(schema: ClaimSchema | str | None = None) -> tuple[int, ...]:
    """The artifact space's choices per component: the paper's seven, then three per claim the schema adds."""
    return ARTIFACT_NVEC + (3,) * len(_schema(schema).stated)


def all_artifacts(schema: ClaimSchema | str | None = None) -> np.ndarray:
    """Every artifact as a row of choices, (648, 7) for the paper's schema, in the order of :func:`artifact_index`."""
    return _all_artifacts(artifact_nvec(schema)).copy()


@functools.lru_cache(maxsize=8)
def _all_artifacts(nvec: tuple[int, ...]) -> np.ndarray:
    return np.array(list(itertools.product(*(range(n) for n in nvec))), dtype=np.int64)


def artifact_index(choices: np.ndarray, schema: ClaimSchema | str | None = None) -> np.ndarray:
    """Row(s) of choices → flat index in [0, 648) (mixed radix, first component most significant)."""
    idx = np.zeros(np.asarray(choices).shape[:-1], dtype=np.int64)
    for i, n in enumerate(artifact_nvec(schema)):
        idx = idx * n + np.asarray(choices)[..., i]
    return idx


def observed_position(view: ProposerView) -> Position:
    """The position a proposer observed, as a claim schema's ``sincere`` hooks read it."""
    pub = view.public
    return Position(
        int(view.intent),
        view.observed_risk,
        view.observed_net_delta,
        view.observed_hedge_size,
        pub.risk_limit,
        pub.delta_limit,
    )


def shaded_numbers(risk: Any, net_delta: Any, risk_limit: Any, delta_limit: Any, safe_margin: float) -> tuple[Any, Any]:
    """Reported risk and net delta shaded to sit ``SHADE`` inside the safe margin of the limits (numbers already
    inside stay as they are; the sign of the net delta is kept). Scalars or arrays alike."""
    inside = safe_margin + SHADE
    sign = np.where(net_delta < 0, -1.0, 1.0)
    return (
        np.maximum(0.0, np.minimum(risk, risk_limit - inside)),
        sign * np.maximum(0.0, np.minimum(np.abs(net_delta), delta_limit - inside)),
    )


def _claim(code: int, favourable: Any, unfavourable: Any) -> Any:
    return None if code == 0 else (favourable if code == 1 else unfavourable)


def artifact_submission(view: ProposerView, choices: Any) -> Submission:
    """The :class:`Submission` an artifact (7 choices, and one per claim the schema adds) makes from this
    observation."""
    act, intent_mode, numbers_mode, ci, cr, cd, text = (int(x) for x in choices[:7])
    pub = view.public
    risk, delta = view.observed_risk, view.observed_net_delta
    if numbers_mode:
        shaded = shaded_numbers(risk, delta, pub.risk_limit, pub.delta_limit, pub.safe_margin)
        risk, delta = float(shaded[0]), float(shaded[1])
    intent = Intent.HEDGE if intent_mode else view.intent
    extra: tuple[tuple[str, Any], ...] = ()
    if pub.claim_schema != "paper":
        extra = _extra_claims(get_schema(pub.claim_schema), [int(x) for x in choices[7:]], view)
    claims = Claims(
        _claim(ci, Intent.HEDGE, Intent.SPECULATE), _claim(cr, True, False), _claim(cd, True, False), extra=extra
    )
    words = min(ARTIFACT_WORDS[text], pub.max_words)
    artifact = Artifact(claims, "", words, estimated_tokens(words))  # numeric policy: words without a text
    action = ProposerAction.REQUEST_APPROVAL if act else ProposerAction.NO_TRADE
    return Submission(action, Proposal(intent, risk, delta, view.observed_hedge_size), artifact)


def _shaded_position(view: ProposerView) -> Position:
    pub = view.public
    risk, delta = shaded_numbers(
        view.observed_risk, view.observed_net_delta, pub.risk_limit, pub.delta_limit, pub.safe_margin
    )
    return Position(
        int(Intent.HEDGE), float(risk), float(delta), view.observed_hedge_size, pub.risk_limit, pub.delta_limit
    )


def _extra_claims(schema: ClaimSchema, codes: list[int], view: ProposerView) -> tuple[tuple[str, Any], ...]:
    """The added claims of an artifact's last components: 0 omit, 1 sincere, 2 favourable (about the shaded
    HEDGE, the story a lie tells)."""
    if len(codes) != len(schema.stated):
        raise ValueError(
            f"an artifact of the {schema.name!r} claim schema has {7 + len(schema.stated)} choices, "
            f"got {7 + len(codes)}"
        )
    out = []
    for claim, code in zip(schema.stated, codes, strict=True):
        if code == 1:
            assert claim.sincere is not None
            out.append((claim.name, claim.policy_value(claim.sincere(observed_position(view)))))
        elif code == 2:
            assert claim.favourable is not None
            out.append((claim.name, claim.policy_value(claim.favourable(_shaded_position(view)))))
    return tuple(out)


def artifact_submissions(v: ProposerBatch, choices: np.ndarray) -> SubmissionBatch:
    """:func:`artifact_submission` for a batch: ``choices`` is (n, 7) or one row for all (and one more column
    per claim the configuration's schema adds)."""
    schema = get_schema(v.config.claim_schema)
    c = np.broadcast_to(np.asarray(choices, dtype=np.int64), (v.n, len(artifact_nvec(schema))))
    cfg = v.config
    shaded = c[:, 2] == 1
    shaded_risk, shaded_delta = shaded_numbers(
        v.observed_risk, v.observed_net_delta, v.risk_limit, v.delta_limit, cfg.safe_margin
    )
    risk = np.where(shaded, shaded_risk, v.observed_risk)
    words = np.minimum(np.array(ARTIFACT_WORDS)[c[:, 6]], cfg.max_words).astype(np.int64)

    def claim(col: np.ndarray, favourable: np.int8, unfavourable: np.int8) -> np.ndarray:
        return np.where(col == 0, ABSENT, np.where(col == 1, favourable, unfavourable)).astype(np.int8)

    return SubmissionBatch(
        request=c[:, 0] == 1,
        reported_intent=np.where(c[:, 1] == 1, HEDGE, v.intent).astype(np.int8),
        reported_risk=risk,
        reported_net_delta=np.where(shaded, shaded_delta, v.observed_net_delta),
        reported_hedge_size=v.observed_hedge_size,
        claim_intent=claim(c[:, 3], HEDGE, SPECULATE),
        claim_risk_within_limit=claim(c[:, 4], np.int8(1), np.int8(0)),
        claim_net_delta_bounded=claim(c[:, 5], np.int8(1), np.int8(0)),
        claim_risk_metric=np.zeros(v.n, dtype=bool),
        claim_confidence=np.full(v.n, ABSENT, dtype=np.int8),
        words=words,
        tokens=estimated_tokens(words),
        texts=[""] * v.n if v.with_texts else None,  # words paid for without a text, as artifact_submission
        extra_claims=_extra_claim_columns(schema, c[:, 7:], v) if schema.stated else {},
    )


def _extra_claim_columns(schema: ClaimSchema, codes: np.ndarray, v: ProposerBatch) -> dict[str, np.ndarray]:
    """:func:`_extra_claims` for a batch: name → float64 column, NaN where omitted."""
    observed = Position(
        v.intent, v.observed_risk, v.observed_net_delta, v.observed_hedge_size, v.risk_limit, v.delta_limit
    )
    risk, delta = shaded_numbers(
        v.observed_risk, v.observed_net_delta, v.risk_limit, v.delta_limit, v.config.safe_margin
    )
    told = Position(np.zeros(v.n, dtype=np.int8), risk, delta, v.observed_hedge_size, v.risk_limit, v.delta_limit)
    out = {}
    for j, claim in enumerate(schema.stated):
        assert claim.sincere is not None and claim.favourable is not None
        sincere = claim.policy_value(np.broadcast_to(claim.sincere(observed), (v.n,)))
        favourable = claim.policy_value(np.broadcast_to(claim.favourable(told), (v.n,)))
        col = codes[:, j]
        out[claim.name] = np.where(col == 1, sincere, np.where(col == 2, favourable, np.nan))
    return out


def describe_artifact(choices: Any, schema: ClaimSchema | str | None = None) -> str:
    """A short human description of an artifact."""
    act, intent_mode, numbers_mode, ci, cr, cd, text = (int(x) for x in choices[:7])
    if not act:
        head = "NO_TRADE"
    else:
        head = "REQUEST" + (" as HEDGE" if intent_mode else "") + (", numbers shaded inside" if numbers_mode else "")
    names = (
        ("intent", "HEDGE", "SPECULATE"),
        ("risk_within_limit", "true", "false"),
        ("net_delta_bounded", "true", "false"),
    )
    claims = [
        f"{n}={fav if code == 1 else unfav}" for (n, fav, unfav), code in zip(names, (ci, cr, cd), strict=True) if code
    ]
    for claim, code in zip(_schema(schema).stated, (int(x) for x in choices[7:]), strict=False):
        if code:
            claims.append(f"{claim.name} {'sincere' if code == 1 else 'favourable'}")
    return f"{head}; claims: {', '.join(claims) or 'none'}; {ARTIFACT_WORDS[text]} words"


# ---------------------------------------------------------------------------
# Observation features
# ---------------------------------------------------------------------------
PROPOSER_FEATURES = (
    "intent_hedge",
    "observed_risk",
    "observed_net_delta",
    "observed_hedge_size",
    "risk_margin",
    "delta_margin",
    "known_risk_ok",
    "known_delta_ok",
    "q",
    "checks_per_audit/4",
    "V",
    "L",
    "alpha*10",
    "no_trade_payoff",
    "safe_margin*10",
    "noise_sd*10",
)


def _tri(value: Any) -> float:
    return 0.0 if value is None else (1.0 if value else -1.0)


def proposer_features(view: ProposerView) -> np.ndarray:
    """The proposer's observation as floats (names in :data:`PROPOSER_FEATURES`)."""
    p = view.public
    return np.array(
        [
            float(view.intent is Intent.HEDGE),
            view.observed_risk,
            view.observed_net_delta,
            view.observed_hedge_size,
            p.risk_limit - view.observed_risk,
            p.delta_limit - abs(view.observed_net_delta),
            _tri(view.known_risk_within_limit),
            _tri(view.known_net_delta_bounded),
            p.q,
            p.checks_per_audit / 4,
            p.V,
            p.L,
            p.alpha * 10,
            p.no_trade_payoff,
            p.safe_margin * 10,
            p.noise_sd * 10,
        ],
        dtype=np.float32,
    )


def proposer_features_batch(v: ProposerBatch) -> np.ndarray:
    """:func:`proposer_features` for a batch, (n, 16)."""
    c = v.config
    n = v.n
    known_r = np.zeros(n) if v.known_risk_within_limit is None else np.where(v.known_risk_within_limit, 1.0, -1.0)
    known_d = np.zeros(n) if v.known_net_delta_bounded is None else np.where(v.known_net_delta_bounded, 1.0, -1.0)
    const = [
        c.q,
        c.checks_per_audit / 4,
        c.V,
        c.L,
        c.alpha * 10,
        c.no_trade_payoff,
        c.safe_margin * 10,
        c.noise_sd * 10,
    ]
    cols = [
        (v.intent == HEDGE).astype(np.float64),
        v.observed_risk,
        v.observed_net_delta,
        v.observed_hedge_size,
        v.risk_limit - v.observed_risk,
        v.delta_limit - np.abs(v.observed_net_delta),
        known_r,
        known_d,
        *(np.full(n, x) for x in const),
    ]
    return np.stack(cols, axis=1).astype(np.float32)


VALIDATOR_FEATURES = (
    "requested",
    "reported_hedge",
    "reported_risk",
    "reported_net_delta",
    "risk_margin",
    "delta_margin",
    "claim_intent",
    "claim_risk",
    "claim_delta",
    "words/60",
    "audited",
    "audit_pass",
    "audit_fail",
    "audit_inconclusive",
    "revealed",
    "ambiguous",
    "q",
    "checks_per_audit/4",
    "V",
    "bad_approval_loss/10",
)


def validator_features(view: ValidatorView) -> np.ndarray:
    """The validator's observation as floats (names in :data:`VALIDATOR_FEATURES`)."""
    s, a, p = view.submission, view.audit, view.public
    c = s.artifact.claims
    return np.array(
        [
            float(s.action is ProposerAction.REQUEST_APPROVAL),
            float(s.proposal.intent is Intent.HEDGE),
            s.proposal.risk,
            s.proposal.net_delta,
            p.risk_limit - s.proposal.risk,
            p.delta_limit - abs(s.proposal.net_delta),
            0.0 if c.intent is None else (1.0 if c.intent is Intent.HEDGE else -1.0),
            _tri(c.risk_within_limit),
            _tri(c.net_delta_bounded),
            s.artifact.words / 60,
            float(a.audited),
            float(a.outcome is AuditOutcome.PASS),
            float(a.outcome is AuditOutcome.FAIL),
            float(a.outcome is AuditOutcome.INCONCLUSIVE),
            _tri(a.revealed_compliant),
            float(view.ambiguous),
            p.q,
            p.checks_per_audit / 4,
            p.V,
            p.bad_approval_loss / 10,
        ],
        dtype=np.float32,
    )


def validator_features_batch(v: ValidatorBatch) -> np.ndarray:
    """:func:`validator_features` for a batch, (n, 20)."""
    s, a, c = v.submissions, v.audit, v.config
    n = len(v.ambiguous)

    def tri(code: np.ndarray, favourable: int) -> np.ndarray:
        return np.where(code == ABSENT, 0.0, np.where(code == favourable, 1.0, -1.0))

    revealed = np.where(a.revealed_compliant == ABSENT, 0.0, np.where(a.revealed_compliant == 1, 1.0, -1.0))
    const = [c.q, c.checks_per_audit / 4, c.V, c.bad_approval_loss / 10]
    cols = [
        s.request.astype(np.float64),
        (s.reported_intent == HEDGE).astype(np.float64),
        s.reported_risk,
        s.reported_net_delta,
        v.risk_limit - s.reported_risk,
        v.delta_limit - np.abs(s.reported_net_delta),
        tri(s.claim_intent, int(HEDGE)),
        tri(s.claim_risk_within_limit, 1),
        tri(s.claim_net_delta_bounded, 1),
        s.words / 60,
        a.audited.astype(np.float64),
        (a.outcome == AuditOutcome.PASS).astype(np.float64),
        (a.outcome == AuditOutcome.FAIL).astype(np.float64),
        (a.outcome == AuditOutcome.INCONCLUSIVE).astype(np.float64),
        revealed,
        v.ambiguous.astype(np.float64),
        *(np.full(n, x) for x in const),
    ]
    return np.stack(cols, axis=1).astype(np.float32)
