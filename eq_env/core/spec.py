"""The environment spec: what a game tells the core once, and everything the core derives from it.

A game registers one :class:`EnvSpec` when its package is imported. From it
the core derives the PettingZoo and Gymnasium registrations, the policy
registry's per-game namespace, the runner's agents and seeds, the episode
records and metrics of experiments and sweeps, the CLI's flags and the game's
own commands, and the conformance battery the tests run. The core knows
"agents", "roles", "episodes" and "records", never a game's own terms.

The contract an environment's module (``EnvSpec.entry``) keeps:

* ``env(**kwargs)``, ``parallel_env(**kwargs)`` and ``raw_env(**kwargs)``, taking
  ``config=`` (an instance of ``EnvSpec.config``), ``render_mode=`` and any
  config field as a keyword, and ``observation_mode=`` (``"text"``, the default, or ``"numeric"`` for a game
  with a ``numeric`` adapter: :mod:`eq_env.core.numeric`);
* ``reset(seed=s, options={"episode": i})`` plays episode ``i`` of seed ``s``'s
  stream (the runner plays episodes out of order, concurrently, and resumes
  after a kill), and consecutive ``reset()`` calls after ``reset(seed=s)`` play
  episodes 0, 1, 2... of that stream;
* a legal-action mask, where there is one, under ``"action_mask"`` in the
  observation (a single legal action is taken without asking the policy); an
  agent with nothing to decide has exactly one legal action there, its no-op
  (never a mask of zeros), and an action of the space its mask forbids is
  played by the game's rule (PettingZoo classic's: the episode ends, the
  offender penalised), never a crash, so that mask-unaware utilities run;
* ``state()`` with its ``state_space``;
* in a simultaneous-move game whose phases belong to different roles, ``"idle"``
  set in the observation of an agent with nothing to decide this step: the
  runner plays ``None`` for it, and the environment ignores whatever it is given;
* the raw environment's ``config`` attribute: the configuration it plays.

:mod:`eq_env.core.conformance` checks all of it, with PettingZoo's own tests.
"""

from __future__ import annotations

import argparse
import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from eq_env.core.config import GameConfig

__all__ = [
    "BatchEngine",
    "Command",
    "EnvSpec",
    "default_env",
    "env_spec",
    "register_env",
    "registered_envs",
    "spec_for_config",
]


class BatchEngine(Protocol):
    """A game's vectorised engine: whole runs of scripted policies at once, episode for episode equal to
    the AEC environment."""

    def is_batchable(self, policy: Any) -> bool:
        """The policy can act in bulk."""

    def simulate(self, config: Any, policies: Mapping[str, Any], *, episodes: int, seed: int) -> Mapping[str, Any]:
        """Per-episode columns for ``compute_metrics`` (``policies`` by role)."""


