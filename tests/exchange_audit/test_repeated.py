"""Repeated play and reputation: the rules, the environment, the dynamic programme."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence

from eq_env import exchange_audit_repeated_v0, exchange_audit_v0
from eq_env.core.runner import play
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.records import EpisodeRecord
from eq_env.exchange_audit.repeated.env import HISTORY_FIELDS, decode_history, raw_env
from eq_env.exchange_audit.repeated.records import RepeatedEpisodeRecord, compute_metrics
from eq_env.exchange_audit.repeated.rules import (
    FOREVER,
    RepeatedConfig,
    Reputation,
    RoundDraws,
    Verdict,
    audit_intensity,
    next_reputation,
)
from eq_env.exchange_audit.repeated.spec import ID
from eq_env.exchange_audit.rules import AuditOutcome, ProposerAction

P, V = "proposer_0", "validator_0"
ROUND_KEYS = ("round", "q", "verdict", "clean_audits", "failed_audits")  # what a round's info adds to the one-shot's


# ---------------------------------------------------------------------------
# One round is the one-shot game
# ---------------------------------------------------------------------------
def _trace(env: Any, seed: int, episodes: int, strip: bool) -> list[Any]:
    """Every agent turn of random legal play: (agent, observation, reward, done flags, info)."""
    out = []
    for agent in env.possible_agents:
        env.action_space(agent).seed(seed)
    for i in range(episodes):
        env.reset(seed=seed) if i == 0 else env.reset()
        for agent in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            if strip:
                obs = {k: v for k, v in obs.items() if k != "history"}
                info = {k: v for k, v in info.items() if k not in ROUND_KEYS}
            out.append((agent, obs, reward, term, trunc, info))
            env.step(None if term or trunc else env.action_space(agent).sample(obs.get("action_mask")))
    return out


@pytest.mark.parametrize("stage", [{}, {"q": 0.7, "B": 2, "V": 2.0, "L": 1.0, "reward_mode": "individual"},
                                   {"q": 0.9, "miss_intent": 0.3, "false_fail_net_delta_bounded": 0.2},
                                   {"q": 0.8, "B": 2, "claim_schema": "rich", "regime": "text_only"},
                                   {"q": 1.0, "B": 1, "claim_schema": "rich"}])  # fmt: skip
@pytest.mark.parametrize("horizon", [{"rounds": 1}, {"rounds": 7, "continuation": 0.0},
                                     {"rounds": 1, "audit_policy": "decay", "q_min": 0.0},
                                     {"rounds": 1, "audit_policy": "trigger", "q_punish": 0.0}])  # fmt: skip
def test_one_round_is_the_one_shot_game_episode_by_episode(stage: dict, horizon: dict) -> None:
    """T = 1 (or δ = 0): every observation, reward and info of random play equal the one-shot game's."""
    one_shot = _trace(exchange_audit_v0.env(**stage), 3, 25, strip=False)
    repeated = _trace(exchange_audit_repeated_v0.env(**stage, **horizon), 3, 25, strip=True)
    assert len(one_shot) == len(repeated) == 25 * 4
    assert data_equivalence(one_shot, repeated)


def test_a_schemas_audit_pool_beyond_four_claims_is_sampled_in_every_round() -> None:
    # A partial audit of the rich schema's six claims needs its extra sampling keys in every round, not only the
    # first (each round's own draw stream gives them); it raised in round 1 before.
    from eq_env.baselines.exchange_audit import HonestProposer, RuleValidator

    env = exchange_audit_repeated_v0.env(preset="paper_scripted", claim_schema="rich", B=2, q=1.0, rounds=12)
    policies = {P: HonestProposer(claims_from="truth"), V: RuleValidator()}
    env.reset(seed=4)
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else policies[agent].act(obs))
    later = [r.outcome.audit.checked for r in env.unwrapped.game.history if r.round >= 1]
    assert len(later) == 11 and all(len(checked) == 2 for checked in later)
    assert {"hedge_covers", "risk_interval"} & {c for checked in later for c in checked}  # the pool beyond four
    assert len(set(later)) > 1  # sampled anew each round


