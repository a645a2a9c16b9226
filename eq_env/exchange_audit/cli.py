"""The exchange–audit game's own ``eq-env`` commands, and its hooks for the generic ones.

``reproduce`` (the paper's tables and figure: the main job), ``train`` and
``selfplay`` (Stable-Baselines3), ``equilibrium`` (best responses) and
``frontier`` (the deterrence frontier), ``noisy-audits`` (issue 14's noisy
audits), ``free-text`` (issue 14's free-text regime), ``inspection`` (issue 14's validator as a strategic
auditor), ``sensitivity`` (the LLM proposer across prompt variants and models), ``claim-schemas`` (issue 14's
claim schemas), ``repeated`` (issue 14's repeated game and reputation). :data:`COMMANDS` is what
``EnvSpec.cli`` points the CLI at; :func:`dry_run` shows what the LLM
policies would be sent and :func:`describe_config` sums a configuration up for
``eq-env play``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Mapping, Sequence

from eq_env.core.cli import (
    MAX_EPISODES,
    MAX_ROUNDS,
    MAX_TIMESTEPS,
    Command,
    add_backend_flags,
    add_config_flags,
    add_flag_groups,
    config_from_args,
    configure_flag_groups,
    episodes_arg,
    executor_of,
    failures,
    fill_spec,
    int_in,
    jobs_arg,
    list_of,
    model_names,
    non_negative_float,
    number_type,
    out_dir,
    seed_arg,
    seeds_arg,
    shown,
    timesteps_arg,
)
from eq_env.core.experiments import ENGINES
from eq_env.exchange_audit.config import PRESETS, ExchangeAuditConfig

__all__ = ["COMMANDS", "describe_config", "dry_run"]

_q = number_type(float, "an audit intensity in [0, 1]", lambda v: 0.0 <= v <= 1.0)
_qs = list_of(_q, "audit intensities in [0, 1]", distinct=True)


def describe_config(config: ExchangeAuditConfig) -> str:
    """The parameters ``eq-env play`` shows beside the preset."""
    schema = "" if config.claim_schema == "paper" else f", claim_schema={config.claim_schema}"
    return f"q={config.q:g}, B={config.checks_per_audit}, V={config.V:g}, L={config.L:g}{schema}"


def dry_run(config: ExchangeAuditConfig, policies: Mapping[str, Sequence[str]]) -> int:
    """Print what each LLM policy among ``policies`` (role → specs) would be sent for one state, and the
    schema it must answer with; call nothing."""
    from eq_env import exchange_audit_v0
    from eq_env.agents.exchange_audit.policies import render_proposer_prompt, render_validator_prompt
    from eq_env.agents.exchange_audit.schema import VALIDATOR_SCHEMA, proposer_schema
    from eq_env.baselines.exchange_audit import HonestProposer
    from eq_env.core.policy import make_policy
    from eq_env.exchange_audit.spaces import decode_proposer_observation, encode_submission

    env = exchange_audit_v0.env(config=config)
    env.reset(seed=0)
    view = decode_proposer_observation(env.observe("proposer_0"))
    env.step(encode_submission(HonestProposer(request="always").submission(view), config.claim_schema))  # a sample
    validator_view = env.unwrapped.game.validator_view
    shown = 0
    for role in ("proposer", "validator"):
        for spec in dict.fromkeys(policies.get(role, ())):
            policy = make_policy(spec, role)
            if not hasattr(policy, "prompt_version"):
                continue
            if role == "proposer":
                messages = render_proposer_prompt(view, policy.prompt_version)
                schema = proposer_schema(config.claim_schema)
            else:
                messages, schema = render_validator_prompt(validator_view, policy.prompt_version), VALIDATOR_SCHEMA
            print(f"===== {role}: {policy!r}, prompt {policy.prompt_version} =====")
            for m in messages:
                print(f"--- {m['role']} ---\n{m['content']}")
            print(f"--- reply schema ---\n{json.dumps(schema, indent=2)}\n")
            shown += 1
    if not shown:
        print("no LLM policy among the proposers and validators: nothing would be sent")
    return 0


# ---------------------------------------------------------------------------
# reproduce
# ---------------------------------------------------------------------------
def _reproduce_arguments(rep: argparse.ArgumentParser) -> None:
    rep.add_argument("--out", type=out_dir, required=True, help="output directory")
    rep.add_argument("--seeds", type=seeds_arg, default=5, help="seeds per condition (default 5, as the paper)")
    rep.add_argument("--first-seed", type=seed_arg, default=0, help="first seed (default 0)")
    rep.add_argument("--episodes", type=episodes_arg, default=200, help="episodes per seed (default 200, as the paper)")
    rep.add_argument("--words", type=int_in(0, 60, " (the paper's max_words is 60)"), default=18,
                     help="words of the honest proposer's text (default 18, about GPT-4.1's average; the paper's "
                     "scripted trader wrote 13)")  # fmt: skip
    rep.add_argument("--engine", choices=ENGINES, default="auto",
                     help="batch: vectorised (scripted policies); aec: step the PettingZoo environment; "
                     "auto: batch whenever possible")  # fmt: skip
    rep.add_argument("--jobs", type=jobs_arg, help="worker processes (default 1); with --backend ray, the CPUs of "
                     "the Ray instance started here")  # fmt: skip
    add_backend_flags(rep)
    rep.add_argument("--proposer", help="run the paper's experiments with this proposer instead of the scripted "
                     "ones, e.g. 'llm' (its action-only regime strips the same replies)")  # fmt: skip
    rep.add_argument("--validator", default="rule", help="validator spec (default: the paper's rule engine)")
    rep.add_argument("--preset", choices=sorted(PRESETS), default="paper_scripted",
                     help="game preset (default paper_scripted: the proposer knows its true compliance)")  # fmt: skip
    add_flag_groups(rep, "OUT/llm_cache", ["proposer", "validator"])


def _reproduce(args: argparse.Namespace) -> int:
    from eq_env.exchange_audit.reproduce import ReproduceOptions, reproduce

    proposer = fill_spec(args.proposer, args) if args.proposer else None
    validator = fill_spec(args.validator, args)
    executor = executor_of(args, default_jobs=1)
    opts = ReproduceOptions(
        seeds=args.seeds, episodes=args.episodes, words=args.words, first_seed=args.first_seed,
        engine=args.engine, jobs=args.jobs or 1, proposer=proposer, validator=validator, preset=args.preset,
        concurrency=getattr(args, "concurrency", 8),
    )  # fmt: skip
    if getattr(args, "dry_run", False):
        return dry_run(ExchangeAuditConfig.from_preset(args.preset),
                       {"proposer": [proposer or "honest"], "validator": [validator]})  # fmt: skip
    configure_flag_groups(args, args.out / "llm_cache")
    result = reproduce(args.out, opts, progress=None, executor=executor)
    print((args.out / "table1.md").read_text())
    print((args.out / "table2.md").read_text())
    wrote = sorted(p.name for p in args.out.iterdir() if not p.name.startswith("."))  # (not the results' lock)
    print(f"wrote {', '.join(wrote)} to {args.out} in {result['seconds']:.1f} s")
    return failures(args.command, result["failed"], getattr(args, "cache", None))


# ---------------------------------------------------------------------------
# train, selfplay
# ---------------------------------------------------------------------------
def _train_arguments(tr: argparse.ArgumentParser) -> None:
    tr.add_argument("--backend", choices=("sb3", "rllib"), default="sb3",
                    help="sb3: one role against a fixed other (default); rllib: both roles at once, RLlib's "
                         "multi-agent PPO (pip install 'eq-env[rllib]')")  # fmt: skip
    tr.add_argument("--role", choices=("proposer", "validator"), help="the role to train (sb3; required there)")
    tr.add_argument("--algo", choices=("ppo", "maskable_ppo", "dqn"), default="ppo")
    tr.add_argument("--timesteps", type=timesteps_arg, default=50_000,
                    help="environment steps (= episodes) to train on, at least 64")  # fmt: skip
    tr.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    tr.add_argument("--out", type=out_dir, required=True, help="directory for the model and its reports")
    tr.add_argument("--opponent", help="the other role's policy spec (default: rule validator / honest proposer)")
    tr.add_argument("--reward-mode", choices=("individual", "welfare"), default="individual")
    intensities = list_of(_q, "audit intensities in [0, 1]")
    tr.add_argument("--audit-intensities", type=intensities, metavar="Q1,Q2,...",
                    help="comma-separated audit intensities, each episode's q drawn from them")  # fmt: skip
    tr.add_argument("--q-values", dest="audit_intensities", type=intensities, help=argparse.SUPPRESS)  # deprecated
    tr.add_argument("--eval-seeds", type=list_of(seed_arg, "seeds", distinct=True), default="1000,1001,1002",
                    help="held-out seeds for the evaluation (default 1000,1001,1002)")  # fmt: skip
    tr.add_argument("--eval-episodes", type=episodes_arg, default=2000,
                    help="episodes per evaluation seed (default 2000)")  # fmt: skip
    tr.add_argument("--n-envs", type=int_in(1, 4096), default=8,
                    help="environments stepped together, seeded seed, seed+1, ... (default 8)")  # fmt: skip
    tr.add_argument("--no-vec-env", dest="vectorised", action="store_false",
                    help="step the environments as single views in SB3's DummyVecEnv instead of the native "
                         "vectorised environment (the same episodes, slower)")  # fmt: skip
    add_config_flags(tr, ExchangeAuditConfig)
    from eq_env.baselines.rllib import add_rllib_flags

    add_rllib_flags(tr)


def _train(args: argparse.Namespace) -> int:
    if args.backend == "rllib":
        return _train_rllib(args)
    if args.role is None:
        raise ValueError("--role is required with --backend sb3 (--backend rllib trains both roles)")
    if args.ray_address is not None:
        raise ValueError("--ray-address goes with --backend rllib")
    from eq_env.baselines.exchange_audit.rl import train

    config = config_from_args(args, ExchangeAuditConfig)
    result = train(
        args.role, args.out, algo=args.algo, timesteps=args.timesteps, seed=args.seed, config=config,
        opponent=args.opponent, reward_mode=args.reward_mode, audit_intensities=args.audit_intensities,
        eval_seeds=args.eval_seeds, eval_episodes=args.eval_episodes, progress=None, n_envs=args.n_envs,
        vectorised=args.vectorised,
    )  # fmt: skip
    asked = f" ({result.timesteps} asked; SB3 ends on a whole rollout)" if result.steps_run != result.timesteps else ""
    print(f"trained {result.role} ({result.algo}) for {result.steps_run} steps{asked} in {result.seconds:.1f} s "
          f"({result.steps_per_second:.0f} steps/s); saved to {result.path}")  # fmt: skip
    print(f"use it anywhere a policy goes: --{result.role} sb3:path={result.path}")
    print(f"evaluation on held-out seeds {', '.join(map(str, args.eval_seeds))}, {args.eval_episodes} episodes "
          "each:\n")  # fmt: skip
    print(result.table())
    return 0


def _train_rllib(args: argparse.Namespace) -> int:
    from eq_env.baselines.rllib import run_from_args

    given = {
        "--role": args.role is not None,
        "--algo": args.algo != "ppo",
        "--opponent": args.opponent is not None,
        "--reward-mode": args.reward_mode != "individual",
        "--audit-intensities": args.audit_intensities is not None,
    }
    sb3_only = [flag for flag, was_given in given.items() if was_given]
    if sb3_only:
        raise ValueError(
            f"{', '.join(sb3_only)} go(es) with --backend sb3: --backend rllib trains both roles "
            "with PPO, each on its own payoff, at the configuration's q"
        )
    return run_from_args("exchange-audit", args, config_from_args(args, ExchangeAuditConfig))


def _selfplay_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--rounds", type=int_in(1, MAX_ROUNDS), default=3,
                    help="rounds of proposer-then-validator (default 3)")  # fmt: skip
    sp.add_argument("--timesteps", type=timesteps_arg, default=30_000, help="steps per training, at least 64")
    sp.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    sp.add_argument("--algo", choices=("ppo", "maskable_ppo"), default="ppo")
    sp.add_argument("--opponents", choices=("all", "latest"), default="all",
                    help="each training faces every policy the other role has played so far, one drawn per "
                         "episode (default: fictitious play), or its latest only (best-response dynamics, which "
                         "cycle)")  # fmt: skip
    sp.add_argument("--out", type=out_dir, required=True, help="output directory: tables, figures, summary.md")
    add_config_flags(sp, ExchangeAuditConfig)


def _selfplay(args: argparse.Namespace) -> int:
    from eq_env.baselines.exchange_audit.rl import selfplay

    selfplay(args.out, rounds=args.rounds, timesteps=args.timesteps, seed=args.seed,
             config=config_from_args(args, ExchangeAuditConfig), algo=args.algo, progress=None,
             opponents=args.opponents)  # fmt: skip
    print((args.out / "selfplay.md").read_text())
    print(f"wrote selfplay.csv, selfplay.md, selfplay.png and a model per training to {args.out}")
    return 0


# ---------------------------------------------------------------------------
# equilibrium, frontier
# ---------------------------------------------------------------------------
def _equilibrium_arguments(eq: argparse.ArgumentParser) -> None:
    eq.add_argument("--validator", default="rule", help="the validator the proposer responds to (default rule)")
    eq.add_argument("--proposer", help="the proposer the validator responds to (default: the honest proposer)")
    eq.add_argument("--episodes", type=int_in(4, MAX_EPISODES, " (half to choose, half to measure, two each)"),
                    default=100_000, help="episodes drawn (default 100000)")  # fmt: skip
    eq.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    add_config_flags(eq, ExchangeAuditConfig)


def _equilibrium(args: argparse.Namespace) -> int:
    from eq_env.exchange_audit.equilibrium import (
        analytic_threshold,
        game_threshold,
        proposer_best_response,
        validator_best_response,
    )
    from eq_env.exchange_audit.schema import get_schema

    config = config_from_args(args, ExchangeAuditConfig)
    proposer = args.proposer or ("honest:claims_from=truth" if config.reveal_compliance else "honest")
    print(f"game: q={config.q:g}, B={config.checks_per_audit}, V={config.V:g}, L={config.L:g}; "
          f"{args.episodes} episodes (half to choose, half to measure); audit exact, states Monte Carlo\n")  # fmt: skip
    print(proposer_best_response(config, args.validator, episodes=args.episodes, seed=args.seed,
                                 progress=None).summary())  # fmt: skip
    print()
    print(validator_best_response(config, proposer, reference=args.validator, episodes=args.episodes,
                                  seed=args.seed, progress=None).summary())  # fmt: skip
    pool = len(get_schema(config.claim_schema).checkable)
    q_star = analytic_threshold(config.V, config.L, config.checks_per_audit, lies=1, pool=pool)
    if math.isinf(q_star):
        eq3 = "eq. 3 never deters a one-claim lie (no q up to 1 does)"
    elif q_star == 0:
        eq3 = "by eq. 3 a one-claim lie never pays"
    else:
        eq3 = f"eq. 3 deters a one-claim lie from q = {q_star:.3f}"
    # the lie earns (1 - q)·V (approved unless audited, never fined) against NO_TRADE's sure payoff
    V, sure = config.V, config.no_trade_payoff
    if V <= sure:
        lie = f"never pays (approved, it earns V = {V:g}, no more than NO_TRADE's sure {sure:g})"
    elif sure < 0:
        lie = f"pays at every q (even blocked, its 0 beats NO_TRADE's {sure:g})"
    else:
        lie = f"pays while q < {game_threshold(config):.3f}"
    print(f"\n{eq3}; in this game a lie that shades the numbers and states no false claim {lie}")
    return 0


def _frontier_arguments(fr: argparse.ArgumentParser) -> None:
    fr.add_argument("--out", type=out_dir, required=True, help="output directory: tables, figures, summary.md")
    fr.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="paper_scripted",
        help="game preset (default paper_scripted: the proposer knows its true compliance)",
    )
    fr.add_argument("--qs", type=_qs, default=",".join(f"{q:g}" for q in (0.1 * i for i in range(11))),
                    help="the q grid: distinct audit intensities in [0, 1] (default 0 to 1 by 0.1)")  # fmt: skip
    fr.add_argument("--episodes", type=int_in(4, MAX_EPISODES), default=20_000,
                    help="episodes per best response and per evaluation (default 20000)")  # fmt: skip
    fr.add_argument("--timesteps", type=timesteps_arg, default=60_000, help="PPO training steps per scenario")
    fr.add_argument("--no-ppo", action="store_true", help="skip the PPO column (minutes faster)")
    fr.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    fr.add_argument("--jobs", type=jobs_arg, help="worker processes for the best responses (default 1); with "
                    "--backend ray, the CPUs of the Ray instance started here")  # fmt: skip
    add_backend_flags(fr)


def _frontier(args: argparse.Namespace) -> int:
    import importlib.util

    from eq_env.exchange_audit.frontier import frontier

    if not args.no_ppo and importlib.util.find_spec("stable_baselines3") is None:  # (before the hour of work)
        raise ValueError("the frontier's PPO column needs Stable-Baselines3, which is not installed: "
                         "pip install 'eq-env[rl]', or leave PPO out with --no-ppo")  # fmt: skip
    executor = executor_of(args, default_jobs=1)
    frontier(args.out, preset=args.preset, qs=args.qs, episodes=args.episodes, timesteps=args.timesteps,
             seed=args.seed, train_ppo=not args.no_ppo, progress=None, executor=executor)  # fmt: skip
    print((args.out / "frontier.md").read_text())
    return 0


# ---------------------------------------------------------------------------
# noisy-audits (issue 14, item 2)
# ---------------------------------------------------------------------------
_rate = number_type(float, "a rate in [0, 1]", lambda v: 0.0 <= v <= 1.0)


def _noise_pair(text: str) -> tuple[float, float]:
    """``EPS0:EPS1``: a miss rate and a false-fail rate, both in [0, 1]."""
    parts = text.split(":")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected EPS0:EPS1 (a miss and a false-fail rate), got {text!r}")
    return _rate(parts[0].strip()), _rate(parts[1].strip())


_noise = list_of(_noise_pair, "EPS0:EPS1 pairs (miss and false-fail rates in [0, 1])", distinct=True)


def _noisy_audits_arguments(na: argparse.ArgumentParser) -> None:
    from eq_env.exchange_audit.noisy import DEFAULT_NOISE

    na.add_argument("--out", type=out_dir, required=True, help="output directory: tables, figures, summary.md")
    na.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="paper_scripted",
        help="game preset (default paper_scripted: the proposer knows its true compliance)",
    )
    na.add_argument("--noise", type=_noise, default=",".join(f"{m:g}:{f:g}" for m, f in DEFAULT_NOISE),
                    help="the (ε₀, ε₁) grid as EPS0:EPS1 pairs, the same rates for every claim type "
                         "(default %(default)s)")  # fmt: skip
    na.add_argument("--qs", type=_qs, default=",".join(f"{q:g}" for q in (0.1 * i for i in range(11))),
                    help="the q grid of the best-response frontier (default 0 to 1 in steps of 0.1)")  # fmt: skip
    na.add_argument("--q", type=_q, default=0.3, help="the q of welfare, penalty and bad approvals (default 0.3)")
    na.add_argument("--V", type=non_negative_float, default=2.0, help="a misreport's gain V (default 2)")
    na.add_argument("--L", type=non_negative_float, default=1.0, help="the penalty L of a failed audit (default 1)")
    na.add_argument("--episodes", type=int_in(4, MAX_EPISODES), default=20_000,
                    help="episodes per measurement and per best response (default 20000)")  # fmt: skip
    na.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")


def _noisy_audits(args: argparse.Namespace) -> int:
    from eq_env.exchange_audit.noisy import noisy_audits

    noisy_audits(args.out, noise=args.noise, qs=args.qs, preset=args.preset, V=args.V, L=args.L, q=args.q,
                 episodes=args.episodes, seed=args.seed, progress=None)  # fmt: skip
    print((args.out / "noisy_audits.md").read_text())
    print(f"wrote noisy_audits.csv, noisy_audits_summary.csv, noisy_audits.md, noisy_audits.png, "
          f"noisy_audits_penalty.png and summary.md to {args.out}")  # fmt: skip
    return 0


# ---------------------------------------------------------------------------
# free-text (issue 14, item 3)
# ---------------------------------------------------------------------------
def _free_text_arguments(ft: argparse.ArgumentParser) -> None:
    ft.add_argument("--out", type=out_dir, required=True, help="output directory (re-running resumes from it)")
    ft.add_argument("--qs", type=_qs, default="0,0.1,0.3,0.5,0.7,1",
                    help="the q grid: distinct audit intensities in [0, 1] (default the paper's "
                         "0,0.1,0.3,0.5,0.7,1)")  # fmt: skip
    ft.add_argument("--q", type=_q, default=0.3, help="the q of the every-condition table, one of --qs (default 0.3)")
    ft.add_argument("--seeds", type=seeds_arg, default=5, help="seeds per condition (default 5)")
    ft.add_argument("--first-seed", type=seed_arg, default=0, help="first seed (default 0)")
    ft.add_argument("--episodes", type=episodes_arg, default=20_000, help="episodes per seed (default 20000)")
    ft.add_argument("--words", type=int_in(0, 60, " (the paper's max_words is 60)"), default=18,
                    help="words of the honest and mimic proposers' texts (default 18, about GPT-4.1's "
                         "average)")  # fmt: skip
    ft.add_argument("--preset", choices=sorted(PRESETS), default="paper",
                    help="game preset (default paper: claims and text both judged from the proposer's noisy "
                         "observation, so they carry the same information)")  # fmt: skip
    ft.add_argument("--validator", action="append", default=[], metavar="SPEC",
                    help="another validator beside the rule and the text reader, e.g. 'llm:gate=none' (the LLM "
                         "validator ungated); repeatable")  # fmt: skip
    ft.add_argument("--engine", choices=ENGINES, default="auto",
                    help="batch: vectorised (scripted policies); aec: step the PettingZoo environment; auto: batch "
                         "whenever possible")  # fmt: skip
    ft.add_argument("--jobs", type=jobs_arg, help="worker processes (default 1); with --backend ray, the CPUs of "
                    "the Ray instance started here")  # fmt: skip
    add_backend_flags(ft)
    add_flag_groups(ft, "OUT/llm_cache", ["validator"])


def _free_text(args: argparse.Namespace) -> int:
    from eq_env.exchange_audit.free_text import FreeTextOptions, free_text

    validators = tuple(fill_spec(spec, args) for spec in args.validator)
    executor = executor_of(args, default_jobs=1)
    opts = FreeTextOptions(qs=tuple(args.qs), q=args.q, seeds=args.seeds, first_seed=args.first_seed,
                           episodes=args.episodes, words=args.words, preset=args.preset, validators=validators,
                           engine=args.engine, concurrency=getattr(args, "concurrency", 8))  # fmt: skip
    if getattr(args, "dry_run", False):
        return dry_run(ExchangeAuditConfig.from_preset(args.preset).replace(regime="text_only"),
                       {"validator": list(validators)})  # fmt: skip
    configure_flag_groups(args, args.out / "llm_cache")
    result = free_text(args.out, opts, progress=None, executor=executor)
    print((args.out / "free_text.md").read_text())
    print(f"wrote {', '.join(result['files'])} to {args.out} in {result['seconds']:.1f} s")
    return failures(args.command, result["failed"], getattr(args, "cache", None))


# ---------------------------------------------------------------------------
# inspection (issue 14, item 6)
# ---------------------------------------------------------------------------
def _inspection_arguments(ins: argparse.ArgumentParser) -> None:
    from eq_env.exchange_audit.inspection import DEFAULT_BUDGETS, DEFAULT_COSTS, SCENARIOS

    costs = list_of(non_negative_float, "audit costs (non-negative numbers)", distinct=True)
    ins.add_argument("--out", type=out_dir, required=True, help="output directory: tables, figures, summary.md")
    ins.add_argument("--scenario", choices=sorted(SCENARIOS), default="temptation",
                     help="(V, L): " + ", ".join(f"{k} ({v[0]:g}, {v[1]:g})" for k, v in SCENARIOS.items())
                          + " (default temptation)")  # fmt: skip
    ins.add_argument("--V", type=non_negative_float, help="the approval reward V (default: the scenario's)")
    ins.add_argument("--L", type=non_negative_float, help="the penalty L of a failed audit (default: the scenario's)")
    ins.add_argument(
        "--audit-cost", type=non_negative_float, default=0.1, help="c, the cost of one audit (default 0.1)"
    )
    ins.add_argument("--claim-cost", type=non_negative_float, default=0.025,
                     help="κ, the cost per claim type of the budget: an audit with budget B costs c + κ·B "
                          "(default 0.025)")  # fmt: skip
    ins.add_argument("--bad-approval-loss", type=non_negative_float, default=10.0,
                     help="Λ, the validator's loss for approving a non-compliant trade (default 10)")  # fmt: skip
    ins.add_argument("--qs", type=_qs, default=",".join(f"{q:g}" for q in (0.1 * i for i in range(11))),
                     help="the q grid (default 0 to 1 in steps of 0.1)")  # fmt: skip
    ins.add_argument(
        "--budgets",
        type=list_of(int_in(1, 4), "budgets B", distinct=True),
        default=",".join(map(str, DEFAULT_BUDGETS)),
        help="the budgets B (default %(default)s)",
    )
    ins.add_argument("--costs", type=costs, default=",".join(f"{c:g}" for c in DEFAULT_COSTS),
                     help="the audit costs c of the leader-vs-cost table (default %(default)s)")  # fmt: skip
    ins.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="paper_scripted",
        help="game preset (default paper_scripted: the proposer knows its true compliance)",
    )
    ins.add_argument("--episodes", type=int_in(4, MAX_EPISODES), default=10_000,
                     help="episodes per best response: half choose it, half measure it (default 10000)")  # fmt: skip
    ins.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")


def _inspection(args: argparse.Namespace) -> int:
    from eq_env.exchange_audit.inspection import inspection

    inspection(args.out, scenario=args.scenario, V=args.V, L=args.L, audit_cost=args.audit_cost,
               claim_cost=args.claim_cost, bad_approval_loss=args.bad_approval_loss, qs=args.qs,
               budgets=args.budgets, costs=args.costs, preset=args.preset, episodes=args.episodes, seed=args.seed,
               progress=None)  # fmt: skip
    print((args.out / "inspection.md").read_text())
    print(f"wrote inspection.csv, inspection_equilibria.csv, inspection_costs.csv, inspection.md, inspection.png, "
          f"inspection_costs.png and summary.md to {args.out}")  # fmt: skip
    return 0


# ---------------------------------------------------------------------------
# sensitivity (issue 14, item 5)
# ---------------------------------------------------------------------------
def _variant(text: str) -> str:
    from eq_env.exchange_audit.sensitivity import prompt_variants

    known = prompt_variants()
    if text not in known:
        raise argparse.ArgumentTypeError(f"no prompt variant {shown(text)}; available: {', '.join(known)}")
    return text


def _regime(text: str) -> str:
    from eq_env.exchange_audit.reproduce import REGIMES

    if text not in REGIMES:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(REGIMES)}, got {shown(text)}")
    return text


def _sensitivity_arguments(se: argparse.ArgumentParser) -> None:
    from eq_env.agents.cli import LLM_FLAGS  # (the command runs the LLM proposer: its flags, --model repeatable)
    from eq_env.exchange_audit.sensitivity import DEFAULT_QS

    se.add_argument("--out", type=out_dir, required=True, help="output directory")
    se.add_argument("--demo", action="store_true", help="serve scripted models from a local server (no key, "
                    "no network): a behaviour per prompt variant, and a second model behind a hostile "
                    "transport")  # fmt: skip
    se.add_argument("--variants", type=list_of(_variant, "prompt variants", distinct=True),
                    help="prompt variants to compare (default: every proposer_<variant>.txt template)")  # fmt: skip
    se.add_argument("--qs", type=_qs, default=",".join(f"{q:g}" for q in DEFAULT_QS),
                    help="the q grid (default %(default)s)")  # fmt: skip
    se.add_argument("--regimes", type=list_of(_regime, "regimes", distinct=True), default="artifacts,action_only",
                    help="artifacts (claims and text), action_only (the same reply stripped), or both "
                         "(default %(default)s)")  # fmt: skip
    se.add_argument("--seeds", type=seeds_arg, default=5, help="seeds per condition (default 5)")
    se.add_argument("--first-seed", type=seed_arg, default=0, help="first seed (default 0)")
    se.add_argument("--episodes", type=episodes_arg, default=50, help="episodes per seed (default 50)")
    se.add_argument("--preset", choices=sorted(PRESETS), default="paper_scripted",
                    help="game preset (default paper_scripted: the proposer knows its true compliance)")  # fmt: skip
    se.add_argument("--validator", default="rule", help="validator spec (default: the paper's rule engine); an "
                    "'llm' validator is played by the model under test")  # fmt: skip
    LLM_FLAGS.add(se, "OUT/llm_cache", ["proposer", "validator"], many_models=True)


def _sensitivity(args: argparse.Namespace) -> int:
    from eq_env.agents.exchange_audit.demo import DEMO_MODELS
    from eq_env.exchange_audit.sensitivity import SensitivityOptions, sensitivity, variant_spec

    models: list[str | None] = [*model_names(args, DEMO_MODELS)]
    proposers, validators = [], []
    for model in models or [None]:  # (no --model: $EQ_ENV_MODEL, else gpt-4.1, as every LLM command)
        one = argparse.Namespace(**{**vars(args), "model": model})
        proposers.append(fill_spec("llm", one))
        validators.append(fill_spec(args.validator, one))
    opts = SensitivityOptions(
        proposers=tuple(proposers), variants=tuple(args.variants or ()), qs=tuple(args.qs),
        regimes=tuple(args.regimes), seeds=args.seeds, first_seed=args.first_seed, episodes=args.episodes,
        preset=args.preset, validators=tuple(validators), concurrency=args.concurrency, demo=args.demo,
    )  # fmt: skip
    if args.dry_run:  # one prompt per variant (of the first model): what would be sent
        return dry_run(ExchangeAuditConfig.from_preset(args.preset),
                       {"proposer": [variant_spec(proposers[0], v, "artifacts") for v in opts.variants],
                        "validator": [validators[0]]})  # fmt: skip
    configure_flag_groups(args, args.out / "llm_cache")
    result = sensitivity(args.out, opts, progress=None)
    print((args.out / "sensitivity.md").read_text())
    wrote = sorted(p.name for p in args.out.iterdir() if not p.name.startswith("."))  # (not the results' lock)
    print(f"wrote {', '.join(wrote)} to {args.out} in {result['seconds']:.1f} s")
    code = failures(args.command, result["failed"], args.cache)
    if args.demo and code:  # (the advice to run again cannot help here: the outage is part of the script)
        print("(--demo: demo-hostile's outage is scripted, so these episodes fail again on every run; the status "
              "3 shows how a real run reports failures)")  # fmt: skip
    return code


# ---------------------------------------------------------------------------
# claim-schemas (issue 14, item 4)
# ---------------------------------------------------------------------------
def _schema_name(text: str) -> str:
    """A registered claim schema's name."""
    from eq_env.exchange_audit.schema import schema_names

    if text not in schema_names():
        raise argparse.ArgumentTypeError(f"expected a claim schema ({', '.join(schema_names())}), got {text!r}")
    return text


