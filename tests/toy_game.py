"""A throwaway game, registered by the test suite only: three agents, two roles, multi-turn episodes.

**Relay.** A counter starts at 0, 1 or 2 (chance). ``leader_0``, ``runner_0`` and
``runner_1`` take turns, in that order, each adding 1 or 2 (``Discrete(2)``:
0 adds 1, 1 adds 2; adding 2 past the target is masked, and ends the episode with −1 to
the offender, as PettingZoo's classic games do). Reaching the target exactly wins (+1 to
everyone); ``max_turns`` turns without it is a truncation.

It exists to show that the core serves a game it was not written for: the
runner, experiments, sweeps, the CLI and the conformance battery work on it
with no change to core code. Nothing here is imported by the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv

from eq_env.core.api import before_reset, checked_actions, checked_agent, checked_episode, checked_options, checked_seed
from eq_env.core.config import GameConfig, choice, number
from eq_env.core.policy import BasePolicy, register_policy
from eq_env.core.records import checked_fields
from eq_env.core.spec import EnvSpec, register_env
from eq_env.core.wrappers import OrderEnforcingWrapper

ID = "eq_env/relay-v0"
LEADER, RUNNERS = ("leader_0",), ("runner_0", "runner_1")
AGENTS = [*LEADER, *RUNNERS]


@dataclass(frozen=True)
class RelayConfig(GameConfig):
    NAME: ClassVar[str] = "relay"
    target: int = number(7, 3, 50, "the count to reach exactly", integer=True)
    max_turns: int = number(12, 1, 200, "turns before the episode is truncated", integer=True)
    bonus: float = number(1.0, 0.0, 10.0, "everyone's reward for reaching the target")
    chatter: str = choice("none", ("none", "some"), "a choice that changes nothing (its value 'none' is a word)")


RelayConfig.PRESETS = {"default": RelayConfig(), "long": RelayConfig(target=15, max_turns=30)}


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    metadata = {"name": "relay_v0", "render_modes": ["ansi"], "is_parallelizable": False}  # noqa: RUF012

    def __init__(self, config: RelayConfig | None = None, *, preset: str | None = None, render_mode: str | None = None,
                 **overrides: Any) -> None:  # fmt: skip
        if config is not None and preset is not None:
            raise ValueError("give config or preset, not both")
        self.config = (config or RelayConfig.from_preset(preset)).replace(**overrides)
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        top = self.config.target + 2
        self._obs_space = spaces.Dict({
            "observation": spaces.Box(0, top + self.config.max_turns, (3,), np.int64),
            "action_mask": spaces.Box(0, 1, (2,), np.int8),
        })  # fmt: skip
        self._act_space = spaces.Discrete(2)
        # state(): the counter (past the target by at most 1) and the turns played
        self.state_space = spaces.Box(0, np.array([self.config.target + 1, self.config.max_turns]), dtype=np.int64)
        self._seed: int | None = None
        self._episode = -1
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        checked_agent(agent, AGENTS)
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space[Any]:
        checked_agent(agent, AGENTS)
        return self._act_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        seed = checked_seed(seed)  # (the core's checks: a bad seed or option is refused before anything changes)
        episode = checked_episode(checked_options(options, config=RelayConfig))
        if seed is not None:
            self._seed, self._episode = seed, -1
        if episode is not None:
            self._episode = episode - 1
        self._episode += 1
        rng = np.random.default_rng([self._seed if self._seed is not None else 0, self._episode])
        self.start = int(rng.integers(0, 3))
        self.counter, self.turns = self.start, 0
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = AGENTS[0]

    def _mask(self) -> np.ndarray:
        return np.array([self.counter + 1 <= self.config.target, self.counter + 2 <= self.config.target], np.int8)

    def observe(self, agent: str) -> dict[str, Any]:
        checked_agent(agent, AGENTS)
        left = self.config.max_turns - self.turns
        counts = np.array([self.counter, self.config.target, left], np.int64)
        return {"observation": counts, "action_mask": self._mask()}

    def state(self) -> np.ndarray:
        if not hasattr(self, "counter"):
            raise before_reset("state()")
        return np.array([self.counter, self.turns], np.int64)

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if not self._act_space.contains(action):
            raise ValueError(f"action {action!r} is not legal for {agent}")
        self._cumulative_rewards[agent] = 0.0
        if not self._mask()[int(action)]:  # masked: the episode ends, the offender -1 (PettingZoo classic's way)
            self.rewards = {a: -1.0 if a == agent else 0.0 for a in self.agents}
            self.terminations = dict.fromkeys(self.agents, True)
            self.infos = {a: {"success": False, "turns": self.turns} for a in self.agents}
            self._accumulate_rewards()
            return
        self.counter += int(action) + 1
        self.turns += 1
        done, cut = self.counter == self.config.target, self.turns >= self.config.max_turns
        if done or cut:
            reward = self.config.bonus if done else 0.0
            self.rewards = dict.fromkeys(self.agents, reward)
            self.terminations = dict.fromkeys(self.agents, done)
            self.truncations = dict.fromkeys(self.agents, cut and not done)
            self.infos = {a: {"success": done, "turns": self.turns} for a in self.agents}
        else:
            self.rewards = dict.fromkeys(self.agents, 0.0)
        self.agent_selection = AGENTS[(AGENTS.index(agent) + 1) % len(AGENTS)]
        self._accumulate_rewards()

    def render(self) -> str | None:
        return f"relay: {getattr(self, 'counter', '-')}/{self.config.target} after {getattr(self, 'turns', 0)} turns\n"


class parallel_env(ParallelEnv):  # noqa: N801
    """The same game in parallel form: each step plays the action of the agent whose turn it is."""

    metadata = raw_env.metadata

    def __init__(self, **kwargs: Any) -> None:
        self._aec = raw_env(**kwargs)
        self.state_space = self._aec.state_space
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._aec.observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._aec.action_space(agent)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        self._aec.reset(seed, options)
        self.agents = list(AGENTS)
        return {a: self._aec.observe(a) for a in AGENTS}, {a: {} for a in AGENTS}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if not self.agents:
            raise RuntimeError("step() outside an episode: call reset() first (and again after an episode ends)")
        acting = self._aec.agent_selection
        self._aec.step(checked_actions(actions, self.agents, (acting,))[acting])
        obs = {a: self._aec.observe(a) for a in AGENTS}
        rewards = dict(self._aec.rewards)
        terms, truncs, infos = dict(self._aec.terminations), dict(self._aec.truncations), dict(self._aec.infos)
        if any(terms.values()) or any(truncs.values()):
            self.agents = []
        return obs, rewards, terms, truncs, infos

    def state(self) -> np.ndarray:
        return self._aec.state()

    def render(self) -> str | None:
        return self._aec.render()


def env(**kwargs: Any) -> Any:
    return OrderEnforcingWrapper(raw_env(**kwargs))


# ---------------------------------------------------------------------------
# Records and metrics
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RelayRecord:
    seed: int
    episode: int
    start: int
    final: int
    turns: int
    success: bool
    agent_infos: dict[str, Any] = field(default_factory=dict)

    @property
    def infos(self) -> dict[str, Any]:
        return self.agent_infos

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RelayRecord:
        return cls(**checked_fields(cls, data))


def record(env: raw_env, seed: int, episode: int, infos: Mapping[str, Any]) -> RelayRecord:
    return RelayRecord(seed, episode, env.start, env.counter, env.turns, env.counter == env.config.target, dict(infos))


METRICS = {"success_rate": "episodes that reach the target exactly", "turns": "mean turns per episode"}


def compute_metrics(records: Any) -> dict[str, float]:
    if not records:
        return {"success_rate": float("nan"), "turns": float("nan")}
    return {"success_rate": float(np.mean([r.success for r in records])),
            "turns": float(np.mean([r.turns for r in records]))}  # fmt: skip


SPEC = register_env(
    EnvSpec(
        id=ID,
        name="relay",
        entry="toy_game",
        config=RelayConfig,
        roles={"leader": 40, "runner": 41},
        agents=lambda config: {"leader": LEADER, "runner": RUNNERS},
        record=record,
        record_from_dict=RelayRecord.from_dict,
        metrics=METRICS,
        compute_metrics=compute_metrics,
        plot_metrics=("success_rate", "turns"),
        default_policies={"leader": "random", "runner": "random"},
        conformance={"default": {}, "long": {"preset": "long"}, "tight": {"target": 3, "max_turns": 2}},
    )
)


# ---------------------------------------------------------------------------
# Policies
# ---------------------------------------------------------------------------
class RandomRunner(BasePolicy):
    """A random legal move."""

    role = "runner"

    def act(self, observation: Mapping[str, Any]) -> int:
        return int(self.rng.choice(np.flatnonzero(observation["action_mask"])))


class RandomLeader(RandomRunner):
    """A random legal move."""

    role = "leader"


class GreedyRelay(BasePolicy):
    """Adds 2 whenever it may."""

    role = "runner"

    def act(self, observation: Mapping[str, Any]) -> int:
        return 1 if observation["action_mask"][1] else 0


class TeamRelay:
    """A joint policy for the runners: both add 1 (always legal while the episode runs)."""

    role = "runner"

    def __init__(self) -> None:
        self.calls = 0

    def reset(self, seed: int | None = None) -> None:
        self.calls = 0

    def act_joint(self, observations: Mapping[str, Any]) -> dict[str, int]:
        self.calls += 1
        return dict.fromkeys(observations, 0)


register_policy("random", "leader", RandomLeader, env=ID)
register_policy("random", "runner", RandomRunner, env=ID)
register_policy("greedy", "runner", GreedyRelay, env=ID)
register_policy("team", "runner", TeamRelay, env=ID)
