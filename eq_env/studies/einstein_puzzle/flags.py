"""Flag types the Einstein puzzle's commands share: comm modes and object counts."""

from __future__ import annotations

import argparse
import re

from eq_env.core.cli import int_in, list_of

__all__ = ["comm_modes", "object_counts"]


def comm_modes(text: str) -> list[str]:
    from eq_env.einstein_puzzle.rules import COMM_MODES

    if text == "all":
        return list(COMM_MODES)
    modes = list_of(str, "comm modes", distinct=True)(text)
    bad = [m for m in modes if m not in COMM_MODES]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown comm mode(s) {bad}; choose from {', '.join(COMM_MODES)} or all")
    return modes


_RANGE = re.compile(r"\s*([0-9]+)\s*-\s*([0-9]+)\s*")  # LOW-HIGH (a leading "-" is a negative count)


def object_counts(text: str) -> list[int]:
    """``4``, ``4,6`` or ``4-8``."""
    parse = int_in(4, 16)
    matched = _RANGE.fullmatch(text)
    if matched:
        a, b = parse(matched[1]), parse(matched[2])
        if a > b:
            raise argparse.ArgumentTypeError(f"expected LOW-HIGH with LOW <= HIGH, got {text!r}")
        return list(range(a, b + 1))
    return list_of(parse, "object counts in [4, 16]", distinct=True)(text)
