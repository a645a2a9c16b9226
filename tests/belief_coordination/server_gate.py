"""A gate on a :class:`eq_env.agents.fake_server.ScriptedLLMServer`: its chat requests wait on events the test controls,
so that concurrency and kill-and-resume tests wait on what the server has seen, never on the clock.

::

    with ScriptedLLMServer(script) as server:
        gate = Gate(server)
        gate.waves(32, total=160)  # each request waits until 32 are waiting, then the 32 are answered together
        ...
        assert gate.peak == 32     # the most requests the server was handling at once

        gate.hold(lambda body, arrived: arrived > 12)   # from the 13th on, requests wait...
        gate.wait_held(1)          # ... until one is waiting (gate.held: the bodies waiting now)
        gate.wait_for(recorded)    # and, say, the client has recorded every answer it got: kill it now
        gate.release(drop=True)    # the waiting ones are dropped unanswered (their client is gone)

The gate wraps the server's request handler on the server's own event loop (the server is single-threaded
asyncio, so its counters need no lock); the test's thread waits on a condition the loop notifies. Requests
a gate drops never reach the script nor ``server.requests``; ``gate.bodies`` lists every chat request that
arrived, dropped or not, ``gate.answered`` those answered with a completion. (It lives beside the tests that
need it: no other test folder imports it.)
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from eq_env.agents.fake_server import ScriptedLLMServer

__all__ = ["Gate"]

Rule = Callable[[dict[str, Any], int], bool]


class _Opening(asyncio.Event):
    """An event the waiting requests go on at; ``drop``: they are answered 503 instead (their client is gone)."""

    drop = False


class Gate:
    """See the module docstring."""

    def __init__(self, server: ScriptedLLMServer, limit: float = 120.0) -> None:
        self._server = server._server  # (the server's internals: its loop and its handler)
        self._inner = self._server._answer
        self._server._answer = self._answer  # type: ignore[method-assign]
        self.limit = limit  # seconds before a wait gives up: a hang guard, never a measurement
        self._changed = threading.Condition()
        self._rule: Rule | None = None
        self._wave: tuple[int, int] | None = None
        self._open: _Opening | None = None
        self.bodies: list[dict[str, Any]] = []  # every chat request that arrived
        self.held: list[dict[str, Any]] = []  # those waiting at the gate now
        self.answered: list[dict[str, Any]] = []  # those answered with a completion (status 200)
        self.arrived = self.waiting = self.inside = self.peak = self.waves_released = 0

    # -- what the test calls (its own thread) -------------------------------------------------------------
    def hold(self, rule: Rule | None) -> None:
        """From now on a chat request for which ``rule(body, arrived)`` holds waits for :meth:`release`
        (``arrived``: chat requests so far, this one included); None: hold nothing more."""
        self._call(self._set, rule, None)

    def waves(self, size: int, total: int) -> None:
        """From now on (counters reset) every chat request waits until ``size`` are waiting, or ``total`` have
        arrived, and then all the waiting ones go on together."""
        self._call(self._set, None, (size, total))

    def wait_held(self, count: int) -> None:
        """Block until at least ``count`` requests are waiting at the gate."""
        with self._changed:
            if not self._changed.wait_for(lambda: self.waiting >= count, timeout=self.limit):
                raise AssertionError(f"{count} requests never waited at the gate ({self.waiting} did, "
                                     f"{self.arrived} arrived)")  # fmt: skip

    def wait_for(self, condition: Callable[[], bool], what: str = "the condition", poll: float = 0.01) -> None:
        """Block until ``condition()`` holds: checked whenever a request arrives or leaves the gate, and every
        ``poll`` seconds for what the gate cannot see (a file the client writes)."""
        deadline = time.monotonic() + self.limit  # a hang guard, as ``limit`` is
        with self._changed:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{what} never held ({self.waiting} requests waiting, "
                                         f"{self.arrived} arrived)")  # fmt: skip
                self._changed.wait(min(poll, left))

    def release(self, drop: bool = False) -> None:
        """Let every waiting request go on (``drop``: answered with 503, never reaching the script), and
        hold nothing more."""
        self._call(self._release, drop)

    # -- on the server's loop ------------------------------------------------------------------------------
    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        done = threading.Event()

        def run() -> None:
            fn(*args)
            done.set()

        self._server.loop.call_soon_threadsafe(run)
        if not done.wait(self.limit):
            raise AssertionError("the server's event loop did not answer")

    def _set(self, rule: Rule | None, wave: tuple[int, int] | None) -> None:
        self._rule, self._wave = rule, wave
        self._open = _Opening()
        if wave is not None:
            self.arrived = self.peak = self.waves_released = 0

    def _release(self, drop: bool) -> None:
        self._rule = None
        self._wave = None
        if self._open is not None:
            self._open.drop = drop
            self._open.set()

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    async def _answer(self, method: str, path: str, raw: bytes, auth: str) -> bytes:
        if method != "POST" or not path.partition("?")[0].rstrip("/").endswith("/chat/completions"):
            return await self._inner(method, path, raw, auth)
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        self.bodies.append(body)
        self.arrived += 1
        self.inside += 1
        self.peak = max(self.peak, self.inside)
        try:
            gate = self._open
            if self._wave is not None and gate is not None:
                size, total = self._wave
                if self.waiting + 1 >= size or self.arrived >= total:  # this one completes the wave
                    self.waves_released += 1
                    self._open = _Opening()
                    gate.set()
                else:
                    await self._wait(gate)
            elif self._rule is not None and gate is not None and self._rule(body, self.arrived):
                self.held.append(body)
                try:
                    await self._wait(gate)
                finally:
                    self.held.remove(body)
                if gate.drop:
                    return b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            reply = await self._inner(method, path, raw, auth)
            if reply.startswith(b"HTTP/1.1 200 "):
                self.answered.append(body)
            return reply
        finally:
            self.inside -= 1

    async def _wait(self, gate: asyncio.Event) -> None:
        self.waiting += 1
        self._notify()
        try:
            await gate.wait()
        finally:
            self.waiting -= 1
            self._notify()
