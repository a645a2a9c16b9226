"""The validator as a strategic auditor: the inspection game's Nash and commitment equilibria."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eq_env.core.policy import make_policy
from eq_env.exchange_audit.batch import draw_nature, proposer_batch, simulate
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.equilibrium import _split, expected_payoffs, proposer_best_response
from eq_env.exchange_audit.rules import DrawStream
from eq_env.studies.exchange_audit.inspection import (
    BestResponseProposer,
    Equilibrium,
    break_even_cost,
    budget_cost,
    commitment,
    inspection,
    nash_equilibrium,
)

SCRIPTED = ExchangeAuditConfig.from_preset("paper_scripted")
TEMPTATION = SCRIPTED.replace(V=2.0, L=1.0)


@pytest.fixture
def best_response_once(monkeypatch: pytest.MonkeyPatch) -> Any:
    """:func:`proposer_best_response` against the rule validator, searched once per configuration, episodes and
    seed (it is deterministic in them, and the rule validator has no parameters), in :func:`inspection` and in
    the test alike: the searches are nearly all of an experiment's time, and a brute force repeats its cells (a
    cell that inspection() searched with another configuration is searched afresh)."""
    from eq_env.studies.exchange_audit import inspection as module

    done: dict[tuple[Any, ...], Any] = {}

    def once(config: ExchangeAuditConfig, validator: Any, *, episodes: int, seed: int) -> Any:
        assert type(validator).__name__ == "RuleValidator", validator
        key = (config, episodes, seed)
        if key not in done:
            done[key] = proposer_best_response(config, validator, episodes=episodes, seed=seed)
        return done[key]

    monkeypatch.setattr(module, "proposer_best_response", once)
    return once


def test_the_nash_equilibrium_by_hand() -> None:
    # V = 2, n0 = 1: the cheapest lie pays (1 - q)·2 against NO_TRADE's 1, so q* = 1 - 1/2 = 0.5 (any c).
    # c_B = 0.2, ρ = 0.25, Λ = 10: auditing saves ρ·m·Λ = 2.5·m per unit of q and costs 0.2, so m* = 0.08.
    assert nash_equilibrium(V=2.0, audit_cost=0.2, bad_approval_loss=10.0, noncompliant_share=0.25) == Equilibrium(
        0.5, 0.08, "mixed"
    )
    # V = 4: q* = 1 - 1/4 = 0.75; c_B = 1, ρ = 0.5, Λ = 10: m* = 1 / 5 = 0.2
    eq = nash_equilibrium(V=4.0, audit_cost=1.0, bad_approval_loss=10.0, noncompliant_share=0.5)
    assert (eq.q, eq.m, eq.kind) == (0.75, 0.2, "mixed")
    # a lie fined L = 1 whenever audited (d = 1): (1 - q)·2 - q·1 = 1 at q = 1/3
    eq = nash_equilibrium(V=2.0, audit_cost=0.2, bad_approval_loss=10.0, noncompliant_share=0.25, L=1.0, detect=1.0)
    assert eq.q == pytest.approx(1 / 3) and eq.m == pytest.approx(0.08)
    # caught only half the time (d = 1/2, L = 2): (1 - q)·2 - q·(1/2)·2 = 1 at q = 1/3, not (V - n0)/(V + L) = 1/4
    eq = nash_equilibrium(V=2.0, audit_cost=0.2, bad_approval_loss=10.0, noncompliant_share=0.25, L=2.0, detect=0.5)
    assert eq.q == pytest.approx(1 / 3) and (1 - eq.q) * 2.0 - eq.q * 0.5 * 2.0 == pytest.approx(1.0)
    # both are indifferent there: the lie pays NO_TRADE's 1, and U_V(q, m*) does not move with q
    q, m = 0.5, 0.08

    def validator(q_: float) -> float:  # ρ·[(1 - m)·n0 - m·(1 - q)·Λ] - q·c_B (the compliant part K left out)
        return 0.25 * ((1 - m) * 1.0 - m * (1 - q_) * 10.0) - q_ * 0.2

    assert (1 - q) * 2.0 == 1.0 and validator(q - 0.1) == pytest.approx(validator(q + 0.1)) == pytest.approx(
        validator(q)
    )
    # the pure cases
    assert nash_equilibrium(V=1.0, audit_cost=0.2, bad_approval_loss=10.0, noncompliant_share=0.25) == Equilibrium(
        0.0, 0.0, "no temptation"
    )
    assert nash_equilibrium(V=2.0, audit_cost=2.5, bad_approval_loss=10.0, noncompliant_share=0.25) == Equilibrium(
        0.0, 1.0, "audits do not pay"
    )  # c_B = ρ·Λ: even a sure liar is not worth auditing
    assert nash_equilibrium(
        V=2.0, audit_cost=0.2, bad_approval_loss=10.0, noncompliant_share=0.25, no_trade_payoff=-1.0
    ) == Equilibrium(1.0, 1.0, "lying always pays")
    assert nash_equilibrium(V=2.0, audit_cost=0.2, bad_approval_loss=10.0, noncompliant_share=0.0).kind == (
        "nothing to inspect"
    )
    # Λ = 0 (found by a review): a bad approval costs the validator nothing, so it never audits (c_B ≥ ρ·Λ = 0)
    # and, unaudited, the lie pays V = 2 > n0 = 1: the proposer lies, m = 1 (it was reported as (0, 0))
    for cost in (0.2, 0.0):
        assert nash_equilibrium(V=2.0, audit_cost=cost, bad_approval_loss=0.0, noncompliant_share=0.25) == (
            Equilibrium(0.0, 1.0, "audits do not pay")
        )
    assert nash_equilibrium(V=1.0, audit_cost=0.2, bad_approval_loss=0.0, noncompliant_share=0.25) == Equilibrium(
        0.0, 0.0, "no temptation"
    )


def test_commitment_and_its_break_even_cost_by_hand() -> None:
    # q_F = 0.5, V = 2, n0 = 1, Λ = 10, ρ = 0.25. The validator: deterring is worth ρ·n0 - 0.5·c_B, not auditing
    # -ρ·Λ; deter while c_B ≤ ρ·(n0 + Λ)/q_F = 0.25·11/0.5 = 5.5. Welfare: ρ·2n0 - 0.5·c_B against ρ·(V - Λ):
    # deter while c_B ≤ 0.25·(2 + 10 - 2)/0.5 = 5.
    game = {"V": 2.0, "bad_approval_loss": 10.0, "noncompliant_share": 0.25}
    assert break_even_cost(q_deter=0.5, **game) == pytest.approx(5.5)
    assert break_even_cost(q_deter=0.5, objective="welfare", **game) == pytest.approx(5.0)
    assert commitment(q_deter=0.5, audit_cost=5.4, **game) == 0.5
    assert commitment(q_deter=0.5, audit_cost=5.6, **game) == 0.0
    assert commitment(q_deter=0.5, audit_cost=4.9, objective="welfare", **game) == 0.5
    assert commitment(q_deter=0.5, audit_cost=5.1, objective="welfare", **game) == 0.0
    assert commitment(q_deter=0.0, audit_cost=0.1, **game) == 0.0  # nothing to deter
    # no q deters: audit every lie while that saves more (ρ·Λ = 2.5) than it costs
    assert commitment(q_deter=math.inf, audit_cost=2.4, **game) == 1.0
    assert commitment(q_deter=math.inf, audit_cost=2.6, **game) == 0.0
    assert budget_cost(0.1, 0.025, 3) == pytest.approx(0.175) and budget_cost(0.1, 0.025, 9) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="objective"):
        commitment(q_deter=0.5, audit_cost=1.0, objective="planner", **game)


def test_the_noncompliant_share_is_the_hand_derived_one() -> None:
    # ρ = (1 - ambiguous_rate)·[½·P(hedge breaches) + ½·P(speculation breaches)]. A hedge's risk ~ U(0.2, 1.0)
    # exceeds a limit ~ U(0.8, 1.2) with probability ∫_0.8^1.0 (1 - l)/0.8 dl / 0.4 = 0.0625 (its delta is clipped
    # inside). A speculation complies only when its delta is clipped to 0.3 (P = Φ(-2.5) = 0.0062097) and its risk
    # ~ U(0.9, 2.0) is within the limit (∫_0.9^1.2 (l - 0.9)/1.1 dl / 0.4 = 0.1022727). So
    # ρ = 0.5·[0.5·0.0625 + 0.5·(1 - 0.0062097·0.1022727)] = 0.265466.
    n = 200_000
    nature = draw_nature(SCRIPTED, DrawStream(3), n)
    rho = float((~nature.compliant).mean())
    assert abs(rho - 0.265466) < 4 * math.sqrt(0.265466 * (1 - 0.265466) / n)


def test_the_best_response_proposer_replays_what_the_search_measured() -> None:
    config = TEMPTATION.replace(q=0.3, B=4)
    br = proposer_best_response(config, "rule", episodes=2000, seed=4)
    policy = BestResponseProposer(br)
    measured = _split(draw_nature(config, DrawStream(4), 2000), 1000)[1]
    policy.reset(seed=1)
    sub = policy.act_batch(proposer_batch(measured, config))
    proposer, validator = expected_payoffs(config, measured, sub, make_policy("rule"))
    assert float(proposer.mean()) == br.best_payoff  # the very submissions the search measured, bit for bit
    assert br.misreport_rate > 0.9  # (it lies below q* = 0.5)
    # the validator's payoff in a cell moves by exactly -q·Δc when an audit costs more: the proposer's does not
    dearer = config.replace(audit_cost=3.1)
    proposer3, validator3 = expected_payoffs(dearer, measured, sub, make_policy("rule"))
    assert np.array_equal(proposer3, proposer)
    assert np.allclose(validator3 - validator, -0.3 * 3.0, rtol=0, atol=1e-12)
    # and it plays in the batch engine like any bulk policy
    cols = simulate(config, policy, make_policy("rule"), episodes=500, seed=4)
    assert cols["misreported"][~cols["compliant"]].mean() > 0.9


@pytest.mark.slow  # (about 0.6 s: two best responses)
def test_the_best_response_switches_to_honesty_across_q_star() -> None:
    # temptation: q* = 1 - n0/V = 0.5; just below it the best response lies in nearly every non-compliant state,
    # from it on (indifferent at q*, honest by the search's tie-break) it does not lie at all
    below = proposer_best_response(TEMPTATION.replace(q=0.45, B=4), episodes=2000, seed=0)
    at = proposer_best_response(TEMPTATION.replace(q=0.5, B=4), episodes=2000, seed=0)
    assert below.misreport_rate > 0.9 and at.misreport_rate == 0.0


def test_the_experiment_refuses_bad_input_before_writing(tmp_path: Path) -> None:
    for kwargs, match in (
        ({"qs": []}, "at least one"),
        ({"budgets": []}, "at least one"),
        ({"budgets": [0, 1]}, "budgets"),
        ({"budgets": [5]}, "budgets"),
        ({"costs": [-1.0]}, "costs"),
        ({"claim_cost": -0.1}, "claim_cost"),
        ({"scenario": "lenient"}, "scenario"),
        ({"qs": [0.5, 1.5]}, "q"),
        ({"bad_approval_loss": -1.0}, "bad_approval_loss"),
        # Found by a review: these ran, on no measured state, to tables of nan
        ({"episodes": 2}, "episodes"),
        ({"episodes": True}, "episodes"),
        ({"seed": -1}, "seed"),
        ({"tolerance": math.nan}, "tolerance"),
        ({"tolerance": -0.1}, "tolerance"),
    ):
        with pytest.raises(ValueError, match=match):
            inspection(tmp_path / "x", progress=False, **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--budgets", "0,1"], "--budgets"),
        (["--budgets", "1,1"], "--budgets"),
        (["--qs", "0,1.5"], "--qs"),
        (["--claim-cost", "-1"], "--claim-cost"),
        (["--audit-cost", "x"], "--audit-cost"),
        (["--costs", "1,,2"], "--costs"),
        (["--scenario", "lenient"], "--scenario"),
        (["--episodes", "2"], "--episodes"),
        (["--V", "2e6"], "V must be"),  # the configuration's own check, on one line too
    ],
)
def test_bad_flags_are_one_line_naming_the_flag(
    flags: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eq_env.cli import main

    try:  # argparse exits; a ValueError of the run comes back as exit code 2
        code = main(["inspection", "--out", str(tmp_path / "o"), *flags])
    except SystemExit as exit_info:
        code = exit_info.code  # type: ignore[assignment]
    assert code == 2
    err = capsys.readouterr().err
    assert named in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_the_inspection_command_passes_its_flags_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The wiring, fast: the flags reach inspection() and its table is printed."""
    from eq_env.cli import main
    from eq_env.studies.exchange_audit import inspection as module

    seen: dict[str, object] = {}

    def fake(out: Path, **kwargs: object) -> None:
        seen.update(kwargs, out=out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "inspection.md").write_text("| the table |\n")

    monkeypatch.setattr(module, "inspection", fake)
    argv = ["inspection", "--out", str(tmp_path / "o"), "--scenario", "high_value", "--V", "3.5", "--audit-cost",
            "0.2", "--claim-cost", "0", "--bad-approval-loss", "6", "--qs", "0.6, 0", "--budgets", "4,2", "--costs",
            "0,1", "--preset", "paper", "--episodes", "50", "--seed", "7"]  # fmt: skip
    assert main(argv) == 0
    assert "| the table |" in capsys.readouterr().out
    assert seen == {"out": tmp_path / "o", "scenario": "high_value", "V": 3.5, "L": None, "audit_cost": 0.2,
                    "claim_cost": 0.0, "bad_approval_loss": 6.0, "qs": [0.6, 0.0], "budgets": [4, 2],
                    "costs": [0.0, 1.0], "preset": "paper", "episodes": 50, "seed": 7, "progress": None}  # fmt: skip


