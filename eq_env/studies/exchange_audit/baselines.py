"""The exchange–audit game's rows of ``eq-env baselines`` (:mod:`eq_env.studies.baselines`).

One-shot game, SB3 PPO on a role's single-agent view (:func:`eq_env.baselines.exchange_audit.rl.train`):

* **the proposer against the rule validator**, at the paper's V = 1 (L = 2) — where NO_TRADE's sure 1
  is the best response in most cells, so a learner that stops trading is right — and at V = 2, L = 1,
  where trading pays; the reference is the proposer's best response to the rule validator
  (:func:`eq_env.exchange_audit.equilibrium.proposer_best_response`);
* **the validator against the strategic proposer** (it lies with probability 0.5 when it believes its
  trade non-compliant) at V = 2, L = 1; the reference is the validator's best response to it among the
  decisions that depend only on the rule engine's cells
  (:func:`~eq_env.exchange_audit.equilibrium.validator_best_response`) — a lower bound on the best
  response: PPO, which sees the whole artifact, beats it (a ratio above 1).

The headline metric is the trained role's payoff; the table shows the approval and bad-approval rates
and welfare beside it. The best responses are measured on their own 100,000 episodes (10,000 in the quick
preset) of seed 0, the trained policies on the held-out evaluation seeds: both estimate the same expected
payoff.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.studies.baselines import Baseline, Bound, Budget, means

__all__ = ["BASELINES"]

SETTINGS: dict[str, tuple[str, str, dict[str, float]]] = {  # name -> (role, opponent, config overrides)
    "proposer/V1": ("proposer", "rule", {}),
    "proposer/V2-L1": ("proposer", "rule", {"V": 2.0, "L": 1.0}),
    "validator/V2-L1": ("validator", "strategic", {"V": 2.0, "L": 1.0}),
}
SHOWN = ("approval_rate", "bad_approval_rate", "welfare")


def _setting(name: str) -> tuple[str, str, ExchangeAuditConfig]:
    role, opponent, overrides = SETTINGS[name.split("/", 1)[1]]
    return role, opponent, ExchangeAuditConfig().replace(**overrides)


def train_role(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, Any]:
    """The role of baseline ``name`` trained against its opponent, scored greedy and sampled."""
    from eq_env.baselines.exchange_audit.rl import SB3Policy, train
    from eq_env.exchange_audit.runner import evaluate

    role, opponent, config = _setting(name)
    result = train(
        role,  # type: ignore[arg-type]
        out,
        timesteps=budget.timesteps,
        seed=seed,
        config=config,
        opponent=opponent,
        eval_seeds=eval_seeds,
        eval_episodes=budget.eval_episodes,
        progress=False,
    )
    sampled_policy = SB3Policy(out, deterministic=False)
    pair = (sampled_policy, opponent) if role == "proposer" else (opponent, sampled_policy)
    sampled = evaluate(config, *pair, episodes=budget.eval_episodes, seeds=list(eval_seeds)).summary
    return {
        "greedy": means(result.evaluation),
        "sampled": means(sampled),
        "curve": result.curve,
        "steps_run": result.steps_run,
    }


def best_response(name: str, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, float]:
    """The role's best response to the opponent of baseline ``name``: its payoff (the other metrics are
    not those of a played policy, so they are left out)."""
    from eq_env.exchange_audit.equilibrium import proposer_best_response, validator_best_response

    role, opponent, config = _setting(name)
    episodes = 100_000 if budget.eval_episodes >= 1000 else 10_000
    if role == "proposer":
        return {"proposer_payoff": proposer_best_response(config, opponent, episodes=episodes, seed=0).best_payoff}
    return {"validator_payoff": validator_best_response(config, opponent, episodes=episodes, seed=0).best_payoff}


def _baseline(setting: str) -> Baseline:
    name = f"exchange-audit/{setting}"
    role, opponent, config = _setting(name)
    quick = {"quick": Budget(1024, 100)} if setting == "proposer/V2-L1" else {}
    return Baseline(
        name=name,
        game="exchange-audit",
        setting=f"exchange–audit {role} vs {opponent}, V = {config.V:g}, L = {config.L:g}",
        learner="SB3 PPO",
        metric=f"{role}_payoff",
        # (the validator's is the best decision per cell of the rule engine's features: a learner that
        # sees more can beat it)
        reference_label="best response" if role == "proposer" else "best response on the rule's cells",
        train=Bound(train_role, name),
        reference=Bound(best_response, name),
        budgets={"full": Budget(50_000, 2000), **quick},
        shown=SHOWN,
        fingerprint=json.dumps([role, opponent, config.to_dict()], sort_keys=True),
    )


BASELINES = tuple(_baseline(setting) for setting in SETTINGS)
