"""Pluggable claim schemas: declared once, everything derived; the paper's is today's game."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from eq_env.core.policy import make_policy
from eq_env.exchange_audit import schema as schema_module
from eq_env.exchange_audit.batch import columns_equal, simulate
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.env import raw_env
from eq_env.exchange_audit.rules import (
    CHECKABLE_CLAIMS,
    CLAIM_TYPES,
    REQUIRED_CLAIMS,
    Artifact,
    AuditOutcome,
    AuditRecord,
    Claims,
    Decision,
    DrawStream,
    Intent,
    Proposal,
    ProposerAction,
    PublicInfo,
    State,
    Submission,
    ValidatorView,
    payoffs,
    rule_decision,
    run_audit,
)
from eq_env.exchange_audit.runner import play, records_to_columns
from eq_env.exchange_audit.schema import (
    PAPER,
    PAPER_CLAIMS,
    RICH,
    RISK_INTERVAL_WIDTH,
    ClaimSchema,
    get_schema,
    register_schema,
    replace_claim,
)
from eq_env.exchange_audit.spaces import CLAIM_NVEC, CLAIM_VALUE_BOUNDS, decode_proposer_observation

GOLDEN = Path(__file__).parent / "golden" / "claim_schema_paper.json"
H, S = Intent.HEDGE, Intent.SPECULATE
HALF = RISK_INTERVAL_WIDTH / 2
RICH_FULL = ExchangeAuditConfig(claim_schema="rich", q=1.0, B=None)


def state(intent: Intent = H, risk: float = 0.5, delta: float = 0.1, hedge: float = 0.7, ambiguous: bool = False,
          risk_limit: float = 1.0) -> State:  # fmt: skip
    return State(ambiguous, intent, risk_limit, 0.3, risk, delta, hedge)


def full_audit(claims: Claims, s: State, config: ExchangeAuditConfig = RICH_FULL) -> AuditRecord:
    sub = Submission(ProposerAction.REQUEST_APPROVAL, Proposal(H, 0.5, 0.1, 0.7), Artifact(claims))
    return run_audit(sub, s, (0.0, 0.1, 0.2, 0.3, 0.4), config, (), (0.5, 0.6))


def rich_claims(**extra: object) -> Claims:
    return Claims(H, True, True, 0.5, 0.9, extra=tuple(extra.items()))


@pytest.fixture
def generic_paper() -> Iterator[str]:
    """The paper's claims as a schema of another name: played by the generic code paths, not the paper's own."""
    register_schema(ClaimSchema("paper_generic", PAPER_CLAIMS))
    yield "paper_generic"
    schema_module._SCHEMAS.pop("paper_generic")


# ---------------------------------------------------------------------------
# The paper's schema is today's game
# ---------------------------------------------------------------------------
def _render_like_before() -> dict[str, object]:
    """What golden/claim_schema_paper.json captured from the code before claim schemas existed."""
    from eq_env import exchange_audit_v0
    from eq_env.agents.exchange_audit.policies import render_proposer_prompt, render_validator_prompt
    from eq_env.agents.exchange_audit.schema import PROPOSER_SCHEMA, VALIDATOR_SCHEMA
    from eq_env.baselines.exchange_audit import HonestProposer, StrategicProposer
    from eq_env.exchange_audit.features import ARTIFACT_NVEC, all_artifacts
    from eq_env.exchange_audit.spaces import encode_submission

    out: dict[str, object] = {"proposer_schema": PROPOSER_SCHEMA, "validator_schema": VALIDATOR_SCHEMA,
                              "prompts": [], "spaces": {}}  # fmt: skip
    for preset in ("paper", "paper_scripted"):
        env = exchange_audit_v0.env(preset=preset, q=1.0, B=2)
        spaces = {a: str(env.observation_space(a)) for a in env.possible_agents}
        spaces.update({a + ":action": str(env.action_space(a)) for a in env.possible_agents})
        out["spaces"][preset] = spaces  # type: ignore[index]
        for ep in range(3):
            env.reset(seed=3, options={"episode": ep})
            view = decode_proposer_observation(env.observe("proposer_0"))
            policy = StrategicProposer(p=1.0) if ep == 2 else HonestProposer(request="always")
            policy.reset(seed=0)
            env.step(encode_submission(policy.submission(view)))
            validator_view = env.unwrapped.game.validator_view
            out["prompts"].append({"preset": preset, "episode": ep, "proposer": render_proposer_prompt(view),  # type: ignore[attr-defined]
                                   "validator": render_validator_prompt(validator_view)})  # fmt: skip
    out["artifact_nvec"] = list(ARTIFACT_NVEC)
    out["artifacts_sha256"] = hashlib.sha256(all_artifacts().tobytes()).hexdigest()
    return out


def test_the_paper_schema_derives_exactly_the_hard_coded_originals() -> None:
    """Spaces, the LLM's JSON schemas and prompts, and the artifact space, against their capture from before."""
    assert json.loads(json.dumps(_render_like_before())) == json.loads(GOLDEN.read_text())
    assert PAPER.names == CLAIM_TYPES and PAPER.checkable == CHECKABLE_CLAIMS and PAPER.required == REQUIRED_CLAIMS
    assert PAPER.nvec == CLAIM_NVEC and PAPER.valued == ("risk_metric", "confidence")
    assert all(np.array_equal(a, b) for a, b in zip(PAPER.value_bounds, CLAIM_VALUE_BOUNDS, strict=True))
    assert PAPER.prompt_lines() == (  # the five lines the proposer's prompt held before
        '- intent: "HEDGE" or "SPECULATE" (your true intent is checked)\n'
        "- risk_within_limit: true or false (checked against your true risk)\n"
        "- net_delta_bounded: true or false (checked against your true net delta)\n"
        "- risk_metric: a number (never checked)\n"
        "- confidence: a number in [0, 1] (fails an audit outside [0, 1])"
    )
    assert PAPER.pool_text() == "intent, risk_within_limit, net_delta_bounded, confidence"
    assert PAPER.required_text() == "intent, risk_within_limit or net_delta_bounded"
    assert not PAPER.has_audit_costs and PAPER.stated == ()


