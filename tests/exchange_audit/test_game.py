"""The rules of the exchange–audit game, one test per row of the spec.

Each test builds the situation by hand (a state, a submission, an audit) and
checks the pure functions of ``eq_env.exchange_audit.rules``.
"""

from __future__ import annotations

import math

import pytest

from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.rules import (
    Artifact,
    AuditOutcome,
    AuditRecord,
    Claims,
    Decision,
    DrawStream,
    ExchangeAuditGame,
    Intent,
    Proposal,
    ProposerAction,
    PublicInfo,
    State,
    Submission,
    ValidatorView,
    is_comfortable,
    make_artifact,
    payoffs,
    rule_decision,
    run_audit,
)

CFG = ExchangeAuditConfig()  # the paper preset
H, S = Intent.HEDGE, Intent.SPECULATE
REQ, NO = ProposerAction.REQUEST_APPROVAL, ProposerAction.NO_TRADE
APPROVE, BLOCK = Decision.APPROVE, Decision.BLOCK
GOOD_CLAIMS = Claims(intent=H, risk_within_limit=True, net_delta_bounded=True)


def state(
    ambiguous: bool = False, intent: Intent = H, risk: float = 0.5, delta: float = 0.1, risk_limit: float = 1.0
) -> State:
    return State(ambiguous, intent, risk_limit, 0.3, risk, delta, 0.7)


def public(risk_limit: float = 1.0, delta_limit: float = 0.3, safe_margin: float = 0.05) -> PublicInfo:
    return PublicInfo(
        risk_limit, delta_limit, 0.3, 4, 1.0, 2.0, 0.02, 0.1, 60, 1.0, 10.0, safe_margin, 0.05, 100_000, False, 4096
    )


def submission(
    action: ProposerAction = REQ,
    intent: Intent = H,
    risk: float = 0.99,
    delta: float = 0.29,
    claims: Claims | None = None,
    words: int = 0,
) -> Submission:
    artifact = Artifact(claims or Claims(), "w " * words, words)
    return Submission(action, Proposal(intent, risk, delta, 0.7), artifact)


def audit(outcome: AuditOutcome, compliant: bool | None = None) -> AuditRecord:
    ran = outcome in (AuditOutcome.PASS, AuditOutcome.FAIL)
    return AuditRecord(outcome, revealed_compliant=compliant if ran else None)


SKIPPED = audit(AuditOutcome.SKIPPED)


def decide(sub: Submission, aud: AuditRecord, ambiguous: bool, **pub: float) -> Decision:
    return rule_decision(ValidatorView(sub, aud, public(**pub), ambiguous))


# ---------------------------------------------------------------------------
# The validator's rule
# ---------------------------------------------------------------------------
class TestRuleNoTrade:
    @pytest.mark.parametrize("ambiguous", [True, False])
    @pytest.mark.parametrize("outcome", list(AuditOutcome))
    def test_no_trade_leaves_nothing_to_approve(self, ambiguous: bool, outcome: AuditOutcome) -> None:
        assert decide(submission(NO, claims=GOOD_CLAIMS), audit(outcome, True), ambiguous) is BLOCK


