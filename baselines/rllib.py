"""Multi-agent training of any game with RLlib (PPO, new API stack), and its checkpoints as policies.

:func:`train` trains every role of a game at once in RLlib's ``PettingZooEnv`` around the game's
numeric adapter (:mod:`eq_env.core.numeric`; the game's ``numeric`` module): one PPO module per role,
or one shared by symmetric roles (the Einstein puzzle's two seats, belief coordination's executors). It
writes into a directory:

* ``checkpoint/`` (RLlib's), ``policy.json`` (game, configuration, role → module, seed, iterations);
* ``learning_curve.csv`` and ``learning_curve.png`` (mean episode return of each module per iteration);
* ``eval.json`` (the runner's metrics on held-out seeds, every role played by its trained module).

A checkpoint is a policy like any other: the spec ``rllib:path=DIR`` for any of the game's roles
(registered with the game's baselines), acting on the most likely action (``rllib:path=DIR,deterministic=false``
draws from the module's distribution with the policy's own generator, seeded by ``reset``).

Ray is imported only when training or loading (``pip install 'eq-env[rllib]'``); RLlib's own logs go
to ``DIR/ray_logs``, never ``~/ray_results``. Training runs on a Ray instance started for it on this
machine, or on the cluster at ``ray_address`` (its env runners go wherever Ray places them).
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.core.numeric import NumericAdapter, NumericAECEnv, numeric_adapter

__all__ = [
    "EVAL_SEEDS",
    "RLlibNumericEnv",
    "RLlibPolicy",
    "RLlibResult",
    "adapter",
    "rllib_keys",
    "rllib_missing",
    "rllib_policy_for",
    "train",
    "training_seeds",
]

EVAL_SEEDS = (1000, 1001, 1002)  # held out: training plays the seeds of training_seeds(seed, ...), refused here
RLLIB_ENV = "eq_env_numeric"
# RLlib's action-masking modules read a masked observation's features under "observations"; the games' adapters
# (and PettingZoo) say "observation": the key is renamed here, on RLlib's side only.
RLLIB_FEATURES_KEY = "observations"


def rllib_keys(x: Any) -> Any:
    """A numeric observation, or its space, under RLlib's keys (a masked one's ``"observation"`` as
    ``"observations"``); anything else as it is."""
    from gymnasium import spaces

    def key(k: str) -> str:
        return RLLIB_FEATURES_KEY if k == "observation" else k

    if isinstance(x, spaces.Dict):
        return spaces.Dict({key(k): v for k, v in x.spaces.items()})
    if isinstance(x, Mapping):
        return {key(k): v for k, v in x.items()}
    return x


class RLlibNumericEnv(NumericAECEnv):  # type: ignore[misc]
    """The game's :class:`NumericAECEnv` under RLlib's keys (:func:`rllib_keys`): what ``PettingZooEnv`` wraps."""

    def __init__(self, adapter: NumericAdapter, config: Any = None) -> None:
        super().__init__(adapter, config)
        self._observation_spaces = {a: rllib_keys(s) for a, s in self._observation_spaces.items()}

    def observe(self, agent: str) -> Any:
        return rllib_keys(super().observe(agent))


# What RLlib needs beyond Ray core: plain `ray` ships the ray.rllib sources without them, so finding
# ray.rllib alone does not tell that the rllib extra is there (dm-tree is `tree`; Tune needs pyarrow).
RLLIB_MODULES = ("ray.rllib", "tree", "pyarrow")


def rllib_missing() -> str | None:
    """What to install for RLlib training, one line, or None (looked up without importing Ray)."""
    for module in RLLIB_MODULES:
        if not _installed(module):
            return (
                "--backend rllib needs RLlib, which is not installed (no module "
                f"{module!r}): pip install 'eq-env[rllib]'"
            )
    return None


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing any package it is in.

    ``importlib.util.find_spec("ray.rllib")`` imports ``ray`` to find ``ray.rllib``, and Ray reads its
    authentication mode when imported: Ray imported here, before :func:`~eq_env.core.executors.ray_connected`
    put the token of the instance it starts in the environment, left the driver without it
    (``InvalidAuthToken``, every local ``--backend rllib`` training). The submodules are looked up in
    their parent's directories instead."""
    top, *subs = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except ValueError:  # imported without a spec (a stand-in): not the real package
        return False
    for sub in subs:
        locations = spec.submodule_search_locations if spec is not None else None
        spec = importlib.machinery.PathFinder.find_spec(sub, list(locations)) if locations else None
    return spec is not None


