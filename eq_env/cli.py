"""The ``eq-env`` command line.

``eq-env play`` plays episodes with any policy per role and prints the
paper's metrics; ``eq-env policies`` lists the policies and their
parameters. Every game parameter is a flag (``--q 0.3 --B 2 --V 1 --L 2``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eq_env.exchange_audit.config import PRESETS, ExchangeAuditConfig

__all__ = ["build_parser", "config_from_args", "main"]


def _budget(text: str) -> int | None:
    if text.lower() in ("all", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"B must be an integer or 'all', got {text!r}") from None


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("game parameters (default: the preset's)")
    group.add_argument("--preset", default="paper", choices=sorted(PRESETS), help="starting configuration")
    for f in dataclasses.fields(ExchangeAuditConfig):
        flag = "--" + f.name.replace("_", "-")
        doc = f.metadata["doc"]
        if f.name == "reveal_compliance":
            group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=doc)
        elif f.name == "B":
            group.add_argument(flag, type=_budget, default=argparse.SUPPRESS, metavar="N|all", help=doc)
        else:
            kind = int if f.metadata["range"].integer else float
            group.add_argument(flag, type=kind, default=None, metavar=kind.__name__.upper(), help=doc)


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
    parser = argparse.ArgumentParser(
        prog="eq-env", description="Multi-agent environments with verifiable reasoning (eq_env)."
    )
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
    play.add_argument("--episodes", type=int, default=200, help="episodes per seed (default 200)")
    play.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    play.add_argument("--seeds", type=int, default=1, help="number of consecutive seeds (default 1)")
    play.add_argument("--render", action="store_true", help="print every episode as it finishes")
    play.add_argument("--records", type=Path, help="write one JSON line per episode to this file")
    play.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    _add_config_flags(play)

    sub.add_parser("policies", help="list the available policies and their parameters")
    return parser


def _finite(x: float) -> float | None:
    """NaN (an undefined metric) as JSON null."""
    return None if math.isnan(x) else x


def _cmd_play(args: argparse.Namespace) -> int:
    from eq_env.runner import evaluate, format_metrics_table

    if args.episodes < 1:
        raise ValueError(f"--episodes must be at least 1, got {args.episodes}")
    if args.seeds < 1:
        raise ValueError(f"--seeds must be at least 1, got {args.seeds}")
    config = config_from_args(args)
    seeds = list(range(args.seed, args.seed + args.seeds))
    ev = evaluate(
        config,
        args.proposer,
        args.validator,
        episodes=args.episodes,
        seeds=seeds,
        progress=None,
        render=(lambda text: print(text)) if args.render else None,
    )
    if args.records:
        args.records.parent.mkdir(parents=True, exist_ok=True)
        with args.records.open("w") as fh:
            for r in ev.records:
                fh.write(json.dumps(r.to_dict()) + "\n")
    summary = ev.summary
    if args.json:
        print(
            json.dumps(
                {
                    "proposer": ev.proposer,
                    "validator": ev.validator,
                    "config": config.to_dict(),
                    "seeds": seeds,
                    "episodes": args.episodes,
                    "metrics": {k: {"mean": _finite(m), "std": _finite(s)} for k, (m, s) in summary.items()},
                },
                indent=2,
                allow_nan=False,
            )
        )
        return 0
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
    print(format_metrics_table(summary))
    return 0


def _cmd_policies(_: argparse.Namespace) -> int:
    from eq_env.policy import available_policies

    for name, entry in available_policies().items():
        params = ", ".join(f"{k}={v!r}" for k, v in entry.parameters().items())
        print(f"{name:<10} {entry.role:<9} {entry.summary}")
        if params:
            print(f"{'':<20} parameters: {params}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "play":
            return _cmd_play(args)
        if args.command == "policies":
            return _cmd_policies(args)
    except (ValueError, TypeError) as err:
        print(f"eq-env {args.command}: error: {err}", file=sys.stderr)
        return 2
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