def _budget(text: str) -> int | None:
    """An audit budget B: a non-negative integer, or ``all``."""
    if text.lower() == "all":
        return None
    return number_type(int, "an audit budget (a non-negative integer, or all)", lambda v: v >= 0)(text)


def _claim_schemas_arguments(cs: argparse.ArgumentParser) -> None:
    from eq_env.exchange_audit.claim_schemas import DEFAULT_BUDGETS, DEFAULT_QS, DEFAULT_SCHEMAS

    cs.add_argument("--out", type=out_dir, required=True, help="output directory: tables, figures, summary.md")
    cs.add_argument(
        "--schemas",
        type=list_of(_schema_name, "claim schema names", distinct=True),
        default=",".join(DEFAULT_SCHEMAS),
        help="the claim schemas compared (default %(default)s)",
    )
    cs.add_argument(
        "--budgets",
        type=list_of(_budget, "audit budgets B (integers >= 0, or all)", distinct=True),
        default=",".join("all" if b is None else str(b) for b in DEFAULT_BUDGETS),
        help="the audit budgets B, each checking B claims of the schema's pool (default %(default)s)",
    )
    cs.add_argument(
        "--qs",
        type=_qs,
        default=",".join(f"{q:g}" for q in DEFAULT_QS),
        help="the q grid of the frontiers (default 0 to 1 in steps of 0.05)",
    )
    cs.add_argument("--q", type=_q, default=0.3, help="the q of detection, welfare and bad approvals (default 0.3)")
    cs.add_argument("--V", type=non_negative_float, default=2.0, help="a misreport's gain V (default 2)")
    cs.add_argument("--L", type=non_negative_float, default=4.0, help="the penalty L of a failed audit (default 4)")
    cs.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="paper_scripted",
        help="game preset (default paper_scripted: the proposer knows its true compliance)",
    )
    cs.add_argument(
        "--episodes", type=int_in(4, MAX_EPISODES), default=20_000, help="episodes per simulation (default 20000)"
    )
    cs.add_argument(
        "--br-episodes",
        type=int_in(4, MAX_EPISODES),
        default=20_000,
        help="episodes per best-response search, half to choose, half to measure (default 20000)",
    )
    cs.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")


