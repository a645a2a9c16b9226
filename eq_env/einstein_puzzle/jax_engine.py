"""The collaborative Einstein puzzle as pure JAX functions that jit and vmap, with JaxMARL's ``MultiAgentEnv``.

Needs the ``jax`` extra (``pip install 'eq-env[jax]'``: JAX, JaxMARL, optax); ``import eq_env`` does not import it.

================  ==========================================================================================
agents            ``player_0`` (the bottom, moves first), ``player_1``; one turn per step, strictly alternating
observations      the numeric observation of :mod:`eq_env.einstein_puzzle.spaces`, ``Box(0, 1, (layout(n).size,))``
                  float32, both players every step
actions           ``Discrete(48·n + 1)``, the environment's own numbering (moves, shares, asks, answers, pass)
action masks      :func:`avail_actions` (JaxMARL's ``get_avail_actions``): the acting player's legal actions (the
                  strict mask when ``strict_mask`` is set); the other player, and both once the game is over, only
                  ``pass`` (index ``48·n``)
rewards           the team reward, the same for both players: ``success_reward`` on the winning placement, minus
                  the rejection, illegal-action and pass penalties, plus the potential-based shaping if set
dones             ``__all__`` and each player: the game is won, or the step limit is reached (infos say which)
================  ==========================================================================================

Every size the environment plays (n = 4 to 16 objects), every comm mode, the step limit,
the penalties, the shaping and the strict mask; puzzles generated or from the frozen suite. ``n`` is static (it
fixes the shapes); everything else is in :class:`Params`, a pytree of arrays, so one compiled function plays every
comm mode, step limit and reward (``vmap`` over params too)::

    params = params_from_config(EinsteinPuzzleConfig(n=6, comm_mode="seek_only"))
    puzzle = draw_puzzle(key, 6)                                   # or numpy_puzzles(config, seed, episodes)
    obs, state = reset_from_puzzle(puzzle, params)
    obs, state, rewards, dones, infos = step_env(key, state, actions, params)   # actions: [player_0, player_1]

**The knowledge closure as fixed-size arrays.** Each player's inferred knowledge is the union-find of
:class:`~eq_env.einstein_puzzle.rules.Knowledge` kept in three ``(2, n)`` arrays: a root per object, a 2-bit label
(the object's goal is its label XOR its component's offset) and, per root, the 4-bit mask of offsets still possible.
A relation shared with a player merges two components (every object of one moves to the other's root, its label
XOR the relation's offset: one vectorised ``where``); a fact (a grounding, a placement, an answer) or a public
rejection narrows one component's offsets. Each step makes at most one merge and one narrowing per player, so
nothing is rebuilt; a reset builds the closure of what a player is given in closed form. (Every fact in play is
true, so no two ever contradict each other and the conflicts that ``Knowledge`` counts cannot arise.)

**Equal to the PettingZoo environment.** :func:`reset_from_puzzle` plays the environment's own puzzles
(:func:`numpy_puzzles`: episode ``i`` of seed ``s`` is ``env.reset(seed=s)``'s ``i``-th, generated or the suite's);
given those and the same actions, the observations, masks, rewards, terminations, truncations and infos equal
``einstein_puzzle_v0.parallel_env(observation_mode="numeric")``'s, step by step (``tests/jax_engines``, thousands of
random episodes per configuration of the conformance battery). Bit for bit with
``jax.config.update("jax_enable_x64", True)``; in JAX's default float32 the observations and masks are still equal
and the rewards equal in float32. :func:`reset` draws its own puzzle from ``key`` with :func:`draw_puzzle`: the
generator's distribution (``eq_env.einstein_puzzle.generator``), not the numpy stream. Two divisions the environment
makes are tables in :class:`Params` (the shaping potentials, the observation's progress): XLA compiles a division
into a multiplication by the reciprocal, which rounds differently.

A jitted function cannot raise: an action outside ``[0, 48·n]`` is clipped into it (where the PettingZoo
environment raises a ValueError), and stepping a game that is over changes nothing (JaxMARL's ``step`` resets it
first).
"""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from eq_env.core.jax_support import jaxmarl_base
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.generator import MAX_OBJECTS, MIN_OBJECTS
from eq_env.einstein_puzzle.rules import BOTH, BOTTOM_START, COMM_MODES, COMMON, N_BINS, TOP_START, Puzzle, reachable
from eq_env.einstein_puzzle.spaces import HISTORY, layout, n_actions

__all__ = [
    "AGENTS",
    "EinsteinPuzzleJax",
    "Params",
    "PuzzleArrays",
    "State",
    "avail_actions",
    "draw_puzzle",
    "infos",
    "numpy_puzzles",
    "observations",
    "params_from_config",
    "puzzle_arrays",
    "random_legal",
    "reset",
    "reset_from_puzzle",
    "step_env",
]

AGENTS = ("player_0", "player_1")
MOVE, SHARE, ASK, ANSWER, PASS = range(5)  # action kinds, in the observation's history order
ACCEPTED, REJECTED, ILLEGAL = 1, 2, 3  # the numeric mode's last_outcome codes (0: none yet)
NONE = -1  # no object asked about; no event in a history slot; no second object (a grounding)
_ALL = 15  # every goal bin possible (a 4-bit mask)
MAX_STEPS = 1000  # the largest step limit a configuration takes (EinsteinPuzzleConfig.max_steps)


