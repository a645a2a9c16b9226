"""The offline stand-in's registry: each game's scripted models, by game name, behind one server.

``python -m eq_env.agents.fake_server`` serves :class:`StandInScript` (its docstring there is the
command's manual). A game registers its :class:`StandIn` with :func:`register_stand_in` from the package
that registers its LLM policies (one of its ``eq_env.policies`` entry points), usually by name
(``"eq_env.agents.einstein_puzzle.scripts:STAND_IN"``), imported when first served; an installed package's
game registers the same way. This module knows no game, and imports no server until it answers.

In Python, the same server in a background thread::

    from eq_env.agents.fake_server import ScriptedLLMServer
    from eq_env.agents.stand_in import MODELS, StandInScript

    with ScriptedLLMServer(StandInScript(), models=MODELS) as server:  # every game's roles
        ...  # e.g. LLMPlayer(model="bad", base_url=server.url)
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from eq_env.agents.scripted_reply import Reply

__all__ = ["MODELS", "StandIn", "StandInScript", "register_stand_in", "stand_in", "stand_in_games"]

Script = Callable[[dict[str, Any], int], Reply]  # as eq_env.agents.fake_server takes it

MODELS = ("good", "bad", "hostile")


@dataclass(frozen=True)
class StandIn:
    """A game's scripted models for the offline stand-in (see the module docstring).

    Attributes:
        roles: the roles whose prompts it answers (the game's LLM roles).
        role_of: the role whose prompt a chat request carries, or None when it is no prompt of this game's;
            it never raises (a malformed request is None).
        script: a new script answering as ``model`` (one of :data:`MODELS`) in every role; made once per
            server, so a script may keep state (the hostile model's "the first time").
        expects: what marks this game's prompts, for the 400 that names what was expected.
    """

    roles: tuple[str, ...]
    role_of: Callable[[dict[str, Any]], str | None]
    script: Callable[[str], Script]
    expects: str


_STAND_INS: dict[str, StandIn | str] = {}  # game name -> its stand-in, or "module:attribute" until first used


def register_stand_in(game: str, stand_in: StandIn | str) -> None:
    """Register ``game``'s stand-in (by its ``--env`` name): a :class:`StandIn`, or ``"module:attribute"``
    naming one, imported when first served."""
    _STAND_INS[game] = stand_in


def _load_games() -> list[str]:
    """The registered games' names, after importing their policy modules (where stand-ins register)."""
    import eq_env  # noqa: F401 - registers the games
    from eq_env.core.policy import available_policies
    from eq_env.core.spec import registered_envs

    names = []
    for spec in registered_envs():
        available_policies(env=spec.id)  # (imports the modules that register its policies and stand-in)
        names.append(spec.name)
    return names


def stand_in_games() -> list[str]:
    """The games with a stand-in, in the order the games registered."""
    games = _load_games()
    return [g for g in games if g in _STAND_INS] + sorted(set(_STAND_INS) - set(games))


def stand_in(game: str) -> StandIn:
    """``game``'s :class:`StandIn` (a ValueError naming the games that have one)."""
    if game not in _STAND_INS:
        games = stand_in_games()
        if game not in _STAND_INS:
            raise ValueError(f"no stand-in model for the game {game!r}; games with one: {', '.join(games)}")
    found = _STAND_INS[game]
    if isinstance(found, str):
        module, _, attribute = found.partition(":")
        found = getattr(importlib.import_module(module), attribute)
        if not isinstance(found, StandIn):
            raise TypeError(f"{game}'s stand-in {_STAND_INS[game]!r} is not a StandIn")
        _STAND_INS[game] = found
    return found


class StandInScript:
    """``script(request, n) -> Reply``: the stand-in's models for the roles of ``games`` (default: every game
    with a stand-in), routed by the request's prompt to its game and role, and by its model name to
    ``good``, ``bad`` or ``hostile`` (see the module docstring). ``served`` counts the requests answered by
    (game, role, model)."""

    def __init__(self, games: Sequence[str] | None = None) -> None:
        names = list(games) if games is not None else stand_in_games()
        self.stand_ins = {game: stand_in(game) for game in names}
        self.served: collections.Counter[tuple[str, str, str]] = collections.Counter()
        self._scripts: dict[tuple[str, str], Script] = {}
        self._lock = threading.Lock()

    def _script(self, game: str, model: str) -> Script:
        with self._lock:
            if (game, model) not in self._scripts:
                self._scripts[game, model] = self.stand_ins[game].script(model)
            return self._scripts[game, model]

    def _role(self, request: dict[str, Any]) -> tuple[str, str] | None:
        for game, s in self.stand_ins.items():
            try:
                role = s.role_of(request)
            except Exception:  # a malformed request is no game's; the 400 below says what was expected
                role = None
            if role is not None:
                return game, role
        return None

    def __call__(self, request: dict[str, Any], n: int) -> Reply:

        model = request.get("model")
        if model not in MODELS:
            message = f"model {model!r} is not served here; this stand-in serves {', '.join(MODELS)}"
            return Reply(status=404, body={"error": {"message": message, "type": "invalid_request_error"}})
        found = self._role(request)
        if found is None:
            expected = "; ".join(f"{g} ({', '.join(s.roles)}): {s.expects}" for g, s in self.stand_ins.items())
            message = f"not a prompt of any role served here; expected one of {expected}"
            return Reply(status=400, body={"error": {"message": message, "type": "invalid_request_error"}})
        game, role = found
        with self._lock:
            self.served[game, role, str(model)] += 1
        reply: Reply = self._script(game, str(model))(request, n)
        if reply.status >= 400 and not {"retry-after", "retry-after-ms"} & {k.lower() for k in reply.headers}:
            # retried at once: the client's default backoff would make a run wait for outages it scripts
            reply = dataclasses.replace(reply, headers={**reply.headers, "retry-after-ms": "1"})
        return reply