def adapter(env: Any) -> NumericAdapter:
    """The numeric adapter of the game ``env`` (an id, short name or spec), as its spec names it
    (``EnvSpec.numeric``: :func:`eq_env.core.numeric.numeric_adapter`)."""
    return numeric_adapter(env)


def training_seeds(seed: int, env_runners: int, envs_per_runner: int) -> range:
    """The seeds whose episode streams training plays: one per environment, each environment its own.

    A game reset with a seed and then without one plays that seed's episodes in order, as the runner does.
    RLlib resets environment ``i`` of env runner ``w`` with ``seed + w + i`` (runners from 1; 0 is the
    driver's), so two runners would replay the same streams; :func:`_stream_seed` moves runner ``w`` to
    its own block of ``envs_per_runner`` seeds (runner 1 keeps RLlib's).
    """
    first = seed if env_runners == 0 else seed + 1
    return range(first, first + max(env_runners, 1) * envs_per_runner)


def _stream_seed(rllib_seed: int, *, seed: int, worker: int, envs_per_runner: int) -> int:
    """The seed of the environment RLlib resets with ``rllib_seed`` (``seed + worker + i``) in runner ``worker``:
    ``training_seeds(...)[(worker - 1) * envs_per_runner + i]``."""
    if worker == 0:
        return rllib_seed
    return rllib_seed + (worker - 1) * (envs_per_runner - 1)


def _check_held_out(seed: int, env_runners: int, envs_per_runner: int, eval_seeds: Sequence[int]) -> None:
    trained = training_seeds(seed, env_runners, envs_per_runner)
    shared = sorted(s for s in set(eval_seeds) if s in trained)
    if shared:
        raise ValueError(
            f"--eval-seeds {','.join(map(str, shared))} would evaluate on training episodes: --seed "
            f"{seed} with {max(env_runners, 1)} x {envs_per_runner} environments trains on seeds "
            f"{trained.start}-{trained.stop - 1}; choose held-out seeds outside them"
        )


def _check_cpus(env_runners: int, cpus: float) -> None:
    """Each env runner takes a CPU of its own: more runners than the cluster's CPUs would wait for ever."""
    if env_runners > cpus:
        raise ValueError(
            f"--env-runners {env_runners} needs {env_runners} CPUs (one per runner), the Ray cluster has "
            f"{cpus:g}: at most {int(cpus)}"
        )


@functools.cache
def _seeded_env_class() -> type:
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv  # type: ignore[import-not-found]

    class SeededPettingZooEnv(PettingZooEnv):  # type: ignore[misc]
        """RLlib's ``PettingZooEnv``, its reset seed moved to the environment's own stream (:func:`_stream_seed`)."""

        def __init__(self, env: RLlibNumericEnv, stream: Any) -> None:
            super().__init__(env)
            self._stream = stream

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
            return super().reset(seed=None if seed is None else self._stream(seed), options=options)

    return SeededPettingZooEnv


