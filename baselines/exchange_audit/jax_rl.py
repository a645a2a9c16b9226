"""Jitted PPO for the exchange–audit game on its JAX engine, and the trained roles as policies that act in bulk.

:func:`train` learns one role (or both at once) with :func:`eq_env.baselines.jax_ppo.make_train` on
:class:`~eq_env.exchange_audit.jax_engine.ExchangeAuditJax`: the proposer against the paper's rule validator
(:func:`~eq_env.exchange_audit.jax_engine.rule_validator`, the default ``partner``), or both roles as
independent learners (``role="both"``). Rewards are each role's own payoff (``reward_mode="individual"``), as
the SB3 baselines train. It writes ``params.npz`` and ``policy.json`` into ``out`` (the configuration, the
hyperparameters, the seed, the per-update returns, the seconds spent compiling and training) and returns them.

The result plays as ``jax:path=DIR`` (registered for both roles; :class:`ExchangeAuditJaxPolicy`), which also
acts in bulk (``act_batch``), so the numpy batch engine and the best-response search score it::

    from eq_env.exchange_audit.equilibrium import proposer_payoff
    config = ExchangeAuditConfig(q=0.3, V=2.0, L=1.0)
    run = train("proposer", "runs/jax-proposer", config=config)
    proposer_payoff(config, f"jax:path={run.path}", "rule", episodes=40_000, seed=3)  # greedy

Needs the ``jax`` extra to train (JAX is imported by :func:`train` only); playing needs numpy alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.baselines.jax_policy import JaxPPOPolicy, save
from eq_env.exchange_audit.batch import ProposerBatch, SubmissionBatch, ValidatorBatch
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.features import (
    all_artifacts,
    artifact_submissions,
    proposer_features_batch,
    validator_features_batch,
)
from eq_env.exchange_audit.spec import ID

__all__ = ["ROLES", "ExchangeAuditJaxPolicy", "JaxTraining", "default_ppo", "train"]

ROLES = ("proposer", "validator", "both")
_AGENT = {"proposer": "proposer_0", "validator": "validator_0"}
_ARTIFACTS = all_artifacts()


def default_ppo() -> Any:
    """The PPO settings :func:`train` uses unless given others (a ``PPOConfig``)."""
    from eq_env.baselines.jax_ppo import PPOConfig

    # 30 k steps in updates of 128 environments x 8 steps, 4 epochs of 4 minibatches: the proposer reaches 99.7%
    # of its best response against the rule validator (V = 2, L = 1, q = 0.3; benchmarks/jax_engines.py --ppo)
    return PPOConfig(total_timesteps=30_000, num_envs=128, num_steps=8, update_epochs=4, num_minibatches=4, lr=3e-3)


@dataclass(frozen=True)
class JaxTraining:
    """What :func:`train` did: where it wrote, the seconds spent tracing and compiling and training, the
    returns per update of each learner."""

    path: Path
    compile_seconds: float
    train_seconds: float
    returns: dict[str, list[float | None]]


def train(
    role: str,
    out: str | Path,
    *,
    config: ExchangeAuditConfig | None = None,
    ppo: Any = None,
    seed: int = 0,
    partner: str = "rule",
) -> JaxTraining:
    """Train ``role`` (``"proposer"``, ``"validator"`` or ``"both"``) with jitted PPO and write it into ``out``.

    ``partner``: the other role's JAX policy when one role learns; the rule validator (``"rule"``) is the only
    scripted policy the JAX engine has, so the validator learns only with ``role="both"``."""
    import jax

    from eq_env.baselines.jax_ppo import config_dict, make_train, run_training
    from eq_env.exchange_audit import jax_engine

    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    if role == "validator":
        raise ValueError(
            "the JAX engine has no scripted proposer to train a validator against: train role='both' "
            "(independent learners), or the validator with SB3 (eq-env train --role validator)"
        )
    if partner != "rule":
        raise ValueError(f"partner must be 'rule' (the JAX engine's rule validator), got {partner!r}")
    config = ExchangeAuditConfig() if config is None else config
    ppo = default_ppo() if ppo is None else ppo
    env = jax_engine.ExchangeAuditJax(config, reward_mode="individual")
    learners = list(_AGENT.values()) if role == "both" else [_AGENT[role]]
    partners = {} if role == "both" else {"validator_0": _rule_partner(env.params)}
    done = run_training(make_train(env, ppo, learners, partners), seed)
    meta = {
        "env": ID,
        "config": config.to_dict(),
        "agents": {a: a for a in learners},
        "partners": {a: partner for a in partners},
        "reward_mode": "individual",
        "hyper": config_dict(ppo),
        "seed": seed,
        "jax": jax.__version__,
        "compile_seconds": round(done.compile_seconds, 3),
        "train_seconds": round(done.train_seconds, 3),
        "returns": done.returns,
    }
    path = save(out, done.params, meta)
    return JaxTraining(path, done.compile_seconds, done.train_seconds, done.returns)


def _rule_partner(params: Any) -> Any:
    from eq_env.exchange_audit.jax_engine import rule_validator

    def partner(key: Any, state: Any, obs: Any, avail: Any) -> Any:
        return rule_validator(state, params)

    return partner


class ExchangeAuditJaxPolicy(JaxPPOPolicy):
    """A role of a jitted PPO training of the exchange–audit game; acts one observation at a time and in bulk."""

    def act_batch(self, views: Any) -> Any:
        if self.role == "proposer":
            assert isinstance(views, ProposerBatch)
            if views.config.claim_schema != "paper":
                raise ValueError(f"{self!r} was trained on the paper's claim schema, not {views.config.claim_schema!r}")
            features = proposer_features_batch(views)
            index = self.choose(features, np.ones((len(features), len(_ARTIFACTS)), dtype=bool))
            out: SubmissionBatch = artifact_submissions(views, _ARTIFACTS[index])
            return out
        assert isinstance(views, ValidatorBatch)
        features = validator_features_batch(views)
        mask = np.stack([np.ones(len(features), dtype=bool), views.submissions.request], axis=1)
        return self.choose(features, mask).astype(bool)