def test_one_round_plays_the_one_shot_episodes_with_scripted_policies() -> None:
    """The runner's records: round 0 of each repeated episode is the one-shot episode of that index."""
    stage = {"preset": "paper_scripted", "V": 2.0, "L": 1.0, "q": 0.3}
    policies = {"proposer": "strategic:trigger=payoff,claims_from=truth", "validator": "rule"}
    one_shot = play("exchange-audit", ExchangeAuditConfig.from_preset("paper_scripted", V=2.0, L=1.0, q=0.3),
                    policies, episodes=40, seed=8)  # fmt: skip
    env = exchange_audit_repeated_v0.raw_env(**stage, rounds=1)
    from eq_env.core.runner import agent_policies

    players = agent_policies(ID, env.config, policies)
    from eq_env.core.runner import policy_seed

    players[P].reset(seed=policy_seed(8, 10))
    players[V].reset(seed=policy_seed(8, 11))
    for i, expected in enumerate(one_shot):
        env.reset(seed=8, options={"episode": i})
        env.step(players[P].act(env.observe(P)))
        env.step(players[V].act(env.observe(V)))
        (round_,) = env.game.history
        assert EpisodeRecord.from_outcome(round_.outcome, 8, i) == expected


# ---------------------------------------------------------------------------
# The audit policies and the record
# ---------------------------------------------------------------------------
N, C, F = Verdict.NONE, Verdict.CLEAN, Verdict.FAILED


def _q_path(config: RepeatedConfig, verdicts: list[Verdict]) -> list[float]:
    rep, qs = Reputation(), []
    for verdict in verdicts:
        qs.append(audit_intensity(config, rep))
        rep = next_reputation(config, rep, verdict)
    return qs


@pytest.mark.parametrize(
    "fields, verdicts, expected",
    [
        ({"audit_policy": "fixed", "q": 0.3}, [C, F, N, C], [0.3, 0.3, 0.3, 0.3]),
        ({"audit_policy": "decay", "q": 1.0, "gamma": 0.5, "q_min": 0.1},
         [C, N, C, F, C, C, C], [1.0, 0.5, 0.5, 0.25, 0.25, 0.125, 0.1]),
        ({"audit_policy": "decay", "q": 1.0, "gamma": 0.5, "q_min": 0.1, "reset_on_fail": True},
         [C, N, C, F, C, C, C], [1.0, 0.5, 0.5, 0.25, 1.0, 0.5, 0.25]),
        ({"audit_policy": "decay", "q": 0.8, "gamma": 0.0, "q_min": 0.05}, [N, C, C], [0.8, 0.8, 0.05]),
        ({"audit_policy": "trigger", "q": 0.2}, [N, C, F, C, N], [0.2, 0.2, 0.2, 1.0, 1.0]),
        ({"audit_policy": "trigger", "q": 0.2, "q_punish": 0.9, "punish_rounds": 2},
         [N, F, C, N, N, F, N, F, N, N, N], [0.2, 0.2, 0.9, 0.9, 0.2, 0.2, 0.9, 0.9, 0.9, 0.9, 0.2]),
    ],
)  # fmt: skip
def test_the_audit_policies_q_for_a_scripted_record(fields: dict, verdicts: list[Verdict], expected: list) -> None:
    assert _q_path(RepeatedConfig().replace(**fields), verdicts) == expected


def test_the_record_counts_clean_and_failed_audits_and_the_punishment() -> None:
    grim = RepeatedConfig(audit_policy="trigger")
    rep = Reputation()
    for verdict in (C, C, N, F, C):
        rep = next_reputation(grim, rep, verdict)
    assert rep == Reputation(clean=3, failed=1, punish_left=FOREVER) and rep.punished
    reset = RepeatedConfig(audit_policy="decay", reset_on_fail=True)
    rep = Reputation()
    for verdict in (C, C, F, C, F, F, C):
        rep = next_reputation(reset, rep, verdict)
    assert rep == Reputation(clean=1, failed=3, punish_left=0)


def _verdict(round_: Any, budget: int) -> Verdict:
    """The test's own reading of a round's audit (the manual's definition)."""
    audit, sub = round_.outcome.audit, round_.outcome.submission
    requested = sub.action is ProposerAction.REQUEST_APPROVAL
    if audit.outcome is AuditOutcome.FAIL:
        return Verdict.FAILED
    if audit.outcome is AuditOutcome.PASS:
        return Verdict.FAILED if requested and not round_.outcome.state.compliant else Verdict.CLEAN
    if audit.outcome is AuditOutcome.INCONCLUSIVE and requested and budget > 0:
        return Verdict.FAILED  # (claims withheld from the audit)
    return Verdict.NONE