def _make_env(env_config: Mapping[str, Any]) -> Any:
    """RLlib's environment creator: runs in each env runner, so it imports the game there (an id string
    alone is unknown to a fresh Ray worker)."""
    import eq_env  # noqa: F401 - registers the games
    from eq_env.core.spec import env_spec

    spec = env_spec(env_config["env"])
    stream = functools.partial(
        _stream_seed,
        seed=env_config["seed"],
        worker=getattr(env_config, "worker_index", 0),
        envs_per_runner=env_config["envs_per_runner"],
    )
    return _seeded_env_class()(RLlibNumericEnv(adapter(spec.id), spec.config.from_dict(env_config["config"])), stream)


def _module_of(modules: Mapping[str, str], agent_id: str, *args: Any, **kwargs: Any) -> str:
    return modules[agent_id]


@dataclass
class RLlibResult:
    path: Path
    env: str
    iterations: int
    seconds: float
    curve: list[dict[str, float]]
    evaluation: dict[str, tuple[float, float]]

    def table(self) -> str:
        from eq_env.core.report import no_negative_zeros
        from eq_env.core.runner import format_metrics_table

        return no_negative_zeros(format_metrics_table(self.evaluation))


def _ppo_config(
    spec: Any,
    config: Any,
    agent_modules: dict[str, str],
    *,
    role_modules: Mapping[str, str] | None = None,
    seed: int,
    env_runners: int,
    envs_per_runner: int,
    batch: int,
) -> Any:
    from ray.rllib.algorithms.ppo import PPOConfig  # type: ignore[import-not-found]
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec  # type: ignore[import-not-found]
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # type: ignore[import-not-found]
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (  # type: ignore[import-not-found]
        ActionMaskingTorchRLModule,
    )

    numeric = adapter(spec.id)
    specs = {}
    for role, module in (numeric.modules if role_modules is None else role_modules).items():
        masked = hasattr(numeric.observation_space(role, config), "spaces")  # {"action_mask", "observation"}
        specs[module] = RLModuleSpec(
            module_class=ActionMaskingTorchRLModule if masked else None, model_config={"fcnet_hiddens": [64, 64]}
        )
    env_config = {"env": spec.id, "config": config.to_dict(), "seed": seed, "envs_per_runner": envs_per_runner}
    return (
        PPOConfig()
        .environment(RLLIB_ENV, env_config=env_config)
        # sorted, not a set: RLlib builds and updates the modules in this order, and a set of names has the order
        # of the process's string hashes (belief coordination's checkpoint differed from one process to the next)
        .multi_agent(policies=sorted(specs), policy_mapping_fn=functools.partial(_module_of, agent_modules))
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        # sample_timeout_s=None: wait for the runners' samples. RLlib's default (60 s) drops a sample that takes
        # longer, and that iteration trains on nothing (a warning below log_level ERROR): a belief-coordination
        # iteration on two busy cores took 66-70 s, so the same seed gave another policy on a loaded machine.
        .env_runners(
            num_env_runners=env_runners,
            num_envs_per_env_runner=envs_per_runner,
            num_cpus_per_env_runner=1,
            sample_timeout_s=None,
        )
        .learners(num_learners=0)
        .training(
            train_batch_size_per_learner=batch,
            minibatch_size=max(32, batch // 4),
            num_epochs=5,
            lr=5e-4,
            entropy_coeff=0.01,
        )
        .debugging(seed=seed, log_level="ERROR")
    )


def _build(ppo: Any, logs: Path) -> Any:
    """The algorithm, its trial directory under ``logs``: RLlib has no option for it and would make one in
    ``~/ray_results`` (``ray.train.constants.DEFAULT_STORAGE_PATH``, read when the algorithm is built)."""
    from ray.tune.trainable import trainable  # type: ignore[import-not-found]

    logs.mkdir(exist_ok=True)
    default, trainable.DEFAULT_STORAGE_PATH = trainable.DEFAULT_STORAGE_PATH, str(logs)
    try:
        return ppo.build_algo()
    finally:
        trainable.DEFAULT_STORAGE_PATH = default


def _curve_row(iteration: int, result: Mapping[str, Any], seconds: float, modules: Sequence[str]) -> dict[str, float]:
    runners = result.get("env_runners", {})
    returns = runners.get("module_episode_returns_mean", {})
    row = {
        "iteration": float(iteration),
        "env_steps": float(runners.get("num_env_steps_sampled_lifetime", np.nan)),
        "seconds": round(seconds, 3),
    }
    for module in modules:
        row[f"return_{module}"] = float(returns.get(module, np.nan))
    return row


def _write_curve(out: Path, curve: list[dict[str, float]], modules: Sequence[str], title: str) -> None:
    from eq_env.core.report import plot_lines, write_csv

    columns = ["iteration", "env_steps", "seconds", *(f"return_{m}" for m in modules)]
    write_csv(out / "learning_curve.csv", curve, columns)
    if curve:
        series = [
            {
                "label": m,
                "x": [r["iteration"] for r in curve],
                "y": [r[f"return_{m}"] for r in curve],
                "style": {"fmt": "-o"},
            }
            for m in modules
        ]
        panel = {"ylabel": "mean episode return", "series": series}
        plot_lines(out / "learning_curve.png", [panel], xlabel="iteration", title=title)


def train(
    env: Any,
    out: str | Path,
    *,
    iterations: int = 15,
    seed: int = 0,
    config: Any = None,
    ray_address: str | None = None,
    num_cpus: int | None = None,
    env_runners: int = 1,
    envs_per_runner: int = 32,
    batch: int = 2000,
    eval_seeds: Sequence[int] = EVAL_SEEDS,
    eval_episodes: int = 500,
    progress: bool | None = None,
    modules: Mapping[str, str] | None = None,
) -> RLlibResult:
    """Train every role of the game ``env`` for ``iterations`` PPO iterations (see the module docstring);
    ``eval_seeds`` must lie outside :func:`training_seeds`. ``modules``: role → module, instead of the game's
    (e.g. ``{"player_0": "player_0", "player_1": "player_1"}``: the Einstein seats as independent learners,
    where the game shares one module between them)."""
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"iterations must be a positive integer, got {iterations!r}")
    _check_held_out(seed, env_runners, envs_per_runner, eval_seeds)
    missing = rllib_missing()
    if missing:
        raise ValueError(missing)
    from eq_env.core.executors import ray_connected
    from eq_env.core.spec import env_spec

    spec = env_spec(env)
    numeric = adapter(spec.id)
    role_modules = dict(numeric.modules if modules is None else modules)
    if sorted(role_modules) != sorted(numeric.modules):
        raise ValueError(f"modules must map each of the roles {sorted(numeric.modules)}, got {sorted(role_modules)}")
    config = config if config is not None else spec.config()
    agent_modules = {agent: role_modules[role] for agent, role in spec.agent_roles(config).items()}
    module_ids = sorted(set(agent_modules.values()))
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    curve: list[dict[str, float]] = []
    with ray_connected(ray_address, num_cpus=num_cpus) as ray:
        _check_cpus(env_runners, ray.cluster_resources().get("CPU", 0))
        from ray.tune.registry import register_env  # type: ignore[import-not-found]

        register_env(RLLIB_ENV, _make_env)
        ppo = _ppo_config(
            spec,
            config,
            agent_modules,
            role_modules=role_modules,
            seed=seed,
            env_runners=env_runners,
            envs_per_runner=envs_per_runner,
            batch=batch,
        )
        algo = _build(ppo, out / "ray_logs")
        started = time.perf_counter()
        try:
            for i in range(1, iterations + 1):
                curve.append(_curve_row(i, algo.train(), time.perf_counter() - started, module_ids))
                if progress is not False:
                    shown = ", ".join(f"{m} {curve[-1][f'return_{m}']:.3f}" for m in module_ids)
                    print(f"iteration {i}/{iterations}: {shown} ({curve[-1]['seconds']:.1f} s)", flush=True)
            seconds = time.perf_counter() - started
            algo.save_to_path(str(out / "checkpoint"))
        finally:
            algo.stop()
    meta = {
        "env": spec.id,
        "config": config.to_dict(),
        "modules": role_modules,
        "seed": seed,
        "iterations": iterations,
        "seconds": seconds,
        "algo": "ppo",
        "library": "rllib",
    }
    (out / "policy.json").write_text(json.dumps(meta, indent=2) + "\n")
    _write_curve(out, curve, module_ids, f"{spec.name}: RLlib PPO, seed {seed}")
    summary = evaluate(out, eval_seeds=eval_seeds, eval_episodes=eval_episodes, progress=progress)
    return RLlibResult(out, spec.id, iterations, seconds, curve, summary)


