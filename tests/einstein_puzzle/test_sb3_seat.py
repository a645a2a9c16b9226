"""``eq-env train --env einstein-puzzle --backend sb3`` (MaskablePPO in one seat against a partner) and the
saved model as the ``sb3`` policy of either seat in ``eq-env play``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import eq_env  # noqa: F401 - registers the games
from eq_env.core.cli import main
from eq_env.core.policy import make_policy

TRAIN = ["train", "--env", "einstein-puzzle", "--backend", "sb3"]


@pytest.mark.parametrize(
    "argv, message",
    [
        ([*TRAIN, "--iterations", "3"], "--iterations go(es) with --backend rllib; --backend sb3 trains one seat"),
        (
            ["train", "--env", "einstein-puzzle", "--backend", "rllib", "--partner", "random", "--timesteps", "64"],
            "--partner, --timesteps go(es) with --backend sb3: --backend rllib trains both seats with PPO",
        ),
        ([*TRAIN, "--partner", "nobody"], "partner: unknown policy 'nobody'; available player_1s:"),
        (
            [*TRAIN, "--role", "player_1", "--partner", "planner:guess"],
            "partner: policy spec 'planner:guess': expected key=value",
        ),
        (
            [*TRAIN, "--seed", "995", "--eval-seeds", "1000,7"],
            "eval seeds 1000 would evaluate on training episodes: "
            "seed 995 with 8 environments trains on seeds 995-1002",
        ),
    ],
)
def test_train_refuses_bad_flags_in_one_line_before_training(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "seat"
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists() or not any(out.iterdir())  # nothing trained, nothing saved


@pytest.mark.slow  # (SB3 and two short trainings: a few seconds)
def test_a_trained_seat_is_saved_evaluated_and_plays_either_seat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = []
    for name in ("a", "b"):  # the same seed twice: the same model, bit for bit
        out = tmp_path / name
        assert (
            main(
                [
                    *TRAIN,
                    "--timesteps",
                    "128",
                    "--n-envs",
                    "2",
                    "--eval-episodes",
                    "3",
                    "--eval-seeds",
                    "1000,1001",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        runs.append(capsys.readouterr().out)
    printed = runs[0]
    assert "trained player_0 (maskable_ppo) with planner as partner for 128 steps" in printed
    assert "held-out seeds 1000, 1001, 3 games each" in printed
    for row in ("| greedy |", "| sampled |", "| random (baseline) |"):
        assert row in printed
    a, b = tmp_path / "a", tmp_path / "b"
    assert {p.name for p in a.iterdir()} == {
        "model.zip",
        "policy.json",
        "learning_curve.csv",
        "learning_curve.png",
        "eval.json",
    }
    assert (a / "eval.json").read_text() == (b / "eval.json").read_text()
    saved = json.loads((a / "eval.json").read_text())
    assert list(saved["evaluations"]) == ["greedy", "sampled", "random (baseline)"]
    meta = json.loads((a / "policy.json").read_text())
    assert meta["env"] == "eq_env/einstein-puzzle-v0" and meta["partner"] == "planner" and meta["steps_run"] == 128

    # the model in both seats of eq-env play, by its directory or its model.zip, greedy and sampled
    for argv in (["--player_0", f"sb3:path={a}"], ["--player_1", f"sb3:path={a}/model.zip,deterministic=false"]):
        assert main(["play", "--env", "einstein-puzzle", *argv, "--episodes", "2", "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        seat = argv[0][2:]
        assert shown[seat].startswith("SB3ViewPolicy(") and shown["metrics"]["success_rate"]["mean"] >= 0
    # its greedy evaluation is what eq-env play measures with the same seeds and partner
    assert (
        main(
            [
                "play",
                "--env",
                "einstein-puzzle",
                "--player_0",
                f"sb3:path={a}",
                "--episodes",
                "3",
                "--seed",
                "1000",
                "--seeds",
                "2",
                "--json",
            ]
        )
        == 0
    )
    played = json.loads(capsys.readouterr().out)["metrics"]
    assert played["success_rate"] == saved["evaluations"]["greedy"]["success_rate"]

    # another configuration's observation is refused in one line, naming what differs
    assert main(["play", "--env", "einstein-puzzle", "--player_0", f"sb3:path={a}", "--n", "5", "--episodes", "1"]) == 2
    assert "has 236 numbers, the model 194" in capsys.readouterr().err
    with pytest.raises(ValueError, match="is not a trained model"):
        make_policy(f"sb3:path={tmp_path}", "player_0", "einstein-puzzle")
    with pytest.raises(ValueError, match="deterministic must be true or false"):
        make_policy(f"sb3:path={a},deterministic=3", "player_0", "einstein-puzzle")
