"""Scripted baselines of belief coordination: executors that choose (T, p) by a fixed rule, and coordinators
that commit by a fixed rule.

Executors return a (T, p) action in whichever executor action space the environment has: the Box's
normalised ``[x, y]`` (from the observation's ``"ranges"``; a (T, p) outside them is an error), or,
when the observation carries the ``"grid"`` (``action_space="grid"``), the index of the grid point nearest to
the (T, p) they want (distance measured in units of each axis' range).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from eq_env.core.policy import BasePolicy

__all__ = [
    "FirstCoordinator",
    "FixedExecutor",
    "MajorityCoordinator",
    "RandomCoordinator",
    "RandomExecutor",
    "ScheduleExecutors",
    "as_action",
]


def _finite(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= float(value) <= high:
        raise ValueError(f"{name} must be a number in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def as_action(observation: Mapping[str, Any], temperature: float, penalty: float) -> Any:
    """The executor action for (T, p): the normalised ``[x, y]`` (float32) for the Box, the nearest grid index
    for a grid; a ValueError when (T, p) lies outside the game's ranges."""
    grid = observation.get("grid") if isinstance(observation, Mapping) else None
    if grid is None:
        ranges = np.asarray(observation["ranges"], dtype=float)  # [[T_min, T_max], [p_min, p_max]]
    else:
        grid = np.asarray(grid, dtype=float)
        ranges = np.stack([grid.min(axis=0), grid.max(axis=0)], axis=1)
    wanted = np.array([temperature, penalty])
    outside = (wanted < ranges[:, 0] - 1e-6) | (wanted > ranges[:, 1] + 1e-6)
    if outside.any():  # never silently another (T, p) than the one asked for
        name, value, (low, high) = (
            ("temperature", temperature, ranges[0]) if outside[0] else ("penalty", penalty, ranges[1])
        )
        raise ValueError(
            f"{name} {value:g} is outside this game's range [{low:g}, {high:g}] (its "
            "temperature_min/max, penalty_min/max)"
        )
    if grid is None:
        width = np.maximum(ranges[:, 1] - ranges[:, 0], 1e-12)
        return np.clip((wanted - ranges[:, 0]) / width, 0, 1).astype(np.float32)
    span = np.maximum(grid.max(axis=0) - grid.min(axis=0), 1e-12)
    distance = (((grid - np.array([temperature, penalty])) / span) ** 2).sum(axis=1)
    return int(np.argmin(distance))


class FixedExecutor(BasePolicy):
    """Every executor samples at the same fixed (T, p) (default 0.7, 1.1: a common chat default)."""

    role: ClassVar[str] = "executor"

    def __init__(self, temperature: float = 0.7, penalty: float = 1.1) -> None:
        super().__init__()
        self.temperature = _finite("temperature", temperature, 0.01, 5.0)
        self.penalty = _finite("penalty", penalty, 1.0, 5.0)

    def act(self, observation: Mapping[str, Any]) -> Any:
        return as_action(observation, self.temperature, self.penalty)

    def __repr__(self) -> str:
        return f"FixedExecutor(temperature={self.temperature:g}, penalty={self.penalty:g})"


class RandomExecutor(BasePolicy):
    """(T, p) drawn uniformly at random for each question (grid points, or the ranges t_min–t_max, p_min–p_max).

    With a grid, a uniformly random legal grid point; with the Box, uniform over ``[t_min, t_max] × [p_min,
    p_max]`` (defaults: the environment's default ranges)."""

    role: ClassVar[str] = "executor"

    def __init__(self, t_min: float = 0.1, t_max: float = 2.0, p_min: float = 1.0, p_max: float = 2.0) -> None:
        super().__init__()
        self.t = (_finite("t_min", t_min, 0.01, 5.0), _finite("t_max", t_max, 0.01, 5.0))
        self.p = (_finite("p_min", p_min, 1.0, 5.0), _finite("p_max", p_max, 1.0, 5.0))
        if self.t[0] > self.t[1] or self.p[0] > self.p[1]:
            raise ValueError("t_min must not exceed t_max, nor p_min p_max")

    def act(self, observation: Mapping[str, Any]) -> Any:
        mask = observation.get("action_mask") if isinstance(observation, Mapping) else None
        if mask is not None:
            return int(self.rng.choice(np.flatnonzero(mask)))
        return as_action(observation, self.rng.uniform(*self.t), self.rng.uniform(*self.p))


class ScheduleExecutors(BasePolicy):
    """A fixed temperature schedule (joint): executor i of N at the i-th of N temperatures in [t_low, t_high].

    Majority vote's classic diversity: temperatures evenly spaced over ``[t_low, t_high]`` (one executor: their
    mean), all at penalty ``penalty``. A joint policy: it needs each executor's place in the team."""

    role: ClassVar[str] = "executor"

    def __init__(self, t_low: float = 0.3, t_high: float = 1.2, penalty: float = 1.1) -> None:
        super().__init__()
        self.t_low = _finite("t_low", t_low, 0.01, 5.0)
        self.t_high = _finite("t_high", t_high, 0.01, 5.0)
        self.penalty = _finite("penalty", penalty, 1.0, 5.0)

    def temperatures(self, n: int) -> np.ndarray:
        return np.linspace(self.t_low, self.t_high, n) if n > 1 else np.array([(self.t_low + self.t_high) / 2])

    def act_joint(self, observations: Mapping[str, Any]) -> dict[str, Any]:
        agents = sorted(observations, key=lambda a: int(a.rpartition("_")[2]))
        temps = self.temperatures(len(agents))
        return {a: as_action(observations[a], float(t), self.penalty) for a, t in zip(agents, temps, strict=True)}

    def __repr__(self) -> str:
        return f"ScheduleExecutors(t_low={self.t_low:g}, t_high={self.t_high:g}, penalty={self.penalty:g})"


class MajorityCoordinator(BasePolicy):
    """Commits the number most executors gave; among equals, the lowest-indexed executor's.

    As :func:`eq_env.belief_coordination.rules.majority` (the batch engine's coordinator)."""

    role: ClassVar[str] = "coordinator"

    def act(self, observation: Mapping[str, Any]) -> int:
        features = np.asarray(observation["observation"])
        return int(np.argmax(features[1::3]))  # (an executor with no number has no support)


class FirstCoordinator(BasePolicy):
    """Commits executor 0's answer, whatever the others say: the single-agent baseline's coordinator."""

    role: ClassVar[str] = "coordinator"

    def act(self, observation: Mapping[str, Any]) -> int:
        return 0


class RandomCoordinator(BasePolicy):
    """Commits a random executor's answer among those that gave a number (any, if none did)."""

    role: ClassVar[str] = "coordinator"

    def act(self, observation: Mapping[str, Any]) -> int:
        numbered = np.flatnonzero(np.asarray(observation["observation"])[2::3])
        return int(self.rng.choice(numbered if len(numbered) else np.arange(len(observation["action_mask"]))))
