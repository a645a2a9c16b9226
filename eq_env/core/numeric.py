"""Any game with numbers only: a PettingZoo AEC wrapper giving each agent a numeric observation and action.

Multi-agent RL libraries (RLlib's ``PettingZooEnv``) need spaces their networks can read: a flat vector
(or a dict of them, for an action mask) and a discrete action. A game says how its roles see and act
with numbers in a :class:`NumericAdapter` (its ``numeric`` module: the exchange–audit game's features
and artifact space, the Einstein puzzle's observation vector and masked moves); :class:`NumericAECEnv`
wraps the game's raw AEC environment with it. Turn order, rewards, terminations and infos are the
game's own: only what an agent observes and sends is translated.

The same adapter turns a trained numeric policy back into a policy of the runner
(:meth:`NumericAdapter.env_action` on the observation the runner gives it), so training and play
read observations the same way. Nothing here imports an RL library; RLlib's own key for a masked
observation's features (``"observations"``) is its adapter's business (:mod:`eq_env.baselines.rllib`).

**The numeric observation mode.** The same adapters make every game's public numeric mode,
``env(observation_mode="numeric")``, ``parallel_env(...)`` and ``raw_env(...)`` of its versioned module
(:func:`with_observation_mode`; ``pettingzoo.make(..., observation_mode="numeric")`` too), for the libraries
that batch observations (SuperSuit, Tianshou, TorchRL, AgileRL, BenchMARL): :class:`NumericModeEnv` and
:class:`NumericModeParallelEnv` play the game's text environment as it is (every turn, the idle ones
included; rewards, terminations, seeds and ``state()``), and :class:`NumericSpaces` gives each agent

* the observation ``Dict({"observation": Box(float32, (L,)), "action_mask": Box(0, 1, (A,), int8)})``;
* the action space ``Discrete(A)`` (a ``MultiDiscrete`` adapter space numbered in C order);
* an agent with nothing to decide (idle, or done) exactly one legal action, its no-op;
* infos of the same numeric keys at every step (``NumericAdapter.info``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv

__all__ = [
    "OBSERVATION_MODES",
    "NumericAECEnv",
    "NumericAdapter",
    "NumericModeEnv",
    "NumericModeParallelEnv",
    "NumericSpaces",
    "check_observation_mode",
    "numeric_adapter",
    "trained_game",
    "with_observation_mode",
]

OBSERVATION_MODES = ("text", "numeric")


@dataclass(frozen=True)
class NumericAdapter:
    """How a game's roles see and act with numbers.

    Attributes:
        env: the game (its id or short name).
        observation_space: (role, config) → the role's numeric observation space.
        action_space: (role, config) → the role's numeric action space.
        observe: (role, the environment's observation) → the numeric observation.
        env_action: (role, numeric action, the environment's observation) → the environment's action.
        modules: role → the name of the policy that plays it; symmetric roles share one (trained once,
            on both roles' experience).
        env_options: keywords of the game's ``raw_env`` besides the configuration (e.g. a reward mode).
        idle: (role, the environment's observation) → whether the agent only waits this turn (its action
            ignored by the game); :class:`NumericAECEnv` plays such turns itself (``None``), so a learner
            sees only the turns where its action matters, and the numeric observation mode gives such an agent
            a mask with one legal action, ``noop``. None: every turn counts.
        noop: (role, config) → the index, in the numeric mode's ``Discrete`` action space, of the no-op an idle
            agent's mask allows (default 0).
        info: the environment's info of an agent → the numeric mode's info: numbers under the same keys at
            every step (0 until the game has them), so that libraries that stack infos can.
    """

    env: str
    observation_space: Callable[[str, Any], spaces.Space[Any]]
    action_space: Callable[[str, Any], spaces.Space[Any]]
    observe: Callable[[str, Mapping[str, Any]], Any]
    env_action: Callable[[str, Any, Mapping[str, Any]], Any]
    modules: Mapping[str, str]
    env_options: Mapping[str, Any] = field(default_factory=dict)
    idle: Callable[[str, Mapping[str, Any]], bool] | None = None
    noop: Callable[[str, Any], int] | None = None
    info: Callable[[Mapping[str, Any]], dict[str, float]] | None = None


class NumericAECEnv(AECEnv):  # type: ignore[misc]
    """The game ``adapter.env`` under ``config``, each agent seeing and acting through ``adapter``."""

    metadata: dict[str, Any] = {"name": "eq_env_numeric", "is_parallelizable": False}  # noqa: RUF012

    def __init__(self, adapter: NumericAdapter, config: Any = None) -> None:
        from eq_env.core.spec import env_spec

        super().__init__()
        spec = env_spec(adapter.env)
        self.adapter = adapter
        self.config = config if config is not None else spec.config()
        self.env = spec.module().raw_env(config=self.config, **adapter.env_options)
        self.roles = spec.agent_roles(self.config)
        self.possible_agents = list(self.env.possible_agents)
        self.agents: list[str] = []
        # built once: the same objects every call
        roles, agents = self.roles, self.possible_agents
        self._observation_spaces = {a: adapter.observation_space(roles[a], self.config) for a in agents}
        self._action_spaces = {a: adapter.action_space(roles[a], self.config) for a in agents}
        self.state_space = self.env.state_space

    def state(self) -> Any:
        """The game's global state (its ``state()``), for centralised critics."""
        return self.env.state()

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._action_spaces[agent]

    def _sync(self) -> None:
        """The game's bookkeeping, as the game keeps it (it may replace its dicts on a step)."""
        env = self.env
        self.agents = env.agents
        self.rewards = env.rewards
        self._cumulative_rewards = env._cumulative_rewards
        self.terminations = env.terminations
        self.truncations = env.truncations
        self.infos = env.infos
        self.agent_selection = env.agent_selection

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.env.reset(seed=seed, options=options)
        self._skip_idle()
        self._sync()

    def observe(self, agent: str) -> Any:
        return self.adapter.observe(self.roles[agent], self.env.observe(agent))

    def step(self, action: Any) -> None:
        agent = self.env.agent_selection
        if self.env.terminations[agent] or self.env.truncations[agent]:
            self.env.step(None)
        else:
            self.env.step(self.adapter.env_action(self.roles[agent], action, self.env.observe(agent)))
        self._skip_idle()
        self._sync()

    def _skip_idle(self) -> None:
        """Play the turns of agents that only wait (``adapter.idle``) with ``None``, as the game allows: the
        agent selected next acts, or is done. Rewards stay the game's (belief coordination pays only at the
        end, when every agent is done)."""
        idle, env = self.adapter.idle, self.env
        if idle is None:
            return
        while env.agents:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent] or not idle(self.roles[agent], env.observe(agent)):
                return
            env.step(None)

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


# -- the public numeric observation mode ---------------------------------------------------------------


def check_observation_mode(mode: Any) -> str:
    """``mode`` if it is one of :data:`OBSERVATION_MODES`, else a ValueError naming the keyword."""
    if not isinstance(mode, str) or mode not in OBSERVATION_MODES:
        raise ValueError(f"observation_mode must be 'text' or 'numeric', got {mode!r}")
    return mode


def _index(action: Any) -> int | None:
    """``action`` as a Python int (an int, a numpy integer, a 0-d or one-element integer array), or None."""
    if isinstance(action, np.ndarray) and action.dtype.kind in "iu" and action.size == 1 and action.ndim <= 1:
        action = action.reshape(()).item()
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        return None
    return int(action)


class NumericSpaces:
    """Every agent's numeric-mode spaces under a configuration, and the translations both APIs share.

    Each agent observes ``Dict({"observation": Box(float32, (L,)), "action_mask": Box(0, 1, (A,), int8)})``
    and acts in ``Discrete(A)``: the adapter's features and legal actions (all legal where the adapter has no
    mask), its ``MultiDiscrete`` actions numbered in C order (``np.ravel_multi_index``). An idle agent's mask
    has exactly one 1, its no-op (``adapter.noop``), and whatever it sends is not played.
    """

    def __init__(self, adapter: NumericAdapter, config: Any, roles: Mapping[str, str]) -> None:
        self.adapter, self.roles = adapter, dict(roles)
        self.observation_spaces: dict[str, spaces.Dict] = {}
        self.action_spaces: dict[str, spaces.Discrete] = {}
        self._nvec: dict[str, tuple[int, ...] | None] = {}
        self._all: dict[str, np.ndarray] = {}
        self._noop: dict[str, np.ndarray] = {}
        for agent, role in self.roles.items():
            seen, acts = adapter.observation_space(role, config), adapter.action_space(role, config)
            features = seen["observation"] if isinstance(seen, spaces.Dict) else seen
            assert isinstance(features, spaces.Box), (adapter.env, role, features)
            nvec: tuple[int, ...] | None = None
            if isinstance(acts, spaces.MultiDiscrete):
                nvec = tuple(int(k) for k in np.asarray(acts.nvec).reshape(-1))
                n = int(np.prod(np.array(nvec)))
            else:
                assert isinstance(acts, spaces.Discrete), (adapter.env, role, acts)
                n = int(acts.n)
            self._nvec[agent] = nvec
            low = np.asarray(features.low, np.float32)
            high = np.asarray(features.high, np.float32)
            self.observation_spaces[agent] = spaces.Dict(
                {
                    "observation": spaces.Box(low, high, features.shape, np.float32),
                    "action_mask": spaces.Box(0, 1, (n,), np.int8),
                }
            )
            self.action_spaces[agent] = spaces.Discrete(n)
            self._all[agent] = _read_only(np.ones(n, np.int8))
            noop = np.zeros(n, np.int8)
            noop[adapter.noop(role, config) if adapter.noop is not None else 0] = 1
            self._noop[agent] = _read_only(noop)

    def idle(self, agent: str, observation: Mapping[str, Any]) -> bool:
        """Whether ``agent``, seeing the environment's ``observation``, has nothing to decide."""
        idle = self.adapter.idle
        return idle is not None and idle(self.roles[agent], observation)

    def observe(self, agent: str, observation: Mapping[str, Any], done: bool = False) -> dict[str, np.ndarray]:
        """The numeric observation of the environment's ``observation`` of ``agent`` (``done``: the agent is
        terminated or truncated, and has nothing left to decide either)."""
        seen = self.adapter.observe(self.roles[agent], observation)
        if isinstance(seen, Mapping):
            features, mask = seen["observation"], np.asarray(seen["action_mask"], np.int8)
        else:
            features, mask = seen, self._all[agent]
        if done or self.idle(agent, observation):
            mask = self._noop[agent]
        return {"observation": np.asarray(features, np.float32), "action_mask": mask}

    def env_action(self, agent: str, action: Any, observation: Mapping[str, Any]) -> Any:
        """The environment's action for the numeric ``action`` of ``agent`` (None for an idle agent, whose action
        the game ignores); an action outside ``Discrete(A)`` is a ValueError naming the agent."""
        n = int(self.action_spaces[agent].n)
        index = _index(action)
        if index is None or not 0 <= index < n:
            raise ValueError(f"{agent}'s action must be an integer in [0, {n}) (Discrete({n})), got {action!r}")
        if self.idle(agent, observation):
            return None
        nvec = self._nvec[agent]
        chosen: Any = index if nvec is None else np.array(np.unravel_index(index, nvec), np.int64)
        return self.adapter.env_action(self.roles[agent], chosen, observation)

    def info(self, info: Mapping[str, Any]) -> dict[str, float]:
        """The numeric mode's info (the same keys at every step)."""
        return self.adapter.info(info) if self.adapter.info is not None else {}


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def numeric_adapter(env: Any) -> NumericAdapter:
    """The numeric adapter of the game ``env`` (an id, short name or spec): its spec's ``numeric`` module's
    ``ADAPTER``, what the numeric observation mode and the RLlib baselines play the game through."""
    from eq_env.core.spec import env_spec

    spec = env_spec(env)
    if not spec.numeric:
        raise ValueError(f"{spec.name} has no numeric observation mode (its spec names no numeric adapter)")
    return importlib.import_module(spec.numeric).ADAPTER  # type: ignore[no-any-return]


class NumericModeEnv(AECEnv):  # type: ignore[misc]
    """A game's AEC environment in the numeric observation mode (``env(observation_mode="numeric")``).

    ``text_env`` is the game's raw AEC environment, played as it is: the same turns (idle ones included: the
    agent's mask then allows only its no-op), rewards, terminations, seeds and ``state()``; only what an agent
    observes and sends is translated (:class:`NumericSpaces`), and ``infos`` are the adapter's numbers.
    """

    def __init__(self, env_id: str, text_env: Any) -> None:
        from eq_env.core.spec import env_spec

        super().__init__()
        self.env = text_env
        self.config = text_env.config
        self.metadata = dict(text_env.metadata)
        self.render_mode = getattr(text_env, "render_mode", None)
        self.possible_agents = list(text_env.possible_agents)
        self.agents: list[str] = []
        self.numbers = NumericSpaces(numeric_adapter(env_id), self.config, env_spec(env_id).agent_roles(self.config))
        self.state_space = text_env.state_space

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.numbers.observation_spaces[self._known(agent)]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.numbers.action_spaces[self._known(agent)]

    def _known(self, agent: Any) -> str:
        from eq_env.core.api import checked_agent

        return checked_agent(agent, self.possible_agents)  # type: ignore[no-any-return]

    def _sync(self) -> None:
        env = self.env
        self.agents = env.agents
        self.rewards = env.rewards
        self._cumulative_rewards = env._cumulative_rewards
        self.terminations = env.terminations
        self.truncations = env.truncations
        self.infos = {a: self.numbers.info(i) for a, i in env.infos.items()}
        self.agent_selection = env.agent_selection

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.env.reset(seed=seed, options=options)
        self._sync()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        env = self.env
        seen = env.observe(self._known(agent))
        done = bool(env.terminations.get(agent) or env.truncations.get(agent)) if env.agents else True
        return self.numbers.observe(agent, seen, done)

    def idle(self, agent: str) -> bool:
        """Whether ``agent`` has nothing to decide now (its mask allows only its no-op)."""
        return self.numbers.idle(self._known(agent), self.env.observe(agent))

    def step(self, action: Any) -> None:
        env = self.env
        if not hasattr(env, "agent_selection") or not env.agents:
            env.step(action)  # (the game's own refusal: before reset, after the end)
            return
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(action)  # (None; anything else is the game's to refuse)
        else:
            env.step(self.numbers.env_action(agent, action, env.observe(agent)))
        self._sync()

    def state(self) -> Any:
        return self.env.state()

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


class NumericModeParallelEnv(ParallelEnv):  # type: ignore[misc]
    """A game's parallel environment in the numeric observation mode (``parallel_env(observation_mode="numeric")``).

    ``text_env`` is the game's parallel environment, played as it is; each agent's observation and action are
    translated as in :class:`NumericModeEnv` (an idle agent's action is not sent: the game ignores it), and
    ``infos`` are the adapter's numbers.
    """

    def __init__(self, env_id: str, text_env: Any) -> None:
        from eq_env.core.spec import env_spec

        self.env = text_env
        self.config = text_env.config
        self.metadata = dict(text_env.metadata)
        self.render_mode = getattr(text_env, "render_mode", None)
        self.possible_agents = list(text_env.possible_agents)
        self.agents: list[str] = []
        self.numbers = NumericSpaces(numeric_adapter(env_id), self.config, env_spec(env_id).agent_roles(self.config))
        self.state_space = text_env.state_space
        self._seen: dict[str, Any] = {}

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.numbers.observation_spaces[self._known(agent)]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.numbers.action_spaces[self._known(agent)]

    def _known(self, agent: Any) -> str:
        from eq_env.core.api import checked_agent

        return checked_agent(agent, self.possible_agents)  # type: ignore[no-any-return]

    def _translated(
        self, observations: Mapping[str, Any], infos: Mapping[str, Any], done: bool = False
    ) -> tuple[dict, dict]:
        self._seen = dict(observations)
        numbers = self.numbers
        return (
            {a: numbers.observe(a, o, done) for a, o in observations.items()},
            {a: numbers.info(i) for a, i in infos.items()},
        )

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        observations, infos = self.env.reset(seed=seed, options=options)
        self.agents = list(self.env.agents)
        return self._translated(observations, infos)

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        from eq_env.core.api import checked_actions

        if not self.env.agents:
            return self.env.step(actions)  # type: ignore[no-any-return]  # (the game's refusal, in its words)
        numbers, seen = self.numbers, self._seen
        checked_actions(actions, self.env.agents, ())  # (a missing acting agent: the game's refusal, in its words)
        # an idle agent's action is ignored, whatever it is, as in text mode; the others are checked and translated
        sent = {a: numbers.env_action(a, x, seen[a]) for a, x in actions.items() if not self.idle(a)}
        observations, rewards, terminations, truncations, infos = self.env.step(sent)
        self.agents = list(self.env.agents)
        observations, infos = self._translated(observations, infos, done=not self.agents)
        return observations, rewards, terminations, truncations, infos

    def idle(self, agent: str) -> bool:
        """Whether ``agent`` has nothing to decide in this step (its action is ignored; its mask allows only its
        no-op): the game's ``idle(agent)`` where its parallel environment has one, else the adapter's test."""
        agent = self._known(agent)
        told = getattr(self.env, "idle", None)
        if callable(told):
            return bool(told(agent))
        return agent in self._seen and self.numbers.idle(agent, self._seen[agent])

    def state(self) -> Any:
        return self.env.state()

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def with_observation_mode(
    env_id: str, text_env: Callable[..., Any], parallel: bool, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``text_env(*args, **kwargs)`` in the ``observation_mode`` ``kwargs`` names (``"text"``, the default: the
    environment itself; ``"numeric"``: :class:`NumericModeParallelEnv` or :class:`NumericModeEnv` around it).
    What each game's versioned ``env``, ``parallel_env`` and ``raw_env`` are made with, so it is their manual of
    ``observation_mode``: ``"text"`` (the default) gives the observations the game's manual describes;
    ``"numeric"`` gives ``Dict(observation=Box(float32), action_mask=Box(int8))`` observations and ``Discrete``
    actions, one legal no-op for an agent with nothing to decide, numeric infos of fixed keys, the same game
    otherwise. Anything else is a ValueError."""
    mode = check_observation_mode(kwargs.pop("observation_mode", "text"))
    env = text_env(*args, **kwargs)
    if mode == "text":
        return env
    return NumericModeParallelEnv(env_id, env) if parallel else NumericModeEnv(env_id, env)


def trained_game(meta: Mapping[str, Any], where: Any) -> tuple[Any, Any]:
    """The game (its ``EnvSpec``) and the configuration a numeric policy's training names in its ``policy.json``
    (``meta["env"]``, ``meta["config"]``), or a one-line ValueError naming ``where`` (the file) and saying to
    train again."""
    from eq_env.core.spec import env_spec

    try:
        spec = env_spec(meta["env"])
        return spec, spec.config.from_dict(meta["config"])
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{where}: its env or config is not a game's ({err}): train again") from None
