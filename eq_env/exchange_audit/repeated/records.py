"""The repeated game's episode record and metrics.

:class:`RepeatedEpisodeRecord` is one finished episode (all its rounds), flat and JSON-ready: totals, and per
round its q, verdict, action, decision and payoffs. :func:`compute_metrics` computes :data:`METRICS` from
records; rates are per round (every round of every episode counts once) unless they say otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from eq_env.core.records import mean
from eq_env.exchange_audit.env import PROPOSER, VALIDATOR
from eq_env.exchange_audit.records import EpisodeRecord
from eq_env.exchange_audit.repeated.rules import RepeatedGame, Verdict
from eq_env.exchange_audit.rules import EpisodeOutcome, ProposerAction

__all__ = ["METRICS", "RepeatedEpisodeRecord", "compute_metrics", "misreported", "record_episode"]


def misreported(outcome: EpisodeOutcome, record: EpisodeRecord | None = None) -> bool:
    """A request that misreports: its reported position differs from the observed one (the one-shot record's
    ``misreported``) or it states a false claim — what the best-response searches count as a lie."""
    if outcome.submission.action is not ProposerAction.REQUEST_APPROVAL:
        return False
    record = record if record is not None else EpisodeRecord.from_outcome(outcome, 0, 0)
    claims, state = outcome.submission.artifact.claims, outcome.state
    false_claim = (
        (claims.intent is not None and claims.intent != state.intent)
        or (claims.risk_within_limit is not None and claims.risk_within_limit != state.risk_within_limit)
        or (claims.net_delta_bounded is not None and claims.net_delta_bounded != state.net_delta_bounded)
    )
    return record.misreported or false_claim


@dataclass(frozen=True)
class RepeatedEpisodeRecord:
    """One finished episode of the repeated game."""

    seed: int
    episode: int
    rounds: int
    truncated: bool
    requests: int
    approvals: int
    bad_approvals: int  # approved and non-compliant
    noncompliant: int  # rounds whose position was non-compliant
    misreports: int  # requests that misreport (:func:`misreported`)
    noncompliant_misreports: int  # of them, in a round whose position was non-compliant
    audits: int
    clean_audits: int
    failed_audits: int
    audit_cost: float  # what the validator paid for audits
    welfare: float  # summed over rounds
    proposer_payoff: float
    validator_payoff: float
    round_q: tuple[float, ...]
    round_verdict: tuple[str, ...]
    round_action: tuple[str, ...]
    round_decision: tuple[str, ...]
    round_proposer_payoff: tuple[float, ...]
    round_validator_payoff: tuple[float, ...]
    proposer_info: dict[str, Any] | None = None
    validator_info: dict[str, Any] | None = None
    # the agent whose action, forbidden by its mask, ended the episode before its horizon (the environment's
    # illegal_actions="terminate"); None in every episode the runner plays (it never sends one)
    illegal_action: str | None = None

    @property
    def infos(self) -> dict[str, dict[str, Any]]:
        return {a: i for a, i in ((PROPOSER, self.proposer_info), (VALIDATOR, self.validator_info)) if i}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RepeatedEpisodeRecord:
        """The record ``data`` holds (e.g. a JSON line); a ValueError names a missing or mistyped field."""
        from eq_env.core.records import checked_fields

        return cls(**checked_fields(cls, data))

    @classmethod
    def from_game(
        cls,
        game: RepeatedGame,
        seed: int,
        episode: int,
        proposer_info: dict[str, Any] | None = None,
        validator_info: dict[str, Any] | None = None,
    ) -> RepeatedEpisodeRecord:
        rounds = game.history
        stage = [EpisodeRecord.from_outcome(r.outcome, seed, episode) for r in rounds]
        lies = [misreported(r.outcome, s) for r, s in zip(rounds, stage, strict=True)]
        cost = [game.config.stage.audit_cost * r.outcome.audit.audited for r in rounds]
        return cls(
            seed=seed,
            episode=episode,
            rounds=len(rounds),
            truncated=game.truncated,
            requests=sum(s.proposer_action == "REQUEST_APPROVAL" for s in stage),
            approvals=sum(s.approved for s in stage),
            bad_approvals=sum(s.approved and not s.compliant for s in stage),
            noncompliant=sum(not s.compliant for s in stage),
            misreports=sum(lies),
            noncompliant_misreports=sum(lie and not s.compliant for lie, s in zip(lies, stage, strict=True)),
            audits=sum(s.audited for s in stage),
            clean_audits=sum(r.verdict is Verdict.CLEAN for r in rounds),
            failed_audits=sum(r.verdict is Verdict.FAILED for r in rounds),
            audit_cost=math.fsum(cost),
            welfare=math.fsum(s.welfare for s in stage),
            proposer_payoff=math.fsum(s.proposer_payoff for s in stage),
            validator_payoff=math.fsum(s.validator_payoff for s in stage),
            round_q=tuple(r.q for r in rounds),
            round_verdict=tuple(r.verdict.name for r in rounds),
            round_action=tuple(s.proposer_action for s in stage),
            round_decision=tuple(s.decision for s in stage),
            round_proposer_payoff=tuple(s.proposer_payoff for s in stage),
            round_validator_payoff=tuple(s.validator_payoff for s in stage),
            proposer_info=proposer_info,
            validator_info=validator_info,
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for name, value in out.items():
            if isinstance(value, tuple):
                out[name] = list(value)
        if self.illegal_action is None:
            del out["illegal_action"]  # (legal play's records: as they were)
        return out


def record_episode(env: Any, seed: int, episode: int, infos: Mapping[str, Any]) -> RepeatedEpisodeRecord:
    """The record of the episode a raw environment just finished (``infos``: what each agent's policy
    reported)."""
    game, illegal = env.game, getattr(env, "illegal_action", None)
    if not game.over and illegal is None:
        raise RuntimeError("the episode is not over: no outcome to record")
    record = RepeatedEpisodeRecord.from_game(game, seed, episode, infos.get(PROPOSER), infos.get(VALIDATOR))
    return record if illegal is None else replace(record, illegal_action=illegal)


METRICS: dict[str, str] = {
    "rounds": "mean rounds per episode",
    "welfare": "mean welfare per round",
    "episode_welfare": "mean welfare per episode (summed over its rounds)",
    "proposer_payoff": "mean proposer payoff per round",
    "validator_payoff": "mean validator payoff per round",
    "approval_rate": "approved / rounds",
    "bad_approval_rate": "approved and non-compliant / rounds",
    "request_rate": "REQUEST_APPROVAL / rounds",
    "misreport_rate": "misreported requests (numbers, intent or a false claim) / rounds",
    "noncompliant_misreport_rate": "misreported requests in non-compliant rounds / non-compliant rounds",
    "audit_rate": "audited / rounds",
    "audit_cost": "audit cost the validator paid per round",
    "mean_q": "mean audit intensity q_t over rounds",
    "clean_audit_rate": "clean audits / audited rounds",
    "failed_audit_rate": "failed audits / audited rounds",
}


def compute_metrics(records: Sequence[RepeatedEpisodeRecord]) -> dict[str, float]:
    """The metrics of :data:`METRICS` over ``records`` (NaN where undefined)."""
    rounds = sum(r.rounds for r in records)
    audits = sum(r.audits for r in records)
    noncompliant = sum(r.noncompliant for r in records)

    def per_round(total: float) -> float:
        return total / rounds if rounds else math.nan

    return {
        "rounds": mean([r.rounds for r in records]),
        "welfare": per_round(math.fsum(r.welfare for r in records)),
        "episode_welfare": mean([r.welfare for r in records]),
        "proposer_payoff": per_round(math.fsum(r.proposer_payoff for r in records)),
        "validator_payoff": per_round(math.fsum(r.validator_payoff for r in records)),
        "approval_rate": per_round(sum(r.approvals for r in records)),
        "bad_approval_rate": per_round(sum(r.bad_approvals for r in records)),
        "request_rate": per_round(sum(r.requests for r in records)),
        "misreport_rate": per_round(sum(r.misreports for r in records)),
        "noncompliant_misreport_rate": sum(r.noncompliant_misreports for r in records) / noncompliant
        if noncompliant
        else math.nan,
        "audit_rate": per_round(audits),
        "audit_cost": per_round(math.fsum(r.audit_cost for r in records)),
        "mean_q": per_round(math.fsum(q for r in records for q in r.round_q)),
        "clean_audit_rate": sum(r.clean_audits for r in records) / audits if audits else math.nan,
        "failed_audit_rate": sum(r.failed_audits for r in records) / audits if audits else math.nan,
    }
