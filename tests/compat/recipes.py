"""What the compatibility tests share: the games and the libraries they need.

The games play in their numeric observation mode (``observation_mode="numeric"``): each agent observes
``Dict({"observation": Box(float32, (L,)), "action_mask": Box(0, 1, (A,), int8)})`` and acts in
``Discrete(A)``, where L and A may differ between roles (exchange–audit: the proposer's and the
validator's). The two steps the libraries' PettingZoo recipes need for a ``Dict`` observation, one space for
every agent, are the package's own (:mod:`eq_env.core.padding`): ``eq_env.pad_numeric`` (SuperSuit's
parameter sharing, Tianshou's ``PettingZooEnv``) and ``eq_env.flatten_numeric`` (one ``Box`` for
``agent_indicator_v0`` and SB3's ``MlpPolicy``), as the README's "Using eq_env with SuperSuit/SB3, TorchRL,
Tianshou" shows.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

import pytest

from eq_env.core.spec import EnvSpec, registered_envs

REQUIRE = "EQ_ENV_REQUIRE_COMPAT"  # "1" (.ci/compat sets it): a missing library fails the run, never skips it


def need(*modules: str) -> None:
    """Skip the calling test module, saying which libraries it needs and how to install them, when one is
    missing — or fail it where ``EQ_ENV_REQUIRE_COMPAT=1`` (CI must run these tests, not skip them)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    why = f"needs {', '.join(missing)}: pip install '.[compat]' (or run .ci/compat)"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but the compatibility tests {why}", pytrace=False)
    pytest.skip(why, allow_module_level=True)


def games() -> list[EnvSpec]:
    """Every game of the package (not the test suite's toy game), each with a ``numeric`` configuration."""
    return [spec for spec in registered_envs(installed=False) if spec.entry.startswith("eq_env.")]


def numeric_kwargs(spec: EnvSpec) -> dict[str, Any]:
    """The game's ``numeric`` configuration of its conformance battery (a KeyError if it has none)."""
    kwargs = dict(spec.conformance["numeric"])
    assert kwargs["observation_mode"] == "numeric", spec.name
    return kwargs


def aec_env(spec: EnvSpec, **extra: Any) -> Any:
    """The game's AEC environment (``eq_env.<game>_v0.env``) in the numeric mode."""
    return spec.module().env(**numeric_kwargs(spec), **extra)


def parallel_env(spec: EnvSpec, **extra: Any) -> Any:
    """The game's parallel environment (``eq_env.<game>_v0.parallel_env``) in the numeric mode."""
    return spec.module().parallel_env(**numeric_kwargs(spec), **extra)
