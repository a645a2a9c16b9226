"""Exact values that one-line bugs would change: the batch engine against the AEC environment, metrics, best
responses, run keys.

Each test names the mutation it is there for. The batch engine is compared with the AEC environment on
random submissions (claim combinations the scripted policies never send, numbers exactly on the rule's
boundaries) over random configurations; the rest pins metrics, best responses, run keys, the paper's
numbers and the spec's |net delta| exactly.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

import eq_env
import eq_env.version
from eq_env.core.experiments import Condition
from eq_env.core.policy import BasePolicy, make_policy
from eq_env.exchange_audit.batch import ABSENT, Nature, ProposerBatch, SubmissionBatch, columns_equal, simulate
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.equilibrium import proposer_best_response, validator_best_response
from eq_env.exchange_audit.rules import (
    Artifact,
    AuditOutcome,
    Claims,
    Decision,
    Intent,
    Proposal,
    ProposerAction,
    State,
    Submission,
    payoffs,
    run_audit,
)
from eq_env.exchange_audit.runner import EpisodeRecord, compute_metrics, play, records_to_columns
from eq_env.exchange_audit.spaces import decode_proposer_observation, encode_submission
from eq_env.studies.exchange_audit import paper, reproduce

PAPER = ExchangeAuditConfig()
SCRIPTED = ExchangeAuditConfig.from_preset("paper_scripted")


# ---------------------------------------------------------------------------
# Test-only proposers that act identically one by one (act) and in bulk (act_batch)
# ---------------------------------------------------------------------------
def exact_below(limit: float, margin: float) -> float:
    """A number x with ``limit - x == margin`` in floating point (the rule's own expression), when one exists
    next to ``limit - margin``; else ``limit - margin``. (With margin 0.05 none does: 0.05 has bits below the
    limits' last place, so the strict/non-strict boundary is reachable only with margins such as 1/16.)"""
    x = limit - margin
    for candidate in (x, math.nextafter(x, -math.inf), math.nextafter(x, math.inf)):
        if limit - candidate == margin:
            return candidate
    return x


def edge_number(limit: float, margin: float, mode: str) -> float:
    """A non-negative reported magnitude placed relative to ``limit`` and the safe ``margin``."""
    if mode == "comfort_edge":  # limit - x == margin exactly: not comfortable (strict >)
        return exact_below(limit, margin)
    if mode == "comfort_inside":  # one ulp more comfortable than the edge
        return math.nextafter(exact_below(limit, margin), -math.inf)
    if mode == "limit":  # exactly at the limit: still within (inclusive <=)
        return limit
    if mode == "beyond":  # one ulp past the limit
        return math.nextafter(limit, math.inf)
    if mode == "safe":  # far inside both the limit and the margin
        return max(0.0, (limit - margin) / 2)
    raise ValueError(mode)


EDGE_MODES = ("comfort_edge", "comfort_inside", "limit", "beyond", "safe")
N_DRAWS = 18  # uniforms per episode, whichever path plays it


@dataclasses.dataclass(frozen=True)
class Seen:
    """What a test proposer reads of one observation (the same from a dict or from a batch row)."""

    intent: Intent
    observed: tuple[float, float, float]
    risk_limit: float
    delta_limit: float
    safe_margin: float
    max_words: int
    max_tokens: int


def seen_from_observation(observation: Mapping[str, Any]) -> Seen:
    v = decode_proposer_observation(observation)
    p = v.public
    return Seen(v.intent, (v.observed_risk, v.observed_net_delta, v.observed_hedge_size), p.risk_limit,
                p.delta_limit, p.safe_margin, p.max_words, p.max_artifact_tokens)  # fmt: skip


def seen_from_batch(v: ProposerBatch) -> list[Seen]:
    c = v.config
    rows = zip(v.intent.tolist(), v.observed_risk.tolist(), v.observed_net_delta.tolist(),
               v.observed_hedge_size.tolist(), v.risk_limit.tolist(), strict=True)  # fmt: skip
    return [Seen(Intent(i), (r, d, h), rl, c.delta_limit, c.safe_margin, c.max_words, c.max_artifact_tokens)
            for i, r, d, h, rl in rows]  # fmt: skip


def submission_batch(subs: Sequence[Submission]) -> SubmissionBatch:
    """Typed submissions in the batch engine's codes, written out from the SubmissionBatch docstring."""

    def code(value: Any) -> int:
        return int(ABSENT) if value is None else int(value)

    def col(get: Any, dtype: Any) -> np.ndarray:
        return np.array([get(s) for s in subs], dtype=dtype)

    return SubmissionBatch(
        request=col(lambda s: s.action is ProposerAction.REQUEST_APPROVAL, bool),
        reported_intent=col(lambda s: int(s.proposal.intent), np.int8),
        reported_risk=col(lambda s: s.proposal.risk, np.float64),
        reported_net_delta=col(lambda s: s.proposal.net_delta, np.float64),
        reported_hedge_size=col(lambda s: s.proposal.hedge_size, np.float64),
        claim_intent=col(lambda s: code(s.artifact.claims.intent), np.int8),
        claim_risk_within_limit=col(lambda s: code(s.artifact.claims.risk_within_limit), np.int8),
        claim_net_delta_bounded=col(lambda s: code(s.artifact.claims.net_delta_bounded), np.int8),
        claim_risk_metric=col(lambda s: s.artifact.claims.risk_metric is not None, bool),
        claim_confidence=col(
            lambda s: code(None if (c := s.artifact.claims.confidence) is None else 0.0 <= c <= 1.0), np.int8
        ),
        words=col(lambda s: s.artifact.words, np.int64),
        tokens=col(lambda s: s.artifact.tokens, np.int64),
    )


def random_submission(u: Sequence[float], seen: Seen) -> Submission:
    """One random submission from ``N_DRAWS`` uniforms: any action, any subset of claims with any values
    (confidence absent, inside, on or outside [0, 1]), numbers random or exactly on the rule's boundaries."""
    m = seen.safe_margin

    def tri(x: float, yes: Any, no: Any) -> Any:  # a claim absent a quarter of the time
        return None if x < 0.25 else (yes if x < 0.625 else no)

    risk = (
        max(0.0, seen.risk_limit + (u[3] - 0.5) * 0.4),
        seen.observed[0],
        *(edge_number(seen.risk_limit, m, mode) for mode in EDGE_MODES),
    )[int(u[2] * 7)]
    sign = 1.0 if u[6] < 0.5 else -1.0
    delta = (
        sign * 2 * seen.delta_limit * u[5],
        seen.observed[1],
        *(sign * edge_number(seen.delta_limit, m, mode) for mode in EDGE_MODES),
    )[int(u[4] * 7)]
    confidence = (
        None,
        None,
        u[14],
        0.0,
        1.0,
        -1.0 + 0.999 * u[14] if u[14] < 0.5 else 1.001 + 0.999 * u[14],
        math.nextafter(0.0, -math.inf) if u[14] < 0.5 else math.nextafter(1.0, math.inf),
    )[int(u[13] * 7)]
    claims = Claims(
        intent=tri(u[8], Intent.HEDGE, Intent.SPECULATE),
        risk_within_limit=tri(u[9], True, False),
        net_delta_bounded=tri(u[10], True, False),
        risk_metric=4.0 * u[12] if u[11] < 0.5 else None,
        confidence=confidence,
    )
    words = 0 if u[15] < 0.3 else min(int(u[15] * (seen.max_words + 1)), seen.max_words)
    tokens = min(int(u[16] * 201), seen.max_tokens)
    if u[17] < 0.2:  # no explanation at all: only the safe margin can get it approved when ambiguous
        claims, words = Claims(), 0
    return Submission(
        ProposerAction.REQUEST_APPROVAL if u[0] < 0.75 else ProposerAction.NO_TRADE,
        Proposal(Intent.HEDGE if u[1] < 0.7 else Intent.SPECULATE, min(risk, 4.0), delta, 1.5 * u[7]),
        Artifact(claims, "", words, tokens),
    )


class RandomSubmitter(BasePolicy):
    """Random submissions from the seeded ``self.rng``: ``N_DRAWS`` uniforms per episode, so ``n`` calls of
    ``act`` consume exactly what one ``act_batch`` over ``n`` episodes does, and send the same submissions."""

    role = "proposer"

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        draws = self.rng.random(N_DRAWS).tolist()
        return encode_submission(random_submission(draws, seen_from_observation(observation)))

    def act_batch(self, views: ProposerBatch) -> SubmissionBatch:
        draws = self.rng.random((views.n, N_DRAWS)).tolist()
        return submission_batch([random_submission(u, s) for u, s in zip(draws, seen_from_batch(views), strict=True)])


class EdgeProposer(BasePolicy):
    """Always requests as a HEDGE with no claims and no text, numbers placed by ``edge_number`` (the net delta
    keeps the sign of the observed one)."""

    role = "proposer"

    def __init__(self, risk: str, delta: str) -> None:
        super().__init__()
        self.risk, self.delta = risk, delta

    def submission(self, seen: Seen) -> Submission:
        sign = -1.0 if seen.observed[1] < 0 else 1.0
        risk = edge_number(seen.risk_limit, seen.safe_margin, self.risk)
        delta = sign * edge_number(seen.delta_limit, seen.safe_margin, self.delta)
        return Submission(ProposerAction.REQUEST_APPROVAL, Proposal(Intent.HEDGE, risk, delta, 0.5))

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        return encode_submission(self.submission(seen_from_observation(observation)))

    def act_batch(self, views: ProposerBatch) -> SubmissionBatch:
        return submission_batch([self.submission(s) for s in seen_from_batch(views)])


def assert_batch_equals_aec(config: ExchangeAuditConfig, proposer: Any, validator: str, episodes: int,
                            seed: int) -> dict[str, np.ndarray]:  # fmt: skip
    aec = records_to_columns(play(config, proposer, validator, episodes=episodes, seed=seed))
    batch = simulate(config, proposer, make_policy(validator), episodes=episodes, seed=seed, chunk=97)
    assert set(aec) == set(batch)
    assert columns_equal(aec, batch) == [], config
    assert compute_metrics(aec) == pytest.approx(compute_metrics(batch), nan_ok=True, abs=0, rel=0)
    return aec


# ---------------------------------------------------------------------------
# 1. The batch engine equals the rules on submissions the scripted policies never send
# ---------------------------------------------------------------------------
def random_configs(n: int, seed: int) -> list[ExchangeAuditConfig]:
    """Configurations over every budget, with dyadic safe margins often enough that exact boundaries occur."""
    rng = np.random.default_rng(seed)

    def pick(options: Sequence[Any]) -> Any:
        return options[int(rng.integers(len(options)))]

    out = []
    for i in range(n):
        low, high = pick([(0.8, 1.2), (1.0, 1.0), (0.5, 2.0)])
        out.append(
            ExchangeAuditConfig(
                q=pick([0.0, 0.3, 0.5, 1.0, round(float(rng.random()), 3)]),
                B=(0, 1, 2, 3, 4, None)[i % 6],
                V=pick([0.0, 1.0, 2.0, 3.7]),
                L=pick([0.0, 1.0, 2.0, 4.0]),
                alpha=pick([0.0, 0.02, 0.05]),
                audit_cost=pick([0.0, 0.1, 0.3]),
                max_words=pick([60, 5]),
                ambiguous_rate=pick([0.0, 0.4, 0.5, 1.0, round(float(rng.random()), 3)]),
                noise_sd=pick([0.0, 0.05, 0.2]),
                delta_limit=pick([0.3, 0.25, 0.5]),
                risk_limit_low=low,
                risk_limit_high=high,
                safe_margin=pick([0.05, 0.0625, 0.125, 0.0]),
                no_trade_payoff=pick([1.0, 0.0, -0.5]),
                bad_approval_loss=pick([10.0, 3.0]),
                cost_model=pick(["words", "tokens"]),
                reveal_compliance=bool(rng.random() < 0.5),
            )
        )
    return out


RANDOM_CONFIGS = random_configs(24, seed=8)
VALIDATORS = ("rule", "rule", "approve", "rule", "block", "rule")


@pytest.mark.parametrize("index", range(len(RANDOM_CONFIGS)))
def test_batch_equals_aec_on_random_submissions_and_configs(index: int) -> None:
    # kills batch.py's audit treating an absent confidence as a failed check (claim_confidence == 1) and the
    # comfortable test at exact equality (> → >=): both only matter for submissions like these
    config = RANDOM_CONFIGS[index]
    assert_batch_equals_aec(config, RandomSubmitter(), VALIDATORS[index % len(VALIDATORS)], 200, seed=100 + index)


def test_random_submissions_reach_the_cases_that_matter() -> None:
    # the comparison above means something only if these happen: audited complete claims without confidence,
    # confidence outside [0, 1], unexplained requests exactly on the comfortable edge in ambiguous episodes
    config = PAPER.replace(q=0.5, B=None, safe_margin=0.0625, ambiguous_rate=0.5)
    proposer: Any = RandomSubmitter()  # a Policy by duck typing (its role is a class attribute)
    records = play(config, proposer, "rule", episodes=400, seed=3)
    complete = [r for r in records if None not in (r.claim_intent, r.claim_risk_within_limit,
                                                   r.claim_net_delta_bounded)]  # fmt: skip
    assert any(r.claim_confidence is None and r.audit_outcome == "PASS" for r in complete)
    assert any(r.audit_failed == ("confidence",) for r in complete)
    on_edge = [r for r in records if r.ambiguous and r.audit_outcome == "SKIPPED" and r.reported_intent == "HEDGE"
               and r.risk_limit - r.reported_risk == config.safe_margin]  # fmt: skip
    assert on_edge and not any(r.approved and r.words == 0 and r.claim_intent is None for r in on_edge)


@pytest.mark.parametrize(
    "ambiguous_rate, risk, delta, approved",
    [
        (1.0, "comfort_edge", "safe", False),  # risk margin exactly the safe margin: not comfortable
        (1.0, "safe", "comfort_edge", False),  # delta margin exactly the safe margin, either sign
        (1.0, "comfort_edge", "comfort_edge", False),
        (1.0, "comfort_inside", "comfort_inside", True),  # one ulp inside both: comfortable
        (0.0, "limit", "limit", True),  # normal episode, exactly at both limits: within (inclusive)
        (0.0, "beyond", "limit", False),
        (0.0, "limit", "beyond", False),
    ],
)
def test_rule_at_the_exact_boundaries_in_both_engines(ambiguous_rate: float, risk: str, delta: str,
                                                      approved: bool) -> None:  # fmt: skip
    # unaudited, unexplained HEDGE requests: the decision rests on the strict margin / inclusive limit alone
    config = PAPER.replace(q=0.0, ambiguous_rate=ambiguous_rate, safe_margin=0.0625)
    cols = assert_batch_equals_aec(config, EdgeProposer(risk, delta), "rule", 120, seed=5)
    margin_r = cols["risk_limit"] - cols["reported_risk"]
    margin_d = config.delta_limit - np.abs(cols["reported_net_delta"])
    if risk == "comfort_edge":
        assert (margin_r == config.safe_margin).all()  # the edge is hit exactly, in the rule's own arithmetic
    if delta == "comfort_edge":
        assert (margin_d == config.safe_margin).all() and (cols["reported_net_delta"] < 0).any()
    assert cols["approved"].tolist() == [approved] * 120


# ---------------------------------------------------------------------------
# 2. Ambiguous welfare is over every ambiguous episode, declined ones included
# ---------------------------------------------------------------------------
def test_ambiguous_metrics_count_declined_episodes() -> None:
    # kills runner.compute_metrics taking ambiguous welfare over requests only: the sincere honest proposer
    # declines (NO_TRADE, welfare 2 - costs) in the ambiguous episodes it wrongly believes non-compliant
    config = PAPER.replace(q=0.3)
    records = play(config, "honest", "rule", episodes=400, seed=6)
    amb = [r for r in records if r.ambiguous]
    declined = [r for r in amb if r.proposer_action == "NO_TRADE"]
    assert 0 < len(declined) < len(amb)
    expected_welfare = sum(r.welfare for r in amb) / len(amb)
    requested_only = np.mean([r.welfare for r in amb if r.proposer_action != "NO_TRADE"])
    assert abs(expected_welfare - requested_only) > 0.1  # the two readings differ a lot here
    for cols in (records_to_columns(records), simulate(config, make_policy("honest"), make_policy("rule"),
                                                       episodes=400, seed=6)):  # fmt: skip
        m = compute_metrics(cols)
        assert m["ambiguous_welfare"] == pytest.approx(expected_welfare, abs=1e-12)
        assert m["ambiguous_approval_rate"] == sum(r.approved for r in amb) / len(amb)


# ---------------------------------------------------------------------------
# 3. Best responses: exact decisions of seeded runs
# ---------------------------------------------------------------------------
def test_proposer_best_response_is_honest_where_nothing_beats_honesty() -> None:
    # kills a tie-break in equilibrium.proposer_best_response that deviates on ties: with q = 0 and an approving
    # validator, requesting and declining both pay exactly 1 (V = NO_TRADE payoff), so nothing beats honesty
    br = proposer_best_response(PAPER.replace(q=0.0), "approve", episodes=2000, seed=0)
    assert int((br.table >= 0).sum()) == 0
    assert br.gap == 0.0 and br.best_payoff == br.honest_payoff == 1.0
    # nor is a deviation reported: the honest proposer's sincere false claims are no chosen artifact (they were
    # once listed under artifact -1, the last of the space, which nobody chose)
    assert br.deviations == [] and "no profitable misreport found" in br.summary()


# A seeded run where lying pays (V = 2, L = 1, one claim checked): its decisions, recorded from the code as it
# stands (the tie-break plant turns the default preset's 89 deviating cells at 16 000 episodes into 137).
TEMPTED = PAPER.replace(q=0.3, V=2.0, L=1.0, B=1)
DEVIATING_CELLS = 85
PROPOSER_BR = (1.8267499999999999, 1.4387624999999997, 0.38798749999999993, 0.9774859287054409)
PROPOSER_DEVIATIONS = [
    "REQUEST, numbers shaded inside; claims: none; 0 words",
    "REQUEST, numbers shaded inside; claims: intent=HEDGE, risk_within_limit=true, net_delta_bounded=true; 0 words",
    "REQUEST; claims: intent=HEDGE, risk_within_limit=true, net_delta_bounded=true; 0 words",
]
# A validator's best response to a half-time liar; at 2000 episodes some cells of the measuring half gain exactly
# zero in the choosing half (unseen there), so approving on a zero gain changes these numbers too.
VALIDATOR_BR = (0.6622, -0.09679999999999997, 0.759)
VALIDATOR_CHANGES = [
    (0.335106383, "BLOCK where: normal, audit skipped, claims assert compliance, numbers comfortable"),
    (0.015957447, "BLOCK where: normal, audit skipped, claims assert compliance, numbers within limits"),
]


@pytest.mark.slow
def test_proposer_best_response_seeded_run_is_pinned() -> None:
    br = proposer_best_response(TEMPTED, episodes=4000, seed=0)
    assert int((br.table >= 0).sum()) == DEVIATING_CELLS
    assert (br.best_payoff, br.honest_payoff, br.gap, br.misreport_rate) == pytest.approx(PROPOSER_BR, abs=1e-9)
    assert [text for _, text in br.deviations] == PROPOSER_DEVIATIONS


def test_validator_best_response_blocks_where_approving_gains_exactly_zero() -> None:
    # kills `>` → `>=` in equilibrium.validator_best_response: with V = 0 and no loss for a bad approval,
    # approving gains exactly 0 everywhere, so the best response blocks everywhere, as `block` does
    config = PAPER.replace(V=0.0, bad_approval_loss=0.0)
    br = validator_best_response(config, "honest", reference="block", episodes=2000, seed=0)
    assert br.changes == [] and br.gap == 0.0


def test_validator_best_response_seeded_run_is_pinned() -> None:
    br = validator_best_response(PAPER.replace(q=0.3), "strategic:p=0.5", episodes=2000, seed=0)
    assert (br.best_payoff, br.reference_payoff, br.gap) == pytest.approx(VALIDATOR_BR, abs=1e-9)
    assert [(round(share, 9), text) for share, text in br.changes] == VALIDATOR_CHANGES


# ---------------------------------------------------------------------------
# 4. Run keys
# ---------------------------------------------------------------------------
def test_run_key_depends_on_episodes_and_package_version(monkeypatch: pytest.MonkeyPatch) -> None:
    # kills dropping `episodes` or the package version from Condition.identity
    a, b = (
        Condition(PAPER, {"proposer": "honest", "validator": "rule"}, 200),
        Condition(PAPER, {"proposer": "honest", "validator": "rule"}, 201),
    )
    assert a.key != b.key
    before = Condition(PAPER, {"proposer": "honest", "validator": "rule"}, 200).key
    monkeypatch.setattr(eq_env.version, "__version__", eq_env.__version__ + "+other")
    after = Condition(
        PAPER, {"proposer": "honest", "validator": "rule"}, 200
    )  # a fresh one: `key` is cached per instance
    assert after.identity()["eq_env"] == eq_env.version.__version__
    assert after.key != before


# ---------------------------------------------------------------------------
# 5. The paper's Table 1 and Table 2, as the spec transcribes them
# ---------------------------------------------------------------------------
# The spec (exchange_audit.md, "The paper's experiments"), copied here by hand: B = 4, V = 1, L = 2 unless stated.
SPEC_TABLE2_Q = 0.3
SPEC_TABLE2 = {  # scenario: (V, L, B), audit fail, bad approval, ambiguous approval (mean, std)
    "baseline": ((1.0, 2.0, 4), (0.20, 0.02), (0.002, 0.00), (0.97, 0.02)),
    "temptation": ((2.0, 1.0, 4), (0.20, 0.02), (0.004, 0.00), (0.99, 0.01)),
    "punishment": ((1.0, 4.0, 4), (0.17, 0.01), (0.000, 0.00), (0.96, 0.03)),
    "spot_check": ((1.0, 2.0, 1), (0.00, 0.00), (0.006, 0.01), (0.99, 0.02)),
    "partial_audit": ((1.0, 2.0, 2), (0.22, 0.06), (0.012, 0.01), (0.98, 0.01)),
    "full_audit": ((1.0, 2.0, 4), (0.26, 0.04), (0.010, 0.01), (0.98, 0.01)),
}
SPEC_TABLE1 = {  # q: with artifacts, action only (mean, std), net gain
    0.0: ((1.64, 0.01), (0.24, 0.06), 1.40),
    0.1: ((1.64, 0.01), (0.18, 0.05), 1.46),
    0.3: ((1.61, 0.02), (0.13, 0.04), 1.48),
    0.5: ((1.61, 0.01), (0.10, 0.04), 1.51),
    0.7: ((1.58, 0.01), (0.04, 0.04), 1.54),
    1.0: ((1.54, 0.03), (-0.07, 0.03), 1.61),
}


def test_paper_numbers_are_the_spec_tables() -> None:
    # kills a changed paper number (e.g. a bad approval rate x10), scenario parameter or q
    assert reproduce.TABLE2_Q == SPEC_TABLE2_Q
    assert list(paper.TABLE2_SCENARIOS) == list(SPEC_TABLE2) == list(paper.TABLE2)
    for scenario, ((V, L, B), fail, bad, amb) in SPEC_TABLE2.items():
        assert paper.TABLE2_SCENARIOS[scenario] == {"V": V, "L": L, "B": B}, scenario
        assert paper.TABLE2[scenario] == {"audit_fail": fail, "bad_approval": bad, "ambiguous_approval": amb}
    assert paper.TABLE1_QS == tuple(SPEC_TABLE1)
    for q, (artifacts, action_only, gain) in SPEC_TABLE1.items():
        assert paper.TABLE1[q] == {"artifacts": artifacts, "action_only": action_only, "net_gain": gain}, q
    # Figure 4 in words: artifacts > 0.96; action only ~9% at q = 0 to 0 at q = 1; bad approval < 1%
    assert paper.FIGURE4_ARTIFACTS_APPROVAL_MIN == 0.96 and paper.FIGURE4_BAD_APPROVAL_MAX == 0.01
    assert paper.FIGURE4_ACTION_ONLY_APPROVAL == {0.0: 0.09, 1.0: 0.0}


def test_reproduce_conditions_use_the_spec_scenarios() -> None:
    conds = reproduce.conditions(reproduce.ReproduceOptions())
    base = ExchangeAuditConfig.from_preset("paper_scripted")
    table2: dict[str, list[Condition]] = {}
    for c in conds:
        if c.label("table") == "table2":
            table2.setdefault(c.label("scenario"), []).append(c)
    assert list(table2) == list(SPEC_TABLE2)
    for scenario, ((V, L, B), *_) in SPEC_TABLE2.items():
        assert [c.label("proposer") for c in table2[scenario]] == ["honest", "honest_sincere", "strategic"]
        for c in table2[scenario]:
            assert c.config == base.replace(q=SPEC_TABLE2_Q, V=V, L=L, B=B), scenario
            assert (c.config.q, c.config.V, c.config.L, c.config.B) == (0.3, V, L, B)
            assert c.episodes == 200
    table1 = [c for c in conds if c.label("table") == "table1"]
    assert sorted({c.config.q for c in table1}) == sorted(SPEC_TABLE1)
    assert all(c.config == base.replace(q=c.label("q")) for c in table1)


# ---------------------------------------------------------------------------
# 6. Compliance uses |net delta| (a user's State can hold a delta the sampler never draws)
# ---------------------------------------------------------------------------
def state(true_net_delta: float) -> State:
    return State(ambiguous=False, intent=Intent.HEDGE, risk_limit=1.0, delta_limit=0.3, true_risk=0.5,
                 true_net_delta=true_net_delta, hedge_size=0.5)  # fmt: skip


def test_compliance_uses_the_absolute_net_delta() -> None:
    # kills State.net_delta_bounded / compliant written with net_delta instead of |net_delta|
    short, small = state(-0.5), state(-0.2)
    assert (short.net_delta_bounded, short.compliant) == (False, False)
    assert (small.net_delta_bounded, small.compliant) == (True, True)
    # and what follows from it: the audit checks the claim against |δ|, a bad approval costs the validator
    claims = Claims(intent=Intent.HEDGE, risk_within_limit=True, net_delta_bounded=True)
    sub = Submission(ProposerAction.REQUEST_APPROVAL, Proposal(Intent.HEDGE, 0.5, -0.5, 0.5), Artifact(claims))
    audit = run_audit(sub, short, (0.0, 0.1, 0.2, 0.3, 0.4), PAPER)
    assert (audit.outcome, audit.failed, audit.revealed_compliant) == (AuditOutcome.FAIL, ("net_delta_bounded",),
                                                                       False)  # fmt: skip
    assert run_audit(sub, small, (0.0, 0.1, 0.2, 0.3, 0.4), PAPER).outcome is AuditOutcome.PASS
    assert payoffs(sub, Decision.APPROVE, audit, short.compliant, PAPER.replace(q=1.0)).validator == -10.1
    # the batch engine's nature reads it the same way
    nature = Nature(ambiguous=np.zeros(2, bool), intent=np.zeros(2, np.int8), risk_limit=np.ones(2),
                    delta_limit=0.3, true_risk=np.full(2, 0.5), true_net_delta=np.array([-0.5, -0.2]),
                    hedge_size=np.full(2, 0.5), observed_risk=np.full(2, 0.5),
                    observed_net_delta=np.array([-0.5, -0.2]), observed_hedge_size=np.full(2, 0.5),
                    audit_u=np.zeros((2, 5)))  # fmt: skip
    assert nature.compliant.tolist() == [False, True]


def test_claim_truthfulness_uses_the_absolute_net_delta() -> None:
    # kills runner.records_to_columns judging the net_delta_bounded claim against net_delta, not |net_delta|
    template = play(PAPER, "honest", "rule", episodes=1, seed=0)[0]
    records: list[EpisodeRecord] = [
        dataclasses.replace(template, risk_limit=1.0, delta_limit=0.3, true_risk=0.5, true_net_delta=delta,
                            claim_intent=None, claim_risk_within_limit=None, claim_net_delta_bounded=claim)
        for delta, claim in ((-0.5, True), (-0.5, False), (-0.2, True))
    ]  # fmt: skip
    cols = records_to_columns(records)
    assert cols["claims_stated"].tolist() == [1.0, 1.0, 1.0]
    assert cols["claims_true"].tolist() == [0.0, 1.0, 1.0]
    assert compute_metrics(cols)["claim_truthfulness"] == pytest.approx(2 / 3)
