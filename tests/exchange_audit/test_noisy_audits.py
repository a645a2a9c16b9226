"""Noisy audits: false fails at epsilon_1, missed lies at epsilon_0, per claim type; delays."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from eq_env.core.policy import make_policy
from eq_env.exchange_audit.batch import columns_equal, simulate
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.env import raw_env
from eq_env.exchange_audit.rules import DrawStream
from eq_env.exchange_audit.runner import play, records_to_columns

PAPER = ExchangeAuditConfig()
SCRIPTED = ExchangeAuditConfig.from_preset("paper_scripted")
PER_CLAIM = {  # a different rate per claim type, so a mix-up of the order shows
    "false_fail_intent": 0.05,
    "false_fail_risk_within_limit": 0.1,
    "false_fail_net_delta_bounded": 0.2,
    "false_fail_confidence": 0.3,
    "miss_intent": 0.4,
    "miss_risk_within_limit": 0.25,
    "miss_net_delta_bounded": 0.15,
    "miss_confidence": 0.35,
}

CASES = [
    (PAPER.with_audit_noise(0.3, 0.1), "strategic:p=0.5", "rule"),
    (PAPER.replace(q=0.6, B=2, **PER_CLAIM), "strategic:p=1.0", "rule"),
    (SCRIPTED.replace(q=0.7, B=1, **PER_CLAIM), "strategic:trigger=payoff,claims_from=truth", "rule"),
    (SCRIPTED.replace(q=0.5).with_audit_noise(0.2, 0.2), "honest:claims_from=truth", "rule"),
    (PAPER.replace(q=0.8, audit_delayed=True), "strategic:p=0.5", "rule"),
    (PAPER.replace(q=0.8, audit_delayed=True, **PER_CLAIM), "honest", "approve"),
]


def test_the_defaults_are_the_paper_game_and_key_their_results_as_before() -> None:
    assert not PAPER.noisy_audits and not PAPER.audit_delayed
    assert PAPER.false_fail_rates == PAPER.miss_rates == (0.0,) * 4
    assert not any(k.startswith(("miss_", "false_fail_", "audit_delayed")) for k in PAPER.to_dict())
    noisy = PAPER.replace(**PER_CLAIM, audit_delayed=True)
    assert ExchangeAuditConfig.from_dict(noisy.to_dict()) == noisy
    assert noisy.miss_rates == (0.4, 0.25, 0.15, 0.35) and noisy.false_fail_rates == (0.05, 0.1, 0.2, 0.3)
    with pytest.raises(ValueError, match="miss_intent"):
        PAPER.replace(miss_intent=1.5)


@pytest.mark.parametrize(
    "config, proposer, validator",
    [
        (PAPER, "strategic:p=0.5", "rule"),
        (PAPER.replace(q=0.6, B=2), "strategic:p=1.0", "rule"),
        (SCRIPTED.replace(q=0.7, B=1), "strategic:trigger=payoff,claims_from=truth", "rule"),
    ],
)
def test_zero_rates_on_the_noisy_path_are_todays_game_episode_by_episode(
    config: ExchangeAuditConfig, proposer: str, validator: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forcing the noisy code (and the reading of the check uniforms) with every rate at 0 changes nothing:
    the AEC environment and the batch engine both give today's episodes."""
    aec = records_to_columns(play(config, proposer, validator, episodes=300, seed=5))
    batch = simulate(config, make_policy(proposer), make_policy(validator), episodes=300, seed=5, chunk=97)
    monkeypatch.setattr(ExchangeAuditConfig, "noisy_audits", property(lambda self: True))
    assert config.noisy_audits
    noisy_aec = records_to_columns(play(config, proposer, validator, episodes=300, seed=5))
    noisy_batch = simulate(config, make_policy(proposer), make_policy(validator), episodes=300, seed=5, chunk=97)
    assert columns_equal(aec, noisy_aec) == [] and set(aec) == set(noisy_aec)
    assert columns_equal(batch, noisy_batch) == []
    assert columns_equal(aec, batch) == []


