"""The exchange–audit rows of ``eq-env baselines`` that the quick preset leaves out (both roles learning, the
repeated game), run at a tiny budget: what they train, what they score and what they compare with."""

from __future__ import annotations

from pathlib import Path

import pytest

from eq_env.studies.baselines import EVAL_SEEDS, Budget, _by_name
from eq_env.studies.exchange_audit.baselines import _play_repeated

TINY = Budget(timesteps=256, eval_episodes=20)


@pytest.mark.slow  # (six short trainings and their evaluations: about half a minute)
def test_both_roles_learning_scores_the_final_pair_against_the_papers_mechanism(tmp_path: Path) -> None:
    b = _by_name()["exchange-audit/both/V2-L1"]
    result = b.train(tmp_path / "both", 0, TINY, EVAL_SEEDS)
    trained = {p.name for p in (tmp_path / "both").iterdir() if (p / "model.zip").is_file()}
    # (a validator facing a proposer that never asks has nothing to learn: that training is skipped)
    assert (
        {"round0_proposer"} <= trained <= {f"round{r}_{role}" for r in range(3) for role in ("proposer", "validator")}
    )
    assert len(result["curve"]) == 6 and result["steps_run"] == len(trained) * TINY.timesteps
    for mode in ("greedy", "sampled"):
        m = result[mode]
        assert m["welfare"] == pytest.approx(m["proposer_payoff"] + m["validator_payoff"])
    reference = b.reference(TINY, EVAL_SEEDS)
    assert 0 < reference["approval_rate"] < 1 and reference["bad_approval_rate"] < 0.1  # honest + rule
    assert reference["welfare"] > 2  # V = 2: an approved honest trade pays


@pytest.mark.slow  # (a short training and three evaluations of the repeated game: about half a minute)
def test_the_repeated_row_trains_with_the_history_and_compares_with_the_dp_best_response(tmp_path: Path) -> None:
    b = _by_name()["exchange-audit/repeated/decay-0.1"]
    result = b.train(tmp_path / "rep", 0, TINY, EVAL_SEEDS)
    assert (tmp_path / "rep" / "model.zip").is_file() and result["steps_run"] >= TINY.timesteps
    assert result["curve"] and all(0 <= result[m]["mean_q"] <= 1 for m in ("greedy", "sampled"))
    # sampled play is the model's distribution, drawn the same way for the same seeds
    from eq_env.baselines.sb3 import sb3_class
    from eq_env.exchange_audit.repeated.views import ViewPolicy
    from eq_env.studies.exchange_audit.baselines import _repeated_config

    model = sb3_class("ppo").load(tmp_path / "rep" / "model.zip", device="cpu")
    sampled = ViewPolicy(model, _repeated_config(), deterministic=False)
    assert repr(sampled).endswith(", sampled)") and repr(ViewPolicy(model, _repeated_config())).endswith(", greedy)")
    assert _play_repeated(sampled, TINY, EVAL_SEEDS) == result["sampled"]
    reference = b.reference(TINY, EVAL_SEEDS)
    # the programme's best response lies where a decayed q makes it pay, and so earns more than honesty on
    # the same episodes
    honest = _play_repeated("honest", TINY, EVAL_SEEDS)
    assert reference["noncompliant_misreport_rate"] > honest["noncompliant_misreport_rate"]
    assert reference["proposer_payoff"] > honest["proposer_payoff"]