def _claim_schemas(args: argparse.Namespace) -> int:
    from eq_env.exchange_audit.claim_schemas import claim_schemas

    claim_schemas(args.out, schemas=args.schemas, budgets=args.budgets, qs=args.qs, preset=args.preset, V=args.V,
                  L=args.L, q=args.q, episodes=args.episodes, br_episodes=args.br_episodes, seed=args.seed,
                  progress=None)  # fmt: skip
    print((args.out / "claim_schemas.md").read_text())
    print(f"wrote claim_schemas.csv, claim_schemas_summary.csv, claim_schemas.md, claim_schemas.png and summary.md "
          f"to {args.out}")  # fmt: skip
    return 0


# ---------------------------------------------------------------------------
# repeated (issue 14, item 1)
# ---------------------------------------------------------------------------
_delta = number_type(float, "a continuation δ in [0, 1)", lambda v: 0.0 <= v < 1.0)


def _audit_policy(text: str) -> str:
    from eq_env.exchange_audit.repeated.experiment import POLICIES

    if text not in POLICIES:
        raise argparse.ArgumentTypeError(f"expected an audit policy among {', '.join(POLICIES)}, got {text!r}")
    return text


def _punish_rounds(text: str) -> int | None:
    """``forever`` (None) or a positive number of rounds."""
    if text.strip().lower() in ("forever", "none"):
        return None
    return int_in(1, 100_000, " or 'forever'")(text)


