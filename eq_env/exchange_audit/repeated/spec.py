"""The repeated exchange–audit game, as the core knows it: registered once, everything else derived.

Importing this module registers :data:`SPEC`: the PettingZoo ids
(``pettingzoo.make("aec" | "parallel", "eq_env/exchange-audit-repeated-v0")``), ``eq-env play --env
exchange-audit-repeated``, sweeps, its policy namespace (:mod:`eq_env.baselines.exchange_audit.repeated`), the
proposer's Gymnasium view and the conformance battery over :data:`CONFORMANCE`.
"""

from __future__ import annotations

from typing import Any

from eq_env.core.spec import EnvSpec, register_env
from eq_env.exchange_audit.env import ROLES, SEED_STREAMS
from eq_env.exchange_audit.repeated.records import METRICS, RepeatedEpisodeRecord, compute_metrics, record_episode
from eq_env.exchange_audit.repeated.rules import RepeatedConfig

__all__ = ["CONFORMANCE", "ID", "SPEC"]

ID = "eq_env/exchange-audit-repeated-v0"

# PettingZoo's battery and the core's contract run on each of these (environment keywords)
CONFORMANCE: dict[str, dict[str, Any]] = {
    "paper-ten-rounds": {},
    "one-round": {"rounds": 1},
    "geometric-decay": {
        "rounds": 12,
        "continuation": 0.8,
        "audit_policy": "decay",
        "q": 0.9,
        "gamma": 0.5,
        "q_min": 0.05,
    },
    "decay-reset-individual": {
        "preset": "paper_scripted",
        "rounds": 6,
        "audit_policy": "decay",
        "q": 1.0,
        "gamma": 0.3,
        "reset_on_fail": True,
        "V": 2.0,
        "L": 1.0,
        "reward_mode": "individual",
    },
    "grim-trigger": {"rounds": 8, "audit_policy": "trigger", "q": 0.4, "B": 2},
    "trigger-two-rounds-geometric": {
        "rounds": 30,
        "continuation": 0.9,
        "audit_policy": "trigger",
        "q": 0.2,
        "q_punish": 0.9,
        "punish_rounds": 2,
    },
    "noisy-audits": {
        "rounds": 4,
        "audit_policy": "trigger",
        "q": 0.7,
        "miss_intent": 0.3,
        "false_fail_risk_within_limit": 0.2,
    },
    # the numeric observation mode (Box features, int8 mask, Discrete actions: eq_env.core.numeric)
    "numeric": {"observation_mode": "numeric"},
    "numeric-trigger-geometric": {
        "observation_mode": "numeric",
        "rounds": 6,
        "continuation": 0.7,
        "audit_policy": "trigger",
        "q": 0.4,
    },
}

SPEC = register_env(
    EnvSpec(
        id=ID,
        name="exchange-audit-repeated",
        entry="eq_env.exchange_audit_repeated_v0",
        config=RepeatedConfig,
        roles=SEED_STREAMS,
        agents=lambda config: ROLES,
        record=record_episode,
        record_from_dict=RepeatedEpisodeRecord.from_dict,
        metrics=METRICS,
        compute_metrics=compute_metrics,
        plot_metrics=("welfare", "bad_approval_rate", "mean_q", "misreport_rate"),
        default_policies={"proposer": "honest", "validator": "rule"},
        conformance=CONFORMANCE,
        numeric="eq_env.exchange_audit.repeated.numeric",
        views={
            "eq_env/ExchangeAuditRepeatedProposer-v0": "eq_env.exchange_audit.repeated.views:RepeatedProposerEnv",
        },
    )
)
