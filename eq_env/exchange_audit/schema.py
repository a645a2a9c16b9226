"""Claim schemas: what a proposer may claim, declared once, and everything derived from it.

A *claim type* says one checkable (or merely informative) thing about the proposer's private position.
It is declared once, as a :class:`ClaimType`: its name, its kind and value domain, how it is checked
against the true state, what checking it costs the audit, and whether the rule engine requires it.
A :class:`ClaimSchema` is an ordered tuple of claim types; the game (the audit, the rule engine), the
Gymnasium spaces, the batch engine, the RL artifact space, the best-response search and the LLM's
prompt and JSON schema all read the configuration's schema (``ExchangeAuditConfig.claim_schema``,
a registered name) and derive what they need from it.

Kinds
-----

=============== ============================== ==================================================
kind            value                          checked against the truth
=============== ============================== ==================================================
``enum``        one of ``labels``              equal to ``truth(state)`` (a label's index)
``bool``        true / false                   equal to the proposition ``truth(state)``
``conditional`` true / false: "if A then C"    equal to (not A or C) on the true state; a
                                               conditional whose antecedent A is false is
                                               *vacuously* true
``number``      a number within ``bounds``     ``valid(value)`` (a check on the value alone,
                                               e.g. confidence ∈ [0, 1]); none: never checked
``interval``    the centre c of                c − width/2 ≤ ``truth(state)`` ≤ c + width/2
                [c − width/2, c + width/2]     (inclusive); the width is the type's, declared
=============== ============================== ==================================================

A claim that is not made is never a lie: checked, it passes (the paper's ``confidence``), and if the
claim is ``required`` the audit is inconclusive instead (the paper's three required claims).

The rule engine
---------------

``required`` claim types are those the paper's rule engine needs: an audit is **conclusive** only when
every required claim is made (else inconclusive: blocked, not fined), and in an ambiguous episode that
is not audited the claims **assert compliance** — the unaudited approval — only when every required
claim is made and *supports* approval (``supports(value, limits)``; by default a true ``bool`` or
``conditional``). A required conditional stated as false ("my hedge does not cover") is therefore not
a lie — an audit checks it against the truth like any claim — but it withholds the unaudited
approval, exactly as a stated ``risk_within_limit = false`` does. A claim type that is not required
is voluntary: checked when the audit samples it, ignored by the rule otherwise.

The audit
---------

The schema's *checkable pool* is its claim types that have a check, in schema order. An audit with
budget B checks all of them when B ≥ the pool's size (or B is None), else B of them sampled uniformly
without replacement; every checked claim type adds its ``audit_cost`` to the validator's audit cost c
(0 for the paper's claims, so the paper's c per audit is unchanged). The sampling keys of the first
four claims of the pool are the episode's four audit uniforms, as in the paper; a larger pool takes
its further keys from a fifth generator of the seed (:meth:`~eq_env.exchange_audit.rules.DrawStream.claim_keys`),
read only then, so every draw of the paper's game stays where it was. Noisy audits
(``miss_<claim>``, ``false_fail_<claim>``) apply to the paper's four checkable claims only; a claim
type a schema adds is checked without noise.

The schemas
-----------

``"paper"`` (the default) holds the paper's five claims: ``intent`` (enum, required),
``risk_within_limit`` and ``net_delta_bounded`` (bool, required), ``risk_metric`` (a number, never
checked) and ``confidence`` (a number, fails outside [0, 1]). With it every space, table and digest is
what it was before schemas existed. ``"rich"`` adds two:

* ``hedge_covers`` (conditional, voluntary): "if the intent is HEDGE then the hedge size is at least
  0.5". Checked on the true state, so it is vacuously true for a speculation; it can be false only for
  a hedge of less than 0.5 (a sixth of the borderline episodes).
* ``risk_interval`` (interval, required, audit cost 0.05): "the true risk lies in [c − 0.15, c + 0.15]"
  (width 0.3, three observation-noise SDs: an honest centre on the observed risk misses about 0.3% of
  the time). It supports approval when its lower end is within the risk limit.

Every schema starts with the paper's five claim types, in that order (they are the game's own
vocabulary: its spaces, its batch columns and its rule engine's fast paths are built on them); a
schema may re-flag them (``dataclasses.replace(PAPER_CLAIMS[0], required=False)``, an ``audit_cost``)
and adds its own after them.

Policies
--------

A claim type a schema adds may say how a policy states it, from a :class:`Position` (intent, risk,
net delta, hedge size and the two limits; scalars, or arrays for a batch): ``sincere(observed)`` — what
an honest proposer states from its observation — and ``favourable(reported)`` — what a proposer
asserting compliance states about the position it reports. The honest proposer states every claim
sincerely, the strategic proposer's lie states every claim favourably (a consistent story), and the
RL artifact space (:mod:`eq_env.exchange_audit.features`) gives each such claim three choices: omit,
sincere, favourable. A claim type without these two is left out of both.

Your own schema
---------------

Register it once, in Python, before building configurations that name it::

    from eq_env.exchange_audit.schema import PAPER, ClaimSchema, bool_claim, register_schema

    def net_long(state):  # scalars (a State) or arrays (the batch engine's Nature) alike
        return state.true_net_delta >= 0.0

    register_schema(ClaimSchema("long_only", (*PAPER.claims, bool_claim(
        "net_long", net_long, "your true net delta is not negative", required=True, audit_cost=0.01,
        sincere=lambda p: p.net_delta >= 0.0, favourable=lambda p: True))))

    from eq_env import exchange_audit_v0
    env = exchange_audit_v0.env(claim_schema="long_only")  # or ExchangeAuditConfig(claim_schema="long_only")

Functions given to a claim type must work on numpy arrays as well as on scalars (use comparisons,
arithmetic and ``np.logical_*``, not ``and``/``or``/``if``): the batch engine calls them on whole
columns, and its results must equal the environment's episode by episode. Worker processes
(``--jobs``) import the package afresh: register a schema in a module they import too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "KINDS",
    "PAPER",
    "PAPER_CLAIMS",
    "RICH",
    "SCHEMA_NAMES",
    "ClaimSchema",
    "ClaimType",
    "Position",
    "bool_claim",
    "conditional_claim",
    "enum_claim",
    "get_schema",
    "interval_claim",
    "number_claim",
    "register_schema",
    "replace_claim",
    "schema_names",
]

KINDS = ("enum", "bool", "conditional", "number", "interval")
_CODED = ("bool", "conditional")  # 0 absent, 1 true, 2 false
_VALUED = ("number", "interval")  # 0 absent, 1 present; the value rides in claim_values


class Position(NamedTuple):
    """A position as a policy sees or tells it (scalars for one episode, arrays for a batch)."""

    intent: Any  # Intent codes: 0 HEDGE, 1 SPECULATE
    risk: Any
    net_delta: Any
    hedge_size: Any
    risk_limit: Any
    delta_limit: Any


@dataclass(frozen=True)
class ClaimType:
    """One claim type (see the module docstring); build it with :func:`bool_claim` and its siblings."""

    name: str
    kind: str
    description: str  # what the claim says, in a phrase (prompts, docs)
    prompt: str = ""  # its line in the proposer's prompt after "name: " (default: from kind and description)
    # enum: the true label's index; bool: the proposition; interval: the quantity it bounds
    truth: Callable[[Any], Any] | None = None
    antecedent: Callable[[Any], Any] | None = None  # conditional: "if A ..."
    consequent: Callable[[Any], Any] | None = None  # conditional: "... then C"
    valid: Callable[[Any], Any] | None = None  # number: a check on the value alone (None: never checked)
    labels: tuple[str, ...] = ()  # enum
    bounds: tuple[float, float] = (0.0, 1.0)  # number, interval: the value's range in the action space
    width: float = 0.0  # interval
    audit_cost: float = 0.0  # added to the validator's audit cost when an audit checks it
    required: bool = False
    supports: Callable[[Any, Any], Any] | None = None  # (value, limits) -> asserts compliance; None: the kind's default
    sincere: Callable[[Position], Any] | None = None  # what an honest proposer states, from its observation
    favourable: Callable[[Position], Any] | None = None  # what a proposer asserting compliance states

    def __post_init__(self) -> None:
        where = f"claim type {self.name!r}"
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"a claim type's name must be an identifier, got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"{where}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "enum" and len(self.labels) < 2:
            raise ValueError(f"{where}: an enum claim needs at least two labels, got {self.labels!r}")
        if self.kind == "conditional" and (self.antecedent is None or self.consequent is None):
            raise ValueError(f"{where}: a conditional claim needs an antecedent and a consequent")
        if self.kind in ("enum", "bool", "interval") and self.truth is None:
            raise ValueError(f"{where}: a{'n' if self.kind[0] in 'ei' else ''} {self.kind} claim needs truth(state)")
        low, high = self.bounds
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"{where}: bounds must be finite with low < high, got {self.bounds!r}")
        if self.kind == "interval" and not (math.isfinite(self.width) and self.width > 0):
            raise ValueError(f"{where}: an interval claim needs a width > 0, got {self.width!r}")
        if not (math.isfinite(self.audit_cost) and self.audit_cost >= 0):
            raise ValueError(f"{where}: audit_cost must be a number >= 0, got {self.audit_cost!r}")
        if not self.prompt:
            object.__setattr__(self, "prompt", self._default_prompt())

    def _default_prompt(self) -> str:
        if self.kind == "enum":
            head = " or ".join(f'"{label}"' for label in self.labels)
        elif self.kind in _CODED:
            head = "true or false"
        elif self.kind == "interval":
            half = self.width / 2
            head = f"a number c: the claim that the quantity below lies in [c - {half:g}, c + {half:g}]"
        else:
            head = f"a number in [{self.bounds[0]:g}, {self.bounds[1]:g}]"
        checked = "checked against the truth" if self.checkable else "never checked"
        return f"{head} ({self.description}; {checked}{'; required' if self.required else ''})"

    # -- derived ---------------------------------------------------------------
    @property
    def checkable(self) -> bool:
        """An audit can check it (a number without ``valid`` is only carried, like ``risk_metric``)."""
        return self.kind != "number" or self.valid is not None

    @property
    def nvec(self) -> int:
        """Its entry of the ``claims`` MultiDiscrete: 0 absent, then its codes."""
        return 1 + len(self.labels) if self.kind == "enum" else (3 if self.kind in _CODED else 2)

    @property
    def valued(self) -> bool:
        """Its value rides in ``claim_values`` (a number or an interval's centre)."""
        return self.kind in _VALUED

    @property
    def stated_by_policies(self) -> bool:
        """The scripted proposers and the artifact space state it (it says how: ``sincere`` and ``favourable``)."""
        return self.sincere is not None and self.favourable is not None

    # -- the truth -------------------------------------------------------------
    def check(self, value: Any, state: Any) -> Any:
        """Whether a made claim ``value`` holds on ``state`` (a State, or arrays: a batch's Nature)."""
        kind = self.kind
        if kind == "conditional":
            assert self.antecedent is not None and self.consequent is not None
            holds = np.logical_or(np.logical_not(self.antecedent(state)), self.consequent(state))
            return value == holds
        if kind == "interval":
            assert self.truth is not None
            half = self.width / 2
            x = self.truth(state)
            return (value - half <= x) & (x <= value + half)
        if kind == "number":
            return True if self.valid is None else self.valid(value)
        assert self.truth is not None
        return value == self.truth(state)

    def supports_approval(self, value: Any, limits: Any) -> Any:
        """Whether a made claim ``value`` asserts compliance to the rule engine (``limits``: has ``risk_limit``
        and ``delta_limit``)."""
        if self.supports is not None:
            return self.supports(value, limits)
        if self.kind in _CODED:
            return value == 1
        return np.ones_like(value, dtype=bool) if isinstance(value, np.ndarray) else True

    # -- values ----------------------------------------------------------------
    def normalise(self, value: Any) -> Any:
        """A made claim's value as :class:`~eq_env.exchange_audit.rules.Claims` holds it (bool, float or a label's
        index), or a ValueError naming the claim."""
        kind = self.kind
        if kind in _CODED:
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"claim {self.name} must be true or false, got {value!r}")
            return bool(value)
        if kind == "enum":
            if isinstance(value, str) and value in self.labels:
                return self.labels.index(value)
            if (
                isinstance(value, (bool, np.bool_))
                or not isinstance(value, (int, np.integer))
                or not 0 <= int(value) < len(self.labels)
            ):
                raise ValueError(f"claim {self.name} must be one of {list(self.labels)}, got {value!r}")
            return int(value)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"claim {self.name} must be a number, got {value!r}")
        value = float(value)
        low, high = self.bounds
        if not low <= value <= high:  # (also NaN)
            raise ValueError(f"claim {self.name} must be in [{low:g}, {high:g}], got {value!r}")
        return value

    def policy_value(self, value: Any) -> Any:
        """A value a policy hook computed, as a made claim: a number clipped into ``bounds``, then normalised
        (:meth:`normalise`); for arrays (a batch), float64 codes (a bool as 1/0, a label's index)."""
        if isinstance(value, np.ndarray):
            out = value.astype(np.float64)
            return np.clip(out, *self.bounds) if self.valued else out
        if self.valued and not isinstance(value, (bool, np.bool_)):
            value = min(max(float(value), self.bounds[0]), self.bounds[1])
        return self.normalise(value)

    def code(self, value: Any) -> int:
        """Its ``claims`` entry for a made claim (absent: 0)."""
        if self.kind in _CODED:
            return 1 if value else 2
        if self.kind == "enum":
            return 1 + int(value)
        return 1

    def uncode(self, code: int, value: float) -> Any:
        """The made claim a ``claims`` entry and its ``claim_values`` slot stand for (None: absent)."""
        if code == 0:
            return None
        if self.kind in _CODED:
            return code == 1
        if self.kind == "enum":
            return code - 1
        return value

    def json_schema(self) -> dict[str, Any]:
        """Its property in the LLM reply's ``claims`` object (null: not made)."""
        if self.kind == "enum":
            return {"type": ["string", "null"], "enum": [*self.labels, None]}
        if self.kind in _CODED:
            return {"type": ["boolean", "null"]}
        return {"type": ["number", "null"], "minimum": float(self.bounds[0]), "maximum": float(self.bounds[1])}

    def from_json(self, value: Any) -> Any:
        """A schema-valid JSON value (None: not made) as :class:`Claims` holds it."""
        return None if value is None else self.normalise(value)

    def to_json(self, value: Any) -> Any:
        """A made claim's value as the JSON of prompts and records shows it."""
        return self.labels[value] if self.kind == "enum" else value


