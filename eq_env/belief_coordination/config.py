"""Belief coordination's configuration: one validated, immutable value, with presets.

Every parameter is declared once (range or choices and documentation), so
errors, ``eq-env --env belief-coordination --n-executors 5`` flags, sweep grids
and the manual's table all come from here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from eq_env.belief_coordination.answerers import MAX_EXECUTORS, MAX_ROUNDS, SimulationParams
from eq_env.core.config import GameConfig, choice, flag, number

__all__ = ["PRESETS", "BeliefCoordinationConfig"]


@dataclass(frozen=True)
class BeliefCoordinationConfig(GameConfig):
    """The parameters of one belief-coordination environment (see ``eq_env.belief_coordination.env``)."""

    NAME: ClassVar[str] = "belief-coordination"

    n_executors: int = number(3, 1, MAX_EXECUTORS, "executors answering each question (N)", integer=True)
    rounds: int = number(
        1,
        1,
        MAX_ROUNDS,
        "answering rounds: 1 as in the paper; more is a debate (executors read the others' answers and revise)",
        integer=True,
    )
    action_space: str = choice(
        "box", ("box", "grid"), "executors' action: a Box (T, p), or an index into the (T, p) grid"
    )
    temperature_min: float = number(0.1, 0.01, 5.0, "lowest temperature T an executor may choose (paper: 0.1)")
    temperature_max: float = number(2.0, 0.01, 5.0, "highest temperature T (paper: 2.0)")
    penalty_min: float = number(
        1.0, 1.0, 5.0, "lowest repetition penalty p; 1 is none (the original code's 0.1-0.9 rewarded repetition)"
    )
    penalty_max: float = number(2.0, 1.0, 5.0, "highest repetition penalty p")
    grid_temperatures: int = number(6, 1, 64, "temperatures in the grid (evenly spaced, ends included)", integer=True)
    grid_penalties: int = number(5, 1, 64, "penalties in the grid (evenly spaced, ends included)", integer=True)
    difficulty: float | None = number(
        None, 0.0, 1.0, "questions' difficulty; mixed: every difficulty equally often", none="mixed"
    )
    sensitive: bool = flag(
        True, "the simulated answerer heeds T and p (false: the null instrument, on which they cannot matter)"
    )
    w_ts: float = number(0.5, 0.0, 10.0, "reward weight of task success TS")
    w_al: float = number(0.3, 0.0, 10.0, "reward weight of alignment AL")
    w_cc: float = number(0.2, 0.0, 10.0, "reward weight of collaborative contribution CC")

    def validate(self) -> None:
        if self.temperature_min > self.temperature_max:
            raise ValueError(
                f"temperature_min ({self.temperature_min:g}) must not exceed temperature_max ({self.temperature_max:g})"
            )
        if self.penalty_min > self.penalty_max:
            raise ValueError(f"penalty_min ({self.penalty_min:g}) must not exceed penalty_max ({self.penalty_max:g})")

    @property
    def executors(self) -> tuple[str, ...]:
        return tuple(f"executor_{i}" for i in range(self.n_executors))

    @property
    def weights(self) -> tuple[float, float, float]:
        return (self.w_ts, self.w_al, self.w_cc)

    @functools.cached_property
    def temperatures(self) -> np.ndarray:
        """The grid's temperatures (read-only)."""
        values = np.linspace(self.temperature_min, self.temperature_max, self.grid_temperatures)
        values.flags.writeable = False
        return values

    @functools.cached_property
    def penalties(self) -> np.ndarray:
        """The grid's penalties (read-only)."""
        values = np.linspace(self.penalty_min, self.penalty_max, self.grid_penalties)
        values.flags.writeable = False
        return values

    @property
    def grid_size(self) -> int:
        return self.grid_temperatures * self.grid_penalties

    def grid_point(self, index: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """(T, p) of grid index ``index`` (``t_index · grid_penalties + p_index``), elementwise."""
        index = np.asarray(index)
        return self.temperatures[index // self.grid_penalties], self.penalties[index % self.grid_penalties]

    def simulation(self) -> SimulationParams:
        """The simulated answerer's parameters under this configuration."""
        return SimulationParams(sensitive=self.sensitive)


PRESETS: dict[str, BeliefCoordinationConfig] = {
    "paper": BeliefCoordinationConfig(),
    "grid": BeliefCoordinationConfig(action_space="grid"),
    "nine": BeliefCoordinationConfig(n_executors=9, action_space="grid"),
    "debate": BeliefCoordinationConfig(rounds=3),
    "null": BeliefCoordinationConfig(sensitive=False, action_space="grid"),
}
BeliefCoordinationConfig.PRESETS = PRESETS
BeliefCoordinationConfig.DEFAULT_PRESET = "paper"