# 0 (no PPO) or train's range: a larger count was once cut to 10^9 in silence, a training that never ends
_ppo_timesteps = number_type(int, f"0 (no PPO) or a number of steps in [64, {MAX_TIMESTEPS}]",
                             lambda v: v == 0 or 64 <= v <= MAX_TIMESTEPS)  # fmt: skip


def _repeated_arguments(rp: argparse.ArgumentParser) -> None:
    from eq_env.exchange_audit.repeated.experiment import DEFAULT_DELTAS, POLICIES

    rp.add_argument("--out", type=out_dir, required=True, help="output directory: tables, figures, summary.md")
    rp.add_argument("--preset", choices=sorted(p for p, c in PRESETS.items() if c.reveal_compliance),
                    default="paper_scripted", help="game preset: one whose proposer knows its compliance")  # fmt: skip
    rp.add_argument("--V", type=non_negative_float, default=2.0, help="approval reward V (default 2: temptation)")
    rp.add_argument("--L", type=non_negative_float, default=1.0, help="penalty L of a failed audit (default 1)")
    rp.add_argument("--miss", type=_rate, default=0.0, help="noisy audits: ε₀, a checked lie passes (default 0)")
    rp.add_argument("--false-fail", type=_rate, default=0.0,
                    help="noisy audits: ε₁, a checked true claim fails (default 0)")  # fmt: skip
    rp.add_argument("--deltas", type=list_of(_delta, "continuation probabilities δ in [0, 1)", distinct=True),
                    default=",".join(f"{d:g}" for d in DEFAULT_DELTAS),
                    help="geometric horizons: after each round the game goes on with probability δ "
                         "(default %(default)s)")  # fmt: skip
    rp.add_argument("--rounds", type=list_of(int_in(1, 100_000), "round counts T", distinct=True), default=[],
                    help="fixed horizons of exactly T rounds, besides the δ ones (e.g. 1,10)")  # fmt: skip
    rp.add_argument("--policies", type=list_of(_audit_policy, "audit policies", distinct=True),
                    default=",".join(POLICIES), help="audit policies (default %(default)s)")  # fmt: skip
    rp.add_argument("--qs", type=_qs, default=",".join(f"{q:g}" for q in (0.1 * i for i in range(11))),
                    help="the knob grid: q (fixed, trigger) or q_min (decay) (default 0 to 1 by 0.1)")  # fmt: skip
    rp.add_argument("--q0", type=_q, default=1.0, help="decay: the starting q (default 1)")
    rp.add_argument("--gamma", type=_rate, default=0.8, help="decay: q's factor per clean audit (default 0.8)")
    rp.add_argument("--q-punish", type=_q, default=1.0, help="trigger: q after a failed audit (default 1)")
    rp.add_argument("--punish-rounds", type=_punish_rounds, default=None,
                    help="trigger: rounds of punishment, or 'forever' (default: forever, a grim trigger)")  # fmt: skip
    rp.add_argument("--episodes", type=int_in(4, MAX_EPISODES), default=20_000,
                    help="positions sampled per stage estimate and one-shot best response (default 20000)")  # fmt: skip
    rp.add_argument("--check-delta", type=_delta, default=0.9,
                    help="the δ of the cells also played in the environment (default 0.9)")  # fmt: skip
    rp.add_argument("--simulate-episodes", type=int_in(2, MAX_EPISODES), default=1000,
                    help="episodes each checked cell is played (default 1000)")  # fmt: skip
    rp.add_argument("--ppo-timesteps", type=_ppo_timesteps, default=30_000,
                    help="train a PPO proposer with the history in its observation for N steps per checked cell "
                         "(default 30000, about a minute for the four cells; 0: no PPO)")  # fmt: skip
    rp.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")


