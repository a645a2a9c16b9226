"""The ``eq-env`` command line.

``eq-env reproduce`` runs the paper's experiments (the main job);
``eq-env sweep`` runs any grid; ``eq-env play`` plays episodes with any policy
per role and prints the paper's metrics; ``eq-env policies`` lists the
policies and their parameters. Every game parameter is a flag of ``play``
(``--q 0.3 --B 2 --V 1 --L 2``) and a grid key of ``sweep``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from eq_env.core.report import from_json_number, json_number, no_negative_zeros
from eq_env.exchange_audit.config import COST_MODELS, PRESETS, ExchangeAuditConfig

if TYPE_CHECKING:
    from eq_env.policy import Role

__all__ = ["build_parser", "config_from_args", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (the house rule for bad input); the usage is one --help away."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _shown(text: str, quoted: bool = True) -> str:
    """A flag's text for an error message, a huge one shortened so the message stays one readable line."""
    if len(text) > 40:
        return f"{text[:12]!r}... ({len(text)} characters)"
    return repr(text) if quoted else text


def _field_type(name: str) -> Callable[[str], Any]:
    """An argparse type for a numeric game parameter: refused at parse time, with its range."""
    rng = dataclasses.fields(ExchangeAuditConfig)[ExchangeAuditConfig.field_names().index(name)].metadata["range"]

    def parse(text: str) -> Any:
        if name == "B" and text.strip().lower() in ("all", "none"):
            return None
        try:
            value: int | float = int(text) if rng.integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} must be {rng.describe()}{' or all' if name == 'B' else ''}, got {_shown(text)}"
            ) from None
        try:
            return rng.check(name, value)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("game parameters (default: the preset's)")
    group.add_argument("--preset", default="paper", choices=sorted(PRESETS), help="starting configuration")
    for f in dataclasses.fields(ExchangeAuditConfig):
        flag = "--" + f.name.replace("_", "-")
        doc = f.metadata["doc"]
        if f.name == "reveal_compliance":
            group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=doc)
        elif f.name == "B":
            group.add_argument(flag, type=_field_type("B"), default=argparse.SUPPRESS, metavar="N|all", help=doc)
        elif f.name == "cost_model":
            group.add_argument(flag, choices=COST_MODELS, default=None, help=doc)
        else:
            metavar = "INT" if f.metadata["range"].integer else "FLOAT"
            group.add_argument(flag, type=_field_type(f.name), default=None, metavar=metavar, help=doc)


def _number(kind: type, what: str, ok: Any) -> Any:
    """An argparse type: ``kind`` values for which ``ok(value)`` holds, else an error naming ``what``."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:  # (int() also refuses more than 4300 digits with a ValueError)
            raise argparse.ArgumentTypeError(f"expected {what}, got {_shown(text)}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {_shown(str(value), quoted=False)}")
        return value

    return parse


def _int_in(low: int, high: int, why: str = "") -> Callable[[str], int]:
    """An argparse type: an integer in [low, high]."""
    return _number(int, f"an integer in [{low}, {high}]{why}", lambda v: low <= v <= high)  # type: ignore[no-any-return]


_positive_int = _number(int, "a positive integer", lambda v: v >= 1)
_count = _number(int, "a non-negative integer", lambda v: v >= 0)
_positive_float = _number(float, "a positive number", lambda v: 0 < v < math.inf)
_non_negative_float = _number(float, "a non-negative number", lambda v: 0 <= v < math.inf)

# Upper bounds of the numeric flags: far beyond any real use, and low enough that nothing overflows, exhausts
# memory or forks a process per core many times over before saying so.
MAX_SEED = 2**32 - 1  # Stable-Baselines3 seeds numpy's legacy generator, which takes no larger seed
MAX_EPISODES = 10_000_000  # per seed (a run keeps every episode's outcome in memory)
MAX_SEEDS = 100_000
MAX_TIMESTEPS = 1_000_000_000
MAX_ROUNDS = 1_000
MAX_JOBS = 4 * (os.cpu_count() or 1)  # worker processes all start at once; more than a few per CPU only wait
_seed = _int_in(0, MAX_SEED)
_seeds = _int_in(1, MAX_SEEDS)
_episodes = _int_in(1, MAX_EPISODES)
_jobs = _int_in(1, MAX_JOBS, f" ({MAX_JOBS // 4 or 1} CPU(s) here)")
_timesteps = _int_in(64, MAX_TIMESTEPS)  # PPO's smallest rollout


def _path(text: str) -> Path:
    """An argparse type: a path, never empty (``Path("")`` is the current directory, which nobody means)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    return Path(text)


def _writable_under(path: Path) -> None:
    """Check that ``path`` and the missing directories above it can be created: its nearest existing
    ancestor is a directory we may write in."""
    existing = path.absolute().parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f"cannot create a directory under {existing}: it is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write under {existing}: permission denied")


def _new_file(text: str) -> Path:
    """An argparse type: a file to write once the run is over. Missing directories above it are created
    then, as ``--out`` directories are; that they can be is checked now, so no run is lost to a bad path."""
    path = _path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a directory; expected a file name")
    _writable_under(path)
    return path


def _out_dir(text: str) -> Path:
    """An argparse type: an output directory, existing or to be created. A file in its place is refused
    now (``mkdir`` would say only "File exists", after the options were checked)."""
    path = _path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} exists and is not a directory")  # (argparse names --out)
    if not path.exists():
        _writable_under(path)
    return path


def _results_file(text: str) -> Path:
    """An argparse type: an existing results file to read."""
    path = _path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{path} does not exist; expected a results.jsonl written by reproduce "
                                         "or sweep")  # fmt: skip
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a directory; expected a results.jsonl (e.g. {path}/results.jsonl)")
    return path