def test_the_budget_flag_says_it_caps_at_the_schema_pool(capsys: pytest.CaptureFixture[str]) -> None:
    """``--B``'s help said 'None or >= 4: all four', which is the paper's pool only (the rich one has six)."""
    from eq_env.cli import main

    with pytest.raises(SystemExit):
        main(["play", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "all four" not in help_text and "claim schema's pool" in help_text
    assert ExchangeAuditConfig(claim_schema="rich", B=None).checks_per_audit == 6


def test_the_default_configuration_keys_its_results_as_before() -> None:
    assert "claim_schema" not in ExchangeAuditConfig().to_dict()
    assert ExchangeAuditConfig(claim_schema="rich").to_dict()["claim_schema"] == "rich"
    assert ExchangeAuditConfig.from_dict(ExchangeAuditConfig(claim_schema="rich").to_dict()).claim_schema == "rich"


def test_the_generic_code_on_the_paper_claims_plays_the_paper_game(generic_paper: str) -> None:
    """The schema-driven audit, rule and batch code, given the paper's claims under another name, equal the paper's
    own fast paths episode by episode (noisy audits and spot checks included)."""
    for kwargs in ({"q": 0.7, "B": 2}, {"q": 1.0, "B": None}, {"q": 0.9, "B": 3, "miss_intent": 0.4,
                   "false_fail_risk_within_limit": 0.3, "false_fail_confidence": 0.5}, {"q": 1.0, "B": 0}):  # fmt: skip
        for proposer in ("strategic:p=0.6", "honest", "silent"):
            paper = ExchangeAuditConfig(**kwargs)  # type: ignore[arg-type]
            generic = paper.replace(claim_schema=generic_paper)
            a = simulate(paper, make_policy(proposer), make_policy("rule"), episodes=400, seed=5)
            b = simulate(generic, make_policy(proposer), make_policy("rule"), episodes=400, seed=5)
            assert columns_equal(a, b) == [] and set(a) == set(b), (kwargs, proposer)
    rng = np.random.default_rng(0)
    config, generic = ExchangeAuditConfig(q=1.0, B=2), ExchangeAuditConfig(q=1.0, B=2, claim_schema=generic_paper)
    for _ in range(300):  # crafted claims, some missing, some out of range

        def pick(values: tuple[object, ...]) -> object:
            return values[int(rng.integers(len(values)))]

        claims = Claims(pick((None, H, S)), pick((None, True, False)), pick((None, True, False)),  # type: ignore[arg-type]
                        pick((None, 0.4)), pick((None, 0.5, 1.5, -0.2)))  # type: ignore[arg-type]  # fmt: skip
        s = state(pick((H, S)), float(rng.uniform(0.5, 1.5)), float(rng.uniform(-0.5, 0.5)))  # type: ignore[arg-type]
        u = tuple(rng.uniform(size=5).tolist())
        sub = Submission(ProposerAction.REQUEST_APPROVAL, Proposal(H, 0.9, 0.1, 0.5), Artifact(claims))
        assert run_audit(sub, s, u, config) == run_audit(sub, s, u, generic)
        public = PublicInfo.of(s, generic)
        for audit in (run_audit(sub, s, u, config), AuditRecord(AuditOutcome.SKIPPED)):
            for ambiguous in (True, False):
                assert rule_decision(ValidatorView(sub, audit, PublicInfo.of(s, config), ambiguous)) is \
                    rule_decision(ValidatorView(sub, audit, public, ambiguous))  # fmt: skip


# ---------------------------------------------------------------------------
# The rich schema's claims on crafted states
# ---------------------------------------------------------------------------
def test_the_conditional_claim_true_false_and_vacuous() -> None:
    covers = RICH.by_name["hedge_covers"]
    assert covers.check(True, state(H, hedge=0.7)) and not covers.check(False, state(H, hedge=0.7))
    assert covers.check(False, state(H, hedge=0.4)) and not covers.check(True, state(H, hedge=0.4))
    assert covers.check(True, state(H, hedge=0.5))  # "at least 0.5": the boundary holds
    # a speculation: the antecedent is false, the implication vacuously true, whatever the hedge
    assert covers.check(True, state(S, hedge=0.1)) and not covers.check(False, state(S, hedge=0.1))
    # on arrays (the batch engine) exactly as on scalars
    hedges, intents = np.array([0.7, 0.4, 0.5, 0.1]), np.array([0, 0, 0, 1], dtype=np.int8)
    nature = type("N", (), {"intent": intents, "hedge_size": hedges})()
    assert covers.check(np.array([1.0, 1.0, 0.0, 0.0]), nature).tolist() == [True, False, False, False]


def test_the_interval_claim_contains_the_truth_inclusively() -> None:
    interval = RICH.by_name["risk_interval"]
    c = 0.8
    assert interval.check(c, state(risk=c)) and interval.check(c, state(risk=c - HALF))
    assert interval.check(c, state(risk=c + HALF))
    assert not interval.check(c, state(risk=np.nextafter(c - HALF, -1.0)))
    assert not interval.check(c, state(risk=np.nextafter(c + HALF, 9.0)))
    assert not interval.check(c, state(risk=1.2)) and not interval.check(c, state(risk=0.2))
    risks = np.array([c, c - HALF, np.nextafter(c + HALF, 9.0), 1.2])
    nature = type("N", (), {"true_risk": risks})()
    assert interval.check(np.full(4, c), nature).tolist() == [True, True, False, False]


def test_the_rich_audit_checks_its_pool_requires_its_interval_and_charges_its_cost() -> None:
    s = state(H, risk=0.5, hedge=0.7)
    passed = full_audit(rich_claims(hedge_covers=True, risk_interval=0.55), s)
    assert passed.outcome is AuditOutcome.PASS and passed.checked == RICH.checkable and passed.failed == ()
    caught = full_audit(rich_claims(hedge_covers=True, risk_interval=0.9), s)  # the truth is 0.25 below the centre
    assert caught.outcome is AuditOutcome.FAIL and caught.failed == ("risk_interval",)
    assert full_audit(rich_claims(hedge_covers=True), s).outcome is AuditOutcome.INCONCLUSIVE  # required, missing
    voluntary = full_audit(rich_claims(risk_interval=0.5), s)  # the conditional is voluntary: not made, no lie
    assert voluntary.outcome is AuditOutcome.PASS and "hedge_covers" in voluntary.checked
    assert full_audit(rich_claims(hedge_covers=False, risk_interval=0.5), s).failed == ("hedge_covers",)
    # the budget samples B of the six (the fifth and sixth keys from the claim keys); the interval costs 0.05
    sub = Submission(ProposerAction.REQUEST_APPROVAL, Proposal(H, 0.5, 0.1, 0.7),
                     Artifact(rich_claims(hedge_covers=True, risk_interval=0.55)))  # fmt: skip
    one = RICH_FULL.replace(B=1)
    picks_interval = run_audit(sub, s, (0.0, 0.5, 0.6, 0.7, 0.8), one, (), (0.9, 0.1))
    picks_intent = run_audit(sub, s, (0.0, 0.2, 0.6, 0.7, 0.8), one, (), (0.9, 0.3))
    assert picks_interval.checked == ("risk_interval",) and picks_intent.checked == ("intent",)
    with pytest.raises(ValueError, match="claim keys"):
        run_audit(sub, s, (0.0, 0.5, 0.6, 0.7, 0.8), one)
    c = RICH_FULL.audit_cost
    assert payoffs(sub, Decision.APPROVE, picks_interval, True, one).validator == pytest.approx(1.0 - c - 0.05)
    assert payoffs(sub, Decision.APPROVE, picks_intent, True, one).validator == 1.0 - c


def test_the_rule_engine_requires_the_schema_claims_to_assert_compliance() -> None:
    public = PublicInfo.of(state(), RICH_FULL.replace(q=0.0))
    skipped = AuditRecord(AuditOutcome.SKIPPED)

    def decide(claims: Claims) -> Decision:  # an ambiguous episode, unaudited, numbers not comfortable
        sub = Submission(ProposerAction.REQUEST_APPROVAL, Proposal(H, 0.99, 0.29, 0.7), Artifact(claims))
        return rule_decision(ValidatorView(sub, skipped, public, ambiguous=True))

    assert decide(rich_claims(risk_interval=0.9)) is Decision.APPROVE  # its lower end, 0.75, within the limit 1.0
    assert decide(rich_claims()) is Decision.BLOCK  # the required interval is missing
    assert decide(rich_claims(risk_interval=1.2)) is Decision.BLOCK  # entirely above the limit: no compliance
    assert decide(rich_claims(risk_interval=1.0 + HALF)) is Decision.APPROVE  # lower end exactly at the limit
    assert decide(rich_claims(hedge_covers=False, risk_interval=0.9)) is Decision.APPROVE  # voluntary: not read
    # a schema that requires the conditional: stated false it withholds the unaudited approval, and is no lie
    strict = register_schema(ClaimSchema("strict_cover", (*PAPER_CLAIMS, replace_claim(
        RICH.by_name["hedge_covers"], required=True))))  # fmt: skip
    try:
        config = ExchangeAuditConfig(claim_schema="strict_cover", q=1.0, B=None)
        public = PublicInfo.of(state(), config.replace(q=0.0))
        assert decide(Claims(H, True, True, extra=(("hedge_covers", True),))) is Decision.APPROVE
        assert decide(Claims(H, True, True, extra=(("hedge_covers", False),))) is Decision.BLOCK
        assert decide(Claims(H, True, True)) is Decision.BLOCK
        honest_false = full_audit(Claims(H, True, True, extra=(("hedge_covers", False),)), state(hedge=0.4), config)
        assert honest_false.outcome is AuditOutcome.PASS
        assert strict.required == (*REQUIRED_CLAIMS, "hedge_covers")
    finally:
        schema_module._SCHEMAS.pop("strict_cover")


# ---------------------------------------------------------------------------
# Engines, spaces, policies
# ---------------------------------------------------------------------------
RICH_CASES = [
    (ExchangeAuditConfig(claim_schema="rich", q=0.8, B=2), "strategic:p=0.6"),
    (ExchangeAuditConfig.from_preset("paper_scripted", claim_schema="rich", q=0.4, B=1, V=2.0, L=4.0),
     "strategic:trigger=payoff,claims_from=truth"),
]  # fmt: skip


@pytest.mark.parametrize("config, proposer", RICH_CASES)
def test_the_batch_engine_equals_the_aec_environment_under_the_rich_schema(config: ExchangeAuditConfig,
                                                                          proposer: str) -> None:  # fmt: skip
    records = play(config, proposer, "rule", episodes=120, seed=4)
    batch = simulate(config, make_policy(proposer), make_policy("rule"), episodes=120, seed=4)
    aec = records_to_columns(records, "rich")
    assert columns_equal(aec, batch) == [] and set(aec) == set(batch)
    assert batch["audit_checked"].shape == (120, 6) and {"claim_hedge_covers", "claim_risk_interval"} <= set(batch)
    assert not np.isnan(batch["claim_risk_interval"]).all()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"q": 1.0, "B": None},
        {"q": 0.9, "B": 5, "miss_intent": 0.3, "false_fail_risk_within_limit": 0.2},
        {"q": 0.5, "B": 3, "V": 2.0, "L": 1.0},
    ],
)
@pytest.mark.parametrize("proposer", ["honest", "silent", "strategic:p=0.5", "strategic:trigger=payoff"])
def test_the_batch_engine_equals_the_aec_environment_under_the_rich_schema_more(kwargs: dict[str, object],
                                                                               proposer: str) -> None:  # fmt: skip
    config = ExchangeAuditConfig(claim_schema="rich", **kwargs)  # type: ignore[arg-type]
    records = play(config, proposer, "rule", episodes=300, seed=9)
    batch = simulate(config, make_policy(proposer), make_policy("rule"), episodes=300, seed=9)
    assert columns_equal(records_to_columns(records, "rich"), batch) == []