def _withholding_liar(env: Any) -> Any:
    """A proposer that shades a non-compliant trade's numbers with its true claims, and omits the claims."""
    from eq_env.baselines.exchange_audit import StrategicProposer

    liar = StrategicProposer(p=1.0, truthful_claims=True, claims_from="truth", words=0)
    liar.reset(seed=0)

    def act(observation: Any) -> Any:
        action = dict(liar.act(observation))
        action["claims"] = np.zeros_like(action["claims"])  # (0: absent)
        return action

    return act


@pytest.mark.parametrize("budget", [None, 2, 0])
def test_a_request_that_withholds_its_claims_fails_its_audit(budget: int | None) -> None:
    """A liar must not escape the record by omitting its claims: an audit they leave inconclusive blocks the
    request as a failed one does, so it is a failed audit (the trigger punishes it) — unless the budget checks
    nothing (B = 0), when no audit can fail; the dynamic programme's reading of a batch is the game's."""
    from eq_env.baselines.exchange_audit import RuleValidator
    from eq_env.exchange_audit.batch import AuditBatch
    from eq_env.exchange_audit.repeated.dp import _verdicts

    env = exchange_audit_repeated_v0.env(preset="paper_scripted", rounds=12, audit_policy="trigger", q=1.0,
                                         q_punish=1.0, B=budget, V=2.0, L=1.0)  # fmt: skip
    liar, validator = _withholding_liar(env), RuleValidator()
    env.reset(seed=3)
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else liar(obs) if agent == P else validator.act(obs))
    game = env.unwrapped.game
    k = game.config.stage.checks_per_audit
    requests = [r for r in game.history if r.outcome.submission.action is ProposerAction.REQUEST_APPROVAL]
    assert requests and all(r.outcome.audit.outcome is AuditOutcome.INCONCLUSIVE for r in game.history)
    assert [r.verdict for r in game.history] == [_verdict(r, k) for r in game.history]
    assert game.reputation.failed == (len(requests) if k > 0 else 0)
    assert game.reputation.punished == (k > 0)
    rounds = game.history
    audit = AuditBatch(
        outcome=np.array([int(r.outcome.audit.outcome) for r in rounds]),
        checked=np.zeros((len(rounds), 4), dtype=bool), failed=np.zeros((len(rounds), 4), dtype=bool),
        revealed_compliant=np.full(len(rounds), -1, dtype=np.int8),
    )  # fmt: skip
    sub = SimpleNamespace(request=np.array([r.outcome.submission.action is ProposerAction.REQUEST_APPROVAL
                                            for r in rounds]))  # fmt: skip
    clean, failed = _verdicts(sub, audit, k)
    assert not clean.any() and failed.tolist() == [r.verdict is Verdict.FAILED for r in rounds]