def _list_of(kind: Callable[[str], Any], what: str, *, distinct: bool = False) -> Callable[[str], list[Any]]:
    """An argparse type: a non-empty comma-separated list of ``kind`` values."""

    def parse(text: str) -> list[Any]:
        items = [x.strip() for x in text.split(",")]
        if not any(items):
            raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got an empty list")
        values = []
        for item in items:
            try:
                values.append(kind(item))
            except argparse.ArgumentTypeError as err:
                raise argparse.ArgumentTypeError(f"comma-separated {what}: {err}") from None
        if distinct and len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"expected distinct {what}, got {text!r}")
        return values

    return parse


_q = _number(float, "an audit intensity in [0, 1]", lambda v: 0.0 <= v <= 1.0)
_qs = _list_of(_q, "audit intensities in [0, 1]", distinct=True)


def _add_cache_flags(group: Any, cache_default: str, mode_default: str) -> None:
    group.add_argument("--cache", choices=("off", "read", "write", "readwrite"), default=mode_default,
                       help="record and replay: read = replay only (no request is made), write = always ask and "
                       f"record, readwrite = replay hits and record misses (default {mode_default})")  # fmt: skip
    group.add_argument("--cache-dir", type=_path, help=f"where answers are recorded (default: {cache_default})")


def _url(text: str) -> str:
    """An argparse type: an endpoint URL (an empty one, from an unset shell variable, must not quietly mean
    $OPENAI_BASE_URL or OpenAI's)."""
    from agents.client import check_base_url

    if not text.strip():
        raise argparse.ArgumentTypeError("expected an endpoint URL such as http://localhost:8000/v1, got ''")
    try:
        check_base_url(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _model_name(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a model name, got an empty string")
    return text  # opaque: sent byte for byte


def _add_llm_flags(parser: argparse.ArgumentParser, cache_default: str) -> None:
    group = parser.add_argument_group(
        "LLM policies", "for a proposer or validator spec 'llm' (flags fill what the spec does not say)"
    )
    group.add_argument("--model", type=_model_name,
                       help="model name, sent as is (default: $EQ_ENV_MODEL, else gpt-4.1)")  # fmt: skip
    group.add_argument("--base-url", type=_url, help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else "
                       "OpenAI's); "
                       "credentials in it are used, never recorded")  # fmt: skip
    group.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY); never stored or cached")
    group.add_argument("--temperature", type=_number(float, "a number in [0, 2]", lambda v: 0 <= v <= 2),
                       help="sampling temperature (default 0)")  # fmt: skip
    group.add_argument("--max-tokens", type=_int_in(1, 10_000_000), help="completion token limit per request")
    group.add_argument("--llm-seed", type=_seed, help="the 'seed' sampling parameter sent with requests")
    group.add_argument("--max-reasks", type=_count,
                       help="invalid replies sent back with the error before the fallback (default 2)")  # fmt: skip
    group.add_argument("--concurrency", type=_int_in(1, 4096), default=8,
                       help="episodes in flight at once (default 8)")  # fmt: skip
    _add_cache_flags(group, cache_default, "readwrite")
    group.add_argument("--max-retries", type=_int_in(0, 100), default=5,
                       help="retries after 429/408/409/5xx/timeouts/connection errors (default 5)")  # fmt: skip
    group.add_argument("--backoff", type=_non_negative_float, default=0.5,
                       help="first retry delay in seconds, doubled per retry, with jitter (default 0.5)")  # fmt: skip
    group.add_argument("--timeout", type=_positive_float, default=60.0, help="seconds per request (default 60)")
    group.add_argument("--price-prompt", type=_non_negative_float, default=0.0,
                       help="dollars per million prompt tokens")  # fmt: skip
    group.add_argument("--price-completion", type=_non_negative_float, default=0.0,
                       help="dollars per million completion tokens")  # fmt: skip
    group.add_argument("--no-endpoint-check", dest="endpoint_check", action="store_false",
                       help="do not check, before the first request, that the endpoint answers, accepts the key "
                       "and lists the model (for endpoints that serve models they do not list)")  # fmt: skip
    group.add_argument("--dry-run", action="store_true",
                       help="print one rendered prompt per LLM role and the reply schema; call nothing")  # fmt: skip


def _llm_spec(spec: str, role: str, args: argparse.Namespace) -> str:
    """An ``llm`` spec with the model, endpoint and sampling flags filled in (they key the results).

    Values are written so that they read back exactly (:func:`~eq_env.policy.format_policy_spec`):
    a model name such as ``x,gate=none`` stays one model name and cannot set another parameter; the
    endpoint goes in with its credentials masked (the real one stays in this process's memory).
    """
    from eq_env.policy import format_policy_spec, parse_policy_spec

    name, kwargs = parse_policy_spec(spec)
    if name != "llm":
        return spec
    from agents.client import register_endpoint, resolve_base_url

    model = args.model if args.model is not None else os.environ.get("EQ_ENV_MODEL") or "gpt-4.1"
    fill = {
        "model": model,
        "base_url": resolve_base_url(args.base_url),
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "seed": args.llm_seed,
        "max_reasks": args.max_reasks,
    }
    for key, value in fill.items():
        if value is not None and key not in kwargs:
            kwargs[key] = value
    if isinstance(kwargs.get("base_url"), str):
        kwargs["base_url"] = register_endpoint(kwargs["base_url"])
    return format_policy_spec(name, kwargs)


def _filled_spec(spec: str, role: str, args: argparse.Namespace) -> str:
    """:func:`_llm_spec`, or ``spec`` as given if it does not parse (the spec check says why, later)."""
    try:
        return _llm_spec(spec, role, args)
    except ValueError:
        return spec


def _configure_llm(args: argparse.Namespace, cache_dir: Path) -> None:
    from agents.client import configure

    configure(cache=args.cache, cache_dir=args.cache_dir or cache_dir, max_retries=args.max_retries,
              backoff=args.backoff, timeout=args.timeout, api_key=args.api_key, price_prompt=args.price_prompt,
              price_completion=args.price_completion, check_endpoint=args.endpoint_check)  # fmt: skip


def _dry_run(config: ExchangeAuditConfig, proposers: Sequence[str], validators: Sequence[str]) -> int:
    """Print what each LLM policy among the specs would be sent for one state, and the schema it must
    answer with; call nothing."""
    from agents.policies import render_proposer_prompt, render_validator_prompt
    from agents.schema import PROPOSER_SCHEMA, VALIDATOR_SCHEMA
    from baselines import HonestProposer
    from eq_env import exchange_audit_v0
    from eq_env.exchange_audit.spaces import decode_proposer_observation, encode_submission
    from eq_env.policy import make_policy

    env = exchange_audit_v0.env(config=config)
    env.reset(seed=0)
    view = decode_proposer_observation(env.observe("proposer_0"))
    env.step(encode_submission(HonestProposer(request="always").submission(view)))  # a sample to decide on
    validator_view = env.unwrapped.game.validator_view
    shown = 0
    for role, specs in (("proposer", proposers), ("validator", validators)):
        for spec in dict.fromkeys(specs):
            policy = make_policy(spec, role)  # type: ignore[arg-type]
            if not hasattr(policy, "prompt_version"):
                continue
            if role == "proposer":
                messages, schema = render_proposer_prompt(view, policy.prompt_version), PROPOSER_SCHEMA
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


def config_from_args(args: argparse.Namespace) -> ExchangeAuditConfig:
    """The validated configuration the flags describe."""
    overrides: dict[str, Any] = {}
    for name in ExchangeAuditConfig.field_names():
        if name == "B":
            if hasattr(args, "B"):
                overrides["B"] = args.B
        elif getattr(args, name, None) is not None:
            overrides[name] = getattr(args, name)
    return ExchangeAuditConfig.from_preset(args.preset, **overrides)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="eq-env", description="Multi-agent environments with verifiable reasoning (eq_env).")
    sub = parser.add_subparsers(dest="command", required=True)

    play = sub.add_parser(
        "play",
        help="play episodes with chosen policies and print the metrics",
        description="Play the exchange-audit game with a proposer and a validator policy; print the paper's "
        "metrics (mean and sample std over seeds).",
    )
    play.add_argument(
        "--proposer",
        default="honest",
        help="proposer policy spec, e.g. 'honest', 'silent', "
        "'strategic:trigger=payoff', 'honest:claims_from=observation,words=18'",
    )
    play.add_argument("--validator", default="rule", help="validator policy spec: 'rule', 'approve', 'block'")
    play.add_argument("--episodes", type=_episodes, default=200, help="episodes per seed (default 200)")
    play.add_argument("--seed", type=_seed, default=0, help="first seed (default 0)")
    play.add_argument("--seeds", type=_seeds, default=1, help="number of consecutive seeds (default 1)")
    play.add_argument("--render", action="store_true", help="print every episode as it finishes")
    play.add_argument("--records", type=_new_file, help="write one JSON line per episode to this file")
    play.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    _add_config_flags(play)
    _add_llm_flags(play, ".eq_env_cache/llm")

    rep = sub.add_parser(
        "reproduce",
        help="the paper's tables and figure, offline, from scripted policies",
        description="Run every experiment the paper reports with scripted policies and write table1.csv/.md, "
        "table2.csv/.md, figure4.png, results.jsonl and summary.md into --out. Re-running resumes.",
    )
    rep.add_argument("--out", type=_out_dir, required=True, help="output directory")
    rep.add_argument("--seeds", type=_seeds, default=5, help="seeds per condition (default 5, as the paper)")
    rep.add_argument("--first-seed", type=_seed, default=0, help="first seed (default 0)")
    rep.add_argument("--episodes", type=_episodes, default=200, help="episodes per seed (default 200, as the paper)")
    rep.add_argument("--words", type=_int_in(0, 60, " (the paper's max_words is 60)"), default=18,
                     help="words of the honest proposer's text (default 18, about GPT-4.1's average; the paper's "
                     "scripted trader wrote 13)")  # fmt: skip
    rep.add_argument("--engine", choices=("auto", "batch", "aec"), default="auto",
                     help="batch: vectorised (scripted policies); aec: step the PettingZoo environment; "
                     "auto: batch whenever possible")  # fmt: skip
    rep.add_argument("--jobs", type=_jobs, default=1, help="worker processes (default 1)")
    rep.add_argument("--proposer", help="run the paper's experiments with this proposer instead of the scripted "
                     "ones, e.g. 'llm' (its action-only regime strips the same replies)")  # fmt: skip
    rep.add_argument("--validator", default="rule", help="validator spec (default: the paper's rule engine)")
    rep.add_argument("--preset", choices=sorted(PRESETS), default="paper_scripted",
                     help="game preset (default paper_scripted: the proposer knows its true compliance)")  # fmt: skip
    _add_llm_flags(rep, "OUT/llm_cache")

    sw = sub.add_parser(
        "sweep",
        help="run a grid of parameters and policies (resumable, parallel)",
        description="Sweep game parameters and policies. The grid comes from --config (TOML/YAML/JSON) and/or "
        "flags; results are appended to --out/results.jsonl as runs finish, so a killed sweep resumes.",
    )
    sw.add_argument("--out", type=_out_dir, required=True, help="output directory")
    sw.add_argument("--config", type=_path, help="sweep spec file (.toml, .yaml, .json)")
    sw.add_argument("--grid", action="append", default=[], metavar="NAME=V1,V2,...",
                    help="a swept game parameter, e.g. --grid q=0,0.3,1 (repeatable)")  # fmt: skip
    sw.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a fixed game parameter, e.g. --set B=2 (repeatable)")  # fmt: skip
    sw.add_argument("--proposer", action="append", help="a proposer spec (repeat to sweep several)")
    sw.add_argument("--validator", action="append", help="a validator spec (repeat to sweep several)")
    sw.add_argument("--preset", choices=sorted(PRESETS), help="starting configuration (default paper)")
    sw.add_argument("--seeds", type=_seeds, help="number of seeds (default 5)")
    sw.add_argument("--first-seed", type=_seed, help="first seed (default 0)")
    sw.add_argument("--episodes", type=_episodes, help="episodes per seed (default 200)")
    sw.add_argument("--engine", choices=("auto", "batch", "aec"), help="default auto")
    sw.add_argument("--jobs", type=_jobs, help="worker processes (default: 1 if every run can use the batch "
                    "engine, else the number of CPUs)")  # fmt: skip
    sw.add_argument("--plot-x", help="grid parameter for the x axis of sweep.png (default: the first numeric one)")
    sw.add_argument("--metrics", help="comma-separated metrics to tabulate and plot")
    _add_llm_flags(sw, "OUT/llm_cache")

    rr = sub.add_parser(
        "rerun",
        help="run one record of a results.jsonl again and check it",
        description="Re-run the condition and seed of one results record from its stored configuration and "
        "policies, print both sets of metrics, and exit 1 if they differ.",
    )
    rr.add_argument("results", type=_results_file, help="a results.jsonl written by reproduce or sweep")
    rr.add_argument("key", help="the record's key (its 'key' field, CONDITION/SEED)")
    rr.add_argument("--engine", choices=("auto", "batch", "aec"), default="auto")
    rr_llm = rr.add_argument_group("LLM policies")
    _add_cache_flags(rr_llm, "llm_cache next to the results file", "read")
    rr_llm.add_argument("--base-url", type=_url,
                        help="the record's endpoint with its credentials, which records hold masked "
                        "(http://***@host/v1); needed to ask it again (--cache readwrite or write)")  # fmt: skip
    rr_llm.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY); never stored or cached")

    tr = sub.add_parser(
        "train",
        help="train a proposer or validator with Stable-Baselines3 and evaluate it",
        description="Train one role on its single-agent view against a fixed policy for the other role; save the "
        "model, its configuration and a learning curve into --out; print its metrics on held-out seeds. The saved "
        "model is then the policy spec 'sb3:path=OUT'.",
    )
    tr.add_argument("--role", choices=("proposer", "validator"), required=True)
    tr.add_argument("--algo", choices=("ppo", "maskable_ppo", "dqn"), default="ppo")
    tr.add_argument("--timesteps", type=_timesteps, default=50_000,
                    help="environment steps (= episodes) to train on, at least 64")  # fmt: skip
    tr.add_argument("--seed", type=_seed, default=0)
    tr.add_argument("--out", type=_out_dir, required=True, help="directory for the model and its reports")
    tr.add_argument("--opponent", help="the other role's policy spec (default: rule validator / honest proposer)")
    tr.add_argument("--reward-mode", choices=("individual", "welfare"), default="individual")
    tr.add_argument("--q-values", type=_list_of(_q, "audit intensities in [0, 1]"),
                    help="comma-separated audit intensities to draw each episode's q from")  # fmt: skip
    tr.add_argument("--eval-seeds", type=_list_of(_seed, "seeds", distinct=True), default="1000,1001,1002",
                    help="held-out seeds for the evaluation (default 1000,1001,1002)")  # fmt: skip
    tr.add_argument("--eval-episodes", type=_episodes, default=2000, help="episodes per evaluation seed (default 2000)")
    _add_config_flags(tr)

    sp = sub.add_parser(
        "selfplay",
        help="alternate training of the proposer and the validator for K rounds",
        description="Each round trains the proposer against the current validator, then the validator against it "
        "(the first proposer faces the rule validator); prints approval, bad approval, welfare and both payoffs "
        "after each training and writes them to --out (selfplay.csv/.md/.png). Re-running resumes.",
    )
    sp.add_argument("--rounds", type=_int_in(1, MAX_ROUNDS), default=3,
                    help="rounds of proposer-then-validator (default 3)")  # fmt: skip
    sp.add_argument("--timesteps", type=_timesteps, default=30_000, help="steps per training, at least 64")
    sp.add_argument("--seed", type=_seed, default=0)
    sp.add_argument("--algo", choices=("ppo", "maskable_ppo"), default="ppo")
    sp.add_argument("--out", type=_out_dir, required=True)
    _add_config_flags(sp)

    eq = sub.add_parser(
        "equilibrium",
        help="best responses of both roles and their incentive to deviate",
        description="Search the proposer's best response to the validator, and the validator's best response to "
        "the proposer (exact over the audit, Monte Carlo over states); print both gaps and the deviations found.",
    )
    eq.add_argument("--validator", default="rule", help="the validator the proposer responds to (default rule)")
    eq.add_argument("--proposer", help="the proposer the validator responds to (default: the honest proposer)")
    eq.add_argument("--episodes", type=_int_in(4, MAX_EPISODES, " (half to choose, half to measure, two each)"),
                    default=100_000, help="episodes drawn (default 100000)")  # fmt: skip
    eq.add_argument("--seed", type=_seed, default=0)
    _add_config_flags(eq)

    fr = sub.add_parser(
        "frontier",
        help="the deterrence frontier: eq. 3, the best response and PPO, side by side",
        description="For several (V, L, B): the smallest q at which misreporting stops paying, from the paper's "
        "eq. 3, this game's analytic threshold, a best-response search and a PPO proposer trained across q. Writes "
        "frontier.csv, frontier_summary.csv, frontier.md and two plots into --out.",
    )
    fr.add_argument("--out", type=_out_dir, required=True)
    fr.add_argument("--preset", choices=sorted(PRESETS), default="paper_scripted")
    fr.add_argument("--qs", type=_qs, default=",".join(f"{q:g}" for q in (0.1 * i for i in range(11))),
                    help="the q grid: distinct audit intensities in [0, 1] (default 0,0.1,...,1)")  # fmt: skip
    fr.add_argument("--episodes", type=_int_in(4, MAX_EPISODES), default=20_000,
                    help="episodes per best response and per evaluation (default 20000)")  # fmt: skip
    fr.add_argument("--timesteps", type=_timesteps, default=60_000, help="PPO training steps per scenario")
    fr.add_argument("--no-ppo", action="store_true", help="skip the PPO column (minutes faster)")
    fr.add_argument("--seed", type=_seed, default=0)

    sub.add_parser("policies", help="list the available policies and their parameters")
    return parser


