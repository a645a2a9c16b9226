"""Gymnasium views, SB3 training (short runs that must learn), trained policies, best responses, the frontier."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest

import eq_env
from eq_env.baselines.exchange_audit.rl import SB3Policy, selfplay, train
from eq_env.core.policy import make_policy
from eq_env.exchange_audit.batch import proposer_batch, sample_nature, simulate
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.equilibrium import (
    analytic_threshold,
    detection_given_audit,
    expected_payoffs,
    proposer_best_response,
    validator_best_response,
)
from eq_env.exchange_audit.features import (
    N_ARTIFACTS,
    all_artifacts,
    artifact_index,
    artifact_submission,
    artifact_submissions,
    proposer_features,
    proposer_features_batch,
    validator_features,
    validator_features_batch,
)
from eq_env.exchange_audit.rules import DrawStream
from eq_env.exchange_audit.runner import compute_metrics, evaluate, play, records_to_columns
from eq_env.studies.exchange_audit.frontier import Scenario, frontier, misreport_rate

PAPER = ExchangeAuditConfig()
TEMPTATION = PAPER.replace(q=0.0, V=2.0, L=1.0)

pytestmark = pytest.mark.filterwarnings("ignore:.*(render fps|infinity|precision lowered).*")


# ---------------------------------------------------------------------------
# The single-agent views
# ---------------------------------------------------------------------------
VIEWS = [
    ("eq_env/ExchangeAuditProposer-v0", {}),
    ("eq_env/ExchangeAuditProposer-v0", {"action_encoding": "discrete", "audit_intensities": [0.0, 0.5, 1.0]}),
    ("eq_env/ExchangeAuditProposer-v0", {"validator": "approve", "reward_mode": "welfare", "B": 1}),
    ("eq_env/ExchangeAuditValidator-v0", {}),
    ("eq_env/ExchangeAuditValidator-v0", {"proposer": "strategic", "skip_no_trade": False, "q": 0.7}),
]


def test_a_seeded_view_over_several_q_starts_at_episode_zero() -> None:
    from eq_env.exchange_audit.env import PROPOSER, raw_env
    from eq_env.exchange_audit.spaces import decode_proposer_observation
    from eq_env.exchange_audit.views import ExchangeAuditProposerEnv

    view = ExchangeAuditProposerEnv(audit_intensities=[0.1, 0.5, 0.9])
    with pytest.warns(DeprecationWarning, match="q_values is now audit_intensities"):  # the old name still works
        assert ExchangeAuditProposerEnv(q_values=[0.1, 0.5, 0.9]).configs == view.configs
    for seed in range(6):
        obs, _ = view.reset(seed=seed)
        k = view._envs.index(view._env)
        env = raw_env(config=view.configs[k])
        env.reset(seed=seed + k)  # episode 0 of the environment the view drew
        assert np.array_equal(obs, proposer_features(decode_proposer_observation(env.observe(PROPOSER))))


@pytest.mark.parametrize("env_id, kwargs", VIEWS)
def test_views_pass_gymnasium_and_sb3_checks(env_id: str, kwargs: dict) -> None:
    from gymnasium.utils.env_checker import check_env as gymnasium_check
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env = gymnasium.make(env_id, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # our own envs: any checker warning is a failure
        gymnasium_check(env.unwrapped, skip_render_check=True)
        sb3_check(env.unwrapped, warn=True)
    assert env_id in eq_env.GYM_IDS


def test_view_episodes_are_one_step_and_seeded() -> None:
    def trace(seed: int) -> list:
        env = gymnasium.make("eq_env/ExchangeAuditProposer-v0", q=0.5)
        env.action_space.seed(seed)
        out = []
        obs, _ = env.reset(seed=seed)
        for _ in range(30):
            _, reward, terminated, truncated, info = env.step(env.action_space.sample())
            assert terminated and not truncated
            out.append((obs.tobytes(), reward, info["decision"]))
            obs, _ = env.reset()
        return out

    assert trace(3) == trace(3) and trace(3) != trace(4)


def test_proposer_view_rewards_are_the_games() -> None:
    env = gymnasium.make("eq_env/ExchangeAuditProposer-v0", validator="rule", q=0.3)
    env.reset(seed=0)
    for _ in range(50):
        _, reward, *_, info = env.step(env.action_space.sample())
        assert reward == info["proposer_payoff"]
        env.reset()
    welfare = gymnasium.make("eq_env/ExchangeAuditProposer-v0", reward_mode="welfare")
    welfare.reset(seed=0)
    _, reward, *_, info = welfare.step(welfare.action_space.sample())
    assert reward == info["welfare"]


def test_validator_view_skips_no_trades_and_masks_otherwise() -> None:
    skip = gymnasium.make("eq_env/ExchangeAuditValidator-v0", proposer="honest").unwrapped
    skip.reset(seed=0)
    for _ in range(40):
        assert skip.action_masks().tolist() == [True, True]
        skip.step(1)
        skip.reset()
    shown = gymnasium.make("eq_env/ExchangeAuditValidator-v0", proposer="honest", skip_no_trade=False).unwrapped
    shown.reset(seed=0)
    saw_forced = False
    for _ in range(40):
        mask = shown.action_masks()
        _, _, _, _, info = shown.step(1)
        saw_forced |= not mask[1]
        assert info["illegal_action"] == (not mask[1])  # APPROVE after NO_TRADE counts as BLOCK
        shown.reset()
    assert saw_forced


# ---------------------------------------------------------------------------
# Features and the artifact space: one observation and a batch agree
# ---------------------------------------------------------------------------
def test_features_and_artifacts_agree_between_single_and_batch() -> None:
    from eq_env import exchange_audit_v0
    from eq_env.exchange_audit.spaces import (
        decode_proposer_observation,
        decode_validator_observation,
        encode_submission,
    )

    config = PAPER.replace(reveal_compliance=True, q=0.6, B=2)
    n = 60
    nature = sample_nature(config, *DrawStream(5).batch(n))
    views = proposer_batch(nature, config)
    batch_features = proposer_features_batch(views)
    rng = np.random.default_rng(0)
    choices = all_artifacts()[rng.integers(0, N_ARTIFACTS, size=n)]
    batch_sub = artifact_submissions(views, choices)
    env = exchange_audit_v0.env(config=config)
    for i in range(n):
        env.reset(seed=5, options={"episode": i})
        view = decode_proposer_observation(env.observe("proposer_0"))
        assert np.array_equal(proposer_features(view), batch_features[i])
        sub = artifact_submission(view, choices[i])
        assert (sub.proposal.risk, sub.proposal.net_delta, int(sub.proposal.intent)) == (
            batch_sub.reported_risk[i], batch_sub.reported_net_delta[i], int(batch_sub.reported_intent[i])
        )  # fmt: skip
        assert sub.artifact.words == batch_sub.words[i] and bool(sub.action) == batch_sub.request[i]
        env.step(encode_submission(sub))
        vview = decode_validator_observation(env.observe("validator_0"))
        assert validator_features(vview).shape == (20,)
    assert np.array_equal(artifact_index(all_artifacts()), np.arange(N_ARTIFACTS))
    from eq_env.exchange_audit.batch import ValidatorBatch, run_audit_batch

    audit = run_audit_batch(batch_sub, nature, config)
    vb = ValidatorBatch(config, batch_sub, audit, nature.ambiguous, nature.risk_limit)
    assert validator_features_batch(vb).shape == (n, 20)


# ---------------------------------------------------------------------------
# Training: a few thousand steps must learn, by a margin seeds cannot explain
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tempted_proposer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ppo_proposer")
    train("proposer", out, timesteps=4000, seed=0, config=TEMPTATION, eval_episodes=300, eval_seeds=(1000,),
          progress=False)  # fmt: skip
    return out


def _random_proposer_payoff(config: ExchangeAuditConfig, seeds: range, episodes: int) -> np.ndarray:
    payoffs = []
    for seed in seeds:
        env = gymnasium.make("eq_env/ExchangeAuditProposer-v0", config=config)
        env.action_space.seed(seed)
        env.reset(seed=seed)
        total = 0.0
        for _ in range(episodes):
            total += env.step(env.action_space.sample())[1]
            env.reset()
        payoffs.append(total / episodes)
    return np.array(payoffs)


@pytest.mark.slow
def test_ppo_proposer_beats_random_after_a_few_thousand_steps(tempted_proposer: Path) -> None:
    seeds = range(2000, 2005)
    trained = evaluate(TEMPTATION, f"sb3:path={tempted_proposer}", "rule", episodes=300, seeds=seeds).per_seed
    learned = np.array([m["proposer_payoff"] for m in trained])
    chance = _random_proposer_payoff(TEMPTATION, seeds, 300)
    # the gap must dwarf the spread across seeds of either
    assert learned.mean() - chance.mean() > 10 * max(learned.std(ddof=1), chance.std(ddof=1), 0.01)


@pytest.mark.slow
def test_trained_validator_learns_to_block_a_liar(tmp_path: Path) -> None:
    liar = "strategic:p=1.0"
    config = PAPER.replace(q=0.2)
    train("validator", tmp_path, timesteps=3000, seed=0, config=config, opponent=liar, eval_episodes=300,
          eval_seeds=(1000,), progress=False)  # fmt: skip
    seeds = range(2000, 2005)
    trained = np.array([m["validator_payoff"] for m in evaluate(config, liar, f"sb3:path={tmp_path}",
                                                                 episodes=300, seeds=seeds).per_seed])  # fmt: skip
    naive = np.array([m["validator_payoff"] for m in evaluate(config, liar, "approve", episodes=300,
                                                               seeds=seeds).per_seed])  # fmt: skip
    assert trained.mean() - naive.mean() > 10 * max(trained.std(ddof=1), naive.std(ddof=1), 0.01)


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_trained_policy_plays_everywhere_a_policy_goes(tempted_proposer: Path) -> None:
    policy = SB3Policy.load(tempted_proposer)
    assert policy.role == "proposer" and (tempted_proposer / "learning_curve.png").exists()
    assert (tempted_proposer / "eval.json").exists()
    aec = records_to_columns(play(TEMPTATION, policy, "rule", episodes=200, seed=9))
    batch = simulate(TEMPTATION, SB3Policy.load(tempted_proposer), make_policy("rule"), episodes=200, seed=9)
    # one batched forward pass vs one per episode: the same actions unless two logits tie to the last bit
    assert np.mean(aec["approved"] == batch["approved"]) > 0.99
    assert compute_metrics(aec)["request_rate"] == pytest.approx(compute_metrics(batch)["request_rate"], abs=0.01)
    with pytest.raises(ValueError, match="holds a trained proposer, not a validator"):
        make_policy(f"sb3:path={tempted_proposer}", "validator")
    with pytest.raises(ValueError, match=r"no policy\.json"):
        SB3Policy(tempted_proposer.parent)


@pytest.mark.slow
def test_a_sampling_trained_policy_plays_seeded_runs_reproducibly(tempted_proposer: Path) -> None:
    # the runner seeds each policy with a 64-bit child seed, which SB3's set_random_seed refused
    spec = f"sb3:path={tempted_proposer},deterministic=false"
    runs = [evaluate(TEMPTATION, spec, "rule", episodes=100, seeds=[5, 6]).per_seed for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[0] != evaluate(TEMPTATION, f"sb3:path={tempted_proposer}", "rule", episodes=100, seeds=[5, 6]).per_seed


@pytest.mark.slow
def test_temptation_learns_to_misreport_and_audits_stop_it(tempted_proposer: Path, tmp_path: Path) -> None:
    assert misreport_rate(TEMPTATION, f"sb3:path={tempted_proposer}", episodes=3000) > 0.8
    audited = TEMPTATION.replace(q=0.9)
    train("proposer", tmp_path, timesteps=4000, seed=0, config=audited, eval_episodes=200, eval_seeds=(1000,),
          progress=False)  # fmt: skip
    assert misreport_rate(audited, f"sb3:path={tmp_path}", episodes=3000) < 0.2


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["maskable_ppo", "dqn"])
def test_other_algorithms_train_and_load(algo: str, tmp_path: Path) -> None:
    result = train("proposer", tmp_path, algo=algo, timesteps=600, seed=1, config=PAPER, eval_episodes=50,
                   eval_seeds=(1000,), progress=False)  # fmt: skip
    assert SB3Policy.load(tmp_path).meta["algo"] == algo and result.curve is not None


@pytest.mark.slow
def test_selfplay_alternates_roles_and_resumes(tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {"rounds": 1, "timesteps": 4000, "seed": 0, "config": TEMPTATION.replace(q=0.1),
                              "eval_episodes": 100}  # fmt: skip
    history = selfplay(tmp_path / "tempt", **kwargs)
    assert [(h["round"], h["trained"]) for h in history] == [(0, "proposer"), (0, "validator")]
    assert history[1]["proposer"].startswith("sb3:path=") and history[1]["validator"].startswith("sb3:path=")
    assert all("welfare" in h and "bad_approval_rate" in h for h in history)
    # the trained validator blocks the trained liar's bad trades better than the rule engine did
    assert history[1]["bad_approval_rate"] < history[0]["bad_approval_rate"]
    for name in ("selfplay.csv", "selfplay.md", "selfplay.png"):
        assert (tmp_path / "tempt" / name).exists(), name
    model = tmp_path / "tempt" / "round0_validator" / "model.zip"
    stamp = model.stat().st_mtime_ns
    assert selfplay(tmp_path / "tempt", **kwargs) == history  # resumed: nothing trained again
    assert model.stat().st_mtime_ns == stamp


@pytest.mark.slow
def test_selfplay_skips_a_round_with_nothing_to_learn(tmp_path: Path) -> None:
    # with V = 1 the trained proposer learns never to ask (NO_TRADE pays as much): nothing for a validator to learn
    quiet = selfplay(tmp_path, rounds=1, timesteps=1500, seed=0, config=PAPER, eval_episodes=100)
    assert quiet[1]["trained"].startswith("validator (skipped:") and quiet[1]["request_rate"] < 0.05


def test_bad_training_arguments() -> None:
    with pytest.raises(ValueError, match=r"algo must be one of"):
        train("proposer", "/tmp/never", algo="a2c", timesteps=100)
    with pytest.raises(ValueError, match="timesteps must be an integer of at least 64"):
        train("proposer", "/tmp/never", timesteps=10)


# ---------------------------------------------------------------------------
# Best responses and the incentive condition
# ---------------------------------------------------------------------------
def test_analytic_threshold_is_eq3() -> None:
    assert analytic_threshold(1, 2, checks=4) == pytest.approx(1 / 3)
    assert analytic_threshold(2, 1, checks=4) == pytest.approx(2 / 3)
    assert analytic_threshold(1, 4, checks=4) == pytest.approx(1 / 5)
    assert detection_given_audit(1, 1) == 0.25 and detection_given_audit(3, 2) == 1.0
    assert math.isinf(analytic_threshold(2, 1, checks=1, lies=1))  # a 1-in-4 spot check cannot deter it


def test_expected_payoffs_are_exact_over_the_audit() -> None:
    config = PAPER.replace(q=0.3, B=2)
    nature = sample_nature(config, *DrawStream(0).batch(2000))
    sub = make_policy("strategic:p=0.5").act_batch(proposer_batch(nature, config))  # type: ignore[attr-defined]
    exact, _ = expected_payoffs(config, nature, sub, make_policy("rule", "validator"))
    # the same submissions under many draws of the audit coin and subset average to the exact expectation
    from eq_env.exchange_audit.batch import Nature, ValidatorBatch, payoffs_batch, rule_decision_batch, run_audit_batch

    rng = np.random.default_rng(1)
    total = np.zeros(nature.n)
    draws = 400
    for _ in range(draws):
        coins = Nature(**{**nature.__dict__, "audit_u": rng.random((nature.n, 5))})
        audit = run_audit_batch(sub, coins, config)
        approve = rule_decision_batch(ValidatorBatch(config, sub, audit, nature.ambiguous, nature.risk_limit))
        total += payoffs_batch(sub, sub.request & approve, audit, nature.compliant, config)[0]
    assert np.abs(total / draws - exact).mean() < 0.05
    assert abs((total / draws).mean() - exact.mean()) < 0.01


@pytest.mark.slow
def test_best_response_finds_the_profitable_lie_and_no_other() -> None:
    tempted = proposer_best_response(TEMPTATION, episodes=16_000)
    assert tempted.misreport_rate > 0.9 and tempted.gap_ci[0] > 0
    assert "numbers shaded inside" in tempted.deviations[0][1]
    deterred = proposer_best_response(TEMPTATION.replace(q=0.8), episodes=16_000)
    assert deterred.misreport_rate < 0.05
    # with V = 1, NO_TRADE (worth 1) beats any lie at any q
    assert proposer_best_response(PAPER.replace(q=0.0), episodes=16_000).misreport_rate < 0.02
    assert "best response" in tempted.summary() and "deviating strategy" in tempted.summary()


def test_validator_best_response_blocks_a_liar() -> None:
    br = validator_best_response(PAPER.replace(q=0.3), "strategic:p=1.0", episodes=16_000)
    assert br.gap_ci[0] > 0 and any("BLOCK" in text for _, text in br.changes)
    honest = validator_best_response(PAPER.replace(q=0.3), "honest", episodes=16_000)
    assert abs(honest.gap) < 0.02  # against an honest proposer the rule is already (nearly) best


def test_best_response_needs_bulk_policies() -> None:
    with pytest.raises(ValueError, match="act in bulk"):
        proposer_best_response(PAPER, "llm:model=m,base_url=http://127.0.0.1:9/v1", episodes=100)


@pytest.mark.slow
def test_frontier_quick(tmp_path: Path) -> None:
    scenarios = [Scenario("baseline", 1.0, 2.0, 4), Scenario("temptation", 2.0, 1.0, 4)]
    rows = frontier(tmp_path, scenarios=scenarios, qs=[0.0, 0.25, 0.5, 0.75, 1.0], episodes=6000, train_ppo=False,
                    progress=False)  # fmt: skip
    by = {r["scenario"]: r for r in rows}
    assert by["baseline"]["br_q_star"] == 0.0 and by["baseline"]["eq3_q_star"] == pytest.approx(1 / 3)
    assert by["temptation"]["game_q_star"] == 0.5 and by["temptation"]["br_q_star"] == 0.5
    assert by["temptation"]["eq3_q_star"] == pytest.approx(2 / 3)
    for name in ("frontier.csv", "frontier_summary.csv", "frontier.md", "frontier.png", "misreport_vs_q.png"):
        assert (tmp_path / name).exists(), name
    assert "Why eq. 3 differs" in (tmp_path / "frontier.md").read_text()


def test_frontier_explains_where_ppo_differs() -> None:
    from eq_env.studies.exchange_audit.frontier import _ppo_disagreements

    summary = [{"scenario": "a", "br_q_star": 0.5, "ppo_q_star": 0.9}, {"scenario": "b", "br_q_star": 0.5,
                "ppo_q_star": 0.6}]  # fmt: skip
    rows = [{"scenario": n, "q": q, "ppo_misreport_rate": rate, "ppo_payoff": 1.7, "br_payoff": 1.75}
            for n in ("a", "b") for q, rate in ((0.5, 0.5), (0.6, 0.17), (0.7, 0.01), (0.8, 0.06))]  # fmt: skip
    (text, blank) = _ppo_disagreements(summary, rows, 0.1, 0.02, 11, 60_000)
    assert text.startswith("Why PPO differs in a:") and blank == ""  # b agrees within a grid step
    assert "q = 0.6: 17% misreported, payoff 97.1% of the best response's" in text and "q = 0.8: 6%" in text
    assert "q = 0.7" not in text and "q = 0.5" not in text  # under the tolerance, or not above the frontier


@pytest.mark.slow
def test_equilibrium_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from eq_env.cli import main

    assert main(["equilibrium", "--q", "0.3", "--V", "2", "--L", "1", "--B", "1", "--episodes", "8000"]) == 0
    out = capsys.readouterr().out
    assert "proposer: best response" in out and "validator: best response" in out and "deviating strategy" in out


# ---------------------------------------------------------------------------
# Fictitious play: the mixture of past opponents
# ---------------------------------------------------------------------------
def test_a_mixture_plays_one_member_per_episode_seeded() -> None:
    """In bulk and one observation at a time, each episode is one member's, drawn uniformly and the same for a
    seed: a mixture of the rule validator and always-approve approves where the rule does, and more."""
    from eq_env.baselines.exchange_audit.rl import MixturePolicy
    from eq_env.exchange_audit.batch import draw_nature

    config = TEMPTATION.replace(q=0.3)
    mixture = MixturePolicy("validator", ["approve", "block"])
    assert repr(mixture) == "MixturePolicy('validator', ['approve', 'block'])"
    cols = [
        simulate(config, make_policy("honest", "proposer"), mixture, episodes=400, seed=3)["approved"] for _ in range(2)
    ]
    asked = simulate(
        config, make_policy("honest", "proposer"), make_policy("approve", "validator"), episodes=400, seed=3
    )["approved"]
    assert np.array_equal(cols[0], cols[1]) and not (cols[0] & ~asked).any()  # seeded; approves only what asks
    assert 0.4 < cols[0].sum() / asked.sum() < 0.6  # (half the requests meet the approving member)
    mixture.reset(seed=5)
    one_at_a_time = [mixture.act({"action_mask": np.ones(2, dtype=np.int8)}) for _ in range(200)]
    assert set(one_at_a_time) == {0, 1}
    # proposers: every row is one member's submission, both members play
    nature = draw_nature(config, DrawStream(0), 300)
    views = proposer_batch(nature, config)
    members = [make_policy(s, "proposer") for s in ("honest", "silent")]
    outs = [m.act_batch(views) for m in members]
    both = MixturePolicy("proposer", ["honest", "silent"])
    both.reset(seed=1)
    mixed = both.act_batch(views)
    from_first = np.all([getattr(mixed, k) == getattr(outs[0], k) for k in ("request", "claim_intent", "words")], 0)
    from_second = np.all([getattr(mixed, k) == getattr(outs[1], k) for k in ("request", "claim_intent", "words")], 0)
    assert (from_first | from_second).all() and (from_first & ~from_second).any() and (from_second & ~from_first).any()
    with pytest.raises(ValueError, match="at least one member"):
        MixturePolicy("proposer", [])


def test_the_selfplay_command_passes_its_opponents_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    from eq_env.baselines.exchange_audit import rl
    from eq_env.cli import main

    seen: dict[str, Any] = {}

    def fake(out: Path, **kwargs: Any) -> list:
        seen.update(kwargs)
        out.mkdir(parents=True, exist_ok=True)
        (out / "selfplay.md").write_text("| the table |\n")
        return []

    monkeypatch.setattr(rl, "selfplay", fake)
    assert main(["selfplay", "--out", str(tmp_path / "a"), "--rounds", "2", "--opponents", "latest"]) == 0
    assert seen["opponents"] == "latest" and seen["rounds"] == 2 and "| the table |" in capsys.readouterr().out
    assert main(["selfplay", "--out", str(tmp_path / "b")]) == 0 and seen["opponents"] == "all"  # (the default)
    with pytest.raises(SystemExit):
        main(["selfplay", "--out", str(tmp_path / "c"), "--opponents", "best"])
    err = capsys.readouterr().err.strip()
    assert "argument --opponents: invalid choice: 'best'" in err and "\n" not in err
    with pytest.raises(ValueError, match="opponents must be one of"):
        selfplay(tmp_path / "d", opponents="best")


@pytest.mark.slow  # (eight short trainings: half a minute)
def test_fictitious_selfplay_faces_every_past_opponent_and_reproduces(tmp_path: Path) -> None:
    """With opponents="all" round 1's proposer faces the rule validator and round 0's validator, one drawn per
    episode, and round 1's validator both proposers; the same seed gives the same learning curves and the same
    round table, bit for bit (in another directory)."""
    import json

    kwargs: dict[str, Any] = {"rounds": 2, "timesteps": 1024, "seed": 0, "config": TEMPTATION.replace(q=0.1),
                              "eval_episodes": 20, "opponents": "all", "progress": False}  # fmt: skip
    runs = [selfplay(tmp_path / name, **kwargs) for name in ("a", "b")]

    def opponent(run: str, training: str) -> str:
        return json.loads((tmp_path / run / training / "policy.json").read_text())["opponent"]

    a = tmp_path / "a"
    assert opponent("a", "round0_proposer") == "rule"
    assert opponent("a", "round0_validator") == f"sb3:path={a}/round0_proposer"
    assert opponent("a", "round1_proposer") == f"MixturePolicy('validator', ['rule', 'sb3:path={a}/round0_validator'])"
    assert opponent("a", "round1_validator") == (
        f"MixturePolicy('proposer', ['sb3:path={a}/round0_proposer', 'sb3:path={a}/round1_proposer'])"
    )
    assert runs[1][-1]["proposer"] == f"sb3:path={tmp_path / 'b'}/round1_proposer"  # rows: the latest pair
    metrics = [[{k: v for k, v in row.items() if k not in ("proposer", "validator")} for row in run] for run in runs]
    assert metrics[0] == metrics[1]
    for training in ("round0_proposer", "round0_validator", "round1_proposer", "round1_validator"):
        curves = [(tmp_path / run / training / "learning_curve.csv").read_text() for run in ("a", "b")]
        assert curves[0] == curves[1] and curves[0].count("\n") > 2, training
