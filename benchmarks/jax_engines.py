"""The JAX engines against their numpy references, in the same process: episodes and agent steps per second.

Needs the jax extra (``pip install -e ".[jax]"``). On this machine's CPU by default, pinned to one core as the
numpy engines are (``--cores all`` lets XLA use every core); on an accelerator with ``--accelerator`` (it stops
with one line if JAX sees none), with larger batches. Runs unattended and prints its figures.

* **exchange–audit**: the JAX engine (``eq_env.exchange_audit.jax_engine``: chance outcomes drawn with
  ``jax.random``, both agents' observations and masks built at every step, the rule validator deciding from the
  state) against the numpy batch engine (``eq_env.exchange_audit.batch.simulate``, the rule validator), both
  playing the same precomputed random artifacts, so neither's action sampling is timed. An episode is four agent
  steps as the AEC benchmarks count them (the proposer's and the validator's turns, then each done agent's).
  The JaxMARL interface's rate (``ExchangeAuditJax.step`` with its auto-reset, under ``lax.scan``) too.

* **einstein-puzzle** (``--game einstein-puzzle``): the JAX engine through its JaxMARL interface
  (``EinsteinPuzzleJax.step``: the turn, a new puzzle drawn where a game ended, both players' observations) with
  both masks built and a random legal action drawn at every step (``jax_engine.random_legal``), under ``lax.scan``,
  against the AEC environment with random legal actions in ``benchmarks/einstein_env.py``'s loop (the standard
  wrappers, ``env.last()``, ``action_space.sample(mask)``), at 4 and 8 objects. The AEC count includes each
  done agent's ``step(None)``; the JAX count only turns (so the ratio is, if anything, understated).

* **jitted PPO** (``--ppo``): the exchange–audit proposer against the rule validator in the three scenarios of
  ``benchmarks/rl_training.py``, trained by SB3 PPO (``eq_env.baselines.exchange_audit.rl.train``, 60 k steps,
  what ``eq-env train`` runs) and by the jitted PPO (``eq_env.baselines.exchange_audit.jax_rl.train``, its default
  recipe), each scored greedily on the 20 000 test episodes of seed 3 the best-response search measures itself
  on, as a fraction of the best response's payoff. Wall times: SB3's ``learn``; the jitted PPO's first call
  (tracing, XLA compiling, training) and a second call in the same process with JAX's persistent compilation
  cache warm (tracing, loading the compiled program, training), as every later run of the same recipe is.

    python benchmarks/jax_engines.py [--game exchange-audit|einstein-puzzle|all] [--episodes 4000000]
                                     [--cores one|all] [--accelerator]
    python benchmarks/jax_engines.py --ppo [--game exchange-audit|einstein-puzzle|all]

* **jitted self-play PPO** (``--ppo --game einstein-puzzle``): the Einstein puzzle at n = 4 under the strict mask,
  SB3 MaskablePPO self-play (50 k steps, the Einstein guide's recipe) against
  ``eq_env.baselines.einstein_puzzle.jax_rl.train``'s default recipe, both greedy in both seats on 300 held-out
  games of the PettingZoo environment; wall times as for the proposer.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

GOALS = {"exchange-audit": (10.0, 1e8), "einstein-puzzle": (100.0, 1e7)}  # CPU: ratio; accelerator: agent steps/s


def _pin(cores: str) -> None:
    if cores == "one" and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        # XLA's CPU client sizes its thread pool from the affinity mask; one thread for the numpy engine too
        os.environ.setdefault("OMP_NUM_THREADS", "1")


def _rate(run: Any, units: float, repeats: int = 3) -> float:
    """Units per second of ``run()`` (already compiled and warmed up): the best of ``repeats``."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return units / best