def evaluate(
    out: Path, *, eval_seeds: Sequence[int] = EVAL_SEEDS, eval_episodes: int = 500, progress: bool | None = None
) -> dict[str, tuple[float, float]]:
    """The runner's metrics on held-out seeds with every role played by its trained module; ``eval.json``."""
    from eq_env.core.report import json_number
    from eq_env.core.runner import evaluate as run_evaluation
    from eq_env.core.spec import env_spec

    meta = json.loads((out / "policy.json").read_text())
    spec = env_spec(meta["env"])
    config = spec.config.from_dict(meta["config"])
    policies = {role: RLlibPolicy(out, role) for role in spec.roles}
    ev = run_evaluation(spec.id, config, policies, episodes=eval_episodes, seeds=list(eval_seeds), progress=progress)
    summary = ev.summary
    (out / "eval.json").write_text(
        json.dumps(
            {
                "seeds": list(eval_seeds),
                "episodes": eval_episodes,
                "policy": "greedy",  # every role plays its module's most likely action
                "metrics": {k: {"mean": json_number(m), "std": json_number(s)} for k, (m, s) in summary.items()},
            },
            indent=2,
        )
        + "\n"
    )
    return summary


class RLlibPolicy:
    """One role of a game played by its module of an RLlib checkpoint written by :func:`train`.

    Args:
        path: the directory :func:`train` wrote (``checkpoint/`` and ``policy.json``).
        role: the role to play (its module: ``policy.json``'s ``modules``).
        deterministic: the most likely action (default), else one drawn from the module's distribution
            (masked actions excluded) with the policy's own generator, seeded by ``reset``: the same seed plays
            the same games.
    """

    def __init__(self, path: str | Path, role: str, deterministic: bool = True) -> None:
        if not isinstance(deterministic, bool):
            raise ValueError(f"deterministic must be true or false, got {deterministic!r}")
        self.deterministic = deterministic
        self.rng = np.random.default_rng()
        self.path = Path(path)
        self.meta = _training_meta(self.path)
        if role not in self.meta["modules"]:
            roles = ", ".join(self.meta["modules"])
            raise ValueError(f"{self.path} has no module for role {role!r}; its roles: {roles}")
        self.role = role
        self.module_id = self.meta["modules"][role]
        where = self.path / "checkpoint" / "learner_group" / "learner" / "rl_module" / self.module_id
        if not where.is_dir():
            raise ValueError(
                f"{self.path} has no checkpoint of module {self.module_id!r} ({where} is missing): train it again"
            )
        missing = rllib_missing()
        if missing:
            raise ValueError(missing.replace("--backend rllib", "an rllib policy"))
        self.adapter = adapter(self.meta["env"])
        from eq_env.core.spec import env_spec

        trained = env_spec(self.meta["env"]).config.from_dict(self.meta["config"])
        self._shapes = _shapes(self.adapter.observation_space(role, trained))
        space: Any = self.adapter.action_space(role, trained)
        # (the logits' split: one categorical per sub-action; sampled here, not by torch's global generator)
        self._nvec = [int(space.n)] if hasattr(space, "n") else [int(k) for k in np.ravel(space.nvec)]
        import torch
        from ray.rllib.core.rl_module.rl_module import RLModule  # type: ignore[import-not-found]

        torch.set_num_threads(1)
        self.module = RLModule.from_checkpoint(str(where.resolve()))  # (RLlib reads a relative path as a URI)
        self.module.eval()
        self._dist = self.module.get_inference_action_dist_cls()

    def __repr__(self) -> str:
        how = "greedy" if self.deterministic else "sampled"  # (what a score of it must say: eq-env play prints this)
        return f"RLlibPolicy({str(self.path)!r}, role={self.role!r}, {how})"

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Mapping[str, Any]) -> Any:
        import torch

        numeric = self.adapter.observe(self.role, observation)
        if _shapes(numeric) != self._shapes:
            raise ValueError(
                f"rllib:path={self.path} was trained on another configuration of the game ({self.role}'s "
                f"observation {_shapes(numeric)}, trained on {self._shapes}; its policy.json has the "
                "configuration): train it on this one"
            )
        if isinstance(numeric, Mapping):
            obs: Any = {k: torch.from_numpy(np.array(v, np.float32))[None] for k, v in rllib_keys(numeric).items()}
        else:
            obs = torch.from_numpy(np.array(numeric, np.float32))[None]
        with torch.no_grad():
            logits = self.module.forward_inference({"obs": obs})["action_dist_inputs"]
            if self.deterministic:
                action = self._dist.from_logits(logits).to_deterministic().sample()[0].numpy()
            else:
                action = self._sample(logits[0].numpy().astype(np.float64))
        return self.adapter.env_action(self.role, action, observation)

    def _sample(self, logits: np.ndarray) -> Any:
        """One draw per categorical of the logits (a masked action's logit is the float's lowest: never drawn)."""
        drawn = []
        for part in np.split(logits, np.cumsum(self._nvec)[:-1]):
            p = np.exp(part - part.max())
            drawn.append(int(self.rng.choice(part.size, p=p / p.sum())))
        return np.int64(drawn[0]) if len(drawn) == 1 else np.array(drawn, np.int64)


