"""The oracle's fine-tuning demonstrations (``eq-env einstein demos``) and the error taxonomy.

Demonstrations: every line's action is legal and accepted, the lines replay their games to success, the user
message is exactly the LLM player's prompt, the same flags write the same bytes, the splits have the sizes and
puzzles they promise, bad flags get one line and status 2. Taxonomy: a hand-made game for each category and
kind, the failed game's first error, format failures from the infos, the puzzle found from the record alone,
agreement with the records' rule-inconsistent counts, and determinism.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from eq_env.agents.einstein_puzzle.prompt import render_messages
from eq_env.cli import main
from eq_env.einstein_puzzle import spaces as codec
from eq_env.einstein_puzzle import taxonomy
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.env import episode_puzzle, raw_env
from eq_env.einstein_puzzle.grammar import parse_action
from eq_env.einstein_puzzle.records import EpisodeRecord, record_episode
from eq_env.einstein_puzzle.rules import (
    ACCEPTED,
    BIN_NAMES,
    BOTH,
    BOTTOM_START,
    COMM_MODES,
    TOP_START,
    Pass,
    Puzzle,
    new_game,
    row_bins,
    start_bin,
)
from eq_env.einstein_puzzle.suite import load_suite
from eq_env.einstein_puzzle.taxonomy import (
    CATEGORIES,
    COMMUNICATION,
    FORMAT,
    PHYSICAL,
    REASONING,
    classify_record,
    counts,
    format_table,
    record_puzzle,
    table,
)
from eq_env.einstein_puzzle.text import describe
from eq_env.einstein_puzzle.verifiers import rational_reason
from eq_env.studies.einstein_puzzle.demos import demonstration_games, demonstrations, split_paths

# -- demonstrations -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lines() -> list[dict[str, Any]]:
    return list(demonstrations([4, 5, 6], episodes=3, seed=7))


def _games(lines: list[dict[str, Any]]) -> dict[tuple[int, str, int], list[dict[str, Any]]]:
    games: dict[tuple[int, str, int], list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        m = line["meta"]
        games[m["n"], m["comm_mode"], m["episode"]].append(line)
    return games


def test_lines_are_chat_format(lines: list[dict[str, Any]]) -> None:
    assert lines
    for line in lines:
        roles = [m["role"] for m in line["messages"]]
        assert roles == ["system", "user", "assistant"]
        assert all(isinstance(m["content"], str) and m["content"] for m in line["messages"])
        json.dumps(line)  # JSON-ready


def test_every_action_is_legal_accepted_and_replays_to_success(lines: list[dict[str, Any]]) -> None:
    games = _games(lines)
    assert len(games) == 3 * 3 * len(COMM_MODES)  # sizes x episodes x modes, none skipped
    for (n, mode, _), game_lines in games.items():
        puzzle = Puzzle.from_dict(game_lines[0]["meta"]["puzzle"])
        state = new_game(puzzle, mode)
        for line in game_lines:
            meta = line["meta"]
            action = parse_action(line["messages"][2]["content"], n)
            assert (meta["turn"], meta["player"]) == (state.turn, state.current)
            assert state.check(action) == ""
            assert meta["rational"] == (rational_reason(state, action) == "")
            assert line["messages"][:2] == render_messages(describe(state, state.current))
            assert state.play(action).outcome == ACCEPTED == meta["outcome"]
        assert state.success
        assert meta["plan_length"] == state.turn == len(game_lines)


def test_irrational_lines_are_the_oracles_waits(lines: list[dict[str, Any]]) -> None:
    """The oracle keeps its plan; what the reasoning verifier refuses is marked (only waiting passes)."""
    flagged = [line for line in lines if not line["meta"]["rational"]]
    assert all(line["messages"][2]["content"] == "pass" and line["meta"]["reason"] for line in flagged)


def test_user_message_is_the_llm_players_prompt(lines: list[dict[str, Any]]) -> None:
    for (n, mode, episode), game_lines in list(_games(lines).items())[::5]:
        env = raw_env(n=n, comm_mode=mode)
        env.reset(seed=7, options={"episode": episode})
        for line in game_lines:
            agent = env.agent_selection
            assert line["meta"]["agent"] == agent
            assert line["messages"][:2] == render_messages(env.observe(agent)["text"])
            env.step(codec.action_index(parse_action(line["messages"][2]["content"], n), n))
        assert env.game is not None and env.game.success


def test_splits_have_the_promised_sizes_and_puzzles() -> None:
    train = list(demonstration_games(episodes=2, seed=3, comm_modes=["none"]))
    test = list(demonstration_games(episodes=2, split="test", comm_modes=["none"]))
    assert len(train) == 3 * 2 and len(test) == 2 * 2
    suite_keys = {json.dumps(p.to_dict(), sort_keys=True) for ps in load_suite().values() for p in ps}
    for game in train:
        meta = game[0]["meta"]
        assert meta["n"] in (4, 5, 6) and meta["split"] == "train" and meta["source"] == "generated"
        expected = episode_puzzle(EinsteinPuzzleConfig(n=meta["n"]), 3, meta["episode"])
        assert meta["puzzle"] == expected.to_dict()
        assert json.dumps(meta["puzzle"], sort_keys=True) not in suite_keys
    for game in test:
        meta = game[0]["meta"]
        assert meta["n"] in (7, 8) and meta["split"] == "test" and meta["seed"] is None
        assert meta["puzzle"] == load_suite(meta["n"])[meta["episode"]].to_dict()
    with pytest.raises(ValueError, match="sizes"):
        list(demonstrations([9], split="test"))


def _demos(tmp_path: Path, name: str, *flags: str) -> tuple[int, Path]:
    out = tmp_path / name
    code = main(["einstein", "demos", "--out", str(out), *flags])
    return code, out


def test_cli_writes_deterministic_files(tmp_path: Path) -> None:
    flags = ("--n", "4-5", "--episodes", "2", "--comm-mode", "provide_only,seek_only", "--seed", "11")
    code_a, a = _demos(tmp_path, "a.jsonl", *flags)
    code_b, b = _demos(tmp_path, "b.jsonl", *flags)
    assert code_a == code_b == 0
    assert a.read_bytes() == b.read_bytes()
    games = {(d["meta"]["n"], d["meta"]["comm_mode"], d["meta"]["episode"])
             for d in map(json.loads, a.read_text().splitlines())}  # fmt: skip
    assert len(games) == 2 * 2 * 2
    code_c, c = _demos(tmp_path, "c.jsonl", *flags[:-1], "12")
    assert code_c == 0 and c.read_bytes() != a.read_bytes()


def test_cli_both_splits(tmp_path: Path) -> None:
    code, out = _demos(tmp_path, "d.jsonl", "--split", "both", "--episodes", "1", "--comm-mode", "none")
    assert code == 0
    paths = split_paths(out, "both")
    assert paths == {"train": tmp_path / "d_train.jsonl", "test": tmp_path / "d_test.jsonl"}
    sizes = {s: {json.loads(x)["meta"]["n"] for x in p.read_text().splitlines()} for s, p in paths.items()}
    assert sizes == {"train": {4, 5, 6}, "test": {7, 8}}


@pytest.mark.parametrize(
    ("flags", "names"),
    [
        (["--n", "3"], "--n"),
        (["--split", "test", "--test-n", "9"], "--test-n"),
        (["--comm-mode", "shout"], "--comm-mode"),
        (["--episodes", "0"], "--episodes"),
        (["--prompt-version", "v99"], "--prompt-version"),
        (["--seed", "-1"], "--seed"),
    ],
)
def test_cli_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], names: str) -> None:
    try:
        code = main(["einstein", "demos", "--out", str(tmp_path / "x.jsonl"), *flags])
    except SystemExit as exit_:
        code = exit_.code  # type: ignore[assignment]
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and names in err[0]
    assert not (tmp_path / "x.jsonl").exists()


# -- taxonomy: hand-made games ------------------------------------------------------------------------


def _play(actions: list[str], *, n: int = 4, mode: str = "provide_and_seek", max_steps: int | None = None,
          seed: int = 0, episode: int = 0, infos: dict[str, Any] | None = None, puzzles: str = "generated",
          ) -> EpisodeRecord:  # fmt: skip
    """The record of a game played with ``actions`` (texts, played on the rules' game: from = to moves are in
    no action space, yet an LLM harness may record one), passes after them up to the step limit."""
    config = EinsteinPuzzleConfig(n=n, comm_mode=mode, max_steps=max_steps or len(actions), puzzles=puzzles)
    game = new_game(episode_puzzle(config, seed, episode), mode, config.step_limit)
    for text in actions:
        game.play(parse_action(text, n))
    while not game.over:
        game.play(Pass())
    return record_episode(SimpleNamespace(unwrapped=SimpleNamespace(game=game)), seed, episode, infos or {})


def _puzzle(seed: int = 0, episode: int = 0, n: int = 4) -> Puzzle:
    return episode_puzzle(EinsteinPuzzleConfig(n=n), seed, episode)


def _own(puzzle: Puzzle, player: int, *, goal_in_row: bool) -> int:
    """An object in ``player``'s start bin whose goal is (or is not) in its row."""
    return next(o for o in range(puzzle.n) if puzzle.start[o] == start_bin(player)
                and (puzzle.goal[o] in row_bins(player)) == goal_in_row)  # fmt: skip


