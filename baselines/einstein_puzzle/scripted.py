"""Scripted players of the Einstein puzzle, and the verifier combinator.

Each plays one seat (``player_0`` or ``player_1``) through the common policy
interface, from its own observation only — except the :class:`Oracle` and
:class:`Verified`, which are *privileged* (``act_privileged``): the oracle plans
with the hidden goal, and the verifier combinator screens candidates with the
environment's feedback, as the paper's verifiers do.

* :class:`RandomPlayer` — a uniformly random legal action.
* :class:`Mover` — no communication: places what it can infer, hands across
  what belongs to the partner, otherwise guesses (public rejections rule bins
  out), else passes.
* :class:`Planner` — the decentralised planner: plays its seat from its own
  knowledge only, by the priorities a shortest joint plan follows (answer a
  pending ask; place what it can infer; hand across what belongs to the
  partner; ask about its own unknown objects; share what may help; guess only
  in ``none`` mode); usable with any partner (itself, random, an LLM).
* :class:`Oracle` — the exact shortest joint plan (:mod:`eq_env.einstein_puzzle.planner`)
  from the current state, replanned when the partner leaves it.
* :class:`Verified` — any policy, screened: draws ``k`` candidates and plays
  the first the chosen verifier accepts, else the least bad; its info counts
  interventions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from eq_env.core.policy import BasePolicy, make_policy
from eq_env.einstein_puzzle.observation import Seen
from eq_env.einstein_puzzle.rules import (
    COMMON,
    Action,
    Answer,
    Ask,
    Move,
    Pass,
    Share,
    reachable,
    row_bins,
    start_bin,
)
from eq_env.einstein_puzzle.spaces import action_index, actions
from eq_env.einstein_puzzle.verifiers import VERIFIERS, least_bad, verdicts

__all__ = ["Mover", "Oracle", "Planner", "RandomPlayer", "Verified"]


class _Seat(BasePolicy):
    """A policy of one seat; the registry makes one subclass per role."""

    role: ClassVar[str] = "player_0"

    def _index(self, seen: Seen, action: Action) -> int:
        return action_index(action, seen.n)


class RandomPlayer(_Seat):
    """A uniformly random legal action."""

    def act(self, observation: Mapping[str, Any]) -> int:
        return int(self.rng.choice(np.flatnonzero(observation["action_mask"])))


def _row_mask(player: int) -> int:
    return sum(1 << b for b in row_bins(player))


def _moves(seen: Seen, guess: bool) -> list[Move]:
    """Rational moves of the seat, best first: placements of objects from the common bin, then from the
    start bin, then hand-offs; with ``guess``, then guesses (the first bin still possible)."""
    p = seen.player
    reach, own, partner = reachable(p), _row_mask(p), _row_mask(1 - p)
    mine = [o for o in range(seen.n) if seen.location[o] in reach and not seen.placed(o)]
    mine.sort(key=lambda o: (seen.location[o] != COMMON, o))  # what the partner handed over first
    place, hand, guesses = [], [], []
    for o in mine:
        where, possible = seen.location[o], seen.possible[o]
        goal = seen.goal(o)
        if goal is not None and own >> goal & 1:
            place.append(Move(o, where, goal))
        elif possible and not possible & own and where == start_bin(p):
            hand.append(Move(o, where, COMMON))
        elif guess and possible & own:
            target = next(b for b in row_bins(p) if possible >> b & 1)
            guesses.append(Move(o, where, target))
        elif guess and possible & partner and where == start_bin(p):
            guesses.append(Move(o, where, COMMON))
    return place + hand + guesses


def _legal(seen: Seen, action: Action) -> bool:
    return bool(seen.mask[action_index(action, seen.n)])


def _ask_candidates(seen: Seen) -> list[int]:
    """Objects worth asking about, best first: those in the seat's reach it cannot infer and that may belong
    to its row; then the other unplaced objects tied to them by the relations it knows (the partner may know
    one of those, and the relation gives the rest). Objects it asked about in the turns the observation
    still shows are left out, so an ask the partner could not answer is not repeated at once."""
    p, n = seen.player, seen.n
    reach, own = reachable(p), _row_mask(p)
    root = list(range(n))

    def find(x: int) -> int:
        while root[x] != x:
            x = root[x]
        return x

    for c in seen.constraints.values():
        if c.b is not None:
            root[find(c.a)] = find(c.b)
    asked = {obj for mine, kind, _, obj, _ in seen.recent if mine and kind == "ask"}
    need = [
        o
        for o in range(n)
        if seen.location[o] in reach and not seen.placed(o) and seen.goal(o) is None and seen.possible[o] & own
    ]
    groups = {find(o) for o in need}
    linked = [
        o for o in range(n) if o not in need and find(o) in groups and not seen.placed(o) and seen.goal(o) is None
    ]
    return [o for o in need + linked if o not in asked]


class Mover(_Seat):
    """No communication: place what it can infer, hand across what is the partner's, else guess, else pass."""

    def act(self, observation: Mapping[str, Any]) -> int:
        seen = Seen.from_observation(observation)
        for move in _moves(seen, guess=True):
            if _legal(seen, move):
                return self._index(seen, move)
        return self._index(seen, Pass())


