"""How claims, proposals and audits are encoded in Gymnasium spaces.

Each role's observation and action is a flat :class:`gymnasium.spaces.Dict`
of Discrete / MultiDiscrete / MultiBinary / Box entries, plus one free-text
entry. Without that entry an observation is what SB3's ``MultiInputPolicy``
takes; SB3 accepts neither a text entry nor a Dict action, so RL training goes
through single-agent views that drop the text and flatten the action.
:class:`ExchangeAuditSpaces` builds the spaces once per configuration and
converts both ways between these dicts and the typed values of
:mod:`eq_env.exchange_audit.rules`, validating actions with errors that name
the offending field.

Claims ride in two entries: ``claims``, a ``MultiDiscrete([3, 3, 3, 2, 2])``
saying which claim is made and, for the categorical ones, its value, and
``claim_values``, the two numeric claims' values (read only when present):

==================== ============================================= ===============
claim                ``claims[i]``                                 value
==================== ============================================= ===============
intent               0 absent, 1 HEDGE, 2 SPECULATE
risk_within_limit    0 absent, 1 true, 2 false
net_delta_bounded    0 absent, 1 true, 2 false
risk_metric          0 absent, 1 present                           claim_values[0]
confidence           0 absent, 1 present                           claim_values[1]
==================== ============================================= ===============

Another claim schema (``claim_schema``, :mod:`eq_env.exchange_audit.schema`) appends its own claim types to
both entries, in its order: a ``bool`` or ``conditional`` claim as 0 absent, 1 true, 2 false; an ``enum``
as 0 absent, then 1 + its label's index; a ``number`` or ``interval`` as 0 absent, 1 present, its value
(an interval's centre) in the next slot of ``claim_values``. ``audit_checked`` and ``audit_failed`` then
run over its audit pool, and both observations carry one more entry, ``claim_schema``: the schema's name
(a text), which the typed decoders read. The paper's schema adds nothing: its spaces are those above.

Numbers are float64 so that the rule engine's margins are computed on exactly
the values the proposer reported. Observed numbers outside the Box bounds
(only possible with a very large ``noise_sd``) are clipped into them.
"""

from __future__ import annotations

import dataclasses
import string
import unicodedata
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.rules import (
    CHECKABLE_CLAIMS,
    CLAIM_TYPES,
    Artifact,
    AuditOutcome,
    AuditRecord,
    Claims,
    Decision,
    Intent,
    Phase,
    Proposal,
    ProposerAction,
    ProposerView,
    PublicInfo,
    Submission,
    ValidatorView,
    claim_value,
    make_artifact,
)
from eq_env.exchange_audit.schema import PAPER, ClaimSchema, get_schema

__all__ = [
    "NUMBER_BOUNDS",
    "PUBLIC_FIELDS",
    "ActionError",
    "BoundedBox",
    "ExchangeAuditSpaces",
    "FastDict",
    "FastDiscrete",
    "FastMultiDiscrete",
    "FreeText",
    "decode_proposer_observation",
    "decode_public",
    "decode_validator_observation",
    "encode_claims",
    "encode_submission",
]

# Bounds of the reported / observed numbers: (risk, net_delta, hedge_size).
NUMBER_BOUNDS = (np.array([0.0, -3.0, 0.0]), np.array([4.0, 3.0, 3.0]))
NUMBER_NAMES = ("risk", "net_delta", "hedge_size")
# Bounds of (risk_metric, confidence); confidence may leave [0, 1], which fails an audit.
CLAIM_VALUE_BOUNDS = (np.array([0.0, -1.0]), np.array([4.0, 2.0]))
CLAIM_VALUE_NAMES = ("risk_metric", "confidence")
CLAIM_NVEC = (3, 3, 3, 2, 2)

# The public vector: PublicInfo's fields in order; ``ambiguous`` travels as its own Discrete entry, the claim
# schema's name as its own text entry (only when it is not the paper's).
PUBLIC_FIELDS = tuple(f.name for f in dataclasses.fields(PublicInfo) if f.name != "claim_schema")
_PUBLIC_BOUNDS = {
    "risk_limit": (0.0, 3.0),
    "delta_limit": (0.0, 1.5),
    "q": (0.0, 1.0),
    "checks_per_audit": (0.0, 4.0),
    "V": (0.0, 1e6),
    "L": (0.0, 1e6),
    "alpha": (0.0, 1e3),
    "audit_cost": (0.0, 1e6),
    "max_words": (0.0, 1e4),
    "no_trade_payoff": (-1e6, 1e6),
    "bad_approval_loss": (0.0, 1e6),
    "safe_margin": (0.0, 1.0),
    "noise_sd": (0.0, 1.0),
    "max_text_chars": (1.0, 1e7),
    "cost_in_tokens": (0.0, 1.0),
    "max_artifact_tokens": (0.0, 1e6),
}
_PUBLIC_LOW = np.array([_PUBLIC_BOUNDS[f][0] for f in PUBLIC_FIELDS])
_PUBLIC_HIGH = np.array([_PUBLIC_BOUNDS[f][1] for f in PUBLIC_FIELDS])