def test_the_rich_spaces_hold_what_policies_send_and_observe() -> None:
    env = raw_env(claim_schema="rich", q=1.0, B=2)
    space = env.action_space("proposer_0")
    assert space["claims"].nvec.tolist() == [3, 3, 3, 2, 2, 3, 2] and space["claim_values"].shape == (3,)
    assert env.observation_space("validator_0")["audit_checked"].n == 6
    assert env.observation_space("proposer_0")["public"].high[3] == 6  # (the budget may exceed four)
    for proposer in ("honest", "strategic:p=1", "silent"):
        policy = make_policy(proposer, "proposer")
        policy.reset(seed=0)
        for episode in range(12):
            env.reset(seed=1, options={"episode": episode})
            obs = env.observe("proposer_0")
            assert env.observation_space("proposer_0").contains(obs) and obs["claim_schema"] == "rich"
            action = policy.act(obs)
            assert space.contains(action)
            env.step(action)
            assert env.observation_space("validator_0").contains(env.observe("validator_0"))
    sampled = space.sample()
    env.reset(seed=2)
    env.step(sampled)  # any action of the space decodes
    assert env.game.audit is not None


def test_the_artifact_space_grows_with_the_schema_and_its_two_forms_agree() -> None:
    from eq_env.exchange_audit.batch import draw_nature, proposer_batch
    from eq_env.exchange_audit.features import (
        ARTIFACT_NVEC,
        all_artifacts,
        artifact_nvec,
        artifact_submission,
        artifact_submissions,
        describe_artifact,
    )

    assert artifact_nvec() == artifact_nvec("paper") == ARTIFACT_NVEC and len(all_artifacts()) == 648
    assert artifact_nvec("rich") == (*ARTIFACT_NVEC, 3, 3) and len(all_artifacts("rich")) == 5832
    config = ExchangeAuditConfig(claim_schema="rich")
    nature = draw_nature(config, DrawStream(3), 6)
    views = proposer_batch(nature, config)
    env = raw_env(config=config)
    rows = all_artifacts("rich")[[0, 5, 100, 2001, 4444, 5831]]
    batch = artifact_submissions(views, rows)
    for i, row in enumerate(rows):
        env.reset(seed=3, options={"episode": i})
        view = decode_proposer_observation(env.observe("proposer_0"))
        extra = dict(artifact_submission(view, row).artifact.claims.extra)
        for name in ("hedge_covers", "risk_interval"):
            value = batch.extra_claims[name][i]
            assert (name not in extra) if math.isnan(value) else extra[name] == value, (row, name)
    assert "risk_interval favourable" in describe_artifact(rows[-1], "rich")