@pytest.mark.parametrize("config, proposer, validator", CASES)
def test_batch_equals_aec_with_noisy_or_delayed_audits(
    config: ExchangeAuditConfig, proposer: str, validator: str
) -> None:
    aec = records_to_columns(play(config, proposer, validator, episodes=400, seed=11))
    batch = simulate(config, make_policy(proposer), make_policy(validator), episodes=400, seed=11, chunk=157)
    assert set(aec) == set(batch)
    assert columns_equal(aec, batch) == []


def _claim_truth(cols: dict[str, np.ndarray], config: ExchangeAuditConfig) -> np.ndarray:
    """(n, 3): whether each of intent, risk_within_limit, net_delta_bounded claims is true."""
    return np.stack(
        [
            cols["claim_intent"] == cols["intent"],
            cols["claim_risk_within_limit"] == (cols["true_risk"] <= cols["risk_limit"]),
            cols["claim_net_delta_bounded"] == (np.abs(cols["true_net_delta"]) <= config.delta_limit),
        ],
        axis=1,
    )


@pytest.mark.parametrize("proposer", ["strategic:p=1.0", "honest"])
def test_the_rates_are_the_configured_ones_per_claim_type(proposer: str) -> None:
    config = PAPER.replace(q=1.0, B=None, **PER_CLAIM)
    cols = simulate(config, make_policy(proposer), make_policy("rule"), episodes=200_000, seed=3)
    checked, failed = cols["audit_checked"][:, :3], cols["audit_failed_checks"][:, :3]
    true = _claim_truth(cols, config)
    for i, name in enumerate(("intent", "risk_within_limit", "net_delta_bounded")):
        for is_true, rate, what in ((True, PER_CLAIM[f"false_fail_{name}"], "fail"),
                                    (False, PER_CLAIM[f"miss_{name}"], "pass")):  # fmt: skip
            mask = checked[:, i] & (true[:, i] == is_true)
            if mask.sum() < 2000:
                continue  # (this proposer states too few claims of this kind)
            share = failed[mask, i].mean() if what == "fail" else 1.0 - failed[mask, i].mean()
            se = np.sqrt(rate * (1 - rate) / mask.sum())
            assert abs(share - rate) < 4.5 * se, (proposer, name, what, share, rate, int(mask.sum()))


def test_a_missed_lie_about_a_limit_reads_as_compliant_and_is_approved() -> None:
    """A checked false risk claim that passes makes the audit reveal compliance: the rule approves a bad trade."""
    clean = PAPER.replace(q=1.0, B=None)
    config = clean.replace(miss_risk_within_limit=0.5, miss_net_delta_bounded=0.5, miss_intent=1.0)
    runs = [simulate(c, make_policy("strategic:p=1.0"), make_policy("rule"), episodes=20_000, seed=1)
            for c in (clean, config)]  # fmt: skip
    bad = [float((r["approved"] & ~r["compliant"]).mean()) for r in runs]
    assert bad[0] == 0.0 and bad[1] > 0.05


def test_delayed_audits_decide_as_unaudited_but_charge_cost_and_penalty() -> None:
    never = simulate(PAPER.replace(q=0.0), make_policy("strategic:p=1.0"), make_policy("rule"), episodes=5000, seed=2)
    config = PAPER.replace(q=1.0, audit_delayed=True)
    late = simulate(config, make_policy("strategic:p=1.0"), make_policy("rule"), episodes=5000, seed=2)
    assert np.array_equal(never["approved"], late["approved"])  # common random numbers: the same episodes
    assert late["audited"].all() and late["audit_failed"].any()
    expected = never["proposer_payoff"] - config.L * late["audit_failed"]
    assert np.allclose(late["proposer_payoff"], expected)
    assert np.allclose(late["validator_payoff"], never["validator_payoff"] - config.audit_cost)