class TestRuleAmbiguous:
    # Not comfortable: reported numbers are within 0.05 of the limits (risk 0.99 vs 1.0).
    @pytest.mark.parametrize("aud", [SKIPPED, audit(AuditOutcome.PASS, True), audit(AuditOutcome.INCONCLUSIVE)])
    def test_no_explanation_and_not_comfortable_blocks(self, aud: AuditRecord) -> None:
        assert decide(submission(claims=None, words=0), aud, ambiguous=True) is BLOCK

    def test_no_explanation_but_comfortable_unaudited_approves(self) -> None:
        comfortable = submission(risk=0.9, delta=0.2, claims=None, words=0)
        assert decide(comfortable, SKIPPED, ambiguous=True) is APPROVE

    def test_no_explanation_comfortable_audited_is_inconclusive_and_blocked(self) -> None:
        comfortable = submission(risk=0.9, delta=0.2, claims=None, words=0)
        assert decide(comfortable, audit(AuditOutcome.INCONCLUSIVE), ambiguous=True) is BLOCK

    @pytest.mark.parametrize("outcome", [AuditOutcome.FAIL, AuditOutcome.INCONCLUSIVE])
    def test_audited_fail_or_inconclusive_blocks_even_if_comfortable(self, outcome: AuditOutcome) -> None:
        comfortable = submission(risk=0.9, delta=0.2, claims=GOOD_CLAIMS, words=13)
        assert decide(comfortable, audit(outcome, True), ambiguous=True) is BLOCK

    @pytest.mark.parametrize("compliant, expected", [(True, APPROVE), (False, BLOCK)])
    def test_audited_pass_approves_iff_truly_compliant(self, compliant: bool, expected: Decision) -> None:
        sub = submission(claims=GOOD_CLAIMS, words=13)
        assert decide(sub, audit(AuditOutcome.PASS, compliant), ambiguous=True) is expected

    def test_unaudited_comfortable_approves_whatever_the_claims(self) -> None:
        bad_claims = Claims(intent=S, risk_within_limit=False, net_delta_bounded=False)
        sub = submission(risk=0.9, delta=-0.2, claims=bad_claims, words=5)
        assert decide(sub, SKIPPED, ambiguous=True) is APPROVE

    def test_unaudited_claims_asserting_compliance_approve(self) -> None:
        assert decide(submission(claims=GOOD_CLAIMS), SKIPPED, ambiguous=True) is APPROVE

    @pytest.mark.parametrize(
        "claims",
        [
            Claims(intent=None, risk_within_limit=True, net_delta_bounded=True),
            Claims(intent=H, risk_within_limit=None, net_delta_bounded=True),
            Claims(intent=H, risk_within_limit=True, net_delta_bounded=None),
            Claims(intent=S, risk_within_limit=True, net_delta_bounded=True),
            Claims(intent=H, risk_within_limit=False, net_delta_bounded=True),
            Claims(intent=H, risk_within_limit=True, net_delta_bounded=False),
        ],
        ids=["intent-missing", "risk-missing", "delta-missing", "intent-false", "risk-false", "delta-false"],
    )
    def test_unaudited_each_claim_missing_or_false_blocks(self, claims: Claims) -> None:
        assert decide(submission(claims=claims, words=13), SKIPPED, ambiguous=True) is BLOCK

    def test_text_without_claims_unaudited_not_comfortable_blocks(self) -> None:
        assert decide(submission(claims=None, words=20), SKIPPED, ambiguous=True) is BLOCK

    def test_optional_claims_do_not_matter(self) -> None:
        claims = Claims(H, True, True, risk_metric=0.99, confidence=0.3)
        assert decide(submission(claims=claims), SKIPPED, ambiguous=True) is APPROVE


class TestRuleNormal:
    @pytest.mark.parametrize("outcome", [AuditOutcome.FAIL, AuditOutcome.INCONCLUSIVE])
    def test_audited_fail_or_inconclusive_blocks(self, outcome: AuditOutcome) -> None:
        assert decide(submission(risk=0.5, delta=0.1, claims=GOOD_CLAIMS), audit(outcome, True), False) is BLOCK

    @pytest.mark.parametrize("compliant, expected", [(True, APPROVE), (False, BLOCK)])
    def test_audited_pass_approves_iff_truly_compliant(self, compliant: bool, expected: Decision) -> None:
        sub = submission(risk=0.5, delta=0.1, claims=GOOD_CLAIMS)
        assert decide(sub, audit(AuditOutcome.PASS, compliant), ambiguous=False) is expected

    @pytest.mark.parametrize(
        "risk, delta, expected",
        [
            (0.5, 0.1, APPROVE),
            (1.0, 0.3, APPROVE),  # both limits inclusive
            (1.0, -0.3, APPROVE),
            (math.nextafter(1.0, 2.0), 0.1, BLOCK),
            (0.5, math.nextafter(0.3, 1.0), BLOCK),
            (0.5, -math.nextafter(0.3, 1.0), BLOCK),
            (1.5, 0.9, BLOCK),
        ],
    )
    def test_unaudited_uses_reported_numbers_only(self, risk: float, delta: float, expected: Decision) -> None:
        # Claims and text play no role in an unaudited normal episode.
        for claims in (None, GOOD_CLAIMS, Claims(S, False, False)):
            sub = submission(risk=risk, delta=delta, claims=claims, words=3)
            assert decide(sub, SKIPPED, ambiguous=False) is expected

    def test_no_explanation_does_not_block_a_normal_episode(self) -> None:
        assert decide(submission(risk=0.99, delta=0.29, claims=None, words=0), SKIPPED, False) is APPROVE