@pytest.mark.slow  # (over 0.5 s: ten best responses, a brute-force replay of each, two figures)
def test_the_leader_and_the_nash_equilibrium_on_a_tiny_grid(tmp_path: Path, best_response_once: Any) -> None:
    qs, budgets = (0.0, 0.3, 0.5, 0.7, 1.0), (1, 4)
    result = inspection(tmp_path, qs=qs, budgets=budgets, costs=(0.001, 0.1, 20.0), episodes=2000, seed=0,
                        progress=False)  # fmt: skip
    for name in ("inspection.csv", "inspection_equilibria.csv", "inspection_costs.csv", "inspection.md",
                 "inspection.png", "inspection_costs.png", "summary.md"):  # fmt: skip
        assert (tmp_path / name).stat().st_size > 0, name
    rows = list(csv.DictReader((tmp_path / "inspection.csv").open()))
    assert [(float(r["q"]), int(r["B"])) for r in rows] == [(q, B) for B in budgets for q in qs]

    # brute force: every cell's best response played by the batch engine (sampled audits, other states), the
    # validator's best cell taken by hand: the leader's (q, B)
    rule = make_policy("rule")
    played = {}
    for q in qs:
        for B in budgets:
            config = TEMPTATION.replace(q=q, B=B, audit_cost=budget_cost(0.1, 0.025, B))
            br = best_response_once(config, rule, episodes=2000, seed=0)
            cols = simulate(config, BestResponseProposer(br), rule, episodes=20_000, seed=11)
            played[q, B] = float(cols["validator_payoff"].mean())
    assert max(played, key=played.__getitem__) == (result.leader["q"], result.leader["B"]) == (0.5, 1)

    # the fixed-q frontier is 0.5 at both budgets and the leader commits to exactly it
    eqs = {e["B"]: e for e in result.equilibria}
    assert [eqs[B]["frontier_q"] for B in budgets] == [0.5, 0.5]
    # as c -> 0 the leader deters (at the frontier, no more); once audits cost more than the bad approvals they
    # prevent (c = 20 > Λ = 10) it stops auditing and accepts the lies
    by_cost = {r["audit_cost"]: r for r in result.costs}
    assert (by_cost[0.001]["leader_q"], by_cost[0.001]["leader_misreport_rate"]) == (0.5, 0.0)
    assert by_cost[20.0]["leader_q"] == 0.0 and by_cost[20.0]["leader_misreport_rate"] > 0.9
    assert by_cost[0.1]["leader_validator_payoff"] == pytest.approx(result.leader["value"], abs=1e-12)
    assert all(r["leader_q"] == r["analytic_leader_q"] for r in result.costs)

    # the Nash equilibrium is mixed, m* = c_B/(ρΛ) > 0, and it is one: the proposer's gain from lying changes sign
    # across q* (its root, measured, is q*) and the validator's payoff against m* is flat in q
    rho = result.noncompliant_share
    for B in budgets:
        e = eqs[B]
        assert (e["nash_kind"], e["nash_q"]) == ("mixed", 0.5)
        assert e["nash_m"] == pytest.approx(budget_cost(0.1, 0.025, B) / (rho * 10.0)) and e["nash_m"] > 0
        assert e["gain_below"] - e["gain_below_ci"] > 0 > e["gain_above"] + e["gain_above_ci"]
        assert e["measured_q"] == pytest.approx(0.5, abs=0.01)
        assert abs(e["validator_slope"]) <= e["validator_slope_ci"]
        assert e["validator_below"] == pytest.approx(e["validator_above"], abs=2 * 0.05 * e["validator_slope_ci"])
        assert e["measured_m"] == pytest.approx(e["nash_m"], rel=0.15)
        # commitment beats the Nash equilibrium: c_B·[(n0 + Λ)/Λ - q_F] analytically
    assert result.leader["value"] > eqs[1]["nash_validator_payoff"]
    summary = (tmp_path / "summary.md").read_text()
    assert "commits to exactly the fixed-q frontier" in summary and "It is mixed, m* > 0" in summary