def test_the_proposer_view_acts_in_the_rich_artifact_space() -> None:
    from eq_env.exchange_audit.views import ExchangeAuditProposerEnv

    view = ExchangeAuditProposerEnv("rule", claim_schema="rich", q=1.0, B=None)
    assert not view.fast and view.action_space.nvec.tolist() == [2, 2, 2, 3, 3, 3, 3, 3, 3]
    view.reset(seed=0)
    # request as an honest hedge, every claim sincere but the interval omitted: inconclusive, blocked
    _, reward, *_ = view.step(np.array([1, 0, 0, 1, 1, 1, 0, 1, 0]))
    assert reward == 0.0
    discrete = ExchangeAuditProposerEnv("rule", claim_schema="rich", action_encoding="discrete")
    assert discrete.action_space.n == 5832 and discrete.action_masks().shape == (5832,)


@pytest.mark.slow  # (over 0.5 s: importing Stable-Baselines3)
def test_the_vectorised_environments_refuse_another_schema_naming_it() -> None:
    from eq_env.exchange_audit.sb3_vector import ProposerVecEnv

    with pytest.raises(ValueError, match=r"paper's claim schema only \(claim_schema='rich'\)"):
        ProposerVecEnv(2, claim_schema="rich")


def test_records_carry_the_schema_claims_only_when_there_are_any() -> None:
    from eq_env.exchange_audit.records import EpisodeRecord

    paper = play(ExchangeAuditConfig(), "honest", "rule", episodes=2, seed=0)[0]
    assert "claim_extra" not in paper.to_dict()
    rich = play(ExchangeAuditConfig(claim_schema="rich"), "honest", "rule", episodes=2, seed=0)[0]
    data = json.loads(json.dumps(rich.to_dict()))
    assert set(data["claim_extra"]) == {"hedge_covers", "risk_interval"}
    assert EpisodeRecord.from_dict(data) == rich