class ActionError(ValueError):
    """An action outside its space, or illegal in the current state."""


_SAMPLE_WORDS = tuple(
    (
        "the a position risk delta hedge limit within outside net exposure book trade desk intent claim "
        "audit approve block compliant breach margin size reported observed estimate confidence above below "
        "near under over small large long short stable volatile speculative protective overnight intraday "
        "we our this that is are expect keep reduce increase offset cover buffer policy mandate since"
    ).split()
)


class BoundedBox(spaces.Box):
    """A float :class:`~gymnasium.spaces.Box` with finite bounds on every side.

    Its ``sample`` draws exactly what ``Box.sample`` draws for such a box (one
    uniform per entry, from the same generator) without Box's general case
    analysis, which costs more than the draw itself at this size.
    """

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        span = self.__dict__.get("_span")
        if span is None:
            span = self._span = self.high - self.low
        # numpy's uniform(low, high) is low + (high - low) * random(): the same numbers, without its overhead
        # (in place, in the same order: IEEE products and sums commute exactly)
        out = self.np_random.random(self._shape)
        out *= span
        out += self.low
        return out if self.dtype is _FLOAT64_DTYPE else out.astype(self.dtype)


class FastDiscrete(spaces.Discrete):
    """A :class:`~gymnasium.spaces.Discrete` whose ``sample`` draws exactly what ``Discrete.sample`` draws.

    Same values, same type (the space's numpy integer), same use of the space's generator, with or without a
    binary mask: a masked draw is ``Generator.choice`` over the legal actions, which is one
    ``integers(0, k)`` for ``k`` of them, done here without the mask's dozen numpy calls (they cost more than
    an agent step). Masks that are not a 0/1 int8 array of shape ``(n,)`` and probability masks go to
    Gymnasium's own code, with its own errors.
    """

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        if probability is None:
            if mask is None:
                rng = self._np_random or self.np_random  # (the property seeds an unseeded space)
                if self.start:
                    return self.start + rng.integers(self.n, dtype=self.dtype.type)
                return rng.integers(self.n, dtype=self.dtype.type)
            if type(mask) is np.ndarray and mask.dtype is _INT8 and mask.shape == (self.n,):
                legal = _LEGAL.get(mask.tobytes())
                if legal is None:
                    values = mask.tolist()
                    if all(v == 0 or v == 1 for v in values):
                        legal = tuple(i for i, v in enumerate(values) if v == 1)
                        if len(_LEGAL) < 4096:
                            _LEGAL[mask.tobytes()] = legal
                if legal is not None:
                    if not legal:
                        return self.start
                    pick = legal[int(self.np_random.integers(0, len(legal)))]
                    if self.n > 64:
                        return self.start + self.dtype.type(pick)
                    # start + dtype(i), by i, made once (numpy scalars are immutable)
                    key = (int(self.start), int(self.n))
                    cached = self.__dict__.get("_values")
                    if cached is None or cached[0] != key:
                        cached = self._values = (key, tuple(self.start + self.dtype.type(i) for i in range(key[1])))
                    return cached[1][pick]
        return super().sample(mask=mask, probability=probability)


_INT8 = np.dtype(np.int8)
_LEGAL: dict[bytes, tuple[int, ...]] = {}  # a 0/1 mask's bytes -> its legal actions


class FastMultiDiscrete(spaces.MultiDiscrete):
    """A :class:`~gymnasium.spaces.MultiDiscrete` whose unmasked ``sample`` draws exactly what Gymnasium's
    draws (one uniform per entry times its count, truncated), with less around it."""

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        out = (self.np_random.random(self.nvec.shape) * self.nvec).astype(self.dtype)
        out += self.start  # (in place: start has the space's dtype)
        return out


class FastDict(spaces.Dict):
    """A :class:`~gymnasium.spaces.Dict` whose unmasked ``sample`` is Gymnasium's (each subspace's own sample,
    in key order), without its argument checks."""

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        return {k: space.sample() for k, space in self.spaces.items()}