def _repeated(args: argparse.Namespace) -> int:
    from eq_env.exchange_audit.repeated.experiment import repeated

    started = time.perf_counter()  # (the time goes to the console only: the files of a seed are byte-identical)
    repeated(args.out, preset=args.preset, V=args.V, L=args.L, miss=args.miss, false_fail=args.false_fail,
             deltas=args.deltas, rounds=args.rounds,
             policies=args.policies, qs=args.qs, q0=args.q0, gamma=args.gamma, q_punish=args.q_punish,
             punish_rounds=args.punish_rounds, episodes=args.episodes, check_delta=args.check_delta,
             simulate_episodes=args.simulate_episodes, ppo_timesteps=args.ppo_timesteps, seed=args.seed,
             progress=None)  # fmt: skip
    print((args.out / "repeated.md").read_text())
    print(f"wrote repeated.csv, repeated_summary.csv, repeated_checks.csv, repeated.md, repeated.png, "
          f"repeated_frontier.png and summary.md to {args.out} in {time.perf_counter() - started:.1f} s")  # fmt: skip
    return 0


COMMANDS = (
    Command(
        "reproduce",
        "the paper's tables and figure, offline, from scripted policies",
        _reproduce_arguments,
        _reproduce,
        "Run every experiment the paper reports with scripted policies and write table1.csv/.md, table2.csv/.md, "
        "figure4.png, results.jsonl and summary.md into --out. Re-running resumes.",
        "finished runs (and LLM episodes) are saved in --out; run the same command to resume",
    ),
    Command(
        "train",
        "train a proposer or validator with Stable-Baselines3 (or both with RLlib) and evaluate it",
        _train_arguments,
        _train,
        "Train one role on its single-agent view against a fixed policy for the other role; save the model, its "
        "configuration and a learning curve into --out; print its metrics on held-out seeds. The saved model is "
        "then the policy spec 'sb3:path=OUT'. With --backend rllib: both roles at once (a PPO module each, "
        "RLlib multi-agent, on Ray), saved as the policy spec 'rllib:path=OUT' of either role.",
    ),
    Command(
        "selfplay",
        "alternate training of the proposer and the validator for K rounds",
        _selfplay_arguments,
        _selfplay,
        "Each round trains the proposer, then the validator, each against every policy the other role has played "
        "so far, one drawn per episode (fictitious play; --opponents latest: the latest only); the first "
        "proposer faces the rule validator; prints approval, bad approval, welfare and both payoffs after each "
        "training and writes them to --out (selfplay.csv/.md/.png). Re-running resumes.",
        "finished trainings are saved in --out; run the same command to resume",
    ),
    Command(
        "equilibrium",
        "best responses of both roles and their incentive to deviate",
        _equilibrium_arguments,
        _equilibrium,
        "Search the proposer's best response to the validator, and the validator's best response to the proposer "
        "(exact over the audit, Monte Carlo over states); print both gaps and the deviations found.",
    ),
    Command(
        "frontier",
        "the deterrence frontier: eq. 3, the best response and PPO, side by side",
        _frontier_arguments,
        _frontier,
        "For several (V, L, B): the smallest q at which misreporting stops paying, from the paper's eq. 3, this "
        "game's analytic threshold, a best-response search and a PPO proposer trained across q. Writes "
        "frontier.csv, frontier_summary.csv, frontier.md and two plots into --out. The best responses (one per "
        "scenario and q) run on --backend and are kept in --out/points.jsonl as they finish (re-running "
        "resumes); PPO trains and is evaluated in this process.",
        "finished best responses (points.jsonl) and PPO models (ppo/) are saved in --out; run the same command "
        "to resume",
    ),
    Command(
        "noisy-audits",
        "noisy audits: welfare, honest penalty, bad approvals and the frontier as ε₀, ε₁ grow",
        _noisy_audits_arguments,
        _noisy_audits,
        "For each (ε₀, ε₁) of --noise (missed lies, false fails of true claims): welfare, an honest proposer's "
        "expected penalty and bad approvals at --q with the rule validator, and the deterrence frontier from "
        "a best-response search over --qs next to eq. 3 generalised to noisy detection. Writes "
        "noisy_audits.csv, noisy_audits_summary.csv, noisy_audits.md, noisy_audits.png, noisy_audits_penalty.png and "
        "summary.md into --out. Computed in this process (vectorised simulations and best-response searches, not a "
        "grid of runs through the runner): it takes no --backend.",
    ),
    Command(
        "free-text",
        "the cheap-talk collapse: artifacts vs text only vs action only, across q",
        _free_text_arguments,
        _free_text,
        "The same proposers (honest, silent, and a strategic mimic whose lies carry the honest text) under three "
        "regimes — typed claims and text, text only (claims withheld: audits are inconclusive), action only — "
        "against the rule validator, a scripted text reader and any --validator given: approval, bad approval, "
        "welfare and ambiguous approval across --qs, and the honest proposer's gain from artifacts split into "
        "information and structure. Writes free_text.csv, free_text.md, free_text.png, results.jsonl and "
        "summary.md into --out. Re-running resumes.",
        "finished runs (and LLM episodes) are saved in --out; run the same command to resume",
    ),
    Command(
        "inspection",
        "the validator as a strategic auditor: the inspection game's Nash and commitment equilibria",
        _inspection_arguments,
        _inspection,
        "The validator chooses q and B, paying c + κ·B per audit, against a proposer best-responding over the q "
        "grid and --budgets: its best (q, B) as a leader (own payoff and welfare) next to the fixed-q frontier, "
        "the simultaneous-move equilibrium (q*, m*) analytic and measured, and the leader's choice as the audit "
        "cost grows. Writes inspection.csv, inspection_equilibria.csv, inspection_costs.csv, inspection.md, "
        "inspection.png, inspection_costs.png and summary.md into --out. Computed in this process, every cell on "
        "one shared sample of states: it takes no --backend.",
    ),
    Command(
        "sensitivity",
        "the LLM proposer over prompt variants and models: each metric's spread across variants",
        _sensitivity_arguments,
        _sensitivity,
        "For each model (--model, repeatable) and prompt variant (--variants): the reproduction's artifacts and "
        "action-only regimes across --qs, recorded, resumable and replayable (--cache read). Writes per-variant "
        "means with 95% intervals, the spread across variants and an F-test of variants against seed noise: "
        "sensitivity_conditions.csv, sensitivity_variants.csv, sensitivity_spread.csv, sensitivity.md, "
        "sensitivity.png, llm_costs.csv and summary.md into --out. --demo runs scripted models on a local server. "
        "Every run has an LLM proposer, and LLM runs stay in this process (the two regimes of a state share one "
        "answer): it takes no --backend.",
        "finished runs and LLM episodes are saved in --out, the answers in its llm_cache; run the same command "
        "to resume",
    ),
    Command(
        "claim-schemas",
        "claim schemas: a richer schema against the paper's under a strategic proposer",
        _claim_schemas_arguments,
        _claim_schemas,
        "For each claim schema of --schemas and audit budget of --budgets: detection per audited lie, bad "
        "approvals and welfare at --q with the rule validator, and the q from which a strategic proposer and the "
        "best response stop misreporting, over --qs. Writes claim_schemas.csv, claim_schemas_summary.csv, "
        "claim_schemas.md, claim_schemas.png and summary.md into --out. Computed in this process (vectorised "
        "best-response searches, not a grid of runs through the runner): it takes no --backend.",
    ),
    Command(
        "repeated",
        "repeated play and reputation: the best response to fixed, decaying and trigger audit policies",
        _repeated_arguments,
        _repeated,
        "For each horizon (--deltas, --rounds), audit policy (--policies) and knob (--qs): the proposer's best "
        "response in the repeated game by dynamic programming over the reputation state, its misreport rate, "
        "welfare, audit cost and bad approvals; the deterrence frontier next to the one-shot one and the "
        "repeated-game condition; a few cells played in the environment (and by PPO with --ppo-timesteps). "
        "Writes repeated.csv, repeated_summary.csv, repeated_checks.csv, repeated.md, repeated.png, "
        "repeated_frontier.png and summary.md into --out. Computed in this process (dynamic programming over the "
        "reputation state, not a grid of runs through the runner): it takes no --backend.",
        "trained PPO models are saved in --out/ppo; run the same command to reuse them",
    ),
)