def _find(predicate: Any, n: int = 4) -> tuple[int, Puzzle]:
    """The first episode of seed 0 whose puzzle satisfies ``predicate``."""
    for episode in range(200):
        puzzle = _puzzle(0, episode, n)
        if predicate(puzzle):
            return episode, puzzle
    raise AssertionError("no such puzzle")


def _kinds(items: list[taxonomy.ErrorItem]) -> list[tuple[str, str, int | None]]:
    return [(i.category, i.kind, i.turn) for i in items if i.scope == "action"]


def _game(items: list[taxonomy.ErrorItem]) -> taxonomy.ErrorItem:
    (game,) = [i for i in items if i.scope == "game"]
    return game


def _has_own(player: int, goal_in_row: bool) -> Any:
    def ok(p: Puzzle) -> bool:
        return any(p.start[o] == start_bin(player) and (p.goal[o] in row_bins(player)) == goal_in_row
                   for o in range(p.n))  # fmt: skip

    return ok


def test_physical_understanding() -> None:
    episode, p = _find(_has_own(0, True))
    o = _own(p, 0, goal_in_row=True)
    top = next(x for x in range(p.n) if p.start[x] == TOP_START)
    actions = [
        f"move {o} from bottom_start to bottom_start",  # same bin
        "pass",
        f"move {top} from top_start to common",  # out of reach for player 0
        "pass",
        f"move {top} from bottom_start to common",  # not in the from-bin
        "pass",
        f"move {o} from bottom_start to common",  # accepted (an irrational hand-off)
        "pass",
        f"move {o} from common to bottom_start",  # into a start bin: rejected
    ]
    items = classify_record(_play(actions, episode=episode))
    physical = [k for k in _kinds(items) if k[0] == PHYSICAL]
    assert physical == [
        (PHYSICAL, "illegal move: same bin", 0),
        (PHYSICAL, "illegal move: out of reach", 2),
        (PHYSICAL, "illegal move: not in the from-bin", 4),
        (PHYSICAL, "move into a start bin", 8),
    ]
    assert (REASONING, "hand-off of an own-row object", 6) in _kinds(items)
    game = _game(items)
    assert (game.category, game.kind, game.turn) == (PHYSICAL, "failed: illegal move: same bin", 0)


