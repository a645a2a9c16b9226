"""Belief coordination's episode record and metrics: accuracy, the reward and its terms, tokens per question,
and the (T, p) the executors chose.

:class:`EpisodeRecord` is one finished question, flat and JSON-ready; :func:`record_episode` makes it from the
environment that just played it; :func:`compute_metrics` turns records into :data:`METRICS`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from eq_env.belief_coordination import rules
from eq_env.core.records import checked_fields, mean

__all__ = ["METRICS", "EpisodeRecord", "compute_metrics", "record_episode"]


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished question.

    Attributes:
        seed, episode: where it comes from (episode ``episode`` of seed ``seed``'s stream).
        qid, difficulty, answer: the question, its difficulty and its correct answer.
        n_executors, rounds: the team's size and its answering rounds (more than 1: a debate).
        temperatures, penalties: each round's (T, p) per executor, round after round.
        values: the executors' final numbers (null: no number).
        committed: the executor whose answer the coordinator committed.
        ts, al, cc, reward: the reward's terms and the shared reward.
        prompt_tokens, completion_tokens: the executors' tokens over all rounds (the coordinator's, when it
            is an LLM, are in its ``agent_infos``).
        answerer: the answerer's name; failed_answers: requests the answerer could not answer.
        agent_infos: what each agent's policy reported, by agent.
    """

    seed: int
    episode: int
    qid: str
    difficulty: float
    answer: float
    n_executors: int
    rounds: int
    temperatures: tuple[float, ...]
    penalties: tuple[float, ...]
    values: tuple[float | None, ...]
    committed: int
    ts: float
    al: float
    cc: float
    reward: float
    prompt_tokens: int
    completion_tokens: int
    answerer: str = "simulated"
    failed_answers: int = 0
    agent_infos: dict[str, Any] = field(default_factory=dict)

    @property
    def infos(self) -> dict[str, Any]:
        return self.agent_infos

    @property
    def correct(self) -> bool:
        return self.ts > 0.5

    @property
    def coordinator_tokens(self) -> int:
        info = self.agent_infos.get("coordinator")
        if not isinstance(info, Mapping):
            return 0
        total = 0
        for key in ("prompt_tokens", "completion_tokens"):
            value = info.get(key, 0)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total += int(value)
        return total

    @property
    def tokens(self) -> int:
        """Every token the question cost: the executors' and the coordinator's."""
        return self.prompt_tokens + self.completion_tokens + self.coordinator_tokens

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("temperatures", "penalties", "values"):
            out[key] = list(out[key])
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeRecord:
        """The record ``data`` holds (e.g. a JSON line); a ValueError names a missing or mistyped field."""
        record = cls(**checked_fields(cls, data))
        expected = record.n_executors * record.rounds
        if len(record.temperatures) != expected or len(record.penalties) != expected:
            raise ValueError(f"temperatures and penalties must hold n_executors x rounds = {expected} entries")
        if len(record.values) != record.n_executors:
            raise ValueError(f"values must hold one entry per executor ({record.n_executors})")
        if not 0 <= record.committed < record.n_executors:
            raise ValueError(f"committed must be an executor's index in [0, {record.n_executors})")
        return record


def record_episode(env: Any, seed: int, episode: int, infos: Mapping[str, Any]) -> EpisodeRecord:
    """The record of the question an environment just finished (``infos``: what each agent's policy reported)."""
    game = env.unwrapped
    if getattr(game, "committed", None) is None:
        raise RuntimeError("the episode is not over: nothing to record")
    replies = [a for round_ in game.replies for a in round_]
    return EpisodeRecord(
        seed=seed,
        episode=episode,
        qid=game.question.qid,
        difficulty=float(game.question.difficulty),
        answer=float(game.question.answer),
        n_executors=game.config.n_executors,
        rounds=game.config.rounds,
        temperatures=tuple(float(t) for row in game.temperatures for t in row),
        penalties=tuple(float(p) for row in game.penalties for p in row),
        values=tuple(None if a.value is None else float(a.value) for a in game.replies[-1]),
        committed=int(game.committed),
        ts=game.terms["ts"],
        al=game.terms["al"],
        cc=game.terms["cc"],
        reward=float(game.reward),
        prompt_tokens=sum(a.prompt_tokens for a in replies),
        completion_tokens=sum(a.completion_tokens for a in replies),
        answerer=str(getattr(game.answerer, "name", type(game.answerer).__name__)),
        failed_answers=sum(a.failed for a in replies),
        agent_infos={agent: dict(info) for agent, info in infos.items()},
    )


METRICS: dict[str, str] = {
    "accuracy": "questions whose committed answer is correct (TS) / questions",
    "reward": "mean shared reward 0.5 TS + 0.3 AL + 0.2 CC (with the configured weights)",
    "alignment": "mean AL: share of executors agreeing with the commitment",
    "contribution": "mean CC: share of executors whose answer is correct",
    "unanimity": "questions on which every executor gave the same number / questions",
    "no_answer": "share of executor replies with no number",
    "tokens": "tokens per question (executors over all rounds, plus an LLM coordinator's)",
    "temperature": "mean temperature chosen",
    "penalty": "mean repetition penalty chosen",
    "failed_answers": "answerer requests that failed, per question",
}


def compute_metrics(records: Sequence[EpisodeRecord]) -> dict[str, float]:
    """The metrics of :data:`METRICS` over ``records`` (NaN with no records)."""
    records = list(records)

    def unanimous(r: EpisodeRecord) -> bool:
        first = r.values[0]
        if first is None or any(v is None for v in r.values):
            return False
        return bool(rules.equal(np.array(r.values, dtype=float), np.full(len(r.values), first)).all())

    return {
        "accuracy": mean([r.ts for r in records]),
        "reward": mean([r.reward for r in records]),
        "alignment": mean([r.al for r in records]),
        "contribution": mean([r.cc for r in records]),
        "unanimity": mean([float(unanimous(r)) for r in records]),
        "no_answer": mean([sum(v is None for v in r.values) / r.n_executors for r in records]),
        "tokens": mean([float(r.tokens) for r in records]),
        "temperature": mean([math.fsum(r.temperatures) / len(r.temperatures) for r in records]),
        "penalty": mean([math.fsum(r.penalties) / len(r.penalties) for r in records]),
        "failed_answers": mean([float(r.failed_answers) for r in records]),
    }
