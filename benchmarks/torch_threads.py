"""SB3 training time with torch's default threads and with one, in the same process.

sb3-contrib's MaskablePPO trains on the Einstein puzzle's view (``eq_env/EinsteinPuzzle-v0``, its default
partner) for ``--timesteps`` steps twice, from the same seed: first with ``--threads`` threads (default: what torch
chose when it was imported, its default for this machine), then with ``torch.set_num_threads(1)``. The ratio is
what a user's own SB3 script loses on a small machine when it leaves torch's default (the ``eq-env`` commands set
one thread). Run it without ``OMP_NUM_THREADS`` set: that variable changes torch's default.

    python benchmarks/torch_threads.py [--timesteps 4000] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import time

import gymnasium
import torch

import eq_env  # noqa: F401 - registers the views


def train_seconds(timesteps: int, threads: int) -> float:
    """Seconds MaskablePPO takes for ``timesteps`` steps on the Einstein view with ``threads`` torch threads."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(threads)
    env = DummyVecEnv([lambda: gymnasium.make("eq_env/EinsteinPuzzle-v0")])
    model = MaskablePPO("MlpPolicy", env, n_steps=512, batch_size=64, seed=0, verbose=0, device="cpu")
    start = time.perf_counter()
    model.learn(total_timesteps=timesteps)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="threads of the first run")
    args = parser.parse_args()
    if "OMP_NUM_THREADS" in os.environ:
        print(f"(OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} is set: torch's default is not its own)")
    many = train_seconds(args.timesteps, args.threads)
    one = train_seconds(args.timesteps, 1)
    print(
        f"MaskablePPO, {args.timesteps} steps on eq_env/EinsteinPuzzle-v0, {os.cpu_count()} CPUs: "
        f"{args.threads} threads {many:.1f} s, 1 thread {one:.1f} s: {many / one:.1f}x"
    )


if __name__ == "__main__":
    main()
