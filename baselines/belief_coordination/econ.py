"""ECON, done right: per-executor belief networks, a belief encoder and a QMIX mixer, trained on the batch engine.

ECON ("From Debate to Equilibrium", ICML 2025) gives each executor a small *belief network* that, from the
executor's observation, chooses its sampling parameters (T, p), and trains all of them through a QMIX-style
mixer of their local values. This module builds the method as the paper describes it (not as its public code
runs it: see ``shared/spec/belief_coordination.md``), on the grid of (T, p) the environment offers to
value-based learners (``config.grid_point``):

* **Belief networks**, one per executor (an ``nn.ModuleList`` of N separate MLPs, so the executors really can
  hold different beliefs; the original code shared one network and its agents differed only by dropout):
  features (5) → ``hidden`` → belief vector ``b_i`` (``belief_dim``), and a Q head ``b_i`` → ``Q_i`` over the G
  grid actions.
* **Belief encoder**: multi-head self-attention over the N beliefs, mean-pooled into the group representation
  ``E``. No padding mask: in this game all N executors answer every question, so none is ever absent (the
  original code built a mask and then dropped it).
* **Mixer** (QMIX): ``Q_tot = w2ᵀ·elu(W1ᵀ·q + b1) + b2``, with ``q`` the chosen actions' ``Q_i`` and the weights
  produced from ``E`` by hypernetworks; ``W1`` and ``w2`` pass through ``abs``, so ``Q_tot`` is monotone
  non-decreasing in every ``Q_i``. That is what lets each executor act on its own: the joint action made of each
  executor's ``argmax Q_i`` is also the ``argmax`` of ``Q_tot`` (decentralised greedy execution needs only the
  belief networks; the encoder and mixer serve training).
* **Loss**: an episode is one step (one answer per question, as in the paper), so the TD target is the shared
  reward itself: ``mean (Q_tot − r)²``, plus the paper's belief-consistency term
  ``consistency_weight · mean ‖b_i − E‖²``. The paper's other term, the similarity of the answers' text
  embeddings, has no counterpart here: the executors' answers are numbers, not texts to embed. Adam.
* **Exploration**: ε-greedy per executor over the grid, ε falling linearly from ``epsilon_start`` to
  ``epsilon_end`` over the first ``epsilon_fraction`` of the steps.

:func:`train_econ` trains on questions drawn from a pool made once (``engine.training_batch``), with fresh
answerer draws at every step (``engine.sample_batch``), played by :func:`eq_env.belief_coordination.batch.play`
with the majority coordinator; every ``eval_every`` steps (and at steps 0 and the last) it measures the greedy
policy on a fixed held-out batch (``engine.episodes_batch(config, eval_seed, range(eval_episodes))``). It runs on
one thread, and the same seed gives bit-identical weights and curve. The network starts from the weights
:meth:`ECON.untrained` gives for the same seed: the falsifier F1's "beliefs frozen at random initialisation".

:class:`ECON` is the trained (or untrained) team as a joint executor policy: ``act_joint`` (each executor's own
network, greedy), ``act_batch`` (grid indices for the batch engine), ``chooser`` (an engine chooser), ``save``
and ``load`` (``econ.pt``: the state dict; ``econ.json``: configuration, hyperparameters, grid, team size, seed,
how it acts (``greedy``), training curve and its held-out seed, package version). :func:`econ` is the policy
factory (``econ:path=DIR``).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from eq_env.baselines.belief_coordination.scripted import as_action
from eq_env.belief_coordination import batch as engine
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.env import EXECUTOR_FEATURES
from eq_env.core.policy import REQUIRED, BasePolicy, PolicySetupError

__all__ = ["ECON", "ECONHyper", "ECONNetwork", "econ", "train_econ"]

WEIGHTS_FILE = "econ.pt"
META_FILE = "econ.json"
FORMAT_VERSION = 1  # bump when the network or the features change: older saves then refuse to load


@dataclass(frozen=True)
class ECONHyper:
    """ECON's hyperparameters (the defaults train the 3-executor game in a few seconds on one thread)."""

    belief_dim: int = 16
    hidden: int = 64
    heads: int = 4  # attention heads of the belief encoder; must divide belief_dim
    mixer_hidden: int = 32
    lr: float = 1e-3
    batch_size: int = 256
    steps: int = 1500
    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    epsilon_fraction: float = 0.6  # ε reaches epsilon_end after this share of the steps
    consistency_weight: float = 0.01
    pool: int = 4096  # training questions, generated once
    eval_every: int = 100
    eval_episodes: int = 1000

    def __post_init__(self) -> None:
        positive = (
            "belief_dim",
            "hidden",
            "heads",
            "mixer_hidden",
            "batch_size",
            "pool",
            "eval_every",
            "eval_episodes",
        )
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ECONHyper.{name} must be a positive integer, got {value!r}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 0:
            raise ValueError(f"ECONHyper.steps must be a non-negative integer, got {self.steps!r}")
        if self.belief_dim % self.heads:
            raise ValueError(
                f"ECONHyper.heads ({self.heads}) must divide belief_dim ({self.belief_dim}): "
                "multi-head attention splits the belief vector between the heads"
            )
        ranges = {
            "lr": (0.0, 1.0, False),
            "epsilon_start": (0.0, 1.0, True),
            "epsilon_end": (0.0, 1.0, True),
            "epsilon_fraction": (0.0, 1.0, False),
            "consistency_weight": (0.0, 1e6, True),
        }
        for name, (low, high, low_ok) in ranges.items():
            value = getattr(self, name)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
            if not ok or not ((low <= value) if low_ok else (low < value)) or value > high:
                raise ValueError(
                    f"ECONHyper.{name} must be a number in {'[' if low_ok else '('}{low:g}, {high:g}], got {value!r}"
                )

    def epsilon(self, step: int) -> float:
        """Exploration rate at gradient step ``step`` (0-based)."""
        span = max(self.epsilon_fraction * self.steps, 1.0)
        return self.epsilon_start + (self.epsilon_end - self.epsilon_start) * min(step / span, 1.0)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ECONHyper:
        unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"unknown ECONHyper field(s) {unknown}")
        return cls(**data)


