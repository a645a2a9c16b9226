"""What the compatibility tests share: the games, the libraries they need, and the two steps the libraries'
PettingZoo recipes need that the libraries do not have for a ``Dict`` observation.

The games play in their numeric observation mode (``observation_mode="numeric"``): each agent observes
``Dict({"observation": Box(float32, (L,)), "action_mask": Box(0, 1, (A,), int8)})`` and acts in
``Discrete(A)``, where L and A may differ between roles (exchange–audit: the proposer's and the
validator's). SuperSuit's ``pad_observations_v0`` and ``agent_indicator_v0`` take ``Box``/``Discrete``
spaces only, so:

* :func:`pad_numeric` pads both parts of the ``Dict`` to the largest L and A (padded actions masked out:
  a library that reads the mask never picks one) and then the action spaces with SuperSuit's
  ``pad_action_space_v0`` — what SuperSuit's parameter-sharing recipe and Tianshou's ``PettingZooEnv``
  (one space for every agent) need;
* :func:`flatten_numeric` makes the padded ``Dict`` one ``Box`` (features, then the mask), which
  ``agent_indicator_v0`` and SB3's ``MlpPolicy`` take.

The README's "Using eq_env with SuperSuit/SB3, TorchRL, Tianshou" shows the same steps.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

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


def padded_space(env: Any) -> spaces.Dict:
    """One numeric ``Dict`` space for every agent of ``env``: features padded with zeros to the largest L (bounds
    the union of the agents'), the mask to the largest A."""
    agents = env.possible_agents
    boxes = [env.observation_space(a)["observation"] for a in agents]
    length = max(box.shape[0] for box in boxes)
    actions = max(int(env.action_space(a).n) for a in agents)
    low = np.min([np.pad(box.low, (0, length - box.shape[0])) for box in boxes], axis=0)
    high = np.max([np.pad(box.high, (0, length - box.shape[0])) for box in boxes], axis=0)
    return spaces.Dict(
        {
            "observation": spaces.Box(low, high, (length,), np.float32),
            "action_mask": spaces.Box(0, 1, (actions,), np.int8),
        }
    )


def pad_numeric(env: Any) -> Any:
    """``env`` (AEC or parallel, numeric mode) with one observation and one action space for every agent."""
    import supersuit as ss

    space = padded_space(env)
    length, actions = space["observation"].shape[0], space["action_mask"].shape[0]

    def pad(obs: Mapping[str, np.ndarray], _space: Any) -> dict[str, np.ndarray]:
        features, mask = obs["observation"], obs["action_mask"]
        return {
            "observation": np.pad(features, (0, length - len(features))),
            "action_mask": np.pad(mask, (0, actions - len(mask))),
        }

    return ss.pad_action_space_v0(ss.observation_lambda_v0(env, pad, lambda _space: space))


def flatten_numeric(env: Any) -> Any:
    """A :func:`pad_numeric` ``env`` whose observation is one ``Box``: the features, then the mask (as floats)."""
    import supersuit as ss

    space = env.observation_space(env.possible_agents[0])
    features, mask = space["observation"], space["action_mask"]
    box = spaces.Box(
        np.concatenate([features.low, np.zeros(mask.shape, np.float32)]),
        np.concatenate([features.high, np.ones(mask.shape, np.float32)]),
        dtype=np.float32,
    )

    def flat(obs: Mapping[str, np.ndarray], _space: Any) -> np.ndarray:
        return np.concatenate([obs["observation"], obs["action_mask"].astype(np.float32)])

    return ss.observation_lambda_v0(env, flat, lambda _space: box)
