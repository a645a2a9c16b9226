"""A local OpenAI-compatible chat-completions server that answers from a script, and the offline stand-in
model of every game.

**The offline stand-in** (no key, no network: everything on 127.0.0.1)::

    python -m eq_env.agents.fake_server                       # every game's roles, on a free port
    python -m eq_env.agents.fake_server --env einstein-puzzle --port 8000

prints the base URL to give a client (``http://127.0.0.1:PORT/v1``) and serves three scripted models by
name, for every LLM role of every registered game (:func:`eq_env.agents.stand_in.stand_in_games`)::

    eq-env play --env einstein-puzzle --player_0 llm --model bad --base-url http://127.0.0.1:PORT/v1
    eq-env play --env einstein-puzzle --player_0 llm:verifier=reasoning,k=4 --model bad --base-url ...

=============  =======================================================================================
model          what it does, in every role of every game
=============  =======================================================================================
``good``       plays well: each game's scripted participant that plays correctly
``bad``        plays badly but every reply is well formed (the games' "mediocre" scripted models)
``hostile``    the good model through a hostile link: malformed and schema-breaking replies, injected
               instructions, 429s and 5xx now and then, and some prompts always refused (500), so some
               episodes fail and are recorded as failed
=============  =======================================================================================

Each game says what its models do (its ``scripts`` module: :mod:`eq_env.agents.exchange_audit.scripts`,
:mod:`eq_env.agents.einstein_puzzle.scripts`, :mod:`eq_env.agents.belief_coordination.scripts`). A request is
routed by its prompt to the game and role whose prompt it is (each game's stand-in recognises its own:
:mod:`eq_env.agents.stand_in`); one that no served role recognises gets 400 naming what was expected, as does
a body that is no chat request (not a JSON object, ``messages`` not an array of objects with string
``content``), and a model other than the three gets 404 naming them. ``--env GAME`` (repeatable) serves only
those games' roles; ``--port`` a port of your choice (one in use is a one-line error). A reply depends on the
request alone, never on arrival order, so the same run gives the same numbers (the hostile model's failures
"the first time" a request arrives are per server: restart it to replay a run exactly); every scripted error
asks for a retry after 1 ms (``retry-after-ms``), so retries cost no time. Ctrl-C stops the server (exit 0)
and prints what it answered, by game, role and model. The numbers these models produce describe the scripts,
not a language model.

**The scripted server** (tests and benchmarks point the LLM policies at it)::

    with ScriptedLLMServer(honest_script) as server:
        policy = LLMProposer(base_url=server.url, model="fake")
        ...
        server.requests  # every request body received

A *script* is a callable ``script(request: dict, n: int) -> Reply`` (``n``
counts requests from 0) or a list of replies served in turn (the last one
repeats). A :class:`Reply` sets the status, headers, delay and content of one
answer, so a script can produce good replies, malformed JSON, replies that
break the schema, 429s with ``Retry-After``, 500s and slow replies.
:class:`eq_env.agents.stand_in.StandInScript` is the stand-in's script.

This module knows no game: every server is given its script (the exchange–audit game's honest
participant is :func:`eq_env.agents.exchange_audit.scripts.honest_script`; each game's stand-in is
registered in :mod:`eq_env.agents.stand_in`).

``POST /v1/chat/completions`` is served, and ``GET /v1/models`` when the server
is given ``models`` (a list of model ids; without it, 404 as on a minimal
server). With ``api_key`` set, a request without ``Authorization: Bearer
<api_key>`` gets 401. It binds to 127.0.0.1, on a free port or the one given.

**A game's stand-in.** A game registers a :class:`eq_env.agents.stand_in.StandIn` under its name, from the
package that registers its LLM policies (one of its ``eq_env.policies`` entry points): the roles it answers, how
to tell a request's role from its prompt, and its script for each model. This module knows no game.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from typing import Any

from eq_env.agents.scripted_reply import Reply, Script, reply_json

__all__ = [
    "ChaosScript",
    "Reply",
    "ScriptedLLMServer",
    "main",
    "reply_json",
]


class ChaosScript:
    """Every failure mode at once, decided per request so that concurrency cannot reorder it.

    The original prompt of a request picks its fate (by a hash, in twentieths): most are
    answered honestly; one in twenty is always a 500 (the episode fails after the retries),
    and single twentieths are first answered with malformed JSON, with a reply breaking the
    schema, with a 429 carrying ``Retry-After``, with a 500, too slowly (past the client's
    timeout) — each time fine afterwards — or always with malformed JSON (a fallback).
    ``delay`` is how slow "too slowly" is; ``answer`` answers the good ones (a game's script, e.g. the
    exchange–audit game's :func:`~eq_env.agents.exchange_audit.scripts.honest_script`).
    """

    FATES = (
        "down",
        "malformed_once",
        "schema_once",
        "rate_limited_once",
        "error_once",
        "slow_once",
        "always_malformed",
    )

    def __init__(self, delay: float = 1.0, *, answer: Script) -> None:
        self.delay = delay
        self.answer = answer
        self.seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def fate(self, request: dict[str, Any]) -> str:
        prompt = json.dumps(request.get("messages", [])[:2], sort_keys=True)
        bucket = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 20
        return self.FATES[bucket] if bucket < len(self.FATES) else "good"

    def __call__(self, request: dict[str, Any], n: int) -> Reply:
        body = json.dumps(request, sort_keys=True)
        with self._lock:
            first = body not in self.seen
            self.seen[body] = self.seen.get(body, 0) + 1
        fate = self.fate(request)
        reasked = len(request.get("messages", [])) > 2
        if fate == "down":
            return Reply(status=500, body={"error": {"message": "scripted outage"}})
        if fate == "always_malformed" or (fate == "malformed_once" and not reasked):
            return Reply(content='{"action": "REQUEST_APPROVAL", "proposal": ')
        if fate == "schema_once" and not reasked:
            return reply_json({"action": "MAYBE"})
        if first and fate == "rate_limited_once":
            return Reply(status=429, headers={"Retry-After": "0.05"}, body={"error": {"message": "slow down"}})
        if first and fate == "error_once":
            return Reply(status=502, body={"error": {"message": "bad gateway"}})
        if first and fate == "slow_once":
            return Reply(content="{}", delay=self.delay)
        return self.answer(request, n)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)  # a fixed rule, so usage is deterministic


def _completion(request: dict[str, Any], n: int, contents: list[str]) -> dict[str, Any]:
    prompt = "".join(str(m.get("content") or "") for m in request.get("messages", []))
    usage = {"prompt_tokens": _tokens(prompt), "completion_tokens": sum(_tokens(c) for c in contents)}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "fake"),
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": c}, "finish_reason": "stop", "logprobs": None}
            for i, c in enumerate(contents)
        ],
        "usage": usage,
    }


def _http(status: int, body: dict[str, Any] | bytes, headers: dict[str, str]) -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests"}.get(
        status, "Error"
    )
    head = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json", f"Content-Length: {len(data)}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


def _type_name(value: object) -> str:
    """JSON's name for the type of a decoded value, for the 400 that says what was sent."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _shape_error(request: object) -> str | None:
    """What is wrong with the shape of a chat-completions request body, as the 400 says it; None if nothing.
    (A script reads ``request["messages"][i]["content"]`` as a string; a body of another shape would otherwise
    break the connection or the script.)"""
    if not isinstance(request, dict):
        return f"request body must be a JSON object, got {_type_name(request)}"
    messages = request.get("messages")
    if not isinstance(messages, list):
        got = "none" if "messages" not in request else _type_name(messages)
        return f"'messages' must be an array of message objects, got {got}"
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"'messages[{i}]' must be an object with 'role' and 'content', got {_type_name(message)}"
        if not isinstance(message.get("content"), str):
            got = "none" if "content" not in message else _type_name(message["content"])
            return f"'messages[{i}].content' must be a string, got {got}"
    return None


class _Dropped(bytes):
    """A response of which only the headers and ``cut`` bytes of the body are sent before the link drops."""

    cut: int


def _dropped(answer: bytes, cut: int | None) -> bytes:
    if cut is None:
        return answer
    dropped = _Dropped(answer)
    dropped.cut = cut
    return dropped


class _Server:
    """HTTP/1.1 with keep-alive on an asyncio loop: a slow answer is an ``asyncio.sleep``, so a
    hundred requests in flight cost no threads and no lock contention."""

    def __init__(
        self,
        script: Script,
        latency: float,
        models: Sequence[str] | None,
        api_key: str | None,
        n_supported: bool = True,
        port: int = 0,
    ) -> None:
        self.script = script
        self.n_supported = n_supported
        self.latency = latency
        self.models = None if models is None else list(models)
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.model_requests = 0
        self.paths: list[str] = []  # the path (with its query) of every chat request
        self.authorizations: list[str] = []  # the Authorization header of every chat request ("": none)
        self.in_flight = 0
        self.max_in_flight = 0
        self.connections: set[asyncio.Task[Any]] = set()
        self.loop = asyncio.new_event_loop()
        try:
            self.server = self.loop.run_until_complete(
                asyncio.start_server(self._connection, "127.0.0.1", port, backlog=256)
            )
        except OSError:
            self.loop.close()
            raise
        self.port = self.server.sockets[0].getsockname()[1]

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.connections.add(task)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                method, path, _ = ([*line.decode("latin-1").split(" ", 2), "", ""])[:3]
                length, keep_alive, auth = 0, True, ""
                while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                    elif name.strip().lower() == "connection" and value.strip().lower() == "close":
                        keep_alive = False
                    elif name.strip().lower() == "authorization":
                        auth = value.strip()
                raw = await reader.readexactly(length) if length else b""
                answer = await self._answer(method, path, raw, auth)
                if isinstance(answer, _Dropped):  # the headers promise the whole body; the link drops in it
                    head, _, body = answer.partition(b"\r\n\r\n")
                    writer.write(head + b"\r\n\r\n" + body[: answer.cut])
                    await writer.drain()
                    return
                writer.write(answer)
                await writer.drain()
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            writer.close()
            self.connections.discard(task)  # type: ignore[arg-type]

    async def _answer(self, method: str, path: str, raw: bytes, auth: str) -> bytes:
        """The response's bytes (a :class:`_Dropped` when the link is to drop partway through the body)."""
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return _http(401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}, {})
        route = path.partition("?")[0].rstrip("/")
        if method == "GET" and route.endswith("/models") and self.models is not None:
            self.model_requests += 1
            return _http(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]}, {})
        if method != "POST" or not route.endswith("/chat/completions"):
            return _http(404, {"error": {"message": f"not found: {method} {path}"}}, {})
        self.paths.append(path)
        try:
            request = json.loads(raw)
        except ValueError:
            return _http(400, {"error": {"message": "request body is not JSON"}}, {})
        shape = _shape_error(request)
        if shape is not None:
            return _http(400, {"error": {"message": shape, "type": "invalid_request_error"}}, {})
        self.requests.append(request)
        self.authorizations.append(auth)  # (beside its request: the script's n indexes both)
        n = len(self.requests) - 1
        samples = request.get("n", 1) if isinstance(request.get("n", 1), int) else 1
        if samples != 1 and not self.n_supported:  # as endpoints that serve one sample per request answer
            error = {"message": "n must be 1", "type": "invalid_request_error", "param": "n"}
            return _http(400, {"error": error}, {})
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            try:
                reply = self.script(request, n)
            except Exception as err:  # a broken script answers 500 rather than dropping the connection
                reply = Reply(status=500, body={"error": {"message": f"script error: {err!r}"}})
            delay = reply.delay + self.latency
            if delay:
                await asyncio.sleep(delay)
        finally:
            self.in_flight -= 1
        if reply.raw is not None:
            return _dropped(_http(reply.status, reply.raw, reply.headers), reply.cut)
        if reply.status != 200:
            body = reply.body or {"error": {"message": f"scripted status {reply.status}", "type": "scripted"}}
            return _dropped(_http(reply.status, body, reply.headers), reply.cut)
        contents = reply.choices if reply.choices is not None and samples != 1 else [reply.content or ""] * samples
        return _dropped(
            _http(200, reply.body if reply.body is not None else _completion(request, n, contents), reply.headers),
            reply.cut,
        )

    def serve_forever(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def shutdown(self) -> None:
        async def close() -> None:
            self.server.close()
            for task in list(self.connections):  # idle keep-alive connections end here, quietly
                task.cancel()
            await asyncio.gather(*self.connections, return_exceptions=True)
            await self.server.wait_closed()
            self.loop.stop()

        asyncio.run_coroutine_threadsafe(close(), self.loop)


class ScriptedLLMServer:
    """The server, on 127.0.0.1 and a free port, in a background thread.

    Args:
        script: a callable ``(request, n) -> Reply`` or a list of replies
            served in order (the last repeats).
        latency: seconds added to every answer (an artificial model latency).
        models: the model ids ``GET /v1/models`` lists (default: the route is not served, 404).
        api_key: the key every request must carry (default: none needed).
        n_supported: whether a request may ask for ``n > 1`` samples (each the script's ``content``, or its
            ``choices``); when not, such a request gets 400, as on endpoints serving one sample per request.
        port: the port to listen on (default 0: a free one); an OSError if it cannot be had.
    """

    def __init__(
        self,
        script: Script | Sequence[Reply],
        *,
        latency: float = 0.0,
        models: Sequence[str] | None = None,
        api_key: str | None = None,
        n_supported: bool = True,
        port: int = 0,
    ) -> None:
        if script is None or isinstance(script, (str, bytes, dict)):
            raise TypeError("a scripted server needs its script: a callable (request, n) -> Reply, or replies")
        if not callable(script):
            replies = list(script)
            if not replies:
                raise ValueError("a scripted server needs at least one reply")
            script = _sequence(replies)
        self._server = _Server(script, latency, models, api_key, n_supported, port)
        self._thread = threading.Thread(target=self._server.serve_forever, name="scripted-llm", daemon=True)

    @property
    def url(self) -> str:
        """The base URL to give an OpenAI client (``.../v1``)."""
        return f"http://127.0.0.1:{self._server.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self._server.requests

    @property
    def model_requests(self) -> int:
        """How many times ``GET /v1/models`` was asked (the clients' check before a first request)."""
        return self._server.model_requests

    @property
    def paths(self) -> list[str]:
        """The request path of every chat completion, with its query string."""
        return self._server.paths

    @property
    def authorizations(self) -> list[str]:
        """The ``Authorization`` header of every chat completion request ("" when it had none): a script
        answering request ``n`` finds its header at ``[n]`` (an echoing server, in tests of redaction)."""
        return self._server.authorizations

    @property
    def max_in_flight(self) -> int:
        """The most requests the server was answering at once (concurrency actually achieved)."""
        return self._server.max_in_flight

    def start(self) -> ScriptedLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=5)
        self._server.loop.close()

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _sequence(replies: list[Reply]) -> Script:
    counter = itertools.count()
    lock = threading.Lock()

    def script(request: dict[str, Any], n: int) -> Reply:
        with lock:
            i = next(counter)
        return replies[min(i, len(replies) - 1)]

    return script


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """The offline stand-in until Ctrl-C (see the module docstring): ``python -m eq_env.agents.fake_server``."""
    import argparse

    from eq_env.agents.stand_in import MODELS, StandInScript, stand_in_games
    from eq_env.core.cli import int_in, number_type

    games = stand_in_games()
    parser = argparse.ArgumentParser(
        prog="python -m eq_env.agents.fake_server",
        description="The offline stand-in: scripted models good, bad and hostile for every role of every game, "
        "on 127.0.0.1 (an OpenAI-compatible endpoint; the first line printed is its base URL).",
    )
    parser.add_argument(
        "--env",
        action="append",
        choices=games,
        metavar="GAME",
        help=f"serve only this game's roles (repeatable; default: all of {', '.join(games)})",
    )
    parser.add_argument("--port", type=int_in(0, 65535), default=0, help="port on 127.0.0.1 (default: a free one)")
    seconds = number_type(float, "seconds in [0, 3600]", lambda v: 0 <= v <= 3600)  # (NaN fails both)
    parser.add_argument("--latency", type=seconds, default=0.0, help="seconds added to every answer")
    parser.add_argument(
        "--chaos", action="store_true", help="answer through ChaosScript besides (every transport failure mode)"
    )
    args = parser.parse_args(argv)
    served = list(dict.fromkeys(args.env or games))
    script = StandInScript(served)
    try:
        server = ScriptedLLMServer(
            ChaosScript(answer=script) if args.chaos else script, latency=args.latency, models=MODELS, port=args.port
        )
    except OSError as err:
        why = os.strerror(err.errno) if err.errno else str(err)
        print(
            f"{parser.prog}: error: --port {args.port}: cannot listen on 127.0.0.1:{args.port} ({why})", file=sys.stderr
        )
        return 2
    print(server.url, flush=True)  # the first line: where to point a client
    roles = "; ".join(f"{g}: {', '.join(script.stand_ins[g].roles)}" for g in served)
    print(
        f"serving models {', '.join(MODELS)} for {roles}\ne.g. eq-env play --env {served[0]} "
        f"--{script.stand_ins[served[0]].roles[0]} llm --model good --base-url {server.url}\nCtrl-C stops",
        file=sys.stderr,
        flush=True,
    )
    # Ctrl-C, and a plain kill, stop it cleanly (SIGINT too when the shell that started it ignores it in the
    # background, as a non-interactive one does)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
    server.start()
    try:
        threading.Event().wait()  # (until a signal)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    answered = ", ".join(f"{g} {r} {m}: {k}" for (g, r, m), k in sorted(script.served.items())) or "nothing"
    print(f"stopped; answered {answered}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    # the registered module's main: the games register their stand-ins with eq_env.agents.stand_in, not __main__
    from eq_env.agents.fake_server import main as _main

    sys.exit(_main())
