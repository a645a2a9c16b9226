"""JSON schemas of the LLM replies, derived from the action spaces, and their parsers.

The proposer answers with one JSON object::

    {"action": "REQUEST_APPROVAL" | "NO_TRADE",
     "proposal": {"intent": "HEDGE" | "SPECULATE", "risk": n, "net_delta": n, "hedge_size": n},
     "claims": {"intent": "HEDGE" | "SPECULATE" | null, "risk_within_limit": bool | null,
                "net_delta_bounded": bool | null, "risk_metric": n | null, "confidence": n | null},
     "text": "..."}

and the validator with ``{"decision": "APPROVE" | "BLOCK", "reason": "..."}``.
Under a claim schema other than the paper's (:mod:`eq_env.exchange_audit.schema`)
the ``claims`` object has one more property per claim the schema adds (its
type from the claim's kind: a boolean, a number within its bounds, or one of
its labels; null when not made): :func:`proposer_schema` derives it.
The bounds of every number are those of the action space
(:data:`eq_env.exchange_audit.spaces.NUMBER_BOUNDS`), so a reply that parses
is an action the environment accepts. :class:`~eq_env.agents.replies.ReplyError` says
precisely what is wrong with a reply; the policies send that message back to
the model when they ask again.
"""

from __future__ import annotations

import functools
from typing import Any

from eq_env.agents.replies import ReplyError, checked_reply, extract_json
from eq_env.exchange_audit.rules import (
    Claims,
    Decision,
    Intent,
    Proposal,
    ProposerAction,
    Submission,
    make_artifact,
    truncate_words,
)
from eq_env.exchange_audit.schema import ClaimSchema, get_schema
from eq_env.exchange_audit.spaces import (
    CLAIM_VALUE_BOUNDS,
    CLAIM_VALUE_NAMES,
    NUMBER_BOUNDS,
    NUMBER_NAMES,
    FreeText,
)

__all__ = [
    "PROPOSER_SCHEMA",
    "VALIDATOR_SCHEMA",
    "ReplyError",
    "claims_from_json",
    "clean_text",
    "extract_json",
    "parse_proposer_reply",
    "parse_validator_reply",
    "proposer_schema",
]


def _number(low: float, high: float, nullable: bool = False) -> dict[str, Any]:
    kind: Any = ["number", "null"] if nullable else "number"
    return {"type": kind, "minimum": low, "maximum": high}


def _proposer_schema(claim_schema: str | ClaimSchema = "paper") -> dict[str, Any]:
    low, high = (b.tolist() for b in NUMBER_BOUNDS)
    clow, chigh = (b.tolist() for b in CLAIM_VALUE_BOUNDS)
    intents = [i.name for i in Intent]
    proposal = {name: _number(low[i], high[i]) for i, name in enumerate(NUMBER_NAMES)}
    claim_values = {name: _number(clow[i], chigh[i], nullable=True) for i, name in enumerate(CLAIM_VALUE_NAMES)}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": [a.name for a in reversed(ProposerAction)]},
            "proposal": {
                "type": "object",
                "properties": {"intent": {"type": "string", "enum": intents}, **proposal},
                "required": ["intent", *NUMBER_NAMES],
                "additionalProperties": False,
            },
            "claims": {
                "type": "object",
                "properties": {
                    "intent": {"type": ["string", "null"], "enum": [*intents, None]},
                    "risk_within_limit": {"type": ["boolean", "null"]},
                    "net_delta_bounded": {"type": ["boolean", "null"]},
                    **claim_values,
                },
                "required": ["intent", "risk_within_limit", "net_delta_bounded", *CLAIM_VALUE_NAMES],
                "additionalProperties": False,
            },
            "text": {"type": "string"},
        },
        "required": ["action", "proposal", "claims", "text"],
        "additionalProperties": False,
    }
    # a claim schema's own claims, after the paper's (their properties derived from each claim's kind)
    extra = (claim_schema if isinstance(claim_schema, ClaimSchema) else get_schema(claim_schema)).extra
    schema["properties"]["claims"]["properties"].update({c.name: c.json_schema() for c in extra})
    schema["properties"]["claims"]["required"] += [c.name for c in extra]
    return schema


@functools.lru_cache(maxsize=16)
def _proposer_schema_cached(claim_schema: ClaimSchema) -> dict[str, Any]:
    return _proposer_schema(claim_schema)


def proposer_schema(claim_schema: str = "paper") -> dict[str, Any]:
    """The proposer's reply schema under the registered claim schema ``claim_schema`` (the same object every call:
    do not modify it). Cached by the schema itself, not its name: a schema registered again under the same name
    (``register_schema(..., replace=True)``) gets its own."""
    return PROPOSER_SCHEMA if claim_schema == "paper" else _proposer_schema_cached(get_schema(claim_schema))


PROPOSER_SCHEMA: dict[str, Any] = _proposer_schema()
VALIDATOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": [d.name for d in reversed(Decision)]},
        "reason": {"type": "string"},
    },
    "required": ["decision", "reason"],
    "additionalProperties": False,
}


def clean_text(text: str, max_words: int, max_chars: int) -> str:
    """Free text as the environment accepts it: control characters become spaces, then at most
    ``max_words`` words and ``max_chars`` characters."""
    if FreeText.bad_character(text) is not None:
        text = "".join(" " if FreeText.bad_character(ch) is not None else ch for ch in text)
    return truncate_words(text, max_words)[:max_chars]


def claims_from_json(c: dict[str, Any], claim_schema: str = "paper") -> Claims:
    """The :class:`Claims` of a schema-valid ``claims`` object (null: a claim not made); ``claim_schema``: the
    registered claim schema whose own claims it may hold too."""
    extra = tuple(
        (claim.name, claim.from_json(c[claim.name]))
        for claim in get_schema(claim_schema).extra
        if c.get(claim.name) is not None
    )
    return Claims(
        intent=None if c["intent"] is None else Intent[c["intent"]],
        risk_within_limit=c["risk_within_limit"],
        net_delta_bounded=c["net_delta_bounded"],
        risk_metric=c["risk_metric"],
        confidence=c["confidence"],
        extra=extra,
    )


def parse_proposer_reply(
    reply: str, max_words: int, max_chars: int, tokens: int = 0, claim_schema: str = "paper"
) -> Submission:
    """The :class:`Submission` a proposer reply encodes (its text cleaned by :func:`clean_text`), under the
    registered claim schema ``claim_schema``."""
    data = checked_reply(reply, proposer_schema(claim_schema))
    p = data["proposal"]
    claims = claims_from_json(data["claims"], claim_schema)
    return Submission(
        ProposerAction[data["action"]],
        Proposal(Intent[p["intent"]], p["risk"], p["net_delta"], p["hedge_size"]),
        make_artifact(claims, clean_text(data["text"], max_words, max_chars), max_words, tokens=tokens),
    )


def parse_validator_reply(reply: str) -> tuple[Decision, str]:
    data = checked_reply(reply, VALIDATOR_SCHEMA)
    return Decision[data["decision"]], data["reason"]
