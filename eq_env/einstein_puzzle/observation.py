"""A player's numeric observation read back into named parts, for scripted policies.

``Seen.from_observation(obs)`` decodes the dict a policy is given (its
``"observation"`` vector and ``"action_mask"``; see :mod:`.spaces` for the
layout) into what the player knows: its side, the comm mode, the board, the
goal bins still possible for each object, the constraints it knows (with who
holds them and what was shared), the object the partner just asked about.
Nothing here is hidden information: it is exactly the observation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from eq_env.einstein_puzzle.rules import COMM_MODES, GOAL_BINS, N_BINS, Constraint
from eq_env.einstein_puzzle.spaces import CONSTRAINT_FLAGS, CONSTRAINT_SIZE, HISTORY, KINDS, layout, n_from_actions

KIND_NAMES = ("move", "share", "ask", "answer", "pass")  # spaces.KINDS, in order

__all__ = ["Seen"]


@dataclass(frozen=True)
class Seen:
    """One player's observation, decoded.

    Attributes:
        player: 0 (bottom) or 1 (top).
        comm_mode: the mode of the game.
        location: each object's bin.
        possible: each object's possible goal bins (4-bit masks).
        constraints: constraint index → the constraint, for those the player knows.
        mine, shared, received: the player's own constraints, those it has shared, those shared with it.
        asked: the object the partner asked about on the turn just before, if any.
        mask: the legal actions (all zero when it is not the player's turn).
        recent: the last turns the observation shows, newest first, each as (mine, kind, failed, object, bin):
            ``kind`` one of "move", "share", "ask", "answer", "pass"; ``object`` the object acted on (for a
            share, the constraint's first object) and ``bin`` the destination or answer, or None.
    """

    player: int
    comm_mode: str
    location: tuple[int, ...]
    possible: tuple[int, ...]
    constraints: dict[int, Constraint]
    mine: frozenset[int]
    shared: frozenset[int]
    received: frozenset[int]
    asked: int | None
    mask: np.ndarray
    recent: tuple[tuple[bool, str, bool, int | None, int | None], ...] = ()

    @property
    def n(self) -> int:
        return len(self.location)

    def goal(self, obj: int) -> int | None:
        """``obj``'s goal bin if the player can infer it."""
        m = self.possible[obj]
        return m.bit_length() - 1 if m and not m & (m - 1) else None

    def placed(self, obj: int) -> bool:
        return self.location[obj] in GOAL_BINS

    @classmethod
    def from_observation(cls, observation: Mapping[str, Any]) -> Seen:
        vec = np.asarray(observation["observation"])
        mask = np.asarray(observation["action_mask"])
        n = n_from_actions(len(mask))
        L = layout(n)
        if vec.shape != (L.size,):
            raise ValueError(f"an observation of a {n}-object game has {L.size} numbers, got shape {vec.shape}")
        board = vec[L.board : L.board + N_BINS * n].reshape(n, N_BINS)
        inferred = vec[L.inferred : L.inferred + 4 * n].reshape(n, 4)
        size = CONSTRAINT_SIZE(n)
        constraints: dict[int, Constraint] = {}
        mine: set[int] = set()
        shared: set[int] = set()
        received: set[int] = set()
        for k in range(n):
            block = vec[L.constraints + k * size : L.constraints + (k + 1) * size]
            if not block[0]:
                continue
            body = block[CONSTRAINT_FLAGS:]
            a = int(np.argmax(body[:n]))
            b = int(np.argmax(body[n : 2 * n])) if body[n : 2 * n].any() else None
            constraints[k] = Constraint(a, b, int(np.argmax(body[2 * n :])))
            for flag, into in ((1, mine), (2, shared), (3, received)):
                if block[flag]:
                    into.add(k)
        asked_block = vec[L.asked : L.asked + n]
        recent = []
        for i in range(HISTORY):
            e = vec[L.history + i * L.event_size : L.history + (i + 1) * L.event_size]
            if not e[0]:
                break
            obj, where = e[3 + len(KINDS) : 3 + len(KINDS) + n], e[3 + len(KINDS) + n :]
            kind = KIND_NAMES[int(np.argmax(e[2 : 2 + len(KINDS)]))]
            target = int(np.argmax(obj)) if obj.any() else None
            recent.append(
                (bool(e[1]), kind, bool(e[2 + len(KINDS)]), target, int(np.argmax(where)) if where.any() else None)
            )
        return cls(
            player=int(vec[L.side]),
            comm_mode=COMM_MODES[int(np.argmax(vec[L.mode : L.mode + 4]))],
            location=tuple(int(i) for i in board.argmax(axis=1)),
            possible=tuple(int(sum(1 << b for b in range(4) if row[b])) for row in inferred),
            constraints=constraints,
            mine=frozenset(mine),
            shared=frozenset(shared),
            received=frozenset(received),
            asked=int(np.argmax(asked_block)) if asked_block.any() else None,
            mask=mask,
            recent=tuple(recent),
        )