@pytest.mark.parametrize("fields", [
    {"audit_policy": "decay", "q": 0.9, "gamma": 0.7, "q_min": 0.2, "reset_on_fail": True, "rounds": 15},
    {"audit_policy": "trigger", "q": 0.5, "punish_rounds": 3, "q_punish": 0.95, "rounds": 15, "B": 2},
    {"audit_policy": "decay", "q": 0.6, "gamma": 0.5, "rounds": 30, "continuation": 0.8},
])  # fmt: skip
def test_observations_show_what_happened(fields: dict) -> None:
    """At every turn the observation's history is the record of the rounds played, counted by the test itself;
    each round's q follows from the verdicts before it; the public vector shows the round's q."""
    env = exchange_audit_repeated_v0.env(**fields)
    config = env.unwrapped.config
    for agent in env.possible_agents:
        env.action_space(agent).seed(1)
    checked = 0
    for episode in range(8):
        env.reset(seed=5) if episode == 0 else env.reset()
        for agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            game = env.unwrapped.game
            done = list(game.history) if game.over else [r for r in game.history if r.round < game.round]
            verdicts = [_verdict(r, config.stage.checks_per_audit) for r in done]
            assert [r.verdict for r in done] == verdicts
            clean = sum(v is C for v in verdicts)
            if config.reset_on_fail and F in verdicts:
                clean = sum(v is C for v in verdicts[len(verdicts) - verdicts[::-1].index(F) :])
            h = decode_history(obs)
            last = done[-1].outcome if done else None
            assert h == pytest.approx({
                "round": len(done), "rounds_left": config.rounds - len(done), "continuation": config.continuation,
                "q": audit_intensity(config, game.reputation), "clean_audits": clean,
                "failed_audits": sum(v is F for v in verdicts), "punish_left": h["punish_left"],
                "requests": sum(r.outcome.submission.action is ProposerAction.REQUEST_APPROVAL for r in done),
                "approvals": sum(r.outcome.approved for r in done),
                "last_action": -1 if last is None else int(last.submission.action),
                "last_decision": -1 if last is None else int(last.decision),
                "last_audit_outcome": -1 if last is None else int(last.audit.outcome),
                "last_verdict": -1 if not done else int(verdicts[-1]),
            })  # fmt: skip
            if not game.over:
                assert obs["public"][2] == game.q == h["q"]  # (public[2] is q)
            checked += 1
            env.step(None if term or trunc else env.action_space(agent).sample(obs.get("action_mask")))
        qs = [r.q for r in env.unwrapped.game.history]
        assert qs == _q_path(config, [r.verdict for r in env.unwrapped.game.history])
    assert checked > 60  # (several rounds per episode were checked)
    assert list(decode_history(obs)) == list(HISTORY_FIELDS)


def test_the_horizon_follows_the_continuation_coins() -> None:
    """δ = 1: exactly T rounds, terminated. δ < 1: round t is played iff its coin is below δ; the cap truncates."""
    env = raw_env(rounds=6)
    env.reset(seed=0)
    _play_out(env)
    assert len(env.game.history) == 6 and not env.game.truncated
    config = RepeatedConfig(rounds=5, continuation=0.6)
    env = raw_env(config=config)
    coins = RoundDraws(2, 5)
    lengths = []
    for i in range(40):
        env.reset(seed=2) if i == 0 else env.reset()
        flags = _play_out(env)
        expected = 1
        while expected < 5 and coins.coin(i, expected) < 0.6:
            expected += 1
        assert len(env.game.history) == expected
        assert flags == ("truncated" if expected == 5 else "terminated")
        lengths.append(expected)
    assert min(lengths) == 1 and max(lengths) == 5


def _play_out(env: Any) -> str:
    """Play the episode with the honest proposer and the rule; how it ended."""
    from eq_env.baselines.exchange_audit.scripted import HonestProposer, RuleValidator

    proposer, validator = HonestProposer(), RuleValidator()
    ended = ""
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc:
            ended = "terminated" if term else "truncated"
            env.step(None)
        else:
            env.step((proposer if agent == P else validator).act(obs))
    return ended


def test_an_episode_jumped_to_is_the_one_played_in_order() -> None:
    config = RepeatedConfig.from_preset(rounds=9, continuation=0.85, audit_policy="decay", q=0.8, gamma=0.6,
                                        miss_intent=0.2)  # fmt: skip
    env = raw_env(config=config)
    played = []
    for i in range(6):
        env.reset(seed=4) if i == 0 else env.reset()
        _play_out(env)
        played.append([(r.q, r.verdict, r.outcome) for r in env.game.history])
    for i in (4, 1, 1, 5):
        env.reset(seed=4, options={"episode": i})
        _play_out(env)
        assert [(r.q, r.verdict, r.outcome) for r in env.game.history] == played[i]


def test_rewards_are_paid_each_round_and_sum_to_the_record() -> None:
    env = exchange_audit_repeated_v0.env(rounds=4, reward_mode="individual", q=0.5)
    env.reset(seed=1)
    totals = {P: 0.0, V: 0.0}
    from eq_env.baselines.exchange_audit.scripted import RuleValidator, StrategicProposer

    proposer, validator = StrategicProposer(p=0.5), RuleValidator()
    for agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        totals[agent] += reward
        env.step(None if term or trunc else (proposer if agent == P else validator).act(obs))
    record = RepeatedEpisodeRecord.from_game(env.unwrapped.game, 1, 0)
    assert totals[P] == pytest.approx(record.proposer_payoff) and totals[V] == pytest.approx(record.validator_payoff)
    assert record.rounds == 4 and len(record.round_q) == 4
    assert RepeatedEpisodeRecord.from_dict(record.to_dict()) == record


