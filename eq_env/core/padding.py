"""One space for every agent of a game in its numeric observation mode: :func:`pad_numeric` and
:func:`flatten_numeric`, pure PettingZoo wrappers (AEC and parallel) over :mod:`eq_env.core.numeric`.

The numeric mode gives each agent ``Dict({"observation": Box(float32, (L,)), "action_mask": Box(0, 1, (A,),
int8)})`` and ``Discrete(A)``, where L and A may differ between roles (exchange–audit's proposer and validator,
belief coordination's executors and coordinator). Libraries that share one network between agents, or stack
every agent's observations in one array, want one space for all: SuperSuit's parameter-sharing recipe
(``pettingzoo_env_to_vec_env_v1``; its ``pad_observations_v0`` and ``agent_indicator_v0`` take ``Box`` spaces
only) and Tianshou's ``PettingZooEnv``. Nothing here imports an RL library.

* :func:`pad_numeric`: every agent observes ``Dict({"observation": Box(float32, (L_max,)), "action_mask":
  Box(0, 1, (A_max,), int8)})`` and acts in ``Discrete(A_max)``. Features are padded with zeros (the bounds
  are the union of the agents', zero included where an agent has no feature); the mask with zeros, so a
  padded action is never legal and a library that reads the mask never picks one.
* :func:`flatten_numeric`: the padded ``Dict`` as one ``Box(float32, (L_max + A_max,))``, the features then the
  mask (0.0 or 1.0), for ``agent_indicator_v0`` and SB3's ``MlpPolicy``.

**A padded action** (an index of ``Discrete(A_max)`` outside the agent's own ``Discrete(A)``), sent by a
library that does not read the mask (SB3's PPO), is a masked action, and is played as the game plays a masked
action: as the lowest action of the agent's own that its mask forbids now, so that the game's rule applies
(exchange–audit's validator approving after a NO_TRADE: the episode ends, the validator rewarded −1; the
README's **Masked actions**). Where the agent's mask forbids nothing of its own (exchange–audit's validator
facing a request, belief coordination's coordinator), there is no masked action to play and the game has no
rule: it is played as action 0, as SuperSuit's ``pad_action_space_v0`` plays every padded action (its
``dehomogenize_actions``: "extra action values refer to action value 0"). An idle agent's action is not played
at all, as in the numeric mode. An action outside ``Discrete(A_max)`` is a ValueError naming the agent.

Turn order, rewards, terminations, infos, seeds and ``state()`` are the wrapped environment's: the same seed
plays the same game as the unwrapped environment, with the same actions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import BaseParallelWrapper, BaseWrapper

from eq_env.core.numeric import _index

__all__ = ["flatten_numeric", "pad_numeric"]


def _numeric_spaces(env: Any, wrapper: str) -> dict[str, tuple[spaces.Box, int]]:
    """Each possible agent's features ``Box`` and its number of actions, or a ValueError saying what ``wrapper``
    expected (a game's numeric mode)."""
    if not isinstance(env, (AECEnv, ParallelEnv)):
        raise TypeError(f"{wrapper} takes a PettingZoo AECEnv or ParallelEnv, got {type(env).__name__}")
    found: dict[str, tuple[spaces.Box, int]] = {}
    for agent in env.possible_agents:
        seen, acts = env.observation_space(agent), env.action_space(agent)
        features = seen.spaces.get("observation") if isinstance(seen, spaces.Dict) else None
        mask = seen.spaces.get("action_mask") if isinstance(seen, spaces.Dict) else None
        if not (
            isinstance(features, spaces.Box)
            and len(features.shape) == 1
            and isinstance(mask, spaces.Box)
            and isinstance(acts, spaces.Discrete)
            and mask.shape == (int(acts.n),)
            and int(acts.start) == 0
        ):
            raise ValueError(
                f"{wrapper} needs a game's numeric observation mode (observation_mode='numeric'): {agent} observes "
                f"{_named(seen)} and acts in {_named(acts)}, expected Dict(observation: Box((L,)), "
                "action_mask: Box((A,))) and Discrete(A)"
            )
        found[agent] = (features, int(acts.n))
    return found


def _named(space: Any) -> str:
    """``space`` in a few words, on one line (a Box's bounds are not)."""
    if isinstance(space, spaces.Dict):
        return f"Dict({', '.join(space.spaces)})"
    shape = getattr(space, "shape", None)
    return f"{type(space).__name__}{shape if shape else ''}"


class _Padding:
    """What both APIs' padding share: the one space, the padded observation, the played action."""

    def __init__(self, env: Any) -> None:
        own = _numeric_spaces(env, "pad_numeric")
        self.own_actions = {agent: n for agent, (_, n) in own.items()}
        boxes = [box for box, _ in own.values()]
        self.length = max(box.shape[0] for box in boxes)
        self.actions = max(self.own_actions.values())
        # bounds: the union of the agents' (an agent's padded features are 0, inside them)
        low = np.min([np.pad(np.asarray(b.low, np.float32), (0, self.length - b.shape[0])) for b in boxes], axis=0)
        high = np.max([np.pad(np.asarray(b.high, np.float32), (0, self.length - b.shape[0])) for b in boxes], axis=0)
        self.observation_space = spaces.Dict(
            {
                "observation": spaces.Box(low, high, (self.length,), np.float32),
                "action_mask": spaces.Box(0, 1, (self.actions,), np.int8),
            }
        )
        self.action_space = spaces.Discrete(self.actions)

    def observe(self, obs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``obs`` padded: the features and the mask with zeros (a padded action is never legal)."""
        features, mask = obs["observation"], obs["action_mask"]
        return {
            "observation": np.pad(np.asarray(features, np.float32), (0, self.length - len(features))),
            "action_mask": np.pad(np.asarray(mask, np.int8), (0, self.actions - len(mask))),
        }

    def played(self, agent: str, action: Any, mask: np.ndarray | None) -> Any:
        """The action of ``agent``'s own space that ``action`` of the padded space is played as (module docstring:
        a padded action is the lowest action ``mask``, the agent's own mask now, forbids, else 0)."""
        index = _index(action)
        if agent not in self.own_actions:
            return action  # (an agent the game does not know: its refusal, in its words)
        if index is None or not 0 <= index < self.actions:
            raise ValueError(
                f"{agent}'s action must be an integer in [0, {self.actions}) (Discrete({self.actions}), "
                f"pad_numeric), got {action!r}"
            )
        if index < self.own_actions[agent]:
            return action
        forbidden = np.flatnonzero(np.asarray(mask) == 0) if mask is not None else np.empty(0, np.int64)
        return int(forbidden[0]) if forbidden.size else 0


class PadNumericEnv(BaseWrapper):  # type: ignore[misc]
    """:func:`pad_numeric` of an AEC environment."""

    def __init__(self, env: AECEnv) -> None:
        super().__init__(env)
        self.padding = _Padding(env)

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.padding.observation_space

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.padding.action_space

    def observe(self, agent: str) -> dict[str, np.ndarray] | None:
        obs = self.env.observe(agent)
        return None if obs is None else self.padding.observe(obs)

    def step(self, action: Any) -> None:
        agent = self.env.agent_selection
        if action is None or not self.env.agents or self.terminations[agent] or self.truncations[agent]:
            self.env.step(action)  # (a done agent's None, or the game's own refusal)
            return
        self.env.step(self.padding.played(agent, action, self.env.observe(agent)["action_mask"]))


class PadNumericParallelEnv(BaseParallelWrapper):  # type: ignore[misc]
    """:func:`pad_numeric` of a parallel environment."""

    def __init__(self, env: ParallelEnv) -> None:
        super().__init__(env)
        self.padding = _Padding(env)
        self._masks: dict[str, np.ndarray] = {}  # each agent's own mask, as last observed

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.padding.observation_space

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.padding.action_space

    def _padded(self, observations: Mapping[str, Any]) -> dict[str, Any]:
        self._masks = {a: o["action_mask"] for a, o in observations.items()}
        return {a: self.padding.observe(o) for a, o in observations.items()}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return self._padded(observations), infos

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if not self.env.agents:
            return self.env.step(actions)  # type: ignore[no-any-return]  # (the game's refusal, in its words)
        played = {a: self.padding.played(a, x, self._masks.get(a)) for a, x in actions.items()}
        observations, rewards, terminations, truncations, infos = self.env.step(played)
        return self._padded(observations), rewards, terminations, truncations, infos


def _flat_box(padded: spaces.Dict) -> spaces.Box:
    features, mask = padded["observation"], padded["action_mask"]
    assert isinstance(features, spaces.Box) and isinstance(mask, spaces.Box)  # (pad_numeric's, for mypy)
    return spaces.Box(
        np.concatenate([features.low, np.zeros(mask.shape, np.float32)]),
        np.concatenate([features.high, np.ones(mask.shape, np.float32)]),
        dtype=np.float32,
    )


def _flat(obs: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.concatenate([obs["observation"], np.asarray(obs["action_mask"], np.float32)])


class FlattenNumericEnv(BaseWrapper):  # type: ignore[misc]
    """:func:`flatten_numeric` of an AEC environment (a :class:`PadNumericEnv`)."""

    def __init__(self, env: PadNumericEnv) -> None:
        super().__init__(env)
        self.box = _flat_box(env.padding.observation_space)

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.box

    def observe(self, agent: str) -> np.ndarray | None:
        obs = self.env.observe(agent)
        return None if obs is None else _flat(obs)


class FlattenNumericParallelEnv(BaseParallelWrapper):  # type: ignore[misc]
    """:func:`flatten_numeric` of a parallel environment (a :class:`PadNumericParallelEnv`)."""

    def __init__(self, env: PadNumericParallelEnv) -> None:
        super().__init__(env)
        self.box = _flat_box(env.padding.observation_space)

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.box

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return {a: _flat(o) for a, o in observations.items()}, infos

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        return {a: _flat(o) for a, o in observations.items()}, rewards, terminations, truncations, infos


def pad_numeric(env: Any) -> PadNumericEnv | PadNumericParallelEnv:
    """``env`` (a game's AEC or parallel environment in the numeric mode) with one observation space and one
    action space for every agent: features and mask padded with zeros to the largest L and A, padded actions
    masked out, and a padded action played as the game plays a masked action (module docstring). An
    environment :func:`pad_numeric` already wraps is returned as it is.

    >>> import eq_env
    >>> env = pad_numeric(eq_env.exchange_audit_v0.parallel_env(observation_mode="numeric"))
    >>> env.action_space("validator_0"), env.observation_space("validator_0")["observation"].shape
    (Discrete(648), (20,))
    """
    if isinstance(env, (PadNumericEnv, PadNumericParallelEnv)):
        return env
    if isinstance(env, ParallelEnv):
        return PadNumericParallelEnv(env)
    if isinstance(env, AECEnv):
        return PadNumericEnv(env)
    raise TypeError(f"pad_numeric takes a PettingZoo AECEnv or ParallelEnv, got {type(env).__name__}")


def flatten_numeric(env: Any) -> FlattenNumericEnv | FlattenNumericParallelEnv:
    """``env`` (a game's AEC or parallel environment in the numeric mode, padded by :func:`pad_numeric` here if
    it is not yet) observing one ``Box(float32, (L_max + A_max,))``: the padded features, then the padded mask as
    0.0/1.0 (read it back as ``obs[L_max:]``). Actions are :func:`pad_numeric`'s ``Discrete(A_max)``.

    >>> import eq_env
    >>> env = flatten_numeric(eq_env.exchange_audit_v0.parallel_env(observation_mode="numeric"))
    >>> env.observation_space("proposer_0").shape, env.action_space("proposer_0")
    ((668,), Discrete(648))
    """
    if not isinstance(env, (PadNumericEnv, PadNumericParallelEnv)):
        _numeric_spaces(env, "flatten_numeric")  # (refused in flatten_numeric's name, not pad_numeric's)
    padded = pad_numeric(env)
    if isinstance(padded, PadNumericParallelEnv):
        return FlattenNumericParallelEnv(padded)
    return FlattenNumericEnv(padded)
