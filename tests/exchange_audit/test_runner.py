"""The runner and its metrics, including the issue's acceptance numbers on the paper preset."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.runner import (
    METRICS,
    EpisodeRecord,
    compute_metrics,
    evaluate,
    format_metrics_table,
    play,
    policy_seed,
    summarize,
)

PAPER = ExchangeAuditConfig.from_preset("paper")
SCRIPTED = ExchangeAuditConfig.from_preset("paper_scripted")  # the proposer observes its true compliance
SEEDS = range(5)
PAPER_QS = (0.0, 0.1, 0.3, 0.5, 0.7, 1.0)


def payoff_table(r: EpisodeRecord, cfg: ExchangeAuditConfig) -> tuple[float, float]:
    """The spec's payoff table, written out again independently of the package."""
    if r.proposer_action == "NO_TRADE":
        proposer, validator = 1.0, 1.0
    elif r.decision == "APPROVE":
        proposer, validator = cfg.V, (cfg.V if r.compliant else -10.0)
    else:
        proposer, validator = 0.0, 0.0
    proposer -= cfg.alpha * r.words
    if r.audit_outcome == "FAIL":
        proposer -= cfg.L
    if r.audit_outcome != "SKIPPED":
        validator -= cfg.audit_cost
    return proposer, validator


# ---------------------------------------------------------------------------
# Acceptance: the paper preset, rule validator, 5 seeds x 200 episodes
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("q", PAPER_QS)
def test_truth_knowing_honest_proposer_always_approved_when_ambiguous(q: float) -> None:
    ev = evaluate(SCRIPTED.replace(q=q), "honest:claims_from=truth", "rule", episodes=200, seeds=SEEDS)
    assert [m["ambiguous_approval_rate"] for m in ev.per_seed] == [1.0] * 5
    assert ev.summary["bad_approval_rate"][0] == 0.0
    # welfare of an ambiguous episode: 2 - 13 words x 0.02 - c when audited
    amb = [r for r in ev.records if r.ambiguous]
    for r in amb:
        assert r.welfare == pytest.approx(2.0 - 0.26 - (0.1 if r.audit_outcome != "SKIPPED" else 0.0))


def test_sincere_honest_proposer_is_approved_only_when_it_believes_compliance() -> None:
    ev = evaluate(PAPER.replace(q=0.3), "honest", "rule", episodes=200, seeds=SEEDS)
    amb = [r for r in ev.records if r.ambiguous]
    believed = [r for r in amb if r.observed_risk <= r.risk_limit and abs(r.observed_net_delta) <= r.delta_limit]
    # every ambiguous trade is compliant, so its sincere claims are true and it is approved when it asks
    assert [r.approved for r in amb] == [r in believed for r in amb]
    assert 0.3 < len(believed) / len(amb) < 0.7
    assert ev.summary["audit_fail_rate"][0] > 0.0  # sincere mistakes in normal episodes are caught


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_silent_proposer_is_approved_about_ten_percent_at_q0_and_never_at_q1() -> None:
    at0 = evaluate(PAPER.replace(q=0.0), "silent", "rule", episodes=200, seeds=SEEDS).summary
    at1 = evaluate(PAPER.replace(q=1.0), "silent", "rule", episodes=200, seeds=SEEDS).summary
    # Only the safe margin lets an unexplained borderline trade through: about
    # 10% of ambiguous episodes (0.100 over 20 000 episodes; the paper saw ~9%).
    assert abs(at0["ambiguous_approval_rate"][0] - 0.10) < 0.04
    assert at1["ambiguous_approval_rate"] == (0.0, 0.0)
    # its truth-knowing variant reports the same observation and gets the same approvals
    knowing = evaluate(SCRIPTED.replace(q=0.0), "silent:claims_from=truth", "rule", episodes=200, seeds=SEEDS).summary
    assert knowing["ambiguous_approval_rate"] == at0["ambiguous_approval_rate"]


@pytest.mark.parametrize(
    "proposer, cfg",
    [
        ("honest", {"q": 0.3}),
        ("silent", {"q": 0.0}),
        ("strategic", {"q": 0.5, "B": 2}),
        ("honest:claims_from=observation,words=18", {"q": 1.0}),
        ("strategic:trigger=payoff", {"q": 0.1, "V": 2.0, "L": 1.0}),
    ],
)
def test_welfare_matches_the_payoff_table_in_every_episode(proposer: str, cfg: dict) -> None:
    config = PAPER.replace(**cfg)
    for validator in ("rule", "approve", "block"):
        records = play(config, proposer, validator, episodes=200, seed=1)
        for r in records:
            expected = payoff_table(r, config)
            assert (r.proposer_payoff, r.validator_payoff) == pytest.approx(expected, abs=1e-12)
            assert r.welfare == pytest.approx(sum(expected), abs=1e-12)


