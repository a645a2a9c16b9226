"""The collaborative Einstein puzzle's rules, on plain values (no PettingZoo, no spaces).

The board: four goal bins on a 2×2 grid, two start bins (one per player) and a
common bin. Player 0 sits at the bottom and reaches the bottom row, its start
bin and the common bin; player 1 sits at the top and reaches the top row, its
start bin and the common bin. The common bin is the only way across.

Goal bins are numbered ``2·row + column`` (row 0 = top, column 0 = left), so the
relation between two goal bins is their XOR: a 2-bit code (rows differ, columns
differ) — 0 same bin, 1 same row, 2 same column, 3 same diagonal — and relations
compose by XOR (the Klein four-group: row∘row = bin, row∘column = diagonal...).

A :class:`Puzzle` holds n objects, their start and goal bins and the
constraints that determine the goal (one grounding and a tree of n − 1
relations), split between the players. A :class:`State` is one game in
progress; :meth:`State.check` says whether an action is legal (the affordance
and communication rules, what the environment's action mask shows) and
:meth:`State.play` plays one turn. A player's inferred knowledge is a
:class:`Knowledge`: for each object, the goal bins still possible given what
the player knows.

Where the original research code had a bug, this module does what the paper
says (each has a test): a win on the last step is a win; a lucky correct guess
is accepted and counts; a pass costs nothing unless configured; an ask about a
placed object is illegal; answers are legal in seek-only mode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BIN_NAMES",
    "BOTH",
    "COMMON",
    "COMM_MODES",
    "GOAL_BINS",
    "RELATION_NAMES",
    "Action",
    "Answer",
    "Ask",
    "Constraint",
    "Event",
    "Knowledge",
    "Move",
    "Pass",
    "Puzzle",
    "Share",
    "State",
    "compose",
    "reachable",
    "relation",
    "row_bins",
    "start_bin",
]

# -- the board ----------------------------------------------------------------------------------------
TOP_LEFT, TOP_RIGHT, BOTTOM_LEFT, BOTTOM_RIGHT = 0, 1, 2, 3
BOTTOM_START, TOP_START, COMMON = 4, 5, 6
GOAL_BINS = (TOP_LEFT, TOP_RIGHT, BOTTOM_LEFT, BOTTOM_RIGHT)
BIN_NAMES = ("top_left", "top_right", "bottom_left", "bottom_right", "bottom_start", "top_start", "common")
N_BINS = len(BIN_NAMES)
PLAYERS = (0, 1)
SIDE_NAMES = ("bottom", "top")  # player 0 sits at the bottom and moves first

_ROW = {0: (BOTTOM_LEFT, BOTTOM_RIGHT), 1: (TOP_LEFT, TOP_RIGHT)}
_START = {0: BOTTOM_START, 1: TOP_START}
_REACH = {p: frozenset((*_ROW[p], _START[p], COMMON)) for p in PLAYERS}


def row_bins(player: int) -> tuple[int, int]:
    """The two goal bins of ``player``'s row (player 0: the bottom row)."""
    return _ROW[player]


def start_bin(player: int) -> int:
    return _START[player]


def reachable(player: int) -> frozenset[int]:
    """The bins ``player`` can take objects from and put them in."""
    return _REACH[player]


def goal_row_player(goal: int) -> int:
    """The player whose row holds goal bin ``goal``."""
    return 0 if goal in _ROW[0] else 1


# -- the relation algebra -----------------------------------------------------------------------------
SAME_BIN, SAME_ROW, SAME_COLUMN, SAME_DIAGONAL = 0, 1, 2, 3
RELATION_NAMES = ("same bin", "same row", "same column", "same diagonal")


def relation(a: int, b: int) -> int:
    """The relation code of goal bins ``a`` and ``b``: (rows differ, columns differ) as two bits."""
    return a ^ b


def compose(r: int, s: int) -> int:
    """The relation of x and z when x–y is ``r`` and y–z is ``s``."""
    return r ^ s


# -- constraints and puzzles --------------------------------------------------------------------------
BOTH = 2  # a constraint given to both players; 0 and 1: that player only


