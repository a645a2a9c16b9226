"""Any game with numbers only: a PettingZoo AEC wrapper giving each agent a numeric observation and action.

Multi-agent RL libraries (RLlib's ``PettingZooEnv``) need spaces their networks can read: a flat vector
(or a dict of them, for an action mask) and a discrete action. A game says how its roles see and act
with numbers in a :class:`NumericAdapter` (its ``numeric`` module: the exchange–audit game's features
and artifact space, the Einstein puzzle's observation vector and masked moves); :class:`NumericAECEnv`
wraps the game's raw AEC environment with it. Turn order, rewards, terminations and infos are the
game's own: only what an agent observes and sends is translated.

The same adapter turns a trained numeric policy back into a policy of the runner
(:meth:`NumericAdapter.env_action` on the observation the runner gives it), so training and play
read observations the same way. Nothing here imports an RL library.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gymnasium import spaces
from pettingzoo import AECEnv

__all__ = ["NumericAECEnv", "NumericAdapter"]


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
            sees only the turns where its action matters. None: every turn counts.
    """

    env: str
    observation_space: Callable[[str, Any], spaces.Space[Any]]
    action_space: Callable[[str, Any], spaces.Space[Any]]
    observe: Callable[[str, Mapping[str, Any]], Any]
    env_action: Callable[[str, Any, Mapping[str, Any]], Any]
    modules: Mapping[str, str]
    env_options: Mapping[str, Any] = field(default_factory=dict)
    idle: Callable[[str, Mapping[str, Any]], bool] | None = None


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
