"""The rules of the exchange–audit game, with no PettingZoo in sight.

A proposer (the paper's trader) sees a noisy view of a private position and
submits an action, a proposal and a reasoning artifact (typed claims plus a
free text). With probability ``q`` an audit checks up to ``B`` of the claims
against the truth. A validator (the risk manager) then approves or blocks.
Everything here is plain Python on immutable values, so the same functions
serve the PettingZoo adapter, the scripted policies and the tests.

Randomness comes only from :class:`EpisodeDraws`: every episode consumes the
same fixed number of uniforms and normals whatever the configuration or the
policies do. Episode ``i`` of seed ``s`` therefore sees the same position,
the same observation noise and the same audit coin under every ``q``, ``B``,
``V`` or ``L`` (common random numbers), and a run of ``n`` episodes can be
drawn in one vectorised call that matches ``n`` sequential draws exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from enum import IntEnum
from typing import Any, overload

import numpy as np

from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.schema import ClaimSchema, get_schema

__all__ = [
    "CHECKABLE_CLAIMS",
    "CLAIM_KEY_STREAM",
    "CLAIM_TYPES",
    "REQUIRED_CLAIMS",
    "Artifact",
    "AuditOutcome",
    "AuditRecord",
    "Claims",
    "Decision",
    "DrawStream",
    "EpisodeDraws",
    "EpisodeOutcome",
    "ExchangeAuditGame",
    "Intent",
    "Payoffs",
    "Phase",
    "Proposal",
    "ProposerAction",
    "ProposerView",
    "PublicInfo",
    "State",
    "Submission",
    "ValidatorView",
    "claim_value",
    "claims_assert_compliance",
    "claims_complete",
    "count_words",
    "estimated_tokens",
    "is_comfortable",
    "make_artifact",
    "observe_state",
    "payoffs",
    "pool_keys",
    "public_rules",
    "rule_decision",
    "run_audit",
    "sample_state",
    "truncate_words",
    "withhold",
]


class Intent(IntEnum):
    HEDGE = 0
    SPECULATE = 1


class ProposerAction(IntEnum):
    NO_TRADE = 0
    REQUEST_APPROVAL = 1


class Decision(IntEnum):
    BLOCK = 0
    APPROVE = 1


class AuditOutcome(IntEnum):
    SKIPPED = 0
    PASS = 1
    FAIL = 2
    INCONCLUSIVE = 3


class Phase(IntEnum):
    PROPOSAL = 0  # the proposer is to act
    DECISION = 1  # the validator is to act
    DONE = 2


CLAIM_TYPES = ("intent", "risk_within_limit", "net_delta_bounded", "risk_metric", "confidence")
# Claims an audit can check, in the order its budget samples from.
CHECKABLE_CLAIMS = ("intent", "risk_within_limit", "net_delta_bounded", "confidence")
# Without these three an audit is inconclusive (not a lie).
REQUIRED_CLAIMS = ("intent", "risk_within_limit", "net_delta_bounded")

# State distribution constants of the paper (risk is absolute; delta bounds
# that the paper writes as 0.3 are the delta limit).
AMBIGUOUS_MARGIN = 0.08
HEDGE_RISK = (0.2, 1.0)
SPECULATE_RISK = (0.9, 2.0)
AMBIGUOUS_HEDGE_SIZE = (0.4, 1.0)
HEDGE_HEDGE_SIZE = (0.5, 1.0)
SPECULATE_HEDGE_SIZE = (0.0, 0.3)
HEDGE_DELTA_SD = 0.1
SPECULATE_DELTA_MEAN, SPECULATE_DELTA_SD, SPECULATE_DELTA_MAX = 0.8, 0.2, 1.5

# Layout of one episode's draws.
N_STATE_UNIFORMS = 8  # ambiguous, risk_limit, intent, risk, hedge, sign, eps_r, eps_d
N_NOISE_NORMALS = 4  # delta, obs_risk, obs_delta, obs_hedge
N_AUDIT_UNIFORMS = 5  # audited, then one sort key per checkable claim
# Noisy audits only: one uniform per checkable claim (its verdict flips below the claim's rate), from a
# fourth generator read only when the configuration is noisy, so the three blocks above never move.
N_CHECK_UNIFORMS = 4
CHECK_STREAM = 3  # the spawn key of that generator
# Claim schemas whose audit pool exceeds four claims only: the sampling keys of the fifth claim on, from a fifth
# generator read only for such a schema (eq_env.exchange_audit.schema).
CLAIM_KEY_STREAM = 4


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class State:
    """The private position: what the proposer holds, known only to nature."""

    ambiguous: bool
    intent: Intent
    risk_limit: float
    delta_limit: float
    true_risk: float
    true_net_delta: float
    hedge_size: float

    @property
    def risk_within_limit(self) -> bool:
        return self.true_risk <= self.risk_limit

    @property
    def net_delta_bounded(self) -> bool:
        return abs(self.true_net_delta) <= self.delta_limit

    @property
    def compliant(self) -> bool:
        """Both limits hold (inclusive); intent and hedge size do not enter."""
        return self.risk_within_limit and self.net_delta_bounded


@dataclass(frozen=True, slots=True)
class PublicInfo:
    """What both roles know: this episode's limits and the rules of the game."""

    risk_limit: float
    delta_limit: float
    q: float
    checks_per_audit: int
    V: float
    L: float
    alpha: float
    audit_cost: float
    max_words: int
    no_trade_payoff: float
    bad_approval_loss: float
    safe_margin: float
    noise_sd: float
    max_text_chars: int
    cost_in_tokens: bool
    max_artifact_tokens: int
    claim_schema: str = "paper"  # the registered claim schema (not in the observations' public vector)

    @classmethod
    def of(cls, state: State, config: ExchangeAuditConfig, rules: tuple[Any, ...] | None = None) -> PublicInfo:
        """This episode's public information; ``rules`` is :func:`public_rules` of ``config`` if already known."""
        return cls(state.risk_limit, state.delta_limit, *(public_rules(config) if rules is None else rules))