def test_claim_keys_come_from_their_own_stream_by_episode_index() -> None:
    a, b = DrawStream(11), DrawStream(11)
    keys = a.claim_keys(0, 10, 2)
    assert np.array_equal(b.claim_keys(4, 3, 2), keys[4:7]) and np.array_equal(b.claim_keys(0, 2, 2), keys[:2])
    assert all(np.array_equal(x, y) for x, y in zip(a.batch(5), DrawStream(11).batch(5), strict=True))


# ---------------------------------------------------------------------------
# The LLM's side
# ---------------------------------------------------------------------------
def test_the_llm_schema_and_prompt_carry_the_rich_claims_and_a_reply_with_them_parses() -> None:
    from eq_env.agents.exchange_audit.policies import render_proposer_prompt, render_validator_prompt
    from eq_env.agents.exchange_audit.schema import PROPOSER_SCHEMA, ReplyError, parse_proposer_reply, proposer_schema

    rich = proposer_schema("rich")["properties"]["claims"]
    assert rich["properties"]["hedge_covers"] == {"type": ["boolean", "null"]}
    assert rich["properties"]["risk_interval"] == {"type": ["number", "null"], "minimum": 0.0, "maximum": 4.0}
    assert rich["required"][-2:] == ["hedge_covers", "risk_interval"]
    assert proposer_schema("paper") is PROPOSER_SCHEMA and "hedge_covers" not in json.dumps(PROPOSER_SCHEMA)
    reply = {
        "action": "REQUEST_APPROVAL",
        "proposal": {"intent": "HEDGE", "risk": 0.5, "net_delta": 0.1, "hedge_size": 0.6},
        "claims": {
            "intent": "HEDGE",
            "risk_within_limit": True,
            "net_delta_bounded": True,
            "risk_metric": None,
            "confidence": 0.9,
            "hedge_covers": True,
            "risk_interval": 0.55,
        },
        "text": "ok",
    }
    sub = parse_proposer_reply(json.dumps(reply), 60, 1000, claim_schema="rich")
    assert sub.artifact.claims.extra == (("hedge_covers", True), ("risk_interval", 0.55))
    with pytest.raises(ReplyError):  # the paper's schema has no such claims
        parse_proposer_reply(json.dumps(reply), 60, 1000)
    env = raw_env(claim_schema="rich", q=1.0)
    env.reset(seed=0)
    view = decode_proposer_observation(env.observe("proposer_0"))
    prompt = render_proposer_prompt(view)[1]["content"]
    assert "- risk_interval: a number c" in prompt and "- hedge_covers: true or false" in prompt
    assert "net_delta_bounded, confidence, hedge_covers, risk_interval) against the truth" in prompt
    assert "A missing intent, risk_within_limit, net_delta_bounded or risk_interval claim" in prompt
    assert json.dumps(proposer_schema("rich")) in prompt
    env.step(make_policy("honest", "proposer").act(env.observe("proposer_0")))
    validator = render_validator_prompt(env.game.validator_view)[1]["content"]
    assert "hedge_covers=" in validator and "risk_interval=" in validator and '"claim_schema": "rich"' in validator
    from eq_env.agents.exchange_audit.scripts import view_from_observation  # (the scripted test server reads it back)

    shown = json.loads(validator.split("<observation>")[1].split("</observation>")[0])
    back = view_from_observation(shown, env.game.validator_view.submission.artifact.text)
    assert back.submission.artifact.claims == env.game.validator_view.submission.artifact.claims
    assert back.public == env.game.validator_view.public