def _cmd_play(args: argparse.Namespace) -> int:
    from eq_env.runner import evaluate, format_metrics_table

    config = config_from_args(args)
    proposer, validator = _llm_spec(args.proposer, "proposer", args), _llm_spec(args.validator, "validator", args)
    if args.dry_run:
        return _dry_run(config, [proposer], [validator])
    _configure_llm(args, Path(".eq_env_cache/llm"))
    seeds = list(range(args.seed, args.seed + args.seeds))
    ev = evaluate(
        config,
        proposer,
        validator,
        episodes=args.episodes,
        seeds=seeds,
        progress=None,
        render=(lambda text: print(text)) if args.render else None,
        concurrency=args.concurrency,
    )
    if args.records:  # (checked at parse time: its directory exists or can be created)
        args.records.parent.mkdir(parents=True, exist_ok=True)
        with args.records.open("w") as fh:
            played: list[Any] = [*ev.records, *ev.failed]
            for e in sorted(played, key=lambda e: (e.seed, e.episode)):
                fh.write(json.dumps(e.to_dict()) + "\n")
    for f in ev.failed[:5]:
        print(f"eq-env play: seed {f.seed} episode {f.episode} failed ({f.role}): {f.error}", file=sys.stderr)
    status = 0
    if ev.failed:
        status = INCOMPLETE
        print(f"eq-env play: {len(ev.failed)} of {len(seeds) * args.episodes} episodes failed and are left out "
              "of the metrics", file=sys.stderr)  # fmt: skip
    summary = ev.summary
    llm = _llm_costs(ev, proposer, validator, (args.price_prompt, args.price_completion))
    if args.json:
        print(
            json.dumps(
                {
                    "proposer": ev.proposer,
                    "validator": ev.validator,
                    "config": config.to_dict(),
                    "seeds": seeds,
                    "episodes": args.episodes,
                    "metrics": {k: {"mean": json_number(m), "std": json_number(s)} for k, (m, s) in summary.items()},
                    **({"llm": llm} if llm is not None else {}),
                },
                indent=2,
                allow_nan=False,
            )
        )
        return status
    changed = {k: v for k, v in config.to_dict().items() if v != PRESETS[args.preset].to_dict()[k]}
    print(f"proposer  {ev.proposer}")
    print(f"validator {ev.validator}")
    print(
        f"game      preset {args.preset!r}"
        + (f" with {changed}" if changed else "")
        + f"  (q={config.q:g}, B={config.checks_per_audit}, V={config.V:g}, L={config.L:g})"
    )
    print(
        f"run       {len(seeds)} seed(s) {seeds[0]}..{seeds[-1]} x {args.episodes} episodes;"
        " std is over seeds (ddof=1)\n"
    )
    print(no_negative_zeros(format_metrics_table(summary)))
    if llm is not None:
        print("\n" + _format_llm_costs(llm))
    return status