@dataclass(frozen=True)
class Command:
    """A CLI subcommand a game contributes (``eq-env reproduce``...): its flags and what it does.

    ``run`` returns the exit status. ``interrupted`` says what an interrupted run kept.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""
    interrupted: str = "nothing was saved"


@dataclass(frozen=True)
class EnvSpec:
    """Everything the core needs of one game (see the module docstring).

    Attributes:
        id: the registered id, ``"eq_env/<name>-v<N>"``.
        name: its short name (``--env NAME``).
        entry: the versioned module with ``env``, ``parallel_env`` and ``raw_env``.
        config: the game's :class:`~eq_env.core.config.GameConfig` class (its ``PRESETS`` too).
        roles: role → policy seed stream, in the order the roles first act. A role's policies
            draw from ``SeedSequence(seed, spawn_key=(stream,))``, or ``(stream, i)`` for its
            ``i``-th agent when the role has several.
        agents: the agents of each role under a configuration (fixed roles, or N of a role).
        record: the finished episode's record, from the raw environment, the seed, the episode's
            index and what each agent's policy reported (``{agent: info}``).
        record_from_dict: a record back from its JSON dict (a ValueError names a bad field).
        metrics: metric → what it measures; ``compute_metrics`` computes them (NaN where undefined)
            from records, or from a batch engine's columns.
        plot_metrics: the metrics sweeps tabulate and plot by default.
        default_policies: role → the policy spec ``eq-env play`` uses when none is given.
        conformance: name → environment keywords: the configurations the conformance battery runs.
        views: Gymnasium id → ``"module:Class"``: single-agent views of a role, for RL libraries.
        batch: the game's :class:`BatchEngine`, if it has one.
        numeric: the module of the game's :class:`~eq_env.core.numeric.NumericAdapter` (its ``ADAPTER``): what
            ``observation_mode="numeric"`` observes and acts with ("" if the game has no numeric mode).
        cli: the module of the game's command-line parts (imported by the CLI only; "": the module the
            ``eq_env.commands`` entry point named after the game names, as this package's games do): ``COMMANDS``, a
            sequence of :class:`Command` (the subcommands the game contributes), and two optional hooks,
            ``describe_config(config) -> str`` (the parameters ``eq-env play`` shows beside the preset)
            and ``dry_run(config, {role: [specs]}) -> int`` (``--dry-run``: what LLM policies would be
            sent).
        key_env: whether run keys name the game. The first game's keys predate the others and stay
            as they were, so results written before resume.
    """

    id: str
    name: str
    entry: str
    config: type[GameConfig]
    roles: Mapping[str, int]
    agents: Callable[[Any], Mapping[str, tuple[str, ...]]]
    record: Callable[[Any, int, int, Mapping[str, Any]], Any]
    record_from_dict: Callable[[Mapping[str, Any]], Any]
    metrics: Mapping[str, str]
    compute_metrics: Callable[[Any], dict[str, float]]
    plot_metrics: tuple[str, ...] = ()
    default_policies: Mapping[str, str] = field(default_factory=dict)
    conformance: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {"default": {}})
    views: Mapping[str, str] = field(default_factory=dict)
    batch: BatchEngine | None = None
    numeric: str = ""
    cli: str = ""
    key_env: bool = True

    def module(self) -> Any:
        """The versioned module (``env``, ``parallel_env``, ``raw_env``)."""
        return importlib.import_module(self.entry)

    def raw_env(self, config: Any, render_mode: str | None = None) -> Any:
        """A raw AEC environment of this game under ``config``."""
        return self.module().raw_env(config=config, render_mode=render_mode)

    def cli_module(self) -> str:
        """The module of the game's commands and hooks: ``cli``, else the ``eq_env.commands`` entry point named
        after the game ("" when there is neither)."""
        return self.cli or _command_modules().get(self.name, "")

    def commands(self) -> tuple[Command, ...]:
        """The CLI subcommands the game contributes."""
        module = self.cli_module()
        return tuple(importlib.import_module(module).COMMANDS) if module else ()

    def agent_roles(self, config: Any) -> dict[str, str]:
        """agent → role under ``config``."""
        return {agent: role for role, agents in self.agents(config).items() for agent in agents}

    def check_config(self, config: Any) -> None:
        if not isinstance(config, self.config):
            raise TypeError(f"{self.name}: config must be a {self.config.__name__}, got {type(config).__name__}")

    def check_roles(self, roles: Sequence[str]) -> None:
        """Refuse policies for roles the game does not have, and roles left without one."""
        unknown = sorted(set(roles) - set(self.roles))
        missing = [r for r in self.roles if r not in roles]
        if unknown or missing:
            problems = [f"unknown role(s) {unknown}"] if unknown else []
            problems += [f"no policy for {missing}"] if missing else []
            what = "; ".join(problems)
            raise ValueError(f"{self.name}: {what}; its roles: {', '.join(self.roles)}")


_SPECS: dict[str, EnvSpec] = {}


def register_env(spec: EnvSpec) -> EnvSpec:
    """Register ``spec`` (once per id; the first registered game is the default one), with PettingZoo
    (``pettingzoo.make("aec" | "parallel", spec.id)``) and its views with Gymnasium.

    PettingZoo's registry is new in 1.27; under 1.24–1.26 (which AgileRL pins) the game is registered here
    and with Gymnasium only, and is made from its module (``eq_env.<game>_v0.env()`` / ``parallel_env()``)."""
    import gymnasium
    import pettingzoo

    known = _SPECS.get(spec.id)
    if known is not None and known is not spec:
        raise ValueError(f"environment {spec.id!r} is registered already")
    clash = next((s for s in _SPECS.values() if s.name == spec.name and s.id != spec.id), None)
    if clash is not None:
        raise ValueError(f"environment name {spec.name!r} is taken by {clash.id!r}")
    _SPECS[spec.id] = spec
    if hasattr(pettingzoo, "register") and spec.id not in pettingzoo.aec_registry:
        pettingzoo.register("aec", spec.id, entry_point=f"{spec.entry}:env")
        pettingzoo.register("parallel", spec.id, entry_point=f"{spec.entry}:parallel_env")
    for view, entry in spec.views.items():
        if view not in gymnasium.registry:
            gymnasium.register(id=view, entry_point=entry)
    return spec


ENTRY_POINTS = "eq_env.envs"
_entry_points_loaded = False


def _ensure_loaded() -> None:
    """The package's games (registered when ``eq_env`` is imported), then those of installed packages: each
    entry point of the ``eq_env.envs`` group names a module that calls :func:`register_env` when imported.
    An entry point that fails to load is skipped with a warning naming it, not the end of every game."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    load_entry_points(ENTRY_POINTS)


