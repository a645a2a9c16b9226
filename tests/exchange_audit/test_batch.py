"""The batch engine gives the AEC environment's outcomes, episode by episode."""

from __future__ import annotations

import numpy as np
import pytest

from eq_env.baselines import HonestProposer, RuleValidator
from eq_env.core.policy import make_policy
from eq_env.exchange_audit.batch import columns_equal, is_batchable, simulate
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.runner import compute_metrics, play, records_to_columns

PAPER = ExchangeAuditConfig()
SCRIPTED = ExchangeAuditConfig.from_preset("paper_scripted")

CASES = [
    (PAPER.replace(q=0.3), "honest", "rule"),
    (PAPER.replace(q=0.0), "silent", "rule"),
    (PAPER.replace(q=1.0, B=0), "silent", "approve"),
    (PAPER.replace(q=0.5, B=2), "strategic:p=0.5", "rule"),
    (PAPER.replace(q=0.4, B=3), "honest:explain_no_trade=false", "approve"),
    (PAPER.replace(q=0.0, noise_sd=1.0, max_words=5), "honest:words=18,request=always", "block"),
    (SCRIPTED.replace(q=0.7, B=1), "strategic:trigger=payoff,claims_from=truth", "rule"),
    (SCRIPTED.replace(q=0.2, V=2.0, L=1.0), "strategic:trigger=payoff,claims_from=truth,truthful_claims=true", "rule"),
    (SCRIPTED.replace(q=0.3, ambiguous_rate=1.0, safe_margin=0.0), "silent:claims_from=truth", "rule"),
    (SCRIPTED.replace(q=0.6, delta_limit=0.5, risk_limit_low=1.0, risk_limit_high=1.0),
     "honest:claims_from=truth", "rule"),
    (PAPER.replace(q=0.25, B=None, no_trade_payoff=0.0, bad_approval_loss=3.0), "strategic:p=1.0", "approve"),
    (PAPER.replace(q=0.5, max_text_chars=20), "strategic:p=0.5", "rule"),  # texts too long to send: words paid
    (PAPER.replace(q=0.3, cost_model="tokens", alpha=0.015), "strategic:p=0.5,words=25", "rule"),
]  # fmt: skip


@pytest.mark.parametrize("config, proposer, validator", CASES)
def test_batch_equals_aec_episode_by_episode(config: ExchangeAuditConfig, proposer: str, validator: str) -> None:
    aec = records_to_columns(play(config, proposer, validator, episodes=600, seed=11))
    # a chunk size that does not divide the run checks the seams between chunks too
    batch = simulate(config, make_policy(proposer), make_policy(validator), episodes=600, seed=11, chunk=257)
    assert set(aec) == set(batch)
    assert columns_equal(aec, batch) == []
    assert compute_metrics(aec) == pytest.approx(compute_metrics(batch), nan_ok=True, abs=0, rel=0)


def test_columns_equal_detects_a_difference() -> None:
    a = simulate(PAPER, make_policy("honest"), make_policy("rule"), episodes=50, seed=0)
    b = dict(a, welfare=a["welfare"].copy())
    b["welfare"][7] = np.nextafter(b["welfare"][7], 10.0)
    assert columns_equal(a, b) == ["welfare"]


def test_chunking_does_not_change_results() -> None:
    whole = simulate(PAPER, make_policy("strategic"), make_policy("rule"), episodes=3000, seed=2)
    pieces = simulate(PAPER, make_policy("strategic"), make_policy("rule"), episodes=3000, seed=2, chunk=1000)
    assert columns_equal(whole, pieces) == []


def test_batchable_means_defined_by_the_class_itself() -> None:
    class CautiousHonest(HonestProposer):
        def submission(self, view):  # type: ignore[no-untyped-def]
            return super().submission(view)

    assert is_batchable(HonestProposer()) and is_batchable(RuleValidator())
    assert not is_batchable(CautiousHonest())  # a subclass that changes behaviour falls back to the AEC env
    with pytest.raises(TypeError, match="cannot act in bulk"):
        simulate(PAPER, CautiousHonest(), RuleValidator(), episodes=10, seed=0)


def test_roles_are_checked() -> None:
    with pytest.raises(ValueError, match="does not play the proposer"):
        simulate(PAPER, RuleValidator(), RuleValidator(), episodes=10, seed=0)


def test_truth_claims_need_revealed_compliance_in_bulk_too() -> None:
    with pytest.raises(ValueError, match="reveal_compliance=True"):
        simulate(PAPER, make_policy("honest:claims_from=truth"), RuleValidator(), episodes=10, seed=0)


def test_zero_episodes() -> None:
    out = simulate(PAPER, make_policy("honest"), make_policy("rule"), episodes=0, seed=0)
    assert all(len(v) == 0 for v in out.values())