# ---------------------------------------------------------------------------
# Building claim types
# ---------------------------------------------------------------------------
def enum_claim(
    name: str, labels: Sequence[str], truth: Callable[[Any], Any], description: str, **options: Any
) -> ClaimType:
    """A claim naming one of ``labels``; checked equal to ``truth(state)``, the true label's index."""
    return ClaimType(name, "enum", description, truth=truth, labels=tuple(labels), **options)


def bool_claim(name: str, truth: Callable[[Any], Any], description: str, **options: Any) -> ClaimType:
    """A true/false claim; checked equal to the proposition ``truth(state)``."""
    return ClaimType(name, "bool", description, truth=truth, **options)


def conditional_claim(
    name: str, antecedent: Callable[[Any], Any], consequent: Callable[[Any], Any], description: str, **options: Any
) -> ClaimType:
    """A true/false claim that "if ``antecedent`` then ``consequent``" holds on the true state (vacuously true
    where the antecedent is false)."""
    return ClaimType(name, "conditional", description, antecedent=antecedent, consequent=consequent, **options)


def number_claim(
    name: str, bounds: tuple[float, float], description: str, valid: Callable[[Any], Any] | None = None, **options: Any
) -> ClaimType:
    """A number within ``bounds``; checked by ``valid(value)``, or never (``valid=None``)."""
    return ClaimType(name, "number", description, valid=valid, bounds=bounds, **options)


