"""Replies of LLM policies: JSON out of a model's text, checked against a JSON schema, with errors a model
can act on (the policies send them back when they ask again). Game-agnostic: each game's schemas and
parsers use it.

A reply is the JSON of its whole text, else the first JSON object in it (looked for at no more than
:data:`MAX_ATTEMPTS` places where one could start). Whatever a model writes is at worst an invalid reply
(:class:`ReplyError`), never another exception: JSON nested deeper than :data:`MAX_DEPTH` levels is
refused, and the model is told so (Python's parser raises ``RecursionError`` past about a thousand levels,
and the schema checks recurse too); an error quotes at most :data:`QUOTE_CHARS` characters of the reply's
values, so that a re-ask stays short.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import jsonschema

__all__ = ["MAX_ATTEMPTS", "MAX_DEPTH", "QUOTE_CHARS", "ReplyError", "checked_reply", "conforms", "extract_json"]

MAX_DEPTH = 32  # levels of JSON nesting a reply may have (the schemas use three)
QUOTE_CHARS = 300  # characters of an error message: the schema's messages quote the offending value
MAX_ATTEMPTS = 64  # places in a reply where a JSON object is looked for, after the whole reply
_OBJECT_START = re.compile(r'\{\s*["}]')  # where a JSON object can start: a key or nothing follows the brace


class ReplyError(ValueError):
    """A reply that is not valid JSON or breaks the schema; the message says what to fix."""


_TOO_DEEP = f"the JSON is nested more than {MAX_DEPTH} levels deep; answer with one flat JSON object as the schema says"


def extract_json(text: str) -> Any:
    """The reply as JSON: the whole text, else the first balanced ``{...}`` object in it (fenced or not);
    a :class:`ReplyError` when there is none, or when it nests deeper than :data:`MAX_DEPTH`."""
    text = text.strip()
    try:
        return _shallow(json.loads(text))
    except ValueError:
        pass
    except RecursionError:  # (deeper than the parser goes: no object inside it is any shallower)
        raise ReplyError(_TOO_DEEP) from None
    decoder = json.JSONDecoder()
    # (only where an object can start, and a bounded number of times: each failed attempt costs time in
    # proportion to its position, so a megabyte of "{" would take hours)
    for m in itertools.islice(_OBJECT_START.finditer(text), MAX_ATTEMPTS):
        try:
            value, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        except RecursionError:
            raise ReplyError(_TOO_DEEP) from None
        return _shallow(value)
    raise ReplyError("the reply contains no JSON object; answer with one JSON object and nothing else")


def _shallow(value: Any) -> Any:
    """``value`` if it nests at most :data:`MAX_DEPTH` levels, else a :class:`ReplyError` (walked without recursion)."""
    level: list[Any] = [value]
    for _ in range(MAX_DEPTH):
        level = [v for x in level if isinstance(x, (dict, list)) for v in (x.values() if isinstance(x, dict) else x)]
        if not level:
            return value
    if any(isinstance(x, (dict, list)) for x in level):
        raise ReplyError(_TOO_DEEP)
    return value


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
    message = errors[0].message  # (it quotes the offending value: cut, so that a huge one is not sent back)
    if len(message) > QUOTE_CHARS:
        message = message[: QUOTE_CHARS - 3] + "..."
    raise ReplyError(f"the JSON breaks the schema at {where}: {message}{more}")


_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}


def validator(schema: dict[str, Any]) -> Any:
    """The jsonschema validator of ``schema``, compiled once per schema object."""
    hit = _VALIDATORS.get(id(schema))
    if hit is None or hit[0] is not schema:
        hit = _VALIDATORS[id(schema)] = (schema, jsonschema.Draft202012Validator(schema))
    return hit[1]