@dataclass(frozen=True)
class Constraint:
    """A grounding (``b is None``: object ``a``'s goal bin is ``code``) or a relation (the goal bins of
    objects ``a`` and ``b`` are related by ``code``)."""

    a: int
    b: int | None
    code: int

    @property
    def is_grounding(self) -> bool:
        return self.b is None

    def objects(self) -> tuple[int, ...]:
        return (self.a,) if self.b is None else (self.a, self.b)

    def holds(self, goal: Sequence[int]) -> bool:
        if self.b is None:
            return goal[self.a] == self.code
        return relation(goal[self.a], goal[self.b]) == self.code

    def text(self) -> str:
        if self.b is None:
            return f"object {self.a} goes in {BIN_NAMES[self.code]}"
        if self.code == SAME_BIN:
            return f"object {self.a} and object {self.b} go in the same bin"
        where = {
            SAME_ROW: "the same row, different columns",
            SAME_COLUMN: "the same column, different rows",
            SAME_DIAGONAL: "diagonal bins",
        }[self.code]
        return f"object {self.a} and object {self.b} go in {where}"

    def to_list(self) -> list[int | None]:
        return [self.a, self.b, self.code]


@dataclass(frozen=True)
class Puzzle:
    """One puzzle: ``n`` objects, their start and goal bins, the constraints and who holds each.

    Attributes:
        start: each object's start bin (``BOTTOM_START`` or ``TOP_START``).
        goal: each object's goal bin (0–3; all four used).
        constraints: the grounding first, then the n − 1 relations.
        holders: per constraint, ``0`` or ``1`` (that player only) or ``BOTH``.
    """

    start: tuple[int, ...]
    goal: tuple[int, ...]
    constraints: tuple[Constraint, ...]
    holders: tuple[int, ...]

    @property
    def n(self) -> int:
        return len(self.goal)

    def given(self, player: int) -> tuple[int, ...]:
        """The indices of the constraints ``player`` is given, in order (groundings first)."""
        return tuple(i for i, h in enumerate(self.holders) if h in (player, BOTH))

    def validate(self) -> None:
        """Raise ValueError unless this is a well-formed puzzle with a unique goal (see :func:`check_puzzle`)."""
        check_puzzle(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "start": list(self.start),
            "goal": list(self.goal),
            "constraints": [c.to_list() for c in self.constraints],
            "holders": list(self.holders),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Puzzle:
        """A puzzle back from :meth:`to_dict`; ValueError naming the field that is wrong."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a puzzle must be a JSON object, got {type(data).__name__}")
        for key in ("start", "goal", "constraints", "holders"):
            if not isinstance(data.get(key), list):
                raise ValueError(f"puzzle field {key!r} must be a list")

        def ints(key: str, values: Any) -> tuple[int, ...]:
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                raise ValueError(f"puzzle field {key!r} must hold integers, got {values!r}")
            return tuple(values)

        constraints = []
        for i, c in enumerate(data["constraints"]):
            ok = isinstance(c, list) and len(c) == 3 and isinstance(c[0], int) and isinstance(c[2], int)
            if not ok or not (c[1] is None or isinstance(c[1], int)):
                raise ValueError(f"puzzle constraint {i} must be [object, object or null, code], got {c!r}")
            constraints.append(Constraint(c[0], c[1], c[2]))
        puzzle = cls(
            ints("start", data["start"]),
            ints("goal", data["goal"]),
            tuple(constraints),
            ints("holders", data["holders"]),
        )
        if "n" in data and data["n"] != puzzle.n:
            raise ValueError(f"puzzle field 'n' is {data['n']!r} but there are {puzzle.n} goals")
        puzzle.validate()
        return puzzle


def check_puzzle(p: Puzzle) -> None:
    """The structural rules of a puzzle, each with its own message (ValueError):

    n ≥ 4 objects; starts in the start bins, split evenly (odd n: one player has one more); goal bins in
    0–3, all four used; n constraints: one grounding first, then n − 1 relations that form a spanning tree
    of the objects (so the goal is unique); every constraint true of the goal; holders 0, 1 or BOTH, the
    grounding held by both, and all three kinds among the relations.
    """
    n = p.n
    if n < 4:
        raise ValueError(f"a puzzle needs at least 4 objects (all four goal bins are used), got {n}")
    if len(p.start) != n or any(s not in (BOTTOM_START, TOP_START) for s in p.start):
        raise ValueError(f"start must give each of the {n} objects a start bin ({BOTTOM_START} or {TOP_START})")
    if abs(p.start.count(BOTTOM_START) - p.start.count(TOP_START)) > 1:
        raise ValueError("the objects must be split evenly between the start bins")
    if any(g not in GOAL_BINS for g in p.goal) or set(p.goal) != set(GOAL_BINS):
        raise ValueError("goal must put each object in a goal bin 0-3, using all four")
    if len(p.constraints) != n or len(p.holders) != n:
        raise ValueError(f"a puzzle of {n} objects has {n} constraints and {n} holders")
    for i, c in enumerate(p.constraints):
        if not all(0 <= o < n for o in c.objects()) or not 0 <= c.code <= 3 or (c.b is not None and c.b == c.a):
            raise ValueError(f"constraint {i} ({c.to_list()}) names an unknown object or code")
        if c.is_grounding != (i == 0):
            raise ValueError("the first constraint, and only it, must be a grounding")
        if not c.holds(p.goal):
            raise ValueError(f"constraint {i} ({c.text()}) is false of the goal")
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for c in p.constraints[1:]:
        ra, rb = find(c.a), find(c.b)  # type: ignore[arg-type]
        if ra == rb:
            raise ValueError("the relations must form a tree (one relation closes a cycle)")
        parent[ra] = rb
    if any(h not in (0, 1, BOTH) for h in p.holders) or p.holders[0] != BOTH:
        raise ValueError("holders must be 0, 1 or 2 (both), and the grounding is held by both")
    if set(p.holders[1:]) != {0, 1, BOTH}:
        raise ValueError("the relations must include some for player 0 only, some for player 1 only and some for both")


# -- knowledge ----------------------------------------------------------------------------------------
ALL = 0b1111  # every goal bin possible


class Knowledge:
    """What one player can infer: for each object, the goal bins still possible (a 4-bit mask).

    Built from relations (union-find with XOR labels: an object's goal is its label XOR its component's
    unknown offset), facts "object x is in bin b" (groundings, placements, answers) that pin a component's
    offset, and public rejections "x is not in b" that rule offsets out. A fact that contradicts what is
    already known is ignored and counted in ``conflicts`` (only a false answer can cause one).
    """

    __slots__ = ("_label", "_offsets", "_root", "conflicts")

    def __init__(
        self,
        n: int,
        relations: Iterable[Constraint] = (),
        facts: Iterable[tuple[int, int]] = (),
        exclusions: Iterable[tuple[int, int]] = (),
    ) -> None:
        self._root = list(range(n))
        self._label = [0] * n
        self._offsets = [ALL] * n  # per root: the offsets still possible
        self.conflicts = 0
        for c in relations:
            self._relate(c.a, c.b, c.code)  # type: ignore[arg-type]
        for obj, b in facts:
            self._restrict(obj, 1 << (self._label_of(obj) ^ b))
        for obj, b in exclusions:
            self._restrict(obj, ALL & ~(1 << (self._label_of(obj) ^ b)))

    def _find(self, x: int) -> int:
        while self._root[x] != x:
            x = self._root[x]
        return x

    def _label_of(self, x: int) -> int:
        label = 0
        while self._root[x] != x:
            label ^= self._label[x]
            x = self._root[x]
        return label

    def _relate(self, a: int, b: int, code: int) -> None:
        ra, rb = self._find(a), self._find(b)
        la, lb = self._label_of(a), self._label_of(b)
        if ra == rb:
            if la ^ lb != code:
                self.conflicts += 1
            return
        # goal(a) = la ^ off(ra); goal(b) = lb ^ off(rb); goal(a) ^ goal(b) = code  =>  off(ra) = off(rb) ^ d
        d = la ^ lb ^ code
        self._root[ra], self._label[ra] = rb, d
        moved = 0
        for r in range(4):
            if self._offsets[ra] >> r & 1:
                moved |= 1 << (r ^ d)
        merged = self._offsets[rb] & moved
        if merged:
            self._offsets[rb] = merged
        else:
            self.conflicts += 1

    def _restrict(self, obj: int, offsets: int) -> None:
        root = self._find(obj)
        merged = self._offsets[root] & offsets
        if merged:
            self._offsets[root] = merged
        else:
            self.conflicts += 1

    def possible(self, obj: int) -> int:
        """The goal bins ``obj`` may have, as a 4-bit mask (bit b: goal bin b)."""
        label, offsets = self._label_of(obj), self._offsets[self._find(obj)]
        return sum(1 << (label ^ r) for r in range(4) if offsets >> r & 1)

    def goal(self, obj: int) -> int | None:
        """``obj``'s goal bin if the player can infer it, else None."""
        mask = self.possible(obj)
        return mask.bit_length() - 1 if mask and mask & (mask - 1) == 0 else None

    def known(self) -> dict[int, int]:
        """object → goal bin, for every object whose goal the player can infer."""
        out = {}
        for obj in range(len(self._root)):
            g = self.goal(obj)
            if g is not None:
                out[obj] = g
        return out

    def masks(self) -> tuple[int, ...]:
        return tuple(self.possible(obj) for obj in range(len(self._root)))


# -- actions ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Move:
    """Move object ``obj`` from bin ``src`` to bin ``dst``."""

    obj: int
    src: int
    dst: int

    def text(self) -> str:
        return f"move {self.obj} from {BIN_NAMES[self.src]} to {BIN_NAMES[self.dst]}"


@dataclass(frozen=True)
class Share:
    """Tell the partner constraint number ``constraint`` (an index into the puzzle's constraints)."""

    constraint: int

    def text(self) -> str:
        return f"share {self.constraint}"


@dataclass(frozen=True)
class Ask:
    """Ask the partner for object ``obj``'s goal bin."""

    obj: int

    def text(self) -> str:
        return f"ask {self.obj}"


@dataclass(frozen=True)
class Answer:
    """Answer the partner's ask: object ``obj``'s goal bin is ``bin``."""

    obj: int
    bin: int

    def text(self) -> str:
        return f"answer {self.obj} {BIN_NAMES[self.bin]}"


@dataclass(frozen=True)
class Pass:
    """Do nothing this turn."""

    def text(self) -> str:
        return "pass"


Action = Move | Share | Ask | Answer | Pass

COMM_MODES = ("provide_and_seek", "provide_only", "seek_only", "none")
_SHARES = {"provide_and_seek": True, "provide_only": True, "seek_only": False, "none": False}
_ASKS = {"provide_and_seek": True, "provide_only": False, "seek_only": True, "none": False}

# outcomes of a turn
ACCEPTED, REJECTED, ILLEGAL = "accepted", "rejected", "illegal"


@dataclass(frozen=True)
class Event:
    """One turn of the public history: who did what, and what came of it (``outcome``: accepted; rejected,
    a wrong placement; illegal, an action the rules do not allow), with the reason when it failed."""

    turn: int
    player: int
    action: Action
    outcome: str
    reason: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome != ACCEPTED


def default_max_steps(n: int) -> int:
    """The step limit: 30 turns (the paper's human study), 40 for 8 objects, 5 per object beyond."""
    return 30 if n <= 7 else 5 * n


@dataclass
class State:
    """One game in progress (mutable: :meth:`play` advances it; :meth:`copy` for search).

    Attributes:
        location: each object's current bin.
        turn: turns played (every action costs one, failed or not).
        current: the player to act (0 moves first).
        received: per player, the constraints the partner has shared with it.
        shared: per player, the constraints it has shared.
        told: per player, the answers it received (object → goal bin).
        placed: the goal bin of every object ever accepted into a goal bin (public facts).
        rejected: public facts "object x is not in goal bin b", from rejected placements.
        history: the public history, failed actions marked.
    """

    puzzle: Puzzle
    comm_mode: str = "provide_and_seek"
    max_steps: int = 0
    location: list[int] = field(default_factory=list)
    turn: int = 0
    current: int = 0
    received: tuple[set[int], set[int]] = field(default_factory=lambda: (set(), set()))
    shared: tuple[set[int], set[int]] = field(default_factory=lambda: (set(), set()))
    told: tuple[dict[int, int], dict[int, int]] = field(default_factory=lambda: ({}, {}))
    placed: dict[int, int] = field(default_factory=dict)
    rejected: set[tuple[int, int]] = field(default_factory=set)
    history: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.comm_mode not in COMM_MODES:
            raise ValueError(f"comm_mode must be one of {COMM_MODES}, got {self.comm_mode!r}")
        if not self.location:
            self.location = list(self.puzzle.start)
        if self.max_steps <= 0:
            self.max_steps = default_max_steps(self.puzzle.n)
        self._knowledge: dict[int, Knowledge] = {}

    def copy(self) -> State:
        twin = State(
            self.puzzle,
            self.comm_mode,
            self.max_steps,
            list(self.location),
            self.turn,
            self.current,
            (set(self.received[0]), set(self.received[1])),
            (set(self.shared[0]), set(self.shared[1])),
            (dict(self.told[0]), dict(self.told[1])),
            dict(self.placed),
            set(self.rejected),
            list(self.history),
        )
        return twin

    # -- what the players know ----------------------------------------------------------------------
    def explicit(self, player: int) -> tuple[int, ...]:
        """The constraints ``player`` knows explicitly: its own, then those the partner shared, in order."""
        own = self.puzzle.given(player)
        return own + tuple(sorted(self.received[player] - set(own)))

    def knowledge(self, player: int) -> Knowledge:
        """``player``'s inferred knowledge: the closure over its explicit constraints, the answers it was
        given and the public placements and rejections."""
        cached = self._knowledge.get(player)
        if cached is None:
            constraints = [self.puzzle.constraints[i] for i in self.explicit(player)]
            facts = [(c.a, c.code) for c in constraints if c.is_grounding]
            facts += list(self.placed.items()) + list(self.told[player].items())
            relations = [c for c in constraints if not c.is_grounding]
            cached = Knowledge(self.puzzle.n, relations, facts, sorted(self.rejected))
            self._knowledge[player] = cached
        return cached

    # -- the end --------------------------------------------------------------------------------------
    @property
    def success(self) -> bool:
        """Each goal bin holds exactly its goal set (wrong placements are refused, so: every object placed)."""
        return all(loc == g for loc, g in zip(self.location, self.puzzle.goal, strict=True))

    @property
    def truncated(self) -> bool:
        """The step limit is reached without success (a win on the last step is a win)."""
        return self.turn >= self.max_steps and not self.success

    @property
    def over(self) -> bool:
        return self.success or self.turn >= self.max_steps

    def placed_count(self) -> int:
        return sum(loc == g for loc, g in zip(self.location, self.puzzle.goal, strict=True))

    # -- legality -------------------------------------------------------------------------------------
    def last_ask(self) -> int | None:
        """The object the partner asked about on the turn just before, if it did."""
        if self.history:
            last = self.history[-1]
            if last.player != self.current and isinstance(last.action, Ask) and last.outcome == ACCEPTED:
                return last.action.obj
        return None

    def check(self, action: Action, player: int | None = None) -> str:
        """Why ``action`` is illegal for ``player`` (default: the one to act) now, or ``""`` if it is legal.

        Legal = the affordance rules for moves (both bins reachable, the object in the from-bin, from ≠ to)
        and the communication rules of the mode (a share of one's own constraint not yet shared; an ask
        about an object not in a goal bin; an answer, on the turn right after the partner asked about that
        object, of a goal bin the answerer can infer; in seek-only mode, shares only right after the
        partner's ask and only of a constraint about the object asked about). A legal move into a wrong
        goal bin is legal, and rejected when played.
        """
        p = self.current if player is None else player
        n = self.puzzle.n
        if isinstance(action, Pass):
            return ""
        if isinstance(action, Move):
            if not 0 <= action.obj < n:
                return f"there is no object {action.obj}"
            if not (0 <= action.src < N_BINS and 0 <= action.dst < N_BINS):
                return "no such bin"
            if action.src == action.dst:
                return "from and to are the same bin"
            reach = reachable(p)
            if action.src not in reach or action.dst not in reach:
                bad = action.src if action.src not in reach else action.dst
                return f"{BIN_NAMES[bad]} is out of reach"
            if self.location[action.obj] != action.src:
                return f"object {action.obj} is not in {BIN_NAMES[action.src]}"
            return ""
        mode = self.comm_mode
        if isinstance(action, Share):
            k = action.constraint
            if not 0 <= k < len(self.puzzle.constraints):
                return f"there is no constraint {k}"
            asked = self.last_ask() if mode == "seek_only" else None
            if not _SHARES[mode] and not (mode == "seek_only" and asked is not None):
                return (
                    "in seek-only mode a share answers the partner's ask, on the next turn"
                    if mode == "seek_only"
                    else f"no shares in {mode} mode"
                )
            if k not in self.puzzle.given(p):
                return f"constraint {k} is not one of yours"
            if k in self.shared[p]:
                return f"constraint {k} was shared already"
            if asked is not None and asked not in self.puzzle.constraints[k].objects():
                return f"in seek-only mode a share must be about object {asked}, the one asked about"
            return ""
        if isinstance(action, Ask):
            if not _ASKS[mode]:
                return f"no asks in {mode} mode"
            if not 0 <= action.obj < n:
                return f"there is no object {action.obj}"
            if self.location[action.obj] in GOAL_BINS:
                return f"object {action.obj} is placed already"
            return ""
        if isinstance(action, Answer):
            if not _ASKS[mode]:
                return f"no answers in {mode} mode"
            if self.last_ask() != action.obj:
                return f"the partner did not just ask about object {action.obj}"
            if not 0 <= action.bin < 4:
                return "an answer names a goal bin"
            if self.knowledge(p).goal(action.obj) != action.bin:
                return f"you cannot infer that object {action.obj} goes in {BIN_NAMES[action.bin]}"
            return ""
        return f"unknown action {action!r}"

    # -- a turn ---------------------------------------------------------------------------------------
    def play(self, action: Action) -> Event:
        """Play one turn for the player to act: apply ``action`` if legal and accepted, record it, advance
        the turn. An illegal action or a rejected placement leaves the board unchanged and costs the turn.
        Raises RuntimeError once the game is over."""
        if self.over:
            raise RuntimeError("the game is over")
        p = self.current
        reason = self.check(action)
        outcome = ILLEGAL if reason else ACCEPTED
        if not reason:
            if isinstance(action, Move):
                if action.dst in GOAL_BINS and action.dst != self.puzzle.goal[action.obj]:
                    outcome, reason = REJECTED, f"object {action.obj} does not go in {BIN_NAMES[action.dst]}"
                    self.rejected.add((action.obj, action.dst))
                elif action.dst not in GOAL_BINS and action.dst != COMMON:
                    outcome, reason = REJECTED, "only the common bin or the object's goal bin takes an object"
                else:
                    self.location[action.obj] = action.dst
                    if action.dst in GOAL_BINS:
                        self.placed[action.obj] = action.dst
            elif isinstance(action, Share):
                self.shared[p].add(action.constraint)
                self.received[1 - p].add(action.constraint)
            elif isinstance(action, Answer):
                self.told[1 - p][action.obj] = action.bin
        event = Event(self.turn, p, action, outcome, reason)
        self.history.append(event)
        self.turn += 1
        self.current = 1 - p
        self._knowledge.clear()
        return event

    # -- helpers for policies and verifiers -----------------------------------------------------------
    def unplaced(self) -> list[int]:
        return [o for o, (loc, g) in enumerate(zip(self.location, self.puzzle.goal, strict=True)) if loc != g]


def new_game(puzzle: Puzzle, comm_mode: str = "provide_and_seek", max_steps: int | None = None) -> State:
    """A fresh game of ``puzzle``: every object in its start bin, player 0 to act."""
    return State(puzzle, comm_mode, max_steps or 0)