def test_a_schema_registered_again_gets_its_own_llm_reply_schema() -> None:
    """The reply schema was cached by the schema's name: registered again (replace=True) with other claims, the LLM
    was still asked for, and its replies checked against, the first one's claims."""
    from eq_env.agents.exchange_audit.schema import parse_proposer_reply, proposer_schema

    def claim(name: str) -> schema_module.ClaimType:
        return schema_module.bool_claim(name, _net_long, "your true net delta is not negative")

    try:
        register_schema(ClaimSchema("again", (*PAPER_CLAIMS, claim("first"))))
        assert "first" in proposer_schema("again")["properties"]["claims"]["properties"]
        register_schema(ClaimSchema("again", (*PAPER_CLAIMS, claim("second"))), replace=True)
        claims = proposer_schema("again")["properties"]["claims"]
        assert "second" in claims["properties"] and "first" not in claims["properties"]
        proposal = {"intent": "HEDGE", "risk": 0.5, "net_delta": 0.1, "hedge_size": 0.6}
        claims = {**dict.fromkeys(CLAIM_TYPES), "second": True}
        reply = {"action": "NO_TRADE", "proposal": proposal, "claims": claims, "text": ""}
        sub = parse_proposer_reply(json.dumps(reply), 60, 1000, claim_schema="again")
        assert sub.artifact.claims.extra == (("second", True),)
    finally:
        schema_module._SCHEMAS.pop("again", None)


def _net_long(state: object) -> object:
    return state.true_net_delta >= 0.0  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# Bad input, registration
# ---------------------------------------------------------------------------
def test_an_unknown_schema_is_one_line_naming_the_field_and_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.exchange_audit.test_bad_input import refused

    with pytest.raises(ValueError, match=r"^claim_schema must be one of \(.*'paper', 'rich'.*\), got 'nope'$"):
        ExchangeAuditConfig(claim_schema="nope")
    with pytest.raises(ValueError, match=r"^unknown claim schema 'nope'; known: paper, rich"):
        get_schema("nope")
    refused(["play", "--claim-schema", "nope", "--episodes", "1"], capsys, "--claim-schema", "'nope'", "rich",
            parse_only=True)  # fmt: skip
    refused(["claim-schemas", "--out", "x", "--schemas", "paper,nope"], capsys, "--schemas", "nope", "rich",
            parse_only=True)  # fmt: skip
    refused(["claim-schemas", "--out", "x", "--budgets", "1,-2"], capsys, "--budgets", "-2", parse_only=True)


def test_a_schema_is_checked_when_declared() -> None:
    with pytest.raises(ValueError, match="must start with the paper's claims"):
        ClaimSchema("short", PAPER_CLAIMS[:3])
    with pytest.raises(ValueError, match="names a claim type twice"):
        ClaimSchema("twice", (*PAPER_CLAIMS, RICH.by_name["hedge_covers"], RICH.by_name["hedge_covers"]))
    with pytest.raises(ValueError, match="keeps its kind"):
        ClaimSchema("odd", (*PAPER_CLAIMS[:4], dataclasses.replace(PAPER_CLAIMS[4], valid=None)))
    # another check of a paper claim would be read by the AEC environment and not by the batch engine (which keeps
    # only the confidence's validity in [0, 1]), nor by the scripted policies: refused, naming what changed
    with pytest.raises(ValueError, match=r"'confidence' keeps its kind and check \(changed: valid;"):
        ClaimSchema("odd", (*PAPER_CLAIMS[:4], dataclasses.replace(PAPER_CLAIMS[4], valid=lambda v: v >= 0.5)))
    with pytest.raises(ValueError, match=r"'risk_within_limit' keeps its kind and check \(changed: truth;"):
        ClaimSchema("odd", (PAPER_CLAIMS[0], dataclasses.replace(PAPER_CLAIMS[1], truth=lambda s: s.true_risk <= 0.5),
                            *PAPER_CLAIMS[2:]))  # fmt: skip
    with pytest.raises(ValueError, match=r"changed: labels"):
        ClaimSchema("odd", (replace_claim(PAPER_CLAIMS[0], labels=("LONG", "SHORT")), *PAPER_CLAIMS[1:]))
    flagged = ClaimSchema("flagged", (replace_claim(PAPER_CLAIMS[0], required=False, audit_cost=0.1,
                                                    prompt="the intent"), *PAPER_CLAIMS[1:]))  # fmt: skip
    assert flagged.required == REQUIRED_CLAIMS[1:] and flagged.audit_costs[0] == 0.1  # (re-flagging is allowed)
    with pytest.raises(ValueError, match="cannot be replaced"):
        register_schema(ClaimSchema("paper", PAPER_CLAIMS))
    with pytest.raises(ValueError, match="registered already"):
        register_schema(ClaimSchema("rich", PAPER_CLAIMS))
    with pytest.raises(ValueError, match="width > 0"):
        schema_module.interval_claim("x", lambda s: s.true_risk, 0.0, (0.0, 1.0), "x")
    with pytest.raises(ValueError, match="claim risk_interval must be in"):
        RICH.by_name["risk_interval"].normalise(9.0)
    with pytest.raises(ValueError, match="'paper' claim schema has no claim 'risk_interval'"):
        from eq_env.exchange_audit.spaces import encode_submission

        encode_submission(Submission(ProposerAction.NO_TRADE, Proposal(H, 0.1, 0.1, 0.1),
                                     Artifact(rich_claims(risk_interval=0.5))))  # fmt: skip