class Planner(_Seat):
    """The decentralised planner: plays one seat from its own knowledge only, by a shortest plan's priorities.

    Priorities: answer the partner's pending ask (in seek-only mode, if the goal is unknown, share a
    constraint about the object asked about); place an object it can infer into its row; hand across an
    object that belongs to the partner's row; ask about an object in its reach it cannot place, or one tied
    to it by a relation it knows (not one it asked about in the last turns it sees); share a
    constraint that may help (its own, not the grounding, not shared by the partner, not about placed
    objects only, those about objects in the partner's reach first); guess (``none`` mode, or
    ``guess=true`` in any mode when nothing else is left); pass.
    """

    def __init__(self, guess: bool = False) -> None:
        super().__init__()
        if not isinstance(guess, (bool, np.bool_)):
            raise ValueError(f"guess must be true or false, got {guess!r}")
        self.guess = bool(guess)

    def act(self, observation: Mapping[str, Any]) -> int:
        seen = Seen.from_observation(observation)
        return self._index(seen, self.choose(seen))

    def choose(self, seen: Seen) -> Action:
        p, n, mode = seen.player, seen.n, seen.comm_mode
        if seen.asked is not None:
            goal = seen.goal(seen.asked)
            if goal is not None and _legal(seen, Answer(seen.asked, goal)):
                return Answer(seen.asked, goal)
            if mode == "seek_only":
                about = [k for k in sorted(seen.mine - seen.shared) if seen.asked in seen.constraints[k].objects()]
                for k in about:
                    if _legal(seen, Share(k)):
                        return Share(k)
        for move in _moves(seen, guess=False):
            if _legal(seen, move):
                return move
        if mode in ("provide_and_seek", "seek_only"):
            for o in _ask_candidates(seen):
                if _legal(seen, Ask(o)):
                    return Ask(o)
        if mode in ("provide_and_seek", "provide_only"):
            partner_reach = reachable(1 - p)

            def helps(k: int) -> tuple[int, int]:
                objs = seen.constraints[k].objects()
                return (not any(seen.location[o] in partner_reach and not seen.placed(o) for o in objs), k)

            useful = [
                k
                for k in seen.mine - seen.shared - seen.received
                if not seen.constraints[k].is_grounding
                and not all(seen.placed(o) for o in seen.constraints[k].objects())
            ]
            for k in sorted(useful, key=helps):
                if _legal(seen, Share(k)):
                    return Share(k)
        if mode == "none" or self.guess:
            for move in _moves(seen, guess=True):
                if _legal(seen, move):
                    return move
        if mode in ("provide_and_seek", "seek_only"):  # a pass only when nothing else is rational (the paper)
            for o in range(n):
                if not seen.placed(o) and seen.goal(o) is None and _legal(seen, Ask(o)):
                    return Ask(o)
        return Pass()


