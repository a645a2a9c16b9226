"""The Einstein puzzle's pure rules: bins, the relation algebra, knowledge, legality, turns, the end.

Each of the original code's bugs listed in the spec has a test showing ours does it right
(``test_bug_*``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.generator import generate
from eq_env.einstein_puzzle.rules import (
    ACCEPTED,
    BIN_NAMES,
    BOTH,
    BOTTOM_LEFT,
    BOTTOM_RIGHT,
    BOTTOM_START,
    COMMON,
    ILLEGAL,
    TOP_LEFT,
    TOP_RIGHT,
    TOP_START,
    Answer,
    Ask,
    Constraint,
    Knowledge,
    Move,
    Pass,
    Puzzle,
    Share,
    compose,
    default_max_steps,
    new_game,
    reachable,
    relation,
)
from eq_env.einstein_puzzle.verifiers import communication, reasoning

BINS = (TOP_LEFT, TOP_RIGHT, BOTTOM_LEFT, BOTTOM_RIGHT)


def hand_puzzle(holders: tuple[int, ...] = (BOTH, 0, 1, BOTH)) -> Puzzle:
    """Four objects: 0 → top_left (grounded), 1 same row as 0 → top_right, 2 same column as 0 →
    bottom_left, 3 same row as 2 → bottom_right. Objects 0 and 2 start at the bottom, 1 and 3 at the top.
    Player 0 holds relation 1, player 1 relation 2, both relation 3."""
    return Puzzle(
        start=(BOTTOM_START, TOP_START, BOTTOM_START, TOP_START),
        goal=(TOP_LEFT, TOP_RIGHT, BOTTOM_LEFT, BOTTOM_RIGHT),
        constraints=(Constraint(0, None, TOP_LEFT), Constraint(1, 0, 1), Constraint(2, 0, 2), Constraint(3, 2, 1)),
        holders=holders,
    )


# -- bins and the algebra ---------------------------------------------------------------------------------
def test_reachability_is_own_row_own_start_and_common() -> None:
    assert reachable(0) == {BOTTOM_LEFT, BOTTOM_RIGHT, BOTTOM_START, COMMON}
    assert reachable(1) == {TOP_LEFT, TOP_RIGHT, TOP_START, COMMON}
    assert reachable(0) & reachable(1) == {COMMON}  # the only way across


def test_relation_codes_are_the_papers() -> None:
    assert relation(TOP_LEFT, TOP_LEFT) == 0  # same bin
    assert relation(TOP_LEFT, TOP_RIGHT) == 1  # same row, other column
    assert relation(TOP_LEFT, BOTTOM_LEFT) == 2  # same column, other row
    assert relation(TOP_LEFT, BOTTOM_RIGHT) == 3 and relation(TOP_RIGHT, BOTTOM_LEFT) == 3  # the diagonals


def test_composition_is_the_klein_four_group() -> None:
    row, col, diag, same = 1, 2, 3, 0
    assert compose(row, row) == same and compose(row, col) == diag
    assert compose(row, diag) == col and compose(col, diag) == row
    for x in range(4):
        assert compose(x, same) == x and compose(x, x) == same
    # composition agrees with the geometry: rel(a, c) = rel(a, b) ∘ rel(b, c) for every three bins
    for a, b, c in itertools.product(BINS, repeat=3):
        assert relation(a, c) == compose(relation(a, b), relation(b, c))


# -- puzzles ---------------------------------------------------------------------------------------------
def test_a_hand_built_puzzle_is_valid_and_round_trips() -> None:
    p = hand_puzzle()
    p.validate()
    assert Puzzle.from_dict(p.to_dict()) == p
    assert p.given(0) == (0, 1, 3) and p.given(1) == (0, 2, 3)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"goal": (0, 1, 0, 1)}, "all four"),
        ({"holders": (BOTH, 0, 0, BOTH)}, "player 1 only"),
        ({"holders": (0, 0, 1, BOTH)}, "grounding is held by both"),
        ({"start": (BOTTOM_START,) * 4}, "evenly"),
        ({"constraints": (Constraint(0, None, 0), Constraint(1, 0, 1), Constraint(1, 0, 1), Constraint(3, 2, 1))},
         "cycle"),
        ({"constraints": (Constraint(0, None, 0), Constraint(1, 0, 2), Constraint(2, 0, 2), Constraint(3, 2, 1))},
         "false of the goal"),
    ],
)  # fmt: skip
def test_malformed_puzzles_are_refused_with_the_reason(change: dict, message: str) -> None:
    fields = hand_puzzle().__dict__ | change
    with pytest.raises(ValueError, match=message):
        Puzzle(**fields).validate()


def test_from_dict_names_the_bad_field() -> None:
    data = hand_puzzle().to_dict()
    with pytest.raises(ValueError, match="'goal'"):
        Puzzle.from_dict({**data, "goal": "0123"})
    with pytest.raises(ValueError, match="constraint 2"):
        Puzzle.from_dict({**data, "constraints": [[0, None, 0], [1, 0, 1], "x", [3, 2, 3]]})
    with pytest.raises(ValueError, match="'n'"):
        Puzzle.from_dict({**data, "n": 5})


# -- knowledge -------------------------------------------------------------------------------------------
def brute_possible(n: int, constraints: list[Constraint], facts: list[tuple[int, int]],
                   exclusions: list[tuple[int, int]]) -> list[int]:  # fmt: skip
    """Possible goal bins by enumerating every assignment (independent of the union-find)."""
    masks = [0] * n
    for goal in itertools.product(range(4), repeat=n):
        if all(c.holds(goal) for c in constraints) and all(goal[o] == b for o, b in facts) \
                and all(goal[o] != b for o, b in exclusions):  # fmt: skip
            for o, g in enumerate(goal):
                masks[o] |= 1 << g
    return masks


def test_knowledge_is_the_exact_closure_on_random_subsets() -> None:
    rng = np.random.default_rng(0)
    for _ in range(60):
        p = generate(int(rng.integers(4, 7)), rng)
        relations = [c for c in p.constraints[1:] if rng.random() < 0.6]
        facts = [(int(o), p.goal[o]) for o in rng.choice(p.n, int(rng.integers(0, 2)), replace=False)]
        exclusions = [(int(o), int(b)) for o, b in zip(rng.integers(0, p.n, 2), rng.integers(0, 4, 2), strict=True)
                      if p.goal[o] != b]  # fmt: skip
        k = Knowledge(p.n, relations, facts, exclusions)
        assert list(k.masks()) == brute_possible(p.n, relations, facts, exclusions)
        assert k.conflicts == 0


def test_a_contradicting_fact_is_ignored_and_counted() -> None:
    k = Knowledge(2, [Constraint(0, 1, 1)], facts=[(0, TOP_LEFT), (1, BOTTOM_LEFT)])
    assert k.goal(0) == TOP_LEFT and k.goal(1) == TOP_RIGHT and k.conflicts == 1


def test_each_player_infers_from_its_own_constraints_and_public_placements() -> None:
    g = new_game(hand_puzzle())
    k0, k1 = g.knowledge(0), g.knowledge(1)
    assert k0.known() == {0: TOP_LEFT, 1: TOP_RIGHT}  # its relation 1 (1 same row as 0); 3 ties 3 to 2 only
    assert k1.known() == {0: TOP_LEFT, 2: BOTTOM_LEFT, 3: BOTTOM_RIGHT}
    # a share makes the constraint the partner's; knowledge follows
    g.play(Share(1))
    assert g.knowledge(1).goal(1) == TOP_RIGHT
    assert g.explicit(1) == (0, 2, 3, 1)
    # a public placement is a fact for both players
    g.play(Move(3, TOP_START, COMMON))  # player 1 infers 3 → bottom_right: player 0's row
    assert g.knowledge(0).goal(3) is None and g.placed == {}
    g.play(Move(2, BOTTOM_START, BOTTOM_LEFT))  # a lucky guess by player 0
    assert g.placed == {2: BOTTOM_LEFT} and g.knowledge(1).goal(2) == BOTTOM_LEFT
    # ... and through its relation 3 (object 3 in the same row as object 2) player 0 now infers object 3
    assert g.knowledge(0).goal(3) == BOTTOM_RIGHT


# -- legality and turns ----------------------------------------------------------------------------------
def test_moves_obey_reach_location_and_from_to() -> None:
    g = new_game(hand_puzzle())
    assert g.check(Move(0, BOTTOM_START, COMMON)) == ""
    assert "out of reach" in g.check(Move(0, BOTTOM_START, TOP_LEFT))
    assert "out of reach" in g.check(Move(1, TOP_START, COMMON))  # player 0 cannot take from the top start
    assert "not in" in g.check(Move(0, COMMON, BOTTOM_LEFT))
    assert "same bin" in g.check(Move(0, BOTTOM_START, BOTTOM_START))


def test_a_wrong_placement_is_rejected_board_unchanged_turn_consumed() -> None:
    g = new_game(hand_puzzle())
    before = list(g.location)
    event = g.play(Move(2, BOTTOM_START, BOTTOM_RIGHT))  # object 2 goes bottom_left
    assert event.outcome == "rejected" and "does not go in bottom_right" in event.reason
    assert g.location == before and g.turn == 1 and g.current == 1
    assert (2, BOTTOM_RIGHT) in g.rejected
    assert g.knowledge(0).goal(2) is None and not g.knowledge(0).possible(2) >> BOTTOM_RIGHT & 1  # public


def test_only_the_goal_bin_or_the_common_bin_takes_an_object() -> None:
    g = new_game(hand_puzzle())
    assert g.play(Move(0, BOTTOM_START, COMMON)).outcome == "accepted"
    g.play(Pass())
    assert g.play(Move(0, COMMON, BOTTOM_START)).outcome == "rejected"  # back to a start bin
    assert g.location[0] == COMMON


def test_an_illegal_action_is_a_failed_turn() -> None:
    g = new_game(hand_puzzle())
    event = g.play(Move(1, TOP_START, TOP_RIGHT))  # player 0 cannot reach either bin
    assert event.outcome == "illegal" and g.turn == 1 and g.location == list(hand_puzzle().start)


def test_players_alternate_player_0_first() -> None:
    g = new_game(hand_puzzle())
    assert [g.play(Pass()).player for _ in range(5)] == [0, 1, 0, 1, 0]


def test_shares_are_of_own_unshared_constraints_by_mode() -> None:
    g = new_game(hand_puzzle(), "provide_only")
    assert g.check(Share(1)) == "" and "not one of yours" in g.check(Share(2))
    g.play(Share(1))
    g.play(Pass())
    assert "shared already" in g.check(Share(1))
    assert "no shares" in new_game(hand_puzzle(), "none").check(Share(1))
    assert "no asks" in new_game(hand_puzzle(), "provide_only").check(Ask(2))


def test_seek_only_shares_answer_an_ask_about_that_object() -> None:
    g = new_game(hand_puzzle(), "seek_only")
    assert "seek-only" in g.check(Share(3))
    g.play(Ask(2))  # player 0 asks about object 2
    assert g.check(Share(3)) == ""  # player 1's relation 3 is about object 2
    assert "object 2" in g.check(Share(0))  # the grounding is about object 0
    g.play(Share(3))
    assert g.received[0] == {3}


def test_the_step_limit_truncates() -> None:
    g = new_game(hand_puzzle(), max_steps=3)
    for _ in range(3):
        g.play(Pass())
    assert g.over and g.truncated and not g.success
    with pytest.raises(RuntimeError, match="over"):
        g.play(Pass())


@pytest.mark.parametrize(("n", "limit"), [(4, 30), (6, 30), (7, 30), (8, 40), (9, 45), (16, 80)])
def test_the_automatic_step_limit_is_30_up_to_seven_objects_then_five_per_object(n: int, limit: int) -> None:
    """The paper's human study: 30 turns, 40 for 8 objects (5 per object beyond); 7 objects still get 30."""
    assert default_max_steps(n) == limit
    assert EinsteinPuzzleConfig(n=n).step_limit == limit
    assert new_game(generate(n, np.random.default_rng(n))).max_steps == limit