_LLM_COUNTS = (
    "calls", "requests", "retries", "cache_hits", "transport_errors", "prompt_tokens", "completion_tokens",
    "billed_prompt_tokens", "billed_completion_tokens", "usage_estimated", "fallbacks", "reasks", "gated",
)  # fmt: skip


def _llm_costs(ev: Any, proposer: str, validator: str, prices: tuple[float, float]) -> dict[str, Any] | None:
    """What the LLM policies of a ``play`` cost, per role and in all (None when none took part).

    Tokens are :func:`~eq_env.runner.llm_summary`'s; dollars are priced as ``llm_costs.csv`` prices
    them (:func:`eq_env.experiments.llm_report`): ``cost_usd`` is what the samples cost when drawn,
    ``billed_usd`` what this run paid (nothing for answers from the cache).
    """
    from eq_env.policy import make_policy
    from eq_env.runner import is_async, llm_summary

    specs: dict[Role, str] = {"proposer": proposer, "validator": validator}
    roles = [role for role, spec in specs.items() if is_async(make_policy(spec, role))]
    if not roles:
        return None
    summary = llm_summary(ev.records, ev.failed)

    def usd(prompt: int, completion: int) -> float:
        return (prompt * prices[0] + completion * prices[1]) / 1e6

    out: dict[str, Any] = {"failed_episodes": summary["failed_episodes"],
                           "prices": {"prompt": prices[0], "completion": prices[1]}}  # fmt: skip
    for role in roles:  # (a role asked nothing when, say, every proposal was a NO_TRADE: zeros)
        part = summary.get(role, {})
        transport = part.get("transport", {})
        row = {k: part.get(k, transport.get(k, 0)) for k in _LLM_COUNTS}
        row["transport_errors"] = transport.get("errors", 0)
        row["cost_usd"] = usd(row["prompt_tokens"], row["completion_tokens"])
        row["billed_usd"] = usd(row["billed_prompt_tokens"], row["billed_completion_tokens"])
        out[role] = row
    for total in ("prompt_tokens", "completion_tokens", "cost_usd", "billed_usd"):
        out[total] = sum(out[r][total] for r in roles)
    return out


