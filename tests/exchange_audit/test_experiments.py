"""Runs, the results file, resuming after a kill, parallel workers, paired differences."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import eq_env.core.experiments as experiments
from eq_env.core.experiments import (
    Condition,
    ResultsStore,
    aggregate,
    canonical_spec,
    paired_difference,
    run_all,
    run_one,
    t_quantile_975,
)
from eq_env.exchange_audit.config import ExchangeAuditConfig

PAPER = ExchangeAuditConfig()


def grid(episodes: int = 100) -> list[Condition]:
    return [
        Condition(
            PAPER.replace(q=q),
            {"proposer": proposer, "validator": "rule"},
            episodes,
            (("q", q), ("proposer", proposer)),
        )
        for q in (0.0, 0.5)
        for proposer in ("honest", "strategic")
    ]


def by_key(records: list[dict]) -> dict[str, dict]:
    return {r["key"]: r for r in records}


# ---------------------------------------------------------------------------
# Conditions and single runs
# ---------------------------------------------------------------------------
def test_condition_key_ignores_labels_and_default_spelling() -> None:
    a = Condition(PAPER, {"proposer": "honest", "validator": "rule"}, 10, (("x", 1),))
    b = Condition(PAPER, {"proposer": "honest:words=13,claims_from=observation", "validator": "rule"}, 10)
    assert a.key == b.key
    assert a.key != Condition(PAPER, {"proposer": "honest:words=14", "validator": "rule"}, 10).key
    assert a.key != Condition(PAPER.replace(q=0.31), {"proposer": "honest", "validator": "rule"}, 10).key
    assert canonical_spec("honest", "proposer").startswith("honest:claims_from='observation'")


def test_condition_validates_at_once() -> None:
    with pytest.raises(ValueError, match="unknown policy"):
        Condition(PAPER, {"proposer": "oracle", "validator": "rule"}, 10)
    with pytest.raises(ValueError, match="plays the validator"):
        Condition(PAPER, {"proposer": "rule", "validator": "rule"}, 10)
    with pytest.raises(ValueError, match="episodes must be a positive integer"):
        Condition(PAPER, {"proposer": "honest", "validator": "rule"}, 0)


def test_engines_agree_and_are_recorded() -> None:
    c = grid()[3]
    batch, aec = run_one(c, 3, "batch"), run_one(c, 3, "aec")
    assert batch["engine"] == "batch" and aec["engine"] == "aec"
    assert batch["metrics"] == aec["metrics"]
    assert run_one(c, 3)["engine"] == "batch"
    with pytest.raises(ValueError, match="engine must be one of"):
        run_one(c, 3, "gpu")


def test_records_are_json_with_the_full_configuration() -> None:
    record = run_one(Condition(PAPER.replace(q=0.0), {"proposer": "silent", "validator": "rule"}, 20), 0)
    again = json.loads(json.dumps(record, allow_nan=False))
    assert again["config"] == PAPER.replace(q=0.0).to_dict()
    assert again["metrics"]["audit_fail_rate"] is None  # undefined at q = 0


# ---------------------------------------------------------------------------
# The results file
# ---------------------------------------------------------------------------
def test_store_round_trip_and_torn_last_line(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.jsonl")
    assert store.load() == {}
    store.append({"key": "a/0", "v": 1})
    store.append({"key": "a/1", "v": 2})
    with store.path.open("a") as fh:
        fh.write('{"key": "a/2", "v"')  # a kill in the middle of a write
    assert set(store.load()) == {"a/0", "a/1"}
    assert store.path.read_text().count("\n") == 2 and store.path.read_text().endswith("}\n")
    store.append({"key": "a/2", "v": 3})
    assert set(store.load()) == {"a/0", "a/1", "a/2"}


def test_store_refuses_a_corrupt_middle_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"key": "a/0"}\nnot json\n{"key": "a/1"}\n')
    with pytest.raises(ValueError, match=r"r.jsonl:2 is not a run record"):
        ResultsStore(path).load()


def test_resume_after_a_crash_gives_the_uninterrupted_results(tmp_path: Path, monkeypatch) -> None:
    conds, seeds = grid(), [0, 1, 2]
    clean = run_all(conds, seeds, ResultsStore(tmp_path / "clean.jsonl"), progress=False)

    real, calls = experiments.run_one, {"n": 0}

    def crashing(condition, seed, engine="auto", **kw):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(condition, seed, engine, **kw)

    monkeypatch.setattr(experiments, "run_one", crashing)
    store = ResultsStore(tmp_path / "resumed.jsonl")
    with pytest.raises(KeyboardInterrupt):
        run_all(conds, seeds, store, progress=False)
    assert len(store.load()) == 4
    monkeypatch.setattr(experiments, "run_one", real)
    resumed = run_all(conds, seeds, store, progress=False)
    assert resumed == clean
    assert len(store.load()) == len(conds) * len(seeds)


def test_duplicate_conditions_run_once(tmp_path: Path) -> None:
    same = [
        Condition(PAPER, {"proposer": "honest", "validator": "rule"}, 30, (("name", "a"),)),
        Condition(PAPER, {"proposer": "honest:words=13", "validator": "rule"}, 30, (("name", "b"),)),
    ]
    store = ResultsStore(tmp_path / "r.jsonl")
    records = run_all(same, [0, 0, 1], store, progress=False)
    assert store.path.read_text().count("\n") == 2  # seeds 0 and 1, once each
    assert records[0] is records[1] and records[0]["labels"] == {"name": "a"}


def test_parallel_workers_give_the_same_results(tmp_path: Path) -> None:
    conds, seeds = grid(), [0, 1]
    serial = run_all(conds, seeds, ResultsStore(tmp_path / "s.jsonl"), progress=False)
    parallel = run_all(conds, seeds, ResultsStore(tmp_path / "p.jsonl"), jobs=2, engine="aec", progress=False)
    assert [r["metrics"] for r in parallel] == [r["metrics"] for r in serial]
    assert {r["engine"] for r in parallel} == {"aec"}


@pytest.mark.slow
def test_a_killed_sweep_resumes_to_the_same_results(tmp_path: Path) -> None:
    """SIGKILL a real `eq-env sweep` midway, start it again, compare with an uninterrupted one."""
    args = ["--grid", "q=0,0.2,0.4,0.6,0.8,1", "--proposer", "honest", "--proposer", "strategic",
            "--seeds", "3", "--episodes", "150", "--engine", "aec", "--jobs", "1"]  # fmt: skip
    cmd = [sys.executable, "-m", "eq_env.cli", "sweep", *args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    killed_dir, clean_dir = tmp_path / "killed", tmp_path / "clean"
    results = killed_dir / "results.jsonl"

    proc = subprocess.Popen([*cmd, "--out", str(killed_dir)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and results.read_text().count("\n") >= 3:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "the sweep finished before it could be killed; make it longer"
    partial = results.read_text().count("\n")
    assert 3 <= partial < 36

    subprocess.run([*cmd, "--out", str(killed_dir)], env=env, check=True, capture_output=True)
    subprocess.run([*cmd, "--out", str(clean_dir)], env=env, check=True, capture_output=True)

    def load(d: Path) -> dict[str, dict]:
        return ResultsStore(d / "results.jsonl").load()

    assert len(load(killed_dir)) == 36
    assert {k: r["metrics"] for k, r in load(killed_dir).items()} == {
        k: r["metrics"] for k, r in load(clean_dir).items()
    }
    assert (killed_dir / "summary.csv").read_text() == (clean_dir / "summary.csv").read_text()


# ---------------------------------------------------------------------------
# Aggregation and paired differences
# ---------------------------------------------------------------------------
def test_aggregate_and_paired_difference(tmp_path: Path) -> None:
    conds = grid(200)
    records = run_all(conds, range(5), ResultsStore(tmp_path / "r.jsonl"), progress=False)
    agg = aggregate(conds, records)
    (_, s0, seeds0), (_, _, seeds1) = agg[0], agg[2]  # honest at q = 0 and q = 0.5
    assert s0["welfare"][0] == pytest.approx(sum(m["welfare"] for m in seeds0.values()) / 5)
    diff, low, high, n = paired_difference(seeds1, seeds0, "welfare")
    per_seed = [seeds1[s]["welfare"] - seeds0[s]["welfare"] for s in range(5)]
    assert n == 5 and diff == pytest.approx(sum(per_seed) / 5)
    sd = math.sqrt(sum((d - diff) ** 2 for d in per_seed) / 4)
    assert high - diff == pytest.approx(2.776 * sd / math.sqrt(5))
    assert low < diff < high
    # common random numbers: the paired spread is far below the unpaired one
    unpaired_sd = math.sqrt(s0["welfare"][1] ** 2 + agg[2][1]["welfare"][1] ** 2)
    assert sd < unpaired_sd


def test_paired_difference_edge_cases() -> None:
    a = {0: {"m": 1.0}, 1: {"m": math.nan}}
    b = {0: {"m": 0.5}, 1: {"m": 0.2}, 2: {"m": 0.1}}
    assert paired_difference(a, b, "m")[0] == 0.5 and paired_difference(a, b, "m")[3] == 1
    assert math.isnan(paired_difference({}, b, "m")[0])


def test_t_quantiles_err_on_the_wide_side() -> None:
    assert t_quantile_975(4) == 2.776
    assert t_quantile_975(22) == 2.086  # between rows: the smaller df's larger quantile
    assert t_quantile_975(10_000) == 1.980
    assert math.isnan(t_quantile_975(0))
