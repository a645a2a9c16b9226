"""The repeated exchange–audit game with numbers only: a :class:`~eq_env.core.numeric.NumericAdapter`.

Each role sees the one-shot game's features (:mod:`eq_env.exchange_audit.numeric`) followed by the public
record's (:data:`~eq_env.exchange_audit.repeated.views.HISTORY_FEATURES`, as the proposer's Gymnasium view
reads them), and acts as in the one-shot game: the proposer in the artifact space, the validator in
``Discrete(2)`` with its mask. It makes the numeric observation mode,
``exchange_audit_repeated_v0.env(observation_mode="numeric")`` (:class:`~eq_env.core.numeric.NumericModeEnv`):
the proposer's artifacts numbered in one ``Discrete``, every agent with an action mask (the agent whose phase
it is not: only its no-op, 0), and infos of fixed numeric keys (:data:`INFO_KEYS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from eq_env.core.numeric import NumericAdapter
from eq_env.exchange_audit import numeric as one_shot
from eq_env.exchange_audit.repeated.env import decode_history
from eq_env.exchange_audit.repeated.spec import ID
from eq_env.exchange_audit.repeated.views import FEATURE_BOUND, HISTORY_FEATURES, history_features

__all__ = ["ADAPTER", "INFO_KEYS"]

# the numeric mode's infos: the one-shot game's numbers of the round that ended, and the record's
INFO_KEYS = (*one_shot.INFO_KEYS, "round", "q", "clean_audits", "failed_audits")


def _observation_space(role: str, config: Any) -> spaces.Space[Any]:
    stage = one_shot.ADAPTER.observation_space(role, config.stage)
    features = stage["observation"] if isinstance(stage, spaces.Dict) else stage
    assert features.shape is not None
    size = features.shape[0] + len(HISTORY_FEATURES)
    box = spaces.Box(-FEATURE_BOUND, FEATURE_BOUND, shape=(size,), dtype=np.float32)
    return spaces.Dict({**stage.spaces, "observation": box}) if isinstance(stage, spaces.Dict) else box


def _action_space(role: str, config: Any) -> spaces.Space[Any]:
    return one_shot.ADAPTER.action_space(role, config.stage)


def _observe(role: str, observation: Mapping[str, Any]) -> Any:
    stage = one_shot.ADAPTER.observe(role, observation)
    history = decode_history(observation)
    record = history_features(history, max(int(history["round"] + history["rounds_left"]), 1))
    if isinstance(stage, Mapping):
        return {**stage, "observation": np.concatenate([stage["observation"], record])}
    return np.concatenate([stage, record])


def _info(info: Mapping[str, Any]) -> dict[str, float]:
    return {**one_shot.ADAPTER.info(info), **{key: float(info.get(key) or 0.0) for key in INFO_KEYS[-4:]}}  # type: ignore[misc]


ADAPTER = NumericAdapter(
    env=ID,
    observation_space=_observation_space,
    action_space=_action_space,
    observe=_observe,
    env_action=one_shot.ADAPTER.env_action,
    modules={"proposer": "proposer", "validator": "validator"},
    idle=one_shot.ADAPTER.idle,
    info=_info,
)