def exchange_audit(episodes: int, chunk: int) -> dict[str, float]:
    import jax
    import jax.numpy as jnp

    from eq_env.core.policy import make_policy
    from eq_env.exchange_audit import jax_engine
    from eq_env.exchange_audit.batch import simulate
    from eq_env.exchange_audit.config import ExchangeAuditConfig
    from eq_env.exchange_audit.features import all_artifacts, artifact_submissions

    config = ExchangeAuditConfig()
    params = jax_engine.params_from_config(config)
    rows = all_artifacts()
    index = np.random.default_rng(0).integers(0, len(rows), episodes)

    class Artifacts:  # the numpy engine's proposer: the precomputed artifacts, in order
        role = "proposer"

        def __init__(self) -> None:
            self.at = 0

        def reset(self, seed: int | None = None) -> None:
            self.at = 0

        def act_batch(self, views: Any) -> Any:
            sub = artifact_submissions(views, rows[index[self.at : self.at + views.n]])
            self.at += views.n
            return sub

    validator = make_policy("rule", "validator")
    simulate(config, Artifacts(), validator, episodes=min(episodes, 100_000), seed=1)  # warm up
    numpy_rate = _rate(lambda: simulate(config, Artifacts(), validator, episodes=episodes, seed=0), episodes)

    def episode(key: jax.Array, artifact: jax.Array) -> jax.Array:
        _, state = jax_engine.reset(key, params, config.noisy_audits)
        _, state, *_ = jax_engine.step_env(key, state, jnp.stack([artifact, 0]), params)
        obs, state, rewards, *_ = jax_engine.step_env(
            key, state, jnp.stack([0, jax_engine.rule_validator(state, params)]), params
        )
        return rewards["proposer_0"] + obs["validator_0"][0]  # (a result that needs the observations too)

    batch = jax.jit(jax.vmap(episode))
    chunks = [jnp.asarray(index[i : i + chunk]) for i in range(0, episodes - chunk + 1, chunk)]
    keys = jax.random.split(jax.random.PRNGKey(0), len(chunks) * chunk).reshape(len(chunks), chunk, -1)
    batch(keys[0], chunks[0]).block_until_ready()  # compile

    def run_jax() -> None:
        out = [batch(k, a) for k, a in zip(keys, chunks, strict=True)]
        out[-1].block_until_ready()

    jax_rate = _rate(run_jax, len(chunks) * chunk)

    # the rules alone: the same episodes' chance outcomes drawn beforehand (where the rest of the time goes)
    def rules(d: jax_engine.Draws, artifact: jax.Array) -> jax.Array:
        _, state = jax_engine.reset_from_draws(d, params)
        _, state, *_ = jax_engine.step_env(None, state, jnp.stack([artifact, 0]), params)
        decision = jax_engine.rule_validator(state, params)
        obs, state, rewards, *_ = jax_engine.step_env(None, state, jnp.stack([0, decision]), params)
        return rewards["proposer_0"] + obs["validator_0"][0]

    drawn = [jax.block_until_ready(jax.vmap(jax_engine.draw, in_axes=(0, None))(k, False)) for k in keys]
    rules_batch = jax.jit(jax.vmap(rules))
    rules_batch(drawn[0], chunks[0]).block_until_ready()

    def run_rules() -> None:
        out = [rules_batch(d, a) for d, a in zip(drawn, chunks, strict=True)]
        out[-1].block_until_ready()

    rules_rate = _rate(run_rules, len(chunks) * chunk)

    # the JaxMARL interface: step with auto-reset, random artifacts drawn in the loop, under lax.scan
    env = jax_engine.ExchangeAuditJax(config)
    steps = 64

    @jax.jit
    def rollout(key: jax.Array) -> jax.Array:
        _, state = jax.vmap(env.reset)(jax.random.split(key, chunk))

        def body(carry: Any, k: jax.Array) -> Any:
            state, total = carry
            ka, ks = jax.random.split(k)
            acts = {
                "proposer_0": jax.random.randint(ka, (chunk,), 0, 648),
                "validator_0": jax.vmap(jax_engine.rule_validator, in_axes=(0, None))(state, params),
            }
            _, state, rewards, *_ = jax.vmap(env.step)(jax.random.split(ks, chunk), state, acts)
            return (state, total + rewards["proposer_0"].sum()), None

        (state, total), _ = jax.lax.scan(body, (state, jnp.zeros(())), jax.random.split(key, steps))
        return total

    rollout(jax.random.PRNGKey(1)).block_until_ready()
    marl_rate = _rate(lambda: rollout(jax.random.PRNGKey(2)).block_until_ready(), chunk * steps / 2)
    return {"numpy": numpy_rate, "jax": jax_rate, "rules": rules_rate, "jaxmarl": marl_rate}


