"""Jitted self-play PPO for the Einstein puzzle on its JAX engine: one network in both seats.

:func:`train` runs :func:`eq_env.baselines.jax_ppo.make_train` on
:class:`~eq_env.einstein_puzzle.jax_engine.EinsteinPuzzleJax` with ``shared=True``: the two players share one actor
and one critic (parameter sharing), each step trained on the seat that acts, with the team reward — the self-play
recipe of ``eq-env train --env einstein-puzzle --partner self`` (the strict mask on by default, as that recipe needs;
see the Einstein guide), environment and learner under one ``jit``. The planner cannot be the partner here: it is a
breadth-first search in Python, not a JAX function. It writes ``params.npz`` and ``policy.json`` into ``out`` and
returns what it did.

The result plays either seat as ``jax:path=DIR`` (registered for ``player_0`` and ``player_1``), in the PettingZoo
environment, ``eq-env play`` and ``eq-env evaluate`` beside any other policy::

    run = train("runs/jax-selfplay-n6", config=EinsteinPuzzleConfig(n=6, strict_mask=True))
    evaluate("einstein-puzzle", run.config, {"player_0": f"jax:path={run.path}", "player_1": f"jax:path={run.path}"},
             episodes=100, seeds=[1000, 1001, 1002])

:func:`success_rate` scores a trained network on the JAX engine itself (thousands of games a second), greedy or
sampled.

Needs the ``jax`` extra to train (imported by :func:`train` and :func:`success_rate` only); playing needs numpy alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.spec import ID

__all__ = ["JaxSelfPlay", "default_ppo", "success_rate", "train"]


def default_ppo(n: int = 4) -> Any:
    """The PPO settings :func:`train` uses for ``n`` objects unless given others (a ``PPOConfig``): 128 games of 16
    turns an update, 4 epochs of 4 minibatches, two hidden layers of 64, learning rate 1e-3 annealed, γ = 1 (the game
    is undiscounted), and 100 k steps per object beyond two (n = 4: 200 k; 8: 600 k; 12: 1 M)."""
    from eq_env.baselines.jax_ppo import PPOConfig

    return PPOConfig(
        total_timesteps=100_000 * (n - 2), num_envs=128, num_steps=16, update_epochs=4, num_minibatches=4, lr=1e-3,
        ent_coef=0.01, hidden=(64, 64),
    )  # fmt: skip


@dataclass(frozen=True)
class JaxSelfPlay:
    """What :func:`train` did: where it wrote, the configuration, the seconds spent tracing and compiling and
    training, and the mean return of the episodes that ended in each update."""

    path: Path
    config: EinsteinPuzzleConfig
    compile_seconds: float
    train_seconds: float
    returns: list[float | None]


def train(
    out: str | Path,
    *,
    config: EinsteinPuzzleConfig | None = None,
    ppo: Any = None,
    seed: int = 0,
) -> JaxSelfPlay:
    """Self-play PPO, one network in both seats, under ``config`` (default: the paper's game with the strict mask),
    written into ``out``."""
    import jax

    from eq_env.baselines.jax_policy import save
    from eq_env.baselines.jax_ppo import config_dict, make_train, run_training
    from eq_env.einstein_puzzle.jax_engine import AGENTS, EinsteinPuzzleJax

    config = EinsteinPuzzleConfig(strict_mask=True) if config is None else config
    if not isinstance(config, EinsteinPuzzleConfig):
        raise TypeError(f"config must be an EinsteinPuzzleConfig, got {type(config).__name__}")
    ppo = default_ppo(config.n) if ppo is None else ppo
    env = EinsteinPuzzleJax(config)
    done = run_training(make_train(env, ppo, list(AGENTS), shared=True), seed)
    returns = done.returns[AGENTS[0]]
    meta = {
        "env": ID,
        "config": config.to_dict(),
        "agents": {a: "shared" for a in AGENTS},
        "partners": {},
        "hyper": config_dict(ppo),
        "seed": seed,
        "jax": jax.__version__,
        "compile_seconds": round(done.compile_seconds, 3),
        "train_seconds": round(done.train_seconds, 3),
        "returns": {AGENTS[0]: returns},
    }
    path = save(out, done.params, meta)
    return JaxSelfPlay(path, config, done.compile_seconds, done.train_seconds, returns)


def success_rate(
    path: str | Path, games: int = 2000, *, seed: int = 1000, deterministic: bool = True, config: Any = None
) -> dict[str, float]:
    """A training's network in both seats on ``games`` puzzles drawn by the JAX engine from ``seed`` (not the numpy
    stream of ``eq-env evaluate``): the success rate, the mean turns of the games won, and the rejected placements,
    shares and asks a game. Greedy (the most likely legal action) or sampled."""
    import jax
    import jax.numpy as jnp

    from eq_env.baselines.jax_policy import load, mlp_logits
    from eq_env.core.numeric import trained_game
    from eq_env.einstein_puzzle import jax_engine

    params, meta = load(path)
    _, trained = trained_game(meta, Path(path) / "policy.json")
    config = trained if config is None else config
    net = jax.tree.map(jnp.asarray, params["shared"])
    env = jax_engine.EinsteinPuzzleJax(config)
    n = config.n

    def game(key: jax.Array) -> tuple[jax.Array, ...]:
        k_reset, k_play = jax.random.split(key)
        obs, state = env.reset(k_reset)

        def turn(carry: Any, k: jax.Array) -> Any:
            obs, state, counts = carry
            masks = env.get_avail_actions(state)
            p = state.turn % 2
            seen = jnp.where(p == 0, obs["player_0"], obs["player_1"])
            mask = jnp.where(p == 0, masks["player_0"], masks["player_1"])
            logits = mlp_logits(net, seen, mask, jnp)
            action = jnp.argmax(logits) if deterministic else jax.random.categorical(k, logits)
            before = state
            obs, state, *_ = jax_engine.step_env(None, state, jnp.stack([action, action]), env.params)
            live = ~before.done
            kind = jnp.where(action < 42 * n, 0, jnp.where(action < 43 * n, 1, jnp.where(action < 44 * n, 2, 3)))
            rejected = live & (state.history_outcome[0] == jax_engine.REJECTED)
            counts = counts + jnp.stack([rejected, live & (kind == 1), live & (kind == 2)]).astype(jnp.float32)
            return (obs, state, counts), None

        (obs, state, counts), _ = jax.lax.scan(
            turn, (obs, state, jnp.zeros(3)), jax.random.split(k_play, config.step_limit)
        )
        won = jnp.all(state.location == state.puzzle.goal)
        return won, state.turn, counts

    won, turns, counts = jax.jit(jax.vmap(game))(jax.random.split(jax.random.PRNGKey(seed), games))
    won, turns, counts = np.asarray(won), np.asarray(turns), np.asarray(counts)
    return {
        "success": float(won.mean()),
        "turns_won": float(turns[won].mean()) if won.any() else float("nan"),
        "rejected": float(counts[:, 0].mean()),
        "shares": float(counts[:, 1].mean()),
        "asks": float(counts[:, 2].mean()),
    }
