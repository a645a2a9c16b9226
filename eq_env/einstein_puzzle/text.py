"""The paper's text observation of the Einstein puzzle, and the board drawing of ``render_mode="ansi"``.

:func:`describe` is what one player is told each turn, in plain ASCII: its side
and the bins it reaches; the communication mode and the actions it allows, in
the action grammar (``move 3 from common to top_left``, ``share 2``, ``ask 5``,
``answer 5 bottom_right``, ``pass``); turn k of the step limit; its explicit
knowledge (groundings first, then relations, each with its constraint number;
received ones marked "(shared by your partner)"); the answers it received; the
whole board; and the full action history, failed actions marked with their
reason. Every character belongs to :data:`CHARSET`, and a text is at most
:func:`max_text_length` characters long (the bounds of the observation's
``Text`` space).

It is built every turn, so :class:`Describer` keeps what a game does not change
(the headers, the lines of past events) and rebuilds only the rest;
``describe(state, player)`` is the same text without the caches.

:func:`render_board` draws the 2x2 grid of goal bins with the start bins above
and below and the common bin beside it.
"""

from __future__ import annotations

import string
from functools import lru_cache

from eq_env.einstein_puzzle.rules import (
    ACCEPTED,
    BIN_NAMES,
    COMMON,
    GOAL_BINS,
    SIDE_NAMES,
    Event,
    State,
    row_bins,
    start_bin,
)

__all__ = ["CHARSET", "Describer", "describe", "event_line", "max_text_length", "render_board"]

# every character a text can hold (the observation's Text space): ASCII only
CHARSET = string.ascii_letters + string.digits + " \n.,:;()'\"-_/+=!?#*[]<>|"
HISTORY_LINE_MAX = 200  # (a history line is at most ~150: "- turn 1000, player_1 (top): " + action + reason)
_FIXED = 3000  # the headers, the rules line and the section titles, with room to spare

_AGENTS = ("player_0", "player_1")
_NO_HISTORY = "- nothing yet\n"
_WHO = tuple(f"{agent} ({side})" for agent, side in zip(_AGENTS, SIDE_NAMES, strict=True))

# what each mode lets a player do, in the action grammar
_GRAMMAR = {
    "provide_and_seek": (
        'Each turn you may: move an object ("move 3 from common to top_left"), share a constraint you hold and '
        'have not shared ("share 2"), ask your partner for an object\'s goal bin ("ask 5"), answer your '
        'partner\'s ask on the turn right after it ("answer 5 bottom_right"), or pass ("pass").'
    ),
    "provide_only": (
        'Each turn you may: move an object ("move 3 from common to top_left"), share a constraint you hold and '
        'have not shared ("share 2"), or pass ("pass"). There are no asks in this mode.'
    ),
    "seek_only": (
        'Each turn you may: move an object ("move 3 from common to top_left"), ask your partner for an '
        'object\'s goal bin ("ask 5"), or pass ("pass"). On the turn right after your partner asks about an '
        'object you may also answer ("answer 5 bottom_right") or share a constraint you hold about that '
        'object ("share 2").'
    ),
    "none": (
        'Each turn you may: move an object ("move 3 from common to top_left") or pass ("pass"). There is no '
        "communication in this mode: you may have to guess."
    ),
}
_RULES = (
    "Goal: every object in its goal bin. Only an object's goal bin or the common bin takes it: a wrong "
    "placement is rejected. A rejected or illegal action leaves the board as it was and still costs the turn."
)


def max_text_length(n: int, step_limit: int) -> int:
    """An upper bound on the length of any text of an ``n``-object game with ``step_limit`` turns."""
    return _FIXED + 200 * n + HISTORY_LINE_MAX * step_limit


def _join_bins(bins: tuple[int, ...]) -> str:
    return ", ".join(BIN_NAMES[b] for b in bins)


@lru_cache(maxsize=16)
def _header(comm_mode: str, player: int) -> str:
    """What does not change within a game: who the player is, what it reaches, the mode and the rules."""
    own, other = row_bins(player), row_bins(1 - player)
    side, partner_side = SIDE_NAMES[player], SIDE_NAMES[1 - player]
    return (
        f"You are {_AGENTS[player]}, at the {side}. You reach {_join_bins(own)}, "
        f"{BIN_NAMES[start_bin(player)]} (your start bin) and common.\n"
        f"Your partner, {_AGENTS[1 - player]}, sits at the {partner_side} and reaches {_join_bins(other)}, "
        f"{BIN_NAMES[start_bin(1 - player)]} and common. The common bin is the only way across.\n"
        f"Goal bins: top_left and top_right (top row), bottom_left and bottom_right (bottom row); "
        f"top_left-bottom_right and top_right-bottom_left are the diagonals.\n"
        f"{_RULES}\n"
        f"Communication: {comm_mode}. {_GRAMMAR[comm_mode]}\n"
    )


def event_line(event: Event) -> str:
    """One line of the history (the same for both players): who did what, and why it failed if it did."""
    line = f"- turn {event.turn + 1}, {_WHO[event.player]}: {event.action.text()}"
    if event.outcome != ACCEPTED:
        line += f" -- {event.outcome.upper()}: {event.reason}"
    return line