@pytest.mark.slow  # (over 0.5 s: two runs of the experiment)
def test_the_same_seed_gives_the_same_files(tmp_path: Path) -> None:
    kwargs = {"qs": (0.3, 0.7), "budgets": (4,), "costs": (0.1, 9.0), "episodes": 1000, "seed": 5, "progress": False}
    inspection(tmp_path / "a", **kwargs)  # type: ignore[arg-type]
    inspection(tmp_path / "b", **kwargs)  # type: ignore[arg-type]
    for name in ("inspection.csv", "inspection_equilibria.csv", "inspection_costs.csv", "inspection.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.slow  # (over 0.5 s: four best responses and two figures)
def test_the_inspection_command_writes_its_files_and_prints_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eq_env.cli import main

    out = tmp_path / "run"
    argv = ["inspection", "--out", str(out), "--scenario", "baseline", "--qs", "0,1", "--budgets", "1,4",
            "--episodes", "400"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert (out / "inspection.md").read_text() in printed and "## Equilibria by budget B" in printed
    rows = list(csv.DictReader((out / "inspection_equilibria.csv").open()))
    # baseline (V = 1): the lie never beats NO_TRADE, so there is nothing to deter and no audit is worth paying
    assert [r["nash_kind"] for r in rows] == ["no temptation", "no temptation"]
    assert all(float(r["leader_q"]) == 0.0 for r in csv.DictReader((out / "inspection_costs.csv").open()))
    assert (out / "inspection.png").stat().st_size > 0 and (out / "summary.md").stat().st_size > 0


@pytest.mark.slow  # (a few seconds: three small runs and their figures)
def test_the_summary_says_what_a_grid_cannot_measure_instead_of_printing_nan(
    tmp_path: Path, best_response_once: Any
) -> None:
    """Found by a review: a grid with no lie on it (one q above q*) printed 'measured nan', 'nan, nan, nan' and
    'commitment is worth +nan'; a grid with no deterring q printed a negative worth of commitment unexplained."""
    kwargs = {"budgets": (1,), "costs": (0.1,), "episodes": 400, "progress": False}
    inspection(tmp_path / "above", qs=(0.7,), **kwargs)  # type: ignore[arg-type]
    summary = (tmp_path / "above" / "summary.md").read_text()
    assert "nan" not in summary and "The run does not check it" in summary
    inspection(tmp_path / "below", qs=(0.0, 0.1), **kwargs)  # type: ignore[arg-type]
    summary = (tmp_path / "below" / "summary.md").read_text()
    assert "nan" not in summary and "below zero only because no q of the grid deters" in summary
    inspection(tmp_path / "both", qs=(0.0, 0.3, 0.7), **kwargs)  # type: ignore[arg-type]
    summary = (tmp_path / "both" / "summary.md").read_text()
    assert "nan" not in summary and "below zero" not in summary and "commitment is worth +" in summary