def test_the_metrics_of_hand_made_records() -> None:
    def record(rounds: int, welfare: float, approvals: int, audits: int, clean: int, qs: tuple) -> Any:
        return RepeatedEpisodeRecord(
            seed=0, episode=0, rounds=rounds, truncated=False, requests=rounds, approvals=approvals,
            bad_approvals=1, noncompliant=2, misreports=1, noncompliant_misreports=1, audits=audits,
            clean_audits=clean, failed_audits=audits - clean, audit_cost=0.1 * audits, welfare=welfare,
            proposer_payoff=welfare / 2, validator_payoff=welfare / 2, round_q=qs, round_verdict=("NONE",) * rounds,
            round_action=("REQUEST_APPROVAL",) * rounds, round_decision=("APPROVE",) * rounds,
            round_proposer_payoff=(0.0,) * rounds, round_validator_payoff=(0.0,) * rounds,
        )  # fmt: skip

    m = compute_metrics([record(2, 3.0, 2, 1, 1, (0.5, 0.25)), record(6, 9.0, 3, 3, 1, (0.5,) * 6)])
    assert m["rounds"] == 4.0 and m["welfare"] == 12.0 / 8 and m["episode_welfare"] == 6.0
    assert m["approval_rate"] == 5 / 8 and m["audit_rate"] == 4 / 8 and m["clean_audit_rate"] == 2 / 4
    assert m["mean_q"] == (0.75 + 3.0) / 8 and m["noncompliant_misreport_rate"] == 2 / 4
    assert m["audit_cost"] == pytest.approx(0.4 / 8)


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------
def test_the_configuration_holds_the_stage_game_and_keys_flat() -> None:
    config = RepeatedConfig.from_preset("paper_scripted", q=0.6, V=2, rounds=3, audit_policy="trigger")
    assert config.stage == ExchangeAuditConfig.from_preset("paper_scripted", q=0.6, V=2)
    assert config.q == 0.6 and config.rounds == 3
    data = config.to_dict()
    assert data["V"] == 2.0 and data["audit_policy"] == "trigger" and "stage" not in data
    assert "miss_intent" not in data  # (the stage game keys its defaults as it always did)
    assert RepeatedConfig.from_dict(data) == config and hash(RepeatedConfig.from_dict(data)) == hash(config)
    assert not set(ExchangeAuditConfig.field_names()) & set(RepeatedConfig.own_field_names())
    assert RepeatedConfig().stage == ExchangeAuditConfig()


@pytest.mark.parametrize(
    "fields, match",
    [
        ({"rounds": 0}, r"^rounds must be an integer in \[1, 100000\], got 0$"),
        ({"continuation": 1.5}, r"^continuation must be a number in \[0, 1\], got 1\.5$"),
        ({"audit_policy": "random"}, r"^audit_policy must be one of \('fixed', 'decay', 'trigger'\), got 'random'$"),
        ({"gamma": -0.1}, r"^gamma must be a number in \[0, 1\]"),
        ({"punish_rounds": 0}, r"^punish_rounds must be an integer in \[1, 100000\]"),
        ({"reset_on_fail": "yes"}, r"^reset_on_fail must be True or False"),
        ({"audit_policy": "decay", "q": 0.2, "q_min": 0.5}, r"^q_min \(0\.5\) must not exceed q \(0\.2\)"),
        ({"q": 2.0}, r"^q must be a number in \[0, 1\]"),
        ({"round": 3}, r"^unknown exchange-audit-repeated parameter\(s\) \['round'\]; valid names: q, B, "),
    ],
)
def test_a_bad_field_is_one_line_naming_it(fields: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        RepeatedConfig().replace(**fields)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match=match):
        exchange_audit_repeated_v0.env(**fields)


def test_a_decay_floor_above_q_is_one_line_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from eq_env.cli import main

    argv = ["play", "--env", "exchange-audit-repeated", "--audit-policy", "decay", "--q", "0.1", "--q-min", "0.4"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err == "eq-env play: error: q_min (0.4) must not exceed q (0.1): the decay policy starts at q and "
        "decays towards q_min"
    )


