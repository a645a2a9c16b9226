"""The exchange–audit game with numbers only, for multi-agent RL (RLlib): a :class:`NumericAdapter`.

=========  ===========================================  ===============================================
role       numeric observation                          numeric action
=========  ===========================================  ===============================================
proposer   its features, ``Box(16)`` (:mod:`.features`)  the artifact space, ``MultiDiscrete`` (648
                                                        artifacts for the paper's claim schema)
validator  ``{"observation": Box(20)`` (its features),   ``Discrete(2)``: 0 block, 1 approve (an approval
           ``"action_mask": Box(2)}`` ([block, approve])  the action mask forbids is the game's illegal action)
=========  ===========================================  ===============================================

After a NO_TRADE the validator can only block: its mask says so, so a masked module (RLlib's
``ActionMaskingTorchRLModule``) plays the block with probability 1 and learns nothing from a choice the
game ignores. An approval there is sent to the game as it is: the game's convention for an illegal action
(``illegal_actions``, :mod:`.env`) applies, as in text mode.

The same adapter makes the numeric observation mode, ``exchange_audit_v0.env(observation_mode="numeric")``
(:class:`~eq_env.core.numeric.NumericModeEnv`): the proposer's artifacts numbered in one ``Discrete(648)``,
every agent with an action mask (the agent whose phase it is not: only its no-op, 0), and infos of fixed
numeric keys (:data:`INFO_KEYS`).

The features and artifacts are those the SB3 views (:mod:`.views`) train on, so a policy reads the
game the same way whichever library trained it. ``numeric_env(config)`` is the PettingZoo AEC
environment RLlib's ``PettingZooEnv`` wraps: one turn of the proposer, then one of the validator, each
rewarded with its own payoff (``reward_mode="individual"``: independent learners of the two roles).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from eq_env.core.numeric import NumericAdapter, NumericAECEnv
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.features import (
    PROPOSER_FEATURES,
    VALIDATOR_FEATURES,
    artifact_nvec,
    artifact_submission,
    proposer_features,
    validator_features,
)
from eq_env.exchange_audit.spaces import decode_proposer_observation, decode_validator_observation, encode_submission
from eq_env.exchange_audit.spec import ID
from eq_env.exchange_audit.views import FEATURE_BOUND

__all__ = ["ADAPTER", "INFO_KEYS", "numeric_env"]

_SIZES = {"proposer": len(PROPOSER_FEATURES), "validator": len(VALIDATOR_FEATURES)}


def _observation_space(role: str, config: Any) -> spaces.Space[Any]:
    features = spaces.Box(-FEATURE_BOUND, FEATURE_BOUND, shape=(_SIZES[role],), dtype=np.float32)
    if role == "proposer":
        return features
    return spaces.Dict({"action_mask": spaces.Box(0, 1, (2,), np.int8), "observation": features})


def _action_space(role: str, config: Any) -> spaces.Space[Any]:
    if role == "proposer":
        return spaces.MultiDiscrete(list(artifact_nvec(config.claim_schema)))
    return spaces.Discrete(2)


def _observe(role: str, observation: Mapping[str, Any]) -> Any:
    if role == "proposer":
        return proposer_features(decode_proposer_observation(observation)).astype(np.float32)
    features = validator_features(decode_validator_observation(observation)).astype(np.float32)
    return {"action_mask": np.asarray(observation["action_mask"], np.int8), "observation": features}


def _env_action(role: str, action: Any, observation: Mapping[str, Any]) -> Any:
    if role == "proposer":
        view = decode_proposer_observation(observation)
        choices = np.asarray(action, np.int64).reshape(-1)
        return encode_submission(artifact_submission(view, choices), view.public.claim_schema)
    return int(np.asarray(action).reshape(-1)[0])  # (a masked approval goes to the game: its illegal action)


_ACTING_PHASE = {"proposer": 0, "validator": 1}  # the phase in which each role acts

# the numeric mode's infos: these numbers of the game's final info, 0 until the episode (round) ends
INFO_KEYS = ("welfare", "proposer_payoff", "validator_payoff", "approved", "compliant", "audited", "illegal_action")


def _idle(role: str, observation: Mapping[str, Any]) -> bool:
    return int(observation["phase"]) != _ACTING_PHASE[role]


def _info(info: Mapping[str, Any]) -> dict[str, float]:
    audit = info.get("audit")
    values = {
        **info,
        "audited": bool(audit["audited"]) if audit else False,
        "illegal_action": "illegal_action" in info,
    }  # (1: an action its mask forbade ended the episode)
    return {key: float(values.get(key) or 0.0) for key in INFO_KEYS}


ADAPTER = NumericAdapter(
    env=ID,
    observation_space=_observation_space,
    action_space=_action_space,
    observe=_observe,
    env_action=_env_action,
    modules={"proposer": "proposer", "validator": "validator"},
    env_options={"reward_mode": "individual"},
    idle=_idle,
    info=_info,
)


def numeric_env(config: ExchangeAuditConfig | None = None) -> NumericAECEnv:
    """The game under ``config`` (default: the paper's), each agent with numbers only (see the module docstring)."""
    return NumericAECEnv(ADAPTER, config or ExchangeAuditConfig())
