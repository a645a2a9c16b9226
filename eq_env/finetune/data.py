"""Demonstration files: reading them, checking them, and turning them into what TRL's trainers take.

A demonstration file is JSONL, one decision per line, as ``eq-env finetune demos`` (and ``eq-env einstein
demos``) write it::

    {"messages": [{"role": "system", ...}, {"role": "user", ...}, {"role": "assistant", ...}], "meta": {...}}

The user turn is exactly the player's prompt at that decision, the assistant turn the demonstrated reply.
:func:`read_demos` reads and checks a file (a bad line is a ValueError naming the file and the line);
:func:`prompt_completion` turns a line into TRL's conversational *prompt–completion* form (the loss is then on
the reply only); :func:`verified` says whether the game's verifiers accept a line (``meta.verified``, or the
Einstein files' ``meta.rational``), for ``--verified-only``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["digest", "prompt_completion", "read_demos", "verified"]

_ROLES = ("system", "user", "assistant")


def _check_line(line: Any, where: str) -> dict[str, Any]:
    if not isinstance(line, dict) or not isinstance(line.get("messages"), list):
        raise ValueError(f"{where}: expected an object with a 'messages' list")
    messages = line["messages"]
    if len(messages) < 2:
        raise ValueError(
            f"{where}: 'messages' needs a prompt and the assistant's reply, got {len(messages)} message(s)"
        )
    for i, m in enumerate(messages):
        if not (isinstance(m, dict) and m.get("role") in _ROLES and isinstance(m.get("content"), str)):
            raise ValueError(f"{where}: message {i} must be {{'role': system|user|assistant, 'content': text}}")
    if messages[-1]["role"] != "assistant":
        raise ValueError(f"{where}: the last message must be the assistant's reply, not the {messages[-1]['role']}'s")
    if line.get("meta") is not None and not isinstance(line["meta"], dict):
        raise ValueError(f"{where}: 'meta' must be an object")
    return line


def read_demos(path: Path) -> Iterator[dict[str, Any]]:
    """The lines of a demonstration file, checked (ValueError: ``FILE line N: what is wrong``)."""
    try:
        f = path.open(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"{path}: cannot read it ({err.strerror})") from None
    with f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            where = f"{path} line {number}"
            try:
                line = json.loads(text)
            except json.JSONDecodeError as err:
                raise ValueError(f"{where}: not JSON ({err.msg})") from None
            yield _check_line(line, where)


def verified(line: dict[str, Any]) -> bool:
    """Does the game's verifier accept this demonstration? (Lines without a verdict count as accepted.)"""
    meta = line.get("meta") or {}
    if "verified" in meta:
        return bool(meta["verified"])
    return bool(meta.get("rational", True))


def prompt_completion(line: dict[str, Any]) -> dict[str, Any]:
    """TRL's conversational prompt–completion form of a line: the prompt turns, then the reply."""
    return {"prompt": line["messages"][:-1], "completion": line["messages"][-1:]}


def digest(path: Path) -> str:
    """SHA-256 of a file, for the model card."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