def _training_meta(path: Path) -> dict[str, Any]:
    """``policy.json`` of the RLlib training in ``path``, or a one-line refusal."""
    meta_path = path / "policy.json"
    try:
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else None
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{meta_path} is not valid JSON ({err}): train again into {path}") from None
    if not isinstance(meta, dict) or meta.get("library") != "rllib" or not isinstance(meta.get("modules"), dict):
        raise ValueError(
            f"{path} is not an RLlib training: no policy.json of one (train one with eq-env train --backend rllib)"
        )
    return meta


def _shapes(x: Any) -> Any:
    """The shape of a numeric observation or space (a dict of them for a masked one)."""
    if isinstance(x, Mapping) or hasattr(x, "spaces"):
        items = x.spaces.items() if hasattr(x, "spaces") else x.items()
        return {k: _shapes(v) for k, v in items}
    return tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape)


def rllib_policy_for(role: str) -> Any:
    """The policy factory ``rllib:path=DIR`` of ``role`` (registered by each game's baselines)."""

    def factory(path: str, deterministic: bool = True) -> RLlibPolicy:
        return RLlibPolicy(path, role, deterministic)

    factory.__doc__ = f"The {role} of an RLlib training (eq-env train --backend rllib), loaded from its directory."
    return factory


# ---------------------------------------------------------------------------
# eq-env train --backend rllib (each game's train command)
# ---------------------------------------------------------------------------
RLLIB_DEFAULTS = {"iterations": 15, "env_runners": 1, "envs_per_runner": 32}
RLLIB_FLAGS = (*RLLIB_DEFAULTS, "ray_address")  # the flags add_rllib_flags adds, as attributes (besides --env)


