"""Scripted models of every game behind one local server, for ``eq-env bench --demo`` and its tests.

:class:`BenchDemoScript` routes each chat request to the game it belongs to (each game's
``bench_request`` recognises its own prompts) and answers as that game's scripted model of the quality
the request's model name asks for (each game's ``bench_script(quality)``):

* ``bench-good`` — plays well;
* ``bench-mediocre`` — clearly worse on every task's main metric;
* ``bench-hostile`` — malformed and schema-breaking replies, injected instructions, 429s and 5xx, and a
  fixed subset of prompts always refused, so that some episodes fail and are recorded as failed.

A reply depends on the request alone (never on arrival order), so concurrency cannot change a run. Every
error carries ``retry-after-ms: 1``, so the retries cost no time. The numbers these models produce
describe the scripts, not a language model.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from eq_env.agents.fake_server import Reply

__all__ = ["DEMO_ENDPOINT", "DEMO_MODELS", "GAME_SCRIPTS", "BenchDemoScript", "demo_endpoint", "quality_of"]

DEMO_ENDPOINT = "http://eq-env-bench-demo.localhost/v1"  # the server's name in keys and records (its port varies)
DEMO_MODELS = ("bench-good", "bench-mediocre", "bench-hostile")
GAME_SCRIPTS = (
    "eq_env.agents.exchange_audit.scripts",
    "eq_env.agents.einstein_puzzle.scripts",
    "eq_env.agents.belief_coordination.scripts",
)


def quality_of(model: str) -> str | None:
    """``good``, ``mediocre`` or ``hostile`` for a demo model's name; None for any other."""
    return model.removeprefix("bench-") if model in DEMO_MODELS else None


@functools.cache
def _script(module: str, quality: str) -> Any:
    return importlib.import_module(module).bench_script(quality)


class BenchDemoScript:
    """``script(request, n) -> Reply``: the demo models of every game (see the module docstring)."""

    def __call__(self, request: dict[str, Any], n: int) -> Reply:
        quality = quality_of(str(request.get("model")))
        if quality is None:
            return Reply(
                status=404,
                body={
                    "error": {
                        "message": f"model {request.get('model')!r} is not served "
                        f"here; the demo serves {', '.join(DEMO_MODELS)}"
                    }
                },
            )
        for module in GAME_SCRIPTS:
            if importlib.import_module(module).bench_request(request):
                reply: Reply = _script(module, quality)(request, n)
                if reply.status >= 400 and not {"retry-after", "retry-after-ms"} & {k.lower() for k in reply.headers}:
                    # a scripted error is retried at once: the client's default backoff (0.5 s doubled five times)
                    # would make the demo wait minutes for outages that are part of its script
                    reply.headers = {**reply.headers, "retry-after-ms": "1"}
                return reply
        return Reply(status=400, body={"error": {"message": "a prompt of no game this demo knows"}})


@contextmanager
def demo_endpoint() -> Iterator[str]:
    """The demo server, running, under its fixed name :data:`DEMO_ENDPOINT` (requests to it go to the server)."""
    from eq_env.agents.client import alias_endpoint
    from eq_env.agents.fake_server import ScriptedLLMServer

    with ScriptedLLMServer(BenchDemoScript(), models=DEMO_MODELS) as server:
        yield alias_endpoint(DEMO_ENDPOINT, server.url)
