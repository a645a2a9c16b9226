"""``eq-env train --env belief-coordination --out DIR``: train ECON once, save it (a policy: ``econ:path=DIR``), write
its learning curve, and compare it with the baselines on held-out questions.

With ``--backend rllib``: the executors (one shared module choosing grid points) and the coordinator with RLlib's
multi-agent PPO on Ray (:mod:`eq_env.baselines.rllib`; a policy: ``rllib:path=DIR``). With ``--backend sb3``: one
executor with Stable-Baselines3's PPO on the single-agent view, the others fixed
(:mod:`eq_env.baselines.belief_coordination.rl`; a policy: ``sb3:path=DIR``).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from eq_env.core.cli import Command, int_in, out_dir

__all__ = ["COMMAND"]


def _train_arguments(parser: argparse.ArgumentParser) -> None:
    from eq_env.baselines.rllib import add_rllib_flags
    from eq_env.core.cli import list_of, seed_arg, timesteps_arg

    parser.add_argument(
        "--backend",
        choices=("econ", "rllib", "sb3"),
        default="econ",
        help="econ: ECON's belief networks + QMIX mixer, compared with the baselines (default); "
        "rllib: RLlib's multi-agent PPO, one module shared by the executors (grid points) and "
        "one for the coordinator (pip install 'eq-env[rllib]'); sb3: one executor with "
        "Stable-Baselines3 PPO, the other agents fixed (its unilateral deviation)",
    )
    parser.add_argument(
        "--out",
        type=out_dir,
        required=True,
        help="directory for the trained ECON (econ:path=DIR) or RLlib checkpoint (rllib:path=DIR)",
    )
    parser.add_argument("--n-executors", type=int_in(1, 16), default=3, help="executors N (default 3)")
    parser.add_argument("--seed", type=int_in(0, 2**31 - 1), default=0, help="training seed (default 0)")
    parser.add_argument("--null", action="store_true", help="train on the null instrument (T and p cannot matter)")
    econ = parser.add_argument_group("with --backend econ")
    econ.add_argument("--steps", type=int_in(1, 1_000_000), default=None, help="gradient steps (default 1500)")
    econ.add_argument(
        "--eval-questions",
        type=int_in(10, 100_000),
        default=None,
        help="held-out questions of the comparison (default 2000)",
    )
    econ.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar (default: on a terminal)",
    )
    parser.add_argument(
        "--eval-seeds",
        type=list_of(seed_arg, "seeds", distinct=True),
        default="1000,1001,1002",
        help="with --backend rllib or sb3: held-out seeds of the evaluation (default 1000,1001,1002)",
    )
    parser.add_argument(
        "--eval-episodes",
        type=int_in(1, 1_000_000),
        default=500,
        help="with --backend rllib or sb3: episodes per evaluation seed (default 500)",
    )
    sb3 = parser.add_argument_group("with --backend sb3 (executor_0 learns, the others are fixed)")
    sb3.add_argument("--executor", help="the other executors' policy spec (default fixed)")
    sb3.add_argument("--coordinator", help="the coordinator's policy spec (default majority)")
    sb3.add_argument("--algo", choices=("ppo", "maskable_ppo"), help="ppo (default) or maskable_ppo")
    sb3.add_argument("--timesteps", type=timesteps_arg, help="questions to train on, at least 64 (default 20000)")
    sb3.add_argument("--n-envs", type=int_in(1, 4096), help="environments stepped together (default 8)")
    add_rllib_flags(parser, unset=True)  # (None when not given: refused with another backend)


SB3_FLAGS = ("executor", "coordinator", "algo", "timesteps", "n_envs")


def _train(args: argparse.Namespace) -> int:
    from eq_env.baselines.rllib import RLLIB_FLAGS, fill_rllib_defaults
    from eq_env.core.cli import given_flags

    if args.backend != "sb3":
        given = given_flags(args, SB3_FLAGS)
        if given:
            raise ValueError(f"{', '.join(given)} go(es) with --backend sb3")
    if args.backend == "rllib":
        fill_rllib_defaults(args)
        return _train_rllib(args)
    given = given_flags(args, RLLIB_FLAGS)
    if given:
        raise ValueError(f"{', '.join(given)} go(es) with --backend rllib")
    if args.backend == "sb3":
        return _train_sb3(args)
    args.steps = 1500 if args.steps is None else args.steps
    args.eval_questions = 2000 if args.eval_questions is None else args.eval_questions
    from eq_env.studies.belief_coordination.reproduce import need_torch

    need_torch()
    import numpy as np
    import torch

    from eq_env.baselines.belief_coordination.econ import ECON, ECONHyper, train_econ
    from eq_env.belief_coordination import batch as engine
    from eq_env.belief_coordination.config import BeliefCoordinationConfig
    from eq_env.core.report import markdown_table, plot_lines, write_csv
    from eq_env.studies.belief_coordination.reproduce import BASE, _fixed, _schedule, _tuned

    torch.set_num_threads(1)  # 2 cores: more threads only contend
    args.out.mkdir(parents=True, exist_ok=True)  # (an unwritable --out fails now, not after the training)
    config = BeliefCoordinationConfig(n_executors=args.n_executors, action_space="grid", sensitive=not args.null)
    started = time.perf_counter()
    econ, curve = train_econ(config, replace(ECONHyper(), steps=args.steps), seed=args.seed, progress=args.progress)
    seconds = time.perf_counter() - started
    out = args.out
    econ.save(out)
    write_csv(out / "curve.csv", curve, list(curve[0]) if curve else ["step"])
    # the curve's questions are train_econ's own held-out seed, not the comparison's below: say which is which
    curve_of = f"greedy, {econ.hyper.eval_episodes} held-out questions of seed {econ.eval_seed}"
    if curve:
        steps = [c["step"] for c in curve]
        plot_lines(
            out / "curve.png",
            [
                {
                    "ylabel": "held-out reward (greedy)",
                    "series": [{"label": "ECON", "x": steps, "y": [c["reward"] for c in curve]}],
                }
            ],
            xlabel="gradient step",
            title=f"ECON, N={config.n_executors}, training seed {args.seed}\n{curve_of}",
        )
    held_out = 10_000 + args.seed
    batch = engine.episodes_batch(config, held_out, range(args.eval_questions))
    pool = engine.training_batch(
        config, np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(43,))), 1000
    )
    tuned = _tuned(config, pool)
    t_tuned, p_tuned = (float(x) for x in config.grid_point(tuned))
    frozen = ECON.untrained(config, replace(ECONHyper(), steps=args.steps), seed=args.seed)
    methods = {
        "econ (trained)": econ.chooser(),
        "econ (frozen at init)": frozen.chooser(),
        f"fixed T={BASE[0]}, p={BASE[1]}": _fixed(*BASE),
        f"tuned fixed T={t_tuned:.2f}, p={p_tuned:.2f}": _fixed(t_tuned, p_tuned),
        "schedule": _schedule(config.n_executors),
    }
    rows = []
    for name, choose in methods.items():
        o = engine.play(batch, config, choose)
        rows.append(
            [
                name,
                f"{o.ts.mean():.3f}",
                f"{o.reward.mean():.4f}",
                f"{o.tokens.mean():.0f}",
                f"{o.temperatures.mean():.2f}",
            ]
        )
    print(
        f"trained ECON ({config.n_executors} executors, {args.steps} steps) in {seconds:.0f} s; saved to {out} "
        f"(policy econ:path={out})"
    )
    every = f"at step 0, every {econ.hyper.eval_every} and the last"
    print(f"curve.csv, curve.png and econ.json's curve: {curve_of}, {every}")
    print(
        f"comparison on {args.eval_questions} held-out questions of seed {held_out}, ECON trained and frozen "
        "playing greedily (each executor's most likely grid point, its argmax Q_i):\n"
    )
    print(markdown_table(["held-out, majority vote", "accuracy", "reward", "tokens", "mean T"], rows))
    return 0


def _train_sb3(args: argparse.Namespace) -> int:
    from eq_env.baselines.belief_coordination.rl import METRICS, train
    from eq_env.belief_coordination.config import BeliefCoordinationConfig
    from eq_env.core.cli import given_flags

    given = given_flags(args, ("steps", "eval_questions"))
    if given:
        raise ValueError(
            f"{', '.join(given)} go(es) with --backend econ: --backend sb3 trains for --timesteps "
            "and evaluates on --eval-seeds x --eval-episodes"
        )
    config = BeliefCoordinationConfig(n_executors=args.n_executors, action_space="grid", sensitive=not args.null)
    executors, coordinator = args.executor or "fixed", args.coordinator or "majority"
    result = train(
        args.out,
        executors=executors,
        coordinator=coordinator,
        config=config,
        algo=args.algo or "ppo",
        timesteps=args.timesteps or 20_000,
        seed=args.seed,
        n_envs=args.n_envs or 8,
        eval_seeds=args.eval_seeds,
        eval_episodes=args.eval_episodes,
        progress=args.progress,
    )
    asked = f" ({result.timesteps} asked; SB3 ends on a whole rollout)" if result.steps_run != result.timesteps else ""
    print(
        f"trained executor_0 ({result.algo}; the other executors {executors}, the coordinator {coordinator}, "
        f"{config.n_executors} executors{', null instrument' if args.null else ''}) for {result.steps_run} "
        f"questions{asked} in {result.seconds:.1f} s ({result.steps_run / result.seconds:.0f} steps/s, one "
        f"thread); saved to {result.path}"
    )
    print(f"use it: eq-env play --env belief-coordination --executor sb3:path={result.path}")
    print(
        f"evaluation on held-out seeds {', '.join(map(str, args.eval_seeds))}, {args.eval_episodes} questions each "
        "(mean ± std over seeds), executor_0 playing the model greedily (the most likely grid point), sampled, "
        f"or as the others do (no deviation):\n"
    )
    print(result.table(METRICS))
    (trained, _), (baseline, _) = (
        result.evaluations["greedy"]["reward"],
        list(result.evaluations.values())[-1]["reward"],
    )
    print(f"deviation gain (greedy − no deviation): {trained - baseline:+.4f} reward per question")
    print(f"wrote model.zip, policy.json, learning_curve.csv, learning_curve.png and eval.json to {result.path}")
    return 0


def _train_rllib(args: argparse.Namespace) -> int:
    from eq_env.baselines.rllib import run_from_args
    from eq_env.belief_coordination.config import BeliefCoordinationConfig

    econ_only = [
        flag
        for flag, value in (("--steps", args.steps), ("--eval-questions", args.eval_questions))
        if value is not None
    ]
    if econ_only:
        raise ValueError(
            f"{', '.join(econ_only)} go(es) with --backend econ: --backend rllib trains for --iterations "
            "and evaluates on --eval-seeds x --eval-episodes"
        )
    config = BeliefCoordinationConfig(n_executors=args.n_executors, action_space="grid", sensitive=not args.null)
    return run_from_args("belief-coordination", args, config)


COMMAND = Command(
    "train",
    "train ECON (belief networks + QMIX mixer) and compare it with the baselines; or, with --backend rllib, "
    "every role with RLlib's multi-agent PPO; or, with --backend sb3, one executor with PPO, the others fixed",
    _train_arguments,
    _train,
)