def interval_claim(
    name: str, truth: Callable[[Any], Any], width: float, bounds: tuple[float, float], description: str, **options: Any
) -> ClaimType:
    """The claim that ``truth(state)`` lies in [c − width/2, c + width/2], its value the centre c in ``bounds``."""
    return ClaimType(name, "interval", description, truth=truth, width=width, bounds=bounds, **options)


# ---------------------------------------------------------------------------
# The paper's claims (module-level functions: schemas pickle by reference)
# ---------------------------------------------------------------------------
def _true_intent(state: Any) -> Any:
    return state.intent


def _risk_ok(state: Any) -> Any:
    return state.risk_within_limit


def _delta_ok(state: Any) -> Any:
    return state.net_delta_bounded


def _probability(value: Any) -> Any:
    return (0.0 <= value) & (value <= 1.0)


def _is_hedge(value: Any, limits: Any) -> Any:
    return value == 0  # Intent.HEDGE


PAPER_CLAIMS: tuple[ClaimType, ...] = (
    enum_claim(
        "intent",
        ("HEDGE", "SPECULATE"),
        _true_intent,
        "your intent",
        required=True,
        supports=_is_hedge,
        prompt='"HEDGE" or "SPECULATE" (your true intent is checked)',
    ),
    bool_claim(
        "risk_within_limit",
        _risk_ok,
        "your true risk is within the risk limit",
        required=True,
        prompt="true or false (checked against your true risk)",
    ),
    bool_claim(
        "net_delta_bounded",
        _delta_ok,
        "your true |net delta| is within the delta limit",
        required=True,
        prompt="true or false (checked against your true net delta)",
    ),
    number_claim("risk_metric", (0.0, 4.0), "your risk estimate", prompt="a number (never checked)"),
    number_claim(
        "confidence",
        (-1.0, 2.0),
        "your confidence",
        valid=_probability,
        prompt="a number in [0, 1] (fails an audit outside [0, 1])",
    ),
)
PAPER_NAMES = tuple(c.name for c in PAPER_CLAIMS)
# What a schema may not change of the paper's claims: their kind and how they are checked.
_PAPER_CHECK_FIELDS = ("kind", "truth", "antecedent", "consequent", "valid", "labels", "bounds", "width")


