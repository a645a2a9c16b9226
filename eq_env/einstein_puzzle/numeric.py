"""The Einstein puzzle with numbers only, for multi-agent RL (RLlib): a :class:`NumericAdapter`.

Each player observes ``{"observation": Box(L), "action_mask": Box(48·n + 1)}`` — the environment's
numeric observation (:mod:`.spaces`: the board, the possible goals, the constraints it knows, recent
turns; the text is left out) and its legal actions as 0/1 floats — and acts in ``Discrete(48·n + 1)``,
the environment's own action space (a masked action is played as the environment plays it: a failed
turn). The two seats are symmetric (the observation says which is which), so they share one policy,
``player``, trained on both seats' turns. ``numeric_env(config)`` is the PettingZoo AEC environment
RLlib's ``PettingZooEnv`` wraps.

The same adapter makes the numeric observation mode, ``einstein_puzzle_v0.env(observation_mode="numeric")``
(:class:`~eq_env.core.numeric.NumericModeEnv`): the environment's mask as ``int8`` (the player not to act,
and both once the game is over, allowed only ``pass``, index ``48·n``: the environment's own convention), and
infos of fixed numeric keys (:data:`INFO_KEYS`).
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

__all__ = ["ADAPTER", "INFO_KEYS", "numeric_env"]


def _observation_space(role: str, config: Any) -> spaces.Space[Any]:
    n = config.n
    return spaces.Dict(
        {
            "action_mask": spaces.Box(0.0, 1.0, (n_actions(n),), np.float32),
            "observation": spaces.Box(0.0, 1.0, (layout(n).size,), np.float32),
        }
    )


def _action_space(role: str, config: Any) -> spaces.Space[Any]:
    return spaces.Discrete(n_actions(config.n))


def _observe(role: str, observation: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {
        "action_mask": np.asarray(observation["action_mask"], np.float32),
        "observation": np.asarray(observation["observation"], np.float32),
    }


def _env_action(role: str, action: Any, observation: Mapping[str, Any]) -> int:
    return int(np.asarray(action).reshape(-1)[0])


def _noop(role: str, config: Any) -> int:
    return n_actions(config.n) - 1  # pass


# the numeric mode's infos: the last action's outcome (0 none yet, 1 accepted, 2 rejected, 3 illegal) and, 0
# until the end, the game's success, turns and placed objects
INFO_KEYS = ("last_outcome", "success", "turns", "placed")
_OUTCOMES = {"accepted": 1.0, "rejected": 2.0, "illegal": 3.0}


def _info(info: Mapping[str, Any]) -> dict[str, float]:
    last = info.get("last_action")
    return {
        "last_outcome": _OUTCOMES.get(last["outcome"], 0.0) if last else 0.0,
        **{key: float(info.get(key) or 0.0) for key in INFO_KEYS[1:]},
    }


ADAPTER = NumericAdapter(
    env=ID,
    observation_space=_observation_space,
    action_space=_action_space,
    observe=_observe,
    env_action=_env_action,
    modules={"player_0": "player", "player_1": "player"},
    noop=_noop,
    info=_info,
)


def numeric_env(config: EinsteinPuzzleConfig | None = None) -> NumericAECEnv:
    """The game under ``config`` (default: the paper's), each player with numbers only (see the module docstring)."""
    return NumericAECEnv(ADAPTER, config or EinsteinPuzzleConfig())
