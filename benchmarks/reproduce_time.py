"""`eq-env reproduce` end to end: wall time with the batch engine, and with the AEC engine for reference.

Both write every output (tables, figure, summary) into a temporary directory
from scratch, with the paper's 5 seeds x 200 episodes.

    python benchmarks/reproduce_time.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eq_env.studies.exchange_audit.reproduce import ReproduceOptions, reproduce


def wall_time(engine: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        reproduce(Path(tmp), ReproduceOptions(engine=engine), progress=False)
        return time.perf_counter() - start


def cli_wall_time() -> float:
    """The command as a user types it, interpreter start and imports included."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "eq_env.cli", "reproduce", "--out", tmp], check=True,
                       capture_output=True)  # fmt: skip
        return time.perf_counter() - start


def main() -> None:
    wall_time("batch")  # imports and matplotlib's font cache, so both runs start warm
    batch = wall_time("batch")
    aec = wall_time("aec")
    cli = cli_wall_time()
    print(f"reproduce in process, batch engine: {batch:6.2f} s")
    print(f"reproduce in process, AEC engine:   {aec:6.2f} s  (ratio AEC / batch {aec / batch:.1f}x)")
    print(f"eq-env reproduce from the shell:    {cli:6.2f} s  (interpreter start and imports included)")


if __name__ == "__main__":
    main()
