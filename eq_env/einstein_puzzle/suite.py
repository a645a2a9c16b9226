"""The frozen benchmark suite: 300 test puzzles for each n in 4…8, shipped with the package.

Published numbers name it: **einstein-suite-v1** (the paper evaluates on 300
test games). The file ``data/suite_v1.jsonl`` holds a header line, then one
puzzle per line (``{"n", "index", "start", "goal", "constraints", "holders"}``,
see :meth:`Puzzle.to_dict`). It was written once by :func:`build_suite` (the
generator with its default knobs, seed :data:`SUITE_SEED`, a stream of its own
per n, so no training seed of the environment draws the same puzzles) and is
never rewritten: :func:`load_suite` checks its SHA-256 against
:data:`SUITE_SHA256` and refuses a file that differs. A later generator or a
different suite gets a new version and a new file.

    from eq_env.einstein_puzzle.suite import load_suite
    puzzles = load_suite(6)          # 300 six-object puzzles
    everything = load_suite()        # {4: [...], ..., 8: [...]}

``python -m eq_env.einstein_puzzle.suite --check`` rebuilds the suite from the
generator and says whether it still matches the file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, overload

from eq_env.einstein_puzzle.generator import generate, puzzle_rng
from eq_env.einstein_puzzle.rules import Puzzle

__all__ = ["SUITE", "SUITE_SEED", "SUITE_SHA256", "SUITE_SIZE", "SUITE_SIZES", "build_suite", "load_suite"]

SUITE = "einstein-suite-v1"
SUITE_SEED = 2510_25595  # the paper's arXiv number
SUITE_SIZE = 300
SUITE_SIZES = (4, 5, 6, 7, 8)
SUITE_FILE = "suite_v1.jsonl"
SUITE_SHA256 = "81c80d57e8d073c67a85f4a7e456e372cff5f74050c5b3a3b43ae1bcd4a427c2"


def build_suite() -> str:
    """The suite file's text, from the generator (what ``data/suite_v1.jsonl`` was written from)."""
    header = {
        "suite": SUITE,
        "generator": "eq_env.einstein_puzzle.generator.generate (default knobs)",
        "seed": SUITE_SEED,
        "streams": "n",
        "sizes": list(SUITE_SIZES),
        "per_size": SUITE_SIZE,
    }
    lines = [json.dumps(header)]
    for n in SUITE_SIZES:
        for i in range(SUITE_SIZE):
            puzzle = generate(n, puzzle_rng(SUITE_SEED, i, stream=n))
            lines.append(json.dumps({"index": i, **puzzle.to_dict()}))
    return "\n".join(lines) + "\n"


def _suite_path() -> Path:
    return Path(str(resources.files("eq_env.einstein_puzzle") / "data" / SUITE_FILE))


@lru_cache(maxsize=1)
def _load(path: str) -> dict[int, tuple[Puzzle, ...]]:
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as err:
        raise ValueError(f"cannot read the puzzle suite {p}: {err.strerror}") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SUITE_SHA256:
        raise ValueError(
            f"{p}: not the published {SUITE} (sha256 {digest[:12]}…, expected {SUITE_SHA256[:12]}…); "
            "reinstall the package"
        )
    out: dict[int, list[Puzzle]] = {n: [] for n in SUITE_SIZES}
    for number, line in enumerate(raw.decode().splitlines()[1:], start=2):
        try:
            data: Any = json.loads(line)
            puzzle = Puzzle.from_dict(data)
        except ValueError as err:
            raise ValueError(f"{p}, line {number}: {err}") from None
        out[puzzle.n].append(puzzle)
    return {n: tuple(v) for n, v in out.items()}


@overload
def load_suite(n: int) -> tuple[Puzzle, ...]: ...
@overload
def load_suite(n: None = None) -> dict[int, tuple[Puzzle, ...]]: ...
def load_suite(n: int | None = None) -> tuple[Puzzle, ...] | dict[int, tuple[Puzzle, ...]]:
    """The suite's 300 puzzles of ``n`` objects (4–8), in order; or every size (``n=None``)."""
    suite = _load(str(_suite_path()))
    if n is None:
        return suite
    if n not in suite:
        raise ValueError(f"{SUITE} has puzzles of {SUITE_SIZES[0]} to {SUITE_SIZES[-1]} objects, not {n!r}")
    return suite[n]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eq_env.einstein_puzzle.suite", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="rebuild from the generator and compare with the file")
    parser.add_argument("--write", type=Path, help="write the rebuilt suite to this path (for a new version)")
    args = parser.parse_args(argv)
    text = build_suite()
    if args.write:
        args.write.write_text(text)
        print(f"wrote {args.write} (sha256 {hashlib.sha256(text.encode()).hexdigest()})")
    if args.check:
        same = hashlib.sha256(text.encode()).hexdigest() == SUITE_SHA256
        print(f"{SUITE}: the generator {'still' if same else 'no longer'} rebuilds the shipped file")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