COMMAND_ENTRY_POINTS = "eq_env.commands"


@functools.cache
def _command_modules() -> dict[str, str]:
    """Game name → the module its ``eq_env.commands`` entry point names (read once: the commands layer sits
    above the games, so a game names its commands nowhere in its own code)."""
    from importlib.metadata import entry_points

    return {point.name: point.value for point in entry_points(group=COMMAND_ENTRY_POINTS)}


def load_entry_points(group: str) -> None:
    """Import every module the entry points of ``group`` name, warning (by name) about any that fails."""
    import warnings
    from importlib.metadata import entry_points

    for point in entry_points(group=group):
        try:
            point.load()
        except Exception as err:  # a broken plugin must not break the package, nor hide which it was
            warnings.warn(
                f"the {group} entry point {point.name!r} ({point.value}) failed to load: {type(err).__name__}: {err}",
                stacklevel=2,
            )


def registered_envs(*, installed: bool = True) -> list[EnvSpec]:
    """Every registered game, the default one first (with ``installed``: those of installed packages too,
    loaded from their entry points on first use)."""
    if installed:
        _ensure_loaded()
    return list(_SPECS.values())


def default_env() -> EnvSpec:
    """The default game: the first registered (``eq_env`` registers its games on import)."""
    return next(iter(_SPECS.values()))


def env_spec(env: str | EnvSpec | None = None) -> EnvSpec:
    """The spec of ``env``: its id (``eq_env/<name>-v<N>``) or short name;
    None is the default game."""
    if isinstance(env, EnvSpec):
        return env
    if env is None:
        return default_env()
    _ensure_loaded()
    for spec in _SPECS.values():
        if env in (spec.id, spec.name):
            return spec
    raise ValueError(f"unknown environment {env!r}; registered: {', '.join(s.name for s in _SPECS.values())}")


def spec_for_config(config: Any) -> EnvSpec:
    """The game whose configuration class ``config`` is an instance of."""
    _ensure_loaded()
    for spec in _SPECS.values():
        if isinstance(config, spec.config):
            return spec
    raise TypeError(f"{type(config).__name__} is the configuration of no registered environment")