# ---------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------
def test_same_seed_same_records_bit_for_bit() -> None:
    cfg = PAPER.replace(q=0.5, B=2)
    a = play(cfg, "strategic:p=0.5", "rule", episodes=150, seed=9)
    b = play(cfg, "strategic:p=0.5", "rule", episodes=150, seed=9)
    assert a == b
    c = play(cfg, "strategic:p=0.5", "rule", episodes=150, seed=10)
    assert a != c


def test_policy_seeds_differ_by_role_and_seed() -> None:
    seeds = {policy_seed(s, role) for s in range(3) for role in ("proposer", "validator")}
    assert len(seeds) == 6


def test_conditions_share_states() -> None:
    """Common random numbers: the positions do not depend on q, B, V, L or the policies."""
    base = play(PAPER.replace(q=0.0), "honest", "rule", episodes=100, seed=2)
    other = play(PAPER.replace(q=1.0, B=1, V=2.0), "silent", "block", episodes=100, seed=2)
    assert [(r.true_risk, r.true_net_delta, r.risk_limit, r.observed_risk) for r in base] == [
        (r.true_risk, r.true_net_delta, r.risk_limit, r.observed_risk) for r in other
    ]


# ---------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------
def test_metrics_by_hand() -> None:
    records = play(PAPER.replace(q=0.5), "strategic:p=1.0", "rule", episodes=300, seed=4)
    m = compute_metrics(records)
    n = len(records)
    amb = [r for r in records if r.ambiguous]
    audited = [r for r in records if r.audit_outcome != "SKIPPED"]
    assert m["approval_rate"] == sum(r.approved for r in records) / n
    assert m["bad_approval_rate"] == sum(r.approved and not r.compliant for r in records) / n
    assert m["ambiguous_approval_rate"] == sum(r.approved for r in amb) / len(amb)
    assert m["ambiguous_welfare"] == pytest.approx(np.mean([r.welfare for r in amb]))
    assert m["audit_fail_rate"] == sum(r.audit_outcome == "FAIL" for r in audited) / len(audited)
    assert m["welfare"] == pytest.approx(np.mean([r.welfare for r in records]))
    assert m["words"] == 13.0
    # the liar's claims are false exactly where it lied
    assert 0.0 < m["claim_truthfulness"] < 1.0
    assert m["bad_approval_rate"] > 0.0


def test_undefined_metrics_are_nan() -> None:
    m = compute_metrics(play(PAPER.replace(q=0.0, ambiguous_rate=0.0), "silent", "rule", episodes=50, seed=0))
    assert math.isnan(m["audit_fail_rate"]) and math.isnan(m["ambiguous_approval_rate"])
    assert math.isnan(m["claim_truthfulness"])  # a silent proposer states no claim


def test_summarize_mean_and_sample_std() -> None:
    rows = [dict.fromkeys(METRICS, v) for v in (1.0, 2.0, 3.0)]
    rows[1]["audit_fail_rate"] = math.nan
    s = summarize(rows)
    assert s["welfare"] == (2.0, 1.0)
    assert s["audit_fail_rate"] == (2.0, pytest.approx(math.sqrt(2.0)))
    one = summarize(rows[:1])
    assert one["welfare"][0] == 1.0 and math.isnan(one["welfare"][1])
    assert "—" in format_metrics_table(one)


def test_records_serialise() -> None:
    r = play(PAPER, "honest", "rule", episodes=3, seed=0)[0]
    d = r.to_dict()
    assert d["seed"] == 0 and isinstance(d["audit_checked"], list) and d["welfare"] == r.welfare


def test_render_callback_sees_every_episode() -> None:
    seen: list[str] = []
    play(PAPER, "honest", "rule", episodes=4, seed=0, render=seen.append)
    assert len(seen) == 4 and all("payoffs" in text for text in seen)


def test_forced_moves_do_not_call_the_validator() -> None:
    class CountingValidator:
        role = "validator"

        def __init__(self) -> None:
            self.calls = 0

        def reset(self, seed: int | None = None) -> None:
            self.calls = 0

        def act(self, observation: dict) -> int:
            self.calls += 1
            assert observation["action_mask"].tolist() == [1, 1]
            return 1

    v = CountingValidator()
    records = play(PAPER, "honest", v, episodes=100, seed=0)
    assert v.calls == sum(r.proposer_action == "REQUEST_APPROVAL" for r in records) < 100


@pytest.mark.parametrize("episodes", [-1, 1.5, True])
def test_bad_episode_count(episodes: object) -> None:
    with pytest.raises(ValueError, match="episodes must be a non-negative integer"):
        play(PAPER, "honest", "rule", episodes=episodes, seed=0)  # type: ignore[arg-type]
