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

* **both roles learning** (``both``), at V = 1 and at V = 2, L = 1: alternating training
  (:func:`eq_env.baselines.exchange_audit.rl.selfplay`, fictitious play: three rounds, each the proposer
  trained against every validator so far, then the validator against every proposer so far, the first
  proposer facing the rule validator); the final pair is scored. The headline metric is the welfare; the
  reference is the paper's mechanism, the honest proposer with the rule validator. Its curve is the pair's
  greedy welfare on the held-out seeds after each training.

* **both roles learning with RLlib** (``both-rllib``, V = 2, L = 1): RLlib PPO training a module per role at
  once (independent learners, :func:`eq_env.studies.baselines.rllib_run`; needs the ``rllib`` extra), against
  the same reference.

* **both roles learning with TorchRL** (``both-torchrl``, V = 2, L = 1): TorchRL's MAPPO recipe training an
  actor per role at once (each role a TorchRL group of one agent, so its critic is its own: independent
  PPO) on the game's numeric observation mode (:func:`eq_env.studies.baselines.torchrl_run`; needs the
  ``compat`` extra), against the same reference. The numeric mode pays the game's default reward, the
  welfare, to both roles (the RLlib and SB3 rows pay each role its own payoff): two separate learners of
  one shared objective.

* **the repeated game** (``repeated``): a PPO proposer with the history in its observation (choosing a
  stage strategy each round, :class:`~eq_env.exchange_audit.repeated.views.RepeatedProposerEnv`) against the
  rule validator in one cell of ``eq-env repeated``'s check (decaying audits, q from 1 down to q_min = 0.1 by
  a factor 0.8 after each clean audit; a continuation δ = 0.9; V = 2, L = 1); the reference is the
  dynamic programme's best response (:class:`~eq_env.exchange_audit.repeated.dp.DPProposer`) played on the
  same held-out seeds. The metric is the proposer's payoff per round.

The headline metric is the trained role's payoff (the welfare when both learn); the table shows the
approval and bad-approval rates and welfare beside it. The one-shot best responses are measured on their own
100,000 episodes (10,000 in the quick preset) of seed 0, the trained policies on the held-out evaluation
seeds: both estimate the same expected payoff.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.studies.baselines import (
    RLLIB_UNIT,
    TORCHRL_UNIT,
    Baseline,
    Bound,
    Budget,
    means,
    rllib_missing,
    rllib_run,
    torchrl_fingerprint,
    torchrl_missing,
    torchrl_run,
)

__all__ = ["BASELINES"]

SETTINGS: dict[str, tuple[str, str, dict[str, float]]] = {  # name -> (role, opponent, config overrides)
    "proposer/V1": ("proposer", "rule", {}),
    "proposer/V2-L1": ("proposer", "rule", {"V": 2.0, "L": 1.0}),
    "validator/V2-L1": ("validator", "strategic", {"V": 2.0, "L": 1.0}),
}
SHOWN = ("approval_rate", "bad_approval_rate", "welfare")
BOTH = {"both/V1": {}, "both/V2-L1": {"V": 2.0, "L": 1.0}}  # name -> config overrides
ROUNDS = 3  # of the alternating training (each: a proposer, then a validator)


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


def _sampled(spec: str) -> Any:
    """A final pair's policy as it samples (a spec that is not a trained model plays as it is)."""
    from eq_env.baselines.exchange_audit.rl import SB3Policy

    return SB3Policy(spec.removeprefix("sb3:path="), deterministic=False) if spec.startswith("sb3:path=") else spec


