"""RL baselines: train proposers and validators with Stable-Baselines3, and use them as policies.

:func:`train` trains one role on its single-agent view
(:mod:`eq_env.exchange_audit.views`) against a fixed policy for the other
role, evaluates it on held-out seeds, and saves into a directory:

* ``model.zip`` (the SB3 model) and ``policy.json`` (role, algorithm, action
  encoding, the game configuration, the opponent, reward mode, seed);
* ``learning_curve.png`` and ``learning_curve.csv`` (mean episode reward per rollout);
* ``eval.json`` (the runner's metrics on held-out seeds, the trained policy playing greedily).

A saved model is a policy like any other: :meth:`SB3Policy.load`, or the spec
``sb3:path=DIR`` anywhere a policy spec is accepted (``eq-env play``,
``reproduce``, ``sweep``). It acts in bulk too (``act_batch``: one batched
forward pass), so the batch engine and the best-response search can use it.

:func:`selfplay` alternates: the proposer, then the validator, for K rounds,
each training against every policy the other role has played so far, one
drawn per episode (:class:`MixturePolicy`: fictitious play), or against its
latest policy only (``opponents="latest"``: best-response dynamics, which
cycle: a validator trained on one proposer's lie is open to the next).

Training is single-threaded (``torch.set_num_threads(1)``): with 2 cores,
PPO's small networks run far slower when torch spreads them over threads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.baselines.sb3 import ALGOS, learn, sb3_class, steps_run, write_curve
from eq_env.core.policy import Role
from eq_env.core.report import from_json_number, json_number
from eq_env.exchange_audit.batch import ProposerBatch, SubmissionBatch, ValidatorBatch
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.features import (
    all_artifacts,
    artifact_nvec,
    artifact_submission,
    artifact_submissions,
    proposer_features,
    proposer_features_batch,
    validator_features,
    validator_features_batch,
)
from eq_env.exchange_audit.spaces import decode_proposer_observation, decode_validator_observation, encode_submission
from eq_env.exchange_audit.views import NothingToLearnError

__all__ = ["ALGOS", "MixturePolicy", "NothingToLearnError", "SB3Policy", "TrainResult", "make_vec", "selfplay", "train"]


EVAL_SEEDS = (1000, 1001, 1002)  # held out: training seeds start at 0
FEATURES_VERSION = 1  # bump when the feature vectors change: old models then refuse to load
_ARTIFACTS = all_artifacts()


_sb3_class = sb3_class


class SB3Policy:
    """A trained Stable-Baselines3 model playing its role in the game.

    Args:
        path: the directory :func:`train` wrote (``model.zip`` and ``policy.json``).
        deterministic: act on the most likely action (default) or sample.
    """

    def __init__(self, path: str | Path, deterministic: bool = True) -> None:
        self.path = Path(path)
        meta_path = self.path / "policy.json"
        if not meta_path.exists():
            raise ValueError(f"{self.path} is not a trained policy: no policy.json (train one with eq-env train)")
        self.meta = json.loads(meta_path.read_text())
        if self.meta.get("features_version") != FEATURES_VERSION:
            raise ValueError(
                f"{self.path} was trained on feature version {self.meta.get('features_version')}, this package "
                f"computes version {FEATURES_VERSION}; train it again"
            )
        self.role: Role = self.meta["role"]
        self.deterministic = bool(deterministic)
        self.encoding = self.meta.get("action_encoding", "multidiscrete")
        import torch

        torch.set_num_threads(1)
        self.model = _sb3_class(self.meta["algo"]).load(self.path / "model.zip", device="cpu")

    @classmethod
    def load(cls, path: str | Path, deterministic: bool = True) -> SB3Policy:
        return cls(path, deterministic)

    def __repr__(self) -> str:
        how = "greedy" if self.deterministic else "sampled"  # (eq-env play prints this beside the scores)
        return f"SB3Policy({str(self.path)!r}, role={self.role!r}, algo={self.meta['algo']!r}, {how})"

    def reset(self, seed: int | None = None) -> None:
        if not self.deterministic and seed is not None:
            # (SB3 seeds numpy's legacy generator, which takes seeds below 2**32; the runner's are 64-bit)
            self.model.set_random_seed(seed % 2**32)

    def _predict(self, features: np.ndarray) -> np.ndarray:
        action, _ = self.model.predict(features, deterministic=self.deterministic)
        return np.asarray(action)

    def _choices(self, actions: np.ndarray, claim_schema: str = "paper") -> np.ndarray:
        """The artifact choices of the model's actions (a claim schema's space has a component per claim it adds)."""
        if self.encoding == "discrete":
            artifacts = _ARTIFACTS if claim_schema == "paper" else all_artifacts(claim_schema)
            return artifacts[actions.reshape(-1).astype(np.int64)]  # type: ignore[no-any-return]
        return actions.reshape(-1, len(artifact_nvec(claim_schema))).astype(np.int64)

    def act(self, observation: Mapping[str, Any]) -> Any:
        if self.role == "proposer":
            view = decode_proposer_observation(observation)
            schema = view.public.claim_schema
            choices = self._choices(self._predict(proposer_features(view)[None, :]), schema)[0]
            return encode_submission(artifact_submission(view, choices), schema)
        decision = int(self._predict(validator_features(decode_validator_observation(observation))[None, :])[0])
        return decision if observation["action_mask"][decision] else 0

    def act_batch(self, views: Any) -> Any:
        if self.role == "proposer":
            assert isinstance(views, ProposerBatch)
            out: SubmissionBatch = artifact_submissions(
                views, self._choices(self._predict(proposer_features_batch(views)), views.config.claim_schema)
            )
            return out
        assert isinstance(views, ValidatorBatch)
        return self._predict(validator_features_batch(views)).reshape(-1).astype(bool)


class MixturePolicy:
    """Plays, in each episode, one of ``members`` (policies or specs of ``role``) drawn uniformly at random: the
    average opponent of fictitious play (:func:`selfplay` with ``opponents="all"``).

    It acts one observation at a time (``act``) and in bulk (``act_batch``, when every member does: each row gets
    its own draw), so the vectorised training environments and the batch engine play it. Reset with a seed, it
    draws the same members in the same episodes.
    """

    def __init__(self, role: Role, members: Sequence[Any]) -> None:
        from eq_env.core.policy import make_policy

        if not members:
            raise ValueError("a mixture needs at least one member")
        self.role: Role = role
        self.labels = [_opponent_label(m) for m in members]
        self.members = [make_policy(m, role) for m in members]  # type: ignore[arg-type]
        self.rng = np.random.default_rng(0)

    def __repr__(self) -> str:
        return f"MixturePolicy({self.role!r}, {self.labels!r})"

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        for member in self.members:
            member.reset(seed=seed)

    def act(self, observation: Mapping[str, Any]) -> Any:
        return self.members[int(self.rng.integers(len(self.members)))].act(observation)

    def act_batch(self, views: Any) -> Any:
        from eq_env.exchange_audit.batch import is_batchable
        from eq_env.exchange_audit.equilibrium import _merge

        if not all(is_batchable(m) for m in self.members):
            raise TypeError(f"{self!r}: a member cannot act in bulk")
        n = views.n if isinstance(views, ProposerBatch) else len(views.ambiguous)
        picks = self.rng.integers(len(self.members), size=n)
        outs = [m.act_batch(views) for m in self.members]  # type: ignore[attr-defined]
        if self.role == "proposer":
            merged: SubmissionBatch = outs[0]
            for k in range(1, len(outs)):
                merged = _merge(picks == k, outs[k], merged)
            return merged
        return np.choose(picks, [np.asarray(o, dtype=bool) for o in outs])


def _sb3_for(role: Role) -> Any:
    def factory(path: str, deterministic: bool = True) -> SB3Policy:
        policy = SB3Policy(path, deterministic)
        if policy.role != role:
            raise ValueError(f"{path} holds a trained {policy.role}, not a {role}")
        return policy

    factory.__doc__ = f"A {role} trained with eq-env train (Stable-Baselines3), loaded from its directory."
    return factory


sb3_proposer = _sb3_for("proposer")
sb3_validator = _sb3_for("validator")


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------
@dataclass
class TrainResult:
    path: Path
    role: str
    algo: str
    timesteps: int  # asked for; SB3 runs to the end of its last rollout, ``steps_run`` in all
    seconds: float
    steps_per_second: float
    curve: list[tuple[int, float]]
    evaluation: dict[str, tuple[float, float]]
    steps_run: int = 0

    def table(self) -> str:
        from eq_env.core.report import no_negative_zeros
        from eq_env.core.runner import format_metrics_table

        return no_negative_zeros(format_metrics_table(self.evaluation))


def _hyperparameters(algo: str, timesteps: int, n_envs: int) -> dict[str, Any]:
    if algo in ("ppo", "maskable_ppo"):
        # every episode is one step: short rollouts, many updates; gamma is moot
        rollout = int(min(2048, max(64, timesteps // 10)))
        n_steps = max(8, rollout // n_envs)
        size = n_steps * n_envs
        batch = max(d for d in range(1, min(256, size) + 1) if size % d == 0)  # divides the rollout: no ragged batch
        return {
            "n_steps": n_steps,
            "batch_size": batch,
            "learning_rate": 1e-3,
            "n_epochs": 5,
            "ent_coef": 0.01,
            "gamma": 0.0,
            "gae_lambda": 1.0,
        }
    return {
        "learning_rate": 5e-4,
        "buffer_size": 50_000,
        "learning_starts": min(1000, timesteps // 10),
        "exploration_fraction": 0.5,
        "gamma": 0.0,
        "train_freq": 4,
        "target_update_interval": 500,
    }


def _steps_run(algo: str, timesteps: int, n_envs: int) -> int:
    """The environment steps training on ``timesteps`` really takes (SB3 ends on a whole rollout)."""
    return steps_run(timesteps, _hyperparameters(algo, timesteps, n_envs), n_envs)


def _action_encoding(role: str, algo: str) -> str:
    """DQN needs one Discrete action: the proposer's artifact space flattened; PPO takes it as MultiDiscrete."""
    return "discrete" if (algo == "dqn" and role == "proposer") else "multidiscrete"


