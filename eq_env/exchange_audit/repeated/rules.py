"""The rules of the repeated exchange–audit game: the same proposer and validator play round after round of the
one-shot game, and an audit policy sets each round's audit intensity from the public record.

Nothing here knows PettingZoo. A round *is* a one-shot episode, played by the one-shot rules
(:class:`~eq_env.exchange_audit.rules.ExchangeAuditGame`: ``sample_state``, ``observe_state``, ``run_audit``,
``payoffs``); this module adds what lies between rounds:

* **the horizon**: after each round the game goes on with probability δ (``continuation``), for at most T
  rounds (``rounds``). δ = 1 plays exactly T rounds; δ < 1 is a geometric horizon (expected length
  (1 − δ^T)/(1 − δ)), truncated at T.
* **the public record** (:class:`Reputation`): the audits so far, each read as a :class:`Verdict` —
  *clean* (audited, every check passed, and the audit did not reveal that a requested trade is non-compliant),
  *failed* (a check failed; or the audit revealed that the requested trade is non-compliant: its reported
  numbers were shaded; or a request withheld the claims the audit needs, so that it came out inconclusive and
  the request was blocked as a failed one is) or *none* (not audited; a NO_TRADE's inconclusive audit; any
  audit under a budget B ≤ 0, which checks nothing). Without the third case a liar would shade its numbers
  and omit its claims: the same round payoff as shading with true claims, and never a failed audit for a
  trigger or a reset to punish. Requests, decisions and payoffs of every round are public too
  (:attr:`RepeatedGame.history`).
* **the audit policy** (``audit_policy``), which sets the round's intensity q_t from the record:

  ``fixed``    q_t = q (the stage game's q): every round is the one-shot game.
  ``decay``    q_t = max(q_min, q·γ^c), c the clean audits so far (since the last failed one with
               ``reset_on_fail``): a reputation for clean audits earns fewer audits.
  ``trigger``  q_t = q, but q_punish (default 1) in the ``punish_rounds`` rounds after a failed audit (default:
               for ever, a grim trigger); a failed audit during the punishment starts it again.

A failed audit costs the proposer what the stage game says (L on a failed check; a shaded request is blocked)
and, through the policy, its future audit intensity; the validator pays c for every audit, as in the stage game.

Randomness (:class:`RoundDraws`): round 0 of episode i draws what episode i of the one-shot game of the same seed
draws, so T = 1, or δ = 0, is the one-shot game episode by episode (same positions, audits, decisions and
payoffs); rounds 1, 2, … of episode i draw from a stream of their own, seeded from the seed and i, and so do
the continuation coins: any episode can be played alone, and draws what it draws whatever came before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, ClassVar

import numpy as np

from eq_env.core.config import GameConfig, UnknownParameterError, choice, flag, number
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.rules import (
    AuditOutcome,
    AuditRecord,
    Decision,
    DrawStream,
    EpisodeDraws,
    EpisodeOutcome,
    ExchangeAuditGame,
    Payoffs,
    ProposerAction,
    Submission,
)

__all__ = [
    "AUDIT_POLICIES",
    "FOREVER",
    "MAX_ROUNDS",
    "PRESETS",
    "RepeatedConfig",
    "RepeatedGame",
    "Reputation",
    "RoundDraws",
    "RoundRecord",
    "Verdict",
    "audit_intensity",
    "audit_verdict",
    "next_reputation",
]

AUDIT_POLICIES = ("fixed", "decay", "trigger")
MAX_ROUNDS = 100_000
FOREVER = -1  # Reputation.punish_left of a grim trigger's punishment
# Spawn keys of the seed's streams beyond the one-shot game's (which uses 0-3): arbitrary but fixed, since
# changing them changes every repeated-game result.
LATER_ROUNDS_KEY = (14, 1, 1)
CONTINUATION_KEY = (14, 1, 2)


@dataclass(frozen=True)
class RepeatedConfig(GameConfig):
    """The repeated game: a stage game (:class:`ExchangeAuditConfig`) plus the horizon and the audit policy.

    The stage game's fields are this configuration's too: ``RepeatedConfig(rounds=5).replace(q=0.5, V=2)``,
    ``from_preset("paper_scripted", L=1, audit_policy="decay")`` and the CLI's ``--q`` reach the stage game.
    The stage game's ``q`` is the base intensity q (q₀ of the decay policy). :meth:`to_dict` is flat (the stage
    game's fields, then these).
    """

    NAME: ClassVar[str] = "exchange-audit-repeated"
    DEFAULT_PRESET: ClassVar[str] = "paper"

    stage: ExchangeAuditConfig = field(
        default=ExchangeAuditConfig(), metadata={"doc": "the stage game each round plays (its q is the base q)"}
    )
    rounds: int = number(10, 1, MAX_ROUNDS, "T: rounds per episode (the cap of a geometric horizon)", integer=True)
    continuation: float = number(
        1.0, 0.0, 1.0, "δ: after each round the game goes on with this probability (1: exactly T rounds)"
    )
    audit_policy: str = choice(
        "fixed",
        AUDIT_POLICIES,
        "how each round's q is set: fixed (q), decay (max(q_min, q·gamma^clean audits)), "
        "trigger (q_punish after a failed audit)",
    )
    gamma: float = number(0.8, 0.0, 1.0, "decay policy: q shrinks by this factor per clean audit")
    q_min: float = number(0.0, 0.0, 1.0, "decay policy: the floor of q")
    reset_on_fail: bool = flag(False, "a failed audit sets the clean-audit count (the decay's reputation) back to 0")
    q_punish: float = number(1.0, 0.0, 1.0, "trigger policy: q in the rounds after a failed audit")
    punish_rounds: int | None = number(
        None,
        1,
        MAX_ROUNDS,
        "trigger policy: rounds of punishment after a failed audit (forever: to the end)",
        integer=True,
        none="forever",
    )

    def validate(self) -> None:
        if not isinstance(self.stage, ExchangeAuditConfig):
            raise ValueError(f"stage must be an ExchangeAuditConfig, got {type(self.stage).__name__}")
        if self.audit_policy == "decay" and self.q_min > self.stage.q:
            raise ValueError(
                f"q_min ({self.q_min:g}) must not exceed q ({self.stage.q:g}): the decay policy starts at q "
                "and decays towards q_min"
            )

    # -- the stage game's fields are this configuration's too ------------------------------------------
    @classmethod
    def own_field_names(cls) -> tuple[str, ...]:
        """The fields of the repeated game itself (not the stage game's)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "stage")

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return (*ExchangeAuditConfig.field_names(), *cls.own_field_names())

    @classmethod
    def parameters(cls) -> tuple[dataclasses.Field[Any], ...]:
        own = tuple(f for f in dataclasses.fields(cls) if f.name != "stage")
        return (*ExchangeAuditConfig.parameters(), *own)

    def replace(self, **overrides: Any) -> RepeatedConfig:
        """A copy with some fields changed (the stage game's included); unknown names raise
        :class:`~eq_env.core.config.UnknownParameterError` (a ``TypeError`` and a ``ValueError``)."""
        stage_fields = set(ExchangeAuditConfig.field_names())
        unknown = set(overrides) - stage_fields - set(self.own_field_names()) - {"stage"}
        if unknown:
            raise UnknownParameterError(
                f"unknown {self.NAME} parameter(s) {sorted(unknown)}; valid names: {', '.join(self.field_names())}"
            )
        stage = overrides.pop("stage", self.stage)
        if isinstance(stage, Mapping):
            stage = ExchangeAuditConfig.from_dict(stage)
        stage_changes = {k: overrides.pop(k) for k in list(overrides) if k in stage_fields}
        if stage_changes:
            stage = stage.replace(**stage_changes) if isinstance(stage, ExchangeAuditConfig) else stage
        return dataclasses.replace(self, stage=stage, **overrides)

    def to_dict(self) -> dict[str, Any]:
        """The stage game's fields (as its own ``to_dict``), then the repeated game's."""
        return {**self.stage.to_dict(), **{name: getattr(self, name) for name in self.own_field_names()}}

    # -- derived ---------------------------------------------------------------------------------------
    @property
    def q(self) -> float:
        """The base audit intensity q (the stage game's)."""
        return self.stage.q

    def stage_with(self, q: float) -> ExchangeAuditConfig:
        """The stage game a round of intensity ``q`` plays."""
        return self.stage if q == self.stage.q else self.stage.replace(q=q)


PRESETS: dict[str, RepeatedConfig] = {
    name: RepeatedConfig(stage=ExchangeAuditConfig.from_preset(name))
    for name in ("paper", "paper_main_script", "paper_scripted")
}
RepeatedConfig.PRESETS = PRESETS


# ---------------------------------------------------------------------------
# The public record and the audit policies
# ---------------------------------------------------------------------------
class Verdict(IntEnum):
    """What a round's audit says about the proposer, as the public record keeps it."""

    NONE = 0  # not audited, or inconclusive without a request (claims missing) or under a budget of 0
    CLEAN = 1  # audited: every check passed, and no request for a non-compliant trade revealed
    FAILED = 2  # audited: a check failed, the requested trade revealed non-compliant, or a request's claims withheld


@dataclass(frozen=True, slots=True)
class Reputation:
    """The public record an audit policy reads, at the start of a round."""

    clean: int = 0  # clean audits so far (since the last failed one, with reset_on_fail)
    failed: int = 0  # failed audits so far
    punish_left: int = 0  # trigger policy: punished rounds left, this one included (FOREVER: to the end)

    @property
    def punished(self) -> bool:
        return self.punish_left != 0


def audit_verdict(submission: Submission, audit: AuditRecord, checks_per_audit: int) -> Verdict:
    """A round's verdict (:class:`Verdict`) under a budget of ``checks_per_audit`` checks per audit. A request
    whose audit passes but reveals the trade non-compliant has misreported its numbers (the audit checks claims,
    not numbers): that audit failed too; so did a request's audit left inconclusive by missing claims (with a
    budget B > 0 nothing else leaves it so), which the validator blocks as it blocks a failed one."""
    request = submission.action is ProposerAction.REQUEST_APPROVAL
    if audit.outcome is AuditOutcome.FAIL:
        return Verdict.FAILED
    if audit.outcome is AuditOutcome.INCONCLUSIVE:
        return Verdict.FAILED if request and checks_per_audit > 0 else Verdict.NONE
    if audit.outcome is not AuditOutcome.PASS:
        return Verdict.NONE
    if request and audit.revealed_compliant is False:
        return Verdict.FAILED
    return Verdict.CLEAN


def audit_intensity(config: RepeatedConfig, reputation: Reputation) -> float:
    """The round's q under the configuration's audit policy (module docstring)."""
    policy = config.audit_policy
    if policy == "decay":
        return max(config.q_min, config.q * config.gamma**reputation.clean)
    if policy == "trigger" and reputation.punished:
        return config.q_punish
    return config.q


def next_reputation(config: RepeatedConfig, reputation: Reputation, verdict: Verdict) -> Reputation:
    """The record after a round with ``verdict``."""
    punish = reputation.punish_left
    if punish > 0:
        punish -= 1  # this round's punishment is served
    failed = verdict is Verdict.FAILED
    if failed and config.audit_policy == "trigger":
        punish = FOREVER if config.punish_rounds is None else config.punish_rounds
    clean = reputation.clean + (verdict is Verdict.CLEAN)
    if failed and config.reset_on_fail:
        clean = 0
    return Reputation(clean=clean, failed=reputation.failed + failed, punish_left=punish)


# ---------------------------------------------------------------------------
# Randomness
# ---------------------------------------------------------------------------
def _child_seed(entropy: int, key: tuple[int, ...]) -> int:
    return int(np.random.SeedSequence(entropy, spawn_key=key).generate_state(1, dtype=np.uint64)[0])


class RoundDraws:
    """Seeded source of every round's :class:`EpisodeDraws` and continuation coin (module docstring).

    Round 0 of episode i is episode i of ``DrawStream(seed)`` (read in order, skipped forward on a jump); rounds
    t ≥ 1 of episode i are episodes t − 1 of a :class:`DrawStream` of their own, seeded from (seed, i), and the
    coin deciding whether round t is played is uniform number t − 1 of a generator of (seed, i) too. An episode
    thus draws the same numbers whatever was played before it, and a short episode skips nothing.
    """

    def __init__(self, seed: int | None, rounds: int) -> None:
        self.rounds = rounds
        self.first = DrawStream(seed)
        self.entropy = self.first.entropy
        self._episode = -1  # the episode whose later rounds and coins are set up
        self._later = self.first
        self._coins = np.random.Generator(np.random.PCG64(0))
        self._coins_drawn = 0

    def _own(self, episode: int) -> None:
        """The streams of ``episode``'s later rounds and coins, from their start when it changes."""
        if episode == self._episode:
            return
        self._episode = episode
        self._later = DrawStream(_child_seed(self.entropy, (*LATER_ROUNDS_KEY, episode)))
        self._coins = np.random.Generator(
            np.random.PCG64(np.random.SeedSequence(self.entropy, spawn_key=(*CONTINUATION_KEY, episode)))
        )
        self._coins_drawn = 0

    def round(self, episode: int, t: int, noisy: bool, claim_keys: int = 0) -> EpisodeDraws:
        """The draws of round ``t`` of episode ``episode`` (with noisy audits' check uniforms if ``noisy``, and
        ``claim_keys`` audit sampling keys per round for a claim schema's pool beyond four claims)."""
        if t == 0:
            if self.first.episodes_drawn > episode:  # behind: start again (DrawStream(seed) is its episode 0)
                self.first = DrawStream(self.entropy)
            self.first.skip(episode - self.first.episodes_drawn)
            stream, index = self.first, episode
        else:
            self._own(episode)
            stream, index = self._later, t - 1
            if stream.episodes_drawn != index:  # (rounds are played in order; a replay starts the stream again)
                stream = self._later = DrawStream(_child_seed(self.entropy, (*LATER_ROUNDS_KEY, episode)))
                stream.skip(index)
        draws = stream.next()
        if noisy:
            check = tuple(stream.check_noise(index, 1)[0].tolist())
            draws = EpisodeDraws(draws.state_u, draws.noise_z, draws.audit_u, check)
        if claim_keys:  # (as the one-shot environment reads them: round 0 of episode i is its episode i)
            keys = tuple(stream.claim_keys(index, 1, claim_keys)[0].tolist())
            draws = EpisodeDraws(draws.state_u, draws.noise_z, draws.audit_u, draws.check_u, keys)
        return draws

    def coin(self, episode: int, t: int) -> float:
        """The uniform that decides whether round ``t`` ≥ 1 of episode ``episode`` is played (it is iff < δ)."""
        self._own(episode)
        if self._coins_drawn > t - 1:  # (a replay: start the coins again)
            self._episode = -1
            self._own(episode)
        while self._coins_drawn < t - 1:
            self._coins.random()
            self._coins_drawn += 1
        self._coins_drawn += 1
        return float(self._coins.random())


# ---------------------------------------------------------------------------
# An episode of rounds as a small state machine
# ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RoundRecord:
    """One finished round: its index, intensity, the record before it, what happened and the verdict."""

    round: int
    q: float
    reputation: Reputation  # at the start of the round
    outcome: EpisodeOutcome
    verdict: Verdict

    @property
    def payoffs(self) -> Payoffs:
        return self.outcome.payoffs


class RepeatedGame:
    """Rounds of the one-shot game under one :class:`RepeatedConfig`: ``start`` an episode, then per round
    ``start_round`` (its draws), ``submit``, ``decide`` and ``end_round`` (its continuation coin).

    >>> game = RepeatedGame(RepeatedConfig(rounds=2))
    >>> draws = RoundDraws(0, 2)
    >>> game.start()
    >>> game.start_round(draws.round(0, 0, noisy=False))
    >>> game.q
    0.3
    """

    def __init__(self, config: RepeatedConfig) -> None:
        self.config = config
        self.stage = ExchangeAuditGame(config.stage)
        self._stages: dict[float, ExchangeAuditConfig] = {config.q: config.stage}
        self.round = 0
        self.q = config.q
        self.reputation = Reputation()
        self.history: list[RoundRecord] = []
        self.requests = 0  # rounds so far in which the proposer asked for approval
        self.approvals = 0  # rounds so far in which the validator approved
        self.over = True  # no episode yet
        self.truncated = False

    def start(self) -> None:
        """A new episode: round 0, a blank record."""
        self.round = 0
        self.reputation = Reputation()
        self.history = []
        self.requests = self.approvals = 0
        self.over = False
        self.truncated = False

    def start_round(self, draws: EpisodeDraws) -> None:
        """Set the round's q from the record and start its stage game on ``draws``."""
        if self.over:
            raise RuntimeError("the episode is over; start() the next one")
        q = self.q = audit_intensity(self.config, self.reputation)
        stage = self._stages.get(q)
        if stage is None:
            stage = self._stages[q] = self.config.stage_with(q)
        self.stage.config = stage  # (the stage game recomputes its public rules when its config changes)
        self.stage.start(draws)

    def submit(self, submission: Submission) -> AuditRecord:
        return self.stage.submit(submission)

    def decide(self, decision: Decision) -> Payoffs:
        """The validator's decision: the round's payoffs; the record takes the round's verdict."""
        result = self.stage.decide(decision)
        outcome = self.stage.outcome
        assert outcome is not None
        verdict = audit_verdict(outcome.submission, outcome.audit, self.config.stage.checks_per_audit)
        self.history.append(RoundRecord(self.round, self.q, self.reputation, outcome, verdict))
        self.requests += outcome.submission.action is ProposerAction.REQUEST_APPROVAL
        self.approvals += outcome.approved
        self.reputation = next_reputation(self.config, self.reputation, verdict)
        return result

    @property
    def needs_coin(self) -> bool:
        """Whether the end of this round takes a continuation coin (δ < 1 and rounds left under the cap)."""
        return self.config.continuation < 1.0 and self.round + 1 < self.config.rounds

    def end_round(self, coin: float | None = None) -> bool:
        """Close the round; whether another follows (``coin``: the continuation uniform, when
        :attr:`needs_coin`). At the cap the episode ends, truncated if it could have gone on (δ > 0)."""
        if self.round + 1 >= self.config.rounds:
            self.over = True
            self.truncated = 0.0 < self.config.continuation < 1.0
        elif self.config.continuation < 1.0:
            if coin is None:
                raise ValueError("this round ends with a continuation coin (δ < 1): pass it")
            self.over = not coin < self.config.continuation
        if not self.over:
            self.round += 1
        return not self.over

    @property
    def rounds_left(self) -> int:
        """Rounds left under the cap T, this one included."""
        return self.config.rounds - self.round
