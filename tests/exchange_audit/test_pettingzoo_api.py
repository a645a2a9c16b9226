"""The exchange–audit environment under PettingZoo's APIs, beyond the conformance battery that every game
passes (tests/core/test_conformance.py, with this game's configurations from its spec): a pickle in the
middle of an episode, registration, and the AEC and parallel APIs agreeing step for step."""

from __future__ import annotations

import pickle

import numpy as np
import pettingzoo
from gymnasium.utils.env_checker import data_equivalence

IDS = ["eq_env/exchange-audit-v0"]


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
