"""Scripted policies and the policy registry."""

from __future__ import annotations

import math

import pytest

from eq_env import exchange_audit_v0
from eq_env.baselines import (
    AlwaysApprove,
    AlwaysBlock,
    HonestProposer,
    RuleValidator,
    SilentProposer,
    StrategicProposer,
)
from eq_env.baselines.exchange_audit.scripted import explanation_text
from eq_env.core.policy import Policy, available_policies, make_policy, parse_policy_spec
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.rules import Intent, ProposerAction, ProposerView, rule_decision
from eq_env.exchange_audit.runner import play
from eq_env.exchange_audit.spaces import decode_proposer_observation, decode_validator_observation

PAPER = ExchangeAuditConfig()
SCRIPTED = ExchangeAuditConfig.from_preset("paper_scripted")  # reveals true compliance


def views(n: int = 400, **cfg: object) -> list[ProposerView]:
    """Proposer views of ``n`` episodes; the true compliance is revealed unless ``cfg`` says otherwise."""
    env = exchange_audit_v0.env(**{"reveal_compliance": True, **cfg})
    out = []
    for i in range(n):
        env.reset(seed=0) if i == 0 else env.reset()
        out.append(decode_proposer_observation(env.observe("proposer_0")))
    return out


def truth(env_view: ProposerView) -> tuple[bool, bool]:
    assert env_view.known_risk_within_limit is not None and env_view.known_net_delta_bounded is not None
    return env_view.known_risk_within_limit, env_view.known_net_delta_bounded


class TestHonest:
    def test_claims_follow_the_truth_and_it_requests_iff_compliant(self) -> None:
        policy = HonestProposer(claims_from="truth")
        for view in views():
            sub = policy.submission(view)
            risk_ok, delta_ok = truth(view)
            c = sub.artifact.claims
            assert (c.intent, c.risk_within_limit, c.net_delta_bounded) == (view.intent, risk_ok, delta_ok)
            assert c.confidence == 1.0
            assert (sub.action is ProposerAction.REQUEST_APPROVAL) == (risk_ok and delta_ok)
            p = sub.proposal
            assert (p.intent, p.risk, p.net_delta) == (view.intent, view.observed_risk, view.observed_net_delta)
            assert sub.artifact.words == 13 and len(sub.artifact.text.split()) == 13

    def test_sincere_claims_follow_the_observation(self) -> None:
        policy = HonestProposer(claims_from="observation")
        wrong = 0
        for view in views(reveal_compliance=True):
            sub = policy.submission(view)
            pub = view.public
            believed = (view.observed_risk <= pub.risk_limit, abs(view.observed_net_delta) <= pub.delta_limit)
            claims = sub.artifact.claims
            assert (claims.risk_within_limit, claims.net_delta_bounded) == believed
            assert 0.0 <= claims.confidence <= 1.0
            wrong += believed != truth(view)
        assert wrong > 10  # noise makes a sincere proposer sometimes wrong

    def test_sincere_mistakes_are_punished_like_lies(self) -> None:
        records = play(PAPER.replace(q=1.0), "honest:claims_from=observation", "rule", episodes=300, seed=0)
        failed = [r for r in records if r.audit_outcome == "FAIL"]
        assert failed and all(
            r.proposer_payoff == pytest.approx(-2.0 - 0.26 + (1.0 if r.proposer_action == "NO_TRADE" else 0.0))
            for r in failed
        )
        truthful = play(SCRIPTED.replace(q=1.0), "honest:claims_from=truth", "rule", episodes=300, seed=0)
        assert not any(r.audit_outcome == "FAIL" for r in truthful)

    def test_truth_needs_revealed_compliance(self) -> None:
        env = exchange_audit_v0.env()  # the paper preset hides compliance, as the spec's observation does
        env.reset(seed=0)
        assert env.observe("proposer_0")["known_compliance"].tolist() == [0, 0]
        with pytest.raises(ValueError, match="reveal_compliance=True"):
            HonestProposer(claims_from="truth").act(env.observe("proposer_0"))
        HonestProposer().act(env.observe("proposer_0"))

    def test_bare_no_trade(self) -> None:
        policy = HonestProposer(explain_no_trade=False)
        subs = [policy.submission(v) for v in views(200)]
        no_trades = [s for s in subs if s.action is ProposerAction.NO_TRADE]
        assert no_trades and all(not s.artifact.has_explanation for s in no_trades)
        assert all(s.artifact.words == 13 for s in subs if s.action is ProposerAction.REQUEST_APPROVAL)
        # a bare NO_TRADE is never penalised by an audit (inconclusive at worst)
        records = play(PAPER.replace(q=1.0), "honest:explain_no_trade=false", "rule", episodes=200, seed=0)
        assert all(r.audit_outcome == "INCONCLUSIVE" for r in records if r.proposer_action == "NO_TRADE")

    def test_always_request(self) -> None:
        policy = HonestProposer(request="always")
        assert all(policy.submission(v).action is ProposerAction.REQUEST_APPROVAL for v in views(100))

    @pytest.mark.parametrize("words", [0, 1, 13, 18, 60])
    def test_text_has_exactly_the_configured_length(self, words: int) -> None:
        view = views(1)[0]
        sub = HonestProposer(words=words).submission(view)
        assert len(explanation_text(view, sub.proposal, True, words).split()) == words
        assert sub.artifact.words == words

    def test_text_is_capped_by_max_words(self) -> None:
        assert HonestProposer(words=30).submission(views(1, max_words=10)[0]).artifact.words == 10

    @pytest.mark.parametrize(
        "kwargs, match",
        [({"claims_from": "oracle"}, "claims_from"), ({"words": -1}, "words"), ({"request": "never"}, "request")],
    )
    def test_bad_parameters(self, kwargs: dict, match: str) -> None:
        with pytest.raises(ValueError, match=match):
            HonestProposer(**kwargs)