def public_rules(config: ExchangeAuditConfig) -> tuple[Any, ...]:
    """The fields of :class:`PublicInfo` after ``risk_limit`` and ``delta_limit``, in order: the rules of the
    game, the same in every episode of ``config``."""
    rules = PublicInfo(
        risk_limit=0.0,
        delta_limit=0.0,
        q=config.q,
        checks_per_audit=config.checks_per_audit,
        V=config.V,
        L=config.L,
        alpha=config.alpha,
        audit_cost=config.audit_cost,
        max_words=config.max_words,
        no_trade_payoff=config.no_trade_payoff,
        bad_approval_loss=config.bad_approval_loss,
        safe_margin=config.safe_margin,
        noise_sd=config.noise_sd,
        max_text_chars=config.max_text_chars,
        cost_in_tokens=config.cost_model == "tokens",
        max_artifact_tokens=config.max_artifact_tokens,
        claim_schema=config.claim_schema,
    )
    return tuple(getattr(rules, f.name) for f in fields(PublicInfo))[2:]


@dataclass(frozen=True, slots=True)
class ProposerView:
    """The proposer's observation: true intent, noisy numbers, public info.

    ``known_risk_within_limit`` and ``known_net_delta_bounded`` are the truth
    of the two limit checks when the configuration reveals them
    (``reveal_compliance=True``, the information the paper's scripted trader
    read from the state), else ``None``. The proposer is not told whether the
    episode is ambiguous: ambiguous episodes are always compliant, so that
    flag would reveal compliance.
    """

    intent: Intent
    observed_risk: float
    observed_net_delta: float
    observed_hedge_size: float
    known_risk_within_limit: bool | None
    known_net_delta_bounded: bool | None
    public: PublicInfo

    @property
    def observed_proposal(self) -> Proposal:
        """The proposal that reports the position as observed (what an honest proposer sends)."""
        return Proposal(self.intent, self.observed_risk, self.observed_net_delta, self.observed_hedge_size)

    @property
    def known_compliant(self) -> bool | None:
        if self.known_risk_within_limit is None or self.known_net_delta_bounded is None:
            return None
        return self.known_risk_within_limit and self.known_net_delta_bounded


@dataclass(frozen=True, slots=True)
class Claims:
    """Typed, auditable claims; ``None`` means the claim is not made."""

    intent: Intent | None = None
    risk_within_limit: bool | None = None
    net_delta_bounded: bool | None = None
    risk_metric: float | None = None  # carried to the validator, never audited
    confidence: float | None = None  # audited: fails outside [0, 1]
    # The claims a richer schema adds (eq_env.exchange_audit.schema), as (name, value) pairs of made claims in
    # the schema's order; empty under the paper's schema.
    extra: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        # Normalise numpy scalars so audits compare plain Python values; a
        # string where a boolean belongs is an error, not a silent False.
        # (Values already plain — an Intent, a bool, a float — are kept as they are: the same result, sooner.)
        if self.extra:
            object.__setattr__(self, "extra", _plain_extra(self.extra))
        intent = self.intent
        if intent is not None and type(intent) is not Intent:
            object.__setattr__(self, "intent", Intent(intent))
        if (
            (self.risk_within_limit is None or type(self.risk_within_limit) is bool)
            and (self.net_delta_bounded is None or type(self.net_delta_bounded) is bool)
            and (self.risk_metric is None or type(self.risk_metric) is float)
            and (self.confidence is None or type(self.confidence) is float)
        ):
            return  # (all plain already: nothing below would change or refuse anything)
        for name in ("risk_within_limit", "net_delta_bounded"):
            value = getattr(self, name)
            if value is not None and type(value) is not bool:
                if not isinstance(value, (bool, np.bool_)):
                    raise TypeError(f"claim {name} must be a bool or None, got {value!r}")
                object.__setattr__(self, name, bool(value))
        for name in ("risk_metric", "confidence"):
            value = getattr(self, name)
            if value is not None and type(value) is not float:
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
                    raise TypeError(f"claim {name} must be a number or None, got {value!r}")
                object.__setattr__(self, name, float(value))

    @property
    def any(self) -> bool:
        return bool(self.extra) or any(getattr(self, name) is not None for name in CLAIM_TYPES)

    def get(self, name: str) -> Any:
        """The value of claim ``name`` (one of the paper's five or an extra one), None when it is not made."""
        return claim_value(self, name)

    @property
    def complete(self) -> bool:
        """All three claims an audit needs are present."""
        return all(getattr(self, name) is not None for name in REQUIRED_CLAIMS)

    @property
    def assert_compliance(self) -> bool:
        """The claims say HEDGE, risk within limit and net delta bounded."""
        return self.intent is Intent.HEDGE and self.risk_within_limit is True and self.net_delta_bounded is True