def train_both(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, Any]:
    """Both roles trained alternately (``budget.timesteps`` a training), the final pair scored greedy and
    sampled."""
    from eq_env.baselines.exchange_audit.rl import EVAL_SEEDS, selfplay
    from eq_env.exchange_audit.runner import evaluate

    if tuple(eval_seeds) != EVAL_SEEDS:  # (selfplay measures each pair on its own held-out seeds: the same)
        raise ValueError(f"the both-learning rows evaluate on {EVAL_SEEDS}, got {tuple(eval_seeds)}")
    config = ExchangeAuditConfig().replace(**BOTH[name.split("/", 1)[1]])
    history = selfplay(
        out,
        rounds=ROUNDS,
        timesteps=budget.timesteps,
        seed=seed,
        config=config,
        eval_episodes=budget.eval_episodes,
        progress=False,
    )
    last = history[-1]
    pair = (last["proposer"], last["validator"])
    greedy = evaluate(config, *pair, episodes=budget.eval_episodes, seeds=list(eval_seeds))
    sampled = evaluate(
        config,
        _sampled(last["proposer"]),
        _sampled(last["validator"]),
        episodes=budget.eval_episodes,
        seeds=list(eval_seeds),
    )
    trained = sum(1 for row in history if "skipped" not in row["trained"])
    return {
        "greedy": means(greedy.summary),
        "sampled": means(sampled.summary),
        "curve": [((k + 1) * budget.timesteps, row["welfare"]) for k, row in enumerate(history)],
        "steps_run": trained * budget.timesteps,
    }


def _both_config(name: str) -> ExchangeAuditConfig:
    return ExchangeAuditConfig().replace(**BOTH["both/" + name.rsplit("/", 1)[1]])  # (both/… and both-rllib/…)


def train_rllib(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, Any]:
    """Both roles trained at once with RLlib PPO, a module each (independent learners), scored greedy and
    sampled."""
    from eq_env.exchange_audit.spec import ID

    return rllib_run(ID, _both_config(name), out, seed, budget, eval_seeds)


def mechanism(name: str, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, float]:
    """The paper's mechanism on the same evaluation: the honest proposer and the rule validator."""
    from eq_env.exchange_audit.runner import evaluate

    config = _both_config(name)
    return means(evaluate(config, "honest", "rule", episodes=budget.eval_episodes, seeds=list(eval_seeds)).summary)


def _both(setting: str) -> Baseline:
    name = f"exchange-audit/{setting}"
    config = ExchangeAuditConfig().replace(**BOTH[setting])
    return Baseline(  # (not in the quick preset: six trainings are a minute even at its budget)
        name=name,
        game="exchange-audit",
        setting=f"exchange–audit both roles learning, V = {config.V:g}, L = {config.L:g}",
        learner=f"SB3 PPO, fictitious play ({ROUNDS} rounds)",
        metric="welfare",
        reference_label="honest + rule",
        train=Bound(train_both, name),
        reference=Bound(mechanism, name),
        budgets={"full": Budget(30_000, 2000)},
        shown=("approval_rate", "bad_approval_rate", "proposer_payoff", "validator_payoff"),
        fingerprint=json.dumps(["both", ROUNDS, config.to_dict()], sort_keys=True),
        unit=f"steps a training × {2 * ROUNDS} trainings",
        curve="the pair's held-out welfare after each training (greedy)",
    )


def _both_rllib(setting: str) -> Baseline:
    name = f"exchange-audit/both-rllib/{setting}"
    config = _both_config(name)
    return Baseline(
        name=name,
        game="exchange-audit",
        setting=f"exchange–audit both roles learning, V = {config.V:g}, L = {config.L:g}",
        learner="RLlib PPO, a module per role (independent)",
        metric="welfare",
        reference_label="honest + rule",
        train=Bound(train_rllib, name),
        reference=Bound(mechanism, name),
        budgets={"full": Budget(20, 2000), "quick": Budget(2, 100)},
        shown=("approval_rate", "bad_approval_rate", "proposer_payoff", "validator_payoff"),
        fingerprint=json.dumps(["both-rllib", config.to_dict()], sort_keys=True),
        unit=RLLIB_UNIT,
        curve="training episodes' return, both roles summed",
        missing=rllib_missing,
    )


def train_torchrl(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, Any]:
    """Both roles trained at once with TorchRL MAPPO, an actor each (TorchRL groups them apart), scored greedy
    and sampled."""
    from eq_env.exchange_audit.spec import ID

    return torchrl_run(ID, _both_config(name), out, seed, budget, eval_seeds)


