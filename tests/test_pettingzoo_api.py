"""PettingZoo's own test battery over every registered environment and several configurations.

The ids come from ``eq_env.ENV_IDS``, so an environment is tested the day it
is registered.
"""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import numpy as np
import pettingzoo
import pytest
from gymnasium.utils.env_checker import data_equivalence

import eq_env

with warnings.catch_warnings():
    # pettingzoo.test imports a classic environment that warns on import.
    warnings.simplefilter("ignore")
    from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

# Warnings PettingZoo's api_test gives for any Dict observation/action space;
# they are advice for single-array environments, not failures.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Observation is not a NumPy array"),
    pytest.mark.filterwarnings("ignore:Observation space for each agent probably should be"),
    pytest.mark.filterwarnings("ignore:Action space for each agent probably should be"),
    pytest.mark.filterwarnings("ignore:Agents have different observation space sizes"),
]

CONFIGS: dict[str, dict[str, Any]] = {
    "paper": {},
    "never-audited": {"q": 0.0},
    "always-audited-spot-check": {"q": 1.0, "B": 1},
    "budget-zero": {"q": 1.0, "B": 0},
    "all-ambiguous-no-text": {"ambiguous_rate": 1.0, "max_words": 0},
    "temptation-individual": {"V": 2.0, "L": 1.0, "reward_mode": "individual"},
    "noisy-hidden-compliance": {"noise_sd": 1.0, "reveal_compliance": False, "ambiguous_rate": 0.0},
    "paper-main-script": {"preset": "paper_main_script", "B": None},
}
IDS = list(eq_env.ENV_IDS)


def _cases() -> list[Any]:
    return [
        pytest.param(env_id, kw, id=f"{env_id.split('/')[-1]}-{name}") for env_id in IDS for name, kw in CONFIGS.items()
    ]


@pytest.mark.parametrize("env_id, kwargs", _cases())
def test_api(env_id: str, kwargs: dict[str, Any]) -> None:
    api_test(pettingzoo.make("aec", env_id, **kwargs), num_cycles=300)


@pytest.mark.parametrize("env_id, kwargs", _cases())
def test_parallel_api(env_id: str, kwargs: dict[str, Any]) -> None:
    parallel_api_test(pettingzoo.make("parallel", env_id, **kwargs), num_cycles=300)


@pytest.mark.parametrize("env_id, kwargs", _cases())
def test_seed(env_id: str, kwargs: dict[str, Any]) -> None:
    seed_test(lambda: pettingzoo.make("aec", env_id, **kwargs), num_cycles=50)
    parallel_seed_test(lambda: pettingzoo.make("parallel", env_id, **kwargs), num_cycles=50)


def _random_trace(env: Any, seed: int, episodes: int) -> list[Any]:
    """Observations, rewards and infos of random legal play, for comparing two environments."""
    trace = []
    for agent in env.possible_agents:
        env.action_space(agent).seed(seed)
    for i in range(episodes):
        env.reset(seed=seed) if i == 0 else env.reset()
        for agent in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            trace.append((agent, obs, reward, term, info))
            action = None if term or trunc else env.action_space(agent).sample(obs.get("action_mask"))
            env.step(action)
    return trace


@pytest.mark.parametrize("env_id, kwargs", _cases()[:4])
def test_pickle_round_trip(env_id: str, kwargs: dict[str, Any]) -> None:
    env = pettingzoo.make("aec", env_id, **kwargs)
    clone = pickle.loads(pickle.dumps(env))
    assert data_equivalence(_random_trace(env, 3, 20), _random_trace(clone, 3, 20))


def test_pickle_mid_episode_keeps_the_episode() -> None:
    env = pettingzoo.make("aec", IDS[0])
    env.reset(seed=11)
    env.step(env.action_space("proposer_0").sample())
    clone = pickle.loads(pickle.dumps(env))
    assert clone.agent_selection == "validator_0"
    assert data_equivalence(env.observe("validator_0"), clone.observe("validator_0"))
    env.step(0)
    clone.step(0)
    assert env.rewards == clone.rewards and data_equivalence(env.infos, clone.infos)


def test_registered_for_both_apis() -> None:
    for env_id in IDS:
        assert env_id in pettingzoo.aec_registry and env_id in pettingzoo.parallel_registry
        aec = pettingzoo.make("aec", env_id)
        par = pettingzoo.make("parallel", env_id)
        assert isinstance(aec, pettingzoo.AECEnv) and isinstance(par, pettingzoo.ParallelEnv)
        assert aec.possible_agents == par.possible_agents == ["proposer_0", "validator_0"]


def test_parallel_and_aec_agree() -> None:
    """The same actions give the same outcome through both APIs."""
    aec = pettingzoo.make("aec", IDS[0], q=0.5, reward_mode="individual")
    par = pettingzoo.make("parallel", IDS[0], q=0.5, reward_mode="individual")
    space = aec.action_space("proposer_0")
    space.seed(5)
    for i in range(50):
        aec.reset(seed=9) if i == 0 else aec.reset()
        obs, _ = par.reset(seed=9) if i == 0 else par.reset()
        assert data_equivalence(obs["proposer_0"], aec.observe("proposer_0"))
        proposal = space.sample()
        aec.step(proposal)
        obs, rewards, terms, _, _ = par.step({"proposer_0": proposal})
        assert not any(terms.values())
        assert data_equivalence(obs["validator_0"], aec.observe("validator_0"))
        decision = int(np.flatnonzero(obs["validator_0"]["action_mask"])[-1])
        aec.step(decision)
        _, rewards, terms, _, infos = par.step({"validator_0": decision})
        assert all(terms.values()) and par.agents == []
        assert rewards == aec.rewards and data_equivalence(infos, aec.infos)