class FreeText(spaces.Text):
    """Free text: any Unicode string of at most ``max_length`` characters without control characters.

    Gymnasium's :class:`~gymnasium.spaces.Text` admits a fixed character set,
    but an explanation may hold any character (accents, non-breaking spaces,
    ≤, emoji), so membership here excludes only control characters other than
    whitespace. Samples are 0 to 16 words drawn from a small vocabulary of the
    domain, so a random policy's texts vary in length as real ones do.
    """

    MAX_SAMPLE_WORDS = 16

    def __init__(self, max_length: int, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(max_length, min_length=0, charset=string.ascii_lowercase + " ", seed=seed)

    @staticmethod
    def bad_character(text: str) -> int | None:
        """Index of the first control character that is not whitespace, or None."""
        if text.isprintable():
            return None
        for i, ch in enumerate(text):
            if unicodedata.category(ch) in ("Cc", "Cs") and not ch.isspace():
                return i
        return None

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length and self.bad_character(x) is None

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        rng = self.np_random
        n_words = int(rng.integers(0, self.MAX_SAMPLE_WORDS + 1))
        if n_words == 0:
            return ""
        if n_words <= 3:  # n draws of one integer are one draw of n (the same numbers), and cheaper for few
            text = " ".join([_SAMPLE_WORDS[int(rng.integers(0, len(_SAMPLE_WORDS)))] for _ in range(n_words)])
        else:
            text = " ".join(map(_SAMPLE_WORDS.__getitem__, rng.integers(0, len(_SAMPLE_WORDS), size=n_words).tolist()))
        return text if len(text) <= self.max_length else text[: self.max_length]

    def __repr__(self) -> str:
        return f"FreeText(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FreeText) and other.max_length == self.max_length


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


# Shared between observations, hence read-only.
BLOCK_ONLY_MASK = _read_only(np.array([1, 0], dtype=np.int8))
FULL_MASK = _read_only(np.array([1, 1], dtype=np.int8))
_NUMBER_LOW, _NUMBER_HIGH = (b.tolist() for b in NUMBER_BOUNDS)


def _numbers(risk: float, net_delta: float, hedge_size: float) -> np.ndarray:
    """(risk, net delta, hedge size) clipped into the Box (scalar clipping is cheaper than np.clip here)."""
    lo, hi = _NUMBER_LOW, _NUMBER_HIGH
    return np.array(
        [
            min(max(risk, lo[0]), hi[0]),
            min(max(net_delta, lo[1]), hi[1]),
            min(max(hedge_size, lo[2]), hi[2]),
        ]
    )


def _tri(value: bool | None) -> int:
    return 0 if value is None else (1 if value else 2)


def _untri(code: int) -> bool | None:
    return None if code == 0 else code == 1


class ExchangeAuditSpaces:
    """The four spaces of one configuration and the codecs between dicts and typed values."""

    def __init__(self, config: ExchangeAuditConfig) -> None:
        self.config = config
        schema = self.schema = get_schema(config.claim_schema)
        self.paper = schema.is_paper  # (the paper's schema keeps every fast path below)
        self.claim_nvec = schema.nvec
        self.claim_value_bounds = schema.value_bounds
        self.pool = schema.checkable
        numbers = BoundedBox(*NUMBER_BOUNDS, dtype=np.float64)
        claim_values = BoundedBox(*(CLAIM_VALUE_BOUNDS if self.paper else schema.value_bounds), dtype=np.float64)
        self.public_high = _PUBLIC_HIGH
        if len(self.pool) > 4:  # (the budget may exceed four checks)
            self.public_high = _PUBLIC_HIGH.copy()
            self.public_high[PUBLIC_FIELDS.index("checks_per_audit")] = len(self.pool)
        public = BoundedBox(_PUBLIC_LOW, self.public_high, dtype=np.float64)
        text = FreeText(config.max_text_chars)
        words = FastDiscrete(config.max_words + 1)
        tokens = FastDiscrete(config.max_artifact_tokens + 1)

        self.proposer_action = FastDict(
            OrderedDict(
                {
                    "action": FastDiscrete(2),
                    "reported_intent": FastDiscrete(2),
                    "reported_numbers": numbers,
                    "claims": FastMultiDiscrete(list(self.claim_nvec)),
                    "claim_values": claim_values,
                    "text": text,
                    "word_count": words,
                    "token_count": tokens,
                }
            )
        )
        self.proposer_observation = FastDict(
            OrderedDict(
                {
                    "phase": FastDiscrete(3),
                    "intent": FastDiscrete(2),
                    "observed_numbers": numbers,
                    "known_compliance": FastMultiDiscrete([3, 3]),
                    "public": public,
                }
            )
        )
        if not self.paper:
            self.proposer_observation.spaces["claim_schema"] = FreeText(64)
        self.validator_action = FastDiscrete(2)
        self.validator_observation = FastDict(
            OrderedDict(
                {
                    "phase": FastDiscrete(3),
                    "action_mask": spaces.Box(0, 1, shape=(2,), dtype=np.int8),
                    "proposer_action": FastDiscrete(2),
                    "reported_intent": FastDiscrete(2),
                    "reported_numbers": numbers,
                    "claims": FastMultiDiscrete(list(self.claim_nvec)),
                    "claim_values": claim_values,
                    "word_count": words,
                    "token_count": tokens,
                    "text": text,
                    "audit_outcome": FastDiscrete(4),
                    "audit_checked": spaces.MultiBinary(len(self.pool)),
                    "audit_failed": spaces.MultiBinary(len(self.pool)),
                    "revealed_compliance": FastDiscrete(3),
                    "ambiguous": FastDiscrete(2),
                    "public": public,
                }
            )
        )
        if not self.paper:
            self.validator_observation.spaces["claim_schema"] = FreeText(64)

    # -- observations --------------------------------------------------------
    @staticmethod
    def public_vector(public: PublicInfo) -> np.ndarray:
        """The ``public`` entry of both observations (constant within an episode)."""
        vec = np.array([float(getattr(public, f)) for f in PUBLIC_FIELDS])
        return np.clip(vec, _PUBLIC_LOW, _PUBLIC_HIGH)

    def public_vector_for(self, public: PublicInfo) -> np.ndarray:
        """:meth:`public_vector` of an episode of this configuration: only the risk limit varies."""
        base = self.__dict__.get("_public_base")
        if base is None:
            base = self._public_base = self._public(public)
        vec = base.copy()
        vec[0] = min(max(public.risk_limit, _PUBLIC_LOW[0]), _PUBLIC_HIGH[0])
        return vec

    def _public(self, public: PublicInfo) -> np.ndarray:
        """:meth:`public_vector` within this configuration's bounds (a claim schema's budget may exceed four)."""
        if self.public_high is _PUBLIC_HIGH:
            return self.public_vector(public)
        return np.clip(np.array([float(getattr(public, f)) for f in PUBLIC_FIELDS]), _PUBLIC_LOW, self.public_high)

    def encode_proposer_observation(
        self, view: ProposerView, phase: Phase, public_vector: np.ndarray | None = None
    ) -> dict[str, Any]:
        obs = {
            "phase": np.int64(phase),
            "intent": np.int64(view.intent),
            "observed_numbers": _numbers(view.observed_risk, view.observed_net_delta, view.observed_hedge_size),
            "known_compliance": np.array(
                [_tri(view.known_risk_within_limit), _tri(view.known_net_delta_bounded)], dtype=np.int64
            ),
            "public": self._public(view.public) if public_vector is None else public_vector,
        }
        if not self.paper:
            obs["claim_schema"] = self.schema.name
        return obs

    def encode_validator_observation(
        self,
        public: PublicInfo,
        ambiguous: bool,
        view: ValidatorView | None,
        phase: Phase,
        public_vector: np.ndarray | None = None,
    ) -> dict[str, Any]:
        """The validator's observation; before any submission (``view=None``) it holds only the public info."""
        pub = self._public(public) if public_vector is None else public_vector
        if view is None:
            obs = {
                "phase": np.int64(phase),
                "action_mask": BLOCK_ONLY_MASK,
                "proposer_action": np.int64(0),
                "reported_intent": np.int64(0),
                "reported_numbers": np.zeros(3),
                "claims": np.zeros(len(self.claim_nvec), dtype=np.int64),
                "claim_values": np.zeros(len(self.claim_value_bounds[0])),
                "word_count": np.int64(0),
                "token_count": np.int64(0),
                "text": "",
                "audit_outcome": np.int64(AuditOutcome.SKIPPED),
                "audit_checked": np.zeros(len(self.pool), dtype=np.int8),
                "audit_failed": np.zeros(len(self.pool), dtype=np.int8),
                "revealed_compliance": np.int64(0),
                "ambiguous": np.int64(ambiguous),
                "public": pub,
            }
            if not self.paper:
                obs["claim_schema"] = self.schema.name
            return obs
        sub, audit, p = view.submission, view.audit, view.submission.proposal
        deciding = sub.action is ProposerAction.REQUEST_APPROVAL and phase is Phase.DECISION
        claims = sub.artifact.claims
        codes, values = _encode_claims(claims) if self.paper else encode_claims(claims, self.schema)
        obs = {
            "phase": np.int64(phase),
            "action_mask": FULL_MASK if deciding else BLOCK_ONLY_MASK,
            "proposer_action": np.int64(sub.action),
            "reported_intent": np.int64(p.intent),
            "reported_numbers": _numbers(p.risk, p.net_delta, p.hedge_size),
            "claims": codes,
            "claim_values": values,
            "word_count": np.int64(sub.artifact.words),
            "token_count": np.int64(sub.artifact.tokens),
            "text": sub.artifact.text,
            "audit_outcome": np.int64(audit.outcome),
            "audit_checked": np.array([c in audit.checked for c in self.pool], dtype=np.int8),
            "audit_failed": np.array([c in audit.failed for c in self.pool], dtype=np.int8),
            "revealed_compliance": np.int64(_tri(audit.revealed_compliant)),
            "ambiguous": np.int64(ambiguous),
            "public": pub,
        }
        if not self.paper:
            obs["claim_schema"] = self.schema.name
        return obs

    # The environment's own builders: the same observations as the encoders above, with every array
    # read-only; arrays that take few values (codes, masks, audit flags) are built once and shared.
    def proposer_observation_read_only(
        self, view: ProposerView, phase: Phase, public_vector: np.ndarray
    ) -> dict[str, Any]:
        """:meth:`encode_proposer_observation` with read-only arrays (``public_vector`` must be read-only)."""
        numbers = _numbers(view.observed_risk, view.observed_net_delta, view.observed_hedge_size)
        numbers.flags.writeable = False
        obs = {
            "phase": _INT64[phase],
            "intent": _INT64[view.intent],
            "observed_numbers": numbers,
            "known_compliance": _KNOWN_COMPLIANCE[view.known_risk_within_limit, view.known_net_delta_bounded],
            "public": public_vector,
        }
        if not self.paper:
            obs["claim_schema"] = self.schema.name
        return obs

    def validator_observation_read_only(
        self, ambiguous: bool, view: ValidatorView, phase: Phase, public_vector: np.ndarray
    ) -> dict[str, Any]:
        """:meth:`encode_validator_observation` after a submission, with read-only arrays (``public_vector``
        must be read-only)."""
        if not self.paper:  # (another schema has no fast path: the builder above, its arrays frozen)
            obs = self.encode_validator_observation(view.public, ambiguous, view, phase, public_vector)
            for value in obs.values():
                if isinstance(value, np.ndarray):
                    value.flags.writeable = False
            return obs
        sub, audit, p = view.submission, view.audit, view.submission.proposal
        artifact = sub.artifact
        deciding = sub.action is ProposerAction.REQUEST_APPROVAL and phase is Phase.DECISION
        codes, values = _claims_read_only(artifact.claims)
        numbers = _numbers(p.risk, p.net_delta, p.hedge_size)
        numbers.flags.writeable = False
        words, tokens = artifact.words, artifact.tokens
        return {
            "phase": _INT64[phase],
            "action_mask": FULL_MASK if deciding else BLOCK_ONLY_MASK,
            "proposer_action": _INT64[sub.action],
            "reported_intent": _INT64[p.intent],
            "reported_numbers": numbers,
            "claims": codes,
            "claim_values": values,
            "word_count": _INT64[words] if words < _N_INT64 else np.int64(words),
            "token_count": _INT64[tokens] if tokens < _N_INT64 else np.int64(tokens),
            "text": artifact.text,
            "audit_outcome": _INT64[audit.outcome],
            "audit_checked": _audit_flags(audit.checked),
            "audit_failed": _audit_flags(audit.failed),
            "revealed_compliance": _INT64[_tri(audit.revealed_compliant)],
            "ambiguous": _INT64[ambiguous],
            "public": public_vector,
        }

    # -- actions ---------------------------------------------------------------
    def decode_proposer_action(self, action: Any, agent: str = "proposer_0") -> Submission:
        """Validate a proposer action dict and return the :class:`Submission` it encodes.

        Raises :class:`ActionError` naming the first field that is missing,
        unexpected or outside its space.
        """
        if type(action) is dict:
            fast = self._decode_well_formed(action)
            if fast is not None:
                return fast
        space = self.proposer_action
        if not isinstance(action, Mapping):
            raise ActionError(
                f"{agent}'s action must be a dict with keys {list(space.keys())} "
                f"(see env.action_space({agent!r})), got {type(action).__name__}"
            )
        missing = [k for k in space.keys() if k not in action]
        extra = [k for k in action if k not in space.spaces]
        if missing or extra:
            raise ActionError(
                f"{agent}'s action has missing keys {missing} and unexpected keys {extra}; "
                f"expected exactly {list(space.keys())}"
            )
        act = _discrete(action["action"], 2, f"{agent} action['action'] (0 NO_TRADE, 1 REQUEST_APPROVAL)")
        intent = _discrete(action["reported_intent"], 2, f"{agent} action['reported_intent'] (0 HEDGE, 1 SPECULATE)")
        numbers = _box(action["reported_numbers"], NUMBER_BOUNDS, NUMBER_NAMES, f"{agent} action['reported_numbers']")
        schema = self.schema
        codes = _multidiscrete(action["claims"], self.claim_nvec, f"{agent} action['claims']", schema.names)
        values = _box(action["claim_values"], self.claim_value_bounds, schema.valued, f"{agent} action['claim_values']")
        text = action["text"]
        if not isinstance(text, str):
            raise ActionError(f"{agent} action['text'] must be a str, got {type(text).__name__}")
        if len(text) > self.config.max_text_chars:
            raise ActionError(
                f"{agent} action['text'] has {len(text)} characters; at most {self.config.max_text_chars} "
                "are allowed (max_text_chars)"
            )
        bad = FreeText.bad_character(text)
        if bad is not None:
            raise ActionError(
                f"{agent} action['text'] contains the control character U+{ord(text[bad]):04X} at position {bad}"
            )
        words = _discrete(action["word_count"], self.config.max_words + 1, f"{agent} action['word_count']")
        tokens = _discrete(action["token_count"], self.config.max_artifact_tokens + 1, f"{agent} action['token_count']")
        claims = _decode_claims(codes, values) if self.paper else decode_claims(codes, values, schema)
        return Submission(
            action=ProposerAction(act),
            proposal=Proposal(Intent(intent), *numbers),
            artifact=make_artifact(claims, text, self.config.max_words, word_count=words, tokens=tokens),
        )

    def _decode_well_formed(self, action: dict[str, Any]) -> Submission | None:
        """:meth:`decode_proposer_action` of an action in the usual form (numpy int64 or int scalars, float64
        and int64 arrays of the right shapes, a printable str), or None for anything else (the full path then
        decodes it, or raises its error). Accepts exactly what the full path accepts in that form, and returns
        the same value."""
        if not self.paper or action.keys() != self.proposer_action.spaces.keys():
            return None
        config = self.config
        act = _small_int(action["action"], 2)
        intent = _small_int(action["reported_intent"], 2)
        words = _small_int(action["word_count"], config.max_words + 1)
        tokens = _small_int(action["token_count"], config.max_artifact_tokens + 1)
        numbers = _floats_within(action["reported_numbers"], _NUMBER_LOW, _NUMBER_HIGH)
        values = _floats_within(action["claim_values"], _CV_LOW, _CV_HIGH)
        codes = action["claims"]
        text = action["text"]
        if (
            act is None
            or intent is None
            or words is None
            or tokens is None
            or numbers is None
            or values is None
            or type(codes) is not np.ndarray
            or codes.dtype is not _INT64_DTYPE
            or codes.shape != (len(CLAIM_NVEC),)
            or type(text) is not str
            or len(text) > config.max_text_chars
            or not text.isprintable()  # (printable text has no control character; other text: the full path)
        ):
            return None
        c = codes.tolist()
        if not (0 <= c[0] < 3 and 0 <= c[1] < 3 and 0 <= c[2] < 3 and 0 <= c[3] < 2 and 0 <= c[4] < 2):
            return None
        claims = Claims(
            intent=None if c[0] == 0 else _INTENTS[c[0] - 1],
            risk_within_limit=_UNTRI[c[1]],
            net_delta_bounded=_UNTRI[c[2]],
            risk_metric=values[0] if c[3] else None,
            confidence=values[1] if c[4] else None,
        )
        return Submission(
            action=_PROPOSER_ACTIONS[act],
            proposal=Proposal(_INTENTS[intent], *numbers),
            artifact=make_artifact(claims, text, config.max_words, word_count=words, tokens=tokens),
        )

    def decode_validator_action(self, action: Any, mask: np.ndarray, agent: str = "validator_0") -> Decision:
        value = _small_int(action, 2)
        if value is not None and mask[value]:
            return _DECISIONS[value]
        value = _discrete(action, 2, f"{agent}'s action (0 BLOCK, 1 APPROVE)")
        if not mask[value]:
            raise ActionError(
                f"{agent}'s action {Decision(value).name} is illegal here (action_mask={mask.tolist()}): "
                "the proposer chose NO_TRADE, so there is nothing to approve"
            )
        return Decision(value)


_INT64_DTYPE = np.dtype(np.int64)
_FLOAT64_DTYPE = np.dtype(np.float64)
_INTENTS = tuple(Intent)
_DECISIONS = tuple(Decision)
_PROPOSER_ACTIONS = tuple(ProposerAction)
_UNTRI = (None, True, False)


def _small_int(value: Any, n: int) -> int | None:
    """``_discrete(value, n)`` for a Python int or numpy int64 in range; None for anything else."""
    t = type(value)
    if (t is int or t is np.int64) and 0 <= value < n:
        return int(value)
    return None


def _floats_within(value: Any, low: list[float], high: list[float]) -> list[float] | None:
    """``_box``'s values for a float64 array of the right shape within its bounds; None for anything else."""
    if type(value) is not np.ndarray or value.dtype is not _FLOAT64_DTYPE or value.shape != (len(low),):
        return None
    out: list[float] = value.tolist()
    for x, lo, hi in zip(out, low, high, strict=True):
        if not lo <= x <= hi:  # (also NaN)
            return None
    return out


def _discrete(value: Any, n: int, what: str) -> int:
    if isinstance(value, np.ndarray) and value.shape in ((), (1,)):
        value = value.reshape(()).item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ActionError(f"{what} must be an integer in [0, {n - 1}], got {value!r}")
    if not 0 <= int(value) < n:
        raise ActionError(f"{what} must be an integer in [0, {n - 1}], got {value!r}")
    return int(value)


def _box(value: Any, bounds: tuple[np.ndarray, np.ndarray], names: tuple[str, ...], what: str) -> list[float]:
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raw = np.asarray(None)
    if raw.dtype.kind not in "iuf":  # no strings, booleans or objects posing as numbers
        raise ActionError(f"{what} must be {len(names)} numbers ({', '.join(names)}), got {value!r}")
    if raw.shape != (len(names),):
        raise ActionError(f"{what} must have shape ({len(names)},) for ({', '.join(names)}), got shape {raw.shape}")
    values = raw.astype(np.float64).tolist()
    low, high = bounds
    for i, name in enumerate(names):
        if not low[i] <= values[i] <= high[i]:  # also rejects NaN
            raise ActionError(f"{what}: {name} must be in [{low[i]:g}, {high[i]:g}], got {values[i]!r}")
    return values


def _multidiscrete(value: Any, nvec: tuple[int, ...], what: str, names: tuple[str, ...] = CLAIM_TYPES) -> list[int]:
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # (a ragged list: no array at all)
        arr = np.asarray(None)
    if arr.shape != (len(nvec),) or arr.dtype.kind not in "iu":
        raise ActionError(f"{what} must be {len(nvec)} integers, got {value!r}")
    out = arr.tolist()
    for i, (x, n) in enumerate(zip(out, nvec, strict=True)):
        if not 0 <= x < n:
            name = names[i]
            raise ActionError(f"{what}: the {name} entry must be in [0, {n - 1}], got {x}")
    return out


# -- codecs that need no configuration --------------------------------------
def decode_public(obs: Mapping[str, Any]) -> PublicInfo:
    vec = np.asarray(obs["public"], dtype=np.float64)
    values: dict[str, Any] = {f: float(v) for f, v in zip(PUBLIC_FIELDS, vec.tolist(), strict=True)}
    for name in ("checks_per_audit", "max_words", "max_text_chars", "max_artifact_tokens"):
        values[name] = round(values[name])
    values["cost_in_tokens"] = values["cost_in_tokens"] >= 0.5
    return PublicInfo(**values, claim_schema=str(obs.get("claim_schema", "paper")))


def decode_proposer_observation(obs: Mapping[str, Any]) -> ProposerView:
    """The typed :class:`ProposerView` of a proposer observation dict."""
    risk, delta, hedge = np.asarray(obs["observed_numbers"], dtype=np.float64).tolist()
    known = [int(x) for x in np.asarray(obs["known_compliance"]).tolist()]
    return ProposerView(
        intent=Intent(int(obs["intent"])),
        observed_risk=risk,
        observed_net_delta=delta,
        observed_hedge_size=hedge,
        known_risk_within_limit=_untri(known[0]),
        known_net_delta_bounded=_untri(known[1]),
        public=decode_public(obs),
    )


def decode_validator_observation(obs: Mapping[str, Any]) -> ValidatorView:
    """The typed :class:`ValidatorView` of a validator observation dict."""
    risk, delta, hedge = np.asarray(obs["reported_numbers"], dtype=np.float64).tolist()
    schema = get_schema(str(obs.get("claim_schema", "paper")))
    claims = (
        _decode_claims(obs["claims"], obs["claim_values"])
        if schema.is_paper
        else decode_claims(obs["claims"], obs["claim_values"], schema)
    )
    text = str(obs["text"])
    submission = Submission(
        action=ProposerAction(int(obs["proposer_action"])),
        proposal=Proposal(Intent(int(obs["reported_intent"])), risk, delta, hedge),
        artifact=Artifact(claims=claims, text=text, words=int(obs["word_count"]), tokens=int(obs["token_count"])),
    )
    checked = np.asarray(obs["audit_checked"]).tolist()
    failed = np.asarray(obs["audit_failed"]).tolist()
    audit = AuditRecord(
        outcome=AuditOutcome(int(obs["audit_outcome"])),
        checked=tuple(c for c, x in zip(schema.checkable, checked, strict=True) if x),
        failed=tuple(c for c, x in zip(schema.checkable, failed, strict=True) if x),
        revealed_compliant=_untri(int(obs["revealed_compliance"])),
    )
    return ValidatorView(submission, audit, decode_public(obs), ambiguous=bool(obs["ambiguous"]))


# -- claims --------------------------------------------------------------
def _encode_claims(claims: Claims) -> tuple[np.ndarray, np.ndarray]:
    codes = np.array(
        [
            0 if claims.intent is None else int(claims.intent) + 1,
            _tri(claims.risk_within_limit),
            _tri(claims.net_delta_bounded),
            int(claims.risk_metric is not None),
            int(claims.confidence is not None),
        ],
        dtype=np.int64,
    )
    values = np.array(
        [
            0.0 if claims.risk_metric is None else claims.risk_metric,
            0.0 if claims.confidence is None else claims.confidence,
        ]
    )
    return codes, np.clip(values, *CLAIM_VALUE_BOUNDS)


def _decode_claims(codes: Any, values: Any) -> Claims:
    c = [int(x) for x in np.asarray(codes).tolist()]
    v = np.asarray(values, dtype=np.float64).tolist()
    return Claims(
        intent=None if c[0] == 0 else Intent(c[0] - 1),
        risk_within_limit=_untri(c[1]),
        net_delta_bounded=_untri(c[2]),
        risk_metric=v[0] if c[3] else None,
        confidence=v[1] if c[4] else None,
    )


def encode_claims(claims: Claims, schema: ClaimSchema = PAPER) -> tuple[np.ndarray, np.ndarray]:
    """The ``claims`` codes and ``claim_values`` of ``claims`` under ``schema`` (see the module docstring); a
    claim the schema has not is a ValueError."""
    if schema.is_paper:
        if claims.extra:
            raise ValueError(
                f"the 'paper' claim schema has no claim {claims.extra[0][0]!r} (Claims.extra); "
                "make the environment with the claim_schema that declares it"
            )
        return _encode_claims(claims)
    unknown = [name for name, _ in claims.extra if name not in schema.by_name]
    if unknown:
        raise ValueError(
            f"the {schema.name!r} claim schema has no claim {unknown[0]!r}; its claims: {', '.join(schema.names)}"
        )
    codes: list[int] = []
    values: list[float] = []
    for claim in schema.claims:
        value = claim_value(claims, claim.name)
        if value is not None and claim.name not in CLAIM_TYPES:
            value = claim.normalise(value)
        codes.append(0 if value is None else claim.code(value))
        if claim.valued:
            values.append(0.0 if value is None else float(value))
    return np.array(codes, dtype=np.int64), np.clip(np.array(values, dtype=np.float64), *schema.value_bounds)


def decode_claims(codes: Any, values: Any, schema: ClaimSchema) -> Claims:
    """The :class:`Claims` that ``claims`` codes and ``claim_values`` stand for under ``schema``."""
    c = [int(x) for x in np.asarray(codes).tolist()]
    v = np.asarray(values, dtype=np.float64).tolist()
    paper = _decode_claims(c[: len(CLAIM_NVEC)], v[: len(CLAIM_VALUE_NAMES)])
    extra = []
    slot = len(CLAIM_VALUE_NAMES)
    for i, claim in enumerate(schema.extra, start=len(CLAIM_NVEC)):
        value = claim.uncode(c[i], v[slot] if claim.valued else 0.0)
        slot += claim.valued
        if value is not None:
            extra.append((claim.name, value))
    return Claims(
        paper.intent,
        paper.risk_within_limit,
        paper.net_delta_bounded,
        paper.risk_metric,
        paper.confidence,
        tuple(extra),
    )


# Shared read-only values of the environment's observations (numpy scalars are immutable).
_N_INT64 = 256
_INT64 = tuple(np.int64(i) for i in range(_N_INT64))
_KNOWN_COMPLIANCE = {
    (a, b): _read_only(np.array([_tri(a), _tri(b)], dtype=np.int64))
    for a in (None, True, False)
    for b in (None, True, False)
}
_CLAIM_CODES: dict[tuple[int, ...], np.ndarray] = {}
_AUDIT_FLAGS: dict[tuple[str, ...], np.ndarray] = {}
_ZERO_CLAIM_VALUES = _read_only(np.zeros(2))
_CV_LOW, _CV_HIGH = (b.tolist() for b in CLAIM_VALUE_BOUNDS)


def _audit_flags(names: tuple[str, ...]) -> np.ndarray:
    """``[c in names for c in CHECKABLE_CLAIMS]`` as a shared read-only int8 array."""
    flags = _AUDIT_FLAGS.get(names)
    if flags is None:
        flags = _read_only(np.array([c in names for c in CHECKABLE_CLAIMS], dtype=np.int8))
        if len(_AUDIT_FLAGS) < 1024:
            _AUDIT_FLAGS[names] = flags
    return flags


def _clip(x: float, low: float, high: float) -> float:
    """``np.clip`` of one float, to the bit (NaN stays NaN; at a bound equal to x, -0.0 and 0.0 are those
    numpy picks)."""
    if x != x:
        return x
    x = x if x > low else low
    return x if x < high else high


def _claims_read_only(claims: Claims) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_encode_claims` with read-only arrays (the codes shared: there are 108 of them)."""
    metric, confidence = claims.risk_metric, claims.confidence
    key = (
        0 if claims.intent is None else int(claims.intent) + 1,
        _tri(claims.risk_within_limit),
        _tri(claims.net_delta_bounded),
        int(metric is not None),
        int(confidence is not None),
    )
    codes = _CLAIM_CODES.get(key)
    if codes is None:
        codes = _CLAIM_CODES[key] = _read_only(np.array(key, dtype=np.int64))
    if metric is None and confidence is None:
        return codes, _ZERO_CLAIM_VALUES
    m = 0.0 if metric is None else metric
    c = 0.0 if confidence is None else confidence
    values = np.array([_clip(m, _CV_LOW[0], _CV_HIGH[0]), _clip(c, _CV_LOW[1], _CV_HIGH[1])])
    values.flags.writeable = False
    return codes, values


def encode_submission(submission: Submission, claim_schema: str | ClaimSchema = "paper") -> dict[str, Any]:
    """The proposer action dict for a typed :class:`Submission`.

    The text is sent as is (the environment truncates it to ``max_words``);
    with no text, ``word_count`` carries the artifact's word count, which must
    not exceed ``max_words``. ``claim_schema``: the environment's (its name, e.g. ``view.public.claim_schema``,
    or the schema), which says how the claims are encoded.
    """
    p, artifact = submission.proposal, submission.artifact
    if claim_schema == "paper" or claim_schema is PAPER:
        codes, values = (
            _encode_claims(artifact.claims) if not artifact.claims.extra else encode_claims(artifact.claims, PAPER)
        )  # (refuses the extra claims)
    else:
        schema = claim_schema if isinstance(claim_schema, ClaimSchema) else get_schema(claim_schema)
        codes, values = encode_claims(artifact.claims, schema)
    return {
        "action": np.int64(submission.action),
        "reported_intent": np.int64(p.intent),
        "reported_numbers": np.array([p.risk, p.net_delta, p.hedge_size]),
        "claims": codes,
        "claim_values": values,
        "text": artifact.text,
        "word_count": np.int64(0 if artifact.text else artifact.words),
        "token_count": np.int64(artifact.tokens),
    }
