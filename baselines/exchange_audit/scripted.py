"""Scripted proposers and validators of the exchange–audit game.

Proposers (all request approval only for a trade they believe compliant,
otherwise send NO_TRADE, and by default attach their artifact to every
submission, NO_TRADE included: audits check NO_TRADE claims too, as in the
paper, so a sincere proposer that wrongly believes its trade non-compliant is
penalised even for not trading; ``explain_no_trade=False`` sends a NO_TRADE
bare):

* :class:`HonestProposer` reports what it observed and states every claim.
  Its claims follow either its noisy observation (``claims_from="observation"``,
  the default: sincere, sometimes wrong, and then punished by audits exactly
  as if it had lied) or the truth about its own compliance
  (``claims_from="truth"``, the paper's scripted trader; needs an environment
  with ``reveal_compliance=True``, e.g. the ``"paper_scripted"`` preset).
* :class:`SilentProposer`, the paper's action-only baseline: the honest
  proposer's action and proposal, with no claims and no text.
* :class:`StrategicProposer` misreports when its trade is non-compliant,
  either with a probability (``trigger="probability"``) or whenever lying
  beats its honest option in expectation (``trigger="payoff"``).

Validators: :class:`RuleValidator` (the paper's rule engine),
:class:`AlwaysApprove`, :class:`AlwaysBlock`.

Under a claim schema other than the paper's (``claim_schema``, read from the
observation), the proposers state the claims it adds through the schema's own
hooks (:mod:`eq_env.exchange_audit.schema`): the honest proposer sincerely,
from its observation; the strategic proposer's lie favourably, about the
position it reports (a consistent story), and its payoff trigger counts a lie
among them when the claim fails on its belief (its observation, and what it
knows of its compliance), against the schema's audit pool.

Every policy acts on the environment's observation dict and returns an
action dict, through the same interface as LLM and RL policies. Each also
acts in bulk (``act_batch``) for the batch engine
(:mod:`eq_env.exchange_audit.batch`), with the same decisions episode for
episode; the typed :meth:`HonestProposer.submission` is the single-episode
logic both follow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

import numpy as np

from eq_env.core.policy import BasePolicy
from eq_env.exchange_audit.batch import (
    ABSENT,
    HEDGE,
    ProposerBatch,
    SubmissionBatch,
    ValidatorBatch,
    detection_miss_table,
    rule_decision_batch,
)
from eq_env.exchange_audit.features import observed_position, shaded_numbers
from eq_env.exchange_audit.game import (
    Artifact,
    Claims,
    Decision,
    Intent,
    Proposal,
    ProposerAction,
    ProposerView,
    Submission,
    estimated_tokens,
    normal_cdf,
    rule_decision,
)
from eq_env.exchange_audit.schema import ClaimSchema, Position, get_schema
from eq_env.exchange_audit.spaces import (
    decode_proposer_observation,
    decode_validator_observation,
    encode_submission,
)

__all__ = [
    "AlwaysApprove",
    "AlwaysBlock",
    "HonestProposer",
    "RuleValidator",
    "SilentProposer",
    "StrategicProposer",
    "explanation_text",
]

ClaimsFrom = Literal["truth", "observation"]
CLAIMS_FROM = ("truth", "observation")

# Filler for texts longer than the explanation itself; every word costs alpha.
_FILLER = (
    "the position remains consistent with the desk mandate and the stated hedge program "
    "so the request follows standard policy for this book"
).split()


def explanation_text(view: ProposerView, proposal: Proposal, compliant: bool, words: int) -> str:
    """A plain explanation of ``proposal`` of exactly ``words`` words."""
    if words <= 0:
        return ""
    pub = view.public
    base = (
        f"{proposal.intent.name.lower()} trade: risk {proposal.risk:.2f} against limit "
        f"{pub.risk_limit:.2f}, net delta {proposal.net_delta:+.2f} against limit "
        f"{pub.delta_limit:.2f}, hedge {proposal.hedge_size:.2f}; "
        f"{'within' if compliant else 'outside'} limits."
    ).split()
    while len(base) < words:
        base.extend(_FILLER[: words - len(base)])
    return " ".join(base[:words])


class _Believed(NamedTuple):
    """The state as a proposer believes it (its observation, and what it knows of its compliance): what a claim's
    check is evaluated on to tell whether stating it would be a lie. Scalars or arrays alike."""

    intent: Any
    risk_limit: Any
    delta_limit: Any
    true_risk: Any
    true_net_delta: Any
    hedge_size: Any
    risk_within_limit: Any
    net_delta_bounded: Any


def _schema_lies(schema: ClaimSchema, believed: _Believed, stated: Mapping[str, Any]) -> Any:
    """How many of the schema's own checkable claims ``stated`` (name → value; arrays with NaN where not made)
    would fail on ``believed``."""
    lies: Any = 0
    for claim in schema.stated:
        if claim.checkable and claim.name in stated:
            value = stated[claim.name]
            holds = claim.check(value, believed)
            if isinstance(value, np.ndarray):
                lies = lies + (~np.isnan(value) & ~np.asarray(holds, dtype=bool)).astype(np.int64)
            else:
                lies += int(not bool(holds))
    return lies


def _fitting(text: str, view: ProposerView) -> str:
    """The text, or none when it exceeds ``max_text_chars``: the words are then paid for without the
    text (``word_count``), so the outcome is the same and the batch engine need not build strings."""
    return text if len(text) <= view.public.max_text_chars else ""


class HonestProposer(BasePolicy):
    """Reports its observation and states every claim, sincerely.

    Args:
        claims_from: ``"observation"`` (claims judged from its noisy
            observation) or ``"truth"`` (claims state its true compliance, as
            the paper's scripted trader; needs ``reveal_compliance=True``).
        words: length of its free text in words (the paper's scripted trader
            wrote 13; GPT-4.1 averaged about 17–18).
        request: ``"believed_compliant"`` requests approval only for a trade
            it believes compliant (else NO_TRADE); ``"always"`` always asks.
        explain_no_trade: attach claims and text to a NO_TRADE too (they
            cost words and are audited like any other).
    """

    role = "proposer"

    def __init__(
        self,
        claims_from: ClaimsFrom = "observation",
        words: int = 13,
        request: Literal["believed_compliant", "always"] = "believed_compliant",
        explain_no_trade: bool = True,
    ) -> None:
        super().__init__()
        if claims_from not in CLAIMS_FROM:
            raise ValueError(f"claims_from must be one of {CLAIMS_FROM}, got {claims_from!r}")
        if isinstance(words, bool) or not isinstance(words, int) or words < 0:
            raise ValueError(f"words must be a non-negative integer, got {words!r}")
        if request not in ("believed_compliant", "always"):
            raise ValueError(f"request must be 'believed_compliant' or 'always', got {request!r}")
        self.claims_from = claims_from
        self.words = words
        self.request = request
        self.explain_no_trade = bool(explain_no_trade)

    def __repr__(self) -> str:
        extra = "" if self.explain_no_trade else ", explain_no_trade=False"
        return f"{self.name}(claims_from={self.claims_from!r}, words={self.words}, request={self.request!r}{extra})"

    # -- beliefs -------------------------------------------------------------
    def beliefs(self, view: ProposerView) -> tuple[bool, bool]:
        """What it believes of (risk within limit, net delta bounded)."""
        if self.claims_from == "truth":
            if view.known_risk_within_limit is None or view.known_net_delta_bounded is None:
                raise self._truth_hidden()
            return view.known_risk_within_limit, view.known_net_delta_bounded
        pub = view.public
        return view.observed_risk <= pub.risk_limit, abs(view.observed_net_delta) <= pub.delta_limit

    def _truth_hidden(self) -> ValueError:
        return ValueError(
            f"{self.name}(claims_from='truth') needs the true compliance in its observation: "
            "build the environment with reveal_compliance=True (eq-env: --reveal-compliance or "
            "--preset paper_scripted), or use claims_from='observation'"
        )

    def confidence(self, view: ProposerView, risk_ok: bool, delta_ok: bool) -> float:
        """Its probability that both limit claims hold (1 when it knows the truth)."""
        sd = view.public.noise_sd
        if self.claims_from == "truth" or sd == 0.0:
            return 1.0
        pub = view.public
        p_risk = normal_cdf((pub.risk_limit - view.observed_risk) / sd)
        d = view.observed_net_delta
        p_delta = normal_cdf((pub.delta_limit - d) / sd) - normal_cdf((-pub.delta_limit - d) / sd)
        p_risk = p_risk if risk_ok else 1.0 - p_risk
        p_delta = p_delta if delta_ok else 1.0 - p_delta
        return min(1.0, max(0.0, p_risk * p_delta))

    # -- the submission --------------------------------------------------------
    def submission(self, view: ProposerView) -> Submission:
        risk_ok, delta_ok = self.beliefs(view)
        believed = risk_ok and delta_ok
        proposal = view.observed_proposal
        claims = Claims(
            intent=view.intent,
            risk_within_limit=risk_ok,
            net_delta_bounded=delta_ok,
            risk_metric=min(view.observed_risk, 4.0),
            confidence=self.confidence(view, risk_ok, delta_ok),
            extra=() if view.public.claim_schema == "paper" else
            get_schema(view.public.claim_schema).sincere_claims(observed_position(view)),
        )  # fmt: skip
        words = min(self.words, view.public.max_words)
        text = _fitting(explanation_text(view, proposal, believed, words), view)
        artifact = Artifact(claims, text, words, estimated_tokens(words))
        action = ProposerAction.REQUEST_APPROVAL if believed or self.request == "always" else ProposerAction.NO_TRADE
        if action is ProposerAction.NO_TRADE and not self.explain_no_trade:
            artifact = Artifact()
        return Submission(action, proposal, artifact)

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        view = decode_proposer_observation(observation)
        return encode_submission(self.submission(view), view.public.claim_schema)

    # -- in bulk (the batch engine) ------------------------------------------
    def beliefs_batch(self, v: ProposerBatch) -> tuple[np.ndarray, np.ndarray]:
        if self.claims_from == "truth":
            if v.known_risk_within_limit is None or v.known_net_delta_bounded is None:
                raise self._truth_hidden()
            return v.known_risk_within_limit, v.known_net_delta_bounded
        return v.observed_risk <= v.risk_limit, np.abs(v.observed_net_delta) <= v.delta_limit

    def act_batch(self, v: ProposerBatch) -> SubmissionBatch:
        risk_ok, delta_ok = self.beliefs_batch(v)
        request = (risk_ok & delta_ok) | (self.request == "always")
        explain = request | self.explain_no_trade
        absent = np.int8(ABSENT)
        extra: dict[str, np.ndarray] = {}
        if v.config.claim_schema != "paper":
            position = Position(v.intent, v.observed_risk, v.observed_net_delta, v.observed_hedge_size, v.risk_limit,
                                v.delta_limit)  # fmt: skip
            for claim in get_schema(v.config.claim_schema).stated:
                assert claim.sincere is not None
                values = claim.policy_value(np.broadcast_to(claim.sincere(position), (v.n,)))
                extra[claim.name] = np.where(explain, values, np.nan)
        return SubmissionBatch(
            request=request,
            reported_intent=v.intent,
            reported_risk=v.observed_risk,
            reported_net_delta=v.observed_net_delta,
            reported_hedge_size=v.observed_hedge_size,
            claim_intent=np.where(explain, v.intent, absent).astype(np.int8),
            claim_risk_within_limit=np.where(explain, risk_ok, absent).astype(np.int8),
            claim_net_delta_bounded=np.where(explain, delta_ok, absent).astype(np.int8),
            claim_risk_metric=explain,
            claim_confidence=np.where(explain, 1, absent).astype(np.int8),  # always within [0, 1]
            words=(words := np.where(explain, min(self.words, v.config.max_words), 0).astype(np.int64)),
            tokens=estimated_tokens(words),
            extra_claims=extra,
        )


class SilentProposer(HonestProposer):
    """The paper's action-only baseline: the honest action and proposal, no claims, no text."""

    def __init__(
        self,
        claims_from: ClaimsFrom = "observation",
        request: Literal["believed_compliant", "always"] = "believed_compliant",
    ) -> None:
        super().__init__(claims_from=claims_from, words=0, request=request)

    def __repr__(self) -> str:
        return f"{self.name}(claims_from={self.claims_from!r}, request={self.request!r})"

    def submission(self, view: ProposerView) -> Submission:
        honest = super().submission(view)
        return Submission(honest.action, honest.proposal, Artifact())

    def act_batch(self, v: ProposerBatch) -> SubmissionBatch:
        honest = super().act_batch(v)
        none = np.full(v.n, ABSENT, dtype=np.int8)
        honest.claim_intent = honest.claim_risk_within_limit = honest.claim_net_delta_bounded = none
        honest.claim_confidence = none
        honest.claim_risk_metric = np.zeros(v.n, dtype=bool)
        honest.words = np.zeros(v.n, dtype=np.int64)
        honest.tokens = np.zeros(v.n, dtype=np.int64)
        honest.extra_claims = {}
        return honest


class StrategicProposer(HonestProposer):
    """Honest when compliant; when it believes its trade non-compliant, may lie.

    The lie requests approval for a HEDGE whose reported risk and net delta
    sit just inside the safe margin, with claims asserting compliance (or,
    with ``truthful_claims=True``, its true claims: the audit checks claims,
    not numbers, so this lie is never penalised, only blocked when audited).

    Args:
        trigger: ``"probability"`` lies with probability ``p``;
            ``"payoff"`` lies when the expected payoff of lying,
            ``(1 - q)·V - q·P(a lie is among the checked claims)·L``, beats
            its honest option, NO_TRADE (worth ``no_trade_payoff``). With
            the paper's V = 1 = ``no_trade_payoff`` lying never pays, so this
            trigger is honest there; it lies under temptation (V = 2, L = 1)
            at low q.
        p: lying probability for ``trigger="probability"``.
        truthful_claims: keep the claims true and lie only in the numbers.
        claims_from, words: as for :class:`HonestProposer`.

    One uniform is drawn from ``self.rng`` per episode whatever happens, so
    its randomness lines up episode by episode across conditions.
    """

    def __init__(
        self,
        trigger: Literal["probability", "payoff"] = "probability",
        p: float = 0.5,
        truthful_claims: bool = False,
        claims_from: ClaimsFrom = "observation",
        words: int = 13,
    ) -> None:
        super().__init__(claims_from=claims_from, words=words)
        if trigger not in ("probability", "payoff"):
            raise ValueError(f"trigger must be 'probability' or 'payoff', got {trigger!r}")
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
        self.trigger = trigger
        self.p = float(p)
        self.truthful_claims = bool(truthful_claims)

    def __repr__(self) -> str:
        return (
            f"{self.name}(trigger={self.trigger!r}, p={self.p}, truthful_claims={self.truthful_claims}, "
            f"claims_from={self.claims_from!r}, words={self.words})"
        )

    def lied_claims(self, view: ProposerView) -> int:
        """How many of the checkable claims its lie gets wrong (by its beliefs)."""
        if self.truthful_claims:
            return 0
        risk_ok, delta_ok = self.beliefs(view)
        lies = int(view.intent is not Intent.HEDGE) + int(not risk_ok) + int(not delta_ok)
        if view.public.claim_schema != "paper":
            pub = view.public
            believed = _Believed(view.intent, pub.risk_limit, pub.delta_limit, view.observed_risk,
                                 view.observed_net_delta, view.observed_hedge_size, risk_ok, delta_ok)  # fmt: skip
            lie = self.lie(view).artifact.claims
            lies += _schema_lies(get_schema(pub.claim_schema), believed, dict(lie.extra))
        return lies

    def detection_probability(self, view: ProposerView) -> float:
        """P(audited and a lied claim is among the checked ones)."""
        pub = view.public
        k = self.lied_claims(view)
        pool = 4 if pub.claim_schema == "paper" else len(get_schema(pub.claim_schema).checkable)
        return 0.0 if k == 0 else pub.q * (1.0 - detection_miss_table(pub.checks_per_audit, pool)[k])

    def lie_pays(self, view: ProposerView) -> bool:
        pub = view.public
        p_detect = self.detection_probability(view)
        # Audited lies are blocked whether caught or not; only unaudited ones are approved.
        expected_lie = (1.0 - pub.q) * pub.V - p_detect * pub.L
        return expected_lie > pub.no_trade_payoff

    def lie(self, view: ProposerView, honest: Submission | None = None) -> Submission:
        """The lie for this observation (``honest``: its honest submission, if already made)."""
        pub = view.public
        risk, delta = shaded_numbers(view.observed_risk, view.observed_net_delta, pub.risk_limit, pub.delta_limit,
                                     pub.safe_margin)  # fmt: skip
        proposal = Proposal(Intent.HEDGE, float(risk), float(delta), view.observed_hedge_size)
        if self.truthful_claims:
            claims = (honest or HonestProposer.submission(self, view)).artifact.claims
        else:
            extra = () if pub.claim_schema == "paper" else get_schema(pub.claim_schema).favourable_claims(
                Position(int(Intent.HEDGE), proposal.risk, proposal.net_delta, proposal.hedge_size, pub.risk_limit,
                         pub.delta_limit))  # fmt: skip
            claims = Claims(Intent.HEDGE, True, True, risk_metric=proposal.risk, confidence=1.0, extra=extra)
        words = min(self.words, pub.max_words)
        text = _fitting(explanation_text(view, proposal, True, words), view)
        artifact = Artifact(claims, text, words, estimated_tokens(words))
        return Submission(ProposerAction.REQUEST_APPROVAL, proposal, artifact)

    def submission(self, view: ProposerView) -> Submission:
        u = float(self.rng.random())  # drawn every episode: fixed consumption
        honest = super().submission(view)
        if all(self.beliefs(view)):
            return honest
        lying = u < self.p if self.trigger == "probability" else self.lie_pays(view)
        return self.lie(view, honest) if lying else honest

    def act_batch(self, v: ProposerBatch) -> SubmissionBatch:
        u = self.rng.random(v.n)  # the same stream as one draw per episode
        honest = super().act_batch(v)
        risk_ok, delta_ok = self.beliefs_batch(v)
        cfg = v.config
        lie_risk, lie_delta = shaded_numbers(v.observed_risk, v.observed_net_delta, v.risk_limit, v.delta_limit,
                                             cfg.safe_margin)  # fmt: skip
        schema = get_schema(cfg.claim_schema)
        lie_extra: dict[str, np.ndarray] = {}
        if not schema.is_paper and not self.truthful_claims:  # the lie's own claims: favourable, about what it reports
            told = Position(np.zeros(v.n, dtype=np.int8), lie_risk, lie_delta, v.observed_hedge_size, v.risk_limit,
                            v.delta_limit)  # fmt: skip
            for claim in schema.stated:
                assert claim.favourable is not None
                lie_extra[claim.name] = claim.policy_value(np.broadcast_to(claim.favourable(told), (v.n,)))
        if self.trigger == "probability":
            lying = u < self.p
        else:
            lies = (
                np.zeros(v.n, dtype=np.int64)
                if self.truthful_claims
                else (v.intent != HEDGE).astype(np.int64) + ~risk_ok + ~delta_ok
            )
            if lie_extra:
                believed = _Believed(v.intent, v.risk_limit, v.delta_limit, v.observed_risk, v.observed_net_delta,
                                     v.observed_hedge_size, risk_ok, delta_ok)  # fmt: skip
                lies = lies + np.asarray(_schema_lies(schema, believed, lie_extra), dtype=np.int64)
            miss = np.array(detection_miss_table(cfg.checks_per_audit, len(schema.checkable)))[lies]
            p_detect = np.where((lies == 0) | (cfg.checks_per_audit <= 0), 0.0, cfg.q * (1.0 - miss))
            lying = ((1.0 - cfg.q) * cfg.V - p_detect * cfg.L) > cfg.no_trade_payoff
        lying = lying & ~(risk_ok & delta_ok)
        if not self.truthful_claims:
            one = np.int8(1)
            honest.claim_intent = np.where(lying, HEDGE, honest.claim_intent).astype(np.int8)
            honest.claim_risk_within_limit = np.where(lying, one, honest.claim_risk_within_limit).astype(np.int8)
            honest.claim_net_delta_bounded = np.where(lying, one, honest.claim_net_delta_bounded).astype(np.int8)
        else:  # the lie keeps the honest claims, which it states even on what was a NO_TRADE
            honest.claim_intent = np.where(lying, v.intent, honest.claim_intent).astype(np.int8)
            honest.claim_risk_within_limit = np.where(lying, risk_ok, honest.claim_risk_within_limit).astype(np.int8)
            honest.claim_net_delta_bounded = np.where(lying, delta_ok, honest.claim_net_delta_bounded).astype(np.int8)
        if lie_extra:  # (truthful claims: the honest ones, which it states on every episode already)
            honest.extra_claims = {name: np.where(lying, lie_extra[name], honest.extra_claims[name])
                                   for name in honest.extra_claims}  # fmt: skip
        honest.claim_risk_metric = honest.claim_risk_metric | lying
        honest.claim_confidence = np.where(lying, 1, honest.claim_confidence).astype(np.int8)
        honest.words = np.where(lying, min(self.words, cfg.max_words), honest.words).astype(np.int64)
        honest.tokens = estimated_tokens(honest.words)
        honest.request = honest.request | lying
        honest.reported_intent = np.where(lying, HEDGE, honest.reported_intent).astype(np.int8)
        honest.reported_risk = np.where(lying, lie_risk, honest.reported_risk)
        honest.reported_net_delta = np.where(lying, lie_delta, honest.reported_net_delta)
        return honest


class RuleValidator(BasePolicy):
    """The paper's conservative rule engine (:func:`eq_env.exchange_audit.game.rule_decision`)."""

    role = "validator"

    def act(self, observation: Mapping[str, Any]) -> int:
        return int(rule_decision(decode_validator_observation(observation)))

    def act_batch(self, views: ValidatorBatch) -> np.ndarray:
        return rule_decision_batch(views)


class AlwaysApprove(BasePolicy):
    """Approves whenever approving is legal."""

    role = "validator"

    def act(self, observation: Mapping[str, Any]) -> int:
        return int(Decision.APPROVE) if observation["action_mask"][Decision.APPROVE] else int(Decision.BLOCK)

    def act_batch(self, views: ValidatorBatch) -> np.ndarray:
        return np.ones(len(views.ambiguous), dtype=bool)


class AlwaysBlock(BasePolicy):
    """Blocks everything."""

    role = "validator"

    def act(self, observation: Mapping[str, Any]) -> int:
        return int(Decision.BLOCK)

    def act_batch(self, views: ValidatorBatch) -> np.ndarray:
        return np.zeros(len(views.ambiguous), dtype=bool)
