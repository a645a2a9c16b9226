"""The plumbing of the ``eq-env`` command, for every registered game.

The generic commands — ``play`` (episodes with a policy per role, and the
game's metrics), ``sweep`` (any grid), ``rerun`` (one recorded run again),
``policies`` and ``envs`` — take ``--env`` (default: the default game) and get
their flags from the game's spec: a ``--<role>`` flag per role, a flag per
configuration field (``--q 0.3``), ``--preset``. Each game adds its own
subcommands (``EnvSpec.commands()``), which take ``--env`` too; without ``--env`` the
default game's and every other game's are there, and with it a command the game
has not is refused in one line naming the games that have it (never another
game's run on that game). Flag groups (:class:`FlagGroup`; the LLM flags
of :mod:`eq_env.agents.cli`) add flags that fill policy specs.

Bad input gets one line naming the flag and what was expected, and exit
status 2 (so does a run lost with its Ray node more often than Ray
resubmits it: the same command run again completes it); a run that ended
with failed episodes exits 3; an interrupted one 130 (saying what was kept).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol

from eq_env.core.config import GameConfig
from eq_env.core.executors import BACKENDS, Executor, RunLostError, executor_from_args
from eq_env.core.experiments import ENGINES
from eq_env.core.policy import UserPolicyError
from eq_env.core.report import from_json_number, json_number, no_negative_zeros, printable
from eq_env.core.spec import Command, EnvSpec, env_spec, registered_envs

__all__ = [
    "INCOMPLETE",
    "MAX_EPISODES",
    "MAX_INTEGER",
    "MAX_ROUNDS",
    "MAX_SEED",
    "MAX_SEEDS",
    "MAX_TIMESTEPS",
    "Command",
    "FlagGroup",
    "Parser",
    "add_backend_flags",
    "add_config_flags",
    "ascii_number",
    "build_parser",
    "config_from_args",
    "count",
    "episodes_arg",
    "executor_of",
    "failures",
    "fill_specs",
    "flag_groups",
    "given_flags",
    "int_in",
    "jobs_arg",
    "list_of",
    "main",
    "model_names",
    "new_file",
    "non_negative_float",
    "number_type",
    "out_dir",
    "path_arg",
    "positive_float",
    "ray_address_arg",
    "register_command",
    "register_flag_group",
    "results_file",
    "seed_arg",
    "seeds_arg",
    "timesteps_arg",
]


class Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (the house rule for bad input); the usage is one --help away.
    No abbreviated flags: ``--en`` is not ``--env`` (the flags of a command depend on the game)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        # (argparse quotes some of what it was given as is: "unrecognized arguments: ...")
        self.exit(2, f"{self.prog}: error: {printable(message)} (see {self.prog} --help)\n")


# ---------------------------------------------------------------------------
# Flag types: each refuses bad input at parse time, naming what it expected
# ---------------------------------------------------------------------------
def shown(text: str, quoted: bool = True) -> str:
    """A flag's text for an error message, a huge one shortened so the message stays one readable line."""
    if len(text) > 40:
        return f"{text[:12]!r}... ({len(text)} characters)"
    return repr(text) if quoted else text


MAX_INTEGER = 2**63 - 1  # no integer flag takes more (seeds, counts and steps end in numpy's int64)


def ascii_number(text: str, kind: type) -> Any:
    """``kind(text)`` (int or float) of ASCII text only: Python reads other scripts' digits too (``int("٤")``
    is 4), which no flag means. A ValueError otherwise, as for any text that is no number."""
    if not text.isascii():
        raise ValueError(f"not ASCII: {text!r}")
    return kind(text)


def number_type(kind: type, what: str, ok: Callable[[Any], bool]) -> Callable[[str], Any]:
    """An argparse type: ``kind`` values, written in ASCII, for which ``ok(value)`` holds, else an error naming
    ``what``. An integer is at most :data:`MAX_INTEGER` whatever ``ok`` says (a 400-digit value is a typo)."""

    def parse(text: str) -> Any:
        try:
            value = ascii_number(text, kind)
        except ValueError:  # (int() also refuses more than 4300 digits with a ValueError)
            digits = "" if text.isascii() else " in ASCII digits"
            raise argparse.ArgumentTypeError(f"expected {what}{digits}, got {shown(text)}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {shown(str(value), quoted=False)}")
        if kind is int and abs(value) > MAX_INTEGER:
            raise argparse.ArgumentTypeError(f"expected {what} up to {MAX_INTEGER}, got {shown(str(value))}")
        return value

    return parse


def int_in(low: int, high: int, why: str = "") -> Callable[[str], int]:
    """An argparse type: an integer in [low, high]."""
    return number_type(int, f"an integer in [{low}, {high}]{why}", lambda v: low <= v <= high)


count = number_type(int, "a non-negative integer", lambda v: v >= 0)
positive_float = number_type(float, "a positive number", lambda v: 0 < v < math.inf)
non_negative_float = number_type(float, "a non-negative number", lambda v: 0 <= v < math.inf)