def _status(state: State, player: int, won: bool | None = None) -> str:
    """Turn k of the limit and whose turn it is, or how the game ended (``won``: ``state.success``, if known)."""
    if state.success if won is None else won:
        return f"The game is over: every object is in its goal bin, after {state.turn} turns.\n"
    if state.turn >= state.max_steps:
        return (
            f"The game is over: the step limit of {state.max_steps} turns is reached with "
            f"{state.placed_count()} of {state.puzzle.n} objects in their goal bins.\n"
        )
    whose = "It is your turn." if state.current == player else "It is your partner's turn."
    line = f"Turn {state.turn + 1} of {state.max_steps}. {whose}\n"
    if state.current == player:
        asked = state.last_ask()
        if asked is not None:
            line += (
                f"Your partner just asked about object {asked}. If you can infer its goal bin, you may answer now "
                f"(answer {asked} BIN)"
            )
            if state.comm_mode == "seek_only":
                line += f"; or share a constraint of yours about object {asked} (share K)"
            line += ".\n"
    return line


def _constraint_lines(state: State) -> tuple[str, ...]:
    """Each constraint's line in the knowledge list."""
    return tuple(f"- constraint {k}: {c.text()}" for k, c in enumerate(state.puzzle.constraints))


def _knowledge(state: State, player: int, lines: tuple[str, ...] | None = None) -> str:
    """The explicit knowledge (groundings first, then relations) and the answers received (``lines``: the
    constraints' lines, :func:`_constraint_lines`, if made already)."""
    lines = _constraint_lines(state) if lines is None else lines
    constraints = state.puzzle.constraints
    own = state.puzzle.given(player)
    explicit = state.explicit(player)
    ordered = [k for k in explicit if constraints[k].b is None] + [k for k in explicit if constraints[k].b is not None]
    out = ["Your knowledge:"]
    out += [lines[k] if k in own else lines[k] + " (shared by your partner)" for k in ordered]
    told = state.told[player]
    if told:
        out.append("Answers you received:")
        out += [f"- object {obj} goes in {BIN_NAMES[b]}" for obj, b in sorted(told.items())]
    else:
        out.append("Answers you received: none.")
    return "\n".join(out) + "\n"


def _board(location: tuple[int, ...] | list[int]) -> str:
    contents: list[list[str]] = [[] for _ in BIN_NAMES]
    for obj, b in enumerate(location):
        contents[b].append(str(obj))
    lines = ["The board (objects in each bin):"]
    lines += [
        f"- {name}: {', '.join(objs) if objs else 'empty'}" for name, objs in zip(BIN_NAMES, contents, strict=True)
    ]
    return "\n".join(lines) + "\n"


class Describer:
    """:func:`describe` for one game, with what the game does not change cached (the headers, the lines of
    past events, the knowledge and the board until they change). Build one per game; ``describer(player)``
    is the text."""

    __slots__ = ("_board", "_events", "_headers", "_history", "_knowledge", "_lines", "state")

    def __init__(self, state: State) -> None:
        self.state = state
        self._headers = (_header(state.comm_mode, 0), _header(state.comm_mode, 1))
        self._lines = _constraint_lines(state)
        self._events = 0  # events in _history
        self._history = ""
        self._knowledge: list[tuple[tuple[int, int], str] | None] = [None, None]
        self._board: tuple[tuple[int, ...], str] = ((), "")

    def __call__(self, player: int) -> str:
        state = self.state
        events = state.history
        if self._events < len(events):
            self._history += "".join(event_line(event) + "\n" for event in events[self._events :])
            self._events = len(events)
        key = (len(state.received[player]), len(state.told[player]))
        known = self._knowledge[player]
        if known is None or known[0] != key:
            known = (key, _knowledge(state, player, self._lines))
            self._knowledge[player] = known
        location = tuple(state.location)
        if self._board[0] != location:
            self._board = (location, _board(location))
        status = _status(state, player, location == state.puzzle.goal)
        return (
            f"{self._headers[player]}{status}\n{known[1]}\n{self._board[1]}\n"
            f"History (failed actions marked):\n{self._history or _NO_HISTORY}"
        )


def describe(state: State, player: int) -> str:
    """``player``'s text observation of ``state`` (see the module docstring)."""
    return Describer(state)(player)


def render_board(state: State) -> str:
    """A plain-text drawing of the board: the goal grid, the start bins above and below it, the common bin."""
    contents: list[list[str]] = [[] for _ in BIN_NAMES]
    for obj, b in enumerate(state.location):
        contents[b].append(str(obj))
    cells = {b: " ".join(contents[b]) for b in range(len(BIN_NAMES))}
    width = max(14, *(len(cells[b]) for b in GOAL_BINS), *(len(BIN_NAMES[b]) for b in GOAL_BINS)) + 2
    rule = "+" + "-" * width + "+" + "-" * width + "+"

    def row(a: int, b: int) -> list[str]:
        return [
            f"|{' ' + BIN_NAMES[a]:<{width}}|{' ' + BIN_NAMES[b]:<{width}}|",
            f"|{' ' + cells[a]:<{width}}|{' ' + cells[b]:<{width}}|",
        ]

    top_start, bottom_start = start_bin(1), start_bin(0)
    lines = [
        f"  {BIN_NAMES[top_start]} (player_1): {cells[top_start] or '-'}",
        rule,
        *row(0, 1),
        rule,
        *row(2, 3),
        rule,
        f"  {BIN_NAMES[bottom_start]} (player_0): {cells[bottom_start] or '-'}",
        f"  {BIN_NAMES[COMMON]}: {cells[COMMON] or '-'}",
    ]
    placed = f"{state.placed_count()}/{state.puzzle.n} placed, turn {state.turn}/{state.max_steps}"
    return "\n".join([*lines, f"  {placed}"]) + "\n"