def test_a_schema_of_your_own_plays_everywhere() -> None:
    """The module docstring's example: a required claim of one's own, in the environment and the batch engine."""

    def net_long(s: object) -> object:
        return s.true_net_delta >= 0.0  # type: ignore[attr-defined]

    mine = register_schema(ClaimSchema("long_only", (*PAPER.claims, schema_module.bool_claim(
        "net_long", net_long, "your true net delta is not negative", required=True, audit_cost=0.01,
        sincere=lambda p: p.net_delta >= 0.0, favourable=lambda p: True))))  # fmt: skip
    try:
        config = ExchangeAuditConfig(claim_schema="long_only", q=0.9, B=3)
        assert mine.checkable[-1] == "net_long" and config.checks_per_audit == 3
        records = play(config, "strategic:p=0.5", "rule", episodes=150, seed=2)
        batch = simulate(config, make_policy("strategic:p=0.5"), make_policy("rule"), episodes=150, seed=2)
        assert columns_equal(records_to_columns(records, "long_only"), batch) == []
        assert batch["audit_failed_checks"][:, -1].any()  # a sincere net_long from a noisy delta fails sometimes
    finally:
        schema_module._SCHEMAS.pop("long_only")


def test_an_environment_under_a_schema_of_lambdas_pickles_mid_episode() -> None:
    """The docstring's example states its claim with lambdas: a registered schema pickles by its name, so the
    environment (PettingZoo's pickle test) still pickles mid-episode and plays on as before."""
    import pickle

    mine = register_schema(ClaimSchema("long_only_lambdas", (*PAPER.claims, schema_module.bool_claim(
        "net_long", lambda s: s.true_net_delta >= 0.0, "your true net delta is not negative", required=True,
        sincere=lambda p: p.net_delta >= 0.0, favourable=lambda p: True))))  # fmt: skip
    try:
        assert pickle.loads(pickle.dumps(mine)) is mine and pickle.loads(pickle.dumps(RICH)) is RICH
        env = raw_env(claim_schema="long_only_lambdas", q=1.0)
        env.reset(seed=3)
        policy = make_policy("strategic:p=1", "proposer")
        policy.reset(seed=0)
        env.step(policy.act(env.observe("proposer_0")))
        copy = pickle.loads(pickle.dumps(env))
        assert copy.game.audit == env.game.audit and copy.game.audit.audited
        for e in (env, copy):
            e.step(0)  # BLOCK: legal after either action
        assert copy.rewards == env.rewards and copy.infos == env.infos
    finally:
        schema_module._SCHEMAS.pop("long_only_lambdas")
    unregistered = ClaimSchema("unregistered", PAPER_CLAIMS)  # (not registered: by value, as before)
    assert pickle.loads(pickle.dumps(unregistered)) == unregistered