def add_rllib_flags(parser: Any, *, unset: bool = False) -> None:
    """``--iterations``, ``--env-runners``, ``--envs-per-runner``, ``--ray-address`` of ``--backend rllib``.

    With ``unset``, a flag not given is None, so that a command with other backends can refuse it there
    (:func:`eq_env.core.cli.given_flags`); :func:`fill_rllib_defaults` then sets the defaults before RLlib
    trains."""
    from eq_env.core.cli import int_in, ray_address_arg
    from eq_env.core.spec import registered_envs

    default = dict.fromkeys(RLLIB_DEFAULTS) if unset else RLLIB_DEFAULTS
    names = [s.name for s in registered_envs()] + [s.id for s in registered_envs()]
    parser.add_argument("--env", choices=names, metavar="NAME", help="the game (its short name or id)")
    group = parser.add_argument_group("with --backend rllib (every role at once; pip install 'eq-env[rllib]')")
    group.add_argument(
        "--iterations", type=int_in(1, 100_000), default=default["iterations"], help="PPO iterations (default 15)"
    )
    group.add_argument(
        "--env-runners",
        type=int_in(0, 1024),
        default=default["env_runners"],
        help="Ray actors stepping environments, a CPU each (default 1; 0: in the driver)",
    )
    group.add_argument(
        "--envs-per-runner",
        type=int_in(1, 4096),
        default=default["envs_per_runner"],
        help="environments each runner steps together (default 32)",
    )
    group.add_argument(
        "--ray-address",
        type=ray_address_arg,
        metavar="ADDR",
        help="join the Ray cluster at HOST:PORT (its head), or auto; default: a Ray instance on "
        "this machine for the command",
    )


