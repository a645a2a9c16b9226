"""The action grammar of the Einstein puzzle: one action as a line of text, parsed strictly.

::

    move 3 from common to top_left
    share 2
    ask 5
    answer 5 bottom_right
    pass

Objects and constraints are numbers; bins are the names in ``rules.BIN_NAMES``
(``top_left``, ``top_right``, ``bottom_left``, ``bottom_right``,
``bottom_start``, ``top_start``, ``common``). Case and surrounding whitespace
are ignored, and so is one trailing period; nothing else is (characters outside ASCII, a number of more
than six digits, two actions, prose around the action): a reply with
anything more (two actions, prose around the action) is a :class:`GrammarError`
naming what was expected. :meth:`Action.text` writes the same grammar, so
``parse_action(a.text(), n) == a`` for every action of an ``n``-object game.

LLM players may reason first and end their reply with ``ACTION: <action>``;
:func:`action_line` finds that line.
"""

from __future__ import annotations

import re

from eq_env.einstein_puzzle.rules import BIN_NAMES, Action, Answer, Ask, Move, Pass, Share

__all__ = ["GRAMMAR", "GrammarError", "action_line", "parse_action"]

GRAMMAR = (
    '"move O from BIN to BIN", "share K", "ask O", "answer O BIN" or "pass" '
    f"(O an object number, K a constraint number, BIN one of {', '.join(BIN_NAMES)})"
)

_BIN = "|".join(BIN_NAMES)
_PATTERNS = (
    (re.compile(rf"move ([0-9]{{1,6}}) from ({_BIN}) to ({_BIN})"), "move"),
    (re.compile(r"share ([0-9]{1,6})"), "share"),
    (re.compile(r"ask ([0-9]{1,6})"), "ask"),
    (re.compile(rf"answer ([0-9]{{1,6}}) ({_BIN})"), "answer"),
    (re.compile(r"pass"), "pass"),
)
_ACTION_LINE = re.compile(r"^\s*action\s*:\s*(.*?)\s*$", re.IGNORECASE | re.MULTILINE)


class GrammarError(ValueError):
    """A reply that is not one action of the grammar (the message says what was expected)."""


def parse_action(text: str, n: int) -> Action:
    """The action ``text`` names in an ``n``-object game, or a :class:`GrammarError` saying what is wrong."""
    if not isinstance(text, str):
        raise GrammarError(f"expected one action as text, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped.isascii():  # (a fullwidth digit or a Kelvin sign is not the grammar's, however it looks)
        raise GrammarError(f"the reply has characters outside ASCII; expected exactly one of: {GRAMMAR}")
    line = " ".join(stripped.lower().split(" ")).removesuffix(".").strip()
    line = " ".join(line.split())
    if not line:
        raise GrammarError(f"the reply is empty; expected one action: {GRAMMAR}")
    for pattern, kind in _PATTERNS:
        m = pattern.fullmatch(line)
        if m is None:
            continue
        numbers = [int(g) for g in m.groups() if g.isdigit()]
        bins = [BIN_NAMES.index(g) for g in m.groups() if not g.isdigit()]
        limit = n - 1
        if any(x > limit for x in numbers):
            what = "constraint" if kind == "share" else "object"
            raise GrammarError(f"{line!r}: there is no {what} {max(numbers)} (they are numbered 0-{limit})")
        if kind == "move":
            return Move(numbers[0], bins[0], bins[1])
        if kind == "share":
            return Share(numbers[0])
        if kind == "ask":
            return Ask(numbers[0])
        if kind == "answer":
            if bins[0] >= 4:
                raise GrammarError(f"{line!r}: an answer names a goal bin ({', '.join(BIN_NAMES[:4])})")
            return Answer(numbers[0], bins[0])
        return Pass()
    said = " ".join(stripped.split())  # (quoted as written, not case-folded: a secret in it stays maskable)
    shown = said if len(said) <= 80 else said[:77] + "..."
    raise GrammarError(f"{shown!r} is not an action; expected exactly one of: {GRAMMAR}")


def action_line(reply: str) -> str:
    """The action part of a reply: the text after the last ``ACTION:`` line if there is one, else the reply."""
    found = _ACTION_LINE.findall(reply)
    return found[-1] if found else reply