def test_the_check_uniforms_are_indexed_by_episode() -> None:
    whole = DrawStream(9).check_noise(0, 50)
    stream = DrawStream(9)
    assert np.array_equal(stream.check_noise(20, 5), whole[20:25])
    assert np.array_equal(stream.check_noise(25, 10), whole[25:35])  # sequential: no re-seek
    assert np.array_equal(stream.check_noise(3, 2), whole[3:5])  # backwards: from the start again
    # reading them moves none of the other draws
    a, b = DrawStream(9), DrawStream(9)
    a.check_noise(0, 100)
    assert all(np.array_equal(x, y) for x, y in zip(a.batch(10), b.batch(10), strict=True))


def test_an_episode_reached_by_index_is_the_one_played_in_order() -> None:
    config = PAPER.replace(q=0.9, B=2, **PER_CLAIM)
    env = raw_env(config=config)
    infos = []
    for i in range(12):
        env.reset(seed=4 if i == 0 else None)
        infos.append(_play_one(env))
    env.reset(seed=4, options={"episode": 9})
    assert _play_one(env) == infos[9]
    env.reset(seed=4, options={"episode": 2})
    assert _play_one(env) == infos[2]


def _play_one(env) -> dict:  # type: ignore[no-untyped-def]
    from eq_env.exchange_audit.rules import Claims, Intent, Proposal, ProposerAction, Submission, make_artifact

    game = env._episode.game
    pv = game.proposer_view
    claims = Claims(intent=Intent.HEDGE, risk_within_limit=True, net_delta_bounded=True, confidence=0.9)
    game.submit(Submission(ProposerAction.REQUEST_APPROVAL,
                           Proposal(pv.intent, pv.observed_risk, pv.observed_net_delta, pv.observed_hedge_size),
                           make_artifact(claims, "", 60)))  # fmt: skip
    audit = game.audit
    outcome = (audit.outcome, audit.checked, audit.failed, audit.revealed_compliant)
    return {"audit": outcome, "risk": game.state.true_risk}


def test_the_noisy_threshold_is_eq3_without_noise_and_rises_with_it() -> None:
    from eq_env.exchange_audit.equilibrium import analytic_threshold
    from eq_env.studies.exchange_audit.noisy import noisy_detection, noisy_threshold

    for V, L, B in ((1.0, 2.0, 4), (2.0, 1.0, 4), (2.0, 1.0, 1), (2.0, 4.0, 4), (3.0, 2.0, 4)):
        assert noisy_threshold(V, L, B, 0.0, 0.0) == pytest.approx(analytic_threshold(V, L, B, lies=1))
    assert noisy_detection(4, 0.0, 0.0) == (1.0, 0.0)
    assert noisy_detection(4, 0.3, 0.0) == pytest.approx((0.7, 0.0))
    base = noisy_threshold(2.0, 4.0, 4, 0.0, 0.0)
    assert noisy_threshold(2.0, 4.0, 4, 0.3, 0.0) > base and noisy_threshold(2.0, 4.0, 4, 0.0, 0.1) > base


@pytest.mark.parametrize(
    "V, L, B, miss, false_fail, extra",
    [(2.0, 1.0, 4, 0.1, 0.05, 0.0), (1.0, 2.0, 4, 0.3, 0.1, 0.2), (1.0, 4.0, 3, 0.0, 0.2, -0.3)],
)
def test_the_noisy_threshold_is_where_the_module_docstrings_inequality_binds(
    V: float, L: float, B: int, miss: float, false_fail: float, extra: float
) -> None:
    """At q*, the lie's payoff V·(1 − q·d) − q·d·L + ΔC equals the honest proposer's −q·φ·L (the derivation in
    eq_env.studies.exchange_audit.noisy, ΔC where eq. 3 puts it)."""
    from eq_env.studies.exchange_audit.noisy import noisy_detection, noisy_threshold

    d, phi = noisy_detection(B, miss, false_fail)
    q = noisy_threshold(V, L, B, miss, false_fail, extra)
    assert 0.0 < q < 1.0
    assert V * (1 - q * d) - q * d * L + extra == pytest.approx(-q * phi * L)