def _opponent_label(opponent: Any) -> str:
    return opponent if isinstance(opponent, str) else repr(opponent)


def make_view(
    role: Role,
    opponent: Any,
    config: ExchangeAuditConfig,
    reward_mode: str,
    *,
    audit_intensities: Sequence[float] | None = None,
    algo: str = "ppo",
) -> Any:
    from eq_env.exchange_audit.views import ExchangeAuditProposerEnv, ExchangeAuditValidatorEnv

    if role == "proposer":
        return ExchangeAuditProposerEnv(
            opponent,
            config=config,
            reward_mode=reward_mode,
            action_encoding=_action_encoding(role, algo),
            audit_intensities=audit_intensities,
        )
    if role == "validator":
        return ExchangeAuditValidatorEnv(
            opponent, config=config, reward_mode=reward_mode, audit_intensities=audit_intensities
        )
    raise ValueError(f"role must be 'proposer' or 'validator', got {role!r}")


def make_vec(
    role: Role,
    opponent: Any,
    config: ExchangeAuditConfig,
    reward_mode: str,
    *,
    audit_intensities: Sequence[float] | None = None,
    algo: str = "ppo",
) -> Any:
    """A builder ``n -> VecEnv`` of the native vectorised environment for this training, or None when it
    cannot play it (an opponent that cannot act in bulk; a proposer across several audit intensities; noisy
    or delayed audits, which the views play through the AEC environment)."""
    from eq_env.core.policy import make_policy
    from eq_env.exchange_audit.batch import is_batchable
    from eq_env.exchange_audit.sb3_vector import ProposerVecEnv, ValidatorVecEnv
    from eq_env.exchange_audit.views import audit_options

    if audit_options(config):
        return None
    other = "validator" if role == "proposer" else "proposer"
    if not is_batchable(make_policy(opponent, other)):  # type: ignore[arg-type]
        return None
    if role == "proposer":
        if audit_intensities is not None and len(audit_intensities) > 1:
            return None
        return lambda n: ProposerVecEnv(
            n,
            opponent,
            config=config,
            reward_mode=reward_mode,
            action_encoding=_action_encoding(role, algo),
            audit_intensities=audit_intensities,
        )
    return lambda n: ValidatorVecEnv(
        n, opponent, config=config, reward_mode=reward_mode, audit_intensities=audit_intensities
    )