class Oracle(_Seat):
    """The exact shortest joint plan from the true state (privileged: it reads the hidden goal).

    Plans once and follows the plan while the game follows it; replans when the partner leaves it. Falls back
    to the decentralised planner for the turn when no plan fits the remaining steps or the search takes longer
    than ``time_limit`` seconds (a fresh game of up to 12 objects plans in milliseconds; a state a random
    partner left can take far longer at 12 objects and more)."""

    def __init__(self, time_limit: float = 2.0) -> None:
        super().__init__()
        if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not 0 < time_limit <= 3600:
            raise ValueError(f"time_limit must be a number of seconds in (0, 3600], got {time_limit!r}")
        self.time_limit = float(time_limit)
        self._plan: list[Action] = []
        self._from: int = -1  # the history length the plan starts at
        self._game: Any = None
        self._fallback = Planner()

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._plan, self._from, self._game = [], -1, None

    def act(self, observation: Mapping[str, Any]) -> int:
        raise TypeError("the oracle reads the hidden state: the runner calls act_privileged(observation, env)")

    def act_privileged(self, observation: Mapping[str, Any], env: Any) -> tuple[int, dict[str, Any] | None]:
        from eq_env.einstein_puzzle.planner import PlannerBudgetExceeded, oracle_plan

        game = env.unwrapped.game
        done = len(game.history)
        on_plan = (
            self._game is game
            and 0 <= done - self._from < len(self._plan)
            and [e.action for e in game.history[self._from :]] == self._plan[: done - self._from]
        )
        if not on_plan:
            self._game, self._from = game, done
            try:
                self._plan = oracle_plan(game, time_limit=self.time_limit) or []
            except PlannerBudgetExceeded:  # (after a partner's detour a large game can take long to prove)
                self._plan = []
        step = done - self._from
        if step < len(self._plan):
            return action_index(self._plan[step], game.puzzle.n), None
        return self._fallback.act(observation), None


class Verified(_Seat):
    """Any policy screened by a verifier: the first of k candidates it accepts (privileged: game feedback).

    ``base`` is drawn ``k`` times; the first candidate that passes the verifiers up to the chosen one
    (affordance, then communication, then reasoning) is played, else the least bad (the one passing the most
    of them, in that order). Info per decision:
    ``verifier_interventions`` (1 when the first candidate was rejected), ``verifier_candidates``
    (candidates drawn until one passed, or all ``k``)."""

    def __init__(self, base: str = "random", verifier: str = "reasoning", k: int = 4) -> None:
        super().__init__()
        if verifier not in VERIFIERS:
            raise ValueError(f"verifier must be one of {sorted(VERIFIERS)}, got {verifier!r}")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 64:
            raise ValueError(f"k must be an integer in [1, 64], got {k!r}")
        self.base = make_policy(base, self.role, "einstein-puzzle")
        self.verifier, self.k = verifier, k

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.base.reset(seed)

    def act(self, observation: Mapping[str, Any]) -> int:
        raise TypeError("a verifier reads the game's feedback: the runner calls act_privileged(observation, env)")

    def act_privileged(self, observation: Mapping[str, Any], env: Any) -> tuple[int, dict[str, Any]]:
        game = env.unwrapped.game
        table = actions(game.puzzle.n)
        order = list(VERIFIERS)
        chosen = order.index(self.verifier)
        tried: list[int] = []
        screened: list[tuple[int, ...]] = []
        for _ in range(self.k):
            privileged = getattr(self.base, "act_privileged", None)
            index = int(privileged(observation, env)[0] if callable(privileged) else self.base.act(observation))
            tried.append(index)
            results = verdicts(game, table[index])
            if all(results[: chosen + 1]):
                info = {"verifier_interventions": int(len(tried) > 1), "verifier_candidates": len(tried)}
                return index, info
            screened.append(results)
        info = {"verifier_interventions": 1, "verifier_candidates": len(tried)}
        return tried[least_bad(screened)], info