class Params(NamedTuple):
    """One configuration's rules as arrays (a pytree: jit once, vmap over several); :func:`params_from_config`."""

    comm_mode: Any  # int: the index in rules.COMM_MODES
    max_steps: Any  # int: the step limit
    rejection_penalty: Any
    illegal_penalty: Any
    pass_penalty: Any
    success_reward: Any
    shaping: Any
    strict_mask: Any  # bool
    potentials: Any  # (2n + 1,): the shaping potential of each count of objects placed and placeable
    progress: Any  # (1001,): the observation's progress entry after each turn, turns / step limit, capped at 1


def params_from_config(config: EinsteinPuzzleConfig | None = None) -> Params:
    """The :class:`Params` of ``config`` (default: the paper's), for puzzles of ``config.n`` objects (the shaping's
    table has ``2n + 1`` entries; :func:`reset_from_puzzle` checks). The puzzle knobs are not in them: the puzzles
    come from :func:`draw_puzzle` or :func:`numpy_puzzles`."""
    config = EinsteinPuzzleConfig() if config is None else config
    if not isinstance(config, EinsteinPuzzleConfig):
        raise TypeError(f"config must be an EinsteinPuzzleConfig, got {type(config).__name__}")
    f = partial(jnp.asarray, dtype=float)
    return Params(
        comm_mode=jnp.asarray(COMM_MODES.index(config.comm_mode), dtype=jnp.int32),
        max_steps=jnp.asarray(config.step_limit, dtype=jnp.int32),
        rejection_penalty=f(config.rejection_penalty),
        illegal_penalty=f(config.illegal_penalty),
        pass_penalty=f(config.pass_penalty),
        success_reward=f(config.success_reward),
        shaping=f(config.shaping),
        strict_mask=jnp.asarray(config.strict_mask),
        # (tables made here, as the environment computes them: XLA may compile a division into a multiplication by
        # the reciprocal, which rounds differently)
        potentials=f([config.shaping * k / (2 * config.n) for k in range(2 * config.n + 1)]),
        progress=f([min(t / config.step_limit, 1.0) for t in range(MAX_STEPS + 1)]),
    )


class PuzzleArrays(NamedTuple):
    """One puzzle (or a batch, stacked on a leading axis): each object's start and goal bin, and constraint ``k``
    as ``a[k]``, ``b[k]`` (``-1`` for the grounding, constraint 0), ``code[k]`` and ``holders[k]`` (0, 1, 2 = both)."""

    start: Any
    goal: Any
    a: Any
    b: Any
    code: Any
    holders: Any


def puzzle_arrays(puzzle: Puzzle) -> PuzzleArrays:
    """A :class:`~eq_env.einstein_puzzle.rules.Puzzle` as :class:`PuzzleArrays` (numpy ``int32``)."""
    c = puzzle.constraints

    def ints(xs: Any) -> np.ndarray:
        return np.asarray(list(xs), np.int32)

    return PuzzleArrays(
        ints(puzzle.start),
        ints(puzzle.goal),
        ints(x.a for x in c),
        ints(NONE if x.b is None else x.b for x in c),
        ints(x.code for x in c),
        ints(puzzle.holders),
    )


def numpy_puzzles(config: EinsteinPuzzleConfig, seed: int, episodes: int) -> PuzzleArrays:
    """The puzzles of episodes ``0 … episodes − 1`` of ``seed`` under ``config``, as the PettingZoo environment plays
    them after ``reset(seed=seed)`` (generated, or the suite's), stacked."""
    from eq_env.einstein_puzzle.env import episode_puzzle

    rows = [puzzle_arrays(episode_puzzle(config, seed, e)) for e in range(episodes)]
    return PuzzleArrays(*(np.stack(xs) for xs in zip(*rows, strict=True)))