@pytest.mark.slow  # (over 0.5 s: a best response)
def test_the_readmes_frontier_at_a_high_miss_rate_is_partly_search_noise() -> None:
    """The README's reading of its ε₀ = 0.5 row: at q = 0.9 the default search (20 000 episodes, seed 0) misreports
    in more than the 2% tolerance of non-compliant episodes, yet its misreports lose to honesty on the held-out
    half; a lie with one false limit claim stops paying at q = 2/3 there."""
    from eq_env.exchange_audit.equilibrium import proposer_best_response

    config = SCRIPTED.replace(V=2.0, L=1.0, q=0.9).with_audit_noise(0.5, 0.0)
    br = proposer_best_response(config, episodes=20_000, seed=0)
    assert br.misreport_rate > 0.02 and br.gap < 0
    V, L, n, miss = 2.0, 1.0, SCRIPTED.no_trade_payoff, 0.5
    for q, pays in ((0.6, True), (2 / 3 + 1e-9, False), (0.9, False)):
        assert ((1 - q) * V + q * (miss * V - (1 - miss) * L) > n) is pays


@pytest.mark.slow  # (over 0.5 s: nine best responses)
def test_the_experiment_writes_its_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from eq_env.studies.exchange_audit.noisy import noisy_audits

    rows = noisy_audits(tmp_path, noise=((0.0, 0.0), (0.5, 0.0)), qs=(0.5, 1.0), episodes=2000)
    assert [r["miss"] for r in rows] == [0.0, 0.5]
    for name in (
        "noisy_audits.csv",
        "noisy_audits_summary.csv",
        "noisy_audits.md",
        "noisy_audits.png",
        "noisy_audits_penalty.png",
        "summary.md",
    ):
        assert (tmp_path / name).stat().st_size > 0


