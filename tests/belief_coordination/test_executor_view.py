"""The single-agent view of one executor (``eq_env/BeliefCoordinationExecutor-v0``), ``eq-env train --env
belief-coordination --backend sb3`` on it, and the trained executor as the ``sb3`` policy."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import eq_env
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.core.cli import main
from eq_env.core.runner import play

VIEW = "eq_env/BeliefCoordinationExecutor-v0"


def test_the_view_is_registered_and_follows_gymnasiums_conventions() -> None:
    assert VIEW in eq_env.GYM_IDS
    for kwargs in ({}, {"action_space": "grid", "n_executors": 5}, {"rounds": 3, "executors": "schedule"}):
        view = gymnasium.make(VIEW, **kwargs).unwrapped
        check_env(view, skip_render_check=True)
        assert view.observation_space == gymnasium.spaces.Box(0.0, 1.0, (5,), np.float32)
        pickle.loads(pickle.dumps(view))
    grid = gymnasium.make(VIEW, action_space="grid").unwrapped
    assert grid.action_space == gymnasium.spaces.Discrete(30)
    _, info = grid.reset(seed=4)
    assert info == {"episode_index": 0} and grid.action_masks().all() and grid.action_masks().shape == (30,)
    _, reward, terminated, truncated, info = grid.step(0)
    assert terminated and not truncated and "episode" not in info and info["episode_index"] == 0
    assert set(info) == {"episode_index", "ts", "al", "cc", "temperature", "penalty"}
    assert (info["temperature"], info["penalty"]) == (0.1, 1.0)  # grid point 0: the lowest T and p
    assert reward == pytest.approx(0.5 * info["ts"] + 0.3 * info["al"] + 0.2 * info["cc"])
    assert grid.reset()[1] == {"episode_index": 1}
    debate = gymnasium.make(VIEW, rounds=2).unwrapped
    debate.reset(seed=0)
    assert debate.step(np.array([0.5, 0.5], np.float32))[1:4] == (0.0, False, False)  # a step per round
    assert debate.step(np.array([0.5, 0.5], np.float32))[2] is True
    assert "ansi" in grid.metadata["render_modes"]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"frameskip": 1}, TypeError, "unexpected keyword argument 'frameskip'"),
        ({"agent": "executor_3"}, ValueError, "agent must be one of executor_0, executor_1, executor_2"),
        ({"executors": "nobody"}, ValueError, "executors: unknown policy 'nobody'"),
        ({"coordinator": "fixed"}, ValueError, "coordinator: policy 'fixed' plays the executor"),
        ({"n_executors": 0}, ValueError, "n_executors"),
        ({"render_mode": "braille"}, ValueError, "render_mode must be one of"),
    ],
)
@pytest.mark.filterwarnings("ignore:.*render_mode")  # (Gymnasium's, before the view's error)
def test_the_view_refuses_unknown_keywords_with_a_type_error_and_bad_values_with_a_value_error(
    kwargs: dict, error: type, message: str
) -> None:
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        gymnasium.make(VIEW, **kwargs)


def test_bad_actions_and_options_are_refused_before_anything_is_played() -> None:
    view = gymnasium.make(VIEW).unwrapped
    with pytest.raises(ValueError, match="reset options"):
        view.reset(seed=0, options={"episode": 3})
    view.reset(seed=0)
    with pytest.raises(ValueError, match="executor_0: action must be two numbers in"):
        view.step(np.array([1.5, 0.0]))
    assert view.game.round == 0
    with pytest.raises(ValueError, match="is for action_space='grid'"):
        view.action_masks()


@pytest.mark.parametrize(
    "policies, overrides",
    [
        ({"executor": "random", "coordinator": "random"}, {}),
        ({"executor": "schedule", "coordinator": "majority"}, {"rounds": 2, "action_space": "grid"}),
    ],
)
def test_playing_the_teams_action_in_the_seat_is_the_runners_game(policies: dict, overrides: dict) -> None:
    """Nobody deviating, the view's episodes are eq-env play's: the same questions, answers and reward, its other
    agents seeded as the runner seeds them (random executors draw per agent; a joint policy answers for all)."""
    config = BeliefCoordinationConfig(**overrides)
    records = play("belief-coordination", config, policies, episodes=12, seed=3)
    view = gymnasium.make(
        VIEW, executors=policies["executor"], coordinator=policies["coordinator"], config=config
    ).unwrapped
    view.reset(seed=3)
    for record in records:
        terminated = False
        while not terminated:
            _, reward, terminated, _, info = view.step(view.team_action())
        assert (info["episode_index"], reward) == (record.episode, record.reward)
        assert tuple(t for round_ in view.game.temperatures for t in round_) == record.temperatures
        view.reset()
    assert len({r.reward for r in records}) > 1  # (games that differ: the comparison could fail)


TRAIN = ["train", "--env", "belief-coordination", "--backend", "sb3"]


@pytest.mark.parametrize(
    "argv, message",
    [
        ([*TRAIN, "--steps", "3"], "--steps go(es) with --backend econ: --backend sb3 trains for --timesteps"),
        ([*TRAIN, "--iterations", "2"], "--iterations go(es) with --backend rllib"),
        # (the econ backend ignored every RLlib flag but --ray-address)
        (["train", "--env", "belief-coordination", "--env-runners", "2"], "--env-runners go(es) with --backend rllib"),
        (["train", "--env", "belief-coordination", "--timesteps", "100"], "--timesteps go(es) with --backend sb3"),
        ([*TRAIN, "--executor", "nobody"], "executors: unknown policy 'nobody'"),
        ([*TRAIN, "--coordinator", "majority:x=1"], "coordinator: policy 'majority' has no parameter(s) ['x']"),
    ],
)
def test_train_refuses_bad_flags_in_one_line_before_training(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "executor"
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.slow  # (SB3 and two short trainings: a few seconds)
def test_a_trained_executor_is_saved_evaluated_against_no_deviation_and_plays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = []
    for name in ("a", "b"):
        assert (
            main(
                [
                    *TRAIN,
                    "--timesteps",
                    "128",
                    "--n-envs",
                    "2",
                    "--eval-episodes",
                    "20",
                    "--eval-seeds",
                    "1000,1001",
                    "--out",
                    str(tmp_path / name),
                ]
            )
            == 0
        )
        runs.append(capsys.readouterr().out)
    a = tmp_path / "a"
    printed = runs[0]
    assert "trained executor_0 (ppo; the other executors fixed, the coordinator majority, 3 executors)" in printed
    for row in ("| greedy |", "| sampled |", "| no deviation (fixed) |", "deviation gain (greedy − no deviation)"):
        assert row in printed
    assert (a / "eval.json").read_text() == (tmp_path / "b" / "eval.json").read_text()  # same seed, same results
    evaluations = json.loads((a / "eval.json").read_text())["evaluations"]
    # no deviation is the fixed executor's grid point nearest (0.7, 1.1): T 0.86, p 1
    assert evaluations["no deviation (fixed)"]["temperature"]["mean"] == pytest.approx(0.86)
    # the model plays every executor of eq-env play, in the Box and on the grid (its (T, p) as each wants it)
    for flags in ([], ["--action-space", "grid"], ["--action-space", "grid", "--grid-temperatures", "3"]):
        assert (
            main(
                [
                    "play",
                    "--env",
                    "belief-coordination",
                    "--executor",
                    f"sb3:path={a},deterministic=false",
                    "--episodes",
                    "5",
                    "--json",
                    *flags,
                ]
            )
            == 0
        )
        shown = json.loads(capsys.readouterr().out)
        assert shown["executor"].startswith("SB3ViewPolicy(") and 0 <= shown["metrics"]["accuracy"]["mean"] <= 1
    assert main(["play", "--env", "belief-coordination", "--coordinator", f"sb3:path={a}", "--episodes", "1"]) == 2
    assert "policy 'sb3' plays the executor, not the coordinator" in capsys.readouterr().err