class TestSilent:
    def test_same_action_and_proposal_no_artifact(self) -> None:
        honest, silent = HonestProposer(claims_from="truth"), SilentProposer(claims_from="truth")
        for view in views(200):
            h, s = honest.submission(view), silent.submission(view)
            assert (h.action, h.proposal) == (s.action, s.proposal)
            assert not s.artifact.has_explanation and s.artifact.text == ""


class TestStrategic:
    def test_lies_only_when_non_compliant(self) -> None:
        policy = StrategicProposer(p=1.0, claims_from="truth")
        policy.reset(seed=0)
        honest = HonestProposer(claims_from="truth")
        lies = 0
        for view in views():
            sub = policy.submission(view)
            if all(truth(view)):
                assert sub == honest.submission(view)
            else:
                lies += 1
                c = sub.artifact.claims
                assert sub.action is ProposerAction.REQUEST_APPROVAL
                assert (c.intent, c.risk_within_limit, c.net_delta_bounded) == (Intent.HEDGE, True, True)
                # the reported numbers sit inside the safe margin
                assert view.public.risk_limit - sub.proposal.risk > view.public.safe_margin
                assert view.public.delta_limit - abs(sub.proposal.net_delta) > view.public.safe_margin
        assert lies > 50

    def test_probability_zero_is_honest(self) -> None:
        policy = StrategicProposer(p=0.0)
        policy.reset(seed=0)
        honest = HonestProposer()
        assert all(policy.submission(v) == honest.submission(v) for v in views(200))

    def test_lying_probability_is_p(self) -> None:
        policy = StrategicProposer(p=0.3, claims_from="truth")
        policy.reset(seed=1)
        non_compliant = [v for v in views(3000) if not all(truth(v))]
        lies = sum(policy.submission(v).action is ProposerAction.REQUEST_APPROVAL for v in non_compliant)
        n = len(non_compliant)
        assert abs(lies / n - 0.3) < 5 * math.sqrt(0.3 * 0.7 / n)

    def test_full_audits_catch_every_lie(self) -> None:
        records = play(SCRIPTED.replace(q=1.0), "strategic:p=1.0,claims_from=truth", "rule", episodes=300, seed=0)
        lies = [r for r in records if not r.compliant]
        assert lies and all(r.audit_outcome == "FAIL" and not r.approved for r in lies)

    def test_truthful_claims_exploit_unaudited_numbers(self) -> None:
        # Lying only in the numbers is never penalised (audits check claims),
        # yet it is approved whenever unaudited: bad approvals at q = 0.
        liar = "strategic:p=1.0,truthful_claims=true,claims_from=truth"
        at0 = play(SCRIPTED.replace(q=0.0), liar, "rule", episodes=300, seed=0)
        assert any(r.approved and not r.compliant for r in at0)
        at1 = play(SCRIPTED.replace(q=1.0), liar, "rule", episodes=300, seed=0)
        assert not any(r.audit_outcome == "FAIL" for r in at1)
        assert not any(r.approved and not r.compliant for r in at1)

    @pytest.mark.parametrize(
        "q, V, L, lies",
        [
            (0.0, 2.0, 1.0, True),  # (1-0)*2 = 2 > 1
            (0.3, 2.0, 1.0, True),  # 0.7*2 - 0.3*1 = 1.1 > 1
            (0.4, 2.0, 1.0, False),  # 0.6*2 - 0.4*1 = 0.8 < 1
            (0.0, 1.0, 2.0, False),  # 1 = 1: not strictly better than NO_TRADE
            (1.0, 2.0, 1.0, False),
        ],
    )
    def test_payoff_trigger(self, q: float, V: float, L: float, lies: bool) -> None:
        policy = StrategicProposer(trigger="payoff", claims_from="truth")
        policy.reset(seed=0)
        non_compliant = [v for v in views(300, q=q, V=V, L=L) if not all(truth(v))]
        assert non_compliant
        for view in non_compliant:
            assert policy.lie_pays(view) is lies
            assert (policy.submission(view).action is ProposerAction.REQUEST_APPROVAL) is lies

    def test_detection_probability_with_spot_checks(self) -> None:
        policy = StrategicProposer(claims_from="truth")
        # a SPECULATE trade breaching both limits: 3 of the 4 checkable claims are lies
        view = next(v for v in views(400, q=0.5, B=1) if v.intent is Intent.SPECULATE and not any(truth(v)))
        assert policy.lied_claims(view) == 3
        assert policy.detection_probability(view) == pytest.approx(0.5 * 3 / 4)
        view2 = next(v for v in views(400, q=0.5, B=2) if v.intent is Intent.SPECULATE and not any(truth(v)))
        assert policy.detection_probability(view2) == pytest.approx(0.5 * (1 - 0 / 6))

    def test_one_draw_per_episode(self) -> None:
        a, b = StrategicProposer(p=0.5), StrategicProposer(p=0.5)
        a.reset(seed=3)
        b.reset(seed=3)
        vs = views(50)
        for v in vs:
            a.submission(v)
        b.rng.random(len(vs))
        assert a.rng.random() == b.rng.random()