def train(
    role: Role,
    out: str | Path,
    *,
    algo: str = "ppo",
    timesteps: int = 50_000,
    seed: int = 0,
    config: ExchangeAuditConfig | None = None,
    opponent: Any = None,
    reward_mode: str = "individual",
    audit_intensities: Sequence[float] | None = None,
    eval_seeds: Sequence[int] = EVAL_SEEDS,
    eval_episodes: int = 2000,
    progress: bool | None = None,
    n_envs: int = 8,
    q_values: Sequence[float] | None = None,
    vectorised: bool = True,
) -> TrainResult:
    """Train ``role`` against ``opponent`` (default: the rule validator, or the honest proposer).

    ``n_envs`` copies of the view step together (one batched forward pass for
    all of them), seeded ``seed``, ``seed + 1``...; evaluation uses
    ``eval_seeds``, which training never sees. ``audit_intensities``: train across these q (each episode
    draws one; ``q_values`` is its deprecated earlier name).

    ``vectorised`` (default): step the ``n_envs`` environments together in the native vectorised
    environment (:mod:`eq_env.exchange_audit.vector`: the same episodes, seeded the same way, at a
    fraction of the cost) whenever it can play them — the opponent acts in bulk and, for a proposer, one
    audit intensity; otherwise, or with ``vectorised=False``, SB3's ``DummyVecEnv`` of single views.
    """
    if q_values is not None:
        import warnings

        if audit_intensities is not None:
            raise ValueError("give audit_intensities or its old name q_values, not both")
        warnings.warn("q_values is now audit_intensities", DeprecationWarning, stacklevel=2)
        audit_intensities = q_values
    from eq_env.exchange_audit.runner import evaluate

    if algo not in ALGOS:
        raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
    if isinstance(timesteps, bool) or not isinstance(timesteps, int) or timesteps < 64:
        raise ValueError(f"timesteps must be an integer of at least 64, got {timesteps!r}")
    config = config or ExchangeAuditConfig()
    opponent = opponent if opponent is not None else ("rule" if role == "proposer" else "honest")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if isinstance(n_envs, bool) or not isinstance(n_envs, int) or n_envs < 1:
        raise ValueError(f"n_envs must be a positive integer, got {n_envs!r}")
    vec = (
        make_vec(role, opponent, config, reward_mode, audit_intensities=audit_intensities, algo=algo)
        if vectorised
        else None
    )
    try:
        model, curve, seconds = learn(
            lambda: make_view(role, opponent, config, reward_mode, audit_intensities=audit_intensities, algo=algo),
            algo=algo,
            timesteps=timesteps,
            seed=seed,
            hyperparameters=_hyperparameters(algo, timesteps, n_envs),
            n_envs=n_envs,
            progress=progress,
            desc=f"train {role} ({algo})",
            make_vec_env=vec,
        )
    except NothingToLearnError:
        raise NothingToLearnError(f"{opponent} never asks for approval") from None
    model.save(out / "model.zip")
    meta = {
        "role": role,
        "algo": algo,
        "features_version": FEATURES_VERSION,
        "action_encoding": _action_encoding(role, algo),
        "config": config.to_dict(),
        "audit_intensities": list(audit_intensities) if audit_intensities is not None else None,
        "opponent": _opponent_label(opponent),
        "reward_mode": reward_mode,
        "timesteps": timesteps,
        "seed": seed,
        "seconds": seconds,
    }
    (out / "policy.json").write_text(json.dumps(meta, indent=2) + "\n")
    write_curve(out, curve, f"{role} ({algo}) vs {meta['opponent']}")

    trained = SB3Policy(out)
    proposer: Any = trained if role == "proposer" else opponent
    validator: Any = opponent if role == "proposer" else trained
    # the held-out evaluation plays every episode through the environment: seconds, so it has its own bars
    ev = evaluate(config, proposer, validator, episodes=eval_episodes, seeds=list(eval_seeds), progress=progress)
    summary = ev.summary
    (out / "eval.json").write_text(
        json.dumps(
            {
                "seeds": list(eval_seeds),
                "episodes": eval_episodes,
                "policy": "greedy",  # SB3Policy(out): the trained model's most likely action
                "metrics": {k: {"mean": json_number(m), "std": json_number(s)} for k, (m, s) in summary.items()},
            },
            indent=2,
        )
        + "\n"
    )
    run = int(model.num_timesteps)
    return TrainResult(out, role, algo, timesteps, seconds, run / seconds, curve, summary, run)