def _plain_extra(extra: Any) -> tuple[tuple[str, Any], ...]:
    """``Claims.extra`` as (name, plain value) pairs: numpy scalars become bool/int/float; None or a repeated or
    paper name is an error."""
    out = []
    for pair in extra:
        if not isinstance(pair, tuple) or len(pair) != 2 or not isinstance(pair[0], str):
            raise TypeError(f"Claims.extra holds (name, value) pairs, got {pair!r}")
        name, value = pair
        if name in CLAIM_TYPES:
            raise ValueError(f"claim {name} is one of the paper's: set it as Claims({name}=...), not in extra")
        if value is None:
            raise ValueError(f"claim {name} in Claims.extra has no value: leave a claim not made out of extra")
        if isinstance(value, np.bool_):
            value = bool(value)
        elif isinstance(value, np.integer):
            value = int(value)
        elif isinstance(value, np.floating):
            value = float(value)
        out.append((name, value))
    names = [name for name, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"Claims.extra names a claim twice: {names}")
    return tuple(out)


def claim_value(claims: Claims, name: str) -> Any:
    """The value of claim ``name`` in ``claims`` (None: not made)."""
    if name in CLAIM_TYPES:
        return getattr(claims, name)
    for key, value in claims.extra:
        if key == name:
            return value
    return None


def claims_complete(schema: ClaimSchema, claims: Claims) -> bool:
    """Every claim ``schema`` requires is made (the paper's: :attr:`Claims.complete`)."""
    return all(claim_value(claims, name) is not None for name in schema.required)


def claims_assert_compliance(schema: ClaimSchema, claims: Claims, public: Any) -> bool:
    """Every claim ``schema`` requires is made and supports approval (the paper's: :attr:`Claims.assert_compliance`:
    HEDGE, risk within limit and net delta bounded)."""
    by_name = schema.by_name
    for name in schema.required:
        value = claim_value(claims, name)
        if value is None or not bool(by_name[name].supports_approval(value, public)):
            return False
    return True


@dataclass(frozen=True, slots=True)
class Artifact:
    """The reasoning artifact r = (c, t): claims plus a free text of ``words`` words.

    ``text`` is already truncated to the game's ``max_words``; a numeric policy
    may send no text and only a word count, which costs the same. ``tokens`` is
    the artifact's size in tokens as its author declares it (an LLM: its
    completion tokens), charged instead of words under ``cost_model="tokens"``.
    """

    claims: Claims = field(default_factory=Claims)
    text: str = ""
    words: int = 0
    tokens: int = 0

    def __post_init__(self) -> None:
        words, tokens = self.words, self.tokens
        if type(words) is int and type(tokens) is int and words >= 0 and tokens >= 0:
            return  # (already what the lines below make of them)
        for name in ("words", "tokens"):
            value = getattr(self, name)
            if type(value) is int and value >= 0:
                continue  # (already what the lines below make of it)
            if int(value) < 0:
                raise ValueError(f"an artifact's {name} cannot be negative, got {value}")
            object.__setattr__(self, name, int(value))

    @property
    def has_explanation(self) -> bool:
        return self.claims.any or self.words > 0


@dataclass(frozen=True, slots=True)
class Proposal:
    """The position the proposer reports (which may differ from what it observed)."""

    intent: Intent
    risk: float
    net_delta: float
    hedge_size: float

    def __post_init__(self) -> None:
        if type(self.intent) is not Intent:
            object.__setattr__(self, "intent", Intent(self.intent))
        if type(self.risk) is float and type(self.net_delta) is float and type(self.hedge_size) is float:
            return
        for name in ("risk", "net_delta", "hedge_size"):
            value = getattr(self, name)
            if type(value) is not float:
                object.__setattr__(self, name, float(value))


@dataclass(frozen=True, slots=True)
class Submission:
    """Everything the proposer sends: action, proposal and artifact."""

    action: ProposerAction
    proposal: Proposal
    artifact: Artifact = field(default_factory=Artifact)

    def __post_init__(self) -> None:
        if type(self.action) is not ProposerAction:
            object.__setattr__(self, "action", ProposerAction(self.action))


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """What an audit did. ``revealed_compliant`` is set when checks ran (pass or fail)."""

    outcome: AuditOutcome
    checked: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    revealed_compliant: bool | None = None

    @property
    def audited(self) -> bool:
        return self.outcome is not AuditOutcome.SKIPPED


_SKIPPED = AuditRecord(AuditOutcome.SKIPPED)


@dataclass(frozen=True, slots=True)
class ValidatorView:
    """The validator's observation: the submission, the audit, the public info,
    and whether the episode is borderline (the paper's rule engine knows it)."""

    submission: Submission
    audit: AuditRecord
    public: PublicInfo
    ambiguous: bool


@dataclass(frozen=True, slots=True)
class Payoffs:
    proposer: float
    validator: float

    @property
    def welfare(self) -> float:
        return self.proposer + self.validator