def _format_llm_costs(llm: dict[str, Any]) -> str:
    """``play``'s LLM block: a line per LLM role, then failures and dollars."""
    lines = ["LLM policies"]
    for role in ("proposer", "validator"):
        if role in llm:
            r = llm[role]
            lines.append(f"  {role:<9}  {r['requests']} requests, {r['retries']} retries, {r['cache_hits']} cache "
                         f"hits; {r['prompt_tokens']} prompt + {r['completion_tokens']} completion tokens; "
                         f"{r['fallbacks']} fallbacks, {r['reasks']} re-asks")  # fmt: skip
    prices = llm["prices"]
    if prices["prompt"] or prices["completion"]:
        cost = (f"cost ${llm['cost_usd']:.4f} at ${prices['prompt']:g}/M prompt and ${prices['completion']:g}/M "
                f"completion tokens (billed by this run: ${llm['billed_usd']:.4f})")  # fmt: skip
    else:
        cost = "no dollars: give --price-prompt and --price-completion (per million tokens)"
    lines.append(f"  failed episodes {llm['failed_episodes']}; {cost}")
    return "\n".join(lines)


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from eq_env.reproduce import ReproduceOptions, reproduce

    proposer = _llm_spec(args.proposer, "proposer", args) if args.proposer else None
    validator = _llm_spec(args.validator, "validator", args)
    opts = ReproduceOptions(
        seeds=args.seeds, episodes=args.episodes, words=args.words, first_seed=args.first_seed,
        engine=args.engine, jobs=args.jobs, proposer=proposer, validator=validator, preset=args.preset,
        concurrency=args.concurrency,
    )  # fmt: skip
    if args.dry_run:
        return _dry_run(ExchangeAuditConfig.from_preset(args.preset), [proposer or "honest"], [validator])
    _configure_llm(args, args.out / "llm_cache")
    result = reproduce(args.out, opts, progress=None)
    print((args.out / "table1.md").read_text())
    print((args.out / "table2.md").read_text())
    print(f"wrote {', '.join(sorted(p.name for p in args.out.iterdir()))} to {args.out} in {result['seconds']:.1f} s")
    return _failures(args.command, result["failed"], args.cache)


