"""Repeated play and reputation: the best response by dynamic programming, the repeated-game
condition, PPO with the history, and ``eq-env repeated``."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from eq_env.exchange_audit.repeated.dp import (
    StageStrategy,
    deterrence_holds,
    evaluate,
    reputation_states,
    solve,
)
from eq_env.exchange_audit.repeated.rules import (
    RepeatedConfig,
    Reputation,
    Verdict,
    audit_intensity,
    next_reputation,
)
from eq_env.exchange_audit.repeated.spec import ID

P, V = "proposer_0", "validator_0"
ROUND_KEYS = ("round", "q", "verdict", "clean_audits", "failed_audits")  # what a round's info adds to the one-shot's


# ---------------------------------------------------------------------------
# The dynamic programme
# ---------------------------------------------------------------------------
def _strategy(name: str, p: tuple[float, float], clean: float, failed: float, mis: float = 0.0) -> StageStrategy:
    return StageStrategy(name, name, p, (1.0, 0.9), (0.7, 0.7), (0.0, 0.0), clean, failed, mis, 0.25)


MENU = [
    _strategy("honest", (1.70, 1.72), 1.0, 0.0),
    _strategy("shade", (2.00, 1.45), 0.73, 0.27, 0.25),
    _strategy("false_claims", (2.00, 1.20), 0.73, 0.27, 0.25),
]


def _brute_force(config: RepeatedConfig, menu: list[StageStrategy]) -> float:
    """The best value over every history-dependent pure strategy: a choice per sequence of past verdicts."""
    T, delta = config.rounds, config.continuation
    nodes = [h for t in range(T) for h in itertools.product(range(3), repeat=t)]
    best = -math.inf

    def value(plan: dict[tuple[int, ...], int], history: tuple[int, ...], rep: Reputation) -> float:
        t = len(history)
        if t == T:
            return 0.0
        s = menu[plan[history]]
        q = audit_intensity(config, rep)
        total = s.at("proposer", q)
        go_on = delta if t + 1 < T else 0.0
        probs = {Verdict.NONE: 1 - q * (s.clean + s.failed), Verdict.CLEAN: q * s.clean,
                 Verdict.FAILED: q * s.failed}  # fmt: skip
        for verdict, prob in probs.items():
            if prob > 0 and go_on > 0:
                total += go_on * prob * value(plan, (*history, int(verdict)), next_reputation(config, rep, verdict))
        return total

    for choice in itertools.product(range(len(menu)), repeat=len(nodes)):
        best = max(best, value(dict(zip(nodes, choice, strict=True)), (), Reputation()))
    return best


@pytest.mark.parametrize(
    "fields",
    [
        {"audit_policy": "fixed", "q": 0.3},
        {"audit_policy": "decay", "q": 1.0, "gamma": 0.5, "q_min": 0.2},
        {"audit_policy": "decay", "q": 0.9, "gamma": 0.4, "reset_on_fail": True},
        {"audit_policy": "trigger", "q": 0.35, "q_punish": 0.9},
        {"audit_policy": "trigger", "q": 0.3, "punish_rounds": 1, "continuation": 0.8},
    ],
)
def test_the_dynamic_programme_is_the_best_of_every_strategy(fields: dict) -> None:
    """Three rounds, two stage strategies: the DP's value equals the best of all 2^13 history-dependent plans,
    and running its own policy forward gives that value back."""
    config = RepeatedConfig(rounds=3).replace(**fields)
    menu = MENU[:2]
    states = reputation_states(config)
    policy, values = solve(states, menu, config.rounds, config.continuation)
    assert values[0] == pytest.approx(_brute_force(config, menu), abs=1e-12)
    path = evaluate(states, menu, policy, config.rounds, config.continuation, 0.1)
    assert path.value == pytest.approx(values[0], abs=1e-12)


def test_reputation_states_move_as_the_game_does() -> None:
    """For every policy: the DP's state of a record, its q and where each verdict leads agree with the game."""
    rng = np.random.default_rng(0)
    for fields in (
        {"audit_policy": "fixed"},
        {"audit_policy": "decay", "q": 0.9, "gamma": 0.6, "q_min": 0.2},
        {"audit_policy": "decay", "q": 0.9, "gamma": 0.6, "reset_on_fail": True},
        {"audit_policy": "trigger"},
        {"audit_policy": "trigger", "punish_rounds": 3, "q_punish": 0.8},
    ):
        config = RepeatedConfig(rounds=12).replace(**fields)
        states = reputation_states(config)
        rep = Reputation()
        for verdict in rng.integers(0, 3, 40):
            s = states.index(rep)
            assert states.q[s] == audit_intensity(config, rep)
            rep = next_reputation(config, rep, Verdict(int(verdict)))
            assert states.index(rep) == states.next[s, verdict]


