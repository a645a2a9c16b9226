"""The oracle planner: the shortest joint plan of a collaborative Einstein puzzle, exact and fast.

What it computes
----------------
:func:`oracle_plan` returns the SHORTEST sequence of actions (players strictly alternating, starting with
``state.current``) that takes a :class:`~.rules.State` — fresh or mid-game — to success within the steps left
(``state.max_steps - state.turn``), in which every action is *justified* by the acting player's knowledge at
that moment (:func:`justification`):

* rational by :func:`~.verifiers.rational_reason` (legal by :meth:`State.check` and consistent with the
  actor's :meth:`State.knowledge`), except that
* a **pass is always allowed** — a joint plan may need a player to wait for its partner (the reasoning
  verifier allows a pass only when nothing else is rational; the oracle does not hold a planner to that);
* in ``none`` mode the rational set includes guesses; the oracle takes only **lucky** ones: a move into the
  object's true goal bin, or into the common bin only when the true goal is in the partner's row (the paper's
  "5.8 (none, with lucky guesses)"). A rejected guess is never needed in a shortest plan: in ``none`` mode
  the oracle's moves do not depend on knowledge, so a rejected guess (board unchanged, one more public
  exclusion) is a pass in effect — and the lucky guess of the same object dominates it. (In the other modes a
  move into a goal bin needs the goal known, and knowledge is true, so no justified move is ever rejected.)

It returns ``None`` only when no plan fits in the steps left (proven: the search ran dry); when its
``time_limit`` or ``max_expansions`` runs out first it raises :class:`PlannerBudgetExceeded`. :func:`solve`
also reports the nodes expanded and the time; :func:`plan_length` and :func:`mean_plan_length` are shortcuts.

:func:`exhaustive_plan_length` is the reference: a plain breadth-first search over ALL justified actions, with
no heuristic and no pruning beyond exact duplicate detection on the full state — on :class:`~.rules.State`
itself (``engine="rules"``: ``State.play``, :func:`~.verifiers.rational_reason`; independent, slow) or on the
compact state below with the successor function unpruned (``engine="compact"``: the tests check that its
successors are exactly the rules'). The tests check the fast oracle against both.

The compact state
-----------------
Every fact the game gives is true (a placement is accepted only into the true goal bin, an answer must be
inferable and inference from true facts is sound, a rejection is true), so a player's knowledge is fully
described by *which* facts it holds, never by their values. The search state is a tuple of ints::

    (common, done, new0, new1, told0, told1, current, pending)

``common``/``done``: bitmasks of the objects in the common bin / in their goal bin (every other object is
in its own start bin: start bins refuse objects, goal bins refuse wrong objects); ``new0``/``new1``: the
constraints each player has shared during the plan (``shared[p]`` and the partner's ``received`` follow
from them and the start state's); ``told0``/``told1``: the objects whose goal each player has been told;
``current``; ``pending``: the object the partner asked about on the turn just before (−1: none), which is
all of the history the rules look at. ``turn`` is the search depth. Public rejections never change during
a plan (no rejected action is ever planned), so they are constants of the problem.

Knowledge. A player's explicit relations cut the objects into components (the constraints form a tree, so a
set of relations is a forest); a component is *pinned* when it holds a fact — a grounding, a placement
(``state.placed``, public), an answer told to that player — and then every goal in it is known. Otherwise its
possible goals are the true ones XOR an offset that the public rejections of its members have not ruled out.
Only two levels matter to the rules: the goal known exactly (a move into a goal bin, an answer; an ask needs
it unknown) and the row known (possible goals all in the partner's row: a move into the common bin). Both are
bitmasks computed per (relations, facts), cached; the tests check them against :meth:`State.knowledge`.

The search
----------
A* over the compact state, unit cost per turn, ties broken toward the deepest node (it dives along a plateau
of equal ``f``), a state re-opened when reached by a shorter path (so inconsistency of the heuristic cannot
cost exactness), nodes cut when ``g + h`` exceeds the steps left.

Each object needs a fixed route of physical moves: already in its goal bin, nothing; in the common bin, one
placement by its goal-row player; in its start bin, one placement by its owner if the goal is in the owner's
row, else a hand-off to the common bin by the owner and a placement by the partner (no other move is ever
justified: an object in a goal bin stays; moves into start bins are refused; a move into the common bin needs
the goal known to be across, in ``none`` mode lucky). So player ``x`` needs ``m_x`` more moves, each a
separate turn of ``x``.

Messages. Player ``y`` learns only from its partner ``x``'s messages (shares, answers: turns of ``x``) and
from placements (public). What ``y`` can learn without any message is a fixpoint in a relaxation that only
adds possibilities: ``x`` omniscient, ``y``'s relations and answers fixed, every move made as soon as its mover
would know enough, each placement pinning its component of ``y``'s relations. The objects it leaves unplaced
are blocked on ``y``'s knowledge, and each component of ``y``'s relations holding one needs a message of its
own: nothing free can pin it (every object in it is unknown to ``y`` alike, and ``x`` could place none of them
or the fixpoint would have); an answer pins one component; a share joins two (a tree edge never joins a
component to itself), so a set of shares and answers that resolves ``r`` blocked components, each resolved
through a chain ending at a pinned one or an answer, has at least ``r`` members. Hence ``x`` owes at least
``c_x`` = (number of those components) message turns. When the start state holds public rejections, a share
joining two components may pin both by their combined exclusions, so ``c_x`` is halved (rounded up). A
blocked component no share of ``x`` can touch needs an answer, hence an ask of ``y`` on the turn before
(provide & seek; in provide only it cannot be learned at all: no plan). In seek-only mode every message
follows an ask of ``y`` on the turn before (one may be pending already).

Circles. Each count above assumes the partner omniscient. Jointly, with only those components pinned, objects
may still be blocked: a circle in which each player waits for a placement the other cannot make yet. The
same argument with nobody omniscient — a plan whose messages pin a set ``S_y`` of ``y``'s components (which
must include the blocked ones above) lets the joint fixpoint, given ``S_0`` and ``S_1`` pinned from the start,
place everything, and has at least ``|S_y|`` messages of ``x`` — gives more: the heuristic tries every set of
one or two extra components (only components holding an object left whose mover does not know its goal can
matter) and so learns which splits (extra messages of the player to act, of the other) up to two in all are
possible; the bound is the least over the splits not ruled out, three in all counting as possible. (Skipped
when the start state holds rejections: the halved counts above already allow for them.)

The heuristic: player ``x`` needs at least ``t_x = m_x + (its messages) + (its asks)`` more turns of its own.
With strict alternation the player to act has turns 0, 2, 4, … and the other 1, 3, 5, …, so
``h = max(2·t_cur − 1, 2·t_other)`` (0 when both are 0). Every term counts distinct turns that every plan
must contain, so ``h`` never overestimates: it is admissible. (It is not consistent — a message can drop it
by more than one — hence the re-opening; ``f`` is also kept monotone along a path, "pathmax", which is safe
because a parent's ``f`` bounds every completion through it.) On generated puzzles of 4-12 objects ``h`` at
the start is the optimum in over 90% of cases, which is why the search rarely expands more than a few times
``g`` nodes. Fixpoints and knowledge are cached (by relations and facts, as bitmasks).

Pruning (each keeps every shortest plan: the pruned action's successor is dominated by the pass's, which is
always generated — same board, same knowledge now and forever, at most fewer options):

* a share the partner knows already (a constraint held by both), or about two objects whose goals the
  partner knows exactly: it cannot change the partner's knowledge ever (an exact goal stays exact; joining
  two pinned components pins nothing new);
* an ask the partner cannot answer on the next turn (it does not know the goal) in provide & seek mode, and
  in seek-only mode unless the partner also has a useful share about that object: the ask enables nothing.

Differences from the original research code's planner: it searched breadth-first, from each player's
perspective, with no heuristic, and gave up on many 5- and 6-object puzzles within 2,500 expansions (one
6-object puzzle: 230 s at 10,000 expansions, no solution). This one plans jointly for both players, is exact
(equal to the exhaustive search on every suite puzzle up to 5 objects, all modes) and takes about a
millisecond at 4-12 objects (median; ``benchmarks/einstein_planner.py``).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from statistics import mean

from eq_env.einstein_puzzle.rules import (
    ACCEPTED,
    BOTTOM_START,
    COMMON,
    GOAL_BINS,
    Action,
    Answer,
    Ask,
    Move,
    Pass,
    Puzzle,
    Share,
    State,
    goal_row_player,
    new_game,
    start_bin,
)
from eq_env.einstein_puzzle.spaces import actions as all_actions
from eq_env.einstein_puzzle.verifiers import rational_reason

__all__ = [
    "OraclePlan",
    "PlannerBudgetExceeded",
    "exhaustive_plan_length",
    "justification",
    "justified_actions",
    "mean_plan_length",
    "oracle_plan",
    "plan_length",
    "replay",
    "solve",
]


class PlannerBudgetExceeded(RuntimeError):  # noqa: N818 - the name the callers know
    """The search ran out of its ``time_limit`` or ``max_expansions`` before it could prove the answer."""


@dataclass(frozen=True)
class OraclePlan:
    """A solved search: the plan (``None``: no plan within the steps left) and what it cost."""

    actions: tuple[Action, ...] | None
    expansions: int
    seconds: float

    @property
    def length(self) -> int | None:
        return None if self.actions is None else len(self.actions)


# -- what the oracle allows ---------------------------------------------------------------------------


def _lucky(state: State, action: Move) -> bool:
    goal = state.puzzle.goal[action.obj]
    if action.dst in GOAL_BINS:
        return action.dst == goal
    return action.dst == COMMON and goal_row_player(goal) != state.current


def justification(state: State, action: Action) -> str:
    """Why the oracle would not play ``action`` now (``""``: justified): :func:`~.verifiers.rational_reason`,
    except that a pass is always allowed and, in ``none`` mode, a guess must be lucky."""
    if isinstance(action, Pass):
        return ""
    reason = rational_reason(state, action)
    if not reason and state.comm_mode == "none" and isinstance(action, Move) and not _lucky(state, action):
        return "an unlucky guess"
    return reason


def justified_actions(state: State) -> list[Action]:
    """Every action the oracle may play now (by :func:`justification`, from the rules' own functions), in
    action-space order."""
    out: list[Action] = []
    for a in all_actions(state.puzzle.n):
        if isinstance(a, Pass):
            continue
        if isinstance(a, Move) and state.location[a.obj] != a.src:
            continue  # (cheap pre-filter: the bulk of the space)
        if isinstance(a, Answer) and state.last_ask() != a.obj:
            continue
        if not justification(state, a):
            out.append(a)
    out.append(Pass())
    return out


# -- the reference: breadth-first search on the rules' State ------------------------------------------


def _full_key(state: State) -> tuple[object, ...]:
    """Everything of a state that the rules can look at in the future (not the turn: BFS depth)."""
    return (
        tuple(state.location),
        state.current,
        frozenset(state.received[0]),
        frozenset(state.received[1]),
        frozenset(state.shared[0]),
        frozenset(state.shared[1]),
        frozenset(state.told[0].items()),
        frozenset(state.told[1].items()),
        frozenset(state.placed.items()),
        frozenset(state.rejected),
        state.last_ask(),
    )


def exhaustive_plan_length(state: State, max_depth: int, *, engine: str = "rules") -> int | None:
    """The shortest justified plan's length by plain breadth-first search over ALL justified actions, with no
    heuristic and no pruning beyond exact duplicate detection on the full state, up to ``max_depth`` turns and
    the steps left; ``None`` if there is none. The reference the tests hold :func:`oracle_plan` to.

    ``engine="rules"`` searches :class:`~.rules.State` itself (``State.play``, :func:`justified_actions` from
    :func:`~.verifiers.rational_reason`): independent of the oracle, and slow (seconds for 5 objects).
    ``engine="compact"`` searches the oracle's compact state with its successor function unpruned: a hundred
    times faster; the tests check that its successors are exactly the rules' (same actions, same states)."""
    if engine not in ("rules", "compact"):
        raise ValueError(f"engine must be 'rules' or 'compact', got {engine!r}")
    if state.success:
        return 0
    limit = min(max_depth, state.max_steps - state.turn)
    if engine == "compact":
        return _compact_bfs(_Problem(state), limit)
    frontier = [state]
    seen = {_full_key(state)}
    for depth in range(1, limit + 1):
        nxt: list[State] = []
        for s in frontier:
            for a in justified_actions(s):
                t = s.copy()
                t.play(a)
                if t.success:
                    return depth
                key = _full_key(t)
                if key not in seen:
                    seen.add(key)
                    nxt.append(t)
        frontier = nxt
    return None


def _compact_bfs(prob: _Problem, limit: int, start: _Key | None = None) -> int | None:
    """Breadth-first search on the compact state from ``start`` (default: the problem's), unpruned."""
    first = prob.start if start is None else start
    if first[1] == prob.all:
        return 0
    frontier = [first]
    seen = {first}
    for depth in range(1, limit + 1):
        nxt: list[_Key] = []
        for s in frontier:
            for _, t in prob.successors(s, prune=False):
                if t[1] == prob.all:
                    return depth
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return None


# -- the fast oracle ----------------------------------------------------------------------------------

_MOVE, _SHARE, _ASK, _ANSWER, _PASS = range(5)
_Key = tuple[int, int, int, int, int, int, int, int]
_Act = tuple[int, int]  # (kind, object or constraint)
_INFEASIBLE = 1 << 20  # a heuristic value beyond any step limit


def _turns(t_cur: int, t_other: int) -> int:
    """The fewest turns in which the player to act gets ``t_cur`` turns and the other ``t_other``."""
    return max(2 * t_cur - 1, 2 * t_other, 0)


def _bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class _Problem:
    """One search: the puzzle's constants, the start state's facts, the knowledge cache and the moves."""

    def __init__(self, state: State) -> None:
        puzzle = state.puzzle
        n = self.n = puzzle.n
        self.mode = state.comm_mode
        self.guess = self.mode == "none"
        self.shares = self.mode in ("provide_and_seek", "provide_only")
        self.seek = self.mode == "seek_only"
        self.asks = self.mode in ("provide_and_seek", "seek_only")
        self.goal = puzzle.goal
        self.all = (1 << n) - 1
        self.row = [goal_row_player(g) for g in puzzle.goal]  # who places each object
        self.owner = [0 if s == BOTTOM_START else 1 for s in puzzle.start]
        self.row_mask = [sum(1 << o for o in range(n) if self.row[o] == p) for p in (0, 1)]
        self.own_mask = [sum(1 << o for o in range(n) if self.owner[o] == p) for p in (0, 1)]
        self.cross = sum(1 << o for o in range(n) if self.owner[o] != self.row[o])  # need a hand-off
        self.cons_objs = [sum(1 << o for o in c.objects()) for c in puzzle.constraints]
        self.cons_edge = [(c.a, c.b) for c in puzzle.constraints]
        self.ground = sum(1 << k for k, c in enumerate(puzzle.constraints) if c.is_grounding)
        self.ground_obj = [0] * len(puzzle.constraints)
        for k, c in enumerate(puzzle.constraints):
            if c.is_grounding:
                self.ground_obj[k] = 1 << c.a
        self.given = [sum(1 << k for k in puzzle.given(p)) for p in (0, 1)]

        # the start state's facts (each checked true: the compact state assumes it)
        common = done = 0
        for o, loc in enumerate(state.location):
            if loc == puzzle.goal[o]:
                done |= 1 << o
            elif loc == COMMON:
                common |= 1 << o
            elif loc != puzzle.start[o]:
                raise ValueError(f"object {o} is in bin {loc}: not its start, goal or the common bin")
        facts = list(state.placed.items()) + list(state.told[0].items()) + list(state.told[1].items())
        if any(puzzle.goal[o] != b for o, b in facts) or any(puzzle.goal[o] == b for o, b in state.rejected):
            raise ValueError("the state holds a fact that is false of the puzzle's goal")
        self.placed0 = sum(1 << o for o in state.placed)
        self.shared0 = [sum(1 << k for k in state.shared[p]) for p in (0, 1)]
        self.recv0 = [sum(1 << k for k in state.received[p]) for p in (0, 1)]
        told = [sum(1 << o for o in state.told[p]) for p in (0, 1)]
        # offsets (XOR from the true goal) that public rejections rule out, per object
        self.excl = [0] * n
        for o, b in state.rejected:
            self.excl[o] |= 1 << (puzzle.goal[o] ^ b)
        self.rejections = any(self.excl)
        pending = state.last_ask()
        self.start: _Key = (common, done, 0, 0, told[0], told[1], state.current, -1 if pending is None else pending)
        self._comps: dict[int, list[tuple[int, bool, bool]]] = {}
        self._know: dict[tuple[int, int], tuple[int, int]] = {}
        self._fix: dict[tuple[int, ...], tuple[int, int]] = {}

    def key_of(self, state: State) -> _Key:
        """The compact state of ``state``, a game of this problem's puzzle played on from its start state."""
        common = sum(1 << o for o, loc in enumerate(state.location) if loc == COMMON)
        done = sum(1 << o for o, (loc, g) in enumerate(zip(state.location, self.goal, strict=True)) if loc == g)
        new = [sum(1 << k for k in state.shared[p]) & ~self.shared0[p] for p in (0, 1)]
        told = [sum(1 << o for o in state.told[p]) for p in (0, 1)]
        pending = state.last_ask()
        return (common, done, new[0], new[1], told[0], told[1], state.current, -1 if pending is None else pending)

    # -- knowledge ------------------------------------------------------------------------------------
    def components(self, explicit: int) -> list[tuple[int, bool, bool]]:
        """The components of the relations in ``explicit`` (a constraint bitmask): (objects, goal exact by the
        rejections alone, row exact by the rejections alone)."""
        rel = explicit & ~self.ground
        comps = self._comps.get(rel)
        if comps is None:
            parent = list(range(self.n))

            def find(x: int) -> int:
                while parent[x] != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            for k in _bits(rel):
                a, b = self.cons_edge[k]
                parent[find(a)] = find(b)  # type: ignore[arg-type]
            members: dict[int, int] = {}
            for o in range(self.n):
                r = find(o)
                members[r] = members.get(r, 0) | 1 << o
            comps = []
            for m in members.values():
                offsets = 0b1111
                for o in _bits(m):
                    offsets &= ~self.excl[o]
                comps.append((m, offsets == 1, offsets & 0b1100 == 0))
            self._comps[rel] = comps
        return comps

    def knowledge(self, explicit: int, facts: int) -> tuple[int, int]:
        """(objects whose goal is known exactly, objects whose goal row is known) for a player holding the
        constraints ``explicit`` and the facts (placements, answers) about the objects ``facts``."""
        key = (explicit, facts)
        got = self._know.get(key)
        if got is None:
            pins = facts
            for k in _bits(explicit & self.ground):
                pins |= self.ground_obj[k]
            exact = row = 0
            for m, by_offsets, row_by_offsets in self.components(explicit):
                if m & pins or by_offsets:
                    exact |= m
                elif row_by_offsets:
                    row |= m
            got = self._know[key] = (exact, exact | row)
        return got

    def explicit(self, s: _Key, p: int) -> int:
        return self.given[p] | self.recv0[p] | s[3 - p]  # new shares of the partner: s[2] = new0, s[3] = new1

    def player_knowledge(self, s: _Key, p: int) -> tuple[int, int]:
        return self.knowledge(self.explicit(s, p), self.placed0 | s[1] | s[4 + p])

    # -- the heuristic --------------------------------------------------------------------------------
    def needs(self, s: _Key, p: int) -> int:
        """The moves player ``p`` must still make."""
        common, done = s[0], s[1]
        start = self.all & ~common & ~done
        mine = start & self.own_mask[p]
        return (mine | ((start | common) & self.row_mask[p])).bit_count()

    def fixpoint(self, s: _Key, extra0: int, extra1: int) -> tuple[int, int]:
        """(done, common) once every move is made as soon as its mover knows enough, each player learning only
        from placements and from the facts ``extra0``/``extra1`` (objects whose component it is given as
        pinned; ``self.all``: omniscient) — a relaxation: what no message can ever be needed for."""
        key = (s[0], s[1], s[2], s[3], s[4], s[5], extra0, extra1)
        got = self._fix.get(key)
        if got is not None:
            return got
        common, done = s[0], s[1]
        explicit0, explicit1 = self.explicit(s, 0), self.explicit(s, 1)
        facts0, facts1 = self.placed0 | s[4] | extra0, self.placed0 | s[5] | extra1
        cross, own0, own1 = self.cross, self.own_mask[0], self.own_mask[1]
        while True:
            exact0, row0 = self.knowledge(explicit0, facts0 | done)
            exact1, row1 = self.knowledge(explicit1, facts1 | done)
            start = self.all & ~common & ~done
            new_common = common | (start & cross & ((own0 & row0) | (own1 & row1)))
            new_done = done | (
                (new_common | (start & ~cross)) & ((self.row_mask[0] & exact0) | (self.row_mask[1] & exact1))
            )
            new_common &= ~new_done
            if new_done == done and new_common == common:
                break
            done, common = new_done, new_common
        if len(self._fix) > 1 << 20:
            self._fix.clear()  # (a bound on memory; a hit rate of about half)
        got = self._fix[key] = (done, common)
        return got

    def blocked(self, s: _Key, done: int, common: int) -> list[tuple[int, int]]:
        """The (player, component of its relations) that block the objects left by a fixpoint: each object's
        next move is blocked on its mover's knowledge."""
        out: set[tuple[int, int]] = set()
        start = self.all & ~common & ~done
        for o in _bits(self.all & ~done):
            p = self.owner[o] if start >> o & 1 and self.cross >> o & 1 else self.row[o]
            out.add((p, self.component(s, p, o)))
        return sorted(out)

    def component(self, s: _Key, p: int, o: int) -> int:
        for m, _, _ in self.components(self.explicit(s, p)):
            if m >> o & 1:
                return m
        raise AssertionError("every object is in a component")

    def pin_candidates(self, s: _Key, done: int, common: int, extra: tuple[int, int]) -> list[tuple[int, int]]:
        """Every (player, component) whose pinning could let a fixpoint go further: for each object left, each
        player with a move of it still to make and its goal not known exactly. (A component holding none adds
        nothing a fixpoint has not already got, with or without other pins: knowledge only grows.)"""
        out: set[tuple[int, int]] = set()
        start = self.all & ~common & ~done
        exact = [self.knowledge(self.explicit(s, p), self.placed0 | s[4 + p] | extra[p] | done)[0] for p in (0, 1)]
        for o in _bits(self.all & ~done):
            movers = {self.row[o]}
            if start >> o & 1 and self.cross >> o & 1:
                movers.add(self.owner[o])
            for p in movers:
                if not exact[p] >> o & 1:
                    out.add((p, self.component(s, p, o)))
        return sorted(out)

    def comm_needs(self, s: _Key, y: int) -> tuple[int, int, int]:
        """(turns on which ``y``'s partner ``x`` must share or answer, asks ``y`` must make for answers, the
        components of ``y``'s relations those messages must pin): lower bounds, from what ``y`` can never learn
        without ``x`` speaking even if ``x`` knew everything (see the module docstring)."""
        x = 1 - y
        done, common = self.fixpoint(s, self.all, 0) if x == 0 else self.fixpoint(s, 0, self.all)
        comps = [m for p, m in self.blocked(s, done, common) if p == y]  # (x blocks nothing: omniscient)
        asks = 0
        if comps and not self.seek:
            # a component no share of x can touch is learned only by an answer, which needs an ask
            explicit = self.explicit(s, y)
            shareable = self.given[x] & ~(self.shared0[x] | s[2 + x]) & ~(self.recv0[x] | s[2 + y]) & ~explicit
            touch = 0
            for k in _bits(shareable):
                touch |= self.cons_objs[k]
            asks = sum(1 for m in comps if not m & touch)
            if asks and not self.asks:
                asks = _INFEASIBLE
        pins = 0
        for m in comps:
            pins |= m
        count = len(comps)
        if self.rejections:
            count = (count + 1) // 2  # one share can join two components whose rejections then pin both
        return count, asks, pins

    def h(self, s: _Key) -> int:
        cur, other = s[6], 1 - s[6]
        m_cur, m_other = self.needs(s, cur), self.needs(s, other)
        if self.guess:
            return _turns(m_cur, m_other)
        c_cur, asks_other, pins_other = self.comm_needs(s, other)  # the current player must speak c_cur times
        c_other, asks_cur, pins_cur = self.comm_needs(s, cur)
        if asks_cur >= _INFEASIBLE or asks_other >= _INFEASIBLE:
            return _INFEASIBLE
        pending = 1 if s[7] >= 0 else 0  # an ask made by the other player on the turn just before
        m_cur += asks_cur
        m_other += max(0, asks_other - pending)

        def bound(speak_cur: int, speak_other: int) -> int:
            t_cur, t_other = m_cur + speak_cur, m_other + speak_other
            if self.seek:  # every message follows an ask on the turn before; one may be pending
                t_cur += speak_other
                t_other += max(0, speak_cur - pending)
            return _turns(t_cur, t_other)

        if self.rejections:
            return bound(c_cur, c_other)
        # Each side's count assumed its partner omniscient; jointly, pinning just those components may still
        # leave objects blocked (a circle: each waits for a placement the other cannot make yet). Then more
        # messages are needed: find which (extra messages by cur, by other), up to 2 in all, can finish.
        pins = (pins_cur, pins_other) if cur == 0 else (pins_other, pins_cur)
        done, common = self.fixpoint(s, pins[0], pins[1])
        if done == self.all:
            return bound(c_cur, c_other)
        cands = self.pin_candidates(s, done, common, pins)
        feasible: set[tuple[int, int]] = set()
        for i, (p, m) in enumerate(cands):
            extra = [pins[0], pins[1]]
            extra[p] |= m
            if self.fixpoint(s, extra[0], extra[1])[0] == self.all:
                feasible.add((1, 0) if p == other else (0, 1))  # a pin of p's component: a message of 1 − p
            for q, m2 in cands[i + 1 :]:
                extra2 = list(extra)
                extra2[q] |= m2
                if self.fixpoint(s, extra2[0], extra2[1])[0] == self.all:
                    feasible.add(((p == other) + (q == other), (p == cur) + (q == cur)))
        best = _INFEASIBLE
        for a in range(4):
            for b in range(4 - a):
                if a + b == 3 or (a, b) in feasible or any(f[0] <= a and f[1] <= b for f in feasible):
                    best = min(best, bound(c_cur + a, c_other + b))
        return best

    # -- the moves ------------------------------------------------------------------------------------
    def successors(self, s: _Key, prune: bool = True) -> Iterator[tuple[_Act, _Key]]:
        common, done, new0, new1, told0, told1, p, pending = s
        q = 1 - p
        exact_p, row_p = self.player_knowledge(s, p)
        exact_q, _ = self.player_knowledge(s, q)
        start = self.all & ~common & ~done
        nxt_p = q
        # moves: placements from the common bin or own start, hand-offs from own start
        place = ((common & self.row_mask[p]) | (start & self.own_mask[p] & self.row_mask[p])) & ~done
        handoff = start & self.own_mask[p] & ~self.row_mask[p]
        if not self.guess:
            place &= exact_p
            handoff &= row_p
        for o in _bits(place):
            b = 1 << o
            yield (_MOVE, o), (common & ~b, done | b, new0, new1, told0, told1, nxt_p, -1)
        for o in _bits(handoff):
            yield (_MOVE, o), (common | 1 << o, done, new0, new1, told0, told1, nxt_p, -1)
        placed = self.placed0 | done
        if self.shares or (self.seek and pending >= 0):
            new = (new0, new1)
            shared_p = self.shared0[p] | new[p]
            recv_p = self.recv0[p] | new[q]
            explicit_q = self.explicit(s, q)
            for k in _bits(self.given[p] & ~shared_p & ~recv_p & ~self.ground):
                objs = self.cons_objs[k]
                if objs & ~placed == 0:
                    continue  # about placed objects only: not rational
                if self.seek and not objs >> pending & 1:
                    continue
                if prune and (explicit_q >> k & 1 or objs & ~exact_q == 0):
                    continue  # changes nothing the partner knows, now or later
                b = 1 << k
                yield (
                    (_SHARE, k),
                    (
                        (common, done, new0 | b, new1, told0, told1, nxt_p, -1)
                        if p == 0
                        else (common, done, new0, new1 | b, told0, told1, nxt_p, -1)
                    ),
                )
        if self.asks:
            for o in _bits(self.all & ~done & ~exact_p):
                if prune and not exact_q >> o & 1:
                    if not self.seek or not self._useful_share_about(s, q, o, exact_p, placed):
                        continue  # the partner can do nothing with it
                yield (_ASK, o), (common, done, new0, new1, told0, told1, nxt_p, o)
            if pending >= 0 and exact_p >> pending & 1:
                b = 1 << pending
                yield (
                    (_ANSWER, pending),
                    (
                        (common, done, new0, new1, told0 | b, told1, nxt_p, -1)
                        if q == 0
                        else (common, done, new0, new1, told0, told1 | b, nxt_p, -1)
                    ),
                )
        yield (_PASS, 0), (common, done, new0, new1, told0, told1, nxt_p, -1)

    def _useful_share_about(self, s: _Key, q: int, o: int, exact_p: int, placed: int) -> bool:
        """Has ``q`` (asked about ``o`` by ``p``) a share about ``o`` that the pruning would keep?"""
        p = 1 - q
        shared_q = self.shared0[q] | s[2 + q]
        recv_q = self.recv0[q] | s[2 + p]
        explicit_p = self.explicit(s, p)
        for k in _bits(self.given[q] & ~shared_q & ~recv_q & ~self.ground & ~explicit_p):
            objs = self.cons_objs[k]
            if objs >> o & 1 and objs & ~placed and objs & ~exact_p:
                return True
        return False

    def action(self, s: _Key, act: _Act) -> Action:
        kind, x = act
        p = s[6]
        if kind == _MOVE:
            if s[0] >> x & 1:
                return Move(x, COMMON, self.goal[x])
            return Move(x, start_bin(p), self.goal[x] if self.row[x] == p else COMMON)
        if kind == _SHARE:
            return Share(x)
        if kind == _ASK:
            return Ask(x)
        if kind == _ANSWER:
            return Answer(x, self.goal[x])
        return Pass()


def solve(state: State, *, time_limit: float | None = None, max_expansions: int | None = None) -> OraclePlan:
    """:func:`oracle_plan` with its cost: the plan (``None``: no plan within the steps left), the nodes
    expanded and the seconds spent. Raises :class:`PlannerBudgetExceeded` when a budget runs out."""
    t0 = time.perf_counter()
    if state.success:
        return OraclePlan((), 0, time.perf_counter() - t0)
    left = state.max_steps - state.turn
    if left <= 0:
        return OraclePlan(None, 0, time.perf_counter() - t0)
    prob = _Problem(state)
    start = prob.start
    best: dict[_Key, int] = {start: 0}
    parent: dict[_Key, tuple[_Key, _Act]] = {}
    h0 = prob.h(start)
    heap: list[tuple[int, int, int, _Key]] = [(h0, 0, 0, start)]
    tie = 0
    expansions = 0
    full = prob.all
    while heap:
        f, neg_g, _, s = heapq.heappop(heap)
        g = -neg_g
        if best.get(s, -1) != g:
            continue  # a stale entry: reached since by a shorter path
        if s[1] == full:
            plan: list[Action] = []
            while s in parent:
                prev, act = parent[s]
                plan.append(prob.action(prev, act))
                s = prev
            plan.reverse()
            return OraclePlan(tuple(plan), expansions, time.perf_counter() - t0)
        expansions += 1
        if max_expansions is not None and expansions > max_expansions:
            raise PlannerBudgetExceeded(f"no proof within {max_expansions} expansions")
        if time_limit is not None and expansions & 63 == 1 and time.perf_counter() - t0 > time_limit:
            raise PlannerBudgetExceeded(f"no proof within {time_limit} s ({expansions} expansions)")
        g2 = g + 1
        for act, t in prob.successors(s):
            if best.get(t, left + 1) <= g2:
                continue
            h = prob.h(t)
            f2 = g2 + h
            if f2 > left:
                continue
            best[t] = g2
            parent[t] = (s, act)
            tie += 1
            heapq.heappush(heap, (max(f2, f), -g2, tie, t))
    return OraclePlan(None, expansions, time.perf_counter() - t0)


def oracle_plan(
    state: State,
    *,
    time_limit: float | None = None,
    max_expansions: int | None = None,
) -> list[Action] | None:
    """The shortest justified joint plan from ``state`` to success (see the module docstring), or ``None`` if
    no plan fits in the steps left. ``time_limit`` (seconds) and ``max_expansions`` bound the search: when
    one runs out before the answer is proven, :class:`PlannerBudgetExceeded` is raised (never a silent
    ``None``)."""
    result = solve(state, time_limit=time_limit, max_expansions=max_expansions)
    return None if result.actions is None else list(result.actions)


def plan_length(state: State, **kw: float | int | None) -> int | None:
    """The length of :func:`oracle_plan`'s plan (``None``: no plan within the steps left); ``kw`` as there."""
    return solve(state, **kw).length  # type: ignore[arg-type]


def mean_plan_length(puzzles: Iterable[Puzzle], comm_mode: str, max_steps: int | None = None) -> float:
    """The mean optimal plan length of fresh games of ``puzzles`` in ``comm_mode``, over the puzzles that
    have a plan within the step limit (the paper's 4-object figures: 7.5, 7.5, 8.8, 5.8)."""
    lengths = [n for n in (plan_length(new_game(p, comm_mode, max_steps)) for p in puzzles) if n is not None]
    return mean(lengths) if lengths else float("nan")


def replay(state: State, plan: Iterable[Action]) -> State:
    """A copy of ``state`` after ``plan``, each action checked justified and accepted (AssertionError)."""
    s = state.copy()
    for a in plan:
        reason = justification(s, a)
        assert not reason, f"turn {s.turn}: {a.text()} is not justified ({reason})"
        event = s.play(a)
        assert event.outcome == ACCEPTED, f"turn {event.turn}: {a.text()} was {event.outcome} ({event.reason})"
    return s
