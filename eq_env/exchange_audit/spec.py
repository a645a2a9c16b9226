"""The exchange–audit game, as the core knows it: registered once, everything else derived.

Importing this module registers :data:`SPEC` (the default game of the package:
its run keys predate the others, so ``key_env`` is off and results written
before still resume).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eq_env.core.spec import EnvSpec, register_env
from eq_env.exchange_audit import batch
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.env import ROLES, SEED_STREAMS
from eq_env.exchange_audit.records import METRICS, EpisodeRecord, compute_metrics, record_episode

__all__ = ["ID", "SPEC"]

ID = "eq_env/exchange-audit-v0"


class _Batch:
    """The vectorised engine (:mod:`eq_env.exchange_audit.batch`) as the core calls it."""

    @staticmethod
    def is_batchable(policy: Any) -> bool:
        return batch.is_batchable(policy)

    @staticmethod
    def simulate(config: Any, policies: Mapping[str, Any], *, episodes: int, seed: int) -> Mapping[str, Any]:
        return batch.simulate(config, policies["proposer"], policies["validator"], episodes=episodes, seed=seed)


# PettingZoo's battery runs each of these (environment keywords)
CONFORMANCE: dict[str, dict[str, Any]] = {
    "paper": {},
    "never-audited": {"q": 0.0},
    "always-audited-spot-check": {"q": 1.0, "B": 1},
    "budget-zero": {"q": 1.0, "B": 0},
    "all-ambiguous-no-text": {"ambiguous_rate": 1.0, "max_words": 0},
    "temptation-individual": {"V": 2.0, "L": 1.0, "reward_mode": "individual"},
    "noisy-hidden-compliance": {"noise_sd": 1.0, "reveal_compliance": False, "ambiguous_rate": 0.0},
    "paper-main-script": {"preset": "paper_main_script", "B": None},
    "noisy-audits": {
        "q": 0.8,
        "B": 2,
        **{
            f"{kind}_{claim}": rate
            for kind, rate in (("miss", 0.3), ("false_fail", 0.1))
            for claim in ("intent", "risk_within_limit", "net_delta_bounded", "confidence")
        },
    },
    "noisy-delayed-audits": {"q": 0.6, "miss_risk_within_limit": 0.5, "false_fail_intent": 0.2, "audit_delayed": True},
    "text-only": {"q": 0.5, "regime": "text_only"},
    "action-only-always-audited": {"q": 1.0, "B": 2, "regime": "action_only"},
    "rich-claim-schema": {"claim_schema": "rich", "q": 0.7},
    "rich-claim-schema-spot-check": {"claim_schema": "rich", "q": 1.0, "B": 2, "miss_intent": 0.2},
    # the numeric observation mode (Box features, int8 mask, Discrete actions: eq_env.core.numeric)
    "numeric": {"observation_mode": "numeric"},
    "numeric-rich-claim-schema-individual": {
        "observation_mode": "numeric",
        "claim_schema": "rich",
        "q": 0.7,
        "reward_mode": "individual",
    },
}

SPEC = register_env(
    EnvSpec(
        id=ID,
        name="exchange-audit",
        entry="eq_env.exchange_audit_v0",
        config=ExchangeAuditConfig,
        roles=SEED_STREAMS,
        agents=lambda config: ROLES,
        record=record_episode,
        record_from_dict=EpisodeRecord.from_dict,
        metrics=METRICS,
        compute_metrics=compute_metrics,
        plot_metrics=("ambiguous_welfare", "ambiguous_approval_rate", "bad_approval_rate", "welfare"),
        default_policies={"proposer": "honest", "validator": "rule"},
        conformance=CONFORMANCE,
        numeric="eq_env.exchange_audit.numeric",
        views={
            "eq_env/ExchangeAuditProposer-v0": "eq_env.exchange_audit.views:ExchangeAuditProposerEnv",
            "eq_env/ExchangeAuditValidator-v0": "eq_env.exchange_audit.views:ExchangeAuditValidatorEnv",
        },
        batch=_Batch(),
        key_env=False,
    )
)
