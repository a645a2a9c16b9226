"""A game served over OpenEnv (``eq-env finetune serve``): LLM-RL frameworks that speak it train against it.

One seat of the game is the remote player's; the others are played in the server by the partner (as in
``eq-env finetune grpo``: ``default``, ``self`` is not served, or any policy spec). The remote player sees what
the game's ``llm`` policy would send a model, and answers as a model would:

* :class:`GameObservation` — ``messages`` (the chat to answer: exactly the player's prompt, or a re-ask with the
  grammar's error after a malformed reply), ``role`` and ``agent`` (the seat), ``decision`` (its index in the
  episode), and, when the episode is over, ``done`` and ``reward``: the game's own reward to the seat over the
  episode (0.0 before the end);
* :class:`GameAction` — ``reply``: the model's text. It is parsed as the player parses a model's reply; a malformed
  one is re-asked (``max_reasks``), then the role's fallback is played, as for any LLM player.

``reset(seed=S, episode=I)`` starts episode ``I`` of seed ``S`` (the same chance draws as ``reset(seed=S,
options={"episode": I})`` of the environment). Each WebSocket session has its own episode. The server is
OpenEnv's (``openenv-core``, FastAPI on uvicorn) on 127.0.0.1; :class:`GameClient` is its client::

    eq-env finetune serve --env einstein-puzzle --role player_0 --config n=4 --port 8000

    from eq_env.finetune.openenv import GameAction, GameClient
    with GameClient(base_url="http://127.0.0.1:8000").sync() as client:
        result = client.reset(seed=0)
        while not result.done:
            result = client.step(GameAction(reply="pass"))
        print(result.reward)

Needs the ``finetune`` extra (``pip install "eq_env[finetune]"``: openenv-core with it).
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import sys
import threading
import uuid
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from eq_env.agents.local import PENALTIES, LocalReply, forget_local, register_local

__all__ = ["GameAction", "GameClient", "GameEnvironment", "GameObservation", "run", "serve_app"]


class GameAction(Action):
    """The remote player's reply to the chat it was shown."""

    reply: str


class GameObservation(Observation):
    """The chat the remote player must answer (empty once the episode is over), and its seat."""

    messages: list[dict[str, str]] = Field(default_factory=list)
    role: str = ""
    agent: str = ""
    decision: int = 0
    sampling: dict[str, float] = Field(default_factory=dict)  # what the game asks: temperature, penalties


class _Remote:
    """The local model of the remote seat: each request is handed to the client, and waits for its reply."""

    cacheable = False
    fingerprint = "openenv-remote"
    parameters = PENALTIES  # (the client samples; it is shown what was asked, in the observation's sampling)

    def __init__(self) -> None:
        self.asked: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.replies: queue.Queue[str] = queue.Queue()

    def problem(self) -> str | None:
        return None

    async def generate(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float,
        max_tokens: int,
        seed: int | None,
        n: int,
        extra: dict[str, Any],
    ) -> LocalReply:
        self.asked.put(("ask", (messages, {"temperature": float(temperature), **extra})))
        text = await asyncio.to_thread(self.replies.get)
        return LocalReply([text] * n, prompt_tokens=0, completion_tokens=0)


