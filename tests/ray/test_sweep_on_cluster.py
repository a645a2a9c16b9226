"""``eq-env sweep --backend ray`` on a two-node Ray cluster: the same outputs as the local sweep, and no
run lost when a node is.

The driver is a separate ``python -m eq_env.cli`` process joining the cluster with ``--ray-address``, as
a user's would be; the cluster is :func:`conftest.cluster`. Run with ``pytest tests/ray`` (``.ci/ray``).
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.ray

OUTPUTS = ("summary.csv", "summary.md", "paired.csv")
# 3 x 2 conditions x 2 seeds of the exchange-audit game on its AEC engine: 12 runs of about a second each
SWEEP = ("sweep", "--grid", "q=0.0,0.25,0.5", "--proposer", "honest", "--proposer", "strategic", "--seeds", "2",
         "--episodes", "600", "--engine", "aec")  # fmt: skip


def _local(cluster: Any, out: Path) -> Path:
    done = cluster.eq_env(*SWEEP, "--out", str(out), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    return out


def _keys(results: Path) -> list[str]:
    return [json.loads(line)["key"] for line in results.read_text().splitlines()]


def test_a_sweep_on_the_cluster_equals_the_local_sweep(cluster: Any, tmp_path: Path) -> None:
    started = time.monotonic()
    local = _local(cluster, tmp_path / "local")
    print(f"sweep of 12 runs locally (--jobs 2): {time.monotonic() - started:.1f} s")
    started = time.monotonic()
    done = cluster.eq_env(*SWEEP, "--out", str(tmp_path / "ray"), "--backend", "ray", "--ray-address", cluster.address)
    print(f"sweep of 12 runs on the two-node cluster: {time.monotonic() - started:.1f} s")
    assert done.returncode == 0, done.stderr
    for name in OUTPUTS:
        assert (tmp_path / "ray" / name).read_bytes() == (local / name).read_bytes(), name
    # the driver alone wrote the results: one line per run, each run once
    keys = _keys(tmp_path / "ray" / "results.jsonl")
    assert len(keys) == len(set(keys)) == 12
    assert sorted(keys) == sorted(_keys(local / "results.jsonl"))


def test_a_node_killed_mid_sweep_loses_no_run(cluster: Any, tmp_path: Path) -> None:
    """The worker node dies (its processes SIGKILLed) while it runs a task: Ray resubmits the task to the
    head (or the driver ends with one line, and the same command run again completes the sweep).

    Last in this file: the session's cluster has one node after it."""
    local = _local(cluster, tmp_path / "local")
    out = tmp_path / "ray"
    argv = (*SWEEP, "--out", str(out), "--backend", "ray", "--ray-address", cluster.address)
    driver = cluster.start_eq_env(*argv)
    try:
        deadline = time.monotonic() + 120
        while cluster.worker.running_tasks() == 0:  # a task of this sweep is running on the worker node
            assert driver.poll() is None, "the sweep ended before the worker node ran any of its runs"
            assert time.monotonic() < deadline, "the worker node ran no task in two minutes"
            time.sleep(0.05)
        killed = time.monotonic()
        cluster.worker.stop(signal.SIGKILL)
        _, stderr = driver.communicate(timeout=300)
        ended = time.monotonic() - killed
        print(f"worker node killed; the driver ended {ended:.1f} s later, with status {driver.returncode}")
    finally:
        if driver.poll() is None:
            driver.kill()
    if driver.returncode != 0:  # the run was lost more often than Ray resubmits it: said in one line
        assert driver.returncode == 2 and "run the same command again" in stderr, stderr
        again = cluster.eq_env(*argv)
        assert again.returncode == 0, again.stderr
    for name in OUTPUTS:
        assert (out / name).read_bytes() == (local / name).read_bytes(), name
    keys = _keys(out / "results.jsonl")
    assert len(keys) == len(set(keys)) == 12
