"""RL: SB3 training throughput on the proposer's view, and a trained proposer's payoff against the best response.

1. PPO training speed (environment steps per second, one thread, ``--n-envs`` environments, 64 by
   default) on the proposer's view, against PPO with the same settings on Gymnasium's ``CartPole-v1``
   in SB3's ``DummyVecEnv`` in the same process: the ratio says what our environment costs. Ours is
   measured twice: the native vectorised environment (``eq_env.exchange_audit.sb3_vector.ProposerVecEnv``,
   what ``eq-env train`` uses) and the single views in a ``DummyVecEnv`` (``--no-vec-env``).
2. PPO proposers trained against the paper's rule validator, each for ``--timesteps`` steps,
   scored by their mean payoff (exact over the audit) on the episodes the best-response search
   is measured on, as a fraction of the best response's payoff.

    python benchmarks/rl_training.py [--timesteps 60000] [--episodes 40000] [--n-envs 64] [--speed-only]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import gymnasium

from eq_env.baselines.exchange_audit.rl import _hyperparameters, train
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.equilibrium import proposer_best_response, proposer_payoff

SCENARIOS = {  # name: (directory, configuration)
    "paper, q=0.3": ("paper_q0.3", ExchangeAuditConfig(q=0.3)),
    "temptation (V=2, L=1), q=0.3": ("temptation_q0.3", ExchangeAuditConfig(q=0.3, V=2.0, L=1.0)),
    "temptation (V=2, L=1), q=0": ("temptation_q0", ExchangeAuditConfig(q=0.0, V=2.0, L=1.0)),
}


def ppo_steps_per_second(env_id: str, steps: int, n_envs: int = 64, native: bool = False) -> float:
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecMonitor

    torch.set_num_threads(1)
    if native:
        from eq_env.exchange_audit.sb3_vector import ProposerVecEnv

        env = VecMonitor(ProposerVecEnv(n_envs))  # as eq-env train wraps it (episode rewards for its curve)
        env.seed(0)
    else:
        env = make_vec_env(lambda: gymnasium.make(env_id), n_envs=n_envs, seed=0)  # Monitor on each, as train
    params = _hyperparameters("ppo", steps, n_envs)
    params["gamma"] = 0.99  # CartPole needs discounting; it does not change the cost of a step
    model = PPO("MlpPolicy", env, seed=0, verbose=0, device="cpu", **params)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=60_000)
    parser.add_argument("--episodes", type=int, default=40_000, help="episodes of the best-response search")
    parser.add_argument("--n-envs", type=int, default=64, help="environments of the speed comparison")
    parser.add_argument("--speed-only", action="store_true", help="only the training speed comparison")
    args = parser.parse_args()
    n, steps = args.n_envs, 40_000
    native = ppo_steps_per_second("eq_env/ExchangeAuditProposer-v0", steps, n, native=True)
    views = ppo_steps_per_second("eq_env/ExchangeAuditProposer-v0", steps, n)
    ref = ppo_steps_per_second("CartPole-v1", steps, n)
    print(f"PPO training, {n} environments, one thread: CartPole-v1 (DummyVecEnv) {ref:7.0f} steps/s")
    print(f"  proposer, native vectorised env:  {native:7.0f} steps/s  ratio {native / ref:.2f}x  (target >= 1.5x)")
    print(f"  proposer, views in DummyVecEnv:   {views:7.0f} steps/s  ratio {views / ref:.2f}x")
    if args.speed_only:
        return
    with tempfile.TemporaryDirectory() as tmp:
        for name, (directory, config) in SCENARIOS.items():
            result = train("proposer", Path(tmp) / directory, timesteps=args.timesteps, seed=0,
                           config=config, eval_episodes=200, eval_seeds=(1000,), progress=False)  # fmt: skip
            br = proposer_best_response(config, "rule", episodes=args.episodes, seed=3)
            ppo = proposer_payoff(config, f"sb3:path={result.path}", "rule", episodes=args.episodes, seed=3)
            print(f"{name:32s} PPO {ppo:.4f} / best response {br.best_payoff:.4f} = {ppo / br.best_payoff:6.1%}"
                  f"  (honest {br.honest_payoff:.4f}; trained {result.seconds:.0f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
