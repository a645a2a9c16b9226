"""Self-play in the Einstein puzzle: the shaping and strict-mask options and the self-play view."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

import eq_env  # noqa: F401 - registers the games
from eq_env.core.cli import main
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.env import raw_env
from eq_env.einstein_puzzle.rules import GOAL_BINS, REJECTED, Move, State, goal_row_player
from eq_env.einstein_puzzle.spaces import action_mask, actions
from eq_env.einstein_puzzle.views import EinsteinPuzzleSelfPlayEnv


def potential(game: State, w: float) -> float:
    """Φ as the environment's docstring defines it, from the rules' own knowledge (not the encoder's cache)."""
    n = game.puzzle.n
    placed = sum(loc == g for loc, g in zip(game.location, game.puzzle.goal, strict=True))
    placeable = sum(game.knowledge(goal_row_player(g)).goal(obj) == g for obj, g in enumerate(game.puzzle.goal))
    return w * (placed + placeable) / (2 * n)


def random_episode(env: raw_env, seed: int, rng: np.random.Generator) -> list[tuple[float, float]]:
    """Play one episode with random legal actions: per turn, (the reward, Φ after it by the definition)."""
    env.reset(seed=seed)
    out = []
    while not env.game.over:  # type: ignore[union-attr]
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
        out.append((env.rewards["player_0"], potential(env.game, 1.0)))  # type: ignore[arg-type]
    return out


@pytest.mark.parametrize("n", [4, 6])
def test_shaping_is_potential_based_and_adds_up_to_minus_the_first_potential(n: int) -> None:
    w = 0.7
    plain, shaped = raw_env(n=n), raw_env(n=n, shaping=w)
    for seed in range(12):
        shaped.reset(seed=seed)
        first = potential(shaped.game, w)  # type: ignore[arg-type]
        a = random_episode(plain, seed, np.random.default_rng(seed))
        b = random_episode(shaped, seed, np.random.default_rng(seed))  # (same masks: the same actions)
        assert len(a) == len(b)
        before = first
        for i, ((r0, _), (r1, phi)) in enumerate(zip(a, b, strict=True)):
            after = 0.0 if i == len(b) - 1 else w * phi  # the end's potential is 0
            assert r1 == pytest.approx(r0 + after - before)
            before = after
        assert sum(r for r, _ in b) == pytest.approx(sum(r for r, _ in a) - first)
    assert first >= 0 and any(r1 != r0 for (r0, _), (r1, _) in zip(a, b, strict=True))  # it does shape


def test_a_correct_placement_pays_its_share_of_the_potential_at_once() -> None:
    env = raw_env(n=4, shaping=1.0, comm_mode="provide_only")
    for seed in range(40):
        env.reset(seed=seed)
        game = env.game
        assert game is not None
        known = game.knowledge(0).known()
        mine = [o for o, g in known.items() if goal_row_player(g) == 0 and game.location[o] != g]
        # a move of object o from its start bin straight into its goal bin, if player 0 reaches both
        for obj in mine:
            move = Move(obj, game.location[obj], known[obj])
            if not game.check(move):
                index = actions(4).index(move)
                before = potential(game, 1.0)
                env.step(index)
                if not game.over:
                    assert potential(game, 1.0) - before == pytest.approx(1 / 8)  # placed + 1 of 2n = 8
                    assert env.rewards["player_0"] == pytest.approx(1 / 8)
                    return
    pytest.fail("no seed of 40 gave player 0 a known goal it could place at once")


def test_strict_mask_leaves_out_only_moves_that_fail_or_undo_a_placement() -> None:
    rng = np.random.default_rng(0)
    removed_kinds: set[str] = set()
    for comm_mode in ("provide_and_seek", "none"):
        env = raw_env(n=5, comm_mode=comm_mode, strict_mask=True)
        table = actions(5)
        for seed in range(15):
            env.reset(seed=seed)
            game = env.game
            assert game is not None
            while not game.over:
                full = action_mask(game)
                strict = env.observe(env.agent_selection)["action_mask"]
                assert np.array_equal(strict, action_mask(game, strict=True))
                assert not (strict & ~full).any()  # a subset of the legal actions
                for index in np.flatnonzero(full & ~strict):
                    move = table[index]
                    assert isinstance(move, Move)
                    if move.src in GOAL_BINS:  # undoes a correct placement (or is rejected)
                        assert game.location[move.obj] == game.puzzle.goal[move.obj]
                        removed_kinds.add("undo")
                    else:
                        twin = game.copy()
                        assert twin.play(move).outcome == REJECTED, move
                        removed_kinds.add("start bin" if move.dst not in GOAL_BINS else "known wrong")
                # play anything legal, strict or not, so that states with objects placed come up too
                env.step(int(rng.choice(np.flatnonzero(full))))
    assert removed_kinds == {"undo", "start bin", "known wrong"}


def test_strict_mask_plays_the_same_rules() -> None:
    """A move the strict mask leaves out, played anyway, is played as the rules say (rejected here)."""
    plain, strict = raw_env(n=4, strict_mask=False), raw_env(n=4, strict_mask=True)
    for env in (plain, strict):
        env.reset(seed=5)
    game = strict.game
    assert game is not None
    start = game.location[0]
    index = actions(4).index(Move(0, start, 6 if start != 6 else 4))  # to the common bin: accepted either way
    for env in (plain, strict):
        env.step(index)
    assert plain.game.location == strict.game.location  # type: ignore[union-attr]
    assert plain.rewards == strict.rewards


def test_the_new_options_key_results_only_when_set() -> None:
    default = EinsteinPuzzleConfig()
    assert "shaping" not in default.to_dict() and "strict_mask" not in default.to_dict()
    tuned = default.replace(shaping=1.0, strict_mask=True)
    assert tuned.to_dict()["shaping"] == 1.0 and tuned.to_dict()["strict_mask"] is True
    assert EinsteinPuzzleConfig.from_dict(tuned.to_dict()) == tuned
    with pytest.raises(ValueError, match="shaping"):
        default.replace(shaping=-1.0)


def test_self_play_view_plays_both_seats_with_their_own_observations() -> None:
    view = EinsteinPuzzleSelfPlayEnv(n=4, shaping=1.0, strict_mask=True)
    twin = raw_env(n=4, shaping=1.0, strict_mask=True)
    rng = np.random.default_rng(1)
    for seed in (3, 4):
        obs, _ = view.reset(seed=seed)
        twin.reset(seed=seed)
        done, seats, total = False, [], 0.0
        while not done:
            seat = view.seat
            seats.append(seat)
            expected = twin.observe(seat)
            assert np.array_equal(obs, expected["observation"])
            assert obs[0] == (seat == "player_1")  # the side flag: which seat this observation is
            assert np.array_equal(view.action_masks(), expected["action_mask"].astype(bool))
            action = int(rng.choice(np.flatnonzero(view.action_masks())))
            obs, reward, terminated, truncated, info = view.step(action)
            twin.step(action)
            assert reward == twin.rewards[seat]
            total += reward
            done = terminated or truncated
        assert seats[:4] == ["player_0", "player_1", "player_0", "player_1"]
        assert set(info) >= {"success", "turns", "placed"} and info["turns"] == len(seats)
    with pytest.raises(RuntimeError, match="episode is over"):
        view.step(0)
    assert pickle.loads(pickle.dumps(view)).config == view.config


def test_self_play_view_is_seeded() -> None:
    def run(seed: int) -> list[float]:
        view = EinsteinPuzzleSelfPlayEnv(n=4)
        obs, _ = view.reset(seed=seed)
        rng, out, done = np.random.default_rng(0), [float(obs.sum())], False
        while not done:
            obs, reward, terminated, truncated, _ = view.step(int(rng.choice(np.flatnonzero(view.action_masks()))))
            out += [float(obs.sum()), reward]
            done = terminated or truncated
        return out

    assert run(7) == run(7) and run(7) != run(8)
    with pytest.raises(RuntimeError, match="before reset"):
        EinsteinPuzzleSelfPlayEnv().step(0)
    with pytest.raises(ValueError, match="no reset options"):
        EinsteinPuzzleSelfPlayEnv().reset(options={"episode": 1})


def test_train_refuses_role_with_self_play(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(
        ["train", "--env", "einstein-puzzle", "--partner", "self", "--role", "player_1", "--out", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--role goes with a fixed --partner" in err and "Traceback" not in err


@pytest.mark.slow  # (a short self-play training and its five evaluations: seconds)
def test_self_play_trains_saves_and_reports_greedy_and_sampled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "selfplay"
    argv = ["train", "--env", "einstein-puzzle", "--partner", "self", "--shaping", "1", "--strict-mask"]
    argv += ["--timesteps", "1024", "--eval-episodes", "4", "--eval-seeds", "1000,1001", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "trained both seats by self-play" in text and "--player_1 sb3:path=" in text
    for row in ("self-play, greedy", "self-play, sampled", "with planner, greedy", "with planner, sampled"):
        assert f"| {row} " in text
    assert "held-out seeds 1000, 1001, 4 games each" in text and "| shares " in text
    saved = json.loads((out / "policy.json").read_text())
    assert saved["partner"] == "self" and saved["config"]["shaping"] == 1.0 and saved["config"]["strict_mask"]
    saved_eval = json.loads((out / "eval.json").read_text())
    assert saved_eval["seeds"] == [1000, 1001] and saved_eval["episodes"] == 4
    evaluations = saved_eval["evaluations"]
    assert set(evaluations) == {
        "self-play, greedy",
        "self-play, sampled",
        "with planner, greedy",
        "with planner, sampled",
        "random (baseline)",
    }
    assert 0.0 <= evaluations["self-play, sampled"]["success_rate"]["mean"] <= 1.0
    # the saved model plays both seats through the ordinary command
    assert (
        main(
            [
                "play",
                "--env",
                "einstein-puzzle",
                "--player_0",
                f"sb3:path={out}",
                "--player_1",
                f"sb3:path={out}",
                "--episodes",
                "2",
                "--shaping",
                "1",
                "--strict-mask",
            ]
        )
        == 0
    )


def test_a_trained_configuration_is_printed_as_flags_the_parser_takes() -> None:
    from eq_env.baselines.rllib import _flag
    from eq_env.cli import build_parser

    flags = [_flag("strict_mask", True), _flag("n", 6), _flag("shaping", 1.5)]
    assert flags == ["--strict-mask", "--n 6", "--shaping 1.5"] and _flag("strict_mask", False) == "--no-strict-mask"
    args = build_parser("einstein-puzzle").parse_args(["play", "--env", "einstein-puzzle", *" ".join(flags).split()])
    assert args.strict_mask is True and args.n == 6 and args.shaping == 1.5
