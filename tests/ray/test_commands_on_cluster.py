"""Every game's experiment commands with ``--backend ray`` on the two-node cluster: the same tables as the
local backend, byte for byte, and a driver killed mid-run (SIGKILL) resumed by the same command.

Tiny runs (seconds each); the cluster is :func:`conftest.cluster`, the driver a separate
``python -m eq_env.cli`` process joining it with ``--ray-address``. Run with ``pytest tests/ray`` (``.ci/ray``).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.ray

# command line (without --out and backend flags), the tables compared, the file the driver appends to
COMMANDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "exchange-audit reproduce": (
        ("reproduce", "--seeds", "2", "--episodes", "40"),
        ("table1.csv", "table1.md", "table1_text_length.csv", "table2.csv", "table2.md"),
        "results.jsonl",
    ),
    "einstein-puzzle reproduce": (
        ("reproduce", "--env", "einstein-puzzle", "--seeds", "2", "--episodes", "4", "--n", "4", "--plan-puzzles", "0"),
        ("table_success.csv", "table_success.md", "table_gains.csv", "table_metrics.csv", "taxonomy.csv"),
        "results.jsonl",
    ),
    "belief-coordination reproduce": (
        (
            "reproduce",
            "--env",
            "belief-coordination",
            "--seeds",
            "2",
            "--n-executors",
            "3",
            "--questions",
            "40",
            "--train-steps",
            "5",
        ),
        ("methods.csv", "methods.md", "falsifiers.md"),
        "results.jsonl",
    ),
    "frontier": (
        ("frontier", "--no-ppo", "--qs", "0,0.5,1", "--episodes", "200"),
        ("frontier.csv", "frontier_summary.csv", "frontier.md"),
        "points.jsonl",
    ),
    "free-text": (
        ("free-text", "--qs", "0,0.5", "--q", "0.5", "--seeds", "2", "--episodes", "200"),
        ("free_text.csv", "free_text.md"),
        "results.jsonl",
    ),
}


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _same_tables(a: Path, b: Path, tables: tuple[str, ...]) -> None:
    for name in tables:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_on_the_cluster_equals_the_local_one(cluster: Any, tmp_path: Path, name: str) -> None:
    argv, tables, store = COMMANDS[name]
    if "belief-coordination" in argv and importlib.util.find_spec("torch") is None:
        pytest.fail("belief-coordination's reproduce needs torch in the Ray venv (.ci/ray installs it)")
    started = time.monotonic()
    local = cluster.eq_env(*argv, "--out", str(tmp_path / "local"), "--jobs", "2")
    seconds_local = time.monotonic() - started
    assert local.returncode == 0, local.stderr
    started = time.monotonic()
    ray = cluster.eq_env(*argv, "--out", str(tmp_path / "ray"), "--backend", "ray", "--ray-address", cluster.address)
    print(f"{name}: local --jobs 2 {seconds_local:.1f} s, on the cluster {time.monotonic() - started:.1f} s, "
          f"{_lines(tmp_path / 'ray' / store)} records")  # fmt: skip
    assert ray.returncode == 0, ray.stderr
    _same_tables(tmp_path / "ray", tmp_path / "local", tables)
    assert _lines(tmp_path / "ray" / store) == _lines(tmp_path / "local" / store)  # each run recorded once


# long enough to be killed mid-run: the AEC engine, or more episodes per best response
KILLED = {
    "exchange-audit reproduce": ("reproduce", "--seeds", "2", "--episodes", "150", "--engine", "aec"),
    "frontier": ("frontier", "--no-ppo", "--episodes", "4000"),
}


@pytest.mark.parametrize("name", list(KILLED))
def test_a_driver_killed_mid_run_resumes(cluster: Any, tmp_path: Path, name: str) -> None:
    """SIGKILL of the driver once some runs are recorded and not all: the same command run again records
    the rest (none twice) and writes the local tables."""
    argv = KILLED[name]
    _, tables, store = COMMANDS[name]
    local = cluster.eq_env(*argv, "--out", str(tmp_path / "local"), "--jobs", "2")
    assert local.returncode == 0, local.stderr
    total = _lines(tmp_path / "local" / store)
    out = tmp_path / "ray"
    on_cluster = (*argv, "--out", str(out), "--backend", "ray", "--ray-address", cluster.address)
    with (tmp_path / "driver.log").open("w") as log:
        driver = subprocess.Popen([sys.executable, "-m", "eq_env.cli", *on_cluster], cwd=Path(__file__).parents[2],
                                  env=cluster.env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while _lines(out / store) < 2:
            assert driver.poll() is None, (tmp_path / "driver.log").read_text()
            assert time.monotonic() < deadline, "the driver recorded no run in three minutes"
            time.sleep(0.02)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
    kept = _lines(out / store)
    print(f"{name}: driver SIGKILLed with {kept} of {total} records")
    assert 0 < kept < total, "the driver was not killed mid-run"
    again = cluster.eq_env(*on_cluster)
    assert again.returncode == 0, again.stderr
    _same_tables(out, tmp_path / "local", tables)
    assert _lines(out / store) == total  # nothing recorded twice (the file is compacted), nothing missing
