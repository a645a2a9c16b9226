"""What a scripted OpenAI-compatible server answers: a :class:`Reply`, and the :data:`Script` that makes one.

A leaf module, so that both the server (:mod:`eq_env.agents.fake_server`, which re-exports these names) and
the games' stand-in scripts (:mod:`eq_env.agents.stand_in`) can name a reply without importing each other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Reply", "Script", "reply_json"]


@dataclass
class Reply:
    """One scripted answer: a chat completion with ``content``, or an error ``status`` with ``body``."""

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: dict[str, Any] | None = None  # an error body, or a whole raw response
    raw: bytes | None = None  # the exact bytes of the body (HTML from a proxy, a truncated body...)
    choices: list[str] | None = None  # the samples of a request with ``n > 1`` (default: ``content`` n times)
    cut: int | None = None  # send only this many bytes of the body, then close the connection (a dropped link)


Script = Callable[[dict[str, Any], int], Reply]


def reply_json(payload: dict[str, Any], **kw: Any) -> Reply:
    return Reply(content=json.dumps(payload), **kw)
