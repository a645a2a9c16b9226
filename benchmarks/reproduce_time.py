"""`eq-env reproduce` end to end: wall time with the batch engine, and with the AEC engine for reference.

Both write every output (tables, figure, summary) into a temporary directory
from scratch, with the paper's 5 seeds x 200 episodes.

    python benchmarks/reproduce_time.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from eq_env.reproduce import ReproduceOptions, reproduce


def wall_time(engine: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        reproduce(Path(tmp), ReproduceOptions(engine=engine), progress=False)
        return time.perf_counter() - start


def main() -> None:
    wall_time("batch")  # imports and matplotlib's font cache, so both runs start warm
    batch = wall_time("batch")
    aec = wall_time("aec")
    print(f"reproduce, batch engine: {batch:6.2f} s")
    print(f"reproduce, AEC engine:   {aec:6.2f} s  (ratio AEC / batch {aec / batch:.1f}x)")


if __name__ == "__main__":
    main()
