"""Checking a stored record (a JSON object) against the dataclass it is read back into.

A record file is edited by hand, truncated or written by another version; reading one back must say which
field is wrong and what was expected, not fail inside ``int()`` or a constructor.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["MAX_DEPTH", "checked_fields", "mean", "too_deep"]

# How deep arrays and objects may nest in a file the package reads (a spec, a card): far past any it needs (a
# card nests 7 levels, a sweep spec 3), and far short of what exhausts the stack of a recursive parser.
MAX_DEPTH = 32
# a string, skipped whole (an unclosed one runs to the end: the match never fails, so never backtracks), or a bracket
JSON_TOKENS = re.compile(r'"(?:[^"\\]+|\\[\s\S])*(?:"|\\?\Z)|[\[\]{}]')


def too_deep(text: str, limit: int = MAX_DEPTH, tokens: re.Pattern[str] = JSON_TOKENS) -> int | None:
    """The line (from 1) where ``text`` opens an array or object deeper than ``limit``, or None.

    ``tokens`` matches the brackets and whatever may hold a bracket that is none (JSON's strings; a format
    with comments matches those too). Parsers recurse once per level, so a file nested 100,000 deep would
    end in a RecursionError: check it first, in one pass of a regular expression, with no recursion.
    """
    depth = 0
    for match in tokens.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > limit:
                return text.count("\n", 0, match.start()) + 1
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)  # (malformed text: the parser says how)
    return None


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError("a non-negative integer")
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("a number")
    return float(value)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("true or false")
    return value


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("a string")
    return value


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise TypeError("a list of strings")
    return tuple(value)


def _numbers(value: Any) -> tuple[float, ...]:
    if not isinstance(value, (list, tuple)) or not all(_is_number(v) for v in value):
        raise TypeError("a list of numbers")
    return tuple(float(v) for v in value)


def _numbers_or_none(value: Any) -> tuple[float | None, ...]:
    if not isinstance(value, (list, tuple)) or not all(v is None or _is_number(v) for v in value):
        raise TypeError("a list of numbers or nulls")
    return tuple(None if v is None else float(v) for v in value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError("an object")
    return value


# the annotations the record dataclasses use (as strings: their modules use postponed annotations)
_CHECKS: dict[str, Callable[[Any], Any]] = {
    "int": _integer,
    "float": _number,
    "bool": _boolean,
    "str": _string,
    "tuple[str, ...]": _strings,
    "tuple[float, ...]": _numbers,
    "tuple[float | None, ...]": _numbers_or_none,
    "dict[str, Any]": _object,
}


def mean(values: Sequence[float]) -> float:
    """The mean of ``values`` (exactly summed), NaN for none: what a metric over no episode is."""
    return math.fsum(values) / len(values) if values else math.nan


def checked_fields(cls: type, data: Any) -> dict[str, Any]:
    """The constructor arguments of dataclass ``cls`` found in ``data``, each checked against its annotation.

    A field without a default must be present. Raises ValueError naming the field and what it must be.
    Keys that are not fields are ignored; a field whose annotation is not one of the simple types above is
    passed through unchecked.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"an episode record must be a JSON object, got {data!r}")
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"missing field {f.name!r}")
            continue
        value = data[f.name]
        kind = str(f.type)
        optional = kind.endswith(" | None")
        check = _CHECKS.get(kind.removesuffix(" | None"))
        if check is None or (optional and value is None):
            values[f.name] = value
            continue
        try:
            values[f.name] = check(value)
        except TypeError as err:
            raise ValueError(f"{f.name} must be {err}{' or null' if optional else ''}, got {value!r}") from None
    return values