def test_communication() -> None:
    p = _puzzle()
    grounded = p.constraints[0].a
    items = classify_record(_play(["share 0", f"ask {grounded}", "answer 1 top_left"], mode="provide_and_seek"))
    kinds = _kinds(items)
    assert kinds[0] == (COMMUNICATION, "share of what the partner has", 0)
    assert kinds[1] == (COMMUNICATION, "ask about an inferable object", 1)
    assert kinds[2] == (COMMUNICATION, "illegal answer", 2)
    assert _game(items).category == COMMUNICATION
    none_mode = classify_record(_play(["share 1", "ask 1"], mode="none"))
    assert _kinds(none_mode)[:2] == [(COMMUNICATION, "illegal share", 0), (COMMUNICATION, "illegal ask", 1)]
    provide = classify_record(_play(["ask 1"], mode="provide_only"))
    assert _kinds(provide)[0] == (COMMUNICATION, "illegal ask", 0)


def test_a_reshare_of_a_relation_both_players_hold_is_a_share_of_what_the_partner_has() -> None:
    """Player 0 shares a relation both players hold (rational: nothing says the partner has it yet); player 1
    then shares the same relation back: it re-shares what the partner shared, whoever else holds it."""
    episode, p = _find(lambda p: any(h == BOTH for h in p.holders[1:]))
    k = next(k for k in range(1, p.n) if p.holders[k] == BOTH)
    items = classify_record(_play([f"share {k}", f"share {k}"], episode=episode))
    turns = [i for i in items if i.scope == "action" and i.turn is not None and i.turn < 2]
    assert [(i.category, i.kind, i.turn, i.player) for i in turns] == [
        (COMMUNICATION, "share of what the partner has", 1, 1)]  # fmt: skip
    assert f"partner shared constraint {k}" in turns[0].reason