def einstein_puzzle(n: int, batch: int, steps: int, aec_steps: int) -> dict[str, float]:
    """Agent steps per second of the JAX engine (JaxMARL interface, random legal play) and of the AEC environment."""
    import warnings

    import jax
    import jax.numpy as jnp

    from eq_env import einstein_puzzle_v0
    from eq_env.einstein_puzzle import jax_engine
    from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from einstein_env import agent_steps_per_second

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aec = max(agent_steps_per_second(einstein_puzzle_v0.env(n=n), aec_steps, seed=s) for s in range(3))
    env = jax_engine.EinsteinPuzzleJax(EinsteinPuzzleConfig(n=n))

    @jax.jit
    def rollout(key: jax.Array) -> jax.Array:
        _, state = jax.vmap(env.reset)(jax.random.split(key, batch))

        def body(carry: Any, k: jax.Array) -> Any:
            state, total = carry
            ka, ks = jax.random.split(k)
            masks = jax.vmap(env.get_avail_actions)(state)
            acting = (state.turn % 2 == 0)[:, None]
            action = jax_engine.random_legal(ka, jnp.where(acting, masks["player_0"], masks["player_1"]))
            acts = {"player_0": action, "player_1": action}  # (the idle player's is ignored)
            obs, state, rewards, *_ = jax.vmap(env.step)(jax.random.split(ks, batch), state, acts)
            seen = obs["player_0"][:, 1].sum() + obs["player_1"][:, 1].sum()  # (a result that needs them)
            return (state, total + rewards["player_0"].sum() + seen), None

        (state, total), _ = jax.lax.scan(body, (state, jnp.zeros(())), jax.random.split(key, steps))
        return total

    rollout(jax.random.PRNGKey(0)).block_until_ready()  # compile
    rate = _rate(lambda: rollout(jax.random.PRNGKey(1)).block_until_ready(), batch * steps)
    return {"aec": aec, "jax": rate}


