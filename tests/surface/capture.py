"""Capture the package's whole command surface into a directory, one file per item.

``python tests/surface/capture.py DIR [--full]`` writes every ``--help`` (of every command and
subcommand, under every ``--env``), ``eq-env envs``, ``eq-env policies`` of every game, the
registries (ids, views, roles, policies with their parameters) and, with ``--full``, the outputs of
``reproduce`` of each game at small sizes (the exchange–audit one in full), the bench demo's cards
and the run keys. ``tests/surface/test_surface.py`` compares a fresh capture with ``golden/``:
moving code must not change what a user sees.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

COLUMNS = "100"  # argparse wraps help to $COLUMNS; fix it so the capture is the same on every terminal


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps subcommands in a private action
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...], out: dict[str, str]) -> None:
    out[" ".join(path)] = parser.format_help()
    for name, sub in _subparsers(parser).items():
        _walk(sub, (*path, name), out)


def helps() -> dict[str, str]:
    """Every command's help, as ``eq-env [--env G] CMD... --help`` prints it."""
    os.environ["COLUMNS"] = COLUMNS
    from eq_env.cli import build_parser
    from eq_env.core.spec import registered_envs

    out: dict[str, str] = {}
    _walk(build_parser(), ("eq-env",), out)
    for name in [spec.name for spec in registered_envs()]:
        per_game: dict[str, str] = {}
        _walk(build_parser(name), ("eq-env",), per_game)
        for key, text in per_game.items():
            if out.get(key) != text:
                out[f"{key} --env {name}"] = text
    return out


def _stdout(argv: list[str]) -> str:
    from eq_env.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        status = main(argv)
    return f"{buffer.getvalue()}[exit {status}]\n"


def listings() -> dict[str, str]:
    from eq_env.core.spec import registered_envs

    out = {"envs": _stdout(["envs"]), "policies": _stdout(["policies"])}
    for name in [spec.name for spec in registered_envs()]:
        out[f"policies --env {name}"] = _stdout(["policies", "--env", name])
    return out


def registries() -> dict[str, object]:
    import gymnasium
    import pettingzoo

    import eq_env
    from eq_env.core.policy import available_policies
    from eq_env.core.spec import registered_envs

    games = {}
    for spec in registered_envs():
        name = spec.name
        games[name] = {
            "id": spec.id, "entry": spec.entry, "roles": dict(spec.roles), "metrics": list(spec.metrics),
            "views": sorted(spec.views), "default_policies": dict(spec.default_policies),
            "conformance": sorted(spec.conformance), "presets": sorted(spec.config.PRESETS),
            "policies": {f"{e.role}/{e.name}": [e.summary, repr(e.parameters())] for e in available_policies(env=name)},
        }  # fmt: skip
    pz = sorted(k for k in getattr(pettingzoo, "registry", {}) if str(k).startswith("eq_env/"))
    gym = sorted(k for k in gymnasium.registry if k.startswith("eq_env/"))
    return {"all": sorted(eq_env.__all__), "games": games, "pettingzoo": pz, "gymnasium": gym}


_TIME = re.compile(r"\b\d+(\.\d+)?\s*(s|ms|seconds?)\b|\d{4}-\d\d-\d\dT[\d:.]+\S*|\b\d+:\d\d(:\d\d)?\b")


def _scrub(text: str, tmp: Path) -> str:
    """A run's output with the temporary directory and wall-clock times taken out."""
    return _TIME.sub("<time>", text.replace(str(tmp), "<tmp>"))


RUNS = {
    "reproduce": ["reproduce"],
    "reproduce-einstein": ["reproduce", "--env", "einstein-puzzle", "--n", "4,5", "--episodes", "6", "--seeds", "1"],
    "reproduce-belief": [
        "reproduce",
        "--env",
        "belief-coordination",
        "--questions",
        "30",
        "--seeds",
        "2",
        "--train-steps",
        "200",
    ],
    "bench-demo": ["bench", "--demo", "--quick"],
}
TIMED = {"plans.csv"}  # files of seconds measured


def runs(work: Path) -> dict[str, str]:
    """The outputs of the small runs, each file of each run (times scrubbed)."""
    out: dict[str, str] = {}
    env = {**os.environ, "COLUMNS": COLUMNS, "OMP_NUM_THREADS": "1"}
    for name, argv in RUNS.items():
        target = work / name
        full = [sys.executable, "-m", "eq_env.cli", *argv, "--out", str(target)]
        done = subprocess.run(full, capture_output=True, text=True, env=env, check=False)
        out[f"{name}/stdout"] = _scrub(f"{done.stdout}[exit {done.returncode}]\n", work)
        if target.is_dir():
            for path in sorted(target.rglob("*")):
                item = f"{name}/{path.relative_to(target)}"
                if not path.is_file() or {"episodes", "llm_cache", "cache"} & set(path.parts):
                    continue
                if path.name == "results.jsonl":  # (its records hold times: its run keys, sorted, are the surface)
                    keys = sorted(json.loads(line)["key"] for line in path.read_text().splitlines() if line.strip())
                    out[f"{item}.keys"] = "\n".join(keys) + "\n"
                elif path.suffix in {".csv", ".md", ".json", ".txt"} and path.name not in TIMED:
                    out[item] = _scrub(path.read_text(), work)
    return out


def capture(directory: Path, *, full: bool) -> None:
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    items: dict[str, str] = {f"help/{k}": v for k, v in helps().items()}
    items.update({f"list/{k}": v for k, v in listings().items()})
    items["registries.json"] = json.dumps(registries(), indent=1, sort_keys=True) + "\n"
    if full:
        with tempfile.TemporaryDirectory() as tmp:
            items.update({f"runs/{k}": v for k, v in runs(Path(tmp)).items()})
    for key, text in items.items():
        path = directory / (key.replace(" ", "_") + ("" if "." in Path(key).name else ".txt"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--full", action="store_true", help="also the runs (a minute or two)")
    args = parser.parse_args()
    capture(args.directory, full=args.full)