# ---------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ClaimSchema:
    """An ordered tuple of claim types: the paper's five, then the schema's own (see the module docstring)."""

    name: str
    claims: tuple[ClaimType, ...]
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or not self.name.replace("-", "_").isidentifier():
            raise ValueError(f"a claim schema's name must be a word (letters, digits, _ or -), got {self.name!r}")
        claims = tuple(self.claims)
        object.__setattr__(self, "claims", claims)
        if not all(isinstance(c, ClaimType) for c in claims):
            raise ValueError(f"claim schema {self.name!r}: claims must be ClaimType values")
        names = [c.name for c in claims]
        if tuple(names[: len(PAPER_NAMES)]) != PAPER_NAMES:
            raise ValueError(
                f"claim schema {self.name!r} must start with the paper's claims {list(PAPER_NAMES)} "
                f"(PAPER.claims), got {names}"
            )
        for own, paper in zip(claims, PAPER_CLAIMS, strict=False):
            # (the engines' fast paths and the scripted policies read the paper's claims by their paper meaning)
            changed = [f for f in _PAPER_CHECK_FIELDS if getattr(own, f) != getattr(paper, f)]
            if changed:
                raise ValueError(
                    f"claim schema {self.name!r}: the paper's claim {paper.name!r} keeps its kind and "
                    f"check (changed: {', '.join(changed)}; re-flag it with dataclasses.replace: "
                    "required, audit_cost)"
                )
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"claim schema {self.name!r} names a claim type twice: {twice}")

    def __reduce_ex__(self, protocol: Any) -> str | tuple[Any, ...]:
        """A registered schema pickles by its name (an environment holding one pickles mid-episode even when its
        claim types' functions are lambdas, as in the module docstring's example); another, by value."""
        if _SCHEMAS.get(self.name) is self:
            return get_schema, (self.name,)
        return super().__reduce_ex__(protocol)

    # -- derived ---------------------------------------------------------------
    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.claims)

    @cached_property
    def by_name(self) -> dict[str, ClaimType]:
        return {c.name: c for c in self.claims}

    @cached_property
    def extra(self) -> tuple[ClaimType, ...]:
        """The claim types the schema adds to the paper's."""
        return self.claims[len(PAPER_NAMES) :]

    @cached_property
    def checkable(self) -> tuple[str, ...]:
        """The audit's pool, in the order its budget samples from."""
        return tuple(c.name for c in self.claims if c.checkable)

    @cached_property
    def required(self) -> tuple[str, ...]:
        """The claims an audit needs to be conclusive (and the unaudited ambiguous approval to assert)."""
        return tuple(c.name for c in self.claims if c.required)

    @cached_property
    def nvec(self) -> tuple[int, ...]:
        """The ``claims`` MultiDiscrete's counts, one entry per claim type."""
        return tuple(c.nvec for c in self.claims)

    @cached_property
    def valued(self) -> tuple[str, ...]:
        """The claims whose value rides in ``claim_values``, in its order."""
        return tuple(c.name for c in self.claims if c.valued)

    @cached_property
    def value_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``claim_values`` Box's bounds."""
        valued = [self.by_name[n] for n in self.valued]
        return np.array([c.bounds[0] for c in valued], dtype=np.float64), np.array(
            [c.bounds[1] for c in valued], dtype=np.float64
        )

    @cached_property
    def audit_costs(self) -> tuple[float, ...]:
        """Each pool claim's ``audit_cost``, in the pool's order."""
        return tuple(self.by_name[n].audit_cost for n in self.checkable)

    @cached_property
    def has_audit_costs(self) -> bool:
        return any(self.audit_costs)

    @cached_property
    def stated(self) -> tuple[ClaimType, ...]:
        """The added claim types the scripted proposers state and the artifact space offers."""
        return tuple(c for c in self.extra if c.stated_by_policies)

    @property
    def is_paper(self) -> bool:
        return self.name == "paper"

    def audit_cost_of(self, checked: Sequence[str]) -> float:
        """What checking ``checked`` adds to the audit's cost c."""
        by_name = self.by_name
        total = 0.0
        for name in checked:
            total += by_name[name].audit_cost
        return total

    # -- policies --------------------------------------------------------------
    def sincere_claims(self, observed: Position) -> tuple[tuple[str, Any], ...]:
        """The added claims an honest proposer states from its ``observed`` position (:attr:`Claims.extra`)."""
        return tuple((c.name, c.policy_value(c.sincere(observed))) for c in self.stated)  # type: ignore[misc]

    def favourable_claims(self, reported: Position) -> tuple[tuple[str, Any], ...]:
        """The added claims a proposer asserting compliance states about its ``reported`` position."""
        return tuple((c.name, c.policy_value(c.favourable(reported))) for c in self.stated)  # type: ignore[misc]

    # -- the LLM ---------------------------------------------------------------
    def json_properties(self) -> dict[str, dict[str, Any]]:
        """The ``claims`` object's properties of the proposer's reply schema."""
        return {c.name: c.json_schema() for c in self.claims}

    def prompt_lines(self) -> str:
        """The proposer prompt's claim list, one line per claim type."""
        return "\n".join(f"- {c.name}: {c.prompt}" for c in self.claims)

    def pool_text(self) -> str:
        """The audit's pool as the prompt names it."""
        return ", ".join(self.checkable)

    def required_text(self) -> str:
        """The required claims as the prompt names them ("a, b or c")."""
        names = list(self.required)
        if len(names) <= 1:
            return "".join(names) or "(none)"
        return ", ".join(names[:-1]) + " or " + names[-1]