def fill_rllib_defaults(args: Any) -> None:
    """The defaults of the RLlib flags ``add_rllib_flags(..., unset=True)`` left None."""
    for name, value in RLLIB_DEFAULTS.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)


def run_from_args(env: str, args: Any, config: Any) -> int:
    """``eq-env train --backend rllib``: train, print the curve's ends, the policy spec and the evaluation."""
    missing = rllib_missing()
    if missing:
        raise ValueError(missing)
    result = train(
        env,
        args.out,
        iterations=args.iterations,
        seed=args.seed,
        config=config,
        ray_address=args.ray_address,
        env_runners=args.env_runners,
        envs_per_runner=args.envs_per_runner,
        eval_seeds=args.eval_seeds,
        eval_episodes=args.eval_episodes,
        progress=None,
    )
    meta = json.loads((result.path / "policy.json").read_text())
    print(
        f"trained {', '.join(meta['modules'])} with RLlib PPO for {result.iterations} iterations in "
        f"{result.seconds:.1f} s; saved to {result.path} (learning_curve.csv/.png, eval.json)"
    )
    from eq_env.core.spec import env_spec

    spec = env_spec(env)
    # the checkpoint plays the configuration it was trained on: name the flags that differ from the defaults
    defaults = spec.config().to_dict()
    flags = [_flag(k, v) for k, v in meta["config"].items() if defaults.get(k) != v]
    roles = " ".join(f"--{role} rllib:path={result.path}" for role in meta["modules"])
    print(
        f"use it anywhere a policy goes, on the configuration it was trained on, e.g. eq-env play --env "
        f"{spec.name} {' '.join(flags)}{' ' if flags else ''}{roles}"
    )
    print(
        f"evaluation on held-out seeds {', '.join(map(str, args.eval_seeds))}, {args.eval_episodes} episodes each, "
        "every role greedy (its module's most likely action); mean ± std over the seeds:\n"
    )
    print(result.table())
    return 0


def _flag(name: str, value: Any) -> str:
    """The command-line flag that sets configuration field ``name`` to ``value`` (a true-or-false one bare)."""
    flag = name.replace("_", "-")
    if isinstance(value, bool):
        return f"--{flag}" if value else f"--no-{flag}"
    return f"--{flag} {value}"