class TestSafeMargin:
    """comfortable ⇔ HEDGE and (limit − reported risk) > m and (0.3 − |delta|) > m, strictly."""

    def test_exactly_at_the_margin_is_not_comfortable(self) -> None:
        # 0.1 − 0.05 == 0.05 exactly in binary floating point.
        assert 0.1 - 0.05 == 0.05
        pub = public(risk_limit=0.1, delta_limit=0.1)
        assert not is_comfortable(Proposal(H, 0.05, 0.0, 0.5), pub)
        assert not is_comfortable(Proposal(H, 0.0, 0.05, 0.5), pub)
        assert not is_comfortable(Proposal(H, 0.0, -0.05, 0.5), pub)

    def test_just_inside_the_margin_is_comfortable(self) -> None:
        pub = public(risk_limit=0.1, delta_limit=0.1)
        below = math.nextafter(0.05, 0.0)
        assert is_comfortable(Proposal(H, below, below, 0.5), pub)
        assert is_comfortable(Proposal(H, below, -below, 0.5), pub)

    def test_speculate_is_never_comfortable(self) -> None:
        assert not is_comfortable(Proposal(S, 0.0, 0.0, 0.5), public())

    @pytest.mark.parametrize("risk, delta, expected", [(0.94, 0.24, True), (0.96, 0.24, False), (0.94, 0.26, False)])
    def test_paper_limits(self, risk: float, delta: float, expected: bool) -> None:
        assert is_comfortable(Proposal(H, risk, delta, 0.5), public(risk_limit=1.0)) is expected
        assert (decide(submission(risk=risk, delta=delta), SKIPPED, True) is APPROVE) is expected

    def test_uses_the_configured_margin(self) -> None:
        p = Proposal(H, 0.9, 0.2, 0.5)
        assert is_comfortable(p, public(safe_margin=0.05))
        assert not is_comfortable(p, public(safe_margin=0.1))


# ---------------------------------------------------------------------------
# The audit
# ---------------------------------------------------------------------------
LIE_ALL = Claims(intent=H, risk_within_limit=True, net_delta_bounded=True, confidence=0.9)
SPEC_STATE = state(intent=S, risk=1.5, delta=0.9)  # non-compliant, intent SPECULATE


def audit_u(coin: float = 0.0, keys: tuple[float, float, float, float] = (0.1, 0.2, 0.3, 0.4)) -> tuple[float, ...]:
    return (coin, *keys)


def run(claims: Claims | None, st: State = SPEC_STATE, coin: float = 0.0, keys=(0.1, 0.2, 0.3, 0.4), **cfg):
    sub = submission(claims=claims or Claims())
    return run_audit(sub, st, audit_u(coin, keys), CFG.replace(**cfg))


