"""The paper's three verifiers, as public functions returning ``(accepted, reason)``.

* :func:`affordance` — a move must have both bins within the mover's reach, the
  object in the from-bin, and differ from-to (other actions pass);
* :func:`communication` — a share must be of one's own constraint not yet
  shared (in seek-only mode, right after the partner's ask and about the object
  asked about); an ask must be about an object not yet placed (the original
  code's check accepted every ask: a bug); an answer must follow the partner's
  ask and give a goal bin the answerer can infer (answers are legal in seek-only
  mode: the original code rejected them, a bug); moves pass;
* :func:`reasoning` — the action is legal and consistent with what the player
  can infer (the set of rational actions, :func:`rational_reason`); pass only
  when nothing else is rational.

A legal action is one that passes the first two (:meth:`State.check`, the
environment's action mask). Each takes the game :class:`~.rules.State` and the
action, for the player to act unless ``player`` is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from eq_env.einstein_puzzle.rules import (
    BIN_NAMES,
    COMMON,
    GOAL_BINS,
    Action,
    Ask,
    Move,
    Pass,
    Share,
    State,
    reachable,
    row_bins,
)

__all__ = [
    "VERIFIERS",
    "affordance",
    "all_actions",
    "communication",
    "least_bad",
    "rational_reason",
    "reasoning",
    "verdicts",
]

Verdict = tuple[bool, str]


def affordance(state: State, action: Action, player: int | None = None) -> Verdict:
    """Moves: reachable bins, the object where it is said to be, from ≠ to. Other actions pass."""
    if not isinstance(action, Move):
        return True, ""
    reason = state.check(action, player)
    return not reason, reason


def communication(state: State, action: Action, player: int | None = None) -> Verdict:
    """Shares, asks and answers by the mode's rules (see the module docstring). Moves and passes pass."""
    if isinstance(action, (Move, Pass)):
        return True, ""
    reason = state.check(action, player)
    return not reason, reason


def _bins(mask: int) -> str:
    return ", ".join(BIN_NAMES[b] for b in GOAL_BINS if mask >> b & 1)


def rational_reason(state: State, action: Action, player: int | None = None) -> str:
    """Why ``action`` is not rational for ``player`` given its inferred knowledge, or ``""`` if it is.

    Rational, beyond legal:

    * a move into a goal bin: the player can infer that bin is the object's goal (in ``none`` mode, a guess
      among the bins still possible is rational too); never out of a goal bin; never into a start bin;
    * a move into the common bin: the object belongs to the partner's row as far as the player can infer
      (in ``none`` mode: it may belong there);
    * a share: not the grounding (both players hold it), not a constraint the partner shared, and not one
      whose objects are all placed already (it tells nothing);
    * an ask: about an object whose goal the asker cannot infer; an answer: any legal one;
    * a pass: only when no other action is rational.
    """
    p = state.current if player is None else player
    reason = state.check(action, p)
    if reason:
        return reason
    if isinstance(action, Pass):
        other = next(
            (a for a in all_actions(state.puzzle.n) if not isinstance(a, Pass) and not rational_reason(state, a, p)),
            None,
        )
        return f"pass while {other.text()} is possible" if other is not None else ""
    knowledge = state.knowledge(p)
    guessing = state.comm_mode == "none"
    if isinstance(action, Move):
        obj, possible = action.obj, knowledge.possible(action.obj)
        if action.src in GOAL_BINS:
            return f"object {obj} is in its goal bin already"
        if action.dst in GOAL_BINS:
            if not possible >> action.dst & 1:
                return f"object {obj} cannot go in {BIN_NAMES[action.dst]} (it may go in {_bins(possible)})"
            if possible != 1 << action.dst and not guessing:
                return f"a guess: object {obj} may go in {_bins(possible)}"
            return ""
        if action.dst == COMMON:
            partner = sum(1 << b for b in row_bins(1 - p))
            if not possible & partner:
                return f"object {obj} goes in your row ({_bins(possible)}), not across"
            if possible & ~partner and not guessing:
                return f"a guess: object {obj} may go in {_bins(possible)}"
            return ""
        return "only the common bin or the object's goal bin takes an object"
    if isinstance(action, Share):
        c = state.puzzle.constraints[action.constraint]
        if c.is_grounding:
            return "both players hold the grounding"
        if action.constraint in state.received[p]:
            return f"the partner shared constraint {action.constraint} itself"
        if all(obj in state.placed for obj in c.objects()):
            return f"constraint {action.constraint} is about placed objects only"
        return ""
    if isinstance(action, Ask):
        goal = knowledge.goal(action.obj)
        return f"you can infer object {action.obj} goes in {BIN_NAMES[goal]}" if goal is not None else ""
    return ""  # a legal answer


def reasoning(state: State, action: Action, player: int | None = None) -> Verdict:
    """Legal, and rational given the player's inferred knowledge (see :func:`rational_reason`)."""
    reason = rational_reason(state, action, player)
    return not reason, reason


VERIFIERS: dict[str, Callable[[State, Action, int | None], Verdict]] = {
    "affordance": affordance,
    "communication": communication,
    "reasoning": reasoning,
}


def verdicts(state: State, action: Action, verifiers: Sequence[str] = tuple(VERIFIERS)) -> tuple[int, ...]:
    """1 or 0 per verifier named (in order): does ``action`` pass it, for the player to act. The candidates of a
    screened policy are compared by these tuples (:func:`least_bad`)."""
    return tuple(int(VERIFIERS[v](state, action, None)[0]) for v in verifiers)


def least_bad(candidates: Sequence[tuple[int, ...]]) -> int:
    """The index of the candidate whose verdicts are best (most verifiers passed, in order); the first among
    ties. What verifier-assisted play executes when no candidate passes."""
    return max(range(len(candidates)), key=lambda i: (candidates[i], -i))


def all_actions(n: int) -> Iterator[Action]:
    """Every action of an ``n``-object game, in the order of the Discrete action space
    (:mod:`eq_env.einstein_puzzle.spaces`): moves (object, from, to ≠ from), shares, asks, answers, pass."""
    from eq_env.einstein_puzzle.spaces import actions

    return iter(actions(n))


def rational_actions(state: State, player: int | None = None) -> list[Action]:
    """Every rational action of ``player`` (default: the one to act) now, in action-space order."""
    p = state.current if player is None else player
    reach = reachable(p)
    out: list[Action] = []
    for a in all_actions(state.puzzle.n):
        if isinstance(a, Move) and (a.src not in reach or a.dst not in reach or state.location[a.obj] != a.src):
            continue  # (cheap pre-filter: illegal moves are the bulk of the space)
        if not rational_reason(state, a, p):
            out.append(a)
    return out
