"""Replies of LLM policies: JSON out of a model's text, checked against a JSON schema, with errors a model
can act on (the policies send them back when they ask again). Game-agnostic: each game's schemas and
parsers use it.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

__all__ = ["ReplyError", "checked_reply", "conforms", "extract_json"]


class ReplyError(ValueError):
    """A reply that is not valid JSON or breaks the schema; the message says what to fix."""


def extract_json(text: str) -> Any:
    """The reply as JSON: the whole text, else the first balanced ``{...}`` object in it (fenced or not)."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
            return value
        except ValueError:
            start = text.find("{", start + 1)
    raise ReplyError("the reply contains no JSON object; answer with one JSON object and nothing else")


def conforms(data: Any, schema: dict[str, Any]) -> bool:
    """Whether ``data`` satisfies ``schema``, for the keywords our schemas use (type, enum, minimum,
    maximum, properties, required, additionalProperties). A fast path: jsonschema runs only to
    explain a failure. tests check that both agree."""
    types = schema.get("type")
    if types is not None:
        allowed = types if isinstance(types, list) else [types]
        if not any(_is_type(data, t) for t in allowed):
            return False
    if "enum" in schema and not any(data == v and type(data) is type(v) for v in schema["enum"]):
        return False
    if isinstance(data, (int, float)) and not isinstance(data, bool):
        if "minimum" in schema and data < schema["minimum"]:
            return False
        if "maximum" in schema and data > schema["maximum"]:
            return False
    if isinstance(data, dict) and "properties" in schema:
        props = schema["properties"]
        if any(k not in data for k in schema.get("required", ())):
            return False
        if schema.get("additionalProperties") is False and any(k not in props for k in data):
            return False
        return all(conforms(v, props[k]) for k, v in data.items() if k in props)
    return True


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # not NaN
    raise ValueError(f"schema type {name!r} not handled by the fast check")


def checked_reply(reply: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The reply's JSON object if it satisfies ``schema``, else a :class:`ReplyError` saying where it breaks it."""
    data = extract_json(reply)
    if conforms(data, schema):
        return data
    errors = sorted(validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:  # only NaN gets here: JSON Schema calls it a number, the environment does not
        raise ReplyError("the JSON holds a number that is not finite (NaN); use a real number or null")
    where = "/".join(str(p) for p in errors[0].absolute_path) or "(top level)"
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    raise ReplyError(f"the JSON breaks the schema at {where}: {errors[0].message}{more}")


_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}


def validator(schema: dict[str, Any]) -> Any:
    """The jsonschema validator of ``schema``, compiled once per schema object."""
    hit = _VALIDATORS.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = _VALIDATORS[id(schema)] = (schema, jsonschema.Draft202012Validator(schema))
    return hit[1]
