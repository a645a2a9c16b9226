"""Belief coordination with numbers only, for multi-agent RL (RLlib): a :class:`NumericAdapter`.

===========  ============================================  ==============================================
role         numeric observation                           numeric action
===========  ============================================  ==============================================
executor     its features, ``Box(5)`` (difficulty, round,  ``Discrete(G)``: a point of the configuration's
             its previous reply's support; what ECON's     (T, p) grid, the environment's own index
             belief networks read)                         (``t·grid_penalties + p``; G = 30 by default)
coordinator  its features, ``Box(1 + 3N)`` (difficulty;    ``Discrete(N)``: the executor whose answer is
             per executor: its answer's support, whether   committed (every commitment is legal)
             it gave a number, its temperature)
===========  ============================================  ==============================================

The configuration's executors must choose on the grid (``action_space="grid"``, as ECON's do; a Box
configuration is refused in one line). The executors are symmetric (their features say nothing of their
index), so they share one module, ``executor``, trained on every executor's choices; the coordinator has
its own, ``coordinator``.
Every agent is paid the shared reward at the end. An agent whose phase it is not (the coordinator while
executors answer, executors at the commit) only waits: :class:`NumericAECEnv` plays those turns itself,
so each executor acts once per round and the coordinator once per episode. The texts (question,
replies) are left out: they are for LLM coordinators. ``numeric_env(config)`` is the PettingZoo AEC
environment RLlib's ``PettingZooEnv`` wraps.

The same adapter makes the numeric observation mode, ``belief_coordination_v0.env(observation_mode="numeric")``
(:class:`~eq_env.core.numeric.NumericModeEnv`, grid configurations only): every turn as the game plays it,
an idle agent's mask allowing only its no-op (0), the others all legal, and infos of fixed numeric keys
(:data:`INFO_KEYS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.rules import EXECUTOR_FEATURES
from eq_env.belief_coordination.spec import ID
from eq_env.core.numeric import NumericAdapter, NumericAECEnv

__all__ = ["ADAPTER", "INFO_KEYS", "numeric_env"]


def _observation_space(role: str, config: Any) -> spaces.Space[Any]:
    if config.action_space != "grid":
        raise ValueError(
            "belief coordination's numeric adapter (observation_mode='numeric', RLlib) needs "
            "action_space='grid' (its executors choose points of the (T, p) grid), got "
            f"{config.action_space!r}"
        )
    size = EXECUTOR_FEATURES if role == "executor" else 1 + 3 * config.n_executors
    return spaces.Box(0.0, 1.0, (size,), np.float32)


def _action_space(role: str, config: Any) -> spaces.Space[Any]:
    return spaces.Discrete(config.grid_size if role == "executor" else config.n_executors)


def _observe(role: str, observation: Mapping[str, Any]) -> np.ndarray:
    return np.asarray(observation["observation"], np.float32)


def _idle(role: str, observation: Mapping[str, Any]) -> bool:
    return bool(observation["idle"])


def _env_action(role: str, action: Any, observation: Mapping[str, Any]) -> int:
    return int(np.asarray(action).reshape(-1)[0])  # the environment's own index (a grid point, an executor)


# the numeric mode's infos: none (the game's infos hold no numbers an agent is told)
INFO_KEYS: tuple[str, ...] = ()


def _info(info: Mapping[str, Any]) -> dict[str, float]:
    return {key: float(info.get(key) or 0.0) for key in INFO_KEYS}


ADAPTER = NumericAdapter(
    env=ID,
    observation_space=_observation_space,
    action_space=_action_space,
    observe=_observe,
    env_action=_env_action,
    modules={"executor": "executor", "coordinator": "coordinator"},
    idle=_idle,
    info=_info,
)


def numeric_env(config: BeliefCoordinationConfig | None = None) -> NumericAECEnv:
    """The game under ``config`` (default: the paper's on the grid), each agent with numbers only (see the module
    docstring)."""
    return NumericAECEnv(ADAPTER, config or BeliefCoordinationConfig(action_space="grid"))
