"""The collaborative Einstein puzzle, as the core knows it: registered once, everything else derived.

Importing this module registers :data:`SPEC`: the PettingZoo ids
(``pettingzoo.make("aec" | "parallel", "eq_env/einstein-puzzle-v0")``), the
Gymnasium view of one seat (``gymnasium.make("eq_env/EinsteinPuzzle-v0")``),
``eq-env play --env einstein-puzzle``, sweeps, the policy namespace and the
conformance battery over :data:`CONFORMANCE`.
"""

from __future__ import annotations

from typing import Any

from eq_env.core.spec import EnvSpec, register_env
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.env import ROLES, SEED_STREAMS
from eq_env.einstein_puzzle.records import METRICS, EpisodeRecord, compute_metrics, record_episode

__all__ = ["CONFORMANCE", "ID", "SPEC"]

ID = "eq_env/einstein-puzzle-v0"

# PettingZoo's battery and the core's contract run on each of these (environment keywords)
CONFORMANCE: dict[str, dict[str, Any]] = {
    "paper": {},
    "provide-only": {"comm_mode": "provide_only"},
    "seek-only": {"comm_mode": "seek_only"},
    "none": {"comm_mode": "none"},
    "five-objects": {"n": 5},  # (odd: one player starts with one more)
    "eight-objects": {"preset": "eight"},
    "suite": {"puzzles": "suite", "n": 6},
    "tiny-step-limit": {"max_steps": 3},  # (every episode is truncated)
    "penalties": {"rejection_penalty": 0.5, "illegal_penalty": 0.25, "pass_penalty": 0.1, "success_reward": 5.0},
    # the numeric observation mode (Box features, int8 mask, Discrete actions: eq_env.core.numeric)
    "numeric": {"observation_mode": "numeric"},
    "numeric-five-objects-seek-only": {"observation_mode": "numeric", "n": 5, "comm_mode": "seek_only"},
}

SPEC = register_env(
    EnvSpec(
        id=ID,
        name="einstein-puzzle",
        entry="eq_env.einstein_puzzle_v0",
        config=EinsteinPuzzleConfig,
        roles=SEED_STREAMS,
        agents=lambda config: ROLES,
        record=record_episode,
        record_from_dict=EpisodeRecord.from_dict,
        metrics=METRICS,
        compute_metrics=compute_metrics,
        plot_metrics=("success_rate", "steps", "partial_success", "rule_inconsistent"),
        default_policies={"player_0": "planner", "player_1": "planner"},
        conformance=CONFORMANCE,
        numeric="eq_env.einstein_puzzle.numeric",
        views={"eq_env/EinsteinPuzzle-v0": "eq_env.einstein_puzzle.views:EinsteinPuzzleEnv"},
    )
)
