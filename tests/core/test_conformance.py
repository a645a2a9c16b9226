"""The conformance battery (:mod:`eq_env.core.conformance`) over every registered game and every
configuration its spec names: a game is tested the day it is registered (the suite's own toy game too)."""

from __future__ import annotations

from typing import Any

import pytest

from eq_env.core import conformance
from eq_env.core.spec import registered_envs

# Warnings PettingZoo's api_test gives for any Dict observation/action space; advice, not failures.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Observation is not a NumPy array"),
    pytest.mark.filterwarnings("ignore:Observation space for each agent probably should be"),
    pytest.mark.filterwarnings("ignore:Action space for each agent probably should be"),
    pytest.mark.filterwarnings("ignore:Agents have different observation space sizes"),
    pytest.mark.filterwarnings("ignore:.*is not a python integer.*"),
]


def _cases() -> list[Any]:
    # The fast run (-m "not slow") plays every check on each game's first configuration and the cheap checks on
    # all of them; the pickle/deepcopy check, which plays 80 episodes, runs on the others in the full suite.
    return [
        pytest.param(spec.id, kwargs, check, id=f"{spec.name}-{name}-{check.__name__.removeprefix('check_')}",
                     marks=[pytest.mark.slow] if i > 0 and check is conformance.check_copies else [])
        for spec in registered_envs()
        for i, (name, kwargs) in enumerate(spec.conformance.items())
        for check in conformance.CHECKS
    ]  # fmt: skip


@pytest.mark.parametrize("env_id, kwargs, check", _cases())
def test_conformance(env_id: str, kwargs: dict[str, Any], check: Any) -> None:
    check(env_id, kwargs)


def test_every_registered_game_is_covered() -> None:
    names = {spec.name for spec in registered_envs()}
    assert {"exchange-audit", "relay"} <= names  # (the package's game and the suite's own)
    assert all(spec.conformance for spec in registered_envs())
