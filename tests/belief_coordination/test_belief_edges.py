"""Belief coordination's edges: each test either fails on a bug found by attacking the game (and passes once it
is fixed) or pins a behaviour checked and found right. Findings are numbered ``F<k>``; pins say ``pin``."""

from __future__ import annotations

import json
import math
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from eq_env import belief_coordination_v0 as bc
from eq_env.baselines.belief_coordination.scripted import MajorityCoordinator
from eq_env.belief_coordination import batch as engine
from eq_env.belief_coordination import rules
from eq_env.belief_coordination.answerers import SimulatedAnswerer, SimulationParams, question_traits
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.questions import Question, load_jsonl
from eq_env.cli import main
from eq_env.core.runner import play
from eq_env.studies.belief_coordination import reproduce

ROOT = Path(__file__).resolve().parents[2]


# -- helpers ---------------------------------------------------------------------------------------------------
def policy_index(features: np.ndarray, executor: int, round_: int, size: int) -> int:
    """A deterministic grid choice from one executor's observation vector (so that env and engine can only agree
    if they build the same features)."""
    key = int(np.round(np.asarray(features, float) * 997).astype(np.int64).sum()) * 31 + executor * 7 + round_ * 13
    return key % size


def feature_chooser(config: BeliefCoordinationConfig) -> engine.Chooser:
    def choose(r: int, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        index = np.array([[policy_index(f[b, i], i, r, config.grid_size) for i in range(f.shape[1])]
                          for b in range(f.shape[0])])  # fmt: skip
        return config.grid_point(index)

    return choose


def play_env_episode(env: bc.BeliefCoordinationParallelEnv, seed: int, episode: int) -> float:
    """One episode of a grid environment: executors by :func:`policy_index`, the majority coordinator."""
    cfg = env.config
    obs, _ = env.reset(seed=seed, options={"episode": episode})
    r, rewards = 0, {}
    while env.agents:
        actions = {}
        for a in env.agents:
            if obs[a]["idle"]:
                actions[a] = None
            elif a == "coordinator":
                actions[a] = MajorityCoordinator().act(obs[a])
            else:
                actions[a] = policy_index(obs[a]["observation"], int(a.split("_")[1]), r, cfg.grid_size)
        obs, rewards, *_ = env.step(actions)
        r += 1
    return float(rewards["coordinator"])


def env_equals_engine(cfg: BeliefCoordinationConfig, seed: int, episodes: int,
                      questions: list[Question] | None = None) -> list[int]:  # fmt: skip
    """The episodes where the environment and the batch engine disagree (values, commitment, reward, tokens)."""
    batch = engine.episodes_batch(cfg, seed, range(episodes), questions)
    out = engine.play(batch, cfg, feature_chooser(cfg))
    env = bc.parallel_env(config=cfg, questions=questions)
    bad = []
    for e in range(episodes):
        reward = play_env_episode(env, seed, e)
        tokens = sum(x.prompt_tokens + x.completion_tokens for row in env.replies for x in row)
        same = (reward == out.reward[e] and env.committed == out.committed[e] and tokens == out.tokens[e]
                and np.array_equal(env.values(), out.values[e], equal_nan=True))  # fmt: skip
        if not same:
            bad.append(e)
    return bad


def grid_player(cfg: BeliefCoordinationConfig, batch: engine.Batch):
    """F2's ``play_actions`` on the batch engine: one profile (B, N), or M profiles stacked (M·B, N)."""

    def play_actions(profiles: np.ndarray) -> np.ndarray:
        tiled = batch.subset(np.tile(np.arange(len(batch)), len(profiles) // len(batch)))
        return engine.play(tiled, cfg, reproduce._grid_chooser(cfg, profiles)).reward

    return play_actions


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def reproduce_cli(out: Path, *flags: str) -> int:
    try:
        return main(["reproduce", "--env", "belief-coordination", "--out", str(out), *flags])
    except SystemExit as exit_:
        return int(exit_.code or 0)


# =============================================================================================================
# F1 (bug): answers of a million or more: a wrong number counts as correct, and equality is not symmetric
# =============================================================================================================
def test_f1_a_wrong_large_answer_is_not_counted_correct():
    assert not rules.equal(np.array([5_000_003.0]), np.array([5_000_000.0]))[0]
    assert not rules.equal(np.array([1_000_001.0]), np.array([1_000_000.0]))[0]  # (the generator reaches 10^6)
    terms = rules.reward_terms(np.array([[5_000_003.0, 5_000_003.0]]), np.array([0]), np.array([5_000_000.0]))
    assert terms["ts"][0] == 0.0 and terms["cc"][0] == 0.0


def test_f1_equality_is_symmetric():
    a, b = np.array([999_999.5]), np.array([1_000_000.5])
    assert rules.equal(a, b)[0] == rules.equal(b, a)[0]


def test_f1_env_equals_engine_on_large_answers_in_a_debate():
    qs = [Question(f"big{i}", f"How many grains are in silo {i}?", 5_000_000.0 + i, 4, 0.5) for i in range(30)]
    cfg = BeliefCoordinationConfig(n_executors=5, rounds=3, action_space="grid")
    assert env_equals_engine(cfg, 1, 30, qs) == []


# =============================================================================================================
# F2 (bug): the simulated answerer keys its traits (and groups requests) by qid, not by the question
# =============================================================================================================
def _values_are_candidates(env: bc.BeliefCoordinationParallelEnv) -> bool:
    candidates = question_traits(env.question, SimulationParams()).values
    return all(math.isnan(v) or any(abs(v - c) < 1e-9 for c in candidates) for v in env.values())


def test_f2_two_questions_with_one_qid_are_answered_each_as_itself():
    qs = [Question("q", "What is 2 + 3?", 5.0, 1, 0.0), Question("q", "What is 40 + 2?", 42.0, 1, 0.0)]
    env = bc.parallel_env(n_executors=3, questions=qs)
    answered = set()
    for e in range(12):
        env.reset(seed=0, options={"episode": e})
        env.step({a: np.array([0.0, 0.2], np.float32) for a in env.config.executors})
        answered.add(env.question.answer)
        assert _values_are_candidates(env), (env.question.text, env.values())
    assert answered == {5.0, 42.0}


def test_f2_one_answerer_shared_by_two_difficulties():
    shared = SimulatedAnswerer()
    for difficulty in (0.0, 1.0):  # episode 0 of seed 0 is another question at each difficulty, same qid
        env = bc.parallel_env(n_executors=3, answerer=shared, difficulty=difficulty)
        env.reset(seed=0, options={"episode": 0})
        env.step({a: np.array([0.0, 0.2], np.float32) for a in env.config.executors})
        assert _values_are_candidates(env), (difficulty, env.question.answer, env.values())


# =============================================================================================================
# F3 (bug): F2's deviation for a difficulty level with no tuning question is grid point 0
# =============================================================================================================
def test_f3_no_tuning_data_means_no_arbitrary_deviation():
    cfg = BeliefCoordinationConfig(n_executors=2, action_space="grid", grid_temperatures=3, grid_penalties=1)
    b = 40
    actions = np.ones((b, 2), np.int64)  # the profile: grid point 1, the best there is
    difficulty = np.arange(b) / (b - 1)  # every question its own level (a file with a continuous "difficulty")

    def play_actions(a: np.ndarray) -> np.ndarray:
        return (a == 1).mean(axis=1).astype(float)  # the reward: the share of executors at grid point 1

    f2 = reproduce.equilibrium_gaps(cfg, actions, difficulty, play_actions)
    # no executor can gain by deviating; a deviation nobody chose on data must not be measured
    assert f2["gain"] == pytest.approx([0.0, 0.0]) and f2["epsilon"] == pytest.approx(0.0), f2


def test_f3_the_llm_paths_default_f2_sample_has_levels_without_tuning_questions():
    # (why F3 matters beyond files: --equilibrium-questions 20 over 8 difficulty levels)
    cfg = reproduce._config(3, "sensitive")
    d = engine.episodes_batch(cfg, 0, range(20)).difficulty
    assert any(lv not in set(d[::2]) for lv in d[1::2])


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_pin_f2_equals_a_brute_force_through_the_environment():
    cfg = BeliefCoordinationConfig(n_executors=2, action_space="grid", grid_temperatures=3, grid_penalties=2)
    b, seed, g = 48, 3, cfg.grid_size
    batch = engine.episodes_batch(cfg, seed, range(b))
    actions = np.stack([(np.round(batch.difficulty * 7).astype(int) + 2 * i) % g for i in range(2)], axis=1)
    env = bc.parallel_env(config=cfg)

    def reward(e: int, acts: np.ndarray) -> float:
        obs, _ = env.reset(seed=seed, options={"episode": e})
        obs, *_ = env.step({f"executor_{i}": int(acts[i]) for i in range(2)})
        _, rew, *_ = env.step({"coordinator": MajorityCoordinator().act(obs["coordinator"])})
        return float(rew["coordinator"])

    base = np.array([reward(e, actions[e]) for e in range(b)])
    dev = np.empty((2, g, b))
    for i in range(2):
        for k in range(g):
            for e in range(b):
                a = actions[e].copy()
                a[i] = k
                dev[i, k, e] = reward(e, a)
    halves = [np.arange(b) % 2 == 0, np.arange(b) % 2 == 1]

    def choose(i: int, on: np.ndarray) -> np.ndarray:
        """Executor i's gain on every question, its deviation chosen per level on the questions ``on``."""
        gain = np.zeros(b)
        for level in np.unique(batch.difficulty):
            at = batch.difficulty == level
            if (at & on).any():
                k = max(range(g), key=lambda k: (dev[i, k, at & on].mean(), -k))
                gain[at] = dev[i, k, at] - base[at]
        return gain

    # cross-fitting: each half chooses for the other; ε: the executor the choosing half found best
    gains, in_sample, composite = [], [], np.zeros(b)
    for i in range(2):
        held = np.where(halves[1], choose(i, halves[0]), choose(i, halves[1]))
        gains.append(held.mean())
        in_sample.append(choose(i, np.ones(b, bool)).mean())
    for h in (0, 1):
        best = max(range(2), key=lambda i: (choose(i, halves[h])[halves[h]].mean(), -i))
        composite[halves[1 - h]] = choose(best, halves[h])[halves[1 - h]]
    f2 = reproduce.equilibrium_gaps(cfg, actions, batch.difficulty, grid_player(cfg, batch))
    assert f2["gain"] == pytest.approx(gains, abs=1e-12)
    assert f2["gain_in_sample"] == pytest.approx(in_sample, abs=1e-12)
    assert f2["epsilon"] == pytest.approx(composite.mean(), abs=1e-12)
    assert f2["largest_gain"] == pytest.approx(max(gains), abs=1e-12) and f2["questions"] == b


# =============================================================================================================
# F4 (bug): reproduce dies after all the work when the held-out questions have no easy or no hard one
# =============================================================================================================
@pytest.mark.slow
def test_f4_reproduce_survives_held_out_questions_of_one_middling_difficulty(tmp_path, capsys):
    file = write_jsonl(tmp_path / "mid.jsonl", [{"question": f"What is {i} + 3?", "answer": f"#### {i + 3}",
                                                  "difficulty": 0.5} for i in range(4)])  # fmt: skip
    status = reproduce_cli(tmp_path / "o", "--seeds", "1", "--n-executors", "1", "--questions", "4", "--train-steps",
                           "1", "--jobs", "1", "--no-null", "--questions-file", str(file))  # fmt: skip
    err = capsys.readouterr().err
    assert status == 0, err  # (now: "Out of range float values are not JSON compliant", every run lost)
    assert len((tmp_path / "o" / "results.jsonl").read_text().splitlines()) == 1


# =============================================================================================================
# F5 (bug): a --questions-file is known to the resume by its file name only
# =============================================================================================================
@pytest.mark.slow
def test_f5_another_file_of_the_same_name_is_not_served_stale_results(tmp_path):
    from eq_env.belief_coordination.questions import generated_question

    def rows(seed: int) -> list[dict]:
        return [{"question": (q := generated_question(seed, i)).text, "answer": f"#### {q.answer}",
                 "difficulty": (0.0, 1.0, 0.5)[i % 3]} for i in range(6)]  # fmt: skip

    a, b = write_jsonl(tmp_path / "a" / "q.jsonl", rows(0)), write_jsonl(tmp_path / "b" / "q.jsonl", rows(9))
    flags = ["--seeds", "1", "--n-executors", "2", "--questions", "6", "--train-steps", "1", "--jobs", "1", "--no-null"]
    assert reproduce_cli(tmp_path / "shared", *flags, "--questions-file", str(a)) == 0
    assert reproduce_cli(tmp_path / "shared", *flags, "--questions-file", str(b)) == 0
    assert reproduce_cli(tmp_path / "fresh", *flags, "--questions-file", str(b)) == 0
    assert (tmp_path / "shared" / "methods.md").read_text() == (tmp_path / "fresh" / "methods.md").read_text()


# =============================================================================================================
# F6 (bug): a lone surrogate escape in a question file loads, then playing it crashes
# =============================================================================================================
def test_f6_a_lone_surrogate_is_refused_at_load_or_played(tmp_path):
    path = tmp_path / "sur.jsonl"
    path.write_text('{"question": "How many \\ud83d apples?", "answer": "#### 3"}\n')
    try:
        questions = load_jsonl(path)
    except ValueError as e:
        assert "line 1" in str(e)
        return
    env = bc.parallel_env(n_executors=2, questions=questions)
    env.reset(seed=0)
    env.step({a: np.array([0.5, 0.5]) for a in env.config.executors})  # now: UnicodeEncodeError in Question.key


# =============================================================================================================
# F7 (bug): a results.jsonl record with its key but missing or mistyped fields: a traceback / an unnamed error
# =============================================================================================================
RESULT_FLAGS = ["--seeds", "1", "--n-executors", "2", "--questions", "40", "--train-steps", "3", "--jobs", "1",
                "--no-null"]  # fmt: skip
# the key of the run these flags plan, from the command's own function: a key of another layout is no run of
# this command's, left alone, and the run is simply redone (which proves nothing about a damaged record)
RESULT_KEY = reproduce.run_key("sensitive", 2, 0, reproduce.Options(questions=40, train_steps=3))


@pytest.mark.parametrize("record", [{"key": RESULT_KEY}, {"key": RESULT_KEY, "methods": "x"}])
def test_f7_a_damaged_results_record_gets_one_line_naming_the_file(tmp_path, capsys, record):
    out = tmp_path / "o"
    write_jsonl(out / "results.jsonl", [record])
    try:
        status = reproduce_cli(out, *RESULT_FLAGS)
    except Exception as e:  # that is the finding: it escapes as a traceback
        pytest.fail(f"{type(e).__name__}: {e} escaped")
    err = capsys.readouterr().err
    assert status == 0 or (status == 2 and "results.jsonl" in err and len(err.strip().splitlines()) == 1), err


# =============================================================================================================
# F8 (bug): a Discrete action that is in the action space (a 0-d integer array) is refused
# =============================================================================================================
def test_f8_zero_dim_integer_arrays_are_actions_of_a_discrete_space():
    env = bc.parallel_env(n_executors=2, action_space="grid")
    env.reset(seed=0)
    action = np.array(3)
    assert env.action_space("executor_0").contains(action)
    env.step({"executor_0": action, "executor_1": np.array(5)})
    commit = np.array(1)
    assert env.action_space("coordinator").contains(commit)
    env.step({"coordinator": commit})
    assert env.committed == 1


# =============================================================================================================
# F9 (nit): Box actions of the wrong shape, or complex, are played (the imaginary part silently dropped)
# =============================================================================================================
@pytest.mark.parametrize("bad", [np.array([[0.5, 0.5]]), np.array([[0.5], [0.5]]), np.array([0.5 + 1j, 0.5])],
                         ids=["1x2", "2x1", "complex"])  # fmt: skip
def test_f9_box_actions_outside_the_space_are_refused(bad):
    env = bc.parallel_env(n_executors=2)
    env.reset(seed=0)
    assert not env.action_space("executor_1").contains(bad)
    with pytest.raises(ValueError, match="executor_1"):
        env.step({"executor_0": np.array([0.5, 0.5], np.float32), "executor_1": bad})
    assert env.round == 0


# =============================================================================================================
# F10 (bug): the "first" coordinator commits executor 0 in the engine, the lone numbered executor in the runner
# =============================================================================================================
def test_f10_first_coordinator_commits_the_same_in_runner_and_engine():
    cfg = BeliefCoordinationConfig(n_executors=3)
    records = play("belief-coordination", cfg, {"executor": "fixed:temperature=0.1,penalty=1.0",
                                                "coordinator": "first"}, episodes=100, seed=0)  # fmt: skip
    out = engine.play(engine.episodes_batch(cfg, 0, range(100)), cfg, engine.fixed_chooser(0.1, 1.0),
                      coordinator="first")  # fmt: skip
    differ = [i for i, r in enumerate(records) if r.committed != out.committed[i]]
    assert differ == [], [(i, records[i].values) for i in differ[:3]]


# =============================================================================================================
# F11 (nit): ECON (rounds=1 only, its constructor says) plays a debate silently, on features it never saw
# =============================================================================================================
def test_f11_econ_refuses_a_debate_environment():
    from eq_env.baselines.belief_coordination.econ import ECON
    from eq_env.core.policy import PolicySetupError

    cfg = BeliefCoordinationConfig(n_executors=2, action_space="grid")
    policy = ECON.untrained(cfg, seed=0)
    env = bc.parallel_env(config=replace(cfg, rounds=3))
    obs, _ = env.reset(seed=0)
    with pytest.raises(PolicySetupError):  # at the latest in round 2, on features ECON never trained on
        while env.agents:
            if obs["coordinator"]["idle"]:
                actions = policy.act_joint({a: obs[a] for a in cfg.executors})
            else:
                actions = {"coordinator": MajorityCoordinator().act(obs["coordinator"])}
            obs, *_ = env.step(actions)


# =============================================================================================================
# F12 (nit): a deeply nested econ.json escapes as a RecursionError traceback
# =============================================================================================================
def test_f12_a_deeply_nested_econ_json_is_one_line(tmp_path):
    from eq_env.baselines.belief_coordination.econ import ECON

    cfg = BeliefCoordinationConfig(n_executors=2, action_space="grid")
    ECON.untrained(cfg, seed=0).save(tmp_path / "m")
    (tmp_path / "m" / "econ.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=r"econ\.json"):
        ECON.load(tmp_path / "m")


# =============================================================================================================
# F13 (nit): an unknown agent in the parallel step's actions is ignored
# =============================================================================================================
def test_f13_an_unknown_agent_in_the_actions_is_named():
    env = bc.parallel_env(n_executors=3)
    env.reset(seed=0)
    actions = {a: np.array([0.5, 0.5], np.float32) for a in env.config.executors}
    with pytest.raises(ValueError, match="executor_9"):
        env.step({**actions, "executor_9": np.array([0.5, 0.5], np.float32)})


# =============================================================================================================
# F14 (nit): SimulationParams accepts more noise answers than a question has distinct slips: a hang
# =============================================================================================================
def test_f14_question_traits_never_hang():
    q = Question("zero", "How many are left?", 0.0, 1, 0.0)

    def timeout(signum, frame):  # a hang guard, not a measurement: the call takes milliseconds
        raise TimeoutError("question_traits did not return (a hang)")

    previous = signal.signal(signal.SIGALRM, timeout)
    signal.setitimer(signal.ITIMER_REAL, 60.0)
    try:
        try:
            params = SimulationParams(noise_answers=40)
        except ValueError:
            return  # refused up front: fine
        question_traits(q, params)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# =============================================================================================================
# F15 (nit): reproduce's "random" baseline: executor j's choices depend on N (no common random numbers across N)
# =============================================================================================================
def test_f15_random_baseline_choices_of_an_executor_do_not_depend_on_the_team_size():
    small, large = reproduce._config(3, "sensitive"), reproduce._config(5, "sensitive")
    f3, f5 = np.zeros((50, 3, 5), np.float32), np.zeros((50, 5, 5), np.float32)
    t3, p3 = reproduce._random(small, 0)(0, f3)
    t5, p5 = reproduce._random(large, 0)(0, f5)
    assert np.array_equal(t3, t5[:, :3]) and np.array_equal(p3, p5[:, :3])


# =============================================================================================================
# F16 (nit): solution "lines" are split on U+2028 and other separators, not on newlines
# =============================================================================================================
def test_f16_solution_steps_count_newline_separated_lines(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"question": "How many?", "answer": "3 apples\u2028 and that is all\n#### 3"}) + "\n")
    assert load_jsonl(path)[0].steps == 1


# =============================================================================================================
# F17 (doc mismatch): the summary's F2 and tokens sentences
# =============================================================================================================
def _fake_records() -> list[dict]:
    methods = ("single", "fixed", "random", "schedule", "tuned", "debate", "econ", "frozen")
    records = []
    for seed, econ_tokens in ((0, 500.0), (1, 1400.0)):  # ECON − debate tokens: −50% and +40%
        m = {k: {"accuracy": 0.5, "reward": 0.5, "alignment": 0.5, "contribution": 0.5, "tokens": 1000.0,
                 "temperature": 0.7, "penalty": 1.1, "no_answer": 0.0} for k in methods}  # fmt: skip
        m["econ"] = {**m["econ"], "tokens": econ_tokens}
        records.append({"key": f"k{seed}", "instrument": "sensitive", "n": 3, "seed": seed, "questions": 10,
                        "episodes": 90, "multi": "fixed", "failed": [], "methods": m,
                        "f2": {"epsilon": 0.01, "gain": [0.01, 0.0, 0.0], "largest_gain": 0.01}})  # fmt: skip
    return records


def test_f17_the_f2_sentence_says_deviations_are_on_the_grid():
    text = reproduce.summary(_fake_records(), reproduce.Options())
    f2 = next(line for line in text.splitlines() if "**F2**" in line)
    assert "grid" in f2, f2  # the 6 x 3 grid holds no p in (1, 1.5), where the answerer's best p lies


def test_f17_the_tokens_verdict_heeds_its_interval():
    text = reproduce.summary(_fake_records(), reproduce.Options())
    row = next(line for line in text.splitlines() if line.startswith("| 21.4% fewer tokens"))
    assert not row.rstrip().endswith("| fewer |"), row  # mean +5% with an interval far across 0


# =============================================================================================================
# Pins: what held up
# =============================================================================================================
def _random_configs(count: int, seed: int) -> list[BeliefCoordinationConfig]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        tmin = float(np.round(rng.uniform(0.01, 3), 2))
        pmin = float(np.round(rng.uniform(1, 3), 2))
        out.append(BeliefCoordinationConfig(
            n_executors=int(rng.integers(1, 17)), rounds=int(rng.integers(1, 6)), action_space="grid",
            temperature_min=tmin, temperature_max=float(np.round(rng.uniform(tmin, 5), 2)),
            penalty_min=pmin, penalty_max=float(np.round(rng.uniform(pmin, 5), 2)),
            grid_temperatures=int(rng.integers(1, 8)), grid_penalties=int(rng.integers(1, 5)),
            difficulty=None if rng.random() < 0.5 else float(np.round(rng.random(), 2)),
            sensitive=bool(rng.random() < 0.8), w_ts=float(rng.uniform(0, 2)), w_al=float(rng.uniform(0, 2)),
            w_cc=float(rng.uniform(0, 2)),
        ))  # fmt: skip
    return out


@pytest.mark.parametrize("k", range(12))
def test_pin_env_equals_engine_for_random_configs_and_feature_dependent_policies(k):
    cfg = _random_configs(12, 2024)[k]
    assert env_equals_engine(cfg, 100 + k, 30) == []


def test_pin_extreme_configs_are_engine_equal():
    for cfg in (BeliefCoordinationConfig(n_executors=16, rounds=5, action_space="grid"),
                BeliefCoordinationConfig(action_space="grid", grid_temperatures=1, grid_penalties=1),
                BeliefCoordinationConfig(action_space="grid", temperature_min=0.7, temperature_max=0.7),
                BeliefCoordinationConfig(action_space="grid", w_ts=0.0, w_al=0.0, w_cc=0.0)):  # fmt: skip
        assert env_equals_engine(cfg, 5, 6) == [], cfg


@pytest.mark.slow
def test_pin_conformance_battery_at_the_extremes():
    import warnings

    from eq_env.core import conformance

    cases = ({"n_executors": 16, "rounds": 5}, {"n_executors": 16, "rounds": 5, "action_space": "grid"},
             {"action_space": "grid", "grid_temperatures": 1, "grid_penalties": 1},
             {"temperature_min": 0.7, "temperature_max": 0.7, "penalty_min": 1.3, "penalty_max": 1.3},
             {"w_ts": 0.0, "w_al": 0.0, "w_cc": 0.0}, {"temperature_min": 0.01, "temperature_max": 5.0,
                                                      "penalty_max": 5.0})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kwargs in cases:
            for check in conformance.CHECKS:
                check("belief-coordination", kwargs)


def test_pin_common_random_numbers_across_team_sizes():
    cfgs = [BeliefCoordinationConfig(n_executors=n) for n in (3, 9)]
    runs = [play("belief-coordination", c, {"executor": "random", "coordinator": "majority"}, episodes=30, seed=2)
            for c in cfgs]  # fmt: skip
    for a, b in zip(*runs, strict=True):
        assert a.temperatures == b.temperatures[:3] and a.values == b.values[:3]


def test_pin_box_bounds_and_integer_kinds():
    env = bc.parallel_env(n_executors=3, temperature_min=0.3, temperature_max=1.7, penalty_min=1.0, penalty_max=1.4)
    spy = []
    real = env.answerer.answer
    env.answerer.answer = lambda requests: spy.extend(requests) or real(requests)
    env.reset(seed=0)
    env.step({"executor_0": np.array([0, 0], np.float32), "executor_1": np.array([1, 1], np.float32),
              "executor_2": [np.float32(1.0), 0.0]})  # fmt: skip
    got = [x for r in spy for x in (r.temperature, r.penalty)]
    assert got == pytest.approx([0.3, 1.0, 1.7, 1.4, 1.7, 1.0], abs=1e-12)
    assert max(r.temperature for r in spy) <= 1.7 and max(r.penalty for r in spy) <= 1.4
    env.step({"coordinator": np.uint8(2)})
    assert env.committed == 2
    grid = bc.parallel_env(n_executors=2, action_space="grid")
    grid.reset(seed=0)
    for bad in (True, 2**70, -1, 3.0, np.array([3]), float("nan")):
        with pytest.raises(ValueError, match="executor_0"):
            grid.step({"executor_0": bad, "executor_1": 0})


def test_pin_null_instrument_makes_every_choice_equal():
    from eq_env.baselines.belief_coordination.econ import ECON

    cfg = reproduce._config(3, "null")
    batch = engine.episodes_batch(cfg, 0, range(300))
    ref = engine.play(batch, cfg, engine.fixed_chooser(*reproduce.BASE))
    for choose in (ECON.untrained(cfg, seed=1).chooser(), reproduce._schedule(3), reproduce._random(cfg, 0),
                   feature_chooser(cfg)):  # fmt: skip
        out = engine.play(batch, cfg, choose)
        assert np.array_equal(out.reward, ref.reward) and np.array_equal(out.tokens, ref.tokens)
    actions = ECON.untrained(cfg, seed=1).act_batch(engine.executor_features(batch, cfg, 0, None))
    f2 = reproduce.equilibrium_gaps(cfg, actions, batch.difficulty, grid_player(cfg, batch))
    assert f2["epsilon"] == 0.0 and f2["gain_in_sample"] == [0.0, 0.0, 0.0]


def test_pin_question_file_hostile_lines_are_named(tmp_path):
    path = tmp_path / "h.jsonl"
    bad = {
        b'{"question": "a?", "answer": 1e309}\n': "finite",
        b'{"question": "a?", "answer": NaN}\n': "finite",
        b'{"question": "a?", "answer": "#### 1e309"}\n': "####",
        b'{"question": "a?", "answer": ' + b"9" * 5000 + b"}\n": "invalid JSON",
        b'{"question": "a?", "answer": "#### 3", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n": "invalid JSON",
        b'{"question": "a?", "answer": {"a": "#### 3"}}\n': "answer",
        b'{"question": "a?", "answer": "#### 3"}\n\xef\xbb\xbf{"question": "b?", "answer": "#### 4"}\n': "line 2",
    }
    for data, message in bad.items():
        path.write_bytes(data)
        with pytest.raises(ValueError, match=message) as e:
            load_jsonl(path)
        assert str(path) in str(e.value) and "\n" not in str(e.value)
    path.write_bytes(b'\xef\xbb\xbf{"question": "a?", "answer": "#### -0"}\r\n{"question": "a?", "answer": "#### 3"}')
    qs = load_jsonl(path)
    assert [q.answer for q in qs] == [0.0, 3.0] and qs[0].qid != qs[1].qid


def _cli(out: Path, *flags: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "eq_env.cli", "reproduce", "--env", "belief-coordination", "--out", str(out)]
    return subprocess.run([*command, *flags], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


# three runs (N=2, N=3, the null one) on two workers: one worker plays two, so a run follows another in a
# process, and the first record leaves at least one run to the resume
KILL_FLAGS = ["--seeds", "1", "--n-executors", "2,3", "--questions", "40", "--train-steps", "60", "--jobs", "2"]


def _without_timings(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        record["econ"].pop("train_seconds")
        out[record["key"]] = record
    return out


def _wait_gone(pids: list[str], limit: float = 120.0) -> None:
    """Wait until each process has exited: its pidfd becomes readable then (an event; ``limit`` is a hang guard)."""
    for pid in pids:
        try:
            fd = os.pidfd_open(int(pid))
        except ProcessLookupError:
            continue  # gone already
        try:
            ready, _, _ = select.select([fd], [], [], limit)
            assert ready, f"worker {pid} still runs after its parent was killed"
        finally:
            os.close(fd)


@pytest.mark.slow
def test_pin_sigkill_mid_run_then_resume_equals_an_uninterrupted_run_in_another_process(tmp_path):
    whole = tmp_path / "whole"
    assert _cli(whole, *KILL_FLAGS).returncode == 0
    cut = tmp_path / "cut"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "eq_env.cli", "reproduce", "--env", "belief-coordination",
                             "--out", str(cut), *KILL_FLAGS], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        results = cut / "results.jsonl"
        if results.exists() and results.read_text().count("\n") >= 1:
            break
        time.sleep(0.05)
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    proc.kill()
    proc.wait()
    _wait_gone(workers)  # the workers end with their parent: wait for each one's exit, not for a while
    assert [w for w in workers if Path(f"/proc/{w}").exists() and "zombie" not in
            Path(f"/proc/{w}/status").read_text().lower()] == []  # fmt: skip
    assert _cli(cut, *KILL_FLAGS).returncode == 0
    for name in ("methods.md", "methods.csv", "falsifiers.md", "summary.md", "belief_coordination.png"):
        assert (cut / name).read_bytes() == (whole / name).read_bytes(), name
    assert _without_timings(cut / "results.jsonl") == _without_timings(whole / "results.jsonl")
