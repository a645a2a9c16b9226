"""Seeded puzzle generation: unique goals by construction, with difficulty knobs.

:func:`generate` draws, from one ``numpy`` generator:

1. the goal bins: a random permutation of the four bins for four objects (so
   all four are used), the others uniform, then shuffled;
2. the start bins: a random half of the objects in each start bin (odd n: a
   random player gets one more);
3. a random tree over the objects, grown in a random order from a random root:
   each new object is tied to an earlier one whose depth is below ``max_depth``
   (``None``: any earlier one — a random recursive tree);
4. the constraints: the grounding (the root's goal bin), then one relation per
   tree edge, in a random order, each with the code the goal gives it;
5. the split: ``round(private_share · (n − 1))`` relations (at least 2, at most
   n − 2) are private, as evenly as possible between the players (one more to a
   random one), the rest held by both; the grounding is held by both.

A grounding plus a spanning tree of relations fixes every goal bin (the
relation of each object to the root is the XOR of the codes along its tree
path), so the goal is unique by construction; the tests check it again with an
independent solver. The same ``(seed, n, knobs)`` always gives the same puzzle.
"""

from __future__ import annotations

import numpy as np

from eq_env.einstein_puzzle.rules import BOTH, BOTTOM_START, TOP_START, Constraint, Puzzle, relation

__all__ = ["MAX_OBJECTS", "MIN_OBJECTS", "generate", "puzzle_rng"]

MIN_OBJECTS, MAX_OBJECTS = 4, 16


def generate(
    n: int,
    rng: np.random.Generator,
    *,
    private_share: float = 2 / 3,
    max_depth: int | None = None,
) -> Puzzle:
    """A random puzzle of ``n`` objects (see the module docstring for the knobs).

    ``private_share`` in [0, 1] is the share of relations held by one player only (bounded so that all three
    kinds are present); ``max_depth`` ≥ 1 caps the tree's depth (1: every relation ties an object to the
    grounded one).
    """
    if not (isinstance(n, (int, np.integer)) and MIN_OBJECTS <= n <= MAX_OBJECTS):
        raise ValueError(f"n must be an integer in [{MIN_OBJECTS}, {MAX_OBJECTS}], got {n!r}")
    if not 0.0 <= private_share <= 1.0:
        raise ValueError(f"private_share must be in [0, 1], got {private_share!r}")
    if max_depth is not None and max_depth < 1:
        raise ValueError(f"max_depth must be at least 1 or None, got {max_depth!r}")
    n = int(n)
    goal = np.concatenate([rng.permutation(4), rng.integers(0, 4, n - 4)])
    goal = goal[rng.permutation(n)]
    first = BOTTOM_START if rng.random() < 0.5 else TOP_START
    other = TOP_START + BOTTOM_START - first
    start = np.full(n, other)
    start[rng.permutation(n)[: (n + 1) // 2]] = first

    order = rng.permutation(n)
    depth = {int(order[0]): 0}
    edges: list[tuple[int, int]] = []
    for i in range(1, n):
        earlier = order[:i] if max_depth is None else [o for o in order[:i] if depth[int(o)] < max_depth]
        parent = int(earlier[int(rng.integers(0, len(earlier)))])
        child = int(order[i])
        depth[child] = depth[parent] + 1
        edges.append((child, parent))
    edges = [edges[i] for i in rng.permutation(n - 1)]
    root = int(order[0])
    constraints = [Constraint(root, None, int(goal[root]))]
    constraints += [Constraint(a, b, relation(int(goal[a]), int(goal[b]))) for a, b in edges]

    m = n - 1
    private = min(max(round(private_share * m), 2), m - 1)
    to_zero = private // 2 + (private % 2 if rng.random() < 0.5 else 0)
    kinds = [0] * to_zero + [1] * (private - to_zero) + [BOTH] * (m - private)
    holders = [BOTH] + [kinds[i] for i in rng.permutation(m)]
    return Puzzle(tuple(int(s) for s in start), tuple(int(g) for g in goal), tuple(constraints), tuple(holders))


def puzzle_rng(seed: int, episode: int, stream: int = 0) -> np.random.Generator:
    """The generator of episode ``episode`` of ``seed``'s stream (``stream`` separates uses of one seed)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream, episode)))