def test_none_mode_a_rejected_placement_the_player_knew_was_wrong_is_no_guess() -> None:
    """In none mode a rejected placement is a wrong guess only when the verifier allows it (the goal bin still
    possible); one into a bin the player knows is not the object's goal is a wrong placement."""
    episode, p = _find(lambda p: p.start[p.constraints[0].a] == BOTTOM_START)
    grounded = p.constraints[0].a  # player 0 knows its goal exactly (the grounding)
    wrong = next(b for b in row_bins(0) if b != p.goal[grounded])
    items = classify_record(_play([f"move {grounded} from bottom_start to {BIN_NAMES[wrong]}"], episode=episode,
                                  mode="none"))  # fmt: skip
    (first,) = [i for i in items if i.scope == "action" and i.turn == 0]
    assert (first.category, first.kind, first.outcome) == (REASONING, "wrong placement", "rejected")
    assert "cannot go" in first.reason


def test_share_about_placed_objects() -> None:
    """A relation of player 0's about two objects it placed (lucky placements: guesses), shared afterwards."""

    def mine(p: Puzzle, o: int) -> bool:
        return p.start[o] == BOTTOM_START and p.goal[o] in row_bins(0)

    def relation(p: Puzzle) -> int | None:
        return next((k for k in range(1, p.n) if p.holders[k] in (0, BOTH)
                     and all(mine(p, o) for o in p.constraints[k].objects())), None)  # fmt: skip

    episode, p = _find(lambda p: relation(p) is not None)
    k = relation(p)
    a, b = p.constraints[k].objects()  # type: ignore[index]
    actions = [f"move {a} from bottom_start to {BIN_NAMES[p.goal[a]]}", "pass",
               f"move {b} from bottom_start to {BIN_NAMES[p.goal[b]]}", "pass", f"share {k}"]  # fmt: skip
    items = classify_record(_play(actions, episode=episode))
    assert (COMMUNICATION, "share about placed objects", 4) in _kinds(items)


def _unknown_own(p: Puzzle, mode: str) -> int | None:
    """An object in player 0's start bin, goal in its row, whose goal player 0 cannot infer at the start."""
    state = new_game(p, mode)
    return next((o for o in range(p.n) if p.start[o] == BOTTOM_START and p.goal[o] in row_bins(0)
                 and state.knowledge(0).goal(o) is None), None)  # fmt: skip


def test_task_reasoning() -> None:
    episode, p = _find(_has_own(0, True))
    o = _own(p, 0, goal_in_row=True)
    wrong = next(b for b in row_bins(0) if b != p.goal[o])
    items = classify_record(_play([f"move {o} from bottom_start to {BIN_NAMES[wrong]}", "pass"], episode=episode))
    assert _kinds(items)[0] == (REASONING, "wrong placement", 0)
    assert _kinds(items)[1] == (REASONING, "pass while an action was rational", 1)
    game = _game(items)
    assert (game.category, game.kind) == (REASONING, "failed: wrong placement")
    # in none mode, a wrong move the verifier allows (the goal unknown: a guess) is a wrong guess
    episode, p = _find(lambda p: _unknown_own(p, "none") is not None)
    unknown = _unknown_own(p, "none")
    assert unknown is not None
    wrong = next(b for b in row_bins(0) if b != p.goal[unknown])
    guessed = classify_record(_play([f"move {unknown} from bottom_start to {BIN_NAMES[wrong]}"], episode=episode,
                                    mode="none"))  # fmt: skip
    assert _kinds(guessed)[0] == (REASONING, "wrong guess", 0)


def test_guess_and_move_out_of_a_goal_bin() -> None:
    """A lucky placement of an object whose goal the mover cannot infer is a guess outside none mode; taking
    a placed object back out is a task-reasoning error too."""

    episode, p = _find(lambda p: _unknown_own(p, "provide_and_seek") is not None)
    o = _unknown_own(p, "provide_and_seek")
    assert o is not None
    goal = BIN_NAMES[p.goal[o]]
    items = classify_record(_play([f"move {o} from bottom_start to {goal}", "pass",
                                   f"move {o} from {goal} to common"], episode=episode))  # fmt: skip
    assert _kinds(items)[0] == (REASONING, "guess", 0)
    assert (REASONING, "move out of a goal bin", 2) in _kinds(items)