# Upper bounds of the numeric flags: far beyond any real use, and low enough that nothing overflows, exhausts
# memory or forks a process per core many times over before saying so.
MAX_SEED = 2**32 - 1  # Stable-Baselines3 seeds numpy's legacy generator, which takes no larger seed
MAX_EPISODES = 10_000_000  # per seed (a run keeps every episode's outcome in memory)
MAX_SEEDS = 100_000
MAX_TIMESTEPS = 1_000_000_000
MAX_ROUNDS = 1_000
MAX_JOBS = 4 * (os.cpu_count() or 1)  # worker processes all start at once; more than a few per CPU only wait
seed_arg = int_in(0, MAX_SEED)
seeds_arg = int_in(1, MAX_SEEDS)
episodes_arg = int_in(1, MAX_EPISODES)
jobs_arg = int_in(1, MAX_JOBS, f" ({MAX_JOBS // 4 or 1} CPU(s) here)")
timesteps_arg = int_in(64, MAX_TIMESTEPS)  # PPO's smallest rollout


def path_arg(text: str) -> Path:
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


def new_file(text: str) -> Path:
    """An argparse type: a file to write once the run is over. Missing directories above it are created
    then, as ``--out`` directories are; that they can be is checked now, so no run is lost to a bad path."""
    path = path_arg(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a directory; expected a file name")
    _writable_under(path)
    return path


def out_dir(text: str) -> Path:
    """An argparse type: an output directory, existing or to be created. A file in its place is refused
    now (``mkdir`` would say only "File exists", after the options were checked)."""
    path = path_arg(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} exists and is not a directory")  # (argparse names --out)
    if not path.exists():
        _writable_under(path)
    return path


def results_file(text: str) -> Path:
    """An argparse type: an existing results file to read."""
    path = path_arg(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(
            f"{path} does not exist; expected a results.jsonl written by reproduce or sweep"
        )
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a directory; expected a results.jsonl (e.g. {path}/results.jsonl)")
    return path


def list_of(kind: Callable[[str], Any], what: str, *, distinct: bool = False) -> Callable[[str], list[Any]]:
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


def given_flags(args: argparse.Namespace, names: Sequence[str]) -> list[str]:
    """The flags (``--n-envs``) of ``names`` (attributes, ``n_envs``) that were given, i.e. are not None: for a
    command with several backends, which refuses the flags of one with another rather than ignore them."""
    return ["--" + name.replace("_", "-") for name in names if getattr(args, name, None) is not None]


# ---------------------------------------------------------------------------
# A game's configuration as flags
# ---------------------------------------------------------------------------
def _field_type(name: str, rng: Any) -> Callable[[str], Any]:
    """An argparse type for a numeric game parameter: refused at parse time, with its range."""

    def parse(text: str) -> Any:
        if rng.none is not None and text.strip().lower() in (rng.none, "none"):
            return None
        try:
            value: int | float = ascii_number(text, int if rng.integer else float)
        except ValueError:
            digits = "" if text.isascii() else " in ASCII digits"
            raise argparse.ArgumentTypeError(
                f"{name} must be {rng.describe()}{f' or {rng.none}' if rng.none else ''}{digits}, got {shown(text)}"
            ) from None
        try:
            return rng.check(name, value)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return parse


def add_config_flags(parser: argparse.ArgumentParser, config: type[GameConfig], *, preset: bool = True) -> None:
    """A flag per parameter of the game's configuration class (``--q 0.3``, ``--reveal-compliance``...), and
    ``--preset`` unless ``preset`` is false; each refuses a bad value at parse time."""
    group = parser.add_argument_group("game parameters (default: the preset's)")
    if preset:
        group.add_argument(
            "--preset",
            default=config.DEFAULT_PRESET,
            choices=sorted(config.PRESETS),
            help=f"starting configuration (default {config.DEFAULT_PRESET})",
        )
    for f in config.parameters():
        flag = "--" + f.name.replace("_", "-")
        meta, doc = f.metadata, f.metadata.get("doc", "")
        if meta.get("kind") is bool:
            group.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=doc)
        elif "choices" in meta:
            group.add_argument(flag, dest=f.name, choices=meta["choices"], default=None, help=doc)
        elif "range" in meta:
            rng = meta["range"]
            metavar = ("N" if rng.integer else "X") + (f"|{rng.none}" if rng.none else "") if rng.none else None
            metavar = metavar or ("INT" if rng.integer else "FLOAT")
            # SUPPRESS, not None: a parameter that may be None (B=all) must tell "not given" from "None"
            group.add_argument(
                flag, dest=f.name, type=_field_type(f.name, rng), default=argparse.SUPPRESS, metavar=metavar, help=doc
            )


def config_from_args(args: argparse.Namespace, config: type[GameConfig], preset: str | None = None) -> Any:
    """The validated configuration the flags describe (the preset, with the parameters given)."""
    overrides: dict[str, Any] = {}
    for f in config.parameters():
        # a numeric flag not given is absent (SUPPRESS: its None may mean "all"); the others are None
        if hasattr(args, f.name) and ("range" in f.metadata or getattr(args, f.name) is not None):
            overrides[f.name] = getattr(args, f.name)
    return config.from_preset(preset if preset is not None else args.preset, **overrides)


# ---------------------------------------------------------------------------
# Flag groups: flags that fill policy specs (the LLM flags)
# ---------------------------------------------------------------------------
class FlagGroup(Protocol):
    """Flags that fill policy specs and configure what plays them (:mod:`eq_env.agents.cli` is one)."""

    def add(self, parser: argparse.ArgumentParser, cache_default: str, roles: Sequence[str] = ()) -> None: ...

    def fill(self, spec: str, args: argparse.Namespace) -> str: ...

    def configure(self, args: argparse.Namespace, cache_dir: Path) -> None: ...

    def prices(self, args: argparse.Namespace) -> tuple[float, float]: ...

    def add_rerun(self, parser: argparse.ArgumentParser, cache_default: str) -> None: ...

    def configure_rerun(self, policies: Mapping[str, str], args: argparse.Namespace, cache_dir: Path) -> None: ...


_GROUPS: list[FlagGroup] = []


def register_flag_group(group: FlagGroup) -> None:
    if group not in _GROUPS:
        _GROUPS.append(group)


def flag_groups() -> list[FlagGroup]:
    return list(_GROUPS)


def add_flag_groups(parser: argparse.ArgumentParser, cache_default: str, roles: Sequence[str] = ()) -> None:
    for group in _GROUPS:
        group.add(parser, cache_default, roles)


def fill_spec(spec: str, args: argparse.Namespace) -> str:
    """A policy spec with what the flag groups' flags say filled in."""
    for group in _GROUPS:
        spec = group.fill(spec, args)
    return spec


def model_names(args: argparse.Namespace, demo_models: Sequence[str]) -> list[str]:
    """The ``--model`` names of a command that takes several, distinct; with ``--demo`` (which serves its own
    endpoint), names of ``demo_models`` only, all of them when none is given."""
    names = list(args.model or [])
    if args.demo:
        if args.base_url is not None:
            raise ValueError("--base-url: --demo serves its own endpoint; drop one of them")
        unknown = [m for m in names if m not in demo_models]
        if unknown:
            raise ValueError(f"--model {unknown[0]!r}: the demo serves {', '.join(demo_models)}")
        names = names or list(demo_models)
    if len(set(names)) != len(names):
        raise ValueError(f"--model: expected distinct models, got {', '.join(names)}")
    return names


def fill_specs(policies: Mapping[str, Sequence[str]], args: argparse.Namespace) -> dict[str, list[str]]:
    """Every role's policy specs with what the flag groups' flags say filled in."""
    return {role: [fill_spec(s, args) for s in specs] for role, specs in policies.items()}


def configure_flag_groups(args: argparse.Namespace, cache_dir: Path) -> None:
    for group in _GROUPS:
        group.configure(args, cache_dir)


def _prices(args: argparse.Namespace) -> tuple[float, float]:
    for group in _GROUPS:
        return group.prices(args)
    return 0.0, 0.0


def dry_run(game: EnvSpec, config: Any, policies: Mapping[str, Sequence[str]]) -> int:
    """``--dry-run``: what the game's LLM policies among ``policies`` would be sent; nothing is called."""
    show = _game_cli_attr(game, "dry_run")
    if show is None:
        print(f"{game.name} has no prompts to show: nothing would be sent")
        return 0
    return int(show(config, policies))


# ---------------------------------------------------------------------------
# Exit statuses
# ---------------------------------------------------------------------------
INCOMPLETE = 3  # exit status: finished, but some episodes failed (running the command again retries them,
# unless it replays a recording: see failures)


def failures(command: str, failed: Sequence[tuple[str, int, int]], cache: str | None) -> int:
    """Say which runs lost episodes (the endpoint stayed down...) and how to retry them; the exit status."""
    if not failed:
        return 0
    lost = sum(n for _, n, _ in failed)
    empty = [k for k, n, total in failed if n == total]
    if cache == "read":  # a replay asks nothing: run again, it fails the same episodes the same way
        retry = (
            "this replay (--cache read) fails what the recording failed; run without --cache read "
            "(readwrite, the default) to ask them again"
        )
    else:
        retry = "run the same command again to retry them"
    print(
        f"eq-env {command}: {lost} episode(s) failed in {len(failed)} run(s) and are left out of the metrics"
        + (f"; {len(empty)} run(s) have no episode at all, e.g. {printable(empty[0])}" if empty else "")
        + f"; the errors are in results.jsonl ('failed'); {retry}",
        file=sys.stderr,
    )
    return INCOMPLETE


# ---------------------------------------------------------------------------
# play
# ---------------------------------------------------------------------------
def _add_env(parser: argparse.ArgumentParser, game: EnvSpec) -> None:
    names = [s.name for s in registered_envs()] + [s.id for s in registered_envs()]
    # default None, not the game: a command tells "not given" (a spec file may name the game) from "given"
    parser.add_argument(
        "--env", choices=names, metavar="NAME", help=f"the game (default {game.name}; eq-env envs lists them)"
    )


def _add_play(sub: Any, game: EnvSpec) -> None:
    play = sub.add_parser(
        "play",
        help="play episodes with chosen policies and print the metrics",
        description=f"Play the {game.name} game with a policy per role; print its metrics (mean and sample std "
        "over seeds). --env chooses another game.",
    )
    _add_env(play, game)
    for role in game.roles:
        default = game.default_policies.get(role)
        said = f"default {default!r}" if default else "required: the game names no default"
        listed = f"eq-env policies --env {game.name} lists them; or module:Class,key=value"
        play.add_argument(
            f"--{role}", default=default, required=default is None, help=f"{role} policy spec ({said}; {listed})"
        )
    play.add_argument("--episodes", type=episodes_arg, default=200, help="episodes per seed (default 200)")
    play.add_argument("--seed", type=seed_arg, default=0, help="first seed (default 0)")
    play.add_argument("--seeds", type=seeds_arg, default=1, help="number of consecutive seeds (default 1)")
    play.add_argument("--render", action="store_true", help="print every episode as it finishes")
    play.add_argument("--records", type=new_file, help="write one JSON line per episode to this file")
    play.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    add_config_flags(play, game.config)
    add_flag_groups(play, ".eq_env_cache/llm", list(game.roles))


def _cmd_play(args: argparse.Namespace) -> int:
    from eq_env.core.runner import evaluate, format_metrics_table

    game = env_spec(args.env)
    config = config_from_args(args, game.config)
    policies = {role: fill_spec(getattr(args, role), args) for role in game.roles}
    if getattr(args, "dry_run", False):
        return dry_run(game, config, {role: [spec] for role, spec in policies.items()})
    configure_flag_groups(args, Path(".eq_env_cache/llm"))
    seeds = list(range(args.seed, args.seed + args.seeds))
    ev = evaluate(
        game,
        config,
        policies,
        episodes=args.episodes,
        seeds=seeds,
        progress=None,
        render=(lambda text: print(text)) if args.render else None,
        concurrency=getattr(args, "concurrency", 1),
    )
    if args.records:  # (checked at parse time: its directory exists or can be created)
        args.records.parent.mkdir(parents=True, exist_ok=True)
        with args.records.open("w") as fh:
            for e in sorted([*ev.records, *ev.failed], key=lambda e: (e.seed, e.episode)):
                fh.write(json.dumps(e.to_dict()) + "\n")
    for f in ev.failed[:5]:
        print(
            f"eq-env play: seed {f.seed} episode {f.episode} failed ({f.role}): {printable(f.error)}", file=sys.stderr
        )
    status = 0
    if ev.failed:
        status = INCOMPLETE
        print(
            f"eq-env play: {len(ev.failed)} of {len(seeds) * args.episodes} episodes failed and are left out "
            "of the metrics",
            file=sys.stderr,
        )
    summary = ev.summary
    llm = _llm_costs(game, config, ev, policies, _prices(args))
    if args.json:
        print(
            json.dumps(
                {
                    **({"env": game.id} if game.key_env else {}),
                    **ev.policies,
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
    preset = game.config.PRESETS[args.preset].to_dict()
    # (a field a game keys only when set, e.g. exchange-audit's noisy-audit options, is absent from the preset's dict)
    changed = {k: v for k, v in config.to_dict().items() if k not in preset or v != preset[k]}
    width = max(9, *(len(r) for r in game.roles))
    for role, shown_policy in ev.policies.items():
        print(f"{role:<{width}} {printable(shown_policy)}")
    describe = _game_cli_attr(game, "describe_config")
    print(
        f"{'game':<{width}} preset {args.preset!r}"
        + (f" with {changed}" if changed else "")
        + (f"  ({describe(config)})" if describe else "")
    )
    print(
        f"{'run':<{width}} {len(seeds)} seed(s) {seeds[0]}..{seeds[-1]} x {args.episodes} episodes; "
        "std is over seeds (ddof=1)\n"
    )
    print(no_negative_zeros(format_metrics_table(summary)))
    if llm is not None:
        print("\n" + _format_llm_costs(llm, list(game.roles)))
    return status


def _game_cli_attr(game: EnvSpec, name: str) -> Any:
    module = game.cli_module()
    if not module:
        return None
    import importlib

    return getattr(importlib.import_module(module), name, None)


_LLM_COUNTS = (
    "calls",
    "requests",
    "retries",
    "cache_hits",
    "transport_errors",
    "prompt_tokens",
    "completion_tokens",
    "billed_prompt_tokens",
    "billed_completion_tokens",
    "usage_estimated",
    "fallbacks",
    "reasks",
    "gated",
)


def _llm_costs(
    game: EnvSpec, config: Any, ev: Any, policies: Mapping[str, str], prices: tuple[float, float]
) -> dict[str, Any] | None:
    """What the LLM policies of a ``play`` cost, per role and in all (None when none took part).

    Tokens are :func:`~eq_env.core.runner.llm_summary`'s; dollars are priced as ``llm_costs.csv`` prices
    them (:func:`eq_env.core.experiments.llm_report`): ``cost_usd`` is what the samples cost when drawn,
    ``billed_usd`` what this run paid (nothing for answers from the cache).
    """
    from eq_env.core.policy import make_policy
    from eq_env.core.runner import is_async, llm_summary

    roles = [role for role, spec in policies.items() if is_async(make_policy(spec, role, game))]
    if not roles:
        return None
    summary = llm_summary(game, config, ev.records, ev.failed)

    def usd(prompt: int, completion: int) -> float:
        return (prompt * prices[0] + completion * prices[1]) / 1e6

    out: dict[str, Any] = {
        "failed_episodes": summary["failed_episodes"],
        "prices": {"prompt": prices[0], "completion": prices[1]},
    }
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


def _format_llm_costs(llm: dict[str, Any], roles: Sequence[str]) -> str:
    """``play``'s LLM block: a line per LLM role, then failures and dollars."""
    lines = ["LLM policies"]
    width = max(9, *(len(r) for r in roles))
    for role in roles:
        if role in llm:
            r = llm[role]
            lines.append(
                f"  {role:<{width}}  {r['requests']} requests, {r['retries']} retries, {r['cache_hits']} "
                f"cache hits; {r['prompt_tokens']} prompt + {r['completion_tokens']} completion tokens; "
                f"{r['fallbacks']} fallbacks, {r['reasks']} re-asks"
            )
    prices = llm["prices"]
    if prices["prompt"] or prices["completion"]:
        cost = (
            f"cost ${llm['cost_usd']:.4f} at ${prices['prompt']:g}/M prompt and ${prices['completion']:g}/M "
            f"completion tokens (billed by this run: ${llm['billed_usd']:.4f})"
        )
    else:
        cost = "no dollars: give --price-prompt and --price-completion (per million tokens)"
    lines.append(f"  failed episodes {llm['failed_episodes']}; {cost}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# sweep
# ---------------------------------------------------------------------------
def _add_sweep(sub: Any, game: EnvSpec) -> None:
    sw = sub.add_parser(
        "sweep",
        help="run a grid of parameters and policies (resumable, parallel)",
        description="Sweep a game's parameters and policies. The grid comes from --config (TOML/YAML/JSON) and/or "
        "flags; results are appended to --out/results.jsonl as runs finish, so a killed sweep resumes.",
    )
    _add_env(sw, game)
    sw.add_argument("--out", type=out_dir, required=True, help="output directory")
    sw.add_argument("--config", type=path_arg, help="sweep spec file (.toml, .yaml, .json)")
    sw.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="a swept game parameter and its values (repeatable)",
    )
    sw.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a fixed game parameter (repeatable)"
    )
    for role in game.roles:
        sw.add_argument(f"--{role}", action="append", help=f"a {role} spec (repeat to sweep several)")
    sw.add_argument(
        "--preset",
        choices=sorted(game.config.PRESETS),
        help=f"starting configuration (default {game.config.DEFAULT_PRESET})",
    )
    sw.add_argument("--seeds", type=seeds_arg, help="number of seeds (default 5)")
    sw.add_argument("--first-seed", type=seed_arg, help="first seed (default 0)")
    sw.add_argument("--episodes", type=episodes_arg, help="episodes per seed (default 200)")
    sw.add_argument("--engine", choices=ENGINES, help="default auto")
    sw.add_argument(
        "--jobs",
        type=jobs_arg,
        help="worker processes (default: 1 if every run can use the batch "
        "engine, else the number of CPUs); with --backend ray, the CPUs of the Ray instance "
        "started here",
    )
    add_backend_flags(sw)
    sw.add_argument("--plot-x", help="grid parameter for the x axis of sweep.png (default: the first numeric one)")
    metrics_help = "comma-separated metrics to tabulate and plot, each once (default: the game's)"
    sw.add_argument("--metrics", type=list_of(str, "metric names", distinct=True), metavar="M1,M2", help=metrics_help)
    sw.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="the reference of paired.csv and summary.md's paired table: each condition minus the condition of "
        "its cell with this value (a grid parameter's or a role's, e.g. validator=rule, or a bare value; "
        "repeatable); default: the first condition",
    )
    add_flag_groups(sw, "OUT/llm_cache", list(game.roles))


def add_backend_flags(parser: argparse.ArgumentParser) -> None:
    """``--backend {local,ray}`` and ``--ray-address ADDR``: where a command's runs execute (see
    :mod:`eq_env.core.executors`; :func:`executor_from_args` turns them, with ``--jobs``, into an executor)."""
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="local",
        help="where runs execute: local worker processes (default), or Ray tasks (needs "
        "pip install 'eq-env[ray]'); the results are the same bytes. Runs with LLM policies stay "
        "in this process on either backend (the regimes of a state share one answer)",
    )
    parser.add_argument(
        "--ray-address",
        type=ray_address_arg,
        metavar="ADDR",
        help="with --backend ray: join the running Ray cluster at HOST:PORT (its head), or auto; "
        "default: start a Ray instance on this machine for the command",
    )


def executor_of(args: argparse.Namespace, default_jobs: int) -> Executor:
    """The executor of a command's ``--backend``, ``--ray-address`` and ``--jobs`` flags (``--jobs`` left
    unset, ``None``, means ``default_jobs`` locally and Ray's CPU count on a Ray instance started here);
    every refusal is a one-line ValueError, raised before anything is written."""
    return executor_from_args(args.backend, args.jobs, args.ray_address, default_jobs=default_jobs)


def ray_address_arg(text: str) -> str:
    """An argparse type: a Ray cluster's address, ``HOST:PORT`` or ``auto`` (``ray://`` client addresses too)."""
    text = text.strip()
    if (
        text == "auto"
        or text.startswith("ray://")
        or (re.fullmatch(r"[^\s:/]+:[0-9]{1,5}", text) and 1 <= int(text.rpartition(":")[2]) <= 65535)
    ):
        return text
    raise argparse.ArgumentTypeError(
        f"expected HOST:PORT (a port in 1..65535) of a Ray cluster's head, or auto, got {shown(text)}"
    )


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


def _flag_value(game: EnvSpec, flag: str, key: str, text: str) -> Any:
    """A --grid or --set value, checked against its parameter's range here, so the error names the flag."""
    from eq_env.core.sweep import parse_value

    value = parse_value(text, game.config, key)
    field = next((f for f in game.config.parameters() if f.name == key), None)
    if field is not None and "range" in field.metadata:
        try:
            field.metadata["range"].check(key, value)
        except ValueError as err:
            raise ValueError(f"{flag} {key}: {err}") from None
    return value  # (an unknown name is refused with the list of names when the spec is checked)


def _check_spec_limits(data: Mapping[str, Any], path: Path) -> None:
    """A spec file's episodes and seeds within the limits of the flags that set them (a value that is not an
    integer is refused when the spec is read, with its key; one too long for ``int()`` is out of range)."""
    from eq_env.core.sweep import LongNumber

    def outside(value: Any, low: int, high: int) -> bool:
        return isinstance(value, LongNumber) or (
            isinstance(value, int) and not isinstance(value, bool) and not low <= value <= high
        )

    for key, low, high in (("episodes", 1, MAX_EPISODES), ("first_seed", 0, MAX_SEED)):
        value = data.get(key)
        if outside(value, low, high):
            raise ValueError(f"{path}: {key} must be an integer in [{low}, {high}], got {value!r}")
    seeds = data.get("seeds")
    if outside(seeds, 1, MAX_SEEDS):
        raise ValueError(f"{path}: seeds must be a count in [1, {MAX_SEEDS}] or a list of seeds, got {seeds!r}")
    if isinstance(seeds, list):
        if len(seeds) > MAX_SEEDS:
            raise ValueError(f"{path}: seeds lists {len(seeds)} seeds; at most {MAX_SEEDS}")
        big = next((s for s in seeds if outside(s, 0, MAX_SEED)), None)
        if big is not None:
            raise ValueError(f"{path}: seeds must be integers in [0, {MAX_SEED}], got {big!r}")


def _cmd_sweep(args: argparse.Namespace) -> int:
    from eq_env.core.experiments import ResultsStore, check_run_record, failed_runs
    from eq_env.core.policy import make_policy
    from eq_env.core.sweep import (
        SweepSpec,
        first_repeat,
        load_spec_file,
        repeated_policy,
        resolve_baseline,
        run_sweep,
        spec_table,
    )

    data: dict[str, Any] = load_spec_file(args.config) if args.config else {}
    if args.config:
        _check_spec_limits(data, args.config)
    game = env_spec(args.env)  # (the game the flags were made for)
    if "env" in data and env_spec(data["env"]).id != game.id:
        if args.env is not None:
            raise ValueError(f"--env {args.env} and {args.config}'s env {data['env']!r} differ; give one")
        raise ValueError(
            f"{args.config} sweeps {data['env']!r}: add --env {data['env']} (the command's flags are the game's)"
        )
    try:  # the file's tables are checked before the flags' entries are merged into them
        grid, fixed = spec_table(data, "grid"), spec_table(data, "set")
    except ValueError as err:
        raise ValueError(f"{args.config}: {err}") from None
    given: set[tuple[str, str]] = set()  # a flag's name given twice would silently keep only the last
    for flag, pairs in (("--grid", _key_values(args.grid, "--grid")), ("--set", _key_values(args.set, "--set"))):
        for key, _ in pairs:
            if (flag, key) in given:
                raise ValueError(
                    f"{flag} {key} given twice; give it once"
                    + (f", with all its values: {flag} {key}=V1,V2,..." if flag == "--grid" else "")
                )
            given.add((flag, key))
    for key, values in _key_values(args.grid, "--grid"):
        grid[key] = [_flag_value(game, "--grid", key, v) for v in values.split(",")]
        repeated = first_repeat(grid[key])
        if repeated is not None:
            raise ValueError(f"--grid {key}={values} repeats {repeated[1]!r}: each value is one condition, run once")
    for key, value in _key_values(args.set, "--set"):
        fixed[key] = _flag_value(game, "--set", key, value)
    for role in game.roles:
        specs = getattr(args, role, None) or []
        same = repeated_policy([_filled(spec, args) for spec in specs], role, game)
        if same is not None:
            first, second = specs[same[0]], specs[same[1]]
            raise ValueError(
                f"--{role} {second!r} given twice"
                if first == second
                else f"--{role} {second!r} is the same policy as --{role} {first!r}"
            )
    data = {**data, "env": game.id, "grid": grid, "set": fixed}
    for role in game.roles:  # a role's flags replace what the file lists for it
        if getattr(args, role, None) is not None:
            data[f"{role}s"] = getattr(args, role)
            if isinstance(data.get("policies"), Mapping):
                data["policies"] = {r: s for r, s in data["policies"].items() if r != role}
    for flag, key in (
        ("preset", "preset"),
        ("seeds", "seeds"),
        ("first_seed", "first_seed"),
        ("episodes", "episodes"),
        ("engine", "engine"),
    ):
        if getattr(args, flag) is not None:
            data[key] = getattr(args, flag)
    if args.baseline:  # (the flags replace the file's baseline)
        data["baseline"] = args.baseline
    spec = SweepSpec.from_mapping(data, source=str(args.config or "flags"))
    resolve_baseline(spec, spec.baseline, "--baseline" if args.baseline else f"{args.config}: baseline")
    spec.policies = fill_specs(spec.policies, args)
    if getattr(args, "dry_run", False):
        return dry_run(game, game.config.from_preset(spec.preset, **spec.set), spec.policies)
    configure_flag_groups(args, args.out / "llm_cache")
    jobs = args.jobs
    if jobs is None:
        batchable = game.batch is not None and all(
            game.batch.is_batchable(make_policy(p, role, game)) for role, specs in spec.policies.items() for p in specs
        )
        # (runs with LLM policies stay in this process whatever jobs says)
        jobs = 1 if batchable and spec.engine != "aec" else (os.cpu_count() or 1)
    executor = executor_from_args(args.backend, args.jobs, args.ray_address, default_jobs=jobs)
    metrics = tuple(args.metrics) if args.metrics else None
    rows = run_sweep(
        spec,
        args.out,
        jobs=jobs,
        progress=None,
        plot_x=args.plot_x,
        plot_metrics=metrics,
        concurrency=getattr(args, "concurrency", 8),
        executor=executor,
        baseline=args.baseline,
    )
    print(printable((args.out / "summary.md").read_text(), lines=True))  # (its labels are the specs given)
    print(f"{len(rows)} conditions x {len(spec.seeds)} seeds; outputs in {printable(args.out)}")
    keys = {f"{r['condition']}/{seed}" for r in rows for seed in spec.seeds}
    stored = ResultsStore(args.out / "results.jsonl").load(check_run_record)
    return failures(
        args.command, failed_runs(stored[k] for k in sorted(keys) if k in stored), getattr(args, "cache", None)
    )


def _filled(spec: str, args: argparse.Namespace) -> str:
    """:func:`fill_spec`, or ``spec`` as given if it does not parse (the spec check says why, later)."""
    try:
        return fill_spec(spec, args)
    except ValueError:
        return spec


# ---------------------------------------------------------------------------
# rerun, policies, envs
# ---------------------------------------------------------------------------
def _add_rerun(sub: Any) -> None:
    rr = sub.add_parser(
        "rerun",
        help="run one record of a results.jsonl again and check it",
        description="Re-run the condition and seed of one results record from its stored game, configuration and "
        "policies, print both sets of metrics, and exit 1 if they differ.",
    )
    rr.add_argument("results", type=results_file, help="a results.jsonl written by reproduce or sweep")
    rr.add_argument("key", help="the record's key (its 'key' field, CONDITION/SEED)")
    rr.add_argument("--engine", choices=ENGINES, default="auto")
    for group in _GROUPS:
        group.add_rerun(rr, "llm_cache next to the results file")


def _cmd_rerun(args: argparse.Namespace) -> int:
    from eq_env.core.experiments import ResultsStore, check_run_record, record_policies, rerun
    from eq_env.core.runner import format_metrics_table

    store = ResultsStore(args.results)
    records = store.load()  # (its existence was checked at parse time; a line that is no record is named first)
    if not records:
        raise ValueError(f"{args.results} holds no run records")
    if args.key not in records:
        sample = ", ".join(printable(k) for k in list(records)[:3])
        raise ValueError(f"no record with key {args.key!r} in {args.results} (keys look like: {sample})")
    store.records(check=lambda r: check_run_record(r) if r["key"] == args.key else None)  # (its fields, by line)
    old = records[args.key]
    policies = record_policies(old)
    for group in _GROUPS:
        group.configure_rerun(policies, args, args.results.parent / "llm_cache")
    new = rerun(old, args.engine)
    print(
        f"{printable(' vs '.join(policies.values()))}, seed {old['seed']}, {old['episodes']} episodes, "
        f"engine {new['engine']} (recorded: {old['engine']})"
    )
    rows = {m: (from_json_number(old["metrics"][m]), from_json_number(new["metrics"][m])) for m in old["metrics"]}
    table = format_metrics_table(rows).replace("mean", "recorded", 1).replace("     std", "   rerun", 1)
    print(no_negative_zeros(table))
    same = old["metrics"] == new["metrics"]
    print("identical" if same else "DIFFERENT")
    return 0 if same else 1


def _cmd_policies(args: argparse.Namespace) -> int:
    from eq_env.core.policy import REQUIRED, available_policies

    games = [env_spec(args.env)] if args.env is not None else registered_envs()
    for game in games:
        if len(games) > 1 or args.env is not None:
            print(f"# {game.name} ({game.id})")
        entries = available_policies(env=game)
        name_width = max([10, *(len(e.name) for e in entries)])
        role_width = max([9, *(len(e.role) for e in entries)])
        for entry in entries:
            params = ", ".join(
                f"{k} (required)" if v is REQUIRED else f"{k}={v!r}" for k, v in entry.parameters().items()
            )
            print(f"{entry.name:<{name_width}} {entry.role:<{role_width}} {entry.summary}")
            if params:
                print(f"{'':<{name_width + role_width + 1}} parameters: {params}")
    return 0


def _cmd_envs(_: argparse.Namespace) -> int:
    width = max(16, *(len(g.name) + 1 for g in registered_envs()))
    for game in registered_envs():
        agents_of = game.agents(game.config.from_preset())
        roles = ", ".join(f"{role} ({', '.join(agents)})" for role, agents in agents_of.items())
        commands = ", ".join(c.name for c in game.commands()) or "none"
        presets = ", ".join(game.config.PRESETS)
        print(
            f"{game.name:<{width}} {game.id}\n{'':<{width}} roles: {roles}; presets: {presets}; "
            f"its commands: {commands}"
        )
    return 0


# ---------------------------------------------------------------------------
# The parser and main
# ---------------------------------------------------------------------------
def _env_in(argv: Sequence[str]) -> str | None:
    """The value of ``--env`` among the arguments, if given (the flags of the commands depend on it); a
    ValueError if it is given twice."""
    found = []
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--env" and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif arg.startswith("--env="):
            found.append(arg.partition("=")[2])
    if len(found) > 1:
        raise ValueError(f"given {len(found)} times ({', '.join(found)}); give the game once")
    return found[0] if found else None


def _missing_command(game: EnvSpec, argv: Sequence[str]) -> str | None:
    """Why ``argv``'s command cannot run with ``--env game``: the command is another game's, and ``game`` has no
    command of that name (without this, the other game's would run, on its own game, e.g. the one-shot game's
    ``train`` for ``--env exchange-audit-repeated``). None if it can."""
    name = argv[0] if argv else ""
    if name in GENERIC or name in _COMMANDS or any(c.name == name for c in game.commands()):
        return None
    owners = [spec.name for spec in registered_envs() if any(c.name == name for c in spec.commands())]
    if not owners:
        return None  # (not a command: argparse says so, with the choices)
    return f"{game.name} has no {name!r} command; the games that have it: {', '.join(owners)}"


def _game_commands(game: EnvSpec) -> dict[str, Command]:
    """Every game's commands by name; where two games contribute a name, ``game``'s."""
    commands: dict[str, Command] = {}
    for spec in registered_envs():
        for command in spec.commands():
            if command.name not in commands or spec.id == game.id:
                commands[command.name] = command
    return commands


GENERIC = {"play": _cmd_play, "sweep": _cmd_sweep, "rerun": _cmd_rerun, "policies": _cmd_policies, "envs": _cmd_envs}
INTERRUPTED = {  # what an interrupted command kept
    "sweep": "finished runs (and LLM episodes) are saved in --out; run the same command to resume",
    "play": "nothing was saved (--records is written at the end)",
}


_COMMANDS: dict[str, Command] = {}  # commands of no one game (``bench``): registered by eq_env.cli


def register_command(command: Command) -> None:
    """Add a command that belongs to no one game (``eq-env bench`` plays them all)."""
    _COMMANDS[command.name] = command


def _shared_command_names() -> dict[str, list[str]]:
    """Command names several games contribute → those games' names."""
    games: dict[str, list[str]] = {}
    for spec in registered_envs():
        for command in spec.commands():
            games.setdefault(command.name, []).append(spec.name)
    return {name: names for name, names in games.items() if len(names) > 1}


def build_parser(game: Any = None, *, env_given: bool = True) -> argparse.ArgumentParser:
    """The ``eq-env`` parser with the flags of ``game`` (default: the default game). Without ``env_given`` (no
    ``--env`` on the command line) the help of a command several games contribute names them."""
    spec = env_spec(game)
    parser = Parser(prog="eq-env", description="Multi-agent environments with verifiable reasoning (eq_env).")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_play(sub, spec)
    shared = _shared_command_names()
    for command in _game_commands(spec).values():
        text = command.help
        if command.name in shared and not env_given:
            text = f"{text} ({spec.name}; every game's own with --env NAME: {', '.join(shared[command.name])})"
        cmd = sub.add_parser(command.name, help=text, description=command.description or command.help)
        command.add_arguments(cmd)
        if command in spec.commands() and "--env" not in cmd._option_string_actions:
            _add_env(cmd, spec)  # (main chose the game by it, so the game's own commands take it too)
    for command in _COMMANDS.values():
        command.add_arguments(
            sub.add_parser(command.name, help=command.help, description=command.description or command.help)
        )
    _add_sweep(sub, spec)
    _add_rerun(sub)
    pol = sub.add_parser("policies", help="list the available policies and their parameters")
    _add_env(pol, spec)
    sub.add_parser("envs", help="list the registered games, their roles, presets and commands")
    return parser


# Exit status when whoever reads our output closes the pipe early (`eq-env play | head -1`): 128 + SIGPIPE,
# what a shell reports for a tool that SIGPIPE killed (Python ignores the signal and gets an EPIPE
# instead). Python's docs exit with 1; here 1 means that `rerun` found different results.
BROKEN_PIPE = 141


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        game = env_spec(_env_in(argv))
    except ValueError as err:
        print(f"eq-env: error: argument --env: {printable(err)} (see eq-env --help)", file=sys.stderr)
        return 2
    if _env_in(argv) is not None and (missing := _missing_command(game, argv)) is not None:
        print(f"eq-env {printable(argv[0])}: error: argument --env: {missing}", file=sys.stderr)
        return 2
    parser = build_parser(game, env_given=_env_in(argv) is not None)
    args = parser.parse_args(argv)
    commands: dict[str, Callable[[argparse.Namespace], int]] = dict(GENERIC)
    interrupted = dict(INTERRUPTED)
    for command in (*_game_commands(game).values(), *_COMMANDS.values()):
        commands[command.name] = command.run
        interrupted[command.name] = command.interrupted
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
    except (ValueError, TypeError, OSError, RunLostError, UserPolicyError) as err:  # (one line, whatever it quotes)
        print(f"eq-env {args.command}: error: {printable(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"eq-env {args.command}: interrupted; {interrupted.get(args.command, 'nothing was saved')}", file=sys.stderr
        )
        return 130