def draw_puzzle(key: jax.Array, n: int, private_share: float = 2 / 3, max_depth: int | None = None) -> PuzzleArrays:
    """A random puzzle of ``n`` objects drawn from ``key``, by the steps of
    :func:`eq_env.einstein_puzzle.generator.generate` (the same distribution; not its numpy stream): the goal bins
    (all four used), the even split of the start bins, a random recursive tree (depth capped at ``max_depth``), the
    grounding of its root and a relation per edge in a random order, and the split of the relations
    (``private_share`` private, at least 2 and at most n − 2, as evenly as possible between the players)."""
    if not (isinstance(n, int) and MIN_OBJECTS <= n <= MAX_OBJECTS):
        raise ValueError(f"n must be an integer in [{MIN_OBJECTS}, {MAX_OBJECTS}], got {n!r}")
    if not 0.0 <= private_share <= 1.0:
        raise ValueError(f"private_share must be in [0, 1], got {private_share!r}")
    if max_depth is not None and max_depth < 1:
        raise ValueError(f"max_depth must be at least 1 or None, got {max_depth!r}")
    i32 = jnp.int32
    m = n - 1
    # two random words from the key (one threefry block), then the puzzle's uniforms hashed from them and a counter
    # (threefry for all 7n of them was most of a reset's time on a CPU)
    sizes = (4, n - 4, n, 1, n, n, m, m, 1, m)
    words = jax.random.bits(key, (2,), jnp.uint32)
    counter = jnp.arange(sum(sizes), dtype=jnp.uint32)
    u = (_mix(_mix(words[0] ^ (counter * jnp.uint32(0x9E3779B9))) ^ words[1]) >> 8).astype(jnp.float32) / (1 << 24)
    parts = np.cumsum((0, *sizes))
    draw = [u[parts[i] : parts[i + 1]] for i in range(len(sizes))]
    goal = jnp.concatenate([_permutation(draw[0]), (draw[1] * 4).astype(i32)])
    goal = _gather(goal.astype(i32), _permutation(draw[2]))
    first = jnp.where(draw[3][0] < 0.5, BOTTOM_START, TOP_START)
    firsts = _permutation(draw[4]) < (n + 1) // 2  # (a random half, the larger one for odd n)
    start = jnp.where(firsts, first, TOP_START + BOTTOM_START - first).astype(i32)

    order = _permutation(draw[5])
    steps = jnp.arange(1, n)
    if max_depth is None:  # a random recursive tree: each new object's parent is uniform among the earlier ones
        at = jnp.minimum((draw[6] * steps).astype(i32), steps - 1)
    else:
        positions = jnp.arange(n)

        def grow(depth: jax.Array, x: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
            i, ui = x
            eligible = (positions < i) & (depth < max_depth)
            count = jnp.sum(eligible)
            t = jnp.minimum((ui * count).astype(i32), count - 1)
            parent = jnp.argmax(jnp.cumsum(eligible) > t)  # (the t-th eligible position)
            return jnp.where(positions == i, _get(depth, parent) + 1, depth), parent

        _, at = jax.lax.scan(grow, jnp.zeros(n, i32), (steps, draw[6]))
    edges = _permutation(draw[7])
    child, parent = _gather(order[1:], edges), _gather(_gather(order, at), edges)
    root = order[0]
    a = jnp.concatenate([root[None], child]).astype(i32)
    b = jnp.concatenate([jnp.full(1, NONE, i32), parent.astype(i32)])
    code = jnp.concatenate([_get(goal, root)[None], _gather(goal, child) ^ _gather(goal, parent)]).astype(i32)

    private = min(max(round(private_share * m), 2), m - 1)
    to_zero = private // 2 + jnp.where(draw[8][0] < 0.5, private % 2, 0)
    slots = jnp.arange(m)
    kinds = jnp.where(slots < to_zero, 0, jnp.where(slots < private, 1, BOTH))
    holders = jnp.concatenate([jnp.full(1, BOTH), _gather(kinds.astype(i32), _permutation(draw[9]))]).astype(i32)
    return PuzzleArrays(start, goal, a, b, code, holders)


def _permutation(u: jax.Array) -> jax.Array:
    """A uniformly random permutation of ``len(u)``: the ranks of iid uniforms (ties broken by position), by
    pairwise comparison (XLA's sort is slower on a CPU for so few elements)."""
    i = jnp.arange(u.shape[0])
    before = (u[None, :] < u[:, None]) | ((u[None, :] == u[:, None]) & (i[None, :] < i[:, None]))
    return jnp.sum(before, axis=1).astype(jnp.int32)


class State(NamedTuple):
    """One game in progress (``n`` objects, ``k`` = constraint index; a pytree of arrays).

    ``root``/``label``/``offsets`` (2, n): each player's knowledge closure (see the module docstring);
    ``shared`` (2, n): the constraints each player has shared (those a player received are the other's);
    ``history_*`` (4,): the last four turns, newest first (action index, player, outcome; ``-1``: no turn);
    ``asked``: the object the player to act was just asked about (``-1``: none); ``potential``: the shaping
    potential now; ``done``: the game is over."""

    puzzle: PuzzleArrays
    location: Any
    turn: Any
    shared: Any
    root: Any
    label: Any
    offsets: Any
    asked: Any
    history_action: Any
    history_player: Any
    history_outcome: Any
    potential: Any
    done: Any


# -- small arrays without gathers or scatters -----------------------------------------------------------
# (XLA's CPU gathers and scatters under vmap cost more than a whole select over a few dozen elements)
def _get(x: jax.Array, i: Any) -> jax.Array:
    """``x[i]`` for a small 1-d array."""
    return jnp.sum(jnp.where(jnp.arange(x.shape[-1]) == i, x, 0), axis=-1).astype(x.dtype)


def _put(x: jax.Array, i: Any, value: Any) -> jax.Array:
    """``x.at[i].set(value)`` for a small 1-d array."""
    return jnp.where(jnp.arange(x.shape[-1]) == i, value, x)


def _gather(x: jax.Array, index: jax.Array) -> jax.Array:
    """``x[index]`` for small 1-d arrays."""
    return jnp.sum(jnp.where(index[:, None] == jnp.arange(x.shape[-1])[None, :], x[None, :], 0), axis=1)


def _spread(label: Any, mask: Any) -> Any:
    """The 4-bit mask ``{label ^ r : r in mask}`` (offsets seen from a label, or a component's re-rooted)."""
    return sum(((mask >> r) & 1) << (r ^ label) for r in range(4))


def _decode(a: Any, n: int) -> tuple[Any, Any, Any, Any]:
    """Action index → kind, object (the constraint for a share), destination bin (moves) or goal bin (answers),
    and source bin (moves), by the numbering of :mod:`eq_env.einstein_puzzle.spaces`."""
    r = a % 42
    src = r // 6
    d = r % 6
    dst = d + (d >= src)
    kind = jnp.where(
        a < 42 * n, MOVE, jnp.where(a < 43 * n, SHARE, jnp.where(a < 44 * n, ASK, jnp.where(a < 48 * n, ANSWER, PASS)))
    )
    obj = jnp.where(
        kind == MOVE,
        a // 42,
        jnp.where(kind == SHARE, a - 42 * n, jnp.where(kind == ASK, a - 43 * n, (a - 44 * n) // 4)),
    )
    where = jnp.where(kind == MOVE, dst, jnp.where(kind == ANSWER, (a - 44 * n) % 4, NONE))
    return kind, jnp.where(kind == PASS, 0, obj), where, src


@lru_cache(maxsize=4)
def _slots() -> tuple[np.ndarray, np.ndarray]:
    """Per slot of an object's 42 moves: its from-bin and to-bin."""
    src = np.array([s for s in range(N_BINS) for d in range(N_BINS) if d != s], np.int32)
    dst = np.array([d for s in range(N_BINS) for d in range(N_BINS) if d != s], np.int32)
    return src, dst


@lru_cache(maxsize=4)
def _reach() -> np.ndarray:
    """(2, 7): the bins each player reaches."""
    return np.array([[b in reachable(p) for b in range(N_BINS)] for p in (0, 1)])


def _const(x: np.ndarray) -> jax.Array:
    # (explicit dtypes: a module constant converted under enable_x64 would otherwise be cached as 64-bit)
    return jnp.asarray(x, dtype=jnp.float32 if x.dtype == np.float32 else jnp.int32 if x.dtype != bool else bool)


# -- knowledge ------------------------------------------------------------------------------------------
def _merge(root: jax.Array, label: jax.Array, offsets: jax.Array, a: Any, b: Any, code: Any, on: Any) -> Any:
    """One player's closure after learning that goals ``a`` and ``b`` are related by ``code`` (if ``on``): ``b``'s
    component joins ``a``'s."""
    ra, rb = _get(root, a), _get(root, b)
    d = _get(label, a) ^ _get(label, b) ^ code
    go = on & (ra != rb)
    moved = go & (root == rb)
    merged = _get(offsets, ra) & _spread(d, _get(offsets, rb))
    return (
        jnp.where(moved, ra, root),
        jnp.where(moved, label ^ d, label),
        jnp.where(go, _put(offsets, ra, merged), offsets),
    )


def _narrow(root: jax.Array, label: jax.Array, offsets: jax.Array, obj: Any, bins: Any) -> jax.Array:
    """One player's offsets after learning that ``obj``'s goal is among ``bins`` (a 4-bit mask; 15: nothing)."""
    r = _get(root, obj)
    return _put(offsets, r, _get(offsets, r) & _spread(_get(label, obj), bins))


def _possible(state: State) -> jax.Array:
    """(2, n): each player's possible goal bins of each object (4-bit masks), ``Knowledge.possible``."""
    roots = jnp.stack([_gather(state.offsets[p], state.root[p]) for p in (0, 1)])
    return _spread(state.label, roots)


def _held(puzzle: PuzzleArrays, player: Any) -> jax.Array:
    return (puzzle.holders == player) | (puzzle.holders == BOTH)


def _initial_knowledge(puzzle: PuzzleArrays, player: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """A player's closure over what it is given, in closed form: its relations' components (reachability by
    repeated squaring, each rooted at its smallest object), each object's label relative to its root (the XOR of
    their goals: every relation is true) and the grounded component's offset pinned (the grounding, constraint 0, is
    everyone's). The same closure as merging the constraints one by one, without n dependent steps."""
    n = puzzle.goal.shape[0]
    objects = jnp.arange(n)
    relation = _held(puzzle, player) & (puzzle.b >= 0)
    ends_a = (puzzle.a[:, None] == objects[None, :]) & relation[:, None]  # (k, n)
    ends_b = (puzzle.b[:, None] == objects[None, :]) & relation[:, None]
    linked = jnp.any((ends_a[:, :, None] & ends_b[:, None, :]) | (ends_b[:, :, None] & ends_a[:, None, :]), axis=0)
    reach = linked | (objects[:, None] == objects[None, :])
    for _ in range(max(1, (n - 1).bit_length())):  # (paths of up to n - 1 relations)
        reach = jnp.any(reach[:, :, None] & reach[None, :, :], axis=1)
    root = jnp.argmax(reach, axis=1).astype(jnp.int32)  # (the smallest object of each component)
    goal = puzzle.goal
    label = goal ^ _gather(goal, root)
    grounded_root = _get(root, puzzle.a[0])
    offsets = jnp.where(objects == grounded_root, 1 << _get(goal, grounded_root), _ALL).astype(jnp.int32)
    return root, label.astype(jnp.int32), offsets


# -- reset --------------------------------------------------------------------------------------------
def _potential(location: jax.Array, possible: jax.Array, puzzle: PuzzleArrays, params: Params) -> jax.Array:
    """The shaping potential Φ = w · (placed + placeable) / (2n) (the environment's ``_potential_now``), read from
    ``params.potentials``."""
    goal = puzzle.goal
    placed = jnp.sum(location == goal)
    row_player = jnp.where(goal >= 2, 0, 1)  # (the bottom row is player 0's)
    known = jnp.where(row_player == 0, possible[0], possible[1])
    placeable = jnp.sum(known == (1 << goal))
    return params.potentials[placed + placeable]


def _new_state(puzzle: PuzzleArrays, params: Params) -> State:
    puzzle = PuzzleArrays(*(jnp.asarray(x, dtype=jnp.int32) for x in puzzle))
    n = puzzle.goal.shape[0]
    if params.potentials.shape[-1] != 2 * n + 1:
        raise ValueError(
            f"params are for {(params.potentials.shape[-1] - 1) // 2} objects but the puzzle has {n}: "
            f"params_from_config(config) with config.n = {n}"
        )
    knowledge = [_initial_knowledge(puzzle, p) for p in (0, 1)]
    root, label, offsets = (jnp.stack(xs) for xs in zip(*knowledge, strict=True))
    none4 = jnp.full(HISTORY, NONE, jnp.int32)
    state = State(
        puzzle=puzzle,
        location=puzzle.start,
        turn=jnp.int32(0),
        shared=jnp.zeros((2, n), bool),
        root=root,
        label=label,
        offsets=offsets,
        asked=jnp.int32(NONE),
        history_action=none4,
        history_player=none4,
        history_outcome=none4,
        potential=jnp.zeros((), dtype=float),
        done=jnp.zeros((), bool),
    )
    state = state._replace(potential=_potential(state.location, _possible(state), puzzle, params))
    return state


def reset_from_puzzle(puzzle: PuzzleArrays, params: Params) -> tuple[dict[str, jax.Array], State]:
    """A new game of ``puzzle`` (one, unbatched: ``vmap`` for many): every object in its start bin, player 0 to act."""
    state = _new_state(puzzle, params)
    return observations(state, params), state


def reset(
    key: jax.Array, params: Params, n: int = 4, private_share: float = 2 / 3, max_depth: int | None = None
) -> Any:
    """A new game of a puzzle drawn from ``key`` (:func:`draw_puzzle`; ``n`` and the knobs are static)."""
    return reset_from_puzzle(draw_puzzle(key, n, private_share, max_depth), params)


# -- masks ------------------------------------------------------------------------------------------------
def _legal(state: State, params: Params, possible: jax.Array, strict: Any) -> jax.Array:
    """The legal actions of the player to act (bool, ``48·n + 1``), ``spaces.action_mask``; ``strict``: the strict
    mask's moves. (In int32 arithmetic on constant tables: XLA's CPU code for gathers and for bool arrays under
    vmap was 5-10x slower.)"""
    puzzle = state.puzzle
    n = puzzle.goal.shape[0]
    p = state.turn % 2
    t = _move_tables()
    mine = jnp.where(p == 0, possible[0], possible[1])
    here = (state.location[:, None] == _const(t.src)[None, :]).astype(jnp.int32)  # (n, 42)
    reach = jnp.where(p == 0, _const(t.reach[0]), _const(t.reach[1]))[None, :]
    known_wrong = _const(t.into_goal)[None, :] * (1 - ((mine[:, None] >> _const(t.dst_bit)[None, :]) & 1))
    useless = jnp.maximum(_const(t.useless)[None, :], known_wrong) * jnp.asarray(strict, dtype=jnp.int32)
    moves = (here * reach * (1 - useless)).reshape(-1)
    mode = params.comm_mode
    asked = state.asked
    share_mode, ask_mode, seek = mode <= 1, (mode == 0) | (mode == 2), mode == 2
    about = (puzzle.a == asked) | (puzzle.b == asked)
    shared = jnp.where(p == 0, state.shared[0], state.shared[1])
    shares = _held(puzzle, p) & ~shared & (share_mode | (seek & (asked >= 0) & about))
    asks = ask_mode & (state.location >= 4)
    objects = jnp.arange(n)[:, None]
    answers = ask_mode & (objects == asked) & (mine[:, None] == (1 << jnp.arange(4))[None, :])
    talk = jnp.concatenate([shares, asks, answers.reshape(-1)]).astype(jnp.int32)
    return jnp.concatenate([moves, talk, jnp.ones(1, jnp.int32)]) > 0


class _MoveTables(NamedTuple):
    """Per slot of an object's 42 moves (numpy int32): its from-bin, whether each player reaches both bins, whether
    it goes into a goal bin (and that bin, 0 otherwise), and whether the strict mask always leaves it out."""

    src: np.ndarray
    reach: np.ndarray  # (2, 42)
    into_goal: np.ndarray
    dst_bit: np.ndarray
    useless: np.ndarray


@lru_cache(maxsize=1)
def _move_tables() -> _MoveTables:
    src, dst = _slots()
    reach = _reach()
    return _MoveTables(
        src=src,
        reach=(reach[:, src] & reach[:, dst]).astype(np.int32),
        into_goal=(dst < 4).astype(np.int32),
        dst_bit=np.where(dst < 4, dst, 0).astype(np.int32),
        # out of a goal bin (the object is where it belongs) or into a start bin (always rejected)
        useless=((src < 4) | ((dst >= 4) & (dst != COMMON))).astype(np.int32),
    )


def _is_legal(state: State, params: Params, possible: jax.Array, a: Any) -> jax.Array:
    """Whether action ``a`` is legal for the player to act (``_legal(...)[a]``, without building the mask)."""
    puzzle = state.puzzle
    n = puzzle.goal.shape[0]
    p = state.turn % 2
    kind, obj, where, src = _decode(a, n)
    reach = _const(_reach())
    both = jnp.where(p == 0, reach[0], reach[1])
    move_ok = _get(both, src) & _get(both, where) & (_get(state.location, obj) == src)
    mode = params.comm_mode
    asked = state.asked
    share_mode, ask_mode, seek = mode <= 1, (mode == 0) | (mode == 2), mode == 2
    held = (_get(puzzle.holders, obj) == p) | (_get(puzzle.holders, obj) == BOTH)
    about = (_get(puzzle.a, obj) == asked) | (_get(puzzle.b, obj) == asked)
    shared = jnp.where(p == 0, state.shared[0], state.shared[1])
    share_ok = held & ~_get(shared, obj).astype(bool) & (share_mode | (seek & (asked >= 0) & about))
    ask_ok = ask_mode & (_get(state.location, obj) >= 4)
    mine = jnp.where(p == 0, possible[0], possible[1])
    answer_ok = ask_mode & (obj == asked) & (_get(mine, obj) == (1 << where))
    return jnp.select(
        [kind == MOVE, kind == SHARE, kind == ASK, kind == ANSWER], [move_ok, share_ok, ask_ok, answer_ok], True
    )


def _only_pass(n: int) -> jax.Array:
    return jnp.arange(n_actions(n)) == n_actions(n) - 1


def avail_actions(state: State, params: Params) -> dict[str, jax.Array]:
    """The action masks (bool): the acting player's legal actions (strict if ``params.strict_mask``), the other's
    (and both once the game is over) only ``pass``, as the numeric environment gives them."""
    n = state.puzzle.goal.shape[0]
    legal = jnp.where(state.done, _only_pass(n), _legal(state, params, _possible(state), params.strict_mask))
    p = state.turn % 2
    return {agent: jnp.where(p == i, legal, _only_pass(n)) for i, agent in enumerate(AGENTS)}


def random_legal(key: jax.Array, mask: jax.Array) -> jax.Array:
    """A legal action of each ``mask`` (shape ``(..., A)``; a batch takes one key) drawn uniformly: the random player
    of the benchmarks and tests. The legal action of the highest priority, each action's priority a hash of one
    random 32-bit word per mask and the action's index (a cumulative sum over the actions, or a uniform per action,
    costs several times more on a CPU)."""
    seed = jax.random.bits(key, mask.shape[:-1], jnp.uint32)
    index = jnp.arange(mask.shape[-1], dtype=jnp.uint32)
    priority = _mix(seed[..., None] ^ (index * jnp.uint32(0x9E3779B9)))
    return jnp.argmax(jnp.where(mask, (priority >> 1) + 1, jnp.uint32(0)), axis=-1).astype(jnp.int32)


def _mix(x: jax.Array) -> jax.Array:
    """MurmurHash3's 32-bit finaliser: every input bit flips each output bit with probability about 1/2."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


# -- a turn ----------------------------------------------------------------------------------------------
def _turn(state: State, actions: Any, params: Params) -> tuple[State, jax.Array]:
    """The state after the acting player's entry of ``actions``, and the team reward (no observations)."""
    puzzle = state.puzzle
    n = puzzle.goal.shape[0]
    p = state.turn % 2
    a = jnp.asarray(actions, dtype=jnp.int32)
    a = jnp.clip(jnp.where(p == 0, a[0], a[1]), 0, n_actions(n) - 1)
    kind, obj, where, _ = _decode(a, n)
    possible = _possible(state)
    legal = _is_legal(state, params, possible, a)

    is_move = legal & (kind == MOVE)
    into_goal = where < 4
    wrong_goal = is_move & into_goal & (where != _get(puzzle.goal, obj))
    to_start = is_move & ~into_goal & (where != COMMON)
    moved = is_move & ~wrong_goal & ~to_start
    placed = moved & into_goal
    shared_now = legal & (kind == SHARE)
    answered = legal & (kind == ANSWER)
    asked = legal & (kind == ASK)
    location = jnp.where(moved, _put(state.location, obj, where), state.location)
    players = jnp.arange(2)[:, None]
    shared = state.shared | (shared_now & (players == p) & (jnp.arange(n)[None, :] == obj))

    # what each player learns: a placement or a rejection (both), a share or an answer (the partner)
    k = obj  # (a share's constraint)
    ka, kb, kcode = _get(puzzle.a, k), _get(puzzle.b, k), _get(puzzle.code, k)
    relation = kb >= 0
    partner = jnp.arange(2) == 1 - p
    bit = 1 << jnp.maximum(where, 0)
    bins = jnp.where(
        placed,
        bit,
        jnp.where(
            wrong_goal,
            _ALL ^ bit,
            jnp.where(partner & answered, bit, jnp.where(partner & shared_now & ~relation, 1 << kcode, _ALL)),
        ),
    )
    subject = jnp.where(shared_now, ka, obj)
    merge_on = shared_now & relation & partner
    root, label, offsets = [], [], []
    for q in (0, 1):
        r, lab, off = _merge(state.root[q], state.label[q], state.offsets[q], ka, kb, kcode, merge_on[q])
        root.append(r)
        label.append(lab)
        offsets.append(_narrow(r, lab, off, subject, bins[q]))

    outcome = jnp.where(~legal, ILLEGAL, jnp.where(wrong_goal | to_start, REJECTED, ACCEPTED)).astype(jnp.int32)
    turn = state.turn + 1
    won = placed & jnp.all(location == puzzle.goal)
    zero = jnp.zeros((), dtype=float)
    reward = jnp.where(
        outcome == REJECTED,
        zero - params.rejection_penalty,
        jnp.where(
            outcome == ILLEGAL,
            zero - params.illegal_penalty,
            jnp.where(kind == PASS, zero - params.pass_penalty, jnp.where(won, params.success_reward, zero)),
        ),
    )
    over = won | (turn >= params.max_steps)
    after = state._replace(
        location=location, shared=shared, root=jnp.stack(root), label=jnp.stack(label), offsets=jnp.stack(offsets)
    )
    potential = jnp.where(over, zero, _potential(location, _possible(after), puzzle, params))
    reward = reward + (potential - state.potential)
    new = after._replace(
        turn=turn,
        asked=jnp.where(asked, obj, NONE).astype(jnp.int32),
        history_action=jnp.concatenate([a[None], state.history_action[:-1]]),
        history_player=jnp.concatenate([p[None].astype(jnp.int32), state.history_player[:-1]]),
        history_outcome=jnp.concatenate([outcome[None], state.history_outcome[:-1]]),
        potential=potential,
        done=over,
    )
    # a game that is over stays as it is
    new = jax.tree.map(lambda old, x: jnp.where(state.done, old, x), state, new)
    return new, jnp.where(state.done, zero, reward)


def step_env(
    key: Any, state: State, actions: jax.Array, params: Params
) -> tuple[dict[str, jax.Array], State, dict[str, jax.Array], dict[str, jax.Array], dict[str, jax.Array]]:
    """One turn: the acting player's entry of ``actions`` (``[player_0, player_1]``; the other is ignored) is played
    as ``State.play`` plays it. ``key`` is unused (the game has no chance after the puzzle) and may be None."""
    del key
    new, reward = _turn(state, actions, params)
    dones = {agent: new.done for agent in AGENTS}
    return (
        observations(new, params),
        new,
        {agent: reward for agent in AGENTS},
        {**dones, "__all__": new.done},
        infos(new, params),
    )


# -- what the players see ---------------------------------------------------------------------------------
def infos(state: State, params: Params | None = None) -> dict[str, jax.Array]:
    """The numeric mode's infos (:data:`eq_env.einstein_puzzle.numeric.INFO_KEYS`), each of shape ``(2,)`` (player 0,
    player 1): ``last_outcome`` of the player who just acted (1 accepted, 2 rejected, 3 illegal; 0 for the other
    and before the first turn), and ``success``, ``turns``, ``placed`` (objects in their goal bins), 0 until the end."""
    del params
    players = jnp.arange(2)
    last = jnp.where((state.history_player[0] == players), state.history_outcome[0], 0)

    def final(x: Any) -> jax.Array:
        return jnp.where(state.done, jnp.asarray(x, dtype=float), 0.0) * jnp.ones(2)

    at_goal = state.location == state.puzzle.goal
    return {
        "last_outcome": last.astype(float),
        "success": final(jnp.all(at_goal)),
        "turns": final(state.turn),
        "placed": final(jnp.sum(at_goal)),
    }


def _one_hot(x: Any, size: int) -> jax.Array:
    return jax.nn.one_hot(x, size, dtype=jnp.float32)  # (an index outside [0, size): zeros)


def _observation(state: State, params: Params, player: int, possible: jax.Array) -> jax.Array:
    puzzle = state.puzzle
    n = puzzle.goal.shape[0]
    progress = params.progress[jnp.minimum(state.turn, MAX_STEPS)]
    head = jnp.concatenate(
        [jnp.full(1, float(player), jnp.float32), progress.astype(jnp.float32)[None], _one_hot(params.comm_mode, 4)]
    )
    board = _one_hot(state.location, N_BINS).reshape(-1)
    inferred = ((possible[player][:, None] >> jnp.arange(4)[None, :]) & 1).astype(jnp.float32).reshape(-1)
    mine = _held(puzzle, player)
    received = state.shared[1 - player]
    known = mine | received
    flags = jnp.stack([known, mine, state.shared[player], received], axis=1).astype(jnp.float32)
    content = jnp.concatenate([_one_hot(puzzle.a, n), _one_hot(puzzle.b, n), _one_hot(puzzle.code, 4)], axis=1)
    constraints = jnp.concatenate([flags, content * known[:, None]], axis=1).reshape(-1)
    asked = _one_hot(jnp.where(state.turn % 2 == player, state.asked, NONE), n)
    action = state.history_action
    present = action >= 0
    kind, target, where, _ = _decode(jnp.maximum(action, 0), n)
    subject = jnp.where(kind == SHARE, _gather(puzzle.a, target), jnp.where(kind == PASS, NONE, target))
    events = jnp.concatenate(
        [
            jnp.ones((HISTORY, 1), jnp.float32),
            (state.history_player == player).astype(jnp.float32)[:, None],
            _one_hot(kind, 5),
            (state.history_outcome != ACCEPTED).astype(jnp.float32)[:, None],
            _one_hot(subject, n),
            _one_hot(where, N_BINS),
        ],
        axis=1,
    )
    history = (events * present[:, None]).reshape(-1)
    out = jnp.concatenate([head, board, inferred, constraints, asked, history])
    assert out.shape == (layout(n).size,), (out.shape, layout(n).size)
    return out


def observations(state: State, params: Params) -> dict[str, jax.Array]:
    """Both players' numeric observations (float32), as the environment's ``ObservationEncoder`` makes them."""
    possible = _possible(state)
    return {agent: _observation(state, params, i, possible) for i, agent in enumerate(AGENTS)}


# -- JaxMARL ----------------------------------------------------------------------------------------------
_MultiAgentEnv, _spaces = jaxmarl_base()


class EinsteinPuzzleJax(_MultiAgentEnv):  # type: ignore[misc, valid-type]
    """The collaborative Einstein puzzle as a JaxMARL ``MultiAgentEnv`` (see the module docstring).

    ``EinsteinPuzzleJax(config=None)``: ``config.n`` objects; each ``reset(key)`` plays a puzzle drawn with
    :func:`draw_puzzle` under the config's knobs, or, with ``puzzles="suite"``, one of the frozen suite's 300 puzzles
    of n objects chosen uniformly (the PettingZoo environment plays them in order). ``env.params`` is the
    :class:`Params` it plays.
    """

    def __init__(self, config: EinsteinPuzzleConfig | None = None) -> None:
        super().__init__(num_agents=2)
        self.config = EinsteinPuzzleConfig() if config is None else config
        self.params = params_from_config(self.config)
        self.n = self.config.n
        self.agents = list(AGENTS)
        self._suite: PuzzleArrays | None = None
        if self.config.puzzles == "suite":
            from eq_env.einstein_puzzle.suite import load_suite

            rows = [puzzle_arrays(p) for p in load_suite(self.n)]
            self._suite = PuzzleArrays(*(jnp.asarray(np.stack(xs)) for xs in zip(*rows, strict=True)))
        size = layout(self.n).size
        self.observation_spaces = {a: _spaces.Box(0.0, 1.0, (size,), jnp.float32) for a in AGENTS}
        self.action_spaces = {a: _spaces.Discrete(n_actions(self.n)) for a in AGENTS}

    def __repr__(self) -> str:
        return f"EinsteinPuzzleJax(config={self.config!r})"

    def puzzle(self, key: jax.Array) -> PuzzleArrays:
        """The puzzle ``reset(key)`` plays."""
        if self._suite is not None:
            i = jax.random.randint(key, (), 0, self._suite.goal.shape[0])
            return PuzzleArrays(*(x[i] for x in self._suite))
        return draw_puzzle(key, self.n, self.config.private_share, self.config.max_depth)

    @partial(jax.jit, static_argnums=(0,))
    def reset(self, key: jax.Array) -> tuple[dict[str, jax.Array], State]:
        return reset_from_puzzle(self.puzzle(key), self.params)

    @partial(jax.jit, static_argnums=(0,))
    def step_env(
        self, key: jax.Array, state: State, actions: dict[str, jax.Array]
    ) -> tuple[dict[str, jax.Array], State, dict[str, jax.Array], dict[str, jax.Array], dict[str, jax.Array]]:
        return step_env(key, state, jnp.stack([actions[a] for a in AGENTS]), self.params)

    @partial(jax.jit, static_argnums=(0,))
    def step(
        self, key: jax.Array, state: State, actions: dict[str, jax.Array], reset_state: State | None = None
    ) -> tuple[dict[str, jax.Array], State, dict[str, jax.Array], dict[str, jax.Array], dict[str, jax.Array]]:
        """JaxMARL's ``step`` (the turn, then a new game where it ended, or ``reset_state``), with the same results;
        the observations are built once, of the state it returns (JaxMARL's builds both the ended game's and the new
        game's, and selects)."""
        # (the turn draws nothing: the key is the new game's, where JaxMARL's splits it, one threefry call less)
        played, reward = _turn(state, jnp.stack([actions[a] for a in AGENTS]), self.params)
        fresh = self._new_game(key) if reset_state is None else reset_state
        done = played.done
        states = jax.tree.map(lambda x, y: jax.lax.select(done, x, y), fresh, played)
        dones = {**{agent: done for agent in AGENTS}, "__all__": done}
        rewards = {agent: reward for agent in AGENTS}
        return observations(states, self.params), states, rewards, dones, infos(played, self.params)

    def _new_game(self, key: jax.Array) -> State:
        return _new_state(self.puzzle(key), self.params)

    def get_obs(self, state: State) -> dict[str, jax.Array]:
        return observations(state, self.params)

    @partial(jax.jit, static_argnums=(0,))
    def get_avail_actions(self, state: State) -> dict[str, jax.Array]:
        return avail_actions(state, self.params)

    @property
    def name(self) -> str:
        return "EinsteinPuzzle"

    @property
    def agent_classes(self) -> dict[str, list[str]]:
        return {"player": list(AGENTS)}