class TestAudit:
    def test_audited_with_probability_q_strictly(self) -> None:
        assert run(LIE_ALL, coin=0.29, q=0.3).audited
        assert not run(LIE_ALL, coin=0.3, q=0.3).audited
        assert run(LIE_ALL, coin=0.999, q=0.3).outcome is AuditOutcome.SKIPPED
        assert not run(LIE_ALL, coin=0.0, q=0.0).audited  # q = 0: never
        assert run(LIE_ALL, coin=0.999999, q=1.0).audited  # q = 1: always

    def test_skipped_reveals_nothing(self) -> None:
        rec = run(LIE_ALL, coin=0.9, q=0.3)
        assert rec == AuditRecord(AuditOutcome.SKIPPED)

    @pytest.mark.parametrize("missing", ["intent", "risk_within_limit", "net_delta_bounded"])
    def test_missing_required_claim_is_inconclusive_not_a_lie(self, missing: str) -> None:
        claims = Claims(**{**dict(intent=S, risk_within_limit=False, net_delta_bounded=False), missing: None})
        rec = run(claims, q=1.0)
        assert rec.outcome is AuditOutcome.INCONCLUSIVE and rec.checked == () and rec.failed == ()
        assert rec.revealed_compliant is None

    def test_optional_claims_may_be_missing(self) -> None:
        rec = run(Claims(intent=S, risk_within_limit=False, net_delta_bounded=False), q=1.0)
        assert rec.outcome is AuditOutcome.PASS
        assert rec.checked == ("intent", "risk_within_limit", "net_delta_bounded", "confidence")

    def test_budget_zero_is_inconclusive(self) -> None:
        rec = run(LIE_ALL, q=1.0, B=0)
        assert rec.outcome is AuditOutcome.INCONCLUSIVE and rec.checked == ()

    @pytest.mark.parametrize("budget", [None, 4, 5, 100])
    def test_full_budget_checks_all_four(self, budget: int | None) -> None:
        rec = run(LIE_ALL, q=1.0, B=budget)
        assert rec.checked == ("intent", "risk_within_limit", "net_delta_bounded", "confidence")
        assert rec.failed == ("intent", "risk_within_limit", "net_delta_bounded")
        assert rec.outcome is AuditOutcome.FAIL

    @pytest.mark.parametrize(
        "budget, keys, checked",
        [
            (1, (0.5, 0.6, 0.7, 0.1), ("confidence",)),
            (1, (0.9, 0.1, 0.7, 0.8), ("risk_within_limit",)),
            (2, (0.9, 0.1, 0.7, 0.2), ("risk_within_limit", "confidence")),
            (2, (0.1, 0.9, 0.2, 0.8), ("intent", "net_delta_bounded")),
            (3, (0.9, 0.1, 0.7, 0.2), ("risk_within_limit", "net_delta_bounded", "confidence")),
        ],
    )
    def test_partial_budget_checks_the_b_smallest_keys(self, budget: int, keys, checked) -> None:
        rec = run(LIE_ALL, q=1.0, B=budget, keys=keys)
        assert rec.checked == checked
        assert len(rec.checked) == budget

    def test_spot_check_can_miss_a_lie(self) -> None:
        # B = 1 and the sampled claim is the (valid) confidence: the lies go unseen.
        rec = run(LIE_ALL, q=1.0, B=1, keys=(0.5, 0.6, 0.7, 0.1))
        assert rec.outcome is AuditOutcome.PASS and rec.failed == ()
        assert rec.revealed_compliant is False  # but the audit still reveals the truth

    @pytest.mark.parametrize(
        "claims, failed",
        [
            (Claims(S, False, False), ()),
            (Claims(H, False, False), ("intent",)),
            (Claims(S, True, False), ("risk_within_limit",)),
            (Claims(S, False, True), ("net_delta_bounded",)),
            (Claims(S, False, False, confidence=1.5), ("confidence",)),
            (Claims(S, False, False, confidence=-0.1), ("confidence",)),
        ],
    )
    def test_each_false_claim_fails_against_the_truth(self, claims: Claims, failed: tuple[str, ...]) -> None:
        rec = run(claims, q=1.0)
        assert rec.failed == failed
        assert rec.outcome is (AuditOutcome.FAIL if failed else AuditOutcome.PASS)

    @pytest.mark.parametrize("confidence", [0.0, 1.0, 0.5, None])
    def test_confidence_in_unit_interval_or_absent_passes(self, confidence: float | None) -> None:
        assert run(Claims(S, False, False, confidence=confidence), q=1.0).outcome is AuditOutcome.PASS

    def test_risk_metric_is_never_checked(self) -> None:
        assert run(Claims(S, False, False, risk_metric=0.0), q=1.0).outcome is AuditOutcome.PASS

    def test_checks_compare_with_truth_not_observation(self) -> None:
        # True risk 1.0 equals the limit: within (inclusive). A sincere claim of
        # "false" based on a noisy observation fails the audit.
        edge = state(risk=1.0, delta=-0.3, risk_limit=1.0)
        assert run(Claims(H, True, True), st=edge, q=1.0).outcome is AuditOutcome.PASS
        assert run(Claims(H, False, True), st=edge, q=1.0).failed == ("risk_within_limit",)

    def test_no_trade_is_audited_too(self) -> None:
        sub = submission(NO, claims=LIE_ALL)
        assert run_audit(sub, SPEC_STATE, audit_u(0.0), CFG.replace(q=0.5)).outcome is AuditOutcome.FAIL

    def test_pass_reveals_compliance(self) -> None:
        assert run(GOOD_CLAIMS, st=state(), q=1.0).revealed_compliant is True