def _both_torchrl(setting: str) -> Baseline:
    name = f"exchange-audit/both-torchrl/{setting}"
    config = _both_config(name)
    return Baseline(
        name=name,
        game="exchange-audit",
        setting=f"exchange–audit both roles learning the welfare, V = {config.V:g}, L = {config.L:g}",
        learner="TorchRL PPO, an actor and a critic per role",
        metric="welfare",
        reference_label="honest + rule",
        train=Bound(train_torchrl, name),
        reference=Bound(mechanism, name),
        budgets={"full": Budget(40_000, 2000), "quick": Budget(2000, 100)},
        shown=("approval_rate", "bad_approval_rate", "proposer_payoff", "validator_payoff"),
        fingerprint=torchrl_fingerprint("both-torchrl", config),
        unit=TORCHRL_UNIT,
        curve="training episodes' return, both roles summed",
        missing=torchrl_missing,
    )


REPEATED = "exchange-audit/repeated/decay-0.1"


def _repeated_config() -> Any:
    from eq_env.exchange_audit.repeated.rules import RepeatedConfig
    from eq_env.studies.exchange_audit.repeated.experiment import Horizon, horizon_cap, policy_config

    base = RepeatedConfig.from_preset("paper_scripted", V=2.0, L=1.0)
    horizon = Horizon(horizon_cap(0.9), 0.9)
    return policy_config(base, "decay", 0.1, horizon, q0=1.0, gamma=0.8, q_punish=1.0, punish_rounds=None)


def _play_repeated(proposer: Any, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, float]:
    from eq_env.core.runner import evaluate
    from eq_env.exchange_audit.repeated.spec import ID

    policies = {"proposer": proposer, "validator": "rule"}
    ev = evaluate(ID, _repeated_config(), policies, episodes=budget.eval_episodes, seeds=list(eval_seeds))
    return means(ev.summary)


def train_repeated(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, Any]:
    """The history-aware PPO proposer trained on the cell, scored greedy and sampled."""
    from eq_env.baselines.sb3 import learn
    from eq_env.exchange_audit.repeated.views import RepeatedProposerEnv, ViewPolicy
    from eq_env.studies.exchange_audit.repeated.experiment import PPO_ENVS, PPO_HYPERPARAMETERS

    config = _repeated_config()
    model, curve, _ = learn(
        lambda: RepeatedProposerEnv(config=config, action_encoding="strategy"),
        algo="ppo",
        timesteps=budget.timesteps,
        seed=seed,
        hyperparameters=PPO_HYPERPARAMETERS,
        n_envs=PPO_ENVS,
        progress=False,
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.zip")
    return {
        "greedy": _play_repeated(ViewPolicy(model, config), budget, eval_seeds),
        "sampled": _play_repeated(ViewPolicy(model, config, deterministic=False), budget, eval_seeds),
        "curve": curve,
        "steps_run": int(model.num_timesteps),
    }


def dp_best_response(name: str, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, float]:
    """The dynamic programme's best response to the rule validator, played on the same evaluation."""
    from eq_env.exchange_audit.repeated.dp import DPProposer, repeated_best_response

    episodes = 20_000 if budget.eval_episodes >= 1000 else 2_000  # (the stage estimates' episodes)
    best = repeated_best_response(_repeated_config(), episodes=episodes, seed=0)
    return _play_repeated(DPProposer(best), budget, eval_seeds)


def _repeated() -> Baseline:
    return Baseline(
        name=REPEATED,
        game="exchange-audit",
        setting="exchange–audit repeated, proposer with history vs rule, decay to q_min = 0.1, δ = 0.9",
        learner="SB3 PPO",
        metric="proposer_payoff",
        reference_label="DP best response",
        train=Bound(train_repeated, REPEATED),
        reference=Bound(dp_best_response, REPEATED),
        budgets={"full": Budget(30_000, 300)},  # (an episode is 10 rounds on average, up to 88)
        shown=("welfare", "noncompliant_misreport_rate", "mean_q"),
        fingerprint=json.dumps(["repeated", _repeated_config().to_dict()], sort_keys=True),
    )


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


BASELINES = (
    *(_baseline(setting) for setting in SETTINGS),
    *(_both(setting) for setting in BOTH),
    _both_rllib("V2-L1"),
    _both_torchrl("V2-L1"),
    _repeated(),
)