def test_an_illegal_ask_makes_no_answer_legal() -> None:
    """An ask about a placed object is illegal: a failed turn, so the partner's answer on the next turn has no
    ask to follow and is illegal too (nothing is told)."""
    g = new_game(hand_puzzle())
    assert g.play(Move(2, BOTTOM_START, BOTTOM_LEFT)).outcome == ACCEPTED  # p0 places 2 (public: both know it)
    g.play(Pass())
    ask = g.play(Ask(2))  # p0 asks about the placed object
    assert ask.outcome == ILLEGAL and "placed already" in ask.reason
    assert g.last_ask() is None
    assert g.knowledge(1).goal(2) == BOTTOM_LEFT  # (p1 could answer it, had the ask been legal)
    assert "did not just ask" in g.check(Answer(2, BOTTOM_LEFT))
    answer = g.play(Answer(2, BOTTOM_LEFT))
    assert answer.outcome == ILLEGAL and g.told == ({}, {})


# -- the original code's bugs, done right ------------------------------------------------------------------
def solve_by_hand(g) -> None:  # type: ignore[no-untyped-def]
    """Play hand_puzzle() to the end in 6 turns (player 0 moves on turns 0, 2, 4)."""
    g.play(Move(2, BOTTOM_START, BOTTOM_LEFT))  # p0: 2 → bottom_left (a guess for p0; lucky)
    g.play(Move(3, TOP_START, COMMON))  # p1 knows 3 → bottom_right: across
    g.play(Move(3, COMMON, BOTTOM_RIGHT))  # p0 infers it from the placement of 2 and relation 3
    g.play(Move(1, TOP_START, TOP_RIGHT))  # p1: a lucky guess
    g.play(Move(0, BOTTOM_START, COMMON))  # p0 knows 0 is top_left
    g.play(Move(0, COMMON, TOP_LEFT))