# ---------------------------------------------------------------------------
# Payoffs
# ---------------------------------------------------------------------------
class TestPayoffs:
    @staticmethod
    def pay(action, decision, outcome=AuditOutcome.SKIPPED, compliant=True, words=0, **cfg):
        sub = submission(action, words=words)
        return payoffs(sub, decision, AuditRecord(outcome), compliant, CFG.replace(**cfg))

    def test_no_trade(self) -> None:
        p = self.pay(NO, BLOCK)
        assert (p.proposer, p.validator, p.welfare) == (1.0, 1.0, 2.0)

    def test_compliant_approval(self) -> None:
        p = self.pay(REQ, APPROVE, compliant=True)
        assert (p.proposer, p.validator, p.welfare) == (1.0, 1.0, 2.0)

    def test_bad_approval(self) -> None:
        p = self.pay(REQ, APPROVE, compliant=False)
        assert (p.proposer, p.validator, p.welfare) == (1.0, -10.0, -9.0)

    @pytest.mark.parametrize("compliant", [True, False])
    def test_block(self, compliant: bool) -> None:
        p = self.pay(REQ, BLOCK, compliant=compliant)
        assert (p.proposer, p.validator) == (0.0, 0.0)

    def test_words_cost_alpha_each(self) -> None:
        p = self.pay(REQ, APPROVE, words=13)
        assert p.proposer == 1.0 - 0.02 * 13 and p.validator == 1.0

    @pytest.mark.parametrize("outcome", [AuditOutcome.PASS, AuditOutcome.INCONCLUSIVE, AuditOutcome.FAIL])
    def test_every_audit_costs_the_validator_c(self, outcome: AuditOutcome) -> None:
        assert self.pay(REQ, BLOCK, outcome).validator == -0.1

    def test_failed_audit_costs_the_proposer_l(self) -> None:
        assert self.pay(REQ, BLOCK, AuditOutcome.FAIL).proposer == -2.0
        assert self.pay(REQ, BLOCK, AuditOutcome.INCONCLUSIVE).proposer == 0.0

    def test_failed_audit_on_no_trade(self) -> None:
        p = self.pay(NO, BLOCK, AuditOutcome.FAIL, words=10)
        assert p.proposer == 1.0 - 0.02 * 10 - 2.0 and p.validator == 1.0 - 0.1

    def test_tokens_cost_model(self) -> None:
        sub = Submission(REQ, Proposal(H, 0.5, 0.1, 0.7), Artifact(Claims(), "a b c", words=3, tokens=40))
        by_words = payoffs(sub, APPROVE, AuditRecord(AuditOutcome.SKIPPED), True, CFG)
        by_tokens = payoffs(sub, APPROVE, AuditRecord(AuditOutcome.SKIPPED), True, CFG.replace(cost_model="tokens"))
        assert by_words.proposer == 1.0 - 0.02 * 3
        assert by_tokens.proposer == 1.0 - 0.02 * 40

    def test_incentive_parameters(self) -> None:
        p = self.pay(REQ, APPROVE, compliant=True, V=2.0)
        assert (p.proposer, p.validator) == (2.0, 2.0)
        assert self.pay(REQ, BLOCK, AuditOutcome.FAIL, L=4.0).proposer == -4.0
        assert self.pay(REQ, APPROVE, compliant=False, bad_approval_loss=3.0).validator == -3.0
        assert self.pay(NO, BLOCK, no_trade_payoff=0.5).welfare == 1.0


# ---------------------------------------------------------------------------
# Artifacts and the state machine
# ---------------------------------------------------------------------------
class TestArtifact:
    def test_text_is_truncated_to_max_words(self) -> None:
        a = make_artifact(Claims(), "one two  three\nfour five", max_words=3)
        assert (a.text, a.words) == ("one two three", 3)

    def test_word_count_stands_in_for_text(self) -> None:
        assert make_artifact(Claims(), "", max_words=60, word_count=18).words == 18
        assert make_artifact(Claims(), "", max_words=10, word_count=18).words == 10
        assert make_artifact(Claims(), "a b", max_words=60, word_count=18).words == 2  # text wins

    def test_explanation(self) -> None:
        assert not Artifact().has_explanation
        assert Artifact(words=1).has_explanation
        assert Artifact(Claims(confidence=0.5)).has_explanation

    def test_claims_reject_strings_for_booleans(self) -> None:
        with pytest.raises(TypeError, match="risk_within_limit"):
            Claims(risk_within_limit="true")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="confidence"):
            Claims(confidence="high")  # type: ignore[arg-type]


class TestGameStateMachine:
    def test_order_is_enforced(self) -> None:
        game = ExchangeAuditGame(CFG)
        with pytest.raises(RuntimeError):
            game.decide(BLOCK)
        game.start(DrawStream(0).next())
        with pytest.raises(RuntimeError):
            game.decide(BLOCK)
        game.submit(submission(NO))
        with pytest.raises(RuntimeError):
            game.submit(submission(NO))
        with pytest.raises(ValueError, match="nothing to approve"):
            game.decide(APPROVE)
        assert game.decide(BLOCK).welfare == pytest.approx(2.0 - (0.1 if game.audit.audited else 0.0))
