"""The belief-coordination game: the simulated answerer's behaviour, the rules, the environment and its batch
engine (equal episode by episode), bad input, records."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest

from eq_env import belief_coordination_v0 as bc
from eq_env.belief_coordination import batch as engine
from eq_env.belief_coordination import rules
from eq_env.belief_coordination.answerers import SimulatedAnswerer, SimulationParams
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.records import EpisodeRecord
from eq_env.core.runner import play


def _play(batch, config, t, p, coordinator="majority"):
    return engine.play(batch, config, engine.fixed_chooser(t, p), coordinator=coordinator)


@pytest.fixture(scope="module")
def easy_hard():
    cfg = BeliefCoordinationConfig(n_executors=5)
    easy = engine.episodes_batch(replace(cfg, difficulty=0.0), 1, range(1500))
    hard = engine.episodes_batch(replace(cfg, difficulty=1.0), 1, range(1500))
    return cfg, easy, hard


# -- the simulated answerer's model: T and p matter as they do for real models ------------------------------
def test_low_temperature_is_best_on_easy_questions_high_on_hard(easy_hard):
    cfg, easy, hard = easy_hard
    acc = {(name, t): _play(b, cfg, t, 1.2).ts.mean() for name, b in (("easy", easy), ("hard", hard))
           for t in (0.1, 0.7, 2.0)}  # fmt: skip
    assert acc["easy", 0.1] > acc["easy", 2.0] + 0.05
    assert acc["hard", 2.0] > acc["hard", 0.1] + 0.3  # the trap: greedy decoding is confidently wrong
    assert acc["easy", 0.1] > 0.9 and acc["hard", 0.1] < 0.1


def test_agreement_falls_and_single_answers_get_less_accurate_as_temperature_rises(easy_hard):
    cfg, easy, _ = easy_hard
    single = replace(cfg, n_executors=1)
    agreement = [_play(easy, cfg, t, 1.2).al.mean() for t in (0.1, 0.5, 1.0, 2.0)]
    assert all(a > b for a, b in itertools.pairwise(agreement)), agreement
    per_answer = [_play(easy, single, t, 1.2).cc.mean() for t in (0.1, 1.0, 2.0)]
    assert per_answer[0] > per_answer[1] > per_answer[2], per_answer


def test_the_repetition_penalty_has_an_interior_optimum(easy_hard):
    cfg, easy, _ = easy_hard
    no_answer = {p: np.isnan(_play(easy, cfg, 0.1, p).values).mean() for p in (1.0, 1.2, 2.0)}
    assert no_answer[1.0] > 0.05 > no_answer[1.2]  # loops without a penalty
    reward = {p: _play(easy, cfg, 0.1, p).reward.mean() for p in (1.0, 1.2, 2.0)}
    assert reward[1.2] > reward[1.0] and reward[1.2] > reward[2.0]
    loops = _play(easy, cfg, 0.1, 1.0)
    assert (loops.completion_tokens > _play(easy, cfg, 0.1, 1.2).completion_tokens).mean() > 0.05


def test_errors_are_correlated_across_executors(easy_hard):
    cfg, _, hard = easy_hard
    out = _play(hard, cfg, 0.1, 1.2)
    wrong = ~rules.equal(out.values, out.values[:, :1]) | np.isnan(out.values)
    assert wrong.mean() < 0.1  # at low T every executor gives the same (wrong) answer


def test_the_null_instrument_ignores_temperature_and_penalty(easy_hard):
    cfg, easy, _ = easy_hard
    null = replace(cfg, sensitive=False)
    a, b = _play(easy, null, 0.1, 1.0), _play(easy, null, 2.0, 2.0)
    assert np.array_equal(a.values, b.values, equal_nan=True) and np.array_equal(a.tokens, b.tokens)


def test_debate_moves_answers_toward_the_others():
    cfg = BeliefCoordinationConfig(n_executors=4, rounds=3)
    batch = engine.episodes_batch(cfg, 2, range(800))
    debate = _play(batch, cfg, 0.7, 1.1)
    once = _play(batch, replace(cfg, rounds=1), 0.7, 1.1)
    assert debate.al.mean() > once.al.mean()
    assert debate.tokens.mean() > 2.5 * once.tokens.mean()  # reading the others costs prompt tokens


# -- rules ------------------------------------------------------------------------------------------------
def test_reward_terms_by_hand():
    values = np.array([[5.0, 5.0, 7.0], [np.nan, 3.0, 3.0], [1.0, 2.0, 3.0]])
    committed = rules.majority(values)
    assert committed.tolist() == [0, 1, 0]  # ties go to the lowest index; no number never wins
    terms = rules.reward_terms(values, committed, np.array([5.0, 4.0, 1.0]))
    assert terms["ts"].tolist() == [1.0, 0.0, 1.0]
    assert np.allclose(terms["al"], [2 / 3, 2 / 3, 1 / 3])
    assert np.allclose(terms["cc"], [2 / 3, 0.0, 1 / 3])
    assert np.allclose(rules.reward(terms), 0.5 * terms["ts"] + 0.3 * terms["al"] + 0.2 * terms["cc"])
    assert rules.equal(np.array([1234.0]), np.array([1234.0000001])).all()
    assert not rules.equal(np.array([np.nan]), np.array([np.nan])).any()


def test_equal_answers_are_within_a_millionth():
    """Pinned: answers are exact numbers: 1234.0000001 is 1234, but 1234.0005 and 1234.000002 are not."""
    a = np.array([1234.0000001, 1234.0005, 1234.000002, 1234.001, 0.0000005])
    b = np.array([1234.0, 1234.0, 1234.0, 1234.0, 0.0])
    assert rules.equal(a, b).tolist() == [True, False, False, False, True]
    assert rules.equal(b, a).tolist() == [True, False, False, False, True]


def test_the_debate_bonus_by_hand():
    """Pinned (module docstring of the answerers): in a debate round each candidate's path score rises by
    conformity (1.0) times the share of the *other* executors who gave it, and the correct answer's by
    verification (0.5) more when at least one other executor gave it."""
    from eq_env.belief_coordination.answerers import debate_bonus

    params = SimulationParams()
    assert (params.conformity, params.verification, params.noise_answers) == (1.0, 0.5, 6)
    # four executors: correct (0), correct, the trap (1), no answer (-1)
    bonus = debate_bonus(np.array([0, 0, 1, -1]), params)
    assert bonus.shape == (4, 8)
    third = 1 / 3
    want = np.zeros((4, 8))
    want[0, :2] = [third + 0.5, third]  # the others: one correct, one trap (of three others)
    want[1, :2] = [third + 0.5, third]
    want[2, :2] = [2 * third + 0.5, 0.0]  # the others: two correct
    want[3, :2] = [2 * third + 0.5, third]
    assert np.allclose(bonus, want, rtol=0, atol=1e-12)
    # nobody else gave the correct answer: no verification bonus, only conformity to the trap
    pair = debate_bonus(np.array([1, 1]), params)
    assert np.allclose(pair, [[0, 1, 0, 0, 0, 0, 0, 0]] * 2, rtol=0, atol=1e-12)


def test_token_counts_round_up():
    """Pinned: the simulated prompt is 60 tokens of instructions plus the question at four characters a token,
    rounded up; a debate round adds the other replies read, each rounded up (at least one token)."""
    from eq_env.belief_coordination.answerers import AnswerRequest, prompt_tokens
    from eq_env.belief_coordination.questions import Question

    def question(chars: int) -> Question:
        return Question("q", "x" * chars, 1.0, 1, 0.0)

    assert [prompt_tokens(question(c)) for c in (8, 9, 10, 11, 12, 13)] == [62, 63, 63, 63, 63, 64]
    q = question(10)
    debate = AnswerRequest(q, 0.7, 1.1, 0, round=1, others=("abcde", "", "abcd"), others_values=(1.0, None, 1.0))
    (answer,) = SimulatedAnswerer().answer([debate])
    assert answer.prompt_tokens == 63 + 2 + 1 + 1


# -- the environment ----------------------------------------------------------------------------------------
class Spy(SimulatedAnswerer):
    def __init__(self) -> None:
        super().__init__()
        self.requests = []

    def answer(self, requests):
        self.requests.extend(requests)
        return super().answer(requests)


def test_every_executor_sends_its_own_parameters():
    spy = Spy()
    env = bc.parallel_env(n_executors=3, answerer=spy)
    env.reset(seed=0)
    env.step({"executor_0": np.array([0.0, 0.0]), "executor_1": np.array([0.5, 0.5]),
              "executor_2": np.array([1.0, 1.0], np.float32), "coordinator": None})  # fmt: skip
    got = [(round(r.temperature, 4), round(r.penalty, 4), r.executor) for r in spy.requests]
    assert got == [(0.1, 1.0, 0), (1.05, 1.5, 1), (2.0, 2.0, 2)]  # (the original sent only executor 0's)


@pytest.mark.parametrize("kwargs", [{}, {"action_space": "grid"}, {"rounds": 3, "n_executors": 4},
                                    {"n_executors": 1}, {"sensitive": False, "n_executors": 5}])  # fmt: skip
def test_the_batch_engine_equals_the_environment_episode_by_episode(kwargs):
    cfg = BeliefCoordinationConfig(**kwargs)
    rng = np.random.default_rng(3)
    episodes = 60
    grid_index = rng.integers(0, cfg.grid_size, (episodes, cfg.rounds, cfg.n_executors))
    t, p = cfg.grid_point(grid_index)
    batch = engine.episodes_batch(cfg, 9, range(episodes))
    out = engine.play(batch, cfg, lambda r, f: (t[:, r], p[:, r]))
    env = bc.parallel_env(config=cfg)
    for i in range(episodes):
        obs, _ = env.reset(seed=9, options={"episode": i})
        r, prev = 0, None
        while env.agents:
            actions = {}
            for a in env.agents:
                if obs[a]["idle"]:
                    actions[a] = None
                elif a == "coordinator":
                    actions[a] = int(np.argmax(obs[a]["observation"][1::3] * obs[a]["action_mask"]))
                elif cfg.action_space == "grid":
                    actions[a] = int(grid_index[i, r, int(a[-1])])
                else:  # the Box: the normalised point of the same (T, p)
                    j = int(a.split("_")[1])
                    x = (t[i, r, j] - cfg.temperature_min) / (cfg.temperature_max - cfg.temperature_min)
                    y = (p[i, r, j] - cfg.penalty_min) / (cfg.penalty_max - cfg.penalty_min)
                    actions[a] = np.array([x, y])
            if any(not o["idle"] for a, o in obs.items() if a != "coordinator"):
                feats = np.stack([obs[a]["observation"] for a in cfg.executors])
                assert np.allclose(feats, engine.executor_features(batch.subset(np.array([i])), cfg, r,
                                                                   prev)[0])  # fmt: skip
            obs, rewards, term, _, _ = env.step(actions)
            prev = np.array([[_index(batch, i, v) for v in env.values()]])
            r += 1
        assert rewards["coordinator"] == pytest.approx(out.reward[i], abs=1e-12)
        assert env.committed == out.committed[i]
        assert np.array_equal(env.values(), out.values[i], equal_nan=True)
        tokens = sum(a.prompt_tokens + a.completion_tokens for row in env.replies for a in row)
        assert tokens == out.tokens[i]
        assert all(term.values())


def _index(batch, i, value):
    if np.isnan(value):
        return -1
    return int(np.flatnonzero(rules.equal(batch.candidates[i], np.full(batch.candidates.shape[1], value)))[0])


def test_idle_agents_are_ignored_and_bad_actions_named():
    env = bc.parallel_env(n_executors=2)
    env.reset(seed=0)
    ok = {"executor_0": np.array([0.2, 0.2]), "executor_1": np.array([0.2, 0.2])}
    for bad, match in ((np.array([np.nan, 0.2]), "executor_1"), (np.array([1.5, 0.2]), "executor_1"),
                       (np.array([0.1, 0.2, 0.3]), "executor_1"), ("hot", "executor_1")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            env.step({**ok, "executor_1": bad})
        assert env.round == 0  # nothing played
    with pytest.raises(ValueError, match="no action for executor_1"):
        env.step({"executor_0": ok["executor_0"]})
    env.step({**ok, "coordinator": "ignored: it is idle"})
    with pytest.raises(ValueError, match=r"coordinator: action must be an executor's index in \[0, 2\)"):
        env.step({"coordinator": 2})
    _, rewards, term, _, _ = env.step({"coordinator": 1, "executor_0": "ignored"})
    assert all(term.values()) and len(set(rewards.values())) == 1
    with pytest.raises(ValueError, match="call reset"):
        env.step({"coordinator": 0})
    grid = bc.parallel_env(action_space="grid")
    grid.reset(seed=0)
    with pytest.raises(ValueError, match=r"executor_0: action must be a grid index in \[0, 30\)"):
        grid.step({a: 30 for a in grid.agents})
    with pytest.raises(ValueError, match="temperature_min"):
        bc.parallel_env(temperature_min=1.5, temperature_max=1.0)
    with pytest.raises(ValueError, match="penalty_min must be a number in"):
        bc.parallel_env(penalty_min=0.5)  # (the original's 0.1-0.9 rewarded repetition)


def test_observations_say_who_acts():
    env = bc.parallel_env(n_executors=3, action_space="grid")
    obs, _ = env.reset(seed=4)
    assert [obs[a]["idle"] for a in env.possible_agents] == [0, 0, 0, 1]
    assert obs["coordinator"]["action_mask"].tolist() == [1, 0, 0]
    assert obs["executor_0"]["grid"].shape == (30, 2) and obs["executor_0"]["action_mask"].all()
    obs, *_ = env.step({a: 0 for a in env.config.executors})
    assert [obs[a]["idle"] for a in env.possible_agents] == [1, 1, 1, 0]
    assert obs["executor_1"]["action_mask"].tolist() == [1] + [0] * 29
    text = obs["coordinator"]["transcript"]
    assert text.count("[executor ") == 3 and "T=0.10 p=1.00" in text
    assert env.question.text[:50] in obs["coordinator"]["question"]


def test_questions_from_a_file_and_non_ascii_text(tmp_path):
    path = tmp_path / "q.jsonl"
    rows = [{"question": "Über 3 + 4 — how many?", "answer": "3 + 4 = 7\n#### 7"},
            {"question": "What is 10 / 2?", "answer": "#### 5"}]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = bc.parallel_env(questions=str(path), render_mode="ansi")
    seen = set()
    for i in range(4):
        obs, _ = env.reset(seed=1, options={"episode": i})
        seen.add(env.question.qid)
        assert env.observation_space("coordinator")["question"].contains(obs["coordinator"]["question"])
    assert seen == {"q.jsonl:1", "q.jsonl:2"}
    with pytest.raises(ValueError, match="line 1"):
        path.write_text("{not json\n")
        bc.parallel_env(questions=path)


def test_the_runner_plays_it_and_records_round_trip():
    records = play("belief-coordination", BeliefCoordinationConfig(n_executors=3),
                   {"executor": "schedule", "coordinator": "majority"}, episodes=20, seed=5)  # fmt: skip
    again = play("belief-coordination", BeliefCoordinationConfig(n_executors=3),
                 {"executor": "schedule", "coordinator": "majority"}, episodes=20, seed=5)  # fmt: skip
    assert [r.to_dict() for r in records] == [r.to_dict() for r in again]
    temps = records[0].temperatures
    assert temps == pytest.approx((0.3, 0.75, 1.2), abs=1e-6)  # each executor its own place in the schedule
    for r in records:
        back = EpisodeRecord.from_dict(json.loads(json.dumps(r.to_dict())))
        assert back == r
    bad = {**records[0].to_dict(), "committed": 7}
    with pytest.raises(ValueError, match="committed"):
        EpisodeRecord.from_dict(bad)
    with pytest.raises(ValueError, match="values must be"):
        EpisodeRecord.from_dict({**records[0].to_dict(), "values": ["x"]})


def test_simulation_params_are_checked():
    with pytest.raises(ValueError, match="loop_rate"):
        SimulationParams(loop_rate=2.0)
    with pytest.raises(ValueError, match="correct_paths"):
        SimulationParams(correct_paths=0)