def test_ran_out_of_steps() -> None:
    """Only rational actions, too few turns: the failed game is task reasoning, "ran out of steps"."""
    p = _puzzle()
    k0 = next(k for k in range(1, p.n) if p.holders[k] == 0)
    k1 = next(k for k in range(1, p.n) if p.holders[k] == 1)
    record = _play([f"share {k0}", f"share {k1}"])
    assert not record.success and record.rule_inconsistent == 0
    items = classify_record(record)
    assert [(i.scope, i.category, i.kind) for i in items] == [("game", REASONING, "ran out of steps")]


def test_won_games_have_no_game_item() -> None:
    from eq_env.einstein_puzzle.planner import oracle_plan

    plan = oracle_plan(new_game(_puzzle(), "provide_and_seek"))
    assert plan is not None
    record = _play([a.text() for a in plan])
    assert record.success
    assert all(i.scope == "action" and i.kind == "pass while an action was rational" for i in classify_record(record))


def test_format_following_from_infos() -> None:
    infos = {"player_1": {"fallback": True, "fallback_reason": "no valid reply in 3 attempts: x",
                          "invalid_replies": ["a", "b", "c"]}}  # fmt: skip
    p = _puzzle()
    k0 = next(k for k in range(1, p.n) if p.holders[k] == 0)
    items = classify_record(_play([f"share {k0}", "pass", "move 0 from top_start to top_start"], infos=infos))
    fmt = [(i.kind, i.turn, i.player) for i in items if i.category == FORMAT and i.scope == "action"]
    assert fmt == [("fallback", None, 1), ("invalid reply", None, 1), ("invalid reply", None, 1),
                   ("invalid reply", None, 1)]  # fmt: skip
    game = _game(items)
    assert (game.category, game.kind) == (FORMAT, "failed: fallback")  # a turn-less fallback counts first
    # invalid replies alone (re-asked, then valid) never decide the game
    only_reasks = classify_record(_play([f"share {k0}", "pass", "pass"], infos={"player_0": {"reasks": 2}}))
    assert [i.kind for i in only_reasks if i.category == FORMAT] == ["invalid reply", "invalid reply"]
    assert _game(only_reasks).category == REASONING
    # the proposed per-turn field: the fallback's turn is a format error, whatever was played
    timed = classify_record(_play(["pass", "pass", "pass"], infos={"player_1": {"fallback": True,
                                                                               "fallback_turns": [1]}}))  # fmt: skip
    assert _kinds(timed)[:2] == [(REASONING, "pass while an action was rational", 0), (FORMAT, "fallback", 1)]
    assert _game(timed).category == REASONING  # turn 0 came first


# -- taxonomy: the record alone -----------------------------------------------------------------------


def _random_records(mode: str, count: int, puzzles: str = "generated") -> list[EpisodeRecord]:
    """Games of a player choosing uniformly among all actions half the time, legal ones otherwise."""
    rng = np.random.default_rng(5)
    out = []
    for episode in range(count):
        env = raw_env(n=4, comm_mode=mode, max_steps=12, puzzles=puzzles)
        env.reset(seed=1, options={"episode": episode})
        for _agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(rng.integers(env.n_actions)) if rng.random() < 0.5 else int(rng.choice(legal)))
        out.append(record_episode(env, 1, episode, {}))
    return out


@pytest.mark.parametrize("mode", ["provide_and_seek", "seek_only"])
def test_action_items_match_the_rule_inconsistent_count(mode: str) -> None:
    """Outside none mode a rejected move is never rational, so the action items are exactly the record's
    rule-inconsistent actions (illegal ones included), and every failed game gets one game item."""
    for record in _random_records(mode, 6):
        items = classify_record(record)
        assert sum(i.scope == "action" for i in items) == record.rule_inconsistent
        failed = {t for t, o in enumerate(record.outcomes) if o != ACCEPTED}
        assert failed <= {i.turn for i in items if i.scope == "action"}
        assert sum(i.scope == "game" for i in items) == (not record.success)
        assert all(i.category in CATEGORIES for i in items)


def test_deterministic_and_dict_form() -> None:
    records = _random_records("provide_and_seek", 4)
    first = [classify_record(r) for r in records]
    again = [classify_record(json.loads(json.dumps(r.to_dict()))) for r in records]
    assert first == again
    assert counts(records) == counts(records)
    assert sum(counts(records).values()) == sum(not r.success for r in records)
    assert list(counts(records, scope="actions")) == list(CATEGORIES)


