"""Jitted self-play PPO on the Einstein puzzle's JAX engine: it solves n = 4 under the strict mask (the RL baselines'
self-play recipe), the same seed gives the same network bit for bit, and a training plays both seats of the
PettingZoo environment as ``jax:path=`` — choosing there what it chooses on the JAX engine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jax_need import need

need("jax", "jaxmarl", "optax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from eq_env import einstein_puzzle_v0  # noqa: E402
from eq_env.baselines.einstein_puzzle.jax_rl import default_ppo, success_rate, train  # noqa: E402
from eq_env.baselines.jax_policy import load, mlp_logits  # noqa: E402
from eq_env.baselines.jax_ppo import PPOConfig  # noqa: E402
from eq_env.core.policy import make_policy  # noqa: E402
from eq_env.core.runner import evaluate  # noqa: E402
from eq_env.einstein_puzzle import jax_engine  # noqa: E402
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig  # noqa: E402

TINY = PPOConfig(total_timesteps=4096, num_envs=64, num_steps=8, update_epochs=2, num_minibatches=2, hidden=(32,))


@pytest.mark.slow
def test_self_play_solves_four_objects(tmp_path: Path) -> None:
    """The default recipe at n = 4 (strict mask, provide & seek), greedy: at least 97% of 2,000 games on the JAX
    engine and of 100 games of the PettingZoo environment's held-out seed 1000, both seats the trained network."""
    config = EinsteinPuzzleConfig(strict_mask=True)
    run = train(tmp_path / "n4", config=config)
    on_jax = success_rate(run.path, 2000)
    assert on_jax["success"] >= 0.97, on_jax
    spec = f"jax:path={run.path}"
    ev = evaluate("einstein-puzzle", config, {"player_0": spec, "player_1": spec}, episodes=100, seeds=[1000])
    assert ev.summary["success_rate"][0] >= 0.97, ev.summary
    returns = [r for r in run.returns if r is not None]
    assert np.mean(returns[-5:]) > 0.9


def test_same_seed_same_network(tmp_path: Path) -> None:
    config = EinsteinPuzzleConfig(n=5, strict_mask=True, comm_mode="seek_only")
    a = train(tmp_path / "a", config=config, ppo=TINY, seed=3)
    b = train(tmp_path / "b", config=config, ppo=TINY, seed=3)
    c = train(tmp_path / "c", config=config, ppo=TINY, seed=4)
    assert (a.path / "params.npz").read_bytes() == (b.path / "params.npz").read_bytes()
    assert (a.path / "params.npz").read_bytes() != (c.path / "params.npz").read_bytes()
    assert a.returns == b.returns
    _, meta = load(a.path)
    assert meta["agents"] == {"player_0": "shared", "player_1": "shared"} and meta["config"]["n"] == 5


def test_a_training_plays_the_pettingzoo_environment_as_on_the_engine(tmp_path: Path) -> None:
    """Both seats of the PettingZoo environment played by ``jax:path=`` choose, at every turn, the action the network
    chooses from the JAX engine's observation and mask of the same game (so the policy reads the environment as
    the engine showed it in training)."""
    config = EinsteinPuzzleConfig(n=5, strict_mask=True)
    run = train(tmp_path / "p", config=config, ppo=TINY, seed=1)
    spec = f"jax:path={run.path}"
    seats = {a: make_policy(spec, a, env="einstein-puzzle") for a in jax_engine.AGENTS}
    assert repr(seats["player_1"]).endswith("greedy)")
    params, _ = load(run.path)
    net = jax.tree.map(jnp.asarray, params["shared"])
    jparams = jax_engine.params_from_config(config)
    env = einstein_puzzle_v0.env(config=config)
    turns = 0
    for episode in range(5):
        env.reset(seed=11, options={"episode": episode})
        puzzle = jax_engine.PuzzleArrays(*(x[episode] for x in jax_engine.numpy_puzzles(config, 11, episode + 1)))
        obs, state = jax_engine.reset_from_puzzle(puzzle, jparams)
        for agent in env.agent_iter():
            observation, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            action = seats[agent].act(observation)
            masks = jax_engine.avail_actions(state, jparams)
            mine = int(jnp.argmax(mlp_logits(net, obs[agent], masks[agent], jnp)))
            assert action == mine, (episode, turns)
            env.step(action)
            obs, state, *_ = jax_engine.step_env(None, state, jnp.array([action, action]), jparams)
            turns += 1
    assert turns > 20


def test_bad_settings() -> None:
    with pytest.raises(ValueError, match="seed must be"):
        train("unused", seed=-1)
    with pytest.raises(TypeError, match="EinsteinPuzzleConfig"):
        train("unused", config={"n": 4})  # type: ignore[arg-type]
    assert default_ppo(8).total_timesteps > default_ppo(4).total_timesteps