@pytest.mark.slow  # (over 0.5 s: nine best responses and a figure)
def test_the_noisy_audits_command_writes_its_table_figure_and_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eq_env.cli import main
    from eq_env.studies.exchange_audit.noisy import noisy_threshold

    out = tmp_path / "noisy"
    argv = ["noisy-audits", "--out", str(out), "--noise", "0:0,0.5:0,0:0.1", "--qs", "0,0.5,1", "--episodes", "200"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for name in (
        "noisy_audits.csv",
        "noisy_audits_summary.csv",
        "noisy_audits.md",
        "noisy_audits.png",
        "noisy_audits_penalty.png",
        "summary.md",
    ):
        assert (out / name).stat().st_size > 0, name
    assert (out / "noisy_audits.md").read_text() in printed and "| ε₀ | ε₁ |" in printed
    rows = list(csv.DictReader((out / "noisy_audits_summary.csv").open()))
    assert [(float(r["miss"]), float(r["false_fail"])) for r in rows] == [(0.0, 0.0), (0.5, 0.0), (0.0, 0.1)]
    assert float(rows[0]["honest_penalty"]) == 0.0 < float(rows[2]["honest_penalty"])  # false fails fine honesty
    assert float(rows[0]["analytic_q_star"]) == pytest.approx(2 / 3)  # eq. 3 at V=2, L=1, B=4
    assert float(rows[1]["analytic_q_star"]) == pytest.approx(noisy_threshold(2.0, 1.0, 4, 0.5, 0.0))
    assert len(list(csv.DictReader((out / "noisy_audits.csv").open()))) == 3 * 3


def test_the_noisy_audits_command_passes_its_flags_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """The wiring, fast: the flags reach noisy_audits and its table is printed."""
    from eq_env.cli import main
    from eq_env.studies.exchange_audit import noisy

    seen: dict[str, object] = {}

    def fake(out: Path, **kwargs: object) -> list[dict[str, object]]:
        seen.update(kwargs, out=out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "noisy_audits.md").write_text("| the table |\n")
        return []

    monkeypatch.setattr(noisy, "noisy_audits", fake)
    argv = ["noisy-audits", "--out", str(tmp_path / "o"), "--noise", "0:0, 0.2:0.05", "--qs", "0.5,0", "--q", "0.4",
            "--V", "3", "--L", "2", "--episodes", "50", "--seed", "7", "--preset", "paper"]  # fmt: skip
    assert main(argv) == 0
    assert "| the table |" in capsys.readouterr().out
    assert seen == {"out": tmp_path / "o", "noise": [(0.0, 0.0), (0.2, 0.05)], "qs": [0.5, 0.0], "preset": "paper",
                    "V": 3.0, "L": 2.0, "q": 0.4, "episodes": 50, "seed": 7, "progress": None}  # fmt: skip


def test_the_experiment_refuses_a_bad_grid_before_writing(tmp_path: Path) -> None:
    from eq_env.studies.exchange_audit.noisy import noisy_audits

    for kwargs, match in (({"noise": []}, "at least one"), ({"qs": []}, "at least one"),
                          ({"noise": [(0.0, 1.5)]}, "false_fail"), ({"qs": [0.5, 2.0]}, "q")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            noisy_audits(tmp_path / "x", progress=False, **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "x").exists()


def _audit_fail_probability(checks: int, miss: float, false_fail: float, lie: bool) -> float:
    """P(the game's audit fails an artifact of four made claims, one of them false if ``lie``), enumerated
    exactly over the claims sampled (every subset of ``checks`` equally likely) and every claim's flip."""
    import itertools

    from eq_env.exchange_audit.rules import (
        Artifact,
        AuditOutcome,
        Claims,
        Intent,
        Proposal,
        ProposerAction,
        State,
        Submission,
        run_audit,
    )

    config = PAPER.replace(q=1.0, B=checks).with_audit_noise(miss, false_fail)
    state = State(False, Intent.HEDGE, 1.0, 0.3, 1.5 if lie else 0.5, 0.1, 0.7)  # a lie: risk beyond its limit
    claims = Claims(intent=Intent.HEDGE, risk_within_limit=True, net_delta_bounded=True, confidence=0.9)
    sub = Submission(ProposerAction.REQUEST_APPROVAL, Proposal(Intent.HEDGE, 0.9, 0.1, 0.7), Artifact(claims))
    subsets = list(itertools.combinations(range(4), checks))
    total = 0.0
    for subset in subsets:
        keys = tuple(0.1 if i in subset else 0.9 for i in range(4))  # the smallest keys are the claims checked
        for flips in itertools.product((False, True), repeat=4):
            weight = 1.0
            for i, flip in enumerate(flips):
                rate = miss if (lie and i == 1) else false_fail  # claim 1, risk_within_limit, is the lie
                weight *= rate if flip else 1 - rate
            check_u = tuple(0.0 if flip else 1.0 for flip in flips)  # below its rate: the verdict flips
            failed = run_audit(sub, state, (0.0, *keys), config, check_u).outcome is AuditOutcome.FAIL
            total += weight * failed / len(subsets)
    return total


@pytest.mark.parametrize("checks", [4, 2, 1])
def test_the_noisy_detection_is_the_games_audit_with_both_rates_above_zero(checks: int) -> None:
    """d and φ with ε₀ = 0.3 and ε₁ = 0.1, by hand and enumerated from the game's audit. With both rates above
    zero the lie's checked true claims pass with (1 − ε₁)^(B−1), not (1 − ε₁)^B (one of its B checks is the lie)."""
    from eq_env.studies.exchange_audit.noisy import noisy_detection

    by_hand = {  # d = 1 − [π·ε₀·(1 − ε₁)^(B−1) + (1 − π)·(1 − ε₁)^B], φ = 1 − (1 − ε₁)^B, π = B/4
        4: (1 - 0.3 * 0.9**3, 1 - 0.9**4),  # 0.7813, 0.3439
        2: (1 - (0.5 * 0.3 * 0.9 + 0.5 * 0.9**2), 1 - 0.9**2),  # 0.46, 0.19
        1: (1 - (0.25 * 0.3 + 0.75 * 0.9), 1 - 0.9),  # 0.25, 0.1
    }[checks]
    assert noisy_detection(checks, 0.3, 0.1) == pytest.approx(by_hand, abs=1e-12)
    game = (_audit_fail_probability(checks, 0.3, 0.1, lie=True), _audit_fail_probability(checks, 0.3, 0.1, lie=False))
    assert game == pytest.approx(by_hand, abs=1e-12)
