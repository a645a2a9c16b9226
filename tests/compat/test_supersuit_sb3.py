"""SuperSuit's parameter-sharing recipe into Stable-Baselines3's PPO, on every game (numeric mode).

PettingZoo's SB3 tutorial: the parallel environment, padded to one space for every agent and flattened to one
``Box`` (``eq_env.flatten_numeric``: SuperSuit's ``pad_observations_v0`` and ``agent_indicator_v0`` take ``Box``
only), SuperSuit's agent indicator, then ``pettingzoo_env_to_vec_env_v1`` (each agent one sub-environment) and
``concat_vec_envs_v1(..., base_class="stable_baselines3")``, one PPO policy shared by all agents. SB3's PPO does
not read the mask (it is part of what the policy sees); the environment answers a masked action (a padded one
included, :mod:`eq_env.core.padding`) by its own convention, and the trained policy is evaluated with the mask
applied.
"""

from __future__ import annotations

import numpy as np
import pytest
from recipes import games, need, parallel_env

from eq_env import flatten_numeric, pad_numeric

need("supersuit", "stable_baselines3", "torch")

import supersuit as ss  # noqa: E402
import torch  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.utils import set_random_seed  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.compat]

STEPS = 2048  # env steps of all agents together: a few PPO updates, not learning
COPIES = 2  # copies of the game in the vector env (each one sub-env per agent)


@pytest.mark.parametrize("spec", games(), ids=lambda s: s.name)
def test_ppo_shares_one_policy_across_agents_and_evaluates_on_the_pettingzoo_env(spec) -> None:
    env = ss.agent_indicator_v0(flatten_numeric(pad_numeric(parallel_env(spec))))
    agents = env.possible_agents
    vec = ss.concat_vec_envs_v1(
        ss.pettingzoo_env_to_vec_env_v1(env), COPIES, num_cpus=0, base_class="stable_baselines3"
    )
    assert vec.num_envs == COPIES * len(agents)
    width = env.observation_space(agents[0]).shape[0]
    # PPO(seed=...) calls vec.seed(), which SuperSuit's vector env lacks: seed the games through the inner
    # vector env's reset (copy i plays seed i's stream; PPO's own reset() goes on with it) and SB3's RNGs here.
    obs, _ = vec.venv.reset(seed=0)
    assert obs.shape == (vec.num_envs, width) and obs.dtype == np.float32
    set_random_seed(0)
    model = PPO("MlpPolicy", vec, n_steps=STEPS // vec.num_envs, batch_size=64, n_epochs=2, device="cpu")
    model.learn(total_timesteps=STEPS)
    assert model.num_timesteps >= STEPS
    losses = {k: v for k, v in model.logger.name_to_value.items() if k.startswith("train/") and "loss" in k}
    assert losses and all(np.isfinite(v) for v in losses.values()), losses
    buffer = model.rollout_buffer
    assert buffer.observations.shape == (STEPS, width)  # (flattened over the sub-envs for the update)
    assert np.isfinite(buffer.rewards).all() and np.isfinite(buffer.advantages).all()
    vec.close()

    # Evaluation on the PettingZoo env (the wrapped parallel one): the shared policy's likeliest legal action.
    game = parallel_env(spec)
    actions = {a: int(game.action_space(a).n) for a in agents}  # each agent's own A
    padded = pad_numeric(game).observation_space(agents[0])
    start = padded["observation"].shape[0]
    end = start + padded["action_mask"].shape[0]
    decisions = 0
    for episode in range(3):
        obs, _ = env.reset(seed=100 + episode)
        total = 0.0
        while env.agents:
            batch = np.stack([obs[a] for a in env.agents])
            with torch.no_grad():
                probs = model.policy.get_distribution(model.policy.obs_to_tensor(batch)[0]).distribution.probs
            legal = batch[:, start:end] > 0
            chosen = np.where(legal, probs.numpy(), -1.0).argmax(axis=1)
            own = np.array([actions[a] for a in env.agents])
            assert legal.any(axis=1).all() and (chosen < own).all()  # a padded action is never legal
            assert not any(legal[i, n:].any() for i, n in enumerate(own))
            decisions += len(chosen)
            obs, rewards, _, _, _ = env.step(dict(zip(env.agents, chosen.tolist(), strict=True)))
            total += sum(rewards.values())
        assert np.isfinite(total)
    assert decisions > 0


def _trained_parameters(spec, steps: int) -> list[np.ndarray]:
    """The shared policy's parameters after ``steps`` of PPO, seeded as the README says."""
    env = ss.agent_indicator_v0(flatten_numeric(pad_numeric(parallel_env(spec))))
    vec = ss.concat_vec_envs_v1(
        ss.pettingzoo_env_to_vec_env_v1(env), COPIES, num_cpus=0, base_class="stable_baselines3"
    )
    vec.venv.reset(seed=0)
    set_random_seed(0)
    model = PPO("MlpPolicy", vec, n_steps=steps // vec.num_envs, batch_size=64, n_epochs=1, device="cpu")
    model.learn(total_timesteps=steps)
    vec.close()
    return [p.detach().numpy().copy() for p in model.policy.parameters()]


def test_the_seeding_recipe_trains_the_same_policy_bit_for_bit() -> None:
    """``vec.venv.reset(seed=...)`` and ``set_random_seed`` in place of ``PPO(seed=...)``: the same seed, the same
    policy, to the bit."""
    spec = next(s for s in games() if s.name == "einstein-puzzle")  # (the quickest game to step)
    first, second = _trained_parameters(spec, 512), _trained_parameters(spec, 512)
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
