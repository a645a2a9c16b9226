"""The PettingZoo adapter of the Einstein puzzle: masks, turns, rewards, the end, observations, text, records.

The conformance battery (PettingZoo's api/parallel/seed tests, pickling, the episode-jump contract) runs
over the spec's configurations in ``tests/core/test_conformance.py``; these are the game's own promises.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np
import pettingzoo
import pytest

import eq_env
from eq_env import einstein_puzzle_v0
from eq_env.core.spec import env_spec
from eq_env.einstein_puzzle import spaces as codec
from eq_env.einstein_puzzle.env import PLAYERS, EinsteinPuzzleParallelEnv, episode_puzzle, raw_env
from eq_env.einstein_puzzle.generator import generate, puzzle_rng
from eq_env.einstein_puzzle.records import METRICS, EpisodeRecord, compute_metrics, record_episode
from eq_env.einstein_puzzle.rules import (
    BIN_NAMES,
    BOTTOM_START,
    COMM_MODES,
    COMMON,
    TOP_START,
    Action,
    Ask,
    Move,
    Pass,
    Share,
    State,
    reachable,
    row_bins,
    start_bin,
)
from eq_env.einstein_puzzle.text import CHARSET, describe, max_text_length, render_board

ID = "eq_env/einstein-puzzle-v0"


def only_pass(n: int) -> list[int]:
    """The mask of a player with nothing to decide: pass (the last action) only."""
    return [0] * (codec.n_actions(n) - 1) + [1]


def index(env: raw_env, action: Action) -> int:
    return codec.action_index(action, env.config.n)


def random_states(n: int, mode: str, episodes: int, seed: int = 0, **kwargs: Any) -> Iterator[raw_env]:
    """An environment at every turn of ``episodes`` games of mostly random legal play (some illegal moves)."""
    env = raw_env(n=n, comm_mode=mode, **kwargs)
    rng = np.random.default_rng(seed)
    for episode in range(episodes):
        env.reset(seed=seed, options={"episode": episode})
        while env.agents and not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
            yield env
            mask = env.observe(env.agent_selection)["action_mask"]
            legal = np.flatnonzero(mask)
            env.step(int(rng.choice(legal) if rng.random() < 0.85 else rng.integers(len(mask))))
        yield env  # (the end)


def oracle_action(game: State) -> Action:
    """A scripted player that knows the goal: place what it can, hand across what it must, else pass."""
    p, goal = game.current, game.puzzle.goal
    reach = reachable(p)
    for obj, loc in enumerate(game.location):
        if loc in reach and loc != goal[obj] and goal[obj] in row_bins(p):
            return Move(obj, loc, goal[obj])
    for obj, loc in enumerate(game.location):
        if loc == start_bin(p) and goal[obj] not in row_bins(p):
            return Move(obj, loc, COMMON)
    return Pass()


def play_oracle(env: raw_env) -> list[float]:
    """Play the oracle for both agents to the end; the team reward of each turn."""
    rewards = []
    while not (env.terminations[env.agent_selection] or env.truncations[env.agent_selection]):
        env.step(index(env, oracle_action(env.game)))
        rewards.append(env.rewards["player_0"])
    return rewards


# ---------------------------------------------------------------------------
# The action mask
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", COMM_MODES)
@pytest.mark.parametrize("n", [4, 5, 8])
def test_mask_is_state_check_of_every_action(n: int, mode: str) -> None:
    actions = codec.actions(n)
    for env in random_states(n, mode, episodes=3, seed=n):
        game = env.game
        mask = env.observe(env.agent_selection)["action_mask"]
        if game.over:
            assert mask.tolist() == only_pass(n)
            continue
        expected = np.array([not game.check(a) for a in actions], np.int8)
        assert np.array_equal(mask, expected)
        assert np.array_equal(codec.action_mask(game), expected)
        other = PLAYERS[1 - game.current]
        assert env.observe(other)["action_mask"].tolist() == only_pass(n)  # (the other: one legal no-op)


def test_mask_allows_answers_and_seek_only_shares() -> None:
    for mode in ("provide_and_seek", "seek_only"):
        seen_answer = seen_share = False
        for env in random_states(6, mode, episodes=8, seed=1):
            game, mask = env.game, env.observe(env.agent_selection)["action_mask"]
            n = game.puzzle.n
            seen_answer |= bool(mask[44 * n : 48 * n].any())
            if mode == "seek_only" and mask[42 * n : 43 * n].any():
                assert game.last_ask() is not None
                seen_share = True
        assert seen_answer and (seen_share or mode != "seek_only")


# ---------------------------------------------------------------------------
# Turns, rewards, the end
# ---------------------------------------------------------------------------
def test_an_illegal_action_is_a_failed_turn_with_its_reason_and_penalty() -> None:
    env = raw_env(n=4, illegal_penalty=0.3)
    env.reset(seed=0)
    game = env.game
    before = list(game.location)
    obj = next(o for o, s in enumerate(game.puzzle.start) if s == TOP_START)
    action = index(env, Move(obj, TOP_START, COMMON))  # (player_0 does not reach the top start bin)
    assert env.observe("player_0")["action_mask"][action] == 0
    env.step(action)
    assert game.location == before and game.turn == 1 and env.agent_selection == "player_1"
    assert env.rewards == {"player_0": -0.3, "player_1": -0.3}
    last = env.infos["player_0"]["last_action"]
    assert last == {"action": f"move {obj} from top_start to common", "outcome": "illegal",
                    "reason": "top_start is out of reach"}  # fmt: skip
    assert game.history[-1].outcome == "illegal"


def test_an_action_outside_the_space_is_refused_naming_the_agent() -> None:
    env = einstein_puzzle_v0.env(n=4)
    env.reset(seed=0)
    for bad in (10_000, -1, 1.5, "pass", None, True):
        with pytest.raises(ValueError, match=r"player_0.*Discrete\(193\)"):
            env.step(bad)
    assert env.unwrapped.game.turn == 0 and env.agent_selection == "player_0"


def test_a_rejected_placement_leaves_the_board_costs_the_turn_and_the_penalty() -> None:
    env = raw_env(n=4, rejection_penalty=0.25)
    env.reset(seed=3)
    game = env.game
    obj = next(o for o, s in enumerate(game.puzzle.start) if s == BOTTOM_START)
    wrong = next(b for b in row_bins(0) if b != game.puzzle.goal[obj])
    action = index(env, Move(obj, BOTTOM_START, wrong))
    assert env.observe("player_0")["action_mask"][action] == 1  # (the mask does not reveal goals)
    before = list(game.location)
    env.step(action)
    assert game.location == before and game.turn == 1 and env.agent_selection == "player_1"
    assert env.rewards == {"player_0": -0.25, "player_1": -0.25}
    assert env.infos["player_0"]["last_action"]["outcome"] == "rejected"
    assert env.infos["player_0"]["last_action"]["reason"] == f"object {obj} does not go in {BIN_NAMES[wrong]}"
    # both agents get the team reward: player_1 collects it at its turn
    assert env.last()[1] == -0.25


@pytest.mark.parametrize("penalty", [0.0, 0.2])
def test_a_pass_costs_nothing_unless_configured(penalty: float) -> None:
    env = raw_env(n=4, pass_penalty=penalty)
    env.reset(seed=0)
    env.step(index(env, Pass()))
    assert env.rewards == {"player_0": -penalty, "player_1": -penalty}
    assert env.infos["player_0"]["last_action"] == {"action": "pass", "outcome": "accepted", "reason": ""}


def test_a_win_on_the_last_allowed_step_is_a_termination_with_the_success_reward() -> None:
    env = raw_env(n=5, max_steps=200, success_reward=2.0)
    env.reset(seed=4)
    turns = len(play_oracle(env))
    assert env.game.success and turns < 200
    tight = raw_env(n=5, max_steps=turns, success_reward=2.0)
    tight.reset(seed=4)
    rewards = play_oracle(tight)
    assert len(rewards) == turns and tight.game.turn == tight.game.max_steps
    assert rewards[-1] == 2.0
    assert all(tight.terminations.values()) and not any(tight.truncations.values())
    for agent in PLAYERS:
        assert tight.infos[agent]["success"] is True and tight.infos[agent]["turns"] == turns
        assert tight.infos[agent]["placed"] == 5


def test_truncation_at_the_step_limit() -> None:
    env = einstein_puzzle_v0.env(n=4, max_steps=3)
    env.reset(seed=0)
    for _ in range(3):
        env.step(index(env.unwrapped, Pass()))
    assert all(env.truncations.values()) and not any(env.terminations.values())
    for agent in PLAYERS:  # (each keeps its own last action)
        assert env.infos[agent] == {"success": False, "turns": 3, "placed": 0, "last_action": {
            "action": "pass", "outcome": "accepted", "reason": ""}}  # fmt: skip
    # the dead-step protocol: each agent steps out with None; observe still works
    order = []
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        assert trunc and not term and obs["action_mask"].tolist() == only_pass(env.config.n)
        order.append(agent)
        env.step(None)
    assert order == ["player_1", "player_0"] and env.agents == []
    assert env.unwrapped.observe("player_0")["text"].count("step limit of 3 turns") == 1


def test_a_lucky_guess_without_communication_is_accepted_and_can_win() -> None:
    env = raw_env(n=6, comm_mode="none", max_steps=100)
    for seed in range(50):  # a puzzle where player_0 holds an object of its row it cannot place by reasoning
        env.reset(seed=seed)
        game = env.game
        guesses = [o for o, s in enumerate(game.puzzle.start) if s == BOTTOM_START
                   and game.puzzle.goal[o] in row_bins(0) and game.knowledge(0).goal(o) is None]  # fmt: skip
        if guesses:
            break
    obj = guesses[0]
    env.step(index(env, Move(obj, BOTTOM_START, game.puzzle.goal[obj])))
    assert env.infos["player_0"]["last_action"]["outcome"] == "accepted"
    assert game.location[obj] == game.puzzle.goal[obj]
    rewards = play_oracle(env)
    assert game.success and rewards[-1] == env.config.success_reward and all(env.terminations.values())


# ---------------------------------------------------------------------------
# Observations
# ---------------------------------------------------------------------------
def decode(observation: np.ndarray, n: int) -> dict[str, Any]:
    L = codec.layout(n)
    size = codec.CONSTRAINT_SIZE(n)
    return {
        "side": observation[L.side],
        "board": observation[L.board : L.inferred].reshape(n, 7),
        "inferred": observation[L.inferred : L.constraints].reshape(n, 4),
        "constraints": observation[L.constraints : L.asked].reshape(n, size),
        "asked": observation[L.asked : L.history],
        "history": observation[L.history :].reshape(codec.HISTORY, L.event_size),
    }


@pytest.mark.parametrize("mode", COMM_MODES)
def test_observation_blocks_decode_to_the_state(mode: str) -> None:
    n = 5
    for env in random_states(n, mode, episodes=3, seed=7):
        game = env.game
        for player, agent in enumerate(PLAYERS):
            obs = env.observe(agent)
            vector = obs["observation"]
            assert env.observation_space(agent).contains(obs)
            assert not vector.flags.writeable and not obs["action_mask"].flags.writeable
            blocks = decode(vector, n)
            assert blocks["side"] == player
            assert np.array_equal(blocks["board"].argmax(axis=1), game.location) and blocks["board"].sum() == n
            masks = game.knowledge(player).masks()
            assert [int(sum(1 << b for b in range(4) if row[b])) for row in blocks["inferred"]] == list(masks)
            known = set(game.explicit(player))
            for k, (c, row) in enumerate(zip(game.puzzle.constraints, blocks["constraints"], strict=True)):
                if k not in known:
                    assert not row.any()  # (a constraint the player does not know is hidden)
                    continue
                assert row[0] == 1 and row[1] == (k in game.puzzle.given(player))
                assert row[4 + c.a] == 1 and row[4 + 2 * n + c.code] == 1
                assert row[4 + n : 4 + 2 * n].any() == (c.b is not None)
            asked = game.last_ask() if game.current == player else None
            assert blocks["asked"].any() == (asked is not None)
            assert int(blocks["history"][:, 0].sum()) == min(len(game.history), codec.HISTORY)
            assert np.array_equal(vector, codec.encode_observation(game, player))


def test_observations_are_built_once_per_turn_and_survive_pickling() -> None:
    env = raw_env(n=4)
    env.reset(seed=0)
    first = env.observe("player_0")
    again = env.observe("player_0")
    assert first is not again and first["observation"] is again["observation"]
    twin = pickle.loads(pickle.dumps(env))
    assert np.array_equal(twin.observe("player_0")["observation"], first["observation"])
    assert twin.observe("player_0")["text"] == first["text"]


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_the_text_space_holds_every_text() -> None:
    cases = [(4, "provide_and_seek", {}), (8, "seek_only", {}), (16, "provide_only", {"max_steps": 120}),
             (6, "none", {"max_steps": 60})]  # fmt: skip
    for n, mode, kwargs in cases:
        for env in random_states(n, mode, episodes=2, seed=n, **kwargs):
            space = env.observation_space("player_0")["text"]
            for agent in PLAYERS:
                text = env.observe(agent)["text"]
                assert space.contains(text), set(text) - set(CHARSET)
                assert len(text) <= max_text_length(n, env.config.step_limit)


def test_the_text_observation() -> None:
    env = raw_env(n=4, comm_mode="seek_only")
    env.reset(seed=3)
    game = env.game
    obj = next(o for o, s in enumerate(game.puzzle.start) if s == TOP_START)
    env.step(index(env, Move(obj, TOP_START, COMMON)))  # illegal for player_0
    env.step(index(env, Ask(0)))  # player_1 asks
    text = env.observe("player_0")["text"]
    assert "You are player_0, at the bottom" in text and "bottom_left, bottom_right" in text
    assert "Communication: seek_only" in text and '"ask 5"' in text and '"answer 5 bottom_right"' in text
    assert "Turn 3 of 30. It is your turn." in text
    assert "Your partner just asked about object 0" in text
    failed = f"- turn 1, player_0 (bottom): move {obj} from top_start to common -- ILLEGAL: top_start is out of reach"
    assert failed in text
    assert "- turn 2, player_1 (top): ask 0" in text
    assert "- constraint 0: object" in text.split("Your knowledge:")[1].splitlines()[1]  # (the grounding first)
    assert f"- common: {obj}" not in text and "- common: empty" in text
    assert text == describe(game, 0)
    assert "It is your partner's turn." in env.observe("player_1")["text"]


def test_shared_constraints_are_marked_in_the_partners_text() -> None:
    env = raw_env(n=6)
    env.reset(seed=5)
    game = env.game
    mine = next(k for k in game.puzzle.given(0) if k not in game.puzzle.given(1))
    env.step(index(env, Share(mine)))
    line = game.puzzle.constraints[mine].text()
    assert f"- constraint {mine}: {line} (shared by your partner)" in env.observe("player_1")["text"]
    assert f"- constraint {mine}: {line}\n" in env.observe("player_0")["text"]


def test_render_ansi() -> None:
    env = einstein_puzzle_v0.env(n=4, render_mode="ansi")
    env.reset(seed=0)
    assert "no turn played yet" in env.render()
    env.step(index(env.unwrapped, Pass()))
    drawing = env.render()
    assert all(name in drawing for name in BIN_NAMES) and "last: turn 1, player_0 (bottom): pass" in drawing
    assert drawing.startswith(render_board(env.unwrapped.game))


# ---------------------------------------------------------------------------
# Episodes, seeds, registration, the parallel form
# ---------------------------------------------------------------------------
def test_episodes_of_a_seed_are_the_generated_puzzles_whatever_the_mode() -> None:
    puzzles = []
    for mode in COMM_MODES:
        env = raw_env(n=5, comm_mode=mode, max_steps=7)
        env.reset(seed=9)
        env.reset()
        puzzles.append(env.game.puzzle)
        assert env.episode_index == 1
    assert all(p == puzzles[0] for p in puzzles)
    assert puzzles[0] == generate(5, puzzle_rng(9, 1))
    jumped = raw_env(n=5)
    jumped.reset(seed=9, options={"episode": 1})
    assert jumped.game.puzzle == puzzles[0]


def test_suite_puzzles_cycle_through_the_suite() -> None:
    from eq_env.einstein_puzzle.suite import load_suite

    env = raw_env(n=7, puzzles="suite")
    env.reset(seed=123, options={"episode": 301})
    assert env.game.puzzle == load_suite(7)[1] == episode_puzzle(env.config, 0, 1)


def test_reset_refuses_bad_seeds_and_options() -> None:
    env = raw_env(n=4)
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)
    with pytest.raises(ValueError, match="n is a game parameter"):
        env.reset(seed=0, options={"n": 5})
    with pytest.raises(ValueError, match="episode"):
        env.reset(seed=0, options={"episode": -2})
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    with pytest.raises(ValueError, match="unknown agent"):
        env.reset(seed=0) or env.observe("player_2")


def test_the_wrapper_refuses_calls_out_of_order() -> None:
    env = einstein_puzzle_v0.env(n=4, max_steps=1)
    with pytest.raises(AttributeError, match="before reset"):
        env.agents  # noqa: B018
    for call in (env.last, lambda: env.step(0), env.agent_iter, env.state, lambda: env.observe("player_0")):
        with pytest.raises(RuntimeError, match="reset"):
            call()
    env.reset(seed=0)
    assert env.agents == ["player_0", "player_1"] and env.agent_selection == "player_0"
    for _ in env.agent_iter():
        _, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else codec.n_actions(4) - 1)
    with pytest.raises(RuntimeError, match="episode is over"):
        env.last()
    env.step(None)  # (after the end: PettingZoo's warning, not an error)


def test_registered_with_pettingzoo_and_the_core() -> None:
    env = pettingzoo.make("aec", ID, n=5, comm_mode="provide_only")
    env.reset(seed=1)
    obs, *_ = env.last()
    assert obs["action_mask"].shape == (241,) and env.unwrapped.config.n == 5
    par = pettingzoo.make("parallel", ID)
    assert isinstance(par, EinsteinPuzzleParallelEnv)
    spec = env_spec("einstein-puzzle")
    assert spec.id == ID and env_spec().name == "exchange-audit"  # (the first game stays the default)
    assert set(spec.plot_metrics) <= set(METRICS) and ID in eq_env.ENV_IDS
    assert einstein_puzzle_v0.__doc__ and "# The collaborative Einstein puzzle" in einstein_puzzle_v0.__doc__


def test_the_parallel_form_plays_the_acting_agents_action() -> None:
    par = einstein_puzzle_v0.parallel_env(n=4, max_steps=4, pass_penalty=0.5)
    obs, infos = par.reset(seed=0)
    assert obs["player_0"]["action_mask"].sum() > 1 and obs["player_1"]["action_mask"].tolist() == only_pass(4)
    with pytest.raises(ValueError, match="player_0's turn"):
        par.step({"player_1": 0})
    pass_ = codec.n_actions(4) - 1
    obs, rewards, _, _, infos = par.step({"player_0": pass_, "player_1": 12345})
    assert rewards == {"player_0": -0.5, "player_1": -0.5} and infos["player_1"] == {}
    assert infos["player_0"]["last_action"]["action"] == "pass" and obs["player_1"]["action_mask"].any()
    for _ in range(3):
        obs, rewards, _, truncs, infos = par.step(dict.fromkeys(PLAYERS, pass_))
    assert all(truncs.values()) and par.agents == []
    assert infos["player_0"] == {"success": False, "turns": 4, "placed": 0}
    with pytest.raises(RuntimeError):
        par.step(dict.fromkeys(PLAYERS, pass_))


def test_state_is_the_global_board_and_goal() -> None:
    env = raw_env(n=4)
    env.reset(seed=0)
    state = env.state()
    assert env.state_space.contains(state)
    assert np.array_equal(state[: 7 * 4].reshape(4, 7).argmax(axis=1), env.game.location)
    assert np.array_equal(state[28 : 28 + 16].reshape(4, 4).argmax(axis=1), env.game.puzzle.goal)


# ---------------------------------------------------------------------------
# Records and metrics
# ---------------------------------------------------------------------------
def test_record_of_a_played_episode() -> None:
    env = raw_env(n=4, max_steps=6)
    env.reset(seed=3)
    game = env.game
    top = next(o for o, s in enumerate(game.puzzle.start) if s == TOP_START)
    bottom = next(o for o, s in enumerate(game.puzzle.start) if s == BOTTOM_START)
    wrong = next(b for b in row_bins(0) if b != game.puzzle.goal[bottom])
    mine = next(k for k in game.puzzle.given(1) if k not in game.puzzle.given(0))
    script = [Pass(), Share(mine), Move(top, TOP_START, COMMON), Ask(bottom), Move(bottom, BOTTOM_START, wrong),
              Pass()]  # fmt: skip
    for action in script:
        env.step(index(env, action))
    record = record_episode(env, 3, 0, {"player_0": {"verifier_interventions": 2}, "player_1": {}})
    assert (record.n, record.comm_mode, record.max_steps, record.turns) == (4, "provide_and_seek", 6, 6)
    assert not record.success and record.placed == 0
    assert (record.rejected, record.illegal, record.shares, record.asks, record.answers, record.passes) == (
        1, 1, 1, 1, 0, 2)  # fmt: skip
    assert record.outcomes == ("accepted", "accepted", "illegal", "accepted", "rejected", "accepted")
    assert record.actions[2] == f"move {top} from top_start to common"
    assert record.rule_inconsistent >= 3  # the first pass, the illegal move, the guess into a goal bin
    assert record.verifier_interventions == 2 and record.infos["player_0"] == {"verifier_interventions": 2}
    assert EpisodeRecord.from_dict(record.to_dict()) == record
    with pytest.raises(RuntimeError, match="not over"):
        env.reset(seed=0) or record_episode(env, 0, 0, {})


def make_record(success: bool, turns: int, placed: int, **counts: int) -> EpisodeRecord:
    fields = {"rejected": 0, "illegal": 0, "rule_inconsistent": 0, "shares": 0, "asks": 0, "answers": 0,
              "passes": 0, "verifier_interventions": 0, **counts}  # fmt: skip
    return EpisodeRecord(seed=0, episode=0, n=4, comm_mode="none", max_steps=30, success=success, turns=turns,
                         placed=placed, actions=("pass",) * turns, outcomes=("accepted",) * turns,
                         **fields)  # fmt: skip


def test_metrics_on_hand_made_episodes() -> None:
    records = [make_record(True, 10, 4, rejected=2, shares=3, rule_inconsistent=1),
               make_record(True, 20, 4, asks=2, answers=1),
               make_record(False, 30, 1, rejected=4, verifier_interventions=6, illegal=3)]  # fmt: skip
    metrics = compute_metrics(records)
    assert set(metrics) == set(METRICS)
    assert metrics["success_rate"] == pytest.approx(2 / 3) and metrics["steps"] == 15.0
    assert metrics["partial_success"] == pytest.approx((1 + 1 + 0.25) / 3)
    assert metrics["rejected_placements"] == 2.0 and metrics["rule_inconsistent"] == pytest.approx(1 / 3)
    assert metrics["shares"] == 1.0 and metrics["asks"] == pytest.approx(2 / 3)
    assert metrics["answers"] == pytest.approx(1 / 3) and metrics["verifier_interventions"] == 2.0
    assert metrics["illegal_actions"] == 1.0
    assert math.isnan(compute_metrics([records[2]])["steps"])
    assert all(math.isnan(v) for v in compute_metrics([]).values())


def test_from_dict_round_trip_and_bad_fields() -> None:
    record = make_record(True, 3, 4, shares=1)
    data = record.to_dict()
    assert EpisodeRecord.from_dict(data) == record and isinstance(data["actions"], list)
    assert env_spec(ID).record_from_dict(data) == record
    with pytest.raises(ValueError, match="turns must be a non-negative integer"):
        EpisodeRecord.from_dict({**data, "turns": "three"})
    with pytest.raises(ValueError, match="missing field 'success'"):
        EpisodeRecord.from_dict({k: v for k, v in data.items() if k != "success"})
    with pytest.raises(ValueError, match="comm_mode"):
        EpisodeRecord.from_dict({**data, "comm_mode": "shout"})
    with pytest.raises(ValueError, match="one entry per turn"):
        EpisodeRecord.from_dict({**data, "actions": ["pass"]})


@pytest.mark.slow
def test_many_random_games_keep_every_promise() -> None:
    for n in (4, 6, 8):
        for mode in COMM_MODES:
            for env in random_states(n, mode, episodes=20, seed=100 + n):
                game = env.game
                obs = env.observe(env.agent_selection)
                assert env.observation_space(env.agent_selection).contains(obs)
                if not game.over:
                    actions = codec.actions(n)
                    assert np.array_equal(obs["action_mask"], [not game.check(a) for a in actions])
                for player in (0, 1):
                    assert np.array_equal(env.observe(PLAYERS[player])["observation"],
                                          codec.encode_observation(game, player))  # fmt: skip
                    assert env.observe(PLAYERS[player])["text"] == describe(game, player)