def test_the_condition_is_the_closed_form_of_the_grim_trigger() -> None:
    """Where audits cost an honest proposer (R_h falls with q), the grim trigger's closed form
    gain(q) ≤ δ·q·(φ_ℓ − φ_h)·[R_h(q) − R_h(1)]/(1 − δ) (φ_h = 0) is what deterrence_holds finds."""
    honest = _strategy("honest", (1.7, 1.3), 1.0, 0.0)
    lie = _strategy("shade", (2.0, 1.1), 0.6, 0.4)
    delta = 0.9

    def closed_form(q: float) -> bool:
        gain = lie.at("proposer", q) - honest.at("proposer", q)
        rent = honest.at("proposer", q) - honest.at("proposer", 1.0)
        return gain <= delta * q * (lie.failed - honest.failed) * rent / (1 - delta)

    flips = []
    for q in np.round(np.arange(0.0, 1.0001, 0.001), 3):
        config = RepeatedConfig.from_preset(audit_policy="trigger", q=float(q), continuation=delta, rounds=100)
        holds = deterrence_holds(reputation_states(config), [honest, lie], config.rounds, config.continuation)
        assert holds == closed_form(float(q)), q
        flips.append(holds)
    assert not flips[0] and flips[-1]  # (the test crosses the frontier)
    one_shot = next(q for q in np.arange(0, 1.0001, 0.001) if lie.at("proposer", q) <= honest.at("proposer", q))
    assert flips.index(True) / 1000 < one_shot - 0.05  # (the trigger deters well below the one-shot frontier)


def test_fixed_q_deters_exactly_where_the_one_shot_game_does() -> None:
    for q in (0.4, 0.49, 0.5, 0.51, 0.7):
        config = RepeatedConfig.from_preset(q=q, continuation=0.95, rounds=200)
        states = reputation_states(config)
        assert deterrence_holds(states, MENU, config.rounds, config.continuation) == all(
            s.at("proposer", q) <= MENU[0].at("proposer", q) for s in MENU[1:])  # fmt: skip


