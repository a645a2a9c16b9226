"""The paper's error taxonomy, assigned deterministically from episode records alone.

Every failed game, every action that failed (rejected or illegal) or that the reasoning verifier rejects
(rule-inconsistent), and every LLM format failure is put in one of four categories — **format following**,
**physical understanding**, **communication**, **task reasoning** — with a finer ``kind``.

    from eq_env.einstein_puzzle.taxonomy import classify_record, counts, table
    items = classify_record(record)             # an EpisodeRecord or its dict (a results.jsonl line)
    counts(records)                             # failed games per category
    counts(records, scope="actions")            # erroneous actions per category
    rows = table({"provide_and_seek": recs_a, "none": recs_b})

How it works: the record's actions (texts in the action grammar) are parsed and replayed on the record's
puzzle, from a fresh game with its comm mode and step limit; each turn is judged on the game as it was, by
:meth:`State.check` (the legality rules), :func:`~eq_env.einstein_puzzle.verifiers.rational_reason` (the
reasoning verifier) and the replayed outcome. The puzzle is the record's own (``EpisodeRecord.puzzle``); for
records written without it, :func:`record_puzzle` takes a given ``puzzle`` or ``config``
(:func:`~eq_env.einstein_puzzle.env.episode_puzzle`, the function the environment draws with), else tries the
default generator (episode ``episode`` of seed ``seed``) and then the frozen suite (puzzle ``episode mod
300``), and keeps the first on which the replay reproduces every recorded outcome, the turns, the placed count
and success (ValueError if none does). Merged ``agent_infos`` say how many decisions fell back, not when; a
policy that also reports ``fallback_turns`` (the turns whose action was a fallback) lets the taxonomy place
them exactly; otherwise fallbacks are counted before the game's first turn.

Actions (one item per turn at most; the first matching row wins):

| #  | the turn's action                                       | category               | kind                         |
|----|---------------------------------------------------------|------------------------|------------------------------|
| 1  | in its agent's ``fallback_turns``                       | format following       | fallback                     |
| 2  | an illegal move (from = to; a bin out of reach; the     | physical understanding | illegal move: same bin /     |
|    | object not in the from-bin; no such object or bin)      |                        | out of reach / not in the    |
|    |                                                         |                        | from-bin / no such object or |
|    |                                                         |                        | bin                          |
| 3  | a move into a start bin (rejected)                      | physical understanding | move into a start bin        |
| 4  | an illegal share, ask or answer (the mode's rules)      | communication          | illegal share / ask / answer |
| 5  | a move into a wrong goal bin (rejected)                 | task reasoning         | wrong placement; in ``none`` |
|    |                                                         |                        | mode, a guess the verifier   |
|    |                                                         |                        | allows: wrong guess          |
| 6  | a share of the grounding or of one the partner shared   | communication          | share of what the partner    |
|    |                                                         |                        | has                          |
| 7  | a share about placed objects only                       | communication          | share about placed objects   |
| 8  | an ask about an object the asker can infer              | communication          | ask about an inferable       |
|    |                                                         |                        | object                       |
| 9  | a move out of a goal bin                                | task reasoning         | move out of a goal bin       |
| 10 | a move into the common bin of an object of the mover's  | task reasoning         | hand-off of an own-row       |
|    | own row (as far as it can infer)                        |                        | object                       |
| 11 | a move that is a guess (outside ``none`` mode)          | task reasoning         | guess                        |
| 12 | any other move the reasoning verifier rejects           | task reasoning         | move not justified by        |
|    |                                                         |                        | knowledge                    |
| 13 | a pass while another action was rational                | task reasoning         | pass while an action was     |
|    |                                                         |                        | rational                     |

Rows 6-13 are accepted actions that the reasoning verifier rejects (rule-inconsistent); an accepted action it
accepts is no error. Format items without a turn come from ``agent_infos``, per agent (``turn`` is None):

| source in the agent's info                                          | category         | kind          |
|---------------------------------------------------------------------|------------------|---------------|
| ``fallbacks`` (a count), else ``fallback`` true (one); not when     | format following | fallback      |
| ``fallback_turns`` is given (row 1 then)                            |                  |               |
| each entry of ``invalid_replies`` (else the ``reasks`` count): a    | format following | invalid reply |
| reply (or a verifier's candidate) that could not be parsed          |                  |               |

Games: a game that did not succeed gets one item (``scope="game"``, after the action items) with the
category of its **first error** — the earliest action item, a turn-less fallback counting as earlier than
every turn (the record cannot say when it happened; at equal turns, format first) — and ``kind`` "failed:
<that item's kind>"; invalid replies are not errors of the game (the reply was re-asked), so they never
decide it. (The LLM players pass on a fallback: without ``fallback_turns`` that pass is also judged as a
turn, typically row 13.) A failed game with no error: task reasoning, "ran out of steps". Won games get no game item.

Items come in a fixed order (turn-less format items per agent in agent order, then turns in order, then the
game item), so the same record always gives the same list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from eq_env.einstein_puzzle.env import PLAYERS, episode_puzzle
from eq_env.einstein_puzzle.grammar import GrammarError, parse_action
from eq_env.einstein_puzzle.records import EpisodeRecord
from eq_env.einstein_puzzle.rules import (
    COMMON,
    GOAL_BINS,
    ILLEGAL,
    REJECTED,
    Action,
    Answer,
    Ask,
    Move,
    Pass,
    Puzzle,
    Share,
    State,
    new_game,
    row_bins,
)
from eq_env.einstein_puzzle.verifiers import rational_reason

__all__ = [
    "CATEGORIES",
    "COMMUNICATION",
    "FORMAT",
    "PHYSICAL",
    "REASONING",
    "ErrorItem",
    "classify_record",
    "counts",
    "format_table",
    "record_puzzle",
    "table",
]

FORMAT, PHYSICAL, COMMUNICATION, REASONING = (
    "format following",
    "physical understanding",
    "communication",
    "task reasoning",
)
CATEGORIES = (FORMAT, PHYSICAL, COMMUNICATION, REASONING)
SCOPES = ("games", "actions", "all")


@dataclass(frozen=True)
class ErrorItem:
    """One classified error.

    Attributes:
        scope: ``"action"`` (one turn, or a format failure) or ``"game"`` (a failed game).
        category: one of :data:`CATEGORIES`; kind: the finer label (the module docstring's tables).
        turn, player: where it happened (None: unknown, for format items from infos; a game item: its first
            error's turn, or None).
        action: the action's text ("" for format and game items); outcome: accepted, rejected or illegal ("").
        reason: the rules' or the verifier's reason (or the info it came from).
    """

    scope: str
    category: str
    kind: str
    turn: int | None
    player: int | None
    action: str
    outcome: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- the record and its puzzle ------------------------------------------------------------------------


def _as_record(record: EpisodeRecord | Mapping[str, Any]) -> tuple[EpisodeRecord, Mapping[str, Any] | None]:
    """The record, and the ``"puzzle"`` entry of its dict if it has one."""
    if isinstance(record, EpisodeRecord):
        return record, record.puzzle or None
    if not isinstance(record, Mapping):
        raise ValueError(f"expected an EpisodeRecord or its dict, got {type(record).__name__}")
    puzzle = record.get("puzzle")  # ({} in records written without it)
    return EpisodeRecord.from_dict(record), puzzle if isinstance(puzzle, Mapping) and puzzle else None


def _replay(record: EpisodeRecord, puzzle: Puzzle) -> list[tuple[State, Action]] | str:
    """Each turn's state before it and its action, replayed on ``puzzle``; or why the replay is not the record."""
    if puzzle.n != record.n:
        return f"the puzzle has {puzzle.n} objects, the record {record.n}"
    state = new_game(puzzle, record.comm_mode, record.max_steps)
    out = []
    for turn, (text, outcome) in enumerate(zip(record.actions, record.outcomes, strict=True)):
        try:
            action = parse_action(text, record.n)
        except GrammarError as err:
            return f"turn {turn}: {err}"
        if state.over:
            return f"turn {turn}: the game was over already"
        before = state.copy()
        event = state.play(action)
        if event.outcome != outcome:
            return f"turn {turn}: {text} is {event.outcome} on this puzzle, {outcome} in the record"
        out.append((before, action))
    if state.success != record.success or state.placed_count() != record.placed:
        return "the replay ends with a different success or placed count"
    return out


def _candidates(
    record: EpisodeRecord, puzzle: Puzzle | None, config: Any, stored: Mapping[str, Any] | None
) -> list[tuple[str, Puzzle]]:
    from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
    from eq_env.einstein_puzzle.suite import SUITE_SIZES

    if stored is not None:  # the record's own puzzle comes first: it is the one played
        try:
            return [("the record's puzzle", Puzzle.from_dict(stored))]
        except ValueError as err:
            raise ValueError(
                f"the record (seed {record.seed}, episode {record.episode}) holds a bad puzzle: {err}"
            ) from None
    if puzzle is not None:
        return [("the given puzzle", puzzle)]
    if config is not None:
        return [("the given config", episode_puzzle(config.replace(n=record.n), record.seed, record.episode))]
    default = EinsteinPuzzleConfig(n=record.n)
    out = [("the generated puzzle (default knobs)", episode_puzzle(default, record.seed, record.episode))]
    if record.n in SUITE_SIZES:
        out.append(
            ("the suite's puzzle", episode_puzzle(default.replace(puzzles="suite"), record.seed, record.episode))
        )
    return out


def record_puzzle(
    record: EpisodeRecord | Mapping[str, Any], *, puzzle: Puzzle | None = None, config: Any = None
) -> Puzzle:
    """The puzzle ``record`` was played on (see the module docstring for where it is looked for): ``puzzle``
    the record's own (``EpisodeRecord.puzzle``), else ``puzzle`` itself, the ``config``'s episode (an
    ``EinsteinPuzzleConfig``), else the default generator's or the suite's, whichever replays the record
    exactly. ValueError if none does."""
    rec, stored = _as_record(record)
    return _resolve(rec, puzzle, config, stored)[0]


def _resolve(
    record: EpisodeRecord, puzzle: Puzzle | None, config: Any, stored: Mapping[str, Any] | None
) -> tuple[Puzzle, list[tuple[State, Action]]]:
    why = []
    for name, candidate in _candidates(record, puzzle, config, stored):
        replayed = _replay(record, candidate)
        if not isinstance(replayed, str):
            return candidate, replayed
        why.append(f"{name}: {replayed}")
    raise ValueError(
        f"the record (n={record.n}, {record.comm_mode}, seed {record.seed}, episode {record.episode}) "
        f"does not replay on {'; nor on '.join(why)}; pass puzzle= or config="
    )


# -- one turn -----------------------------------------------------------------------------------------


def _illegal_move_kind(state: State, move: Move) -> str:
    reason = state.check(move)
    if move.src == move.dst:
        return "illegal move: same bin"
    if "out of reach" in reason:
        return "illegal move: out of reach"
    if "is not in" in reason:
        return "illegal move: not in the from-bin"
    return "illegal move: no such object or bin"


def _classify_turn(state: State, action: Action, outcome: str, player: int) -> tuple[str, str, str] | None:
    """(category, kind, reason) of one turn, or None when it is no error (rows 2-13 of the table)."""
    if outcome == ILLEGAL:
        reason = state.check(action)
        if isinstance(action, Move):
            return PHYSICAL, _illegal_move_kind(state, action), reason
        kind = {Share: "illegal share", Ask: "illegal ask", Answer: "illegal answer"}.get(type(action), "illegal")
        return COMMUNICATION, kind, reason
    reason = rational_reason(state, action)
    if outcome == REJECTED:
        assert isinstance(action, Move)  # (only moves are rejected)
        if action.dst not in GOAL_BINS:
            return PHYSICAL, "move into a start bin", reason or "only the common bin or a goal bin takes an object"
        guess = state.comm_mode == "none" and not reason
        why = reason or f"object {action.obj} does not go there (a guess)"
        return REASONING, "wrong guess" if guess else "wrong placement", why
    if not reason:
        return None
    if isinstance(action, Share):
        c = state.puzzle.constraints[action.constraint]
        if c.is_grounding or action.constraint in state.received[player]:
            return COMMUNICATION, "share of what the partner has", reason
        return COMMUNICATION, "share about placed objects", reason
    if isinstance(action, Ask):
        return COMMUNICATION, "ask about an inferable object", reason
    if isinstance(action, Pass):
        return REASONING, "pass while an action was rational", reason
    if isinstance(action, Move):
        possible = state.knowledge(player).possible(action.obj)
        if action.src in GOAL_BINS:
            return REASONING, "move out of a goal bin", reason
        if action.dst == COMMON and not possible & sum(1 << b for b in row_bins(1 - player)):
            return REASONING, "hand-off of an own-row object", reason
        if reason.startswith("a guess"):
            return REASONING, "guess", reason
        return REASONING, "move not justified by knowledge", reason
    return REASONING, "not justified by knowledge", reason  # (a legal answer is always rational)


# -- format failures from the infos -------------------------------------------------------------------


def _count(info: Mapping[str, Any], key: str) -> int | None:
    value = info.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return max(value, 0)


def _format_items(record: EpisodeRecord) -> tuple[list[ErrorItem], dict[int, str]]:
    """The turn-less format items, and the turns known to be fallbacks (turn → agent)."""
    items: list[ErrorItem] = []
    fallback_turns: dict[int, str] = {}
    infos = record.agent_infos if isinstance(record.agent_infos, Mapping) else {}
    for agent in sorted(infos, key=lambda a: (PLAYERS.index(a) if a in PLAYERS else len(PLAYERS), str(a))):
        info = infos[agent]
        if not isinstance(info, Mapping):
            continue
        player = PLAYERS.index(agent) if agent in PLAYERS else None
        turns = info.get("fallback_turns")
        if isinstance(turns, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in turns):
            for t in turns:
                fallback_turns.setdefault(t, agent)
            fallbacks = 0
        else:
            counted = _count(info, "fallbacks")
            fallbacks = counted if counted is not None else 1 if info.get("fallback") is True else 0
        reason = str(info.get("fallback_reason") or "no valid reply: the policy fell back")
        items += [ErrorItem("action", FORMAT, "fallback", None, player, "", "", reason) for _ in range(fallbacks)]
        replies = info.get("invalid_replies")
        invalid = [str(r) for r in replies] if isinstance(replies, list) else [""] * (_count(info, "reasks") or 0)
        items += [
            ErrorItem("action", FORMAT, "invalid reply", None, player, "", "", r or "an invalid reply, re-asked")
            for r in invalid
        ]
    return items, fallback_turns


# -- the API ------------------------------------------------------------------------------------------


def classify_record(
    record: EpisodeRecord | Mapping[str, Any], *, puzzle: Puzzle | None = None, config: Any = None
) -> list[ErrorItem]:
    """Every error of one game, classified by the module docstring's tables, in a fixed order: turn-less
    format items, then one item per erroneous turn, then (a failed game) the game's item.

    ``record``: an :class:`EpisodeRecord` or its dict; ``puzzle`` / ``config``: where its puzzle comes from
    when the record does not say (:func:`record_puzzle`). ValueError if the record does not replay.
    """
    rec, stored = _as_record(record)
    _, turns = _resolve(rec, puzzle, config, stored)
    items, fallback_turns = _format_items(rec)
    for turn, (state, action) in enumerate(turns):
        player = state.current
        outcome = rec.outcomes[turn]
        if turn in fallback_turns:
            items.append(
                ErrorItem(
                    "action",
                    FORMAT,
                    "fallback",
                    turn,
                    player,
                    action.text(),
                    outcome,
                    f"{fallback_turns[turn]}'s reply fell back",
                )
            )
            continue
        verdict = _classify_turn(state, action, outcome, player)
        if verdict is not None:
            category, kind, reason = verdict
            items.append(ErrorItem("action", category, kind, turn, player, action.text(), outcome, reason))
    if not rec.success:
        decisive = [i for i in items if i.kind != "invalid reply"]
        if decisive:
            first = min(decisive, key=lambda i: -1 if i.turn is None else i.turn)  # (min keeps the first of ties)
            items.append(
                ErrorItem(
                    "game",
                    first.category,
                    f"failed: {first.kind}",
                    first.turn,
                    first.player,
                    first.action,
                    first.outcome,
                    first.reason,
                )
            )
        else:
            items.append(
                ErrorItem(
                    "game",
                    REASONING,
                    "ran out of steps",
                    None,
                    None,
                    "",
                    "",
                    f"no error in {rec.turns} turns, {rec.placed} of {rec.n} placed",
                )
            )
    return items


def _scoped(items: Iterable[ErrorItem], scope: str) -> Iterable[ErrorItem]:
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    want = {"games": ("game",), "actions": ("action",), "all": ("game", "action")}[scope]
    return (i for i in items if i.scope in want)


def counts(
    records: Iterable[EpisodeRecord | Mapping[str, Any]],
    *,
    scope: str = "games",
    puzzle: Puzzle | None = None,
    config: Any = None,
) -> dict[str, int]:
    """How many errors of each category (every category present, in :data:`CATEGORIES` order): failed games
    (``scope="games"``, default), erroneous actions and format failures (``"actions"``) or both (``"all"``)."""
    out = dict.fromkeys(CATEGORIES, 0)
    for record in records:
        for item in _scoped(classify_record(record, puzzle=puzzle, config=config), scope):
            out[item.category] += 1
    return out


def table(
    records_by_condition: Mapping[str, Sequence[EpisodeRecord | Mapping[str, Any]]], *, config: Any = None
) -> list[dict[str, Any]]:
    """One row per condition (in the mapping's order): ``condition``, ``games``, ``failed``, then per category
    the failed games it takes (``"<category>"``) and its erroneous actions (``"<category> actions"``)."""
    rows = []
    for condition, records in records_by_condition.items():
        records = list(records)
        games = dict.fromkeys(CATEGORIES, 0)
        actions = dict.fromkeys(CATEGORIES, 0)
        failed = 0
        for record in records:
            for item in classify_record(record, config=config):
                if item.scope == "game":
                    games[item.category] += 1
                    failed += 1
                else:
                    actions[item.category] += 1
        row: dict[str, Any] = {"condition": condition, "games": len(records), "failed": failed}
        row.update(games)
        row.update({f"{c} actions": actions[c] for c in CATEGORIES})
        rows.append(row)
    return rows


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """:func:`table`'s rows as a Markdown table: failed games per category (share of the failures), and
    erroneous actions per game."""
    header = ["condition", "games", "failed", *CATEGORIES, *(f"{c} actions/game" for c in CATEGORIES)]
    lines = [" | ".join(header), " | ".join("---" for _ in header)]
    for r in rows:
        failed, games = r["failed"], r["games"]
        cells = [str(r["condition"]), str(games), str(failed)]
        cells += [f"{r[c]} ({r[c] / failed:.0%})" if failed else "0" for c in CATEGORIES]
        cells += [f"{r[f'{c} actions'] / games:.2f}" if games else "—" for c in CATEGORIES]
        lines.append(" | ".join(cells))
    return "\n".join(lines) + "\n"
