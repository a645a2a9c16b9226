"""The action grammar: every action round-trips through its text; anything else is refused with the reason."""

from __future__ import annotations

import pytest

from eq_env.einstein_puzzle.grammar import GrammarError, action_line, parse_action
from eq_env.einstein_puzzle.rules import COMMON, TOP_LEFT, Move, Pass
from eq_env.einstein_puzzle.spaces import actions


@pytest.mark.parametrize("n", [4, 7, 12])
def test_every_action_round_trips_through_its_text(n: int) -> None:
    assert all(parse_action(a.text(), n) == a for a in actions(n))


def test_case_spacing_and_one_period_are_forgiven() -> None:
    assert parse_action("  Move 3  from COMMON to Top_Left. ", 6) == Move(3, COMMON, TOP_LEFT)
    assert parse_action("PASS", 4) == Pass()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("I will pass", "is not an action"),
        ("ask 3\nask 4", "is not an action"),
        ("move 1 from here to there", "is not an action"),
        ("share 4", "no constraint 4"),
        ("ask 9", "no object 9"),
        ("answer 1 common", "names a goal bin"),
        ("answer 1 bottom_start", "names a goal bin"),  # (a start bin is a bin, and no goal bin)
        ("answer 1 top_start", "names a goal bin"),
        ("pass pass", "is not an action"),
        ("x" * 500, "..."),
    ],
)
def test_anything_else_is_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(GrammarError, match=message if message != "..." else r"\.\.\.' is not"):
        parse_action(text, 4)


def test_a_non_string_is_refused() -> None:
    with pytest.raises(GrammarError, match="as text"):
        parse_action(None, 4)  # type: ignore[arg-type]


def test_the_action_line_is_found_after_reasoning() -> None:
    reply = "Object 2 is in my row.\nACTION: move 2 from bottom_start to bottom_left\n"
    assert action_line(reply) == "move 2 from bottom_start to bottom_left"
    assert action_line("action: ask 1\nlater... ACTION: pass") == "ask 1"  # (only whole lines count)
    assert action_line("pass") == "pass"