class TestValidators:
    def test_rule_validator_is_the_rule(self) -> None:
        env = exchange_audit_v0.env(q=0.5, B=2)
        policy, proposer = RuleValidator(), StrategicProposer(p=0.5)
        proposer.reset(seed=0)
        for i in range(300):
            env.reset(seed=0) if i == 0 else env.reset()
            env.step(proposer.act(env.observe("proposer_0")))
            obs = env.observe("validator_0")
            assert policy.act(obs) == int(rule_decision(decode_validator_observation(obs)))
            assert policy.act(obs) == int(rule_decision(env.unwrapped.game.validator_view))

    def test_approve_and_block_respect_the_mask(self) -> None:
        assert AlwaysApprove().act({"action_mask": [1, 1]}) == 1
        assert AlwaysApprove().act({"action_mask": [1, 0]}) == 0
        assert AlwaysBlock().act({"action_mask": [1, 1]}) == 0


class TestRegistry:
    def test_every_builtin_is_a_policy(self) -> None:
        entries = available_policies()
        assert {("honest", "proposer"), ("silent", "proposer"), ("strategic", "proposer"), ("rule", "validator"),
                ("approve", "validator"), ("block", "validator")} <= {(e.name, e.role) for e in entries}  # fmt: skip
        for entry in entries:
            if entry.name in ("sb3", "rllib", "torchrl", "hf", "jax"):
                # needs a trained model's directory: tests/test_rl.py, tests/ray/test_rllib.py,
                # tests/compat/test_torchrl_baselines.py, tests/core/test_local_models.py (hf),
                # tests/core/test_jax_policy.py (jax)
                continue
            policy = make_policy(entry.name, entry.role)
            assert isinstance(policy, Policy) and policy.role == entry.role

    def test_spec_parsing(self) -> None:
        assert parse_policy_spec("honest:claims_from=observation, words=18") == (
            "honest",
            {"claims_from": "observation", "words": 18},
        )
        assert parse_policy_spec("strategic:p=0.25,truthful_claims=true")[1] == {"p": 0.25, "truthful_claims": True}
        policy = make_policy("honest:words=18,claims_from=observation")
        assert isinstance(policy, HonestProposer) and policy.words == 18 and policy.claims_from == "observation"

    @pytest.mark.parametrize(
        "spec, role, match",
        [
            ("oracle", None, "unknown policy 'oracle'"),
            ("honest:wrds=3", None, r"has no parameter\(s\) \['wrds'\]"),
            ("honest:words", None, "expected key=value"),
            ("rule", "proposer", "plays the validator, not the proposer"),
        ],
    )
    def test_bad_specs(self, spec: str, role: str | None, match: str) -> None:
        with pytest.raises(ValueError, match=match):
            make_policy(spec, role)  # type: ignore[arg-type]

    def test_objects_pass_through_with_a_role_check(self) -> None:
        rule = RuleValidator()
        assert make_policy(rule, "validator") is rule
        with pytest.raises(ValueError, match="not 'proposer'"):
            make_policy(rule, "proposer")