@pytest.mark.parametrize(
    "continuation, rounds, q, deterred",
    [(0.5, 100, 0.9, True), (0.9, 100, 0.6, False), (1.0, 2, 0.9, True), (1.0, 5, 0.6, False)],
)
def test_the_condition_checks_where_honesty_goes_and_values_a_liars_future_at_its_best(
    continuation: float, rounds: int, q: float, deterred: bool
) -> None:
    """A lenient trigger (q_punish = 0 after a failed audit) where an honest proposer never fails an audit: the
    punished state, where the shading lie pays (2.0 against 1.7 at q = 0), is one honest play never reaches.

    * Impatient (δ = 0.5) or near the end (T = 2) at q = 0.9, getting caught costs more than lying there brings:
      honesty is a best response, though a lie pays in a state it never reaches (checking every state said no).
    * Patient at q = 0.6, lying to get caught and lying on pays: not deterred (valuing the punished state as
      honest play there, 1.7 a round, said deterred).

    The verdict is the dynamic programme's: its best response is worth no more than honesty for ever iff it holds.
    """
    config = RepeatedConfig(rounds=rounds, continuation=continuation).replace(
        audit_policy="trigger", q=q, q_punish=0.0)  # fmt: skip
    states = reputation_states(config)
    assert MENU[0].failed == 0.0 and states.q[1] == 0.0 and MENU[1].at("proposer", 0.0) > MENU[0].at("proposer", 0.0)
    policy, values = solve(states, MENU, config.rounds, config.continuation)
    honest = evaluate(states, MENU, np.zeros_like(policy), config.rounds, config.continuation, 0.1)
    assert bool(values[0] <= honest.value + 1e-9) is deterred
    assert policy[-1, 1] != 0  # (the lie pays where honest play never goes: the last round, punished)
    assert deterrence_holds(states, MENU, config.rounds, config.continuation) is deterred


def test_the_sparse_transitions_are_the_dense_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each state's three successors carry what ReputationStates.transitions' dense matrix does, and honesty's
    values iterated (for many states) are the dense solve's."""
    from eq_env.exchange_audit.repeated import dp

    for fields in ({"audit_policy": "decay", "q": 1.0, "gamma": 0.97, "reset_on_fail": True},
                   {"audit_policy": "trigger", "q": 0.4, "q_punish": 0.9, "punish_rounds": 7}):  # fmt: skip
        config = RepeatedConfig(rounds=60, continuation=0.97).replace(**fields)
        states = reputation_states(config)
        rewards, probs = dp._arrays(states, MENU)
        value = np.random.default_rng(1).normal(size=states.n)
        dense = np.array([states.transitions(s) @ value for s in MENU])
        assert dp._expected(states, probs, value) == pytest.approx(dense, abs=1e-12)
        share = np.random.default_rng(2).dirichlet(np.ones(states.n))
        assert dp._forward(states, probs[1], share) == pytest.approx(share @ states.transitions(MENU[1]), abs=1e-12)
        solved = dp._stationary_values(states, rewards[0], probs[0], config.continuation)
        monkeypatch.setattr(dp, "_DENSE_SOLVE", 0)
        assert dp._stationary_values(states, rewards[0], probs[0], config.continuation) == pytest.approx(
            solved, rel=1e-12
        )
        monkeypatch.undo()


@pytest.mark.slow  # (half a second)
def test_a_patient_horizon_is_solved_in_memory_linear_in_its_states_per_round() -> None:
    """A decay that never reaches its floor has a state per round: T = 1500 rounds at δ = 0.99 (a horizon the
    command's --rounds accepts; --deltas 0.999 makes T = 9206) took minutes and (K, S, S) matrices; the
    transitions are (K, S, 3) now. Measured in bytes allocated, not seconds: the policy itself is (T, S), but
    nothing may be as large as one (K, S, S) matrix."""
    import tracemalloc

    config = RepeatedConfig(rounds=1500, continuation=0.99).replace(audit_policy="decay", q=1.0, gamma=0.999)
    states = reputation_states(config)
    assert states.n == config.rounds
    tracemalloc.start()
    try:
        policy, _ = solve(states, MENU, config.rounds, config.continuation)
        evaluate(states, MENU, policy, config.rounds, config.continuation, 0.1)
        deterrence_holds(states, MENU, config.rounds, config.continuation)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(MENU) * states.n**2 * 8  # (18 MB here: the (T, S) policy; a (K, S, S) matrix is 54 MB)


