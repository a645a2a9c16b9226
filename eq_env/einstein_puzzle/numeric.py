"""The Einstein puzzle with numbers only, for multi-agent RL (RLlib): a :class:`NumericAdapter`.

Each player observes ``{"observations": Box(L), "action_mask": Box(48·n + 1)}`` — the environment's
numeric observation (:mod:`.spaces`: the board, the possible goals, the constraints it knows, recent
turns; the text is left out) and its legal actions as 0/1 floats — and acts in ``Discrete(48·n + 1)``,
the environment's own action space (a masked action is played as the environment plays it: a failed
turn). The two seats are symmetric (the observation says which is which), so they share one policy,
``player``, trained on both seats' turns. ``numeric_env(config)`` is the PettingZoo AEC environment
RLlib's ``PettingZooEnv`` wraps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from eq_env.core.numeric import NumericAdapter, NumericAECEnv
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.spaces import layout, n_actions
from eq_env.einstein_puzzle.spec import ID

__all__ = ["ADAPTER", "numeric_env"]


def _observation_space(role: str, config: Any) -> spaces.Space[Any]:
    n = config.n
    return spaces.Dict({
        "action_mask": spaces.Box(0.0, 1.0, (n_actions(n),), np.float32),
        "observations": spaces.Box(0.0, 1.0, (layout(n).size,), np.float32),
    })  # fmt: skip


def _action_space(role: str, config: Any) -> spaces.Space[Any]:
    return spaces.Discrete(n_actions(config.n))


def _observe(role: str, observation: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {"action_mask": np.asarray(observation["action_mask"], np.float32),
            "observations": np.asarray(observation["observation"], np.float32)}  # fmt: skip


def _env_action(role: str, action: Any, observation: Mapping[str, Any]) -> int:
    return int(np.asarray(action).reshape(-1)[0])


ADAPTER = NumericAdapter(env=ID, observation_space=_observation_space, action_space=_action_space,
                         observe=_observe, env_action=_env_action,
                         modules={"player_0": "player", "player_1": "player"})  # fmt: skip


def numeric_env(config: EinsteinPuzzleConfig | None = None) -> NumericAECEnv:
    """The game under ``config`` (default: the paper's), each player with numbers only (see the module docstring)."""
    return NumericAECEnv(ADAPTER, config or EinsteinPuzzleConfig())