def ppo_comparison() -> None:
    import tempfile
    from pathlib import Path

    import jax
    import torch

    from eq_env.baselines.exchange_audit import jax_rl
    from eq_env.baselines.exchange_audit.rl import train as sb3_train
    from eq_env.exchange_audit.config import ExchangeAuditConfig
    from eq_env.exchange_audit.equilibrium import proposer_best_response, proposer_payoff

    torch.set_num_threads(1)
    scenarios = {
        "paper, q=0.3": ExchangeAuditConfig(q=0.3),
        "temptation (V=2, L=1), q=0.3": ExchangeAuditConfig(q=0.3, V=2.0, L=1.0),
        "temptation (V=2, L=1), q=0": ExchangeAuditConfig(q=0.0, V=2.0, L=1.0),
    }
    print("PPO proposer against the rule validator, greedy, scored on the 20,000 test episodes of seed 3:")
    with tempfile.TemporaryDirectory() as tmp:
        jax.config.update("jax_compilation_cache_dir", str(Path(tmp) / "jax-cache"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        for i, (name, config) in enumerate(scenarios.items()):
            br = proposer_best_response(config, "rule", episodes=40_000, seed=3).best_payoff

            def score(spec: str, config: ExchangeAuditConfig = config, br: float = br) -> float:
                return proposer_payoff(config, spec, "rule", episodes=40_000, seed=3) / br

            sb3 = sb3_train("proposer", Path(tmp) / f"sb3-{i}", timesteps=60_000, seed=0, config=config,
                            eval_episodes=200, eval_seeds=(1000,), progress=False)  # fmt: skip
            start = time.perf_counter()
            cold = jax_rl.train("proposer", Path(tmp) / f"jax-{i}", config=config, seed=0)
            cold_wall = time.perf_counter() - start
            start = time.perf_counter()
            warm = jax_rl.train("proposer", Path(tmp) / f"jax2-{i}", config=config, seed=0)
            warm_wall = time.perf_counter() - start
            same = (cold.path / "params.npz").read_bytes() == (warm.path / "params.npz").read_bytes()
            print(f"  {name}: best response {br:.4f}")
            print(f"    SB3 PPO, 60 k steps:        {score(f'sb3:path={sb3.path}'):7.2%} of it in {sb3.seconds:6.1f} s")
            print(f"    jitted PPO, 30 k steps:     {score(f'jax:path={cold.path}'):7.2%} of it in {cold_wall:6.1f} s "
                  f"first call ({cold.compile_seconds:.1f} s tracing and compiling, {cold.train_seconds:.2f} s "
                  f"training): {sb3.seconds / cold_wall:.1f}x")  # fmt: skip
            print(f"    again, compilation cached:  {'same network' if same else 'ANOTHER NETWORK'} in "
                  f"{warm_wall:6.1f} s ({warm.compile_seconds:.1f} s tracing and loading): "
                  f"{sb3.seconds / warm_wall:.1f}x; training alone {sb3.seconds / warm.train_seconds:.1f}x "
                  "(target >= 10x)")  # fmt: skip


def einstein_ppo_comparison() -> None:
    """Self-play at n = 4 under the strict mask: SB3 MaskablePPO, 50 k steps (the Einstein guide's recipe), against
    the jitted PPO's default recipe; both scored greedily in both seats on the PettingZoo environment, 100 games of
    each of the held-out seeds 1000-1002, and the jitted one also on 2,000 games of the JAX engine."""
    import tempfile
    from pathlib import Path

    import jax
    import torch

    from eq_env.baselines.einstein_puzzle import jax_rl
    from eq_env.baselines.einstein_puzzle.rl import train as sb3_train
    from eq_env.core.runner import evaluate
    from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig

    torch.set_num_threads(1)
    config = EinsteinPuzzleConfig(strict_mask=True)
    seeds = [1000, 1001, 1002]

    def success(spec: str) -> float:
        ev = evaluate("einstein-puzzle", config, {"player_0": spec, "player_1": spec}, episodes=100, seeds=seeds)
        return float(ev.summary["success_rate"][0])

    print("Einstein self-play, 4 objects, provide & seek, the strict mask; greedy, both seats the trained policy,")
    print("100 games of each of seeds 1000-1002 in the PettingZoo environment:")
    with tempfile.TemporaryDirectory() as tmp:
        jax.config.update("jax_compilation_cache_dir", str(Path(tmp) / "jax-cache"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        sb3 = sb3_train(Path(tmp) / "sb3", partner="self", config=config, timesteps=50_000, seed=0,
                        eval_episodes=1, eval_seeds=(1000,), progress=False)  # fmt: skip
        start = time.perf_counter()
        cold = jax_rl.train(Path(tmp) / "jax", config=config, seed=0)
        cold_wall = time.perf_counter() - start
        start = time.perf_counter()
        warm = jax_rl.train(Path(tmp) / "jax2", config=config, seed=0)
        warm_wall = time.perf_counter() - start
        same = (cold.path / "params.npz").read_bytes() == (warm.path / "params.npz").read_bytes()
        on_jax = jax_rl.success_rate(cold.path, 2000)
        steps = jax_rl.default_ppo(4).total_timesteps
        print(f"  SB3 MaskablePPO, 50 k steps:   {success(f'sb3:path={sb3.path}'):6.1%} in {sb3.seconds:6.1f} s")
        print(f"  jitted PPO, {steps // 1000} k steps:      {success(f'jax:path={cold.path}'):6.1%} in "
              f"{cold_wall:6.1f} s first call ({cold.compile_seconds:.1f} s tracing and compiling, "
              f"{cold.train_seconds:.2f} s training): {sb3.seconds / cold_wall:.1f}x; on 2,000 games of the JAX "
              f"engine {on_jax['success']:.1%}")  # fmt: skip
        print(f"  again, compilation cached:     {'same network' if same else 'ANOTHER NETWORK'} in {warm_wall:6.1f} s "
              f"({warm.compile_seconds:.1f} s tracing and loading): {sb3.seconds / warm_wall:.1f}x; training alone "
              f"{sb3.seconds / warm.train_seconds:.1f}x (target >= 10x)")  # fmt: skip
        # larger puzzles: the jitted recipe alone (SB3's rows at n = 6 and 8 took 93 minutes: docs/guide/baselines.md)
        print(
            "Larger puzzles, the jitted recipe (default_ppo(n)), seed 0, greedy; 2,000 games of the JAX engine and 100"
        )
        print("of seed 1000 in the PettingZoo environment (under the paper's rejection penalty, 0.1):")
        for n, penalty in ((8, 0.1), (12, 0.1), (12, 0.0)):
            trained = EinsteinPuzzleConfig(n=n, strict_mask=True, rejection_penalty=penalty)
            run = jax_rl.train(Path(tmp) / f"jax-n{n}-{penalty}", config=trained, seed=0)
            played = EinsteinPuzzleConfig(n=n, strict_mask=True)
            r = jax_rl.success_rate(run.path, 2000, config=played)
            spec = f"jax:path={run.path}"
            ev = evaluate("einstein-puzzle", played, {"player_0": spec, "player_1": spec}, episodes=100, seeds=[1000])
            in_env = ev.summary["success_rate"][0]
            print(f"  n = {n:2d}, trained with rejection penalty {penalty}: {r['success']:6.1%} ({in_env:.0%} "
                  f"in the environment), {r['turns_won']:.1f} turns, {r['rejected']:.2f} rejected placements, "
                  f"{r['shares']:.1f} shares and {r['asks']:.1f} asks a game; {run.train_seconds:.0f} s training "
                  f"({jax_rl.default_ppo(n).total_timesteps:,} steps)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", choices=(*sorted(GOALS), "all"), default="all")
    parser.add_argument("--episodes", type=int, default=4_000_000, help="episodes per timed run (CPU)")
    parser.add_argument("--cores", choices=("one", "all"), default="one")
    parser.add_argument("--accelerator", action="store_true", help="run on JAX's accelerator (GPU/TPU), bigger batches")
    parser.add_argument("--ppo", action="store_true", help="jitted PPO against SB3 PPO instead of the engines")
    args = parser.parse_args()
    if args.ppo:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        if args.game in ("einstein-puzzle", "all"):
            einstein_ppo_comparison()
        if args.game in ("exchange-audit", "all"):
            ppo_comparison()
        return
    if not args.accelerator:
        _pin(args.cores)
    import jax

    device = jax.devices()[0]
    if args.accelerator and device.platform == "cpu":
        sys.exit("--accelerator: JAX sees no accelerator (jax.devices() is the CPU); install jax[cuda12] or jax[tpu]")
    if not args.accelerator:
        jax.config.update("jax_platforms", "cpu")
    chunk = 1 << 20 if args.accelerator else 1 << 16
    episodes = max(args.episodes, chunk) if not args.accelerator else 64 * chunk
    print(f"JAX {jax.__version__} on {device.platform} ({device.device_kind}), cores: "
          f"{len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}")  # fmt: skip
    if args.game in ("einstein-puzzle", "all"):
        ratio_goal, accel_goal = GOALS["einstein-puzzle"]
        batch, steps = (1 << 16, 256) if args.accelerator else (4096, 128)
        for n in (4, 8):
            r = einstein_puzzle(n, batch, steps, aec_steps=20_000)
            print(f"einstein-puzzle, {n} objects, random legal actions, {batch:,} games x {steps} turns:")
            print(f"  AEC environment (reference):           {r['aec']:>14,.0f} agent steps/s")
            print(f"  JAX engine (JaxMARL step + masks):     {r['jax']:>14,.0f} agent steps/s  "
                  f"ratio {r['jax'] / r['aec']:.1f}x (target >= {ratio_goal:g}x)")  # fmt: skip
            if args.accelerator:
                print(f"  accelerator goal: {accel_goal:.0e} agent steps/s: "
                      f"{'met' if r['jax'] >= accel_goal else 'missed'}")  # fmt: skip
    if args.game not in ("exchange-audit", "all"):
        return
    ratio_goal, accel_goal = GOALS["exchange-audit"]
    r = exchange_audit(episodes, chunk)
    print(f"exchange-audit, the paper preset, random artifacts against the rule validator, {episodes:,} episodes:")
    print(f"  numpy batch engine (batch.simulate):   {r['numpy']:>14,.0f} episodes/s")
    print(
        f"  JAX engine (jit + vmap):               {r['jax']:>14,.0f} episodes/s  "
        f"{4 * r['jax']:>14,.0f} agent steps/s  ratio {r['jax'] / r['numpy']:.1f}x (target >= {ratio_goal:g}x)"
    )
    print(f"  the rules alone (draws made before):   {r['rules']:>14,.0f} episodes/s  "
          f"({1e9 / r['rules']:.0f} ns an episode; {1e9 / r['jax'] - 1e9 / r['rules']:.0f} ns of drawing)")  # fmt: skip
    print(f"  JaxMARL interface (step + auto-reset): {r['jaxmarl']:>14,.0f} episodes/s  "
          f"{4 * r['jaxmarl']:>14,.0f} agent steps/s  ratio {r['jaxmarl'] / r['numpy']:.1f}x")  # fmt: skip
    if args.accelerator:
        print(
            f"  accelerator goal: {accel_goal:.0e} agent steps/s: {'met' if 4 * r['jax'] >= accel_goal else 'missed'}"
        )


if __name__ == "__main__":
    main()