def test_bug_a_win_on_the_last_step_is_a_win() -> None:
    g = new_game(hand_puzzle(), max_steps=6)
    solve_by_hand(g)
    assert g.turn == g.max_steps and g.success and not g.truncated and g.over


def test_bug_a_lucky_correct_guess_is_accepted_and_counts() -> None:
    g = new_game(hand_puzzle(), "none")
    assert g.knowledge(0).goal(2) is None  # player 0 cannot infer object 2
    assert g.play(Move(2, BOTTOM_START, BOTTOM_LEFT)).outcome == "accepted"
    assert g.location[2] == BOTTOM_LEFT and g.placed_count() == 1
    assert reasoning(new_game(hand_puzzle(), "none"), Move(2, BOTTOM_START, BOTTOM_LEFT))[0]  # guesses: rational
    g2 = new_game(hand_puzzle(), "none")
    solve_by_hand(g2)
    assert g2.success


def test_bug_pass_is_not_an_illegal_or_failed_action() -> None:
    g = new_game(hand_puzzle())
    assert g.play(Pass()).outcome == "accepted"  # (the environment charges pass_penalty, default 0)


def test_bug_the_communication_verifier_rejects_asks_about_placed_objects() -> None:
    g = new_game(hand_puzzle())
    g.play(Move(2, BOTTOM_START, BOTTOM_LEFT))
    ok, reason = communication(g, Ask(2))
    assert not ok and "placed already" in reason
    assert communication(g, Ask(1))[0]