def test_puzzle_found_from_the_record_or_refused() -> None:
    suite_record = _random_records("provide_only", 1, puzzles="suite")[0]
    generated = _random_records("provide_only", 1)[0]
    assert record_puzzle(generated) == _puzzle(1, 0)
    # a suite game with a placement is told apart from the generated puzzle of the same seed and episode
    for episode, suite_puzzle in enumerate(load_suite(4)):  # a placement the generated puzzle would reject
        placeable = [o for o in range(4) if suite_puzzle.start[o] == BOTTOM_START and suite_puzzle.goal[o] < 4
                     and suite_puzzle.goal[o] in row_bins(0)]  # fmt: skip
        generated_puzzle = _puzzle(1, episode)
        o = next((o for o in placeable if generated_puzzle.start[o] != BOTTOM_START
                  or generated_puzzle.goal[o] != suite_puzzle.goal[o]), None)  # fmt: skip
        if o is not None:
            break
    assert o is not None
    record = _play([f"move {o} from bottom_start to {BIN_NAMES[suite_puzzle.goal[o]]}"], puzzles="suite", seed=1,
                   episode=episode)  # fmt: skip
    assert record_puzzle(record) == suite_puzzle
    assert record_puzzle(suite_record, puzzle=load_suite(4)[0]) == load_suite(4)[0]
    tampered = {**generated.to_dict(), "outcomes": ["illegal"] * generated.turns}
    if tampered["outcomes"] != list(generated.outcomes):
        with pytest.raises(ValueError, match="does not replay"):
            classify_record(tampered)
    with_puzzle = {**suite_record.to_dict(), "puzzle": load_suite(4)[0].to_dict()}
    assert classify_record(with_puzzle) == classify_record(suite_record, puzzle=load_suite(4)[0])


def test_table_rows() -> None:
    by_condition = {"provide_and_seek": _random_records("provide_and_seek", 3), "none": _random_records("none", 3)}
    rows = table(by_condition)
    assert [r["condition"] for r in rows] == ["provide_and_seek", "none"]
    for row, records in zip(rows, by_condition.values(), strict=True):
        assert row["games"] == 3 and row["failed"] == sum(not r.success for r in records)
        assert sum(row[c] for c in CATEGORIES) == row["failed"]
        assert {c: row[f"{c} actions"] for c in CATEGORIES} == counts(records, scope="actions")
    text = format_table(rows)
    assert text.count("\n") == 4 and "task reasoning" in text


# -- found by attacking it -----------------------------------------------------------------------------
def test_the_oracles_none_mode_guesses_are_marked(lines: list[dict[str, Any]]) -> None:
    guesses = [line for line in lines if line["meta"]["guess"]]
    assert guesses and all(line["meta"]["comm_mode"] == "none" for line in guesses)
    for line in guesses:  # a guess is a move the mover could not infer, and the oracle's is always right
        assert line["messages"][2]["content"].startswith("move") and line["meta"]["outcome"] == "accepted"


def test_a_record_dict_without_its_puzzle_falls_back_and_its_own_puzzle_comes_first() -> None:
    import dataclasses

    record = _play(["pass"], max_steps=4)
    bare = dataclasses.replace(record, puzzle={}).to_dict()
    assert taxonomy.counts([bare]) == taxonomy.counts([record])  # (found by the generator, as before)
    # a record that carries its puzzle is classified on it, whatever config is passed
    wrong = EinsteinPuzzleConfig(n=5, puzzles="suite")
    assert taxonomy.counts([record.to_dict()], config=wrong) == taxonomy.counts([record])
    with pytest.raises(ValueError, match="holds a bad puzzle"):
        taxonomy.counts([{**record.to_dict(), "puzzle": {"garbage": 1}}])


def test_a_flag_for_the_other_split_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["einstein", "demos", "--split", "train", "--test-n", "8", "--out", str(tmp_path / "a.jsonl")]) == 2
    assert "argument --test-n" in capsys.readouterr().err
    assert main(["einstein", "demos", "--split", "test", "--n", "5", "--out", str(tmp_path / "b.jsonl")]) == 2
    assert "argument --n" in capsys.readouterr().err
    assert not (tmp_path / "a.jsonl").exists() and not (tmp_path / "b.jsonl").exists()


def test_dry_run_shows_the_llm_players_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["play", "--env", "einstein-puzzle", "--player_0", "llm:verifier=reasoning,k=4", "--player_1",
                   "planner", "--model", "M", "--base-url", "http://127.0.0.1:9/v1", "--dry-run"])  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0 and "===== player_0" in out and "You are player_0" in out and "move O from BIN" in out
