"""The Einstein puzzle in Gymnasium spaces: one ``Discrete`` action space and a flat numeric observation.

**Actions** (``Discrete(48·n + 1)``), in this order:

| indices              | action                                    |
|----------------------|-------------------------------------------|
| ``0 … 42n − 1``      | move object ``o`` from bin ``s`` to bin ``d ≠ s`` (index below) |
| ``42n … 43n − 1``    | share constraint ``k``                     |
| ``43n … 44n − 1``    | ask about object ``o``                     |
| ``44n … 48n − 1``    | answer: object ``o``'s goal is goal bin ``b``: ``44n + 4·o + b`` |
| ``48n``              | pass                                      |

A move's index is ``42·o + 6·s + (d if d < s else d − 1)``.

Bins: 0 top_left, 1 top_right, 2 bottom_left, 3 bottom_right, 4 bottom_start,
5 top_start, 6 common. Constraint ``k`` is the puzzle's ``k``-th (0: the
grounding).

**Observation** (``Box(0, 1, (obs_size(n),), float32)``), blocks in this order:

| block       | size          | content                                                      |
|-------------|---------------|--------------------------------------------------------------|
| side        | 1             | 1 for player 1 (top), 0 for player 0 (bottom)                |
| progress    | 1             | turns played / step limit                                    |
| mode        | 4             | the comm mode, one-hot in ``rules.COMM_MODES`` order           |
| board       | 7n            | each object's bin, one-hot                                   |
| inferred    | 4n            | each object's possible goal bins (1 = still possible)        |
| constraints | n·(2n + 8)    | per constraint: 4 flags, then its content if known (below)    |
| asked       | n             | the object the partner asked about on the turn just before (one-hot) |
| history     | 4·(15 + n)    | the last 4 turns, newest first (below)                        |

A constraint's flags: known to me, mine, shared by me, shared with me; then,
if known to me, object a (one-hot n), object b (one-hot n; zeros for a
grounding) and the code (one-hot 4; the goal bin for a grounding). A turn of
the history: present, mine, kind (one-hot 5: move, share, ask, answer, pass),
failed, object (one-hot n; for a share, the constraint's first object), bin
(one-hot 7: a move's destination or an answer's bin).

The action mask travels beside it, and the paper's text observation under
``"text"`` (:mod:`eq_env.einstein_puzzle.text`). :func:`encode_observation` and
:func:`action_mask` compute them from a state; :class:`ObservationEncoder` gives
the same, turn after turn of one game, from cached blocks (what the environment
uses: it is built every turn).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from eq_env.einstein_puzzle.rules import (
    BOTH,
    COMM_MODES,
    COMMON,
    GOAL_BINS,
    N_BINS,
    Action,
    Answer,
    Ask,
    Constraint,
    Event,
    Move,
    Pass,
    Share,
    State,
)

__all__ = [
    "CONSTRAINT_SIZE",
    "HISTORY",
    "ObservationEncoder",
    "ObservationLayout",
    "action_index",
    "action_mask",
    "actions",
    "encode_observation",
    "layout",
    "n_actions",
    "n_from_actions",
]

HISTORY = 4  # turns of history in the numeric observation
KINDS = (Move, Share, Ask, Answer, Pass)


def n_actions(n: int) -> int:
    return 48 * n + 1


def n_from_actions(size: int) -> int:
    """The number of objects of a game with ``size`` actions (an action mask's length)."""
    n, rest = divmod(size - 1, 48)
    if rest or n < 1:
        raise ValueError(f"{size} is not the action count of an Einstein puzzle (48·n + 1)")
    return n


@lru_cache(maxsize=32)
def actions(n: int) -> tuple[Action, ...]:
    """Every action of an ``n``-object game, in index order (see the module docstring)."""
    out: list[Action] = []
    for obj in range(n):
        for src in range(N_BINS):
            out.extend(Move(obj, src, dst) for dst in range(N_BINS) if dst != src)
    out += [Share(k) for k in range(n)]
    out += [Ask(obj) for obj in range(n)]
    out += [Answer(obj, b) for obj in range(n) for b in range(4)]
    out.append(Pass())
    return tuple(out)


@lru_cache(maxsize=32)
def _indices(n: int) -> dict[Action, int]:
    return {a: i for i, a in enumerate(actions(n))}


def action_index(action: Action, n: int) -> int:
    """The Discrete index of ``action`` in an ``n``-object game (ValueError if it has none)."""
    try:
        return _indices(n)[action]
    except KeyError:
        raise ValueError(f"{action!r} is not an action of a {n}-object game") from None


@lru_cache(maxsize=4)
def _move_blocks(player: int) -> tuple[bytes, ...]:
    """Per from-bin, the 42 move flags (``int8`` bytes) of one object there for ``player`` (1: both bins
    reachable, from ≠ to): an object's block of the mask depends only on the bin it is in."""
    from eq_env.einstein_puzzle.rules import reachable

    reach = reachable(player)
    blocks = []
    for src in range(N_BINS):
        block = bytearray(6 * N_BINS)
        if src in reach:
            for dst in reach - {src}:
                block[6 * src + (dst if dst < src else dst - 1)] = 1
        blocks.append(bytes(block))
    return tuple(blocks)


@lru_cache(maxsize=1024)
def _holds(holders: tuple[int, ...], player: int) -> tuple[int, ...]:
    """The constraints ``player`` is given (``Puzzle.given``), by the puzzle's holders."""
    return tuple(k for k, h in enumerate(holders) if h == player or h == BOTH)


_SHARE_MODES = ("provide_and_seek", "provide_only")
_ASK_MODES = ("provide_and_seek", "seek_only")


def action_mask(state: State, possible: Sequence[int] | None = None, *, strict: bool = False) -> np.ndarray:
    """The legal actions of the player to act (``int8``, 1 = legal): :meth:`State.check` of each, computed
    from the rules' structure rather than by trying every index (the tests compare the two on many states).

    ``possible``: the acting player's goal-bin masks (``state.knowledge(player).masks()``) if known already
    (:meth:`ObservationEncoder.possible`); they decide which answer is legal.

    ``strict`` (the game's ``strict_mask``): also leave out the legal moves that can only fail or undo
    progress — into a start bin (always rejected), out of a goal bin (an object there is correctly placed,
    so the move undoes it or is rejected), and into a goal bin the player knows is not the object's. The rules
    are unchanged: such a move, played anyway, is played as the rules say."""
    if state.over:
        return np.zeros(48 * state.puzzle.n + 1, np.int8)
    if strict and possible is None:
        possible = state.knowledge(state.current).masks()
    return np.frombuffer(bytearray(_legal(state, state.location, state.last_ask(), possible, strict)), np.int8)


@lru_cache(maxsize=64)
def _strict_block(player: int, src: int, possible: int) -> bytes:
    """:func:`_move_blocks`'s block of one object in bin ``src`` whose goal bins may be ``possible`` (a 4-bit
    mask), less the moves that can only fail or undo a correct placement (:func:`action_mask`'s ``strict``)."""
    from eq_env.einstein_puzzle.rules import reachable

    block = bytearray(_move_blocks(player)[src])
    reach = reachable(player)
    for dst in reach - {src}:
        useless = (
            src in GOAL_BINS  # (only correct placements are accepted: the object is where it belongs)
            or (dst not in GOAL_BINS and dst != COMMON)  # a start bin takes nothing back
            or (dst in GOAL_BINS and not possible >> dst & 1)
        )
        if useless:
            block[6 * src + (dst if dst < src else dst - 1)] = 0
    return bytes(block)


def _legal(
    state: State, location: Sequence[int], asked: int | None, possible: Sequence[int] | None, strict: bool = False
) -> bytes:
    """The action mask of the player to act in a game that is not over, as bytes (``asked``: the object the
    partner just asked about, ``state.last_ask()``; ``strict``: :func:`action_mask`'s, ``possible`` given)."""
    n, p = state.puzzle.n, state.current
    if strict:
        assert possible is not None
        moves = b"".join([_strict_block(p, src, possible[obj]) for obj, src in enumerate(location)])
    else:
        blocks = _move_blocks(p)
        moves = b"".join([blocks[src] for src in location])  # the moves, object by object
    talk = bytearray(6 * n + 1)  # shares (n), asks (n), answers (4n), pass
    mode = state.comm_mode
    if mode != "none":
        shared = state.shared[p]
        if mode in _SHARE_MODES:
            for k in _holds(state.puzzle.holders, p):
                if k not in shared:
                    talk[k] = 1
        elif asked is not None:  # seek-only: a share answers the ask just made, about its object
            constraints = state.puzzle.constraints
            for k in _holds(state.puzzle.holders, p):
                if k not in shared and asked in constraints[k].objects():
                    talk[k] = 1
        if mode in _ASK_MODES:
            for obj, loc in enumerate(location):
                if loc not in GOAL_BINS:
                    talk[n + obj] = 1
            if asked is not None:
                bins = state.knowledge(p).possible(asked) if possible is None else possible[asked]
                if bins and not bins & (bins - 1):  # (one bin: the player can infer it)
                    talk[2 * n + 4 * asked + bins.bit_length() - 1] = 1
    talk[6 * n] = 1
    return moves + talk


CONSTRAINT_FLAGS = 4


def CONSTRAINT_SIZE(n: int) -> int:
    return CONSTRAINT_FLAGS + 2 * n + 4


@dataclass(frozen=True)
class ObservationLayout:
    """Where each block of the numeric observation starts (see the module docstring)."""

    n: int

    @property
    def side(self) -> int:
        return 0

    @property
    def progress(self) -> int:
        return 1

    @property
    def mode(self) -> int:
        return 2

    @property
    def board(self) -> int:
        return 6

    @property
    def inferred(self) -> int:
        return self.board + N_BINS * self.n

    @property
    def constraints(self) -> int:
        return self.inferred + 4 * self.n

    @property
    def asked(self) -> int:
        return self.constraints + self.n * CONSTRAINT_SIZE(self.n)

    @property
    def history(self) -> int:
        return self.asked + self.n

    @property
    def event_size(self) -> int:
        return 2 + len(KINDS) + 1 + self.n + N_BINS

    @property
    def size(self) -> int:
        return self.history + HISTORY * self.event_size


@lru_cache(maxsize=32)
def layout(n: int) -> ObservationLayout:
    return ObservationLayout(n)


_BITS = np.array([[m >> b & 1 for b in range(4)] for m in range(16)], np.float32)  # 4-bit mask -> 4 flags


# label, offsets -> the goal bins {label ^ r : r in offsets} (a 4-bit mask)
_SPREAD = tuple(
    tuple(sum(1 << (label ^ r) for r in range(4) if offsets >> r & 1) for offsets in range(16)) for label in range(4)
)


class _Inference:
    """One player's :meth:`State.knowledge` masks, kept up to date fact by fact.

    The same closure as :class:`~.rules.Knowledge`: the relations the player knows tie objects into
    components (an object's goal = its label XOR its component's offset); facts (groundings, placements,
    answers) pin offsets and public rejections rule them out. Each new fact narrows one component's offsets
    and each relation shared with the player merges two components, so nothing is rebuilt. Should the facts
    ever contradict each other (they cannot in play: every fact is true), it defers to ``Knowledge`` from
    then on.
    """

    __slots__ = (
        "_conflict",
        "_label",
        "_masks",
        "_offsets",
        "_own",
        "_placed",
        "_received",
        "_rejected",
        "_root",
        "_told",
    )

    def __init__(self, state: State, player: int) -> None:
        n = state.puzzle.n
        self._root, self._label, self._offsets = list(range(n)), [0] * n, [15] * n
        self._own = frozenset(state.puzzle.given(player))
        self._received: set[int] = set()
        self._placed = self._told = 0  # facts of the (only growing) dicts applied so far
        self._rejected: set[tuple[int, int]] = set()
        self._masks: list[int] = []
        self._conflict = False
        constraints = state.puzzle.constraints
        for k in sorted(self._own, key=lambda k: constraints[k].b is None):  # relations, then groundings
            self._add(constraints[k])

    def _add(self, c: Constraint) -> None:
        root, label, offsets = self._root, self._label, self._offsets
        if c.b is None:
            offsets[root[c.a]] &= 1 << (label[c.a] ^ c.code)
            return
        ra, rb = root[c.a], root[c.b]
        d = label[c.a] ^ label[c.b] ^ c.code
        if ra == rb:
            if d:
                self._conflict = True
            return
        # goal(x) = label(x) ^ offset(root): component b joins a, its offsets seen from a's root
        for x, r in enumerate(root):
            if r == rb:
                root[x], label[x] = ra, label[x] ^ d
        offsets[ra] &= _SPREAD[d][offsets[rb]]

    def masks(self, state: State, player: int) -> list[int]:
        """The player's goal-bin masks now (do not modify the list)."""
        if self._conflict:
            return list(state.knowledge(player).masks())
        root, label, offsets = self._root, self._label, self._offsets
        changed = not self._masks
        received = state.received[player]
        if len(received) > len(self._received):
            constraints = state.puzzle.constraints
            for k in sorted(received - self._received):
                if k not in self._own:
                    self._add(constraints[k])
            self._received = set(received)
            changed = True
        placed, told = state.placed, state.told[player]
        if len(placed) > self._placed:
            for obj, b in list(placed.items())[self._placed :]:
                offsets[root[obj]] &= 1 << (label[obj] ^ b)
            self._placed, changed = len(placed), True
        if len(told) > self._told:
            for obj, b in list(told.items())[self._told :]:
                offsets[root[obj]] &= 1 << (label[obj] ^ b)
            self._told, changed = len(told), True
        if len(state.rejected) > len(self._rejected):
            for obj, b in state.rejected - self._rejected:
                offsets[root[obj]] &= ~(1 << (label[obj] ^ b))
            self._rejected = set(state.rejected)
            changed = True
        if changed:
            if self._conflict or not all(offsets):  # contradicting facts: Knowledge says which to keep
                self._conflict = True
                return self.masks(state, player)
            self._masks = [_SPREAD[label[obj]][offsets[r]] for obj, r in enumerate(root)]
        return self._masks


@lru_cache(maxsize=64)
def _one_hots(size: int) -> tuple[bytes, ...]:
    """``float32`` one-hot vectors of ``size`` as bytes, by index; index ``size``: all zeros."""
    rows = np.vstack([np.eye(size, dtype=np.float32), np.zeros((1, size), np.float32)])
    return tuple(row.tobytes() for row in rows)


_ONE, _ZERO = np.float32(1.0).tobytes(), np.float32(0.0).tobytes()


_KIND = {kind: i for i, kind in enumerate(KINDS)}


def _event_bytes(state: State, event: Event) -> tuple[bytes, bytes]:
    """One turn of the history block as ``float32`` bytes — present, mine, kind (5), failed, object (n), bin
    (7) — as player 0 and as player 1 see it (they differ in "mine")."""
    n = state.puzzle.n
    a = event.action
    obj = getattr(a, "obj", None)
    if isinstance(a, Share) and 0 <= a.constraint < n:
        obj = state.puzzle.constraints[a.constraint].a  # (a share is about its constraint's first object)
    where = a.dst if isinstance(a, Move) else a.bin if isinstance(a, Answer) else None
    body = b"".join(
        (
            _one_hots(len(KINDS))[_KIND[type(a)]],
            _ONE if event.failed else _ZERO,
            _one_hots(n)[obj if obj is not None and 0 <= obj < n else n],
            _one_hots(N_BINS)[where if where is not None and 0 <= where < N_BINS else N_BINS],
        )
    )
    mine, other = _ONE + _ONE + body, _ONE + _ZERO + body
    return (mine, other) if event.player == 0 else (other, mine)


def _fixed_part(state: State, player: int) -> np.ndarray:
    """The blocks a game never changes for ``player``: side and mode (the rest zeros)."""
    out = np.zeros(layout(state.puzzle.n).size, np.float32)
    out[0] = player  # (side)
    out[layout(state.puzzle.n).mode + COMM_MODES.index(state.comm_mode)] = 1.0
    return out


def encode_observation(state: State, player: int) -> np.ndarray:
    """``player``'s numeric observation of ``state`` (see the module docstring); :class:`ObservationEncoder`
    gives the same, faster, turn after turn of one game."""
    n = state.puzzle.n
    L = layout(n)
    out = _fixed_part(state, player)
    out[L.progress] = min(state.turn / state.max_steps, 1.0)
    out[L.board + np.arange(n) * N_BINS + np.asarray(state.location)] = 1.0
    out[L.inferred : L.inferred + 4 * n] = np.frombuffer(_inferred_bytes(state.knowledge(player).masks()), np.float32)
    blocks = _constraint_blocks(state, player, _constraint_contents(state), range(n))
    out[L.constraints : L.asked] = np.frombuffer(b"".join(blocks.values()), np.float32)
    if state.current == player:
        asked = state.last_ask()
        if asked is not None:
            out[L.asked + asked] = 1.0
    for i, event in enumerate(reversed(state.history[-HISTORY:])):
        base = L.history + i * L.event_size
        out[base : base + L.event_size] = np.frombuffer(_event_bytes(state, event)[player], np.float32)
    return out


@lru_cache(maxsize=64)
def _progress(max_steps: int) -> tuple[bytes, ...]:
    """The progress entry after each turn, as ``float32`` bytes."""
    return tuple(np.float32(min(t / max_steps, 1.0)).tobytes() for t in range(max_steps + 1))


_BITS_BYTES = tuple(row.tobytes() for row in _BITS)  # 4-bit mask -> its 4 flags as float32 bytes


def _inferred_bytes(masks: Sequence[int]) -> bytes:
    """The inferred block: each object's possible goal bins (4 flags per object), as ``float32`` bytes."""
    return b"".join([_BITS_BYTES[m] for m in masks])


_FLAG_BYTES = tuple(
    np.array([bits >> i & 1 for i in range(CONSTRAINT_FLAGS)], np.float32).tobytes()
    for bits in range(1 << CONSTRAINT_FLAGS)
)


def _constraint_contents(state: State) -> tuple[bytes, ...]:
    """Per constraint, the part of its block after the flags (object a, object b, code) as ``float32`` bytes."""
    n = state.puzzle.n
    hot_n, hot_4 = _one_hots(n), _one_hots(4)
    return tuple(hot_n[c.a] + hot_n[n if c.b is None else c.b] + hot_4[c.code] for c in state.puzzle.constraints)


def _constraint_blocks(state: State, player: int, contents: Sequence[bytes], which: Iterable[int]) -> dict[int, bytes]:
    """Constraint ``k``'s block of ``player``'s observation as ``float32`` bytes, for each ``k`` in ``which``: its
    flags (known to me, mine, shared by me, shared with me) and, if known, its ``contents``
    (:func:`_constraint_contents`); zeros if unknown."""
    mine, shared, received = state.puzzle.given(player), state.shared[player], state.received[player]
    out = {}
    for k in which:
        if k in mine or k in received:
            bits = 1 | (k in mine) << 1 | (k in shared) << 2 | (k in received) << 3
            out[k] = _FLAG_BYTES[bits] + contents[k]
        else:
            out[k] = bytes(len(_FLAG_BYTES[0]) + len(contents[k]))
    return out


class ObservationEncoder:
    """:func:`encode_observation` for the turns of one game, assembled from cached byte blocks.

    What a player knows changes only when a constraint is shared with it, it receives an answer, or a
    placement is accepted or rejected; its constraint flags only on shares; the board only on accepted moves;
    past turns never. Each block is kept (as ``float32`` bytes) until the sizes of the state's (only growing)
    sets or the board say it changed, and a call joins the blocks into a new read-only array. Build one per
    game (it follows ``state`` as it is played); :meth:`possible` gives a player's goal-bin masks.
    """

    __slots__ = (
        "_blocks",
        "_board",
        "_constraints",
        "_contents",
        "_event_blocks",
        "_events",
        "_hot_n",
        "_inference",
        "_inferred",
        "_mode",
        "_progress",
        "_seen",
        "_side",
        "_zero_event",
        "state",
    )

    def __init__(self, state: State) -> None:
        self.state = state
        n = state.puzzle.n
        L = layout(n)
        fixed = _fixed_part(state, 0)
        self._side = (_ZERO, _ONE)
        self._mode = fixed[L.mode : L.board].tobytes()
        self._contents = _constraint_contents(state)
        self._progress = _progress(state.max_steps)
        self._hot_n = _one_hots(n)
        self._zero_event = bytes(4 * L.event_size)
        self._inference = (_Inference(state, 0), _Inference(state, 1))
        self._board: tuple[tuple[int, ...], bytes] = ((), b"")
        self._inferred: list[tuple[tuple[int, ...], bytes]] = [((), b""), ((), b"")]
        self._constraints: list[tuple[tuple[int, int], bytes]] = [((-1, -1), b""), ((-1, -1), b"")]
        # per player: each constraint's block, and the shared and received sets they were made for
        self._blocks = [_constraint_blocks(state, p, self._contents, range(n)) for p in (0, 1)]
        self._seen: list[tuple[set[int], set[int]]] = [(set(), set()), (set(), set())]
        self._events: list[tuple[bytes, bytes]] = []  # per past turn: its block as player 0 and player 1 see it
        self._event_blocks: dict[tuple[Action, int, bool], tuple[bytes, bytes]] = {}  # (turns repeat)

    def possible(self, player: int) -> list[int]:
        """``player``'s goal-bin masks now (``state.knowledge(player).masks()``; do not modify the list)."""
        return self._inference[player].masks(self.state, player)

    def action_mask(self, strict: bool = False) -> np.ndarray:
        """:func:`action_mask` (read-only), for a game that is not over."""
        state = self.state
        asked = state.last_ask()
        # (only answers, and the strict mask's moves, need the knowledge)
        possible = self.possible(state.current) if asked is not None or strict else None
        return np.frombuffer(_legal(state, state.location, asked, possible, strict), np.int8)

    def __call__(self, player: int) -> np.ndarray:
        state = self.state
        location = tuple(state.location)
        if self._board[0] != location:
            hot = _one_hots(N_BINS)
            self._board = (location, b"".join([hot[b] for b in location]))
        key = (len(state.received[player]), len(state.told[player]), len(state.placed), len(state.rejected))
        inferred = self._inferred[player]
        if inferred[0] != key:
            inferred = (key, _inferred_bytes(self.possible(player)))
            self._inferred[player] = inferred
        shared, received = state.shared[player], state.received[player]
        flags = (len(shared), len(received))
        constraints = self._constraints[player]
        if constraints[0] != flags:  # a share: only the constraints it touched change
            seen_shared, seen_received = self._seen[player]
            blocks = self._blocks[player]
            blocks.update(
                _constraint_blocks(state, player, self._contents, (shared ^ seen_shared) | (received ^ seen_received))
            )
            self._seen[player] = (set(shared), set(received))
            constraints = (flags, b"".join(blocks.values()))
            self._constraints[player] = constraints
        history, events = state.history, self._events
        for event in history[len(events) :]:
            turn = (event.action, event.player, event.failed)
            block = self._event_blocks.get(turn)
            if block is None:
                block = self._event_blocks[turn] = _event_bytes(state, event)
            events.append(block)
        n = state.puzzle.n
        asked = state.last_ask() if state.current == player else None
        parts = [
            self._side[player],
            self._progress[min(state.turn, len(self._progress) - 1)],
            self._mode,
            self._board[1],
            inferred[1],
            constraints[1],
            self._hot_n[n if asked is None else asked],
        ]
        shown = min(HISTORY, len(history))
        parts += [events[i][player] for i in range(-1, -shown - 1, -1)]  # (newest first)
        if shown < HISTORY:
            parts += [self._zero_event] * (HISTORY - shown)
        return np.frombuffer(b"".join(parts), np.float32)