SELFPLAY_OPPONENTS = ("latest", "all")
SELFPLAY_COLUMNS = (
    "round",
    "trained",
    "approval_rate",
    "bad_approval_rate",
    "welfare",
    "proposer_payoff",
    "validator_payoff",
)


def selfplay(
    out: str | Path,
    *,
    rounds: int = 3,
    timesteps: int = 30_000,
    seed: int = 0,
    config: ExchangeAuditConfig | None = None,
    algo: str = "ppo",
    eval_episodes: int = 2000,
    progress: bool | None = None,
    opponents: str = "all",
) -> list[dict[str, Any]]:
    """Alternating training: each round trains the proposer against the current validator, then the
    validator against that proposer.

    ``opponents``: whom each training faces — ``"all"`` (default) every policy the other role has played so
    far, one drawn uniformly per episode (:class:`MixturePolicy`: fictitious play; the first proposer's pool is
    the rule validator, a validator's every proposer trained so far, the latest included); ``"latest"`` the
    other role's latest policy only (best-response dynamics). The latter cycles: a validator trained on one
    proposer's lie approves another, which the next proposer finds (the README shows both). Each row is the
    latest pair's, whatever the training faced.

    The first proposer faces the paper's rule validator. Returns a row per training — round, role
    trained, and the runner's metrics of the pair after it (the trained policies greedy, ``eval_episodes``
    episodes on each of the held-out seeds :data:`EVAL_SEEDS`) — and writes them, saying so, to
    ``selfplay.csv``, ``selfplay.md`` and ``selfplay.png`` in ``out`` after every training. Each
    training is saved in ``out/round<r>_<role>``; run again with the same arguments, finished
    trainings are reused, so an interrupted self-play resumes. A role with nothing to learn (a
    proposer that never asks leaves the validator no decision) is skipped, and said so.
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds!r}")
    if opponents not in SELFPLAY_OPPONENTS:
        raise ValueError(f"opponents must be one of {SELFPLAY_OPPONENTS}, got {opponents!r}")
    out = Path(out)
    config = config or ExchangeAuditConfig()
    current: dict[str, Any] = {"proposer": "honest", "validator": "rule"}
    pool: dict[str, list[Any]] = {"proposer": [], "validator": ["rule"]}  # what each role has played so far
    history: list[dict[str, Any]] = []
    for r in range(rounds):
        roles: tuple[Role, Role] = ("proposer", "validator")
        for i, role in enumerate(roles):
            other: Role = "validator" if role == "proposer" else "proposer"
            opponent = current[other]
            if opponents == "all" and len(pool[other]) > 1:
                opponent = MixturePolicy(other, pool[other])
            path = out / f"round{r}_{role}"
            step_seed = seed + 2 * r + i
            try:
                evaluation = _finished(path, role, algo, timesteps, step_seed, config, opponent, eval_episodes)
                if evaluation is None:
                    evaluation = train(
                        role,
                        path,
                        algo=algo,
                        timesteps=timesteps,
                        seed=step_seed,
                        config=config,
                        opponent=opponent,
                        eval_episodes=eval_episodes,
                        progress=progress,
                    ).evaluation
            except NothingToLearnError as err:
                from eq_env.exchange_audit.runner import evaluate

                evaluation = evaluate(
                    config, current["proposer"], current["validator"], episodes=eval_episodes, seeds=list(EVAL_SEEDS)
                ).summary  # the seeds every other row is measured on
                trained = f"{role} (skipped: {err})"
            else:
                current[role] = f"sb3:path={path}"
                pool[role].append(current[role])
                trained = role
                if isinstance(opponent, MixturePolicy):  # (train measured it against the mixture it faced)
                    from eq_env.exchange_audit.runner import evaluate

                    evaluation = evaluate(
                        config,
                        current["proposer"],
                        current["validator"],
                        episodes=eval_episodes,
                        seeds=list(EVAL_SEEDS),
                    ).summary
            history.append(
                {
                    "round": r,
                    "trained": trained,
                    "proposer": str(current["proposer"]),
                    "validator": str(current["validator"]),
                    **{k: v[0] for k, v in evaluation.items()},
                }
            )
            _write_selfplay(out, history, eval_episodes)
    return history


def _finished(
    path: Path,
    role: str,
    algo: str,
    timesteps: int,
    seed: int,
    config: ExchangeAuditConfig,
    opponent: Any,
    eval_episodes: int,
) -> dict[str, tuple[float, float]] | None:
    """The evaluation of a training already saved in ``path`` with these very settings, else None."""
    try:
        meta = json.loads((path / "policy.json").read_text())
        saved = json.loads((path / "eval.json").read_text())
    except (OSError, ValueError):
        return None
    wanted = {
        "role": role,
        "algo": algo,
        "timesteps": timesteps,
        "seed": seed,
        "config": config.to_dict(),
        "opponent": _opponent_label(opponent),
    }
    if any(meta.get(k) != v for k, v in wanted.items()):
        return None
    if saved.get("episodes") != eval_episodes or saved.get("seeds") != list(EVAL_SEEDS):
        return None
    return {k: (from_json_number(v["mean"]), from_json_number(v["std"])) for k, v in saved["metrics"].items()}


def _write_selfplay(out: Path, history: list[dict[str, Any]], episodes: int) -> None:
    from eq_env.core.report import markdown_table, plot_lines, write_csv

    out.mkdir(parents=True, exist_ok=True)
    # how every row was measured (the spec sb3:path=DIR plays greedily; the skipped rows use the same seeds)
    seeds = ", ".join(map(str, EVAL_SEEDS))
    how = {"trained_policies": "greedy", "episodes_per_seed": episodes, "seeds": " ".join(map(str, EVAL_SEEDS))}
    write_csv(out / "selfplay.csv", [{**h, **how} for h in history], [*SELFPLAY_COLUMNS, "proposer", "validator", *how])
    (out / "selfplay.md").write_text(
        f"Each row is the latest pair after the training, the trained policies playing greedily (their most likely "
        f"actions): the mean over the held-out seeds {seeds} of {episodes} episodes each.\n\n"
        + markdown_table(list(SELFPLAY_COLUMNS), [[h[c] for c in SELFPLAY_COLUMNS] for h in history])
    )
    x = list(range(len(history)))
    labels = [f"{h['round']}: {h['trained'].split(' ')[0]}" for h in history]
    panels = [
        {
            "ylabel": "rate",
            "series": [
                {"label": m, "x": x, "y": [h[m] for h in history]} for m in ("approval_rate", "bad_approval_rate")
            ],
        },
        {
            "ylabel": "payoff per episode",
            "series": [
                {"label": m, "x": x, "y": [h[m] for h in history]}
                for m in ("welfare", "proposer_payoff", "validator_payoff")
            ],
        },
    ]
    plot_lines(
        out / "selfplay.png",
        panels,
        xlabel="round: role just trained",
        title=f"greedy; {episodes} episodes × held-out seeds {seeds}",
        xticklabels=labels,
    )