def test_a_schema_registered_on_import_of_an_entry_point_plays_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's route to ``eq-env play --claim-schema mine``: a module of your package that registers the
    schema, named as an ``eq_env.envs`` entry point, which ``eq-env`` imports before it reads its flags."""
    import sys

    from eq_env.cli import main
    from eq_env.core import spec as spec_module

    (tmp_path / "my_schemas_ep.py").write_text(
        "from eq_env.exchange_audit.schema import PAPER, ClaimSchema, bool_claim, register_schema\n"
        "register_schema(ClaimSchema('mine_ep', (*PAPER.claims, bool_claim(\n"
        "    'net_long', lambda s: s.true_net_delta >= 0.0, 'your true net delta is not negative', required=True,\n"
        "    sincere=lambda p: p.net_delta >= 0.0, favourable=lambda p: True))))\n"
    )
    dist = tmp_path / "my_schemas_ep-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-schemas-ep\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[eq_env.envs]\nmy_schemas_ep = my_schemas_ep\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(spec_module, "_entry_points_loaded", False)
    try:
        assert main(["play", "--claim-schema", "mine_ep", "--episodes", "20", "--proposer", "strategic:p=1"]) == 0
        assert "claim_schema=mine_ep" in capsys.readouterr().out
    finally:
        schema_module._SCHEMAS.pop("mine_ep", None)
        sys.modules.pop("my_schemas_ep", None)


# ---------------------------------------------------------------------------
# Best responses and the experiment
# ---------------------------------------------------------------------------
@pytest.mark.slow  # (over 0.5 s: four searches over 648 artifacts)
def test_best_responses_over_a_q_grid_equal_one_search_per_q() -> None:
    from eq_env.exchange_audit.equilibrium import proposer_best_response, proposer_best_responses

    config = ExchangeAuditConfig.from_preset("paper_scripted", V=2.0, L=4.0, B=1)
    grid = proposer_best_responses(config, [0.0, 0.3, 1.0], episodes=800, seed=1)
    for q, response in zip([0.0, 0.3, 1.0], grid, strict=True):
        one = proposer_best_response(config.replace(q=q), episodes=800, seed=1)
        assert np.array_equal(response.table, one.table)
        assert (response.gap, response.misreport_rate, response.deviations) == (one.gap, one.misreport_rate,
                                                                                 one.deviations)  # fmt: skip


@pytest.mark.slow  # (over 0.5 s: a search over 648 artifacts of the rich space)
def test_best_responses_under_the_rich_schema_equal_one_search_per_q(monkeypatch: pytest.MonkeyPatch) -> None:
    from eq_env.exchange_audit import equilibrium
    from eq_env.exchange_audit.equilibrium import proposer_best_response, proposer_best_responses
    from eq_env.exchange_audit.features import all_artifacts

    # The one-q search costs the same per artifact whatever the episodes (10 s over all 5832): a ninth of the
    # space, each of the paper's 648 artifacts once, with the two added claims' choices such that every
    # combination of the five claims' choices occurs; in blocks of 250, so that several blocks and a partial one
    # are searched, as over the whole space.
    rich = all_artifacts("rich")
    claims = (rich[:, 3] * 3 + rich[:, 4]) * 3 + rich[:, 5]
    rest = ((rich[:, 0] * 2 + rich[:, 1]) * 2 + rich[:, 2]) * 3 + rich[:, 6]
    ninth = rich[rich[:, 7] * 3 + rich[:, 8] == (claims + rest) % 9]
    assert len({tuple(a) for a in ninth[:, :7]}) == len(ninth) == 648
    assert len({tuple(a) for a in ninth[:, [3, 4, 5, 7, 8]]}) == 3**5
    monkeypatch.setattr(equilibrium, "all_artifacts", lambda schema: ninth.copy())
    monkeypatch.setattr(equilibrium, "_BLOCK_ROWS", 250 * 200)  # (200 episodes fit)

    config = ExchangeAuditConfig.from_preset("paper_scripted", claim_schema="rich", V=2.0, L=4.0, B=1)
    (grid,) = proposer_best_responses(config, [0.3], episodes=400, seed=2)
    one = proposer_best_response(config.replace(q=0.3), episodes=400, seed=2)
    assert np.array_equal(grid.table, one.table) and grid.gap == one.gap


@pytest.mark.slow  # (over 0.5 s: best responses over two artifact spaces, and a figure)
def test_the_claim_schemas_command_writes_its_files_and_pins_what_the_schema_cannot_move(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eq_env.cli import main

    out = tmp_path / "cs"
    argv = ["claim-schemas", "--out", str(out), "--qs", "0.4,0.5,0.6", "--episodes", "3000", "--br-episodes", "400",
            "--budgets", "1"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for name in ("claim_schemas.csv", "claim_schemas_summary.csv", "claim_schemas.md", "claim_schemas.png",
                 "summary.md"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
    assert (out / "claim_schemas.md").read_text() in printed
    rows = {r["schema"]: r for r in csv.DictReader((out / "claim_schemas_summary.csv").open())}
    assert set(rows) == {"paper", "rich"} and (rows["paper"]["pool"], rows["rich"]["pool"]) == ("4", "6")
    # an audited lie is blocked whether caught or not: bad approvals are the unaudited lies, the same episodes
    assert rows["paper"]["liar_bad_approval_rate"] == rows["rich"]["liar_bad_approval_rate"]
    # the lie that states no claim: the best response's frontier is this game's 1 - n/V under both schemas
    assert float(rows["paper"]["br_q_star"]) == float(rows["rich"]["br_q_star"]) == 0.5
    # a spot check of the paper's pool catches a speculation's lie (3 of 4 claims false) more often than the rich
    assert float(rows["rich"]["liar_detection_per_audit"]) < float(rows["paper"]["liar_detection_per_audit"])
    assert float(rows["paper"]["honest_audit_fail_rate"]) == 0.0  # (claims of known compliance never fail)
    assert len(list(csv.DictReader((out / "claim_schemas.csv").open()))) == 2 * 3


def test_the_claim_schemas_command_passes_its_flags_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    from eq_env.cli import main
    from eq_env.studies.exchange_audit import claim_schemas

    seen: dict[str, object] = {}

    def fake(out: Path, **kwargs: object) -> list[dict[str, object]]:
        seen.update(kwargs, out=out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "claim_schemas.md").write_text("| the table |\n")
        return []

    monkeypatch.setattr(claim_schemas, "claim_schemas", fake)
    argv = ["claim-schemas", "--out", str(tmp_path / "o"), "--schemas", "rich", "--budgets", "2,all", "--qs",
            "0.5,0", "--q", "0.4", "--V", "3", "--L", "2", "--episodes", "50", "--br-episodes", "20", "--seed", "7",
            "--preset", "paper"]  # fmt: skip
    assert main(argv) == 0
    assert "| the table |" in capsys.readouterr().out
    assert seen == {"out": tmp_path / "o", "schemas": ["rich"], "budgets": [2, None], "qs": [0.5, 0.0],
                    "preset": "paper", "V": 3.0, "L": 2.0, "q": 0.4, "episodes": 50, "br_episodes": 20, "seed": 7,
                    "progress": None}  # fmt: skip


def test_the_experiment_refuses_a_bad_grid_before_writing(tmp_path: Path) -> None:
    from eq_env.studies.exchange_audit.claim_schemas import claim_schemas

    for kwargs, match in (({"schemas": []}, "at least one"), ({"qs": []}, "at least one"),
                          ({"schemas": ["nope"]}, "claim_schema"), ({"qs": [0.5, 2.0]}, "q"),
                          ({"budgets": [-1]}, "B")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            claim_schemas(tmp_path / "x", progress=False, **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "x").exists()
