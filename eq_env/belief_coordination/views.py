"""The single-agent Gymnasium view of belief coordination: one executor choosing its own (T, p), every other
agent scripted.

``gymnasium.make("eq_env/BeliefCoordinationExecutor-v0", executors="fixed", coordinator="majority",
n_executors=3, action_space="grid")`` plays ``agent`` (``"executor_0"`` by default) with the other executors
played by the policy spec ``executors`` (one instance each, or one joint policy for the team, e.g.
``schedule``) and the commit by ``coordinator``.

Why an executor: ECON's learners are the executors' belief networks, each choosing its own sampling
parameters, and the review's second falsifier asks whether any single agent can raise its reward by changing
only its own (T, p). This view is that question as a single-agent problem: everyone else held fixed, a
learner's best response is the most profitable unilateral deviation, and its gain over playing as the team
plays (:meth:`BeliefCoordinationExecutorEnv.team_action`) is the equilibrium gap.

* Observations: the executor's features, ``Box(0, 1, (5,), float32)`` (the question's difficulty, the
  round, its previous reply's support: what ECON's belief networks read).
* Actions: the environment's executor action space: ``Discrete(G)``, a point of the (T, p) grid, with
  ``action_masks()`` (every point is legal: sb3-contrib's MaskablePPO runs as PPO), for
  ``action_space="grid"``; ``Box(0, 1, (2,))``, (T, p) normalised to their ranges, for ``"box"`` (the
  default).
* Rewards: the shared reward 0.5·TS + 0.3·AL + 0.2·CC, paid at the commit; 0 after the earlier rounds
  of a debate (``rounds`` > 1: one step per round).
* ``info``: ``episode_index`` (the episode of the seed's stream: ``info["episode"]`` is Gymnasium's and
  SB3's key for episode statistics) after every reset and step; at the end also ``ts``, ``al``, ``cc``,
  ``temperature`` and ``penalty`` (this executor's last (T, p)).

``reset(seed=s)`` then ``reset()``… play episodes 0, 1, 2… of seed ``s``, as the environment does; the
other agents' policies are seeded as the runner seeds them, so with
:meth:`BeliefCoordinationExecutorEnv.team_action` played in this seat the episodes are those of
``eq-env play --executor EXECUTORS --coordinator COORDINATOR``.

``render_mode``: ``"ansi"`` (the round as text), ``"human"`` (printed) or ``"rgb_array"`` (that text as a
picture, :mod:`eq_env.core.render`, for ``RecordVideo`` and SB3's ``make_vec_env``, which asks for it).

An unknown keyword is an :class:`~eq_env.core.config.UnknownParameterError`, a ``TypeError`` (as Python's
own, which TorchRL's ``GymEnv`` relies on); a bad value (a policy spec, a game parameter, an action) a
``ValueError`` naming it. The view pickles (``AsyncVectorEnv`` with ``"spawn"``). With SB3 on a small
machine, call ``torch.set_num_threads(1)`` first: torch's default threads made PPO many times slower here.

Version history: v0, first version.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.env import COORDINATOR, ROLES_STREAMS, BeliefCoordinationParallelEnv
from eq_env.belief_coordination.rules import EXECUTOR_FEATURES
from eq_env.core.config import UnknownParameterError
from eq_env.core.policy import Policy, make_policy
from eq_env.core.render import RENDER_MODES, check_render_mode
from eq_env.core.runner import agent_stream, decide_now, policy_seed

__all__ = ["BeliefCoordinationExecutorEnv"]

ID = "eq_env/belief-coordination-v0"


class BeliefCoordinationExecutorEnv(gymnasium.Env):  # type: ignore[type-arg]
    """One executor of belief coordination, the others and the coordinator scripted (the module docstring is
    its manual)."""

    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": 1}  # noqa: RUF012 - Gymnasium's name

    def __init__(
        self,
        executors: Policy | str = "fixed",
        coordinator: Policy | str = "majority",
        *,
        agent: str = "executor_0",
        config: BeliefCoordinationConfig | None = None,
        preset: str | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        unknown = sorted(set(overrides) - set(BeliefCoordinationConfig.field_names()))
        if unknown:
            raise UnknownParameterError(
                f"{type(self).__name__} got an unexpected keyword argument {unknown[0]!r}; its keywords: executors, "
                f"coordinator, agent, config, preset, render_mode and the game's parameters "
                f"({', '.join(BeliefCoordinationConfig.field_names())})"
            )
        check_render_mode(render_mode)
        self.config = BeliefCoordinationConfig.resolve(config, preset, overrides)
        if agent not in self.config.executors:
            raise ValueError(f"agent must be one of {', '.join(self.config.executors)}, got {agent!r}")
        self.agent = agent
        self.render_mode = render_mode
        self._env = BeliefCoordinationParallelEnv(self.config, render_mode=render_mode)
        # every executor gets its policy, this one's included: its answer is team_action()
        self._executors = self._team(executors)
        try:
            self._coordinator = make_policy(coordinator, "coordinator", ID)
        except ValueError as err:
            raise ValueError(f"coordinator: {err}") from None
        self.observation_space = spaces.Box(0.0, 1.0, (EXECUTOR_FEATURES,), np.float32)
        self.action_space = self._env.action_space(agent)
        self._observations: dict[str, Any] = {}
        self._team_actions: dict[str, Any] = {}
        self._seeded = False

    def _team(self, executors: Policy | str) -> dict[str, Any]:
        """agent → the policy of each executor: one instance per executor from a spec, one shared by all for a
        joint policy or an object (as the runner plays them)."""
        try:
            first = make_policy(executors, "executor", ID)
        except ValueError as err:
            raise ValueError(f"executors: {err}") from None
        team = {self.config.executors[0]: first}
        for agent in self.config.executors[1:]:
            joint = callable(getattr(first, "act_joint", None))
            team[agent] = first if joint or not isinstance(executors, str) else make_policy(executors, "executor", ID)
        return team

    @property
    def game(self) -> BeliefCoordinationParallelEnv:
        """The parallel environment being played (its question, replies, committed answer...)."""
        return self._env

    def agent_observation(self) -> dict[str, Any]:
        """This executor's observation as the environment gives it (what a policy of the runner reads)."""
        return self._observations[self.agent]  # type: ignore[no-any-return]

    def team_action(self) -> Any:
        """The action the executors' policy takes in this seat now: played here, nobody deviates."""
        return self._team_actions[self.agent]

    def _decide_team(self) -> None:
        """Every executor's action for the round ahead, from its policy (a joint policy answers for all)."""
        observations, actions = self._observations, {}
        done: set[int] = set()
        for agent, policy in self._executors.items():
            if id(policy) in done:
                continue
            if callable(getattr(policy, "act_joint", None)):
                actions.update(policy.act_joint({a: observations[a] for a in self.config.executors}))
                done.add(id(policy))
            else:
                actions[agent] = decide_now(policy, observations[agent], self._env)[0]
        self._team_actions = actions

    def _reset_policies(self, seed: int | None) -> None:
        seen: set[int] = set()
        for i, policy in enumerate(self._executors.values()):
            if id(policy) not in seen:
                seen.add(id(policy))
                stream = agent_stream(ROLES_STREAMS["executor"], i)
                policy.reset(seed=None if seed is None else policy_seed(seed, stream))
        self._coordinator.reset(seed=None if seed is None else policy_seed(seed, ROLES_STREAMS["coordinator"]))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        if options:
            raise ValueError(
                f"this view takes no reset options (game parameters go to gymnasium.make), got {options!r}"
            )
        super().reset(seed=seed)
        if seed is not None or not self._seeded:
            self._reset_policies(seed)
            self._seeded = True
        self._observations, _ = self._env.reset(seed=seed)
        self._decide_team()
        return self._features(), {"episode_index": self._env.episode}

    def action_masks(self) -> np.ndarray:
        """The legal actions now (bool): every grid point (the Box has no mask: a ValueError)."""
        if self.config.action_space != "grid":
            raise ValueError("action_masks() is for action_space='grid'; the Box's actions are all legal")
        return np.asarray(self.agent_observation()["action_mask"], bool)

    def _features(self) -> np.ndarray:
        return np.asarray(self._observations[self.agent]["observation"], np.float32)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        env = self._env
        if not env.agents:  # (an environment never reset has no agents either)
            raise RuntimeError("the episode is over: call reset()" if self._seeded else "step() before reset()")
        env.check_action(self.agent, action)  # (a ValueError naming the executor, before anything is played)
        actions: dict[str, Any] = {**self._team_actions, self.agent: action, COORDINATOR: None}
        self._observations, *_ = env.step(actions)
        if env.answering:
            self._decide_team()
            return self._features(), 0.0, False, False, {"episode_index": env.episode}
        commit = decide_now(self._coordinator, self._observations[COORDINATOR], env)[0]
        features = self._features()
        _, rewards, *_ = env.step({**dict.fromkeys(env.agents), COORDINATOR: commit})
        index = self.config.executors.index(self.agent)
        info = {
            "episode_index": env.episode,
            **env.terms,
            "temperature": env.temperatures[-1][index],
            "penalty": env.penalties[-1][index],
        }
        return features, float(rewards[self.agent]), True, False, info

    def render(self) -> str | np.ndarray | None:
        """The game's rendering (:mod:`eq_env.core.render`): text (``"ansi"``), printed (``"human"``) or a
        picture of it (``"rgb_array"``)."""
        return self._env.render()