def test_bug_answers_are_legal_in_seek_only_mode() -> None:
    g = new_game(hand_puzzle(), "seek_only")
    g.play(Ask(3))  # player 0 asks about object 3; player 1 infers bottom_right
    assert communication(g, Answer(3, BOTTOM_RIGHT)) == (True, "")
    assert reasoning(g, Answer(3, BOTTOM_RIGHT)) == (True, "")
    assert "cannot infer" in g.check(Answer(3, TOP_LEFT))  # an answer is what the answerer can infer
    g.play(Answer(3, BOTTOM_RIGHT))
    assert g.told[0] == {3: BOTTOM_RIGHT} and g.knowledge(0).goal(3) == BOTTOM_RIGHT
    assert g.knowledge(0).goal(2) == BOTTOM_LEFT  # and player 0's relation 3 (2 in 3's row) follows


def test_an_answer_needs_the_ask_just_before() -> None:
    g = new_game(hand_puzzle())
    g.play(Ask(3))
    g.play(Pass())
    g.play(Pass())
    assert "did not just ask" in g.check(Answer(3, BOTTOM_RIGHT))


# -- the reasoning verifier ------------------------------------------------------------------------------
def test_reasoning_accepts_inferred_moves_and_rejects_guesses_outside_none_mode() -> None:
    g = new_game(hand_puzzle())
    assert reasoning(g, Move(0, BOTTOM_START, COMMON))[0]  # 0 → top_left: the partner's row
    assert "guess" in reasoning(g, Move(2, BOTTOM_START, BOTTOM_LEFT))[1]
    assert "cannot go" not in reasoning(g, Move(2, BOTTOM_START, BOTTOM_LEFT))[1]
    ok, reason = reasoning(g, Ask(1))
    assert not ok and "top_right" in reason  # player 0 infers object 1 already
    assert not reasoning(g, Share(0))[0]  # everyone holds the grounding
    assert not reasoning(g, Pass())[0]  # there is something rational to do


def test_every_bin_has_a_name() -> None:
    assert len(BIN_NAMES) == 7 and len(set(BIN_NAMES)) == 7
