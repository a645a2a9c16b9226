"""Plant the one-line bugs listed in ``tests/mutants/*.jsonl``, one at a time, and check that a test fails.

Each line of a list is one planted bug (a mutant)::

    {"id": "einstein-step-limit", "file": "eq_env/einstein_puzzle/rules.py",
     "old": "return 30 if n <= 7 else 5 * n", "new": "return 30 if n < 7 else 5 * n",
     "tests": ["tests/einstein_puzzle/test_rules.py"]}

``old`` must occur exactly once in ``file``. For each mutant the file is changed, ``pytest -x -q`` runs on
its ``tests`` (nodes or files; the fewer, the faster), and the file is restored whatever happens. A mutant is
*killed* when pytest fails, *survived* when it passes; a mutant whose ``old`` text is gone (the code moved)
is *stale*, which fails this script too: fix its line. Run from the repository root::

    python tests/mutants/run.py                          # every list
    python tests/mutants/run.py tests/mutants/einstein.jsonl --only einstein-step-limit

Exit status 0 when every mutant is killed, 1 otherwise. Not a pytest test: it runs pytest once per mutant
(minutes in all), so CI does not run it; the lists document what the suite is known to catch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIELDS = ("id", "file", "old", "new", "tests")


def load(paths: list[Path]) -> list[dict]:
    mutants = []
    for path in paths:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                mutant = json.loads(line)
            except ValueError as err:
                sys.exit(f"{path}:{number}: not JSON ({err})")
            missing = [f for f in FIELDS if f not in mutant]
            if missing:
                sys.exit(f"{path}:{number}: missing {', '.join(missing)}")
            if not isinstance(mutant["tests"], list) or not mutant["tests"]:
                sys.exit(f"{path}:{number}: 'tests' must be a non-empty list of test paths or nodes")
            if mutant["old"] == mutant["new"]:
                sys.exit(f"{path}:{number}: 'new' is 'old': that plants nothing")
            mutant["where"] = f"{path.name}:{number}"
            mutants.append(mutant)
    ids = [m["id"] for m in mutants]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        sys.exit(f"mutant ids listed twice: {', '.join(twice)}")
    return mutants


def plant(mutant: dict) -> str:
    """'killed', 'survived' or 'stale'."""
    path = ROOT / mutant["file"]
    original = path.read_text()
    if original.count(mutant["old"]) != 1:
        return "stale"
    # compiled files go to a directory of this mutant's own: a mutant of the same size as the line it replaces,
    # written in the same second, would otherwise leave a cached compilation the restored file shares its size
    # and time with (tests/conftest.py caches them)
    cache = tempfile.mkdtemp(prefix="eq_env_mutant_")
    try:
        path.write_text(original.replace(mutant["old"], mutant["new"]))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PYTHONPYCACHEPREFIX": cache}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutant["tests"]],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    finally:
        path.write_text(original)
        shutil.rmtree(cache, ignore_errors=True)
    return "survived" if done.returncode == 0 else "killed"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lists", nargs="*", type=Path, help="mutant lists (default: tests/mutants/*.jsonl)")
    parser.add_argument("--only", action="append", help="run only this mutant id (repeatable)")
    args = parser.parse_args()
    paths = args.lists or sorted((ROOT / "tests" / "mutants").glob("*.jsonl"))
    mutants = load(paths)
    if args.only:
        unknown = sorted(set(args.only) - {m["id"] for m in mutants})
        if unknown:
            sys.exit(f"--only: no mutant {', '.join(unknown)}")
        mutants = [m for m in mutants if m["id"] in args.only]
    outcomes: dict[str, int] = {"killed": 0, "survived": 0, "stale": 0}
    for mutant in mutants:
        outcome = plant(mutant)
        outcomes[outcome] += 1
        print(f"{outcome:8s} {mutant['id']}  ({mutant['where']}, {mutant['file']})", flush=True)
    print(f"{outcomes['killed']}/{len(mutants)} killed, {outcomes['survived']} survived, {outcomes['stale']} stale")
    return 0 if outcomes["killed"] == len(mutants) else 1


if __name__ == "__main__":
    sys.exit(main())
