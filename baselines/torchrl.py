"""Multi-agent PPO with TorchRL on any game's numeric observation mode, and its models as policies.

:func:`train` plays the game's parallel environment in the numeric observation mode
(``parallel_env(observation_mode="numeric")``) through TorchRL's own ``PettingZooWrapper``, which groups
the agents by name (the Einstein puzzle's ``player_0`` and ``player_1`` into one group, ``player``; the
exchange–audit ``proposer`` and ``validator`` apart; belief coordination's executors together, its
coordinator apart), and trains every group at once with MAPPO built from the pieces of TorchRL's
multi-agent PPO tutorial: per group, a ``MultiAgentMLP`` actor whose parameters the group's agents share,
behind a ``MaskedCategorical`` over the agent's action mask, a ``MultiAgentMLP`` critic centralised over the
group's agents (a group of one agent, as each exchange–audit role and the belief coordinator, has a critic of
its own: independent PPO), ``ClipPPOLoss`` with GAE, and one ``Collector`` for all groups. The settings
(:class:`TorchRLHyper`) are SB3's PPO defaults where the tutorial's differ: four epochs of minibatches per
batch, advantages normalised per minibatch, λ = 0.95, an entropy bonus of 0.01. Every agent's every step is
in the loss, the waiting ones' too (their only legal action is the no-op, which carries no gradient to the
actor). It writes into a directory:

* ``actors.pt`` (each group's actor weights) and ``policy.json`` (game, configuration, groups, the
  hyperparameters, seed, frames);
* ``learning_curve.csv`` (per collected batch: frames so far, the mean return of the episodes that ended in
  it, summed over every agent, and seconds).

A trained model is a policy like any other: ``TorchRLPolicy(DIR, role)``, or the spec ``torchrl:path=DIR``
for any of the game's roles (registered with each game's baselines), acting on the most likely legal action
(``torchrl:path=DIR,deterministic=false`` draws from the masked distribution with the policy's own
generator, seeded by ``reset``). It reads the game's text observations through the same numeric adapter, so
it plays in ``eq-env play``, the runner, and beside any other policy (the planner, an LLM).

TorchRL, TensorDict and torch are the ``compat`` extra (``pip install 'eq-env[compat]'``), imported only
when training or loading. Same seed, same model, bit for bit: torch's generator is seeded, the collector
samples in this process, the environment is seeded once and continues its own generator.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.core.numeric import NumericSpaces, numeric_adapter, trained_game

__all__ = [
    "EVAL_SEEDS",
    "TorchRLHyper",
    "TorchRLPolicy",
    "TorchRLResult",
    "torchrl_missing",
    "torchrl_policy_for",
    "train",
]

EVAL_SEEDS = (1000, 1001, 1002)  # held out: the training environment is seeded with --seed only
TORCHRL_MODULES = ("torchrl", "tensordict", "torch")
FORMAT = 1  # policy.json's "format": bump when what actors.pt holds changes


def torchrl_missing() -> str | None:
    """What to install for TorchRL training, one line, or None (looked up without importing it)."""
    for module in TORCHRL_MODULES:
        if importlib.util.find_spec(module) is None:
            return f"needs TorchRL, which is not installed (no module {module!r}): pip install 'eq-env[compat]'"
    return None


@dataclass(frozen=True)
class TorchRLHyper:
    """MAPPO's settings: SB3's PPO defaults (epochs, minibatches, λ, entropy), on TorchRL's pieces."""

    frames_per_batch: int = 2000  # environment steps per collection (every agent acts in each)
    epochs: int = 4  # passes over a batch
    minibatch: int = 500  # environment steps per gradient step
    lr: float = 3e-4
    gamma: float = 0.99
    lmbda: float = 0.95  # GAE's λ
    clip: float = 0.2
    entropy: float = 0.01
    max_grad_norm: float = 1.0
    width: int = 64  # hidden units per layer, actor and critic
    depth: int = 2  # hidden layers

    def __post_init__(self) -> None:
        # (upper bounds: a value past them is a typo, and would only fail later, inside torch's allocator)
        for name, most in (
            ("frames_per_batch", 10**6),
            ("epochs", 1000),
            ("minibatch", 10**6),
            ("width", 4096),
            ("depth", 32),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                raise ValueError(f"TorchRLHyper.{name} must be an integer in [1, {most}], got {value!r}")
        if self.minibatch > self.frames_per_batch:
            raise ValueError(
                f"TorchRLHyper.minibatch ({self.minibatch}) must not exceed frames_per_batch ({self.frames_per_batch})"
            )
        for name in ("lr", "gamma", "lmbda", "clip", "entropy", "max_grad_norm"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ValueError(f"TorchRLHyper.{name} must be a finite number >= 0, got {value!r}")
        for name in ("gamma", "lmbda"):
            if getattr(self, name) > 1:
                raise ValueError(f"TorchRLHyper.{name} must be at most 1, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class TorchRLResult:
    out: Path
    env: str
    frames: int
    seconds: float
    curve: list[dict[str, float]]  # per batch: frames, return (mean over the batch's finished episodes), seconds
    groups: dict[str, list[str]]


def _parallel_env(env_id: str, config: Any) -> Any:
    from eq_env.core.spec import env_spec

    return env_spec(env_id).module().parallel_env(config=config, observation_mode="numeric")


def _actor_net(width: int, actions: int, n_agents: int, hyper: TorchRLHyper, *, centralized: bool = False) -> Any:
    from torchrl.modules import MultiAgentMLP

    return MultiAgentMLP(
        n_agent_inputs=width,
        n_agent_outputs=actions,
        n_agents=n_agents,
        centralized=centralized,
        share_params=True,  # the group's agents play one policy (and one critic)
        depth=hyper.depth,
        num_cells=hyper.width,
    )


def train(
    env: str,
    out: str | Path,
    *,
    config: Any = None,
    frames: int,
    seed: int = 0,
    hyper: TorchRLHyper = TorchRLHyper(),
    eval_seeds: Sequence[int] = EVAL_SEEDS,
    progress: bool | None = None,
) -> TorchRLResult:
    """Train every agent of the game ``env`` (under ``config``, the game's default if None) with MAPPO for at
    least ``frames`` environment steps (whole batches of ``hyper.frames_per_batch``), seeded by ``seed``;
    writes ``actors.pt``, ``policy.json`` and ``learning_curve.csv`` into ``out`` (see the module docstring).
    ``seed`` must not be one of ``eval_seeds``, the held-out seeds the model is scored on."""
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
        raise ValueError(f"frames must be a positive integer, got {frames!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ValueError(f"seed must be an integer in [0, 2**63), got {seed!r}")
    if seed in set(eval_seeds):
        raise ValueError(f"seed {seed} is one of the held-out evaluation seeds {list(eval_seeds)}: choose another")
    missing = torchrl_missing()
    if missing:
        raise ValueError(f"TorchRL training {missing}")
    import torch
    from tensordict.nn import TensorDictModule, TensorDictSequential
    from torchrl.collectors import Collector
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.modules import MaskedCategorical, ProbabilisticActor
    from torchrl.objectives import ClipPPOLoss, ValueEstimators

    from eq_env.core.spec import env_spec

    spec = env_spec(env)
    config = config if config is not None else spec.config()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out {out} is a file, not a directory: choose another")
    torch.set_num_threads(1)  # (PPO on 2 cores: oversubscribed threads were 100x slower here)
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        # (TorchRL warns that it was tested with PettingZoo 1.24.3; the compat tests run it on ours)
        warnings.filterwarnings("ignore", "PettingZoo in TorchRL is tested", UserWarning)
        penv = PettingZooWrapper(_parallel_env(spec.id, config), categorical_actions=True, seed=seed)
    groups = {g: list(agents) for g, agents in penv.group_map.items()}

    actors, losses = {}, {}
    for group, agents in groups.items():
        features = (group, "observation", "observation")  # (the Dict's features; its mask moves to the group)
        width = penv.observation_spec[features].shape[-1]
        actions = penv.full_action_spec[group, "action"].space.n
        actor_net = _actor_net(width, actions, len(agents), hyper)
        actors[group] = actor_net
        actor = ProbabilisticActor(
            TensorDictModule(actor_net, in_keys=[features], out_keys=[(group, "logits")]),
            spec=penv.full_action_spec[group, "action"],
            in_keys={"logits": (group, "logits"), "mask": (group, "action_mask")},
            out_keys=[(group, "action")],
            distribution_class=MaskedCategorical,
            return_log_prob=True,
            log_prob_key=(group, "sample_log_prob"),
        )
        critic = TensorDictModule(
            _actor_net(width, 1, len(agents), hyper, centralized=True),
            in_keys=[features],
            out_keys=[(group, "state_value")],
        )
        loss = ClipPPOLoss(
            actor_network=actor,
            critic_network=critic,
            clip_epsilon=hyper.clip,
            entropy_coeff=hyper.entropy,
            normalize_advantage=True,  # (per minibatch, the group's agents together: they share one policy)
        )
        loss.set_keys(  # (each group's own keys: a group's advantage never overwrites another's)
            reward=(group, "reward"),
            action=(group, "action"),
            sample_log_prob=(group, "sample_log_prob"),
            value=(group, "state_value"),
            done=(group, "done"),
            terminated=(group, "terminated"),
            advantage=(group, "advantage"),
            value_target=(group, "value_target"),
        )
        loss.make_value_estimator(ValueEstimators.GAE, gamma=hyper.gamma, lmbda=hyper.lmbda)
        losses[group] = loss
    policy = TensorDictSequential(*(loss.actor_network for loss in losses.values()))
    params = [p for loss in losses.values() for p in loss.parameters()]
    optim = torch.optim.Adam(params, lr=hyper.lr)
    batches = -(-frames // hyper.frames_per_batch)
    collector = Collector(
        penv,
        policy,
        frames_per_batch=hyper.frames_per_batch,
        total_frames=batches * hyper.frames_per_batch,
        auto_register_policy_transforms=False,
        device="cpu",
    )
    shuffle = torch.Generator().manual_seed(seed)
    curve: list[dict[str, float]] = []
    running = 0.0  # the unfinished episode's return, carried across batches
    started = time.perf_counter()
    done_frames = 0
    try:
        with warnings.catch_warnings():
            # (TorchRL asks whether the agents' dimension should be normalised apart: not for one shared policy)
            warnings.filterwarnings("ignore", "You requested advantage normalization", UserWarning)
            for data in collector:
                done_frames += int(data.numel())
                finished, running = _returns(data, groups, running)
                for loss in losses.values():
                    with torch.no_grad():
                        loss.value_estimator(
                            data, params=loss.critic_network_params, target_params=loss.target_critic_network_params
                        )
                flat = data.reshape(-1)
                for _ in range(hyper.epochs):
                    for index in torch.randperm(flat.numel(), generator=shuffle).split(hyper.minibatch):
                        sub = flat[index]
                        total = sum(
                            (terms["loss_objective"] + terms["loss_critic"] + terms["loss_entropy"])
                            for terms in (loss(sub) for loss in losses.values())
                        )
                        optim.zero_grad()
                        total.backward()  # type: ignore[union-attr]
                        torch.nn.utils.clip_grad_norm_(params, hyper.max_grad_norm)
                        optim.step()
                collector.update_policy_weights_()
                seconds = time.perf_counter() - started
                curve.append(
                    {
                        "frames": float(done_frames),
                        "return": float(np.mean(finished)) if finished else float("nan"),
                        "episodes": float(len(finished)),
                        "seconds": seconds,
                    }
                )
                if progress is not False:
                    shown = f"{curve[-1]['return']:.3f}" if finished else "no episode ended"
                    # (the training episodes' return, every agent summed, as the policy sampled them)
                    print(f"batch {len(curve)}/{batches}: return {shown}, sampled ({seconds:.1f} s)", flush=True)
    finally:
        collector.shutdown()
        penv.close()
    seconds = time.perf_counter() - started
    out.mkdir(parents=True, exist_ok=True)
    torch.save({g: actors[g].state_dict() for g in groups}, out / "actors.pt")
    meta = {
        "format": FORMAT,
        "library": "torchrl",
        "algo": "mappo",
        "env": spec.id,
        "config": config.to_dict(),
        "groups": groups,
        "hyper": dataclasses.asdict(hyper),
        "seed": seed,
        "frames": done_frames,
        "seconds": seconds,
    }
    (out / "policy.json").write_text(json.dumps(meta, indent=2) + "\n")
    with (out / "learning_curve.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["batch", "frames", "return", "episodes", "seconds"])
        writer.writeheader()
        for i, row in enumerate(curve, 1):
            writer.writerow({"batch": i, **row})
    return TorchRLResult(out, spec.id, done_frames, seconds, curve, groups)


def _returns(data: Any, groups: Mapping[str, Sequence[str]], running: float) -> tuple[list[float], float]:
    """The returns (every agent's reward summed) of the episodes that ended in the batch ``data``, in order, and
    the return so far of the one still running at its end."""
    reward = sum(data["next", g, "reward"].reshape(data.numel(), -1).sum(-1) for g in groups)
    done = data["next", "done"].reshape(data.numel(), -1).any(-1)
    finished = []
    for r, d in zip(reward.tolist(), done.tolist(), strict=True):  # type: ignore[union-attr]
        running += r
        if d:
            finished.append(running)
            running = 0.0
    return finished, running


def _meta(path: Path) -> dict[str, Any]:
    """``policy.json`` of the TorchRL training in ``path``, or a one-line refusal."""
    meta_path = path / "policy.json"
    try:
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else None
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{meta_path} is not valid JSON ({err}): train again into {path}") from None
    if not isinstance(meta, dict) or meta.get("library") != "torchrl" or not isinstance(meta.get("groups"), dict):
        raise ValueError(f"{path} is not a TorchRL training: no policy.json of one (eq_env.baselines.torchrl.train)")
    if meta.get("format") != FORMAT:
        raise ValueError(f"{meta_path} has format {meta.get('format')!r}, this version reads {FORMAT}: train again")
    for key, kind in (("env", str), ("config", dict), ("hyper", dict)):
        if not isinstance(meta.get(key), kind):
            raise ValueError(f"{meta_path}: {key!r} must be a {kind.__name__}, got {meta.get(key)!r}: train again")
    groups = meta["groups"]
    if not groups or not all(isinstance(m, list) and m and all(isinstance(a, str) for a in m) for m in groups.values()):
        raise ValueError(f"{meta_path}: 'groups' must map each group to a list of its agents, got {groups!r}")
    if not (path / "actors.pt").is_file():
        raise ValueError(f"{path} has no actors.pt: train again into {path}")
    return meta


class TorchRLPolicy:
    """One role of a game played by its group's actor of a TorchRL training written by :func:`train`.

    Args:
        path: the directory :func:`train` wrote (``actors.pt`` and ``policy.json``).
        role: the role to play (one of the game's roles; its agents' group's actor plays it).
        deterministic: the most likely legal action (default), else one drawn from the actor's masked
            distribution with the policy's own generator, seeded by ``reset``: the same seed plays the same games.
    """

    def __init__(self, path: str | Path, role: str, deterministic: bool = True) -> None:
        if not isinstance(deterministic, bool):
            raise ValueError(f"deterministic must be true or false, got {deterministic!r}")
        missing = torchrl_missing()
        if missing:
            raise ValueError(f"a torchrl policy {missing}")
        self.path, self.role, self.deterministic = Path(path), role, deterministic
        self.rng = np.random.default_rng()
        self.meta = _meta(self.path)
        spec, self.config = trained_game(self.meta, self.path / "policy.json")
        roles = spec.agent_roles(self.config)
        trained = sorted(a for members in self.meta["groups"].values() for a in members)
        if trained != sorted(roles):
            raise ValueError(
                f"{self.path}/policy.json: its groups hold {trained}, the game's agents are {sorted(roles)}"
            )
        agents = [a for a, r in roles.items() if r == role]
        if not agents:
            raise ValueError(
                f"{self.path}: the game {spec.name} has no role {role!r}; its roles: {', '.join(spec.roles)}"
            )
        self.agent = agents[0]  # (any agent of the role: the group's agents share the actor's parameters)
        self.group = next((g for g, members in self.meta["groups"].items() if self.agent in members), None)
        if self.group is None:
            raise ValueError(f"{self.path}: no group of the training holds {self.agent!r} ({self.meta['groups']})")
        members = self.meta["groups"][self.group]
        self._index, self._n_agents = members.index(self.agent), len(members)
        self.numbers = NumericSpaces(numeric_adapter(spec.id), self.config, roles)
        features: Any = self.numbers.observation_spaces[self.agent]["observation"]
        width = int(features.shape[0])
        actions = int(self.numbers.action_spaces[self.agent].n)
        import torch

        try:
            hyper = TorchRLHyper(**self.meta["hyper"])
        except (TypeError, ValueError) as err:
            raise ValueError(f"{self.path}/policy.json: its hyper is not TorchRLHyper's ({err}): train again") from None
        self.net = _actor_net(width, actions, self._n_agents, hyper)
        try:
            weights = torch.load(self.path / "actors.pt", map_location="cpu", weights_only=True)
        except Exception as err:  # (a truncated or foreign file: torch raises several kinds)
            raise ValueError(
                f"{self.path}/actors.pt is not a torch weights file ({type(err).__name__}): train again"
            ) from None
        if not isinstance(weights, dict) or self.group not in weights:
            raise ValueError(f"{self.path}/actors.pt has no actor of group {self.group!r}: train again")
        state = weights[self.group]
        if not isinstance(state, dict) or not all(isinstance(t, torch.Tensor) for t in state.values()):
            raise ValueError(f"{self.path}/actors.pt: group {self.group!r} holds no weights: train again")
        if not all(bool(torch.isfinite(t).all()) for t in state.values()):
            raise ValueError(
                f"{self.path}/actors.pt: group {self.group!r} has weights that are not finite: train again"
            )
        try:
            self.net.load_state_dict(state)
        except (RuntimeError, ValueError, KeyError, TypeError) as err:  # (tensordict raises ValueError)
            first = (str(err).splitlines() or [type(err).__name__])[0]
            raise ValueError(f"{self.path}/actors.pt does not fit its policy.json ({first}): train again") from None
        self.net.eval()
        self._width = width

    def __repr__(self) -> str:
        how = "greedy" if self.deterministic else "sampled"  # (what a score of it must say: eq-env play prints this)
        return f"TorchRLPolicy({str(self.path)!r}, role={self.role!r}, {how})"

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Mapping[str, Any]) -> Any:
        import torch

        seen = self.numbers.observe(self.agent, observation)
        features = seen["observation"]
        if features.shape != (self._width,):
            raise ValueError(
                f"torchrl:path={self.path} was trained on another configuration of the game ({self.role} observes "
                f"{features.shape}, trained on ({self._width},); its policy.json has the configuration)"
            )
        mask = seen["action_mask"].astype(bool)
        # (every agent slot gets this observation: the shared, decentralised actor reads only its own slot)
        x = torch.from_numpy(np.tile(features, (1, self._n_agents, 1)))
        with torch.no_grad():
            logits = self.net(x)[0, self._index].numpy().astype(np.float64)
        logits = np.where(mask, logits, -np.inf)
        if self.deterministic:
            index = int(np.argmax(logits))
        else:
            p = np.exp(logits - logits.max())
            index = int(self.rng.choice(len(p), p=p / p.sum()))
        return self.numbers.env_action(self.agent, index, observation)


def torchrl_policy_for(role: str) -> Any:
    """The policy factory ``torchrl:path=DIR`` of ``role`` (registered by each game's baselines)."""

    def factory(path: str, deterministic: bool = True) -> TorchRLPolicy:
        return TorchRLPolicy(path, role, deterministic)

    factory.__doc__ = f"The {role} of a TorchRL MAPPO training (eq_env.baselines.torchrl), loaded from its directory."
    return factory
