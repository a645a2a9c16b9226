"""The Einstein puzzle's episode record and metrics (the paper's: success, steps, rejected placements,
rule-inconsistent actions, partial success, communication and verifier counts).

:class:`EpisodeRecord` is one finished game, flat and JSON-ready; :func:`record_episode` makes it from the
environment that just played it; :func:`compute_metrics` turns records into :data:`METRICS`.
Rule-inconsistent actions are counted here, by replaying the game's history through the reasoning
verifier (:func:`~eq_env.einstein_puzzle.verifiers.rational_reason`), so the environment pays nothing
for them while it plays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from eq_env.core.records import checked_fields, mean
from eq_env.einstein_puzzle.rules import (
    ACCEPTED,
    COMM_MODES,
    ILLEGAL,
    REJECTED,
    Answer,
    Ask,
    Pass,
    Share,
    State,
    new_game,
)
from eq_env.einstein_puzzle.verifiers import rational_reason

__all__ = ["METRICS", "EpisodeRecord", "compute_metrics", "record_episode", "rule_inconsistent_actions"]

OUTCOMES = (ACCEPTED, REJECTED, ILLEGAL)


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished game, flat and JSON-ready.

    Attributes:
        seed, episode: where the game comes from (episode ``episode`` of seed ``seed``'s stream).
        n, comm_mode, max_steps: the game's size, communication mode and step limit.
        success: every object reached its goal bin; turns: turns played.
        placed: objects in their goal bins at the end.
        rejected: rejected placements; illegal: actions the rules do not allow (played as failed turns).
        rule_inconsistent: actions the reasoning verifier rejects (illegal ones included), replayed.
        shares, asks, answers, passes: accepted actions of each kind.
        verifier_interventions: summed from the policies' infos (``"verifier_interventions"``), if any.
        actions: every turn's action in the action grammar (``move 3 from common to top_left``...).
        outcomes: each turn's outcome: accepted, rejected or illegal.
        agent_infos: what each agent's policy reported, by agent.
        puzzle: the puzzle played (``Puzzle.to_dict()``), so that a record alone replays its game (the error
            taxonomy does); empty in records written before it was added.
    """

    seed: int
    episode: int
    n: int
    comm_mode: str
    max_steps: int
    success: bool
    turns: int
    placed: int
    rejected: int
    illegal: int
    rule_inconsistent: int
    shares: int
    asks: int
    answers: int
    passes: int
    verifier_interventions: int
    actions: tuple[str, ...]
    outcomes: tuple[str, ...]
    agent_infos: dict[str, Any] = field(default_factory=dict)
    puzzle: dict[str, Any] = field(default_factory=dict)

    @property
    def infos(self) -> dict[str, Any]:
        """What each agent's policy reported (LLM policies: tokens, fallbacks, transport), by agent."""
        return self.agent_infos

    @property
    def partial_success(self) -> float:
        """Objects placed, as a share of all objects."""
        return self.placed / self.n

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["actions"], out["outcomes"] = list(self.actions), list(self.outcomes)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeRecord:
        """The record ``data`` holds (e.g. a JSON line); a ValueError names a missing or mistyped field."""
        record = cls(**checked_fields(cls, data))
        if record.comm_mode not in COMM_MODES:
            raise ValueError(f"comm_mode must be one of {COMM_MODES}, got {record.comm_mode!r}")
        if len(record.actions) != record.turns or len(record.outcomes) != record.turns:
            raise ValueError(
                f"actions and outcomes must hold one entry per turn ({record.turns}), "
                f"got {len(record.actions)} and {len(record.outcomes)}"
            )
        bad = next((o for o in record.outcomes if o not in OUTCOMES), None)
        if bad is not None:
            raise ValueError(f"outcomes must be among {OUTCOMES}, got {bad!r}")
        if record.placed > record.n:
            raise ValueError(f"placed must be at most n ({record.n}), got {record.placed}")
        return record


def rule_inconsistent_actions(game: State) -> int:
    """How many of ``game``'s actions the reasoning verifier rejects, each judged on the game as it was
    (replayed from the start); illegal actions count too."""
    replay = new_game(game.puzzle, game.comm_mode, game.max_steps)
    count = 0
    for event in game.history:
        if rational_reason(replay, event.action):
            count += 1
        replay.play(event.action)
    return count


def _interventions(infos: Mapping[str, Any]) -> int:
    total = 0
    for info in infos.values():
        value = info.get("verifier_interventions", 0) if isinstance(info, Mapping) else 0
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total += int(value)
    return total


def record_episode(env: Any, seed: int, episode: int, infos: Mapping[str, Any]) -> EpisodeRecord:
    """The record of the game an environment just finished (``infos``: what each agent's policy reported)."""
    game: State | None = getattr(env.unwrapped, "game", None)
    if game is None or not game.over:
        raise RuntimeError("the episode is not over: nothing to record")
    history = game.history
    accepted = [e.action for e in history if e.outcome == ACCEPTED]
    return EpisodeRecord(
        seed=seed,
        episode=episode,
        n=game.puzzle.n,
        comm_mode=game.comm_mode,
        max_steps=game.max_steps,
        success=game.success,
        turns=game.turn,
        placed=game.placed_count(),
        rejected=sum(e.outcome == REJECTED for e in history),
        illegal=sum(e.outcome == ILLEGAL for e in history),
        rule_inconsistent=rule_inconsistent_actions(game),
        shares=sum(isinstance(a, Share) for a in accepted),
        asks=sum(isinstance(a, Ask) for a in accepted),
        answers=sum(isinstance(a, Answer) for a in accepted),
        passes=sum(isinstance(a, Pass) for a in accepted),
        verifier_interventions=_interventions(infos),
        actions=tuple(e.action.text() for e in history),
        outcomes=tuple(e.outcome for e in history),
        agent_infos={agent: dict(info) for agent, info in infos.items()},
        puzzle=game.puzzle.to_dict(),
    )


METRICS: dict[str, str] = {
    "success_rate": "games won (every object in its goal bin) / games",
    "steps": "mean turns of the games won (undefined without a win)",
    "partial_success": "mean share of the objects in their goal bins at the end",
    "rejected_placements": "rejected placements per game",
    "illegal_actions": "actions the rules do not allow, per game",
    "rule_inconsistent": "actions the reasoning verifier rejects, per game",
    "shares": "accepted shares per game",
    "asks": "accepted asks per game",
    "answers": "accepted answers per game",
    "verifier_interventions": "verifier interventions per game (from the policies' infos)",
}


def compute_metrics(records: Sequence[EpisodeRecord]) -> dict[str, float]:
    """The metrics of :data:`METRICS` over ``records`` (NaN where undefined: no records, or no win for
    ``steps``)."""
    records = list(records)
    return {
        "success_rate": mean([float(r.success) for r in records]),
        "steps": mean([float(r.turns) for r in records if r.success]),
        "partial_success": mean([r.partial_success for r in records]),
        "rejected_placements": mean([float(r.rejected) for r in records]),
        "illegal_actions": mean([float(r.illegal) for r in records]),
        "rule_inconsistent": mean([float(r.rule_inconsistent) for r in records]),
        "shares": mean([float(r.shares) for r in records]),
        "asks": mean([float(r.asks) for r in records]),
        "answers": mean([float(r.answers) for r in records]),
        "verifier_interventions": mean([float(r.verifier_interventions) for r in records]),
    }