def test_play_runs_the_repeated_game_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from eq_env.cli import main

    argv = ["play", "--env", "exchange-audit-repeated", "--rounds", "3", "--episodes", "4", "--audit-policy",
            "decay", "--q", "1", "--gamma", "0.5", "--json"]  # fmt: skip
    assert main(argv) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["config"]["rounds"] == 3 and out["metrics"]["rounds"]["mean"] == 3.0
    assert 0.25 <= out["metrics"]["mean_q"]["mean"] <= 1.0


# ---------------------------------------------------------------------------
# The proposer's Gymnasium view
# ---------------------------------------------------------------------------
def test_the_view_passes_the_checkers_and_plays_the_environment() -> None:
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    from eq_env.exchange_audit.repeated.views import FEATURES, RepeatedProposerEnv

    for encoding in ("multidiscrete", "strategy"):
        view = gymnasium.make("eq_env/ExchangeAuditRepeatedProposer-v0", preset="paper_scripted", rounds=5,
                              action_encoding=encoding).unwrapped  # fmt: skip
        check_env(view, skip_render_check=True)
        assert view.observation_space.shape == (len(FEATURES),)
    view = RepeatedProposerEnv(preset="paper_scripted", rounds=4, audit_policy="trigger", q=0.5,
                               action_encoding="strategy")  # fmt: skip
    env = raw_env(preset="paper_scripted", rounds=4, audit_policy="trigger", q=0.5, reward_mode="individual")
    from eq_env.baselines.exchange_audit.scripted import RuleValidator, StrategicProposer

    liar, rule = StrategicProposer(p=1.0, truthful_claims=True, claims_from="truth", words=0), RuleValidator()
    view.reset(seed=3)
    env.reset(seed=3)
    done, rewards = False, []
    while not done:
        env.step(liar.act(env.observe(P)))
        env.step(rule.act(env.observe(V)))
        _, reward, term, trunc, info = view.step(1)  # (1: shade, the liar above)
        rewards.append(reward)
        assert reward == env.rewards[P] and info["round"] == env.game.history[-1].round
        done = term or trunc
    assert len(rewards) == 4 and [r.q for r in view.env.game.history] == [r.q for r in env.game.history]
    with pytest.raises(ValueError, match="outside Discrete"):
        view.reset()
        view.step(3)


def test_the_manuals_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import re

    from eq_env.exchange_audit.repeated import env as manual

    (code,) = re.findall(r"```python\n(.*?)```", manual.__doc__ or "", re.S)
    exec(compile(code, "the repeated game's manual", "exec"), {})
    qs = eval(capsys.readouterr().out)  # (the example prints each round's q)
    assert len(qs) == 8 and qs[:2] == [1.0, 0.5] and all(q >= 0.1 for q in qs)


@pytest.mark.parametrize("encoding", ["multidiscrete", "strategy"])
def test_the_proposer_view_plays_a_richer_claim_schema(encoding: str) -> None:
    # The view's artifact space is the stage game's schema's (a 3 per added claim), and its actions are encoded
    # with that schema; a partial audit of the six claims runs in every round.
    env = gymnasium.make("eq_env/ExchangeAuditRepeatedProposer-v0", claim_schema="rich", B=2, q=1.0,
                         action_encoding=encoding, rounds=5)  # fmt: skip
    if encoding == "multidiscrete":
        assert list(env.action_space.nvec) == [2, 2, 2, 3, 3, 3, 3, 3, 3]
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(60):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            env.reset()
    env.close()


def test_the_one_shot_llm_players_play_the_repeated_game_and_its_dry_run_shows_round_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``llm`` was no policy of the repeated game ("unknown policy"), and ``--dry-run`` said nothing would be sent."""
    from eq_env.agents.exchange_audit import LLMProposer, LLMValidator
    from eq_env.cli import main
    from eq_env.core.policy import make_policy

    assert isinstance(make_policy("llm:model=m", "proposer", ID), LLMProposer)
    assert isinstance(make_policy("llm:model=m", "validator", ID), LLMValidator)
    assert (
        main(["play", "--env", "exchange-audit-repeated", "--proposer", "llm", "--validator", "llm", "--dry-run"]) == 0
    )
    out = capsys.readouterr().out
    assert "===== proposer: LLMProposer" in out and "===== validator: LLMValidator" in out
    assert "<observation>" in out
