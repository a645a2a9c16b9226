"""Belief coordination, as the core knows it: registered once, everything else derived.

Importing this module registers :data:`SPEC`: the PettingZoo ids
(``pettingzoo.make("aec" | "parallel", "eq_env/belief-coordination-v0")``),
the Gymnasium view of one executor (``gymnasium.make("eq_env/BeliefCoordinationExecutor-v0")``),
``eq-env play --env belief-coordination``, sweeps, the policy namespace and the
conformance battery over :data:`CONFORMANCE`.
"""

from __future__ import annotations

from typing import Any

from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.env import ROLES_STREAMS, role_agents
from eq_env.belief_coordination.records import METRICS, EpisodeRecord, compute_metrics, record_episode
from eq_env.core.spec import EnvSpec, register_env

__all__ = ["CONFORMANCE", "ID", "SPEC"]

ID = "eq_env/belief-coordination-v0"

# PettingZoo's battery and the core's contract run on each of these (environment keywords)
CONFORMANCE: dict[str, dict[str, Any]] = {
    "paper": {},
    "grid": {"action_space": "grid"},
    "one-executor": {"n_executors": 1},
    "nine-executors": {"n_executors": 9, "action_space": "grid"},
    "debate": {"rounds": 3},
    "null-instrument": {"sensitive": False},
    "hard": {"difficulty": 1.0, "temperature_min": 0.5, "penalty_max": 1.5},
    # the numeric observation mode (grid configurations: Box features, int8 mask, Discrete actions)
    "numeric": {"observation_mode": "numeric", "action_space": "grid"},
    "numeric-debate-one-executor": {
        "observation_mode": "numeric",
        "action_space": "grid",
        "rounds": 3,
        "n_executors": 1,
    },
}

SPEC = register_env(
    EnvSpec(
        id=ID,
        name="belief-coordination",
        entry="eq_env.belief_coordination_v0",
        config=BeliefCoordinationConfig,
        roles=ROLES_STREAMS,
        agents=role_agents,
        record=record_episode,
        record_from_dict=EpisodeRecord.from_dict,
        metrics=METRICS,
        compute_metrics=compute_metrics,
        plot_metrics=("accuracy", "reward", "tokens", "alignment"),
        default_policies={"executor": "fixed", "coordinator": "majority"},
        conformance=CONFORMANCE,
        views={
            "eq_env/BeliefCoordinationExecutor-v0": "eq_env.belief_coordination.views:BeliefCoordinationExecutorEnv"
        },
        numeric="eq_env.belief_coordination.numeric",
    )
)