# ---------------------------------------------------------------------------
# The "rich" example
# ---------------------------------------------------------------------------
HEDGE_COVER = 0.5  # the conditional's hedge size
RISK_INTERVAL_WIDTH = 0.3  # the interval claim's declared width: three observation-noise SDs each side of half


def _hedging(state: Any) -> Any:
    return state.intent == 0  # Intent.HEDGE


def _hedge_covered(state: Any) -> Any:
    return state.hedge_size >= HEDGE_COVER


def _true_risk(state: Any) -> Any:
    return state.true_risk


def _sincere_cover(p: Position) -> Any:
    return np.logical_or(p.intent != 0, p.hedge_size >= HEDGE_COVER)


def _asserted(p: Position) -> Any:
    return np.ones_like(p.risk, dtype=bool) if isinstance(p.risk, np.ndarray) else True


def _risk_centre(p: Position) -> Any:
    return p.risk  # the observed risk (sincere), or the reported one (favourable: a consistent story)


def _interval_within_limit(value: Any, limits: Any) -> Any:
    return value - RISK_INTERVAL_WIDTH / 2 <= limits.risk_limit


PAPER = ClaimSchema("paper", PAPER_CLAIMS, "the paper's five claims")
RICH = ClaimSchema(
    "rich",
    (
        *PAPER_CLAIMS,
        conditional_claim(
            "hedge_covers",
            _hedging,
            _hedge_covered,
            "if your intent is HEDGE then your hedge size is at least 0.5",
            prompt='true or false: the claim "if your intent is HEDGE then your hedge size is at least 0.5" '
            "(checked against your true intent and hedge size; true whenever your intent is not HEDGE)",
            sincere=_sincere_cover,
            favourable=_asserted,
        ),
        interval_claim(
            "risk_interval",
            _true_risk,
            RISK_INTERVAL_WIDTH,
            (0.0, 4.0),
            "your true risk lies in [c - 0.15, c + 0.15]",
            prompt="a number c: the claim that your true risk lies in [c - 0.15, c + 0.15] (checked against your "
            "true risk; required like intent, risk_within_limit and net_delta_bounded)",
            required=True,
            audit_cost=0.05,
            supports=_interval_within_limit,
            sincere=_risk_centre,
            favourable=_risk_centre,
        ),
    ),
    "the paper's claims, a conditional hedge-cover claim and a required risk interval",
)


