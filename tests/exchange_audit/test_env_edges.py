"""PettingZoo API edges of the exchange-audit environment: misuse gets a clear error, not an internal one."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from eq_env import exchange_audit_v0

AGENTS = "agents: proposer_0, validator_0"


@pytest.mark.parametrize("make", [exchange_audit_v0.raw_env, exchange_audit_v0.env])  # the wrapped one too
def test_last_and_observe_before_reset_say_to_reset_first(make: Any) -> None:
    env = make()
    with pytest.raises(RuntimeError, match=r"call reset\(\) before last\(\)"):
        env.last()
    for agent in ("proposer_0", "validator_0"):
        with pytest.raises(RuntimeError, match=r"call reset\(\) before observe\(\)"):
            env.observe(agent)
    env.reset(seed=0)
    obs, reward, termination, truncation, _ = env.last()
    assert int(obs["phase"]) == 0 and reward == 0.0 and not (termination or truncation)


@pytest.mark.parametrize("make", [exchange_audit_v0.raw_env, exchange_audit_v0.env])
def test_observe_an_unknown_agent_names_the_agents(make: Any) -> None:
    env = make()
    env.reset(seed=0)
    for nobody in ("nobody", "proposer_1", 0):
        with pytest.raises(ValueError, match=rf"unknown agent {nobody!r}; {AGENTS}"):
            env.observe(nobody)
        with pytest.raises(KeyError, match=rf"unknown agent {nobody!r}; {AGENTS}"):  # still a KeyError, as before
            env.observation_space(nobody)
    assert "ambiguous" in env.observe("validator_0") and "ambiguous" not in env.observe("proposer_0")


BAD_SEEDS = [True, False, 1.5, -1, "3", np.float64(2.0), [1, 2]]


@pytest.mark.parametrize("make", [exchange_audit_v0.raw_env, exchange_audit_v0.env, exchange_audit_v0.parallel_env])
@pytest.mark.parametrize("seed", BAD_SEEDS, ids=repr)
def test_reset_refuses_a_seed_that_is_not_a_non_negative_integer(make: Any, seed: Any) -> None:
    env = make()
    with pytest.raises(ValueError, match=re.escape(f"seed must be a non-negative integer or None, got {seed!r}")):
        env.reset(seed=seed)


def test_reset_accepts_numpy_integers_and_none() -> None:
    env = exchange_audit_v0.raw_env()
    env.reset(seed=np.int64(5))
    first = env.observe("proposer_0")
    env.reset(seed=5)
    assert all(np.array_equal(first[k], v) for k, v in env.observe("proposer_0").items())
    env.reset(seed=None)
    env.reset()