INCOMPLETE = 3  # exit status: finished, but some episodes failed (rerunning the command retries them, unless
# it replays a recording: see _failures)


def _failures(command: str, failed: Sequence[tuple[str, int, int]], cache: str) -> int:
    """Say which runs lost episodes (the endpoint stayed down...) and how to retry them."""
    if not failed:
        return 0
    lost = sum(n for _, n, _ in failed)
    empty = [k for k, n, total in failed if n == total]
    if cache == "read":  # a replay asks nothing: run again, it fails the same episodes the same way
        retry = ("this replay (--cache read) fails what the recording failed; run without --cache read "
                 "(readwrite, the default) to ask them again")  # fmt: skip
    else:
        retry = "run the same command again to retry them"
    print(f"eq-env {command}: {lost} episode(s) failed in {len(failed)} run(s) and are left out of the metrics"
          + (f"; {len(empty)} run(s) have no episode at all, e.g. {empty[0]}" if empty else "")
          + f"; the errors are in results.jsonl ('failed'); {retry}", file=sys.stderr)  # fmt: skip
    return INCOMPLETE


def _key_values(items: list[str], what: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise ValueError(f"{what} expects NAME=VALUE, got {item!r}")
        if key.strip() == "preset":  # the starting configuration, not a parameter it has
            raise ValueError(f"{what} {item}: 'preset' is not a game parameter; use --preset {value.split(',')[0]}")
        pairs.append((key.strip(), value))
    return pairs


def _flag_value(flag: str, key: str, text: str) -> Any:
    """A --grid or --set value, checked against its parameter's range here, so the error names the flag."""
    from eq_env.sweep import parse_value

    value = parse_value(text)
    field = next((f for f in dataclasses.fields(ExchangeAuditConfig) if f.name == key), None)
    if field is not None and "range" in field.metadata and not (key == "B" and value is None):
        try:
            field.metadata["range"].check(key, value)
        except ValueError as err:
            raise ValueError(f"{flag} {key}: {err}") from None
    return value  # (an unknown name is refused with the list of names when the spec is checked)


def _check_spec_limits(data: Mapping[str, Any], path: Path) -> None:
    """A spec file's episodes and seeds within the limits of the flags that set them (a value that is not an
    integer is refused when the spec is read, with its key)."""

    for key, low, high in (("episodes", 1, MAX_EPISODES), ("first_seed", 0, MAX_SEED)):
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and not low <= value <= high:
            raise ValueError(f"{path}: {key} must be an integer in [{low}, {high}], got {value}")
    seeds = data.get("seeds")
    if isinstance(seeds, int) and not isinstance(seeds, bool) and not 1 <= seeds <= MAX_SEEDS:
        raise ValueError(f"{path}: seeds must be a count in [1, {MAX_SEEDS}] or a list of seeds, got {seeds}")
    if isinstance(seeds, list):
        if len(seeds) > MAX_SEEDS:
            raise ValueError(f"{path}: seeds lists {len(seeds)} seeds; at most {MAX_SEEDS}")
        big = next((s for s in seeds if isinstance(s, int) and s > MAX_SEED), None)
        if big is not None:
            raise ValueError(f"{path}: seeds must be integers in [0, {MAX_SEED}], got {big}")


def _cmd_sweep(args: argparse.Namespace) -> int:
    from eq_env.exchange_audit.batch import is_batchable
    from eq_env.policy import make_policy
    from eq_env.sweep import (
        DEFAULT_PLOT_METRICS,
        SweepSpec,
        first_repeat,
        load_spec_file,
        repeated_policy,
        run_sweep,
        spec_table,
    )

    data: dict[str, Any] = load_spec_file(args.config) if args.config else {}
    if args.config:
        _check_spec_limits(data, args.config)
    try:  # the file's tables are checked before the flags' entries are merged into them
        grid, fixed = spec_table(data, "grid"), spec_table(data, "set")
    except ValueError as err:
        raise ValueError(f"{args.config}: {err}") from None
    given: set[tuple[str, str]] = set()  # a flag's name given twice would silently keep only the last
    for flag, pairs in (("--grid", _key_values(args.grid, "--grid")), ("--set", _key_values(args.set, "--set"))):
        for key, _ in pairs:
            if (flag, key) in given:
                raise ValueError(f"{flag} {key} given twice; give it once" + (
                    f", with all its values: {flag} {key}=V1,V2,..." if flag == "--grid" else ""))  # fmt: skip
            given.add((flag, key))
    for key, values in _key_values(args.grid, "--grid"):
        grid[key] = [_flag_value("--grid", key, v) for v in values.split(",")]
        repeated = first_repeat(grid[key])
        if repeated is not None:
            raise ValueError(f"--grid {key}={values} repeats {repeated[1]!r}: each value is one condition, run once")
    for key, value in _key_values(args.set, "--set"):
        fixed[key] = _flag_value("--set", key, value)
    for flag, role in (("--proposer", "proposer"), ("--validator", "validator")):
        specs = getattr(args, role) or []
        same = repeated_policy([_filled_spec(spec, role, args) for spec in specs], role)
        if same is not None:
            first, second = specs[same[0]], specs[same[1]]
            raise ValueError(f"{flag} {second!r} given twice" if first == second else
                             f"{flag} {second!r} is the same policy as {flag} {first!r}")  # fmt: skip
    data = {**data, "grid": grid, "set": fixed}
    for flag, key in (("proposer", "proposers"), ("validator", "validators"), ("preset", "preset"),
                      ("seeds", "seeds"), ("first_seed", "first_seed"), ("episodes", "episodes"),
                      ("engine", "engine")):  # fmt: skip
        if getattr(args, flag) is not None:
            data[key] = getattr(args, flag)
    spec = SweepSpec.from_mapping(data, source=str(args.config or "flags"))
    spec.proposers = [_llm_spec(p, "proposer", args) for p in spec.proposers]
    spec.validators = [_llm_spec(v, "validator", args) for v in spec.validators]
    if args.dry_run:
        return _dry_run(ExchangeAuditConfig.from_preset(spec.preset, **spec.set), spec.proposers, spec.validators)
    _configure_llm(args, args.out / "llm_cache")
    jobs = args.jobs
    if jobs is None:
        batchable = all(
            is_batchable(make_policy(p, "proposer")) and is_batchable(make_policy(v, "validator"))
            for p in spec.proposers for v in spec.validators
        )  # fmt: skip
        # (runs with LLM policies stay in this process whatever jobs says)
        jobs = 1 if batchable and spec.engine != "aec" else (os.cpu_count() or 1)
    metrics = tuple(m.strip() for m in args.metrics.split(",")) if args.metrics else DEFAULT_PLOT_METRICS
    rows = run_sweep(spec, args.out, jobs=jobs, progress=None, plot_x=args.plot_x, plot_metrics=metrics,
                     concurrency=args.concurrency)  # fmt: skip
    print((args.out / "summary.md").read_text())
    print(f"{len(rows)} conditions x {len(spec.seeds)} seeds; outputs in {args.out}")
    from eq_env.experiments import ResultsStore, failed_runs

    keys = {f"{r['condition']}/{seed}" for r in rows for seed in spec.seeds}
    stored = ResultsStore(args.out / "results.jsonl").load()
    return _failures(args.command, failed_runs(stored[k] for k in sorted(keys) if k in stored), args.cache)


def _cmd_rerun(args: argparse.Namespace) -> int:
    from eq_env.experiments import ResultsStore, rerun
    from eq_env.runner import format_metrics_table

    records = ResultsStore(args.results).load()  # (its existence was checked at parse time)
    if not records:
        raise ValueError(f"{args.results} holds no run records")
    if args.key not in records:
        sample = ", ".join(list(records)[:3])
        raise ValueError(f"no record with key {args.key!r} in {args.results} (keys look like: {sample})")
    old = records[args.key]
    _rerun_endpoints(old, args)
    from agents.client import configure

    # an LLM run is replayed from its recordings by default: same answers, no request
    configure(cache=args.cache, cache_dir=args.cache_dir or args.results.parent / "llm_cache",
              **({"api_key": args.api_key} if args.api_key is not None else {}))  # fmt: skip
    new = rerun(old, args.engine)
    print(f"{old['proposer']} vs {old['validator']}, seed {old['seed']}, {old['episodes']} episodes, "
          f"engine {new['engine']} (recorded: {old['engine']})")  # fmt: skip
    rows = {m: (from_json_number(old["metrics"][m]), from_json_number(new["metrics"][m])) for m in old["metrics"]}
    table = format_metrics_table(rows).replace("mean", "recorded", 1).replace("     std", "   rerun", 1)
    print(no_negative_zeros(table))
    same = old["metrics"] == new["metrics"]
    print("identical" if same else "DIFFERENT")
    return 0 if same else 1


def _rerun_endpoints(record: Mapping[str, Any], args: argparse.Namespace) -> None:
    """Make the LLM endpoints of ``record`` reachable as recorded, or refuse with one line.

    Records hold endpoints with their credentials masked (``http://***@host/v1``). ``--base-url`` gives
    the real one: it must be the record's once masked, and requests to the masked form then go to it.
    Without it, only a replay (``--cache read``) may use a masked endpoint: a request would
    authenticate as the literal mask.
    """
    from agents.client import register_endpoint, resolve_base_url
    from eq_env.core.redact import public_url
    from eq_env.policy import parse_policy_spec

    endpoints = []
    for role in ("proposer", "validator"):
        name, kwargs = parse_policy_spec(str(record.get(role, "")))
        if name == "llm":  # (an endpoint left out of the spec is the one $OPENAI_BASE_URL names now)
            endpoints.append(str(kwargs.get("base_url") or resolve_base_url(None)))
    endpoints = list(dict.fromkeys(endpoints))
    given = None
    if args.base_url is not None:
        url = resolve_base_url(args.base_url)
        given = public_url(url)
        if not endpoints:
            raise ValueError(f"--base-url: record {args.key!r} has no LLM policy, so no endpoint to give")
        if given not in endpoints:
            raise ValueError(f"--base-url {given} does not match the record's endpoint {' or '.join(endpoints)} "
                             "(credentials masked)")  # fmt: skip
        register_endpoint(url)
    if args.cache != "read":
        masked = [e for e in endpoints if e != given and _has_masked_credentials(e)]
        if masked:
            raise ValueError(f"the record's endpoint {masked[0]} has masked credentials; give them with "
                             "--base-url (the full URL), or replay with --cache read")  # fmt: skip


def _has_masked_credentials(url: str) -> bool:
    """``url`` is an endpoint as records hold it, its userinfo or a query value masked."""
    from urllib.parse import parse_qsl, urlsplit

    from eq_env.core.redact import MASK

    try:
        parts = urlsplit(url)
    except ValueError:
        return True  # (public_url records an unreadable URL as the mask alone)
    userinfo = parts.netloc.rpartition("@")[0]
    return userinfo == MASK or any(v == MASK for _, v in parse_qsl(parts.query, keep_blank_values=True))


def _cmd_train(args: argparse.Namespace) -> int:
    from baselines.rl import train

    config = config_from_args(args)
    result = train(
        args.role, args.out, algo=args.algo, timesteps=args.timesteps, seed=args.seed, config=config,
        opponent=args.opponent, reward_mode=args.reward_mode, q_values=args.q_values, eval_seeds=args.eval_seeds,
        eval_episodes=args.eval_episodes, progress=None,
    )  # fmt: skip
    asked = f" ({result.timesteps} asked; SB3 ends on a whole rollout)" if result.steps_run != result.timesteps else ""
    print(f"trained {result.role} ({result.algo}) for {result.steps_run} steps{asked} in {result.seconds:.1f} s "
          f"({result.steps_per_second:.0f} steps/s); saved to {result.path}")  # fmt: skip
    print(f"use it anywhere a policy goes: --{result.role} sb3:path={result.path}")
    print(f"evaluation on held-out seeds {', '.join(map(str, args.eval_seeds))}, {args.eval_episodes} episodes "
          "each:\n")  # fmt: skip
    print(result.table())
    return 0


def _cmd_selfplay(args: argparse.Namespace) -> int:
    from baselines.rl import selfplay

    selfplay(args.out, rounds=args.rounds, timesteps=args.timesteps, seed=args.seed, config=config_from_args(args),
             algo=args.algo, progress=None)  # fmt: skip
    print((args.out / "selfplay.md").read_text())
    print(f"wrote selfplay.csv, selfplay.md, selfplay.png and a model per training to {args.out}")
    return 0


def _cmd_equilibrium(args: argparse.Namespace) -> int:
    from eq_env.equilibrium import (
        analytic_threshold,
        game_threshold,
        proposer_best_response,
        validator_best_response,
    )

    config = config_from_args(args)
    proposer = args.proposer or ("honest:claims_from=truth" if config.reveal_compliance else "honest")
    print(f"game: q={config.q:g}, B={config.checks_per_audit}, V={config.V:g}, L={config.L:g}; "
          f"{args.episodes} episodes (half to choose, half to measure); audit exact, states Monte Carlo\n")  # fmt: skip
    print(proposer_best_response(config, args.validator, episodes=args.episodes, seed=args.seed,
                                 progress=None).summary())  # fmt: skip
    print()
    print(validator_best_response(config, proposer, reference=args.validator, episodes=args.episodes,
                                  seed=args.seed, progress=None).summary())  # fmt: skip
    q_star = analytic_threshold(config.V, config.L, config.checks_per_audit, lies=1)
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


def _cmd_frontier(args: argparse.Namespace) -> int:
    from eq_env.frontier import frontier

    frontier(args.out, preset=args.preset, qs=args.qs, episodes=args.episodes,
             timesteps=args.timesteps, seed=args.seed, train_ppo=not args.no_ppo, progress=None)  # fmt: skip
    print((args.out / "frontier.md").read_text())
    return 0


def _cmd_policies(_: argparse.Namespace) -> int:
    from eq_env.policy import REQUIRED, available_policies

    for entry in available_policies():
        params = ", ".join(f"{k} (required)" if v is REQUIRED else f"{k}={v!r}" for k, v in entry.parameters().items())
        print(f"{entry.name:<10} {entry.role:<9} {entry.summary}")
        if params:
            print(f"{'':<20} parameters: {params}")
    return 0


INTERRUPTED = {  # what an interrupted command kept
    "reproduce": "finished runs (and LLM episodes) are saved in --out; run the same command to resume",
    "sweep": "finished runs (and LLM episodes) are saved in --out; run the same command to resume",
    "play": "nothing was saved (--records is written at the end)",
    "selfplay": "finished trainings are saved in --out; run the same command to resume",
}


# Exit status when whoever reads our output closes the pipe early (`eq-env play | head -1`): 128 + SIGPIPE,
# what a shell reports for a tool that SIGPIPE killed (Python ignores the signal and gets an EPIPE
# instead). Python's docs exit with 1; here 1 means that `rerun` found different results.
BROKEN_PIPE = 141


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    commands = {"play": _cmd_play, "policies": _cmd_policies, "reproduce": _cmd_reproduce, "sweep": _cmd_sweep,
                "rerun": _cmd_rerun, "train": _cmd_train, "selfplay": _cmd_selfplay,
                "equilibrium": _cmd_equilibrium, "frontier": _cmd_frontier}  # fmt: skip
    if args.command not in commands:
        parser.error(f"unknown command {args.command!r}")
    try:
        status = commands[args.command](args)
        sys.stdout.flush()  # here, where a closed pipe can still be caught, not at interpreter exit
        return status
    except BrokenPipeError:
        # as Python's docs advise (library/signal.html, "Note on SIGPIPE"): point stdout at devnull so the
        # interpreter's last flush cannot fail again, and end without a word, as `head` wanted
        with contextlib.suppress(OSError, ValueError):  # (a stdout without a file descriptor has no fd to move)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE
    except (ValueError, TypeError, OSError) as err:
        print(f"eq-env {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"eq-env {args.command}: interrupted; {INTERRUPTED.get(args.command, 'nothing was saved')}",
              file=sys.stderr)  # fmt: skip
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