# ---------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------
_SCHEMAS: dict[str, ClaimSchema] = {"paper": PAPER, "rich": RICH}


def register_schema(schema: ClaimSchema, *, replace: bool = False) -> ClaimSchema:
    """Make ``schema`` available by its name (``claim_schema="name"``); ``"paper"`` cannot be replaced, and
    another name only with ``replace=True``."""
    if not isinstance(schema, ClaimSchema):
        raise TypeError(f"register_schema takes a ClaimSchema, got {type(schema).__name__}")
    if schema.name == "paper" and schema is not PAPER:
        raise ValueError("the 'paper' claim schema is the game's default and cannot be replaced")
    if schema.name in _SCHEMAS and not replace and _SCHEMAS[schema.name] is not schema:
        raise ValueError(f"a claim schema named {schema.name!r} is registered already (replace=True replaces it)")
    _SCHEMAS[schema.name] = schema
    return schema


def schema_names() -> tuple[str, ...]:
    """The registered schemas' names, ``"paper"`` first."""
    return tuple(_SCHEMAS)


def get_schema(name: str) -> ClaimSchema:
    """The registered schema ``name``, or a one-line ValueError listing the known ones."""
    try:
        return _SCHEMAS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown claim schema {name!r}; known: {', '.join(_SCHEMAS)}") from None


class _Names(Sequence[str]):
    """The registered schemas' names, live (the configuration's ``claim_schema`` choices and CLI flag)."""

    def __len__(self) -> int:
        return len(_SCHEMAS)

    def __getitem__(self, i: Any) -> Any:
        return tuple(_SCHEMAS)[i]

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(_SCHEMAS))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in _SCHEMAS

    def __repr__(self) -> str:
        return repr(tuple(_SCHEMAS))


SCHEMA_NAMES: Sequence[str] = _Names()


def replace_claim(claim: ClaimType, **changes: Any) -> ClaimType:
    """``claim`` with some fields changed (``required``, ``audit_cost``...), validated again."""
    return dataclasses.replace(claim, **changes)