class GameEnvironment(Environment[GameAction, GameObservation, State]):
    """One episode at a time of one game, the remote player in ``role`` (see the module docstring)."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # (each session has its own instance, episode and thread)

    def __init__(self, game: str, role: str, partner: str = "default", config: Any = None, max_reasks: int = 2):
        super().__init__()
        from eq_env.core.spec import env_spec
        from eq_env.finetune.grpo import GRPOHyper, learning_specs

        self.spec = env_spec(game)
        self.game = self.spec.name
        self.role = role
        self.config = config if config is not None else self.spec.config()
        if partner == "self":
            raise ValueError("--partner self: a served game has one remote seat; give a partner for the others")
        self.name = f"openenv-{uuid.uuid4().hex[:12]}"
        self.url = f"local:{self.name}"
        hyper = GRPOHyper(temperature=1.0, max_reasks=max_reasks)
        self.specs = learning_specs(self.game, role, partner, self.url, hyper)
        self.remote = _Remote()
        register_local(self.name, self.remote)
        self._state = State(episode_id=None, step_count=0)
        self._thread: threading.Thread | None = None
        self._decision = 0

    def _next(self) -> GameObservation:
        kind, value = self.remote.asked.get()
        agent = next(a for a, r in self.spec.agent_roles(self.config).items() if r == self.role)
        if kind == "ask":
            self._decision += 1
            messages, sampling = value
            return GameObservation(
                messages=messages, role=self.role, agent=agent, decision=self._decision, sampling=sampling
            )
        if kind == "error":
            raise RuntimeError(f"the episode failed: {value}")
        return GameObservation(
            done=True,
            reward=float(value.reward),
            role=self.role,
            agent=agent,
            decision=self._decision,
            metadata={"failed": value.failed},
        )

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> GameObservation:
        from eq_env.finetune.grpo import TrainerModel, play_rollout

        self._abandon()
        seed = 0 if seed is None else int(seed)
        episode = int(kwargs.get("episode", 0))
        self.remote = _Remote()
        register_local(self.name, self.remote)
        remote = self.remote
        recorder = TrainerModel(None, None, 0)  # (only its token record; the remote model answers)

        def play() -> None:
            try:
                rollout = play_rollout(self.game, self.config, self.specs, seed, episode, recorder)
            except BaseException as err:  # (a partner's bug, say): the client hears of it
                remote.asked.put(("error", f"{type(err).__name__}: {err}"))
                return
            remote.asked.put(("done", rollout))

        self._decision = 0
        self._state = State(episode_id=episode_id or f"seed {seed}, episode {episode}", step_count=0)
        self._thread = threading.Thread(target=play, daemon=True, name=self.name)
        self._thread.start()
        return self._next()

    def step(self, action: GameAction, timeout_s: float | None = None, **kwargs: Any) -> GameObservation:
        if self._thread is None or not self._thread.is_alive():
            raise RuntimeError("no episode in play: call reset() first (or again: the last one is over)")
        self.remote.replies.put(action.reply)
        self._state.step_count += 1
        return self._next()

    @property
    def state(self) -> State:
        return self._state

    def _abandon(self) -> None:
        """End an unfinished episode (its thread waits on a reply): answer it until it ends."""
        while self._thread is not None and self._thread.is_alive():
            self.remote.replies.put("")
            self._thread.join(timeout=0.05)

    def close(self) -> None:
        self._abandon()
        forget_local(self.url)


class GameClient(EnvClient[GameAction, GameObservation, State]):
    """The client of a served game (OpenEnv's WebSocket client): ``reset(seed=, episode=)``, ``step(GameAction)``."""

    def _step_payload(self, action: GameAction) -> dict[str, Any]:
        return {"reply": action.reply}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[GameObservation]:
        data = dict(payload.get("observation") or {})
        observation = GameObservation(**data, done=bool(payload.get("done")), reward=payload.get("reward"))
        return StepResult(observation=observation, reward=payload.get("reward"), done=bool(payload.get("done")))

    def _parse_state(self, payload: dict[str, Any]) -> State:
        return State(**payload)


def serve_app(
    game: str, role: str, partner: str = "default", config: Any = None, max_reasks: int = 2, max_sessions: int = 8
) -> Any:
    """The FastAPI application serving ``game`` with the remote player in ``role``, at most ``max_sessions``
    episodes at once (a session each)."""
    from openenv.core.env_server.http_server import create_app

    GameEnvironment(game, role, partner, config, max_reasks).close()  # (a bad role or partner fails now)
    return create_app(
        lambda: GameEnvironment(game, role, partner, config, max_reasks),
        GameAction,
        GameObservation,
        env_name=f"eq_env-{game}",
        max_concurrent_envs=max_sessions,
    )


def run(args: argparse.Namespace) -> int:
    """``eq-env finetune serve``: serve until interrupted."""
    import uvicorn

    from eq_env.core.spec import env_spec

    spec = env_spec(args.game)
    config = spec.config.from_preset(None, **args.config)
    app = serve_app(spec.name, args.role, args.partner, config, args.max_reasks, args.max_sessions)
    print(f"serving {spec.name} ({args.role}) on http://127.0.0.1:{args.port}", file=sys.stderr)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
    return 0