# ---------------------------------------------------------------------------
# Bad flags
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, needle",
    [
        (["play", "--env", "exchange-audit-repeated", "--rounds", "0"], "argument --rounds"),
        (["play", "--env", "exchange-audit-repeated", "--continuation", "2"], "continuation"),
        (["play", "--env", "exchange-audit-repeated", "--audit-policy", "x"], "--audit-policy"),
        (["repeated", "--out", "OUT", "--deltas", "1"], "argument --deltas"),
        (["repeated", "--out", "OUT", "--deltas", "0.5,0.5"], "distinct"),
        (["repeated", "--out", "OUT", "--policies", "fixed,grim"], "argument --policies"),
        (["repeated", "--out", "OUT", "--punish-rounds", "0"], "argument --punish-rounds"),
        (["repeated", "--out", "OUT", "--rounds", "0"], "argument --rounds"),
        (["repeated", "--out", "OUT", "--ppo-timesteps", "10"], "argument --ppo-timesteps"),
        # a 400-digit count was cut to 10^9 steps in silence: a training that never ends
        (
            ["repeated", "--out", "OUT", "--ppo-timesteps", "4" * 400],
            "--ppo-timesteps: expected 0 (no PPO) or a "
            "number of steps in [64, 1000000000], got '444444444444'... (400 characters)",
        ),
        (["repeated", "--out", "OUT", "--ppo-timesteps", "1000000001"], "in [64, 1000000000], got 1000000001"),
        (["repeated", "--out", "OUT", "--gamma", "1.5"], "argument --gamma"),
        (["repeated", "--out", "OUT", "--episodes", "3"], "argument --episodes"),
        (["repeated", "--out", "OUT", "--preset", "paper"], "argument --preset"),
        (["repeated", "--out", "OUT", "--false-fail", "2"], "argument --false-fail"),
    ],
)
def test_bad_flags_are_one_line(argv: list[str], needle: str, tmp_path: Any, monkeypatch: Any,
                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    from eq_env.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:  # (refused at parse time, by argparse)
        main(argv)
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and needle in err and "\n" not in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # refused before anything ran


# ---------------------------------------------------------------------------
# Slow: the best response in the environment, PPO, the command
# ---------------------------------------------------------------------------
@pytest.mark.slow  # (a few seconds: 600 episodes in the environment)
def test_the_best_response_plays_in_the_environment_as_the_programme_says() -> None:
    from eq_env.core.runner import evaluate as run
    from eq_env.exchange_audit.repeated.dp import DPProposer, repeated_best_response

    config = RepeatedConfig.from_preset("paper_scripted", V=2.0, L=1.0, rounds=25, continuation=0.8,
                                        audit_policy="decay", q=1.0, gamma=0.7, q_min=0.1)  # fmt: skip
    br = repeated_best_response(config, episodes=4000, seed=0)
    assert br.strategy(0, Reputation()) == "honest" and br.strategy(0, Reputation(clean=6)) == "shade"
    runs = {}
    for name, proposer in (("honest", br.strategies[0].spec), ("dp", DPProposer(br))):
        runs[name] = run(ID, config, {"proposer": proposer, "validator": "rule"}, episodes=300, seeds=[77])
    gain = np.array([a.proposer_payoff - b.proposer_payoff
                     for a, b in zip(runs["dp"].records, runs["honest"].records, strict=True)])  # fmt: skip
    se = gain.std(ddof=1) / math.sqrt(len(gain))
    assert abs(gain.mean() - br.gain) < 4 * se and gain.mean() > 0
    measured = runs["dp"].per_seed[0]["noncompliant_misreport_rate"]
    assert abs(measured - br.best.misreport_rate) < 0.06
    assert runs["honest"].per_seed[0]["noncompliant_misreport_rate"] == 0.0


@pytest.mark.slow  # (several seconds: trains PPO)
def test_ppo_with_history_learns_honesty_where_the_programme_says_honest() -> None:
    """At q = 1 a lie is always audited: PPO learns to be honest, and beats a proposer choosing at random."""
    from eq_env.baselines.sb3 import learn
    from eq_env.core.runner import evaluate as run
    from eq_env.exchange_audit.repeated.dp import repeated_best_response
    from eq_env.exchange_audit.repeated.views import RepeatedProposerEnv, ViewPolicy

    config = RepeatedConfig.from_preset("paper_scripted", V=2.0, L=1.0, rounds=5, q=1.0)
    assert repeated_best_response(config, episodes=2000).best.misreport_rate == 0.0
    hyper = {"n_steps": 256, "batch_size": 256, "learning_rate": 1e-3, "n_epochs": 5, "ent_coef": 0.0,
             "gamma": 0.9, "gae_lambda": 0.95}  # fmt: skip
    model, _, _ = learn(lambda: RepeatedProposerEnv(config=config, action_encoding="strategy"), algo="ppo",
                        timesteps=4096, seed=0, hyperparameters=hyper, n_envs=4, progress=False)  # fmt: skip

    class Random:
        def predict(self, features: Any, deterministic: bool = True) -> tuple[int, None]:
            return int(rng.integers(3)), None

    rng = np.random.default_rng(0)
    results = {}
    for name, model_ in (("ppo", model), ("random", Random())):
        ev = run(ID, config, {"proposer": ViewPolicy(model_, config), "validator": "rule"}, episodes=200, seeds=[9])
        results[name] = ev.per_seed[0]
    assert results["ppo"]["noncompliant_misreport_rate"] < 0.05 < results["random"]["noncompliant_misreport_rate"]
    assert results["ppo"]["proposer_payoff"] > results["random"]["proposer_payoff"]


@pytest.mark.slow  # (about ten seconds: best responses and a few played cells)
def test_the_repeated_command_writes_its_files(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import csv

    from eq_env.cli import main

    out = tmp_path / "rep"
    argv = ["repeated", "--out", str(out), "--deltas", "0,0.9", "--rounds", "3", "--qs", "0,0.4,0.6,1",
            "--episodes", "2000", "--simulate-episodes", "30", "--policies", "fixed,decay",
            "--ppo-timesteps", "0"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for name in (
        "repeated.csv",
        "repeated_summary.csv",
        "repeated_checks.csv",
        "repeated.md",
        "repeated.png",
        "repeated_frontier.png",
        "summary.md",
    ):
        assert (out / name).stat().st_size > 0, name
    assert (out / "repeated.md").read_text() in printed
    rows = list(csv.DictReader((out / "repeated_summary.csv").open()))
    assert [(r["horizon"], r["policy"]) for r in rows] == [(h, p) for h in ("δ=0", "δ=0.9", "T=3")
                                                           for p in ("fixed", "decay")]  # fmt: skip
    fixed = [r for r in rows if r["policy"] == "fixed"]
    assert {float(r["br_frontier"]) for r in fixed} == {0.6}  # (q*₁ = 0.5 at V = 2: the grid's next point)
    assert all(float(r["one_shot_q"]) == 0.6 for r in rows)
    decay = next(r for r in rows if r["policy"] == "decay" and r["horizon"] == "δ=0.9")
    assert float(decay["lowest_misreport_rate"]) > 0.2 and "shade" in decay["lowest_plan"]
    assert len(list(csv.DictReader((out / "repeated.csv").open()))) == 3 * 2 * 4
    checks = list(csv.DictReader((out / "repeated_checks.csv").open()))
    assert [c["cell"] for c in checks] == ["fixed q=0.2", "fixed q=0.8", "decay q_min=0.1"]
    assert "Does reputation hold honesty" in (out / "summary.md").read_text()


@pytest.mark.slow  # (a few seconds: two tiny runs)
@pytest.mark.filterwarnings("ignore:Creating legend")  # (matplotlib times its legend with the test's clock)
def test_the_repeated_command_writes_the_same_bytes_however_long_it_takes(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same seed, same files, byte for byte: no wall-clock time in them (the console says how long it took)."""
    import itertools as it
    import time

    from eq_env.studies.exchange_audit.repeated.experiment import repeated

    clock = it.count()  # (the n-th reading of the clock is n² s: each run takes longer than the last)
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(clock)) ** 2)
    kwargs: dict[str, Any] = {"deltas": [0.0], "qs": [0.0, 1.0], "policies": ["fixed", "decay"], "episodes": 200,
                              "simulate_episodes": 2, "ppo_timesteps": 0, "progress": False}  # fmt: skip
    repeated(tmp_path / "a", **kwargs)
    repeated(tmp_path / "b", **kwargs)
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert "summary.md" in names and names == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_the_repeated_command_passes_its_flags_on(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    from eq_env.cli import main
    from eq_env.studies.exchange_audit.repeated import experiment

    seen: dict[str, object] = {}

    def fake(out: Any, **kwargs: object) -> list:
        seen.update(kwargs, out=out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "repeated.md").write_text("| the table |\n")
        return []

    monkeypatch.setattr(experiment, "repeated", fake)
    argv = ["repeated", "--out", str(tmp_path / "o"), "--deltas", "0.5, 0.9", "--rounds", "4", "--policies",
            "trigger,decay", "--qs", "0.5,0", "--q0", "0.9", "--gamma", "0.5", "--q-punish", "0.8",
            "--punish-rounds", "3", "--V", "3", "--L", "2", "--episodes", "50", "--check-delta", "0.8",
            "--simulate-episodes", "7", "--ppo-timesteps", "128", "--seed", "7", "--preset", "paper_scripted",
            "--miss", "0.1", "--false-fail", "0.02"]  # fmt: skip
    assert main(argv) == 0
    assert "| the table |" in capsys.readouterr().out
    assert seen == {"out": tmp_path / "o", "preset": "paper_scripted", "V": 3.0, "L": 2.0, "miss": 0.1,
                    "false_fail": 0.02, "deltas": [0.5, 0.9],
                    "rounds": [4], "policies": ["trigger", "decay"], "qs": [0.5, 0.0], "q0": 0.9, "gamma": 0.5,
                    "q_punish": 0.8, "punish_rounds": 3, "episodes": 50, "check_delta": 0.8, "simulate_episodes": 7,
                    "ppo_timesteps": 128, "seed": 7, "progress": None}  # fmt: skip
    seen.clear()
    assert main(["repeated", "--out", str(tmp_path / "p"), "--punish-rounds", "forever"]) == 0
    assert seen["punish_rounds"] is None and seen["ppo_timesteps"] == 30_000


def test_the_programme_refuses_another_claim_schema_in_one_line() -> None:
    """Its audit is enumerated over the paper's four claims: another schema was a numpy traceback."""
    from eq_env.exchange_audit.repeated.dp import repeated_best_response

    config = RepeatedConfig.from_preset("paper_scripted", claim_schema="rich")
    with pytest.raises(ValueError, match="claim_schema='rich'"):
        repeated_best_response(config, episodes=40)


def test_the_experiment_refuses_a_bad_grid_before_writing(tmp_path: Any) -> None:
    from eq_env.studies.exchange_audit.repeated.experiment import repeated

    for kwargs, match in (({"qs": []}, "at least one"), ({"deltas": [], "rounds": []}, "at least one"),
                          ({"policies": ["grim"]}, "grim"), ({"q0": 0.3}, "q_min"),
                          ({"deltas": [1.0]}, "continuation"), ({"preset": "paper"}, "knows its compliance"),
                          ({"false_fail": 1.5}, "false_fail_intent"),
                          ({"ppo_timesteps": 10**400}, r"ppo_timesteps must be 0 \(no PPO\) or an integer in "
                                                       r"\[64, 1000000000\], got '1000.*\(401 characters\)"),
                          ({"ppo_timesteps": 10}, "ppo_timesteps"),
                          ({"ppo_timesteps": 64.0}, "ppo_timesteps")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            repeated(tmp_path / "x", progress=False, **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "x").exists()