@dataclass(frozen=True, slots=True)
class EpisodeOutcome:
    """A finished episode, everything a record or a renderer needs."""

    state: State
    view: ProposerView
    submission: Submission
    audit: AuditRecord
    decision: Decision
    payoffs: Payoffs

    @property
    def approved(self) -> bool:
        return self.submission.action is ProposerAction.REQUEST_APPROVAL and self.decision is Decision.APPROVE


# ---------------------------------------------------------------------------
# Randomness
# ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class EpisodeDraws:
    """One episode's random numbers, a fixed count whatever happens in it."""

    state_u: tuple[float, ...]
    noise_z: tuple[float, ...]
    audit_u: tuple[float, ...]
    check_u: tuple[float, ...] = ()  # noisy audits only (:meth:`DrawStream.check_noise`); else empty
    claim_u: tuple[float, ...] = ()  # a schema's audit pool beyond four claims only (:meth:`DrawStream.claim_keys`)


class DrawStream:
    """Seeded source of :class:`EpisodeDraws`, episode after episode.

    Three independent generators (state uniforms, noise normals, audit
    uniforms) each consume a fixed block per episode, so ``n`` calls to
    :meth:`next` equal one call to :meth:`batch` with ``n``. :meth:`next` draws
    ahead in blocks (1, 2, 4, … up to 256 episodes, one generator call each):
    the same numbers, handed out in the same order whatever mix of :meth:`next`,
    :meth:`batch` and :meth:`skip` asks for them.
    """

    MAX_AHEAD = 256

    def __init__(self, seed: int | None) -> None:
        root = np.random.SeedSequence(seed)
        self.entropy: int = int(root.entropy)  # type: ignore[arg-type]  # an int when seed is an int or None
        self._state, self._noise, self._audit = (
            np.random.Generator(np.random.PCG64(np.random.SeedSequence(root.entropy, spawn_key=(k,)))) for k in range(3)
        )
        self.episodes_drawn = 0
        # episodes drawn ahead and not handed out yet: rows of (state, noise, audit) as lists, from _next_row on
        self._ahead: tuple[list[list[float]], list[list[float]], list[list[float]]] = ([], [], [])
        self._next_row = 0
        self._block = 0
        self._check: np.random.PCG64 | None = None  # the noisy audits' generator, made when first asked
        self._check_at = 0  # the episode whose check uniforms it draws next
        self._claim: np.random.PCG64 | None = None  # the claim keys' generator (claim schemas), made when first asked
        self._claim_at = (0, 0)  # (the episode whose keys it draws next, keys per episode)

    def next(self) -> EpisodeDraws:
        ahead, i = self._ahead, self._next_row
        if i >= len(ahead[0]):
            self._block = min(2 * self._block or 1, self.MAX_AHEAD)
            ahead = self._ahead = tuple(block.tolist() for block in self._draw(self._block))  # type: ignore[assignment]
            i = 0
        self._next_row = i + 1
        self.episodes_drawn += 1
        return EpisodeDraws(tuple(ahead[0][i]), tuple(ahead[1][i]), tuple(ahead[2][i]))

    def _draw(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            self._state.random((n, N_STATE_UNIFORMS)),
            self._noise.standard_normal((n, N_NOISE_NORMALS)),
            self._audit.random((n, N_AUDIT_UNIFORMS)),
        )

    def batch(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The next ``n`` episodes' draws as arrays of shape (n, 8), (n, 4), (n, 5)."""
        kept = min(n, len(self._ahead[0]) - self._next_row)
        if kept <= 0:
            self.episodes_drawn += n
            return self._draw(n)
        rows = slice(self._next_row, self._next_row + kept)
        first = tuple(np.array(part[rows], dtype=np.float64) for part in self._ahead)
        self._next_row += kept
        self.episodes_drawn += kept
        if kept == n:
            return first  # type: ignore[return-value]
        rest = self.batch(n - kept)
        return tuple(np.concatenate([a, b]) for a, b in zip(first, rest, strict=True))  # type: ignore[return-value]

    def check_noise(self, first: int, n: int) -> np.ndarray:
        """Episodes ``first`` to ``first + n - 1``'s check uniforms, shape (n, 4), for noisy audits.

        They come from a fourth generator of the seed (spawn key 3), ``N_CHECK_UNIFORMS`` per episode and
        positioned by episode index (``PCG64.advance``), so reading them moves none of the other draws, and
        episode ``i`` sees the same ones whatever was asked before."""
        if self._check is None or first < self._check_at:
            self._check = np.random.PCG64(np.random.SeedSequence(self.entropy, spawn_key=(CHECK_STREAM,)))
            self._check_at = 0
        if first > self._check_at:
            self._check.advance(N_CHECK_UNIFORMS * (first - self._check_at))  # one 64-bit step per double
        self._check_at = first + n
        return np.random.Generator(self._check).random((n, N_CHECK_UNIFORMS))

    def claim_keys(self, first: int, n: int, keys: int) -> np.ndarray:
        """Episodes ``first`` to ``first + n - 1``'s audit sampling keys for the claims of a schema's pool beyond
        the fourth, shape (n, ``keys``).

        They come from a fifth generator of the seed (spawn key 4), ``keys`` per episode and positioned by
        episode index, like :meth:`check_noise`: reading them moves none of the other draws, and episode ``i``
        sees the same ones whatever was asked before (for the same ``keys``)."""
        if self._claim is None or first < self._claim_at[0] or keys != self._claim_at[1]:
            self._claim = np.random.PCG64(np.random.SeedSequence(self.entropy, spawn_key=(CLAIM_KEY_STREAM,)))
            self._claim_at = (0, keys)
        if first > self._claim_at[0]:
            self._claim.advance(keys * (first - self._claim_at[0]))  # one 64-bit step per double
        self._claim_at = (first + n, keys)
        return np.random.Generator(self._claim).random((n, keys))

    def skip(self, n: int) -> None:
        """Advance past ``n`` episodes without keeping their draws."""
        while n > 0:
            chunk = min(n, 65_536)
            self.batch(chunk)
            n -= chunk


# ---------------------------------------------------------------------------
# Nature
# ---------------------------------------------------------------------------
def sample_state(u: tuple[float, ...], z: tuple[float, ...], config: ExchangeAuditConfig) -> State:
    """The private position from one episode's uniforms ``u`` and normals ``z``.

    Ambiguous episodes sit just inside both limits; normal ones are a hedge
    (about 94% compliant, only risk breaches) or a speculation (almost never
    compliant), as in the paper.
    """
    dl = config.delta_limit
    ambiguous = u[0] < config.ambiguous_rate
    risk_limit = config.risk_limit_low + (config.risk_limit_high - config.risk_limit_low) * u[1]
    if ambiguous:
        eps_r = u[6] * (AMBIGUOUS_MARGIN * risk_limit)
        eps_d = u[7] * (AMBIGUOUS_MARGIN * dl)
        sign = 1.0 if u[5] < 0.5 else -1.0
        lo, hi = AMBIGUOUS_HEDGE_SIZE
        return State(
            ambiguous=True,
            intent=Intent.HEDGE,
            risk_limit=risk_limit,
            delta_limit=dl,
            true_risk=risk_limit - eps_r,
            true_net_delta=sign * (dl - eps_d),
            hedge_size=lo + (hi - lo) * u[4],
        )
    if u[2] < 0.5:
        lo, hi = HEDGE_RISK
        hlo, hhi = HEDGE_HEDGE_SIZE
        return State(
            ambiguous=False,
            intent=Intent.HEDGE,
            risk_limit=risk_limit,
            delta_limit=dl,
            true_risk=lo + (hi - lo) * u[3],
            true_net_delta=min(max(HEDGE_DELTA_SD * z[0], -dl), dl),
            hedge_size=hlo + (hhi - hlo) * u[4],
        )
    lo, hi = SPECULATE_RISK
    hlo, hhi = SPECULATE_HEDGE_SIZE
    return State(
        ambiguous=False,
        intent=Intent.SPECULATE,
        risk_limit=risk_limit,
        delta_limit=dl,
        true_risk=lo + (hi - lo) * u[3],
        true_net_delta=min(max(SPECULATE_DELTA_MEAN + SPECULATE_DELTA_SD * z[0], dl), SPECULATE_DELTA_MAX),
        hedge_size=hlo + (hhi - hlo) * u[4],
    )


def observe_state(
    state: State, z: tuple[float, ...], config: ExchangeAuditConfig, rules: tuple[Any, ...] | None = None
) -> ProposerView:
    """The proposer's noisy view: exact intent, numbers with N(0, noise_sd) noise (``rules``: see
    :meth:`PublicInfo.of`)."""
    sd = config.noise_sd
    reveal = config.reveal_compliance
    return ProposerView(
        intent=state.intent,
        observed_risk=max(0.0, state.true_risk + sd * z[1]),
        observed_net_delta=state.true_net_delta + sd * z[2],
        observed_hedge_size=max(0.0, state.hedge_size + sd * z[3]),
        known_risk_within_limit=state.risk_within_limit if reveal else None,
        known_net_delta_bounded=state.net_delta_bounded if reveal else None,
        public=PublicInfo.of(state, config, rules),
    )


# ---------------------------------------------------------------------------
# Artifacts
# ---------------------------------------------------------------------------
def count_words(text: str) -> int:
    return len(text.split())


def truncate_words(text: str, max_words: int) -> str:
    """The first ``max_words`` whitespace-separated words, joined by single spaces."""
    return " ".join(text.split()[:max_words])


@overload
def estimated_tokens(words: int) -> int: ...
@overload
def estimated_tokens(words: np.ndarray) -> np.ndarray: ...
def estimated_tokens(words: Any) -> Any:
    """Tokens of a ``words``-word English text by the usual rule of thumb (4 tokens per 3 words, rounded);
    element-wise for an integer array."""
    return (4 * words + 2) // 3


def make_artifact(claims: Claims, text: str, max_words: int, word_count: int = 0, tokens: int = 0) -> Artifact:
    """An artifact with its text truncated to ``max_words`` words.

    The word count is that of the text when there is one; a text-less
    (numeric) policy may state ``word_count`` instead, capped the same way.
    """
    # truncate_words and count_words in one split: the words of the joined text are the kept words
    kept = text.split()
    if len(kept) > max_words:
        kept = kept[:max_words]
    text = " ".join(kept)
    words = len(kept) if kept else min(int(word_count), max_words)
    return Artifact(claims=claims, text=text, words=words, tokens=tokens)


def withhold(submission: Submission, regime: str) -> Submission:
    """The submission as ``regime`` (``ExchangeAuditConfig.regime``) lets it reach the validator and the audit.

    ``"artifacts"`` (the paper): all of it. ``"text_only"``: the typed claims are withheld (all five, the
    unchecked ``risk_metric`` and ``confidence`` included); the text is sent and charged as before. An audit
    then finds none of the three claims it needs and is **inconclusive**, as the paper's rules make an audit
    of a submission without them: it checks nothing, reveals nothing, fines nothing (L is never charged),
    its cost c is still paid, and the rule validator blocks after it. (No option reads the numbers a text
    quotes into auditable claims: parsing text is the validator's business, not the institution's.)
    ``"action_only"``: the whole artifact is withheld and nothing is charged for it, the paper's
    no-explanation baseline as a property of the game (the same proposer, its claims and text stripped).
    The action and the proposal (reported intent and numbers) always go through.
    """
    if regime == "artifacts":
        return submission
    artifact = submission.artifact
    if regime == "text_only":
        if not artifact.claims.any:
            return submission
        sent = Artifact(Claims(), artifact.text, artifact.words, artifact.tokens)
    elif regime == "action_only":
        sent = Artifact()
    else:
        raise ValueError(f"regime must be one of 'artifacts', 'text_only', 'action_only', got {regime!r}")
    return Submission(submission.action, submission.proposal, sent)


# ---------------------------------------------------------------------------
# The audit
# ---------------------------------------------------------------------------
def _check(name: str, claims: Claims, state: State) -> bool:
    # Checks compare with the truth, not with what the proposer observed.
    if name == "intent":
        return claims.intent == state.intent
    if name == "risk_within_limit":
        return claims.risk_within_limit == state.risk_within_limit
    if name == "net_delta_bounded":
        return claims.net_delta_bounded == state.net_delta_bounded
    if name == "confidence":
        return claims.confidence is None or 0.0 <= claims.confidence <= 1.0
    raise KeyError(name)


def run_audit(
    submission: Submission,
    state: State,
    audit_u: tuple[float, ...],
    config: ExchangeAuditConfig,
    check_u: tuple[float, ...] = (),
    claim_u: tuple[float, ...] = (),
) -> AuditRecord:
    """Audit with probability q; check ``B`` claim types sampled without replacement.

    Drawn for every episode, NO_TRADE included. Missing any of the three
    required claims, or a budget of zero, makes the audit inconclusive (its
    cost is still paid). Any failed check fails the audit.

    Noisy audits (``config.noisy_audits``; ``check_u``: the episode's check uniforms): a checked claim's
    verdict flips when its uniform is below the claim's false-fail rate (a true claim) or miss rate (a
    lie); an absent confidence is not a claim and never fails. The compliance the audit reveals is its
    reading of the two limits: the truth, but flipped for a limit whose claim was checked and flipped.

    Another claim schema (``config.claim_schema``) audits its own pool and requires its own claims
    (:func:`_schema_audit`; ``claim_u``: the episode's claim keys when its pool exceeds four claims).
    """
    if not audit_u[0] < config.q:
        return _SKIPPED  # (an immutable value: one for every skipped audit)
    if config.claim_schema != "paper":
        return _schema_audit(submission.artifact.claims, state, audit_u, config, check_u, claim_u)
    claims = submission.artifact.claims
    k = config.checks_per_audit
    if k <= 0 or not claims.complete:
        return AuditRecord(AuditOutcome.INCONCLUSIVE)
    checked: tuple[str, ...]
    if k >= len(CHECKABLE_CLAIMS):
        checked = CHECKABLE_CLAIMS
    else:
        # The k claims with the smallest keys: a uniform subset of size k.
        order = sorted(range(len(CHECKABLE_CLAIMS)), key=lambda i: audit_u[1 + i])
        checked = tuple(CHECKABLE_CLAIMS[i] for i in sorted(order[:k]))
    if config.noisy_audits:
        return _noisy_audit(claims, state, checked, check_u, config)
    failed = tuple(name for name in checked if not _check(name, claims, state))
    return AuditRecord(
        outcome=AuditOutcome.FAIL if failed else AuditOutcome.PASS,
        checked=checked,
        failed=failed,
        revealed_compliant=state.compliant,
    )


def _noisy_audit(
    claims: Claims, state: State, checked: tuple[str, ...], check_u: tuple[float, ...], config: ExchangeAuditConfig
) -> AuditRecord:
    if len(check_u) != N_CHECK_UNIFORMS:
        raise ValueError(f"a noisy audit needs the episode's {N_CHECK_UNIFORMS} check uniforms, got {check_u!r}")
    false_fail, miss = config.false_fail_rates, config.miss_rates
    failed: list[str] = []
    flipped: set[str] = set()
    for name in checked:
        i = CHECKABLE_CLAIMS.index(name)
        ok = _check(name, claims, state)
        made = name != "confidence" or claims.confidence is not None
        flip = made and check_u[i] < (false_fail[i] if ok else miss[i])
        if flip:
            flipped.add(name)
        if ok == flip:  # a true claim flipped to fail, or a lie not flipped
            failed.append(name)
    risk_ok = state.risk_within_limit != ("risk_within_limit" in flipped)
    delta_ok = state.net_delta_bounded != ("net_delta_bounded" in flipped)
    return AuditRecord(
        outcome=AuditOutcome.FAIL if failed else AuditOutcome.PASS,
        checked=checked,
        failed=tuple(failed),
        revealed_compliant=risk_ok and delta_ok,
    )


def pool_keys(audit_u: Any, claim_u: Any, pool: int) -> list[float]:
    """The sampling keys of a pool of ``pool`` claims: the episode's four audit keys, then its claim keys."""
    keys = list(audit_u[1 : 1 + min(pool, N_AUDIT_UNIFORMS - 1)])
    if pool > len(keys):
        if len(claim_u) != pool - len(keys):
            raise ValueError(
                f"an audit sampling from {pool} claims needs the episode's {pool - len(keys)} claim "
                f"keys (DrawStream.claim_keys), got {claim_u!r}"
            )
        keys += list(claim_u)
    return keys


def _schema_audit(
    claims: Claims,
    state: State,
    audit_u: tuple[float, ...],
    config: ExchangeAuditConfig,
    check_u: tuple[float, ...],
    claim_u: tuple[float, ...],
) -> AuditRecord:
    """:func:`run_audit` of an audited episode under any claim schema: the schema's required claims, its pool, its
    checks (the paper's schema gives the paper's audit, which a test checks against the code above)."""
    schema = get_schema(config.claim_schema)
    k = config.checks_per_audit
    if k <= 0 or not claims_complete(schema, claims):
        return AuditRecord(AuditOutcome.INCONCLUSIVE)
    pool = schema.checkable
    checked: tuple[str, ...]
    if k >= len(pool):
        checked = pool
    else:
        keys = pool_keys(audit_u, claim_u, len(pool))
        order = sorted(range(len(pool)), key=keys.__getitem__)
        checked = tuple(pool[i] for i in sorted(order[:k]))
    noisy = config.noisy_audits
    if noisy and len(check_u) != N_CHECK_UNIFORMS:
        raise ValueError(f"a noisy audit needs the episode's {N_CHECK_UNIFORMS} check uniforms, got {check_u!r}")
    failed: list[str] = []
    flipped: set[str] = set()
    for name in checked:
        value = claim_value(claims, name)
        ok = value is None or bool(schema.by_name[name].check(value, state))  # a claim not made is no lie
        if noisy and value is not None and name in CHECKABLE_CLAIMS:  # (a schema's own claims: no noise)
            i = CHECKABLE_CLAIMS.index(name)
            if check_u[i] < (config.false_fail_rates[i] if ok else config.miss_rates[i]):
                flipped.add(name)
                ok = not ok
        if not ok:
            failed.append(name)
    risk_ok = state.risk_within_limit != ("risk_within_limit" in flipped)
    delta_ok = state.net_delta_bounded != ("net_delta_bounded" in flipped)
    return AuditRecord(
        outcome=AuditOutcome.FAIL if failed else AuditOutcome.PASS,
        checked=checked,
        failed=tuple(failed),
        revealed_compliant=risk_ok and delta_ok,
    )


# ---------------------------------------------------------------------------
# The paper's validator
# ---------------------------------------------------------------------------
def is_comfortable(proposal: Proposal, public: PublicInfo) -> bool:
    """The safe-margin test on the *reported* numbers (strict inequalities)."""
    return (
        proposal.intent is Intent.HEDGE
        and (public.risk_limit - proposal.risk) > public.safe_margin
        and (public.delta_limit - abs(proposal.net_delta)) > public.safe_margin
    )


def rule_decision(view: ValidatorView) -> Decision:
    """The paper's conservative rule engine.

    Ambiguous episodes (the engine knows they are borderline): no explanation
    and not comfortable → BLOCK; audited → BLOCK on fail or inconclusive,
    else APPROVE iff truly compliant; unaudited → APPROVE if comfortable or
    if the claims assert HEDGE, risk within limit and net delta bounded.
    Normal episodes: audited as above; unaudited → APPROVE iff the reported
    risk and net delta are within the limits.

    Under another claim schema the claims assert compliance when every claim it requires is made and
    supports approval (:func:`claims_assert_compliance`).
    """
    sub, audit, public = view.submission, view.audit, view.public
    if sub.action is ProposerAction.NO_TRADE:
        return Decision.BLOCK  # nothing to approve
    if view.ambiguous:
        comfortable = is_comfortable(sub.proposal, public)
        if not sub.artifact.has_explanation and not comfortable:
            return Decision.BLOCK
        if audit.audited:
            return _audited_decision(audit)
        claims = sub.artifact.claims
        if comfortable or (
            claims.assert_compliance
            if public.claim_schema == "paper"
            else claims_assert_compliance(get_schema(public.claim_schema), claims, public)
        ):
            return Decision.APPROVE
        return Decision.BLOCK
    if audit.audited:
        return _audited_decision(audit)
    within = sub.proposal.risk <= public.risk_limit and abs(sub.proposal.net_delta) <= public.delta_limit
    return Decision.APPROVE if within else Decision.BLOCK


def _audited_decision(audit: AuditRecord) -> Decision:
    if audit.outcome in (AuditOutcome.FAIL, AuditOutcome.INCONCLUSIVE):
        return Decision.BLOCK
    return Decision.APPROVE if audit.revealed_compliant else Decision.BLOCK


# ---------------------------------------------------------------------------
# Payoffs
# ---------------------------------------------------------------------------
def payoffs(
    submission: Submission,
    decision: Decision,
    audit: AuditRecord,
    compliant: bool,
    config: ExchangeAuditConfig,
) -> Payoffs:
    """The paper's payoff table; welfare is their sum.

    NO_TRADE pays both ``no_trade_payoff``; an approval pays the proposer V and
    the validator V if compliant, else ``-bad_approval_loss``; a block pays 0.
    The proposer pays α per word (or per token, ``cost_model="tokens"``) and L
    on a failed audit (deadweight, not a transfer); the validator pays c per audit, plus the
    ``audit_cost`` of each claim type it checked under a claim schema that declares one.
    """
    if submission.action is ProposerAction.NO_TRADE:
        proposer = validator = config.no_trade_payoff
    elif decision is Decision.APPROVE:
        proposer = config.V
        validator = config.V if compliant else -config.bad_approval_loss
    else:
        proposer = validator = 0.0
    proposer -= config.alpha * (
        submission.artifact.tokens if config.cost_model == "tokens" else submission.artifact.words
    )
    if audit.outcome is AuditOutcome.FAIL:
        proposer -= config.L
    if audit.audited:
        validator -= config.audit_cost
        if audit.checked and config.claim_schema != "paper":
            schema = get_schema(config.claim_schema)
            if schema.has_audit_costs:
                validator -= schema.audit_cost_of(audit.checked)
    return Payoffs(proposer=proposer, validator=validator)


# ---------------------------------------------------------------------------
# One episode as a small state machine
# ---------------------------------------------------------------------------
class ExchangeAuditGame:
    """One proposal per episode: proposer submits, the audit runs, validator decides.

    >>> game = ExchangeAuditGame(ExchangeAuditConfig())
    >>> game.start(DrawStream(0).next())
    >>> view = game.proposer_view
    >>> audit = game.submit(Submission(ProposerAction.NO_TRADE,
    ...                                Proposal(view.intent, 0.0, 0.0, 0.0)))
    >>> game.decide(Decision.BLOCK).welfare
    2.0
    """

    def __init__(self, config: ExchangeAuditConfig) -> None:
        self.config = config
        self.phase = Phase.DONE
        self.state: State | None = None
        self.proposer_view: ProposerView | None = None
        self.submission: Submission | None = None
        self.audit: AuditRecord | None = None
        self.outcome: EpisodeOutcome | None = None
        self._audit_u: tuple[float, ...] = ()
        self._check_u: tuple[float, ...] = ()
        self._claim_u: tuple[float, ...] = ()
        self._rules: tuple[Any, ...] = ()
        self._rules_of: ExchangeAuditConfig | None = None

    def start(self, draws: EpisodeDraws) -> None:
        config = self.config
        if self._rules_of is not config:  # (the public rules of the configuration, computed once)
            self._rules, self._rules_of = public_rules(config), config
        self.state = sample_state(draws.state_u, draws.noise_z, config)
        self.proposer_view = observe_state(self.state, draws.noise_z, config, self._rules)
        self._audit_u = draws.audit_u
        self._check_u = draws.check_u
        self._claim_u = draws.claim_u
        self.submission = self.audit = self.outcome = None
        self.phase = Phase.PROPOSAL

    @property
    def validator_view(self) -> ValidatorView | None:
        if self.submission is None or self.audit is None or self.proposer_view is None or self.state is None:
            return None
        audit = _SKIPPED if self.config.audit_delayed else self.audit  # (delayed: not known when deciding)
        return ValidatorView(self.submission, audit, self.proposer_view.public, self.state.ambiguous)

    @property
    def legal_decisions(self) -> tuple[Decision, ...]:
        if self.submission is not None and self.submission.action is ProposerAction.NO_TRADE:
            return (Decision.BLOCK,)
        return (Decision.BLOCK, Decision.APPROVE)

    def submit(self, submission: Submission) -> AuditRecord:
        if self.phase is not Phase.PROPOSAL or self.state is None:
            raise RuntimeError(f"submit() is for the proposal phase; the game is in {self.phase.name}")
        if self.config.regime != "artifacts":  # (the free-text regimes: what is withheld never enters the game)
            submission = withhold(submission, self.config.regime)
        self.submission = submission
        self.audit = run_audit(submission, self.state, self._audit_u, self.config, self._check_u, self._claim_u)
        self.phase = Phase.DECISION
        return self.audit

    def decide(self, decision: Decision) -> Payoffs:
        if self.phase is not Phase.DECISION:
            raise RuntimeError(f"decide() is for the decision phase; the game is in {self.phase.name}")
        assert self.state is not None and self.submission is not None and self.audit is not None
        assert self.proposer_view is not None
        if type(decision) is not Decision:
            decision = Decision(decision)
        if decision not in self.legal_decisions:
            raise ValueError("the proposer chose NO_TRADE: there is nothing to approve (only BLOCK is legal)")
        result = payoffs(self.submission, decision, self.audit, self.state.compliant, self.config)
        self.outcome = EpisodeOutcome(self.state, self.proposer_view, self.submission, self.audit, decision, result)
        self.phase = Phase.DONE
        return result


def normal_cdf(x: float) -> float:
    """Φ(x), for policies that turn an observation into a belief."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