class BeliefNetwork(nn.Module):
    """One executor's belief network: features → belief vector b_i, and its Q head b_i → Q_i (one per grid point)."""

    def __init__(self, features: int, hidden: int, belief_dim: int, actions: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, belief_dim))
        self.q_head = nn.Sequential(nn.ReLU(), nn.Linear(belief_dim, actions))

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        belief = self.body(features)
        return belief, self.q_head(belief)


class ECONNetwork(nn.Module):
    """The belief networks (one per executor), the belief encoder and the QMIX mixer (module docstring)."""

    def __init__(
        self, n_executors: int, n_actions: int, hyper: ECONHyper = ECONHyper(), features: int = EXECUTOR_FEATURES
    ) -> None:
        super().__init__()
        self.n_executors, self.n_actions, self.features = n_executors, n_actions, features
        d, h = hyper.belief_dim, hyper.mixer_hidden
        self.mixer_hidden = h
        self.beliefs = nn.ModuleList(BeliefNetwork(features, hyper.hidden, d, n_actions) for _ in range(n_executors))
        self.encoder = nn.MultiheadAttention(d, hyper.heads, batch_first=True)
        self.hyper_w1 = nn.Linear(d, n_executors * h)
        self.hyper_b1 = nn.Linear(d, h)
        self.hyper_w2 = nn.Linear(d, h)
        self.hyper_b2 = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, 1))

    def agents(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Beliefs (B, N, belief_dim) and local values Q_i (B, N, G) from features (B, N, 5): each executor
        through its own network (a loop over the N executors, never over the batch)."""
        outs = [net(features[:, i]) for i, net in enumerate(self.beliefs)]
        return torch.stack([b for b, _ in outs], dim=1), torch.stack([q for _, q in outs], dim=1)

    def group(self, beliefs: torch.Tensor) -> torch.Tensor:
        """The group representation E (B, belief_dim): self-attention over the N beliefs, mean-pooled. All N
        executors are present in every question, so there is nothing to mask."""
        attended, _ = self.encoder(beliefs, beliefs, beliefs, need_weights=False)
        return attended.mean(dim=1)

    def mixer_weights(self, group: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """W1 (B, N, H) ≥ 0, b1 (B, H), w2 (B, H) ≥ 0, b2 (B,) from E: abs makes Q_tot monotone in every Q_i."""
        w1 = self.hyper_w1(group).abs().view(-1, self.n_executors, self.mixer_hidden)
        w2 = self.hyper_w2(group).abs()
        return w1, self.hyper_b1(group), w2, self.hyper_b2(group).squeeze(-1)

    def mix(self, q: torch.Tensor, group: torch.Tensor) -> torch.Tensor:
        """Q_tot (B,) of the chosen actions' values ``q`` (B, N): w2ᵀ·elu(W1ᵀ·q + b1) + b2."""
        w1, b1, w2, b2 = self.mixer_weights(group)
        hidden = nn.functional.elu(torch.einsum("bn,bnh->bh", q, w1) + b1)
        return (hidden * w2).sum(dim=-1) + b2

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Beliefs (B, N, D), local values Q_i (B, N, G) and the group representation E (B, D)."""
        beliefs, q = self.agents(features)
        return beliefs, q, self.group(beliefs)


def _grid(config: BeliefCoordinationConfig) -> np.ndarray:
    t, p = config.grid_point(np.arange(config.grid_size))
    return np.stack([t, p], axis=1)


def _initial_network(config: BeliefCoordinationConfig, hyper: ECONHyper, seed: int) -> ECONNetwork:
    """The network at its random initialisation for ``seed`` (the caller's torch random state is left alone)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ECONNetwork(config.n_executors, config.grid_size, hyper)


def _check_config(config: BeliefCoordinationConfig) -> None:
    if not isinstance(config, BeliefCoordinationConfig):
        raise TypeError(f"config must be a BeliefCoordinationConfig, got {type(config).__name__}")
    if config.rounds != 1:
        raise ValueError(
            f"ECON answers once per question (as in the paper): it needs rounds=1, got "
            f"rounds={config.rounds} (a debate)"
        )


class ECON(BasePolicy):
    """The executors of a trained (or untrained) ECON: each answers with the grid point of its own largest Q_i.

    A joint policy: ``act_joint`` takes every executor's observation (executor i through network i). Works with
    the environment in either executor action space: the grid index itself (the environment's grid must be
    ECON's), or the Box action of the chosen (T, p).
    """

    role: ClassVar[str] = "executor"

    def __init__(
        self,
        network: ECONNetwork,
        config: BeliefCoordinationConfig,
        hyper: ECONHyper,
        *,
        seed: int,
        curve: list[dict[str, Any]] | None = None,
        seconds: float | None = None,
        eval_seed: int | None = None,
    ) -> None:
        super().__init__()
        _check_config(config)
        if (network.n_executors, network.n_actions) != (config.n_executors, config.grid_size):
            raise ValueError(
                f"the network is for {network.n_executors} executors and {network.n_actions} grid "
                f"points, the configuration has {config.n_executors} and {config.grid_size}"
            )
        self.network = network.eval()
        self.config, self.hyper, self.seed = config, hyper, seed
        self.curve: list[dict[str, Any]] = list(curve or [])
        self.seconds = seconds
        self.eval_seed = eval_seed  # the curve's held-out questions (None: no curve, or saved before it was kept)
        self.grid = _grid(config)

    @classmethod
    def untrained(cls, config: BeliefCoordinationConfig, hyper: ECONHyper = ECONHyper(), seed: int = 0) -> ECON:
        """The same architecture at its random initialisation: the weights :func:`train_econ` starts from with
        this seed (the falsifier F1's frozen beliefs)."""
        _check_config(config)
        return cls(_initial_network(config, hyper, seed), config, hyper, seed=seed)

    @property
    def n_executors(self) -> int:
        return self.config.n_executors

    def __repr__(self) -> str:
        state = f"{self.curve[-1]['step']} steps" if self.curve else "untrained"
        # (greedy: act_batch is each executor's argmax Q_i; a score of it must say so, and eq-env play prints this)
        return f"ECON(n_executors={self.n_executors}, grid={self.config.grid_size}, seed={self.seed}, {state}, greedy)"

    # -- acting ------------------------------------------------------------------
    def act_batch(self, features: np.ndarray) -> np.ndarray:
        """Greedy grid indices (B, N) for executor features (B, N, 5): executor i's argmax of its own Q_i."""
        x = np.asarray(features, dtype=np.float32)
        if x.ndim != 3 or x.shape[1:] != (self.n_executors, self.network.features):
            raise ValueError(
                f"features must have shape (B, {self.n_executors}, {self.network.features}), got {x.shape}"
            )
        with torch.no_grad():
            _, q = self.network.agents(torch.from_numpy(x))
        return q.argmax(dim=-1).numpy().astype(np.int64)

    def chooser(self) -> engine.Chooser:
        """An engine chooser: the greedy (T, p) of every executor."""

        def choose(round_: int, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return self.config.grid_point(self.act_batch(features))

        return choose

    def _check_space(self, agent: str, observation: Mapping[str, Any]) -> None:
        grid = observation.get("grid")
        if grid is not None:
            grid = np.asarray(grid, dtype=float)
            if grid.shape != self.grid.shape or not np.allclose(grid, self.grid, rtol=1e-6, atol=1e-6):
                raise PolicySetupError(
                    f"{agent}: the environment's (T, p) grid ({grid.shape[0]} points) is not ECON's "
                    f"({self.grid.shape[0]} points: {self.config.grid_temperatures} temperatures in "
                    f"[{self.config.temperature_min:g}, {self.config.temperature_max:g}] x "
                    f"{self.config.grid_penalties} penalties in [{self.config.penalty_min:g}, "
                    f"{self.config.penalty_max:g}]); play it with the grid it was trained on"
                )
            return
        ranges = np.asarray(observation["ranges"], dtype=float)
        low, high = self.grid.min(axis=0), self.grid.max(axis=0)
        if (low < ranges[:, 0] - 1e-6).any() or (high > ranges[:, 1] + 1e-6).any():
            raise PolicySetupError(
                f"{agent}: the environment's ranges T in [{ranges[0, 0]:g}, {ranges[0, 1]:g}], p in "
                f"[{ranges[1, 0]:g}, {ranges[1, 1]:g}] do not hold ECON's grid (T in [{low[0]:g}, {high[0]:g}], "
                f"p in [{low[1]:g}, {high[1]:g}])"
            )

    def act_joint(self, observations: Mapping[str, Any]) -> dict[str, Any]:
        """Each executor's action (agents ordered by their index: executor i uses network i)."""
        agents = sorted(observations, key=lambda a: int(a.rpartition("_")[2]))
        if len(agents) != self.n_executors:
            raise PolicySetupError(
                f"ECON was trained for a team of {self.n_executors} executors; this team has "
                f"{len(agents)} ({', '.join(agents)})"
            )
        for agent in agents:
            self._check_space(agent, observations[agent])
        features = np.stack([np.asarray(observations[a]["observation"], dtype=np.float32) for a in agents])
        if features[:, 1:].any():  # round > 0, or a previous reply: a debate
            raise PolicySetupError(
                "ECON answers once per question (rounds=1, the paper's setting); this game has debate rounds"
            )
        chosen = self.act_batch(features[None])[0]
        actions: dict[str, Any] = {}
        for agent, index in zip(agents, chosen, strict=True):
            if observations[agent].get("grid") is not None:
                actions[agent] = int(index)  # the same grid: the chosen index itself (as_action's nearest point)
            else:
                t, p = self.grid[index]
                actions[agent] = as_action(observations[agent], float(t), float(p))
        return actions

    # -- files -------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        import eq_env

        return {
            "format": "econ",
            "format_version": FORMAT_VERSION,
            "config": self.config.to_dict(),
            "hyper": self.hyper.to_dict(),
            "grid": self.grid.tolist(),
            "n_executors": self.n_executors,
            "features": self.network.features,
            "seed": self.seed,
            "acting": "greedy",  # each executor's argmax Q_i (act_batch), never sampled: what its scores measure
            "training": {
                "steps": self.curve[-1]["step"] if self.curve else 0,
                "seconds": self.seconds,
                # the curve: the greedy policy on hyper.eval_episodes held-out questions of this seed
                "eval_seed": self.eval_seed,
                "final": self.curve[-1] if self.curve else None,
                "curve": self.curve,
            },
            "version": eq_env.__version__,
        }

    def save(self, directory: str | Path) -> Path:
        """Write ``econ.pt`` (the state dict) and ``econ.json`` (everything else) into ``directory``."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        torch.save(self.network.state_dict(), out / WEIGHTS_FILE)
        (out / META_FILE).write_text(json.dumps(self.metadata(), indent=2) + "\n")
        return out

    @classmethod
    def load(cls, directory: str | Path) -> ECON:
        """The ECON saved in ``directory``; a one-line ValueError naming the file when it cannot be read."""
        path = Path(directory)
        if not path.is_dir():
            raise ValueError(
                f"{path}: no such directory (train one there: eq-env train --env belief-coordination --out {path})"
            )
        meta_path, weights_path = path / META_FILE, path / WEIGHTS_FILE
        for file in (meta_path, weights_path):
            if not file.is_file():
                raise ValueError(f"{file}: missing; {path} does not hold a saved ECON")
        try:
            meta = json.loads(meta_path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise ValueError(f"{meta_path}: not valid JSON ({_one_line(e)})") from None
        config, hyper, seed, training = _read_metadata(meta_path, meta)
        try:
            state = torch.load(weights_path, map_location="cpu", weights_only=True)
        except Exception as e:  # torch raises many kinds for a damaged file: pickle, zip, EOF, runtime errors
            raise ValueError(f"{weights_path}: not a readable PyTorch state dict ({_one_line(e)})") from None
        network = ECONNetwork(config.n_executors, config.grid_size, hyper)
        _check_state(weights_path, state, network)
        network.load_state_dict(state)
        return cls(
            network,
            config,
            hyper,
            seed=seed,
            curve=training["curve"],
            seconds=training.get("seconds"),
            eval_seed=training.get("eval_seed"),
        )


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:200]


def _read_metadata(path: Path, meta: Any) -> tuple[BeliefCoordinationConfig, ECONHyper, int, dict[str, Any]]:
    """The saved configuration, hyperparameters, seed and training record, checked field by field."""

    def bad(what: str) -> ValueError:
        return ValueError(f"{path}: {what}")

    if not isinstance(meta, dict) or meta.get("format") != "econ":
        raise bad('not an ECON description (no "format": "econ")')
    if meta.get("format_version") != FORMAT_VERSION:
        raise bad(f"format version {meta.get('format_version')!r}, this package reads {FORMAT_VERSION}; train again")
    missing = [k for k in ("config", "hyper", "grid", "n_executors", "features", "seed", "training") if k not in meta]
    if missing:
        raise bad(f"missing field(s) {', '.join(missing)}")
    try:
        if not isinstance(meta["config"], dict) or not isinstance(meta["hyper"], dict):
            raise ValueError("config and hyper must be objects")
        config = BeliefCoordinationConfig.from_dict(meta["config"])
        hyper = ECONHyper.from_dict(meta["hyper"])
    except (TypeError, ValueError) as e:
        raise bad(f"invalid config or hyper ({_one_line(e)})") from None
    if config.rounds != 1:
        raise bad(f"config.rounds is {config.rounds}; ECON answers once per question (rounds=1)")
    if meta["n_executors"] != config.n_executors:
        raise bad(f"n_executors {meta['n_executors']!r} differs from the config's {config.n_executors}")
    if meta["features"] != EXECUTOR_FEATURES:
        raise bad(f"features {meta['features']!r}: this package's executors observe {EXECUTOR_FEATURES}")
    try:
        grid = np.asarray(meta["grid"], dtype=float)
    except (TypeError, ValueError):
        grid = np.zeros(0)
    if grid.shape != (config.grid_size, 2) or not np.allclose(grid, _grid(config)):
        raise bad("grid does not match the config's (T, p) grid")
    seed = meta["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise bad(f"seed must be an integer, got {seed!r}")
    training = meta["training"]
    if (
        not isinstance(training, dict)
        or not isinstance(training.get("curve"), list)
        or not all(isinstance(row, dict) for row in training["curve"])
        or not isinstance(training.get("seconds"), (int, float, type(None)))
        or isinstance(training.get("eval_seed"), bool)
        or not isinstance(training.get("eval_seed"), (int, type(None)))  # (absent in older files: None)
    ):
        raise bad(
            "training must be an object with a curve (a list of objects), seconds (a number or null) and "
            "eval_seed (an integer or null)"
        )
    return config, hyper, seed, training


def _check_state(path: Path, state: Any, network: ECONNetwork) -> None:
    """A one-line ValueError unless ``state`` has exactly the network's tensors, shape for shape."""
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f"{path}: not a state dict of tensors")
    expected = network.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    shapes = sorted(k for k in set(expected) & set(state) if state[k].shape != expected[k].shape)
    found = (("missing", missing), ("unexpected", unexpected), ("wrong shape", shapes))
    problems = [f"{what} {', '.join(keys[:3])}{' ...' if len(keys) > 3 else ''}" for what, keys in found if keys]
    if problems:
        raise ValueError(
            f"{path}: the state dict does not match the network described in {META_FILE} ({'; '.join(problems)})"
        )


def econ(path: str = REQUIRED) -> ECON:
    """ECON's learned executors (joint), loaded from the directory ECON.save wrote (train_econ trains them)."""
    if not isinstance(path, str) or not path.strip():
        raise ValueError("econ needs path=DIR, the directory eq-env train --env belief-coordination --out DIR wrote")
    return ECON.load(path)


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------
def _evaluate(policy: ECON, batch: engine.Batch) -> dict[str, float]:
    out = engine.play(batch, policy.config, policy.chooser())
    return {"reward": float(out.reward.mean()), "accuracy": float(out.ts.mean()), "tokens": float(out.tokens.mean())}


def _given(temperatures: np.ndarray, penalties: np.ndarray) -> engine.Chooser:
    """The chooser of (T, p) chosen already (from the same features the engine will pass)."""
    return lambda round_, features: (temperatures, penalties)


def train_econ(
    config: BeliefCoordinationConfig,
    hyper: ECONHyper = ECONHyper(),
    *,
    seed: int = 0,
    progress: bool | None = None,
    eval_seed: int = 10_000,
    on_eval: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[ECON, list[dict[str, Any]]]:
    """Train ECON on ``config``'s game (see the module docstring); the trained policy and its curve.

    The curve has one row per evaluation (steps 0, ``eval_every``, ..., ``steps``): ``step``, the greedy policy's
    mean ``reward``, ``accuracy`` (TS) and ``tokens`` on the held-out episodes of ``eval_seed``, the ``epsilon``
    and the mean training ``loss`` since the previous row (None at step 0). ``on_eval`` is called with each row.
    """
    _check_config(config)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small networks: one thread is faster than two, and reproducible
    try:
        return _train(config, hyper, seed, progress, eval_seed, on_eval)
    finally:
        torch.set_num_threads(threads)


def _train(
    config: BeliefCoordinationConfig,
    hyper: ECONHyper,
    seed: int,
    progress: bool | None,
    eval_seed: int,
    on_eval: Callable[[dict[str, Any]], None] | None,
) -> tuple[ECON, list[dict[str, Any]]]:
    start = time.perf_counter()
    pool_rng, batch_rng, explore_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    network = _initial_network(config, hyper, seed)
    policy = ECON(network, config, hyper, seed=seed, eval_seed=eval_seed)
    optimizer = torch.optim.Adam(network.parameters(), lr=hyper.lr, foreach=True)
    pool = engine.training_batch(config, pool_rng, hyper.pool)
    held_out = engine.episodes_batch(config, eval_seed, range(hyper.eval_episodes))
    n, g, b = config.n_executors, config.grid_size, hyper.batch_size
    curve: list[dict[str, Any]] = []
    losses: list[float] = []

    def evaluate(step: int) -> None:
        network.eval()
        row = {
            "step": step,
            **_evaluate(policy, held_out),
            "epsilon": hyper.epsilon(max(step - 1, 0)),
            "loss": float(np.mean(losses)) if losses else None,
        }
        network.train()
        losses.clear()
        curve.append(row)
        bar.set_postfix(reward=f"{row['reward']:.3f}", refresh=False)
        if on_eval is not None:
            on_eval(row)

    with tqdm(total=hyper.steps, desc="econ", unit="step", disable=None if progress is None else not progress) as bar:
        evaluate(0)
        for step in range(hyper.steps):
            batch = engine.sample_batch(pool, batch_rng, b)
            features = torch.from_numpy(engine.executor_features(batch, config, 0, None))
            beliefs, q, group = network(features)
            # ε-greedy per executor: a uniform grid point with probability ε, else its own argmax Q_i
            greedy = q.detach().argmax(dim=-1).numpy()
            explore = explore_rng.random((b, n)) < hyper.epsilon(step)
            actions = np.where(explore, explore_rng.integers(0, g, (b, n)), greedy)
            t, p = config.grid_point(actions)
            reward = engine.play(batch, config, _given(t, p)).reward
            chosen = q.gather(-1, torch.from_numpy(actions)[..., None]).squeeze(-1)
            q_tot = network.mix(chosen, group)
            td = ((q_tot - torch.from_numpy(reward).float()) ** 2).mean()  # one-step episodes: the target is r
            consistency = ((beliefs - group[:, None]) ** 2).sum(dim=-1).mean()
            loss = td + hyper.consistency_weight * consistency
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            bar.update(1)
            if (step + 1) % hyper.eval_every == 0 or step + 1 == hyper.steps:
                evaluate(step + 1)
    network.eval()
    policy.curve, policy.seconds = curve, time.perf_counter() - start
    return policy, list(curve)
