"""``eq-env reproduce --env belief-coordination`` and ``eq-env train --env belief-coordination``: a tiny offline
run writes every output and resumes; the LLM path runs end to end against the local test server and replays
with zero requests, failures included; bad flags get one line."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from eq_env.agents.belief_coordination.scripts import hostile_script, solver_script
from eq_env.agents.client import LLMClient, configure, settings
from eq_env.agents.fake_server import ScriptedLLMServer
from eq_env.belief_coordination.questions import generated_question
from eq_env.cli import main

TINY = ["--seeds", "2", "--n-executors", "2", "--questions", "40", "--train-steps", "3", "--jobs", "1"]


@pytest.fixture(autouse=True)
def fast_llm_settings(tmp_path: Path) -> Iterator[None]:
    before = settings()
    configure(backoff=0.01, max_backoff=0.05, timeout=2.0, max_retries=1)
    LLMClient.forget()
    yield
    configure(**{k: getattr(before, k) for k in before.__dataclass_fields__})
    LLMClient.forget()


def _reproduce(out: Path, *extra: str) -> int:
    return main(["reproduce", "--env", "belief-coordination", "--out", str(out), *TINY, *extra])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One tiny offline run (the null instrument too), shared: its output directory and what it printed."""
    out = tmp_path_factory.mktemp("tiny") / "run"
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert _reproduce(out) == 0
    return out, printed.getvalue()


@pytest.mark.slow
def test_a_tiny_offline_run_writes_every_output_and_resumes(tiny):
    out, printed = tiny
    for claim in ("+10.9% over single-agent", "+11.2% over multi-LLM", "21.4% fewer tokens", "**F1**", "**F2**",
                  "**F3**", "null instrument"):  # fmt: skip
        assert claim in printed
    for name in (
        "results.jsonl",
        "methods.md",
        "methods.csv",
        "falsifiers.md",
        "summary.md",
        "belief_coordination.png",
    ):
        assert (out / name).stat().st_size > 0, name
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {(r["instrument"], r["n"], r["seed"]) for r in records} == {("sensitive", 2, 0), ("sensitive", 2, 1),
                                                                       ("null", 2, 0), ("null", 2, 1)}  # fmt: skip
    null = [r for r in records if r["instrument"] == "null"]
    for r in null:  # the null instrument: no choice of (T, p) can matter
        rewards = {m: r["methods"][m]["reward"] for m in ("fixed", "random", "schedule", "tuned", "econ", "frozen")}
        assert len(set(rewards.values())) == 1, rewards
        assert r["f2"]["epsilon"] == 0.0
    before = (out / "results.jsonl").read_text()
    summary = (out / "summary.md").read_text()
    assert _reproduce(out) == 0  # every run is there: nothing is run again, the outputs are the same
    assert (out / "results.jsonl").read_text() == before
    assert (out / "summary.md").read_text() == summary


@pytest.mark.slow
def test_the_runs_are_reproducible_bit_for_bit(tiny, tmp_path):
    # the tiny run's sensitive runs again, in a command of their own later in this process (--no-null: the
    # null runs and their rows are left out of the comparison)
    a, b = tiny[0], tmp_path / "b"
    assert _reproduce(b, "--no-null") == 0
    strip = [{k: v for k, v in json.loads(line).items() if k != "econ"} for line in (a / "results.jsonl").open()]
    again = [{k: v for k, v in json.loads(line).items() if k != "econ"} for line in (b / "results.jsonl").open()]
    assert [r for r in strip if r["instrument"] == "sensitive"] == again and len(again) == 2
    rows = [line for line in (a / "methods.md").read_text().splitlines() if not line.startswith("| null |")]
    assert rows == (b / "methods.md").read_text().splitlines()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--answerer", "llm", "--model", "m", "--temperature", "0.5"], "--temperature does not apply"),
        (["--answerer", "llm", "--model", "m", "--llm-seed", "3"], "--llm-seed does not apply"),
        (["--model", "m"], "--model needs --answerer llm"),
        (["--cache", "read"], "--cache needs --answerer llm"),
        (["--backoff", "2", "--api-key", "k"], "--api-key and --backoff need --answerer llm"),
        (["--n-executors", "2,2"], "distinct"),
        (["--n-executors", "17"], "--n-executors"),
        (["--questions", "1"], "--questions"),
        (["--seeds", "abc"], "--seeds"),
    ],
)
def test_bad_flags_get_one_line(tmp_path, capsys, flags, message):
    try:
        status = main(["reproduce", "--env", "belief-coordination", "--out", str(tmp_path / "o"), *flags])
    except SystemExit as exit_:  # (argparse's own errors end the parser)
        status = exit_.code
    err = capsys.readouterr().err
    assert status == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 3


def test_a_malformed_questions_file_is_named(tmp_path, capsys):
    bad = tmp_path / "gsm.jsonl"
    bad.write_text('{"question": "What is 1 + 1?", "answer": "#### 2"}\n{"question": "x", "answer": "no hashes"}\n')
    status = main(["reproduce", "--env", "belief-coordination", "--out", str(tmp_path / "o"),
                   "--questions-file", str(bad)])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and "gsm.jsonl line 2" in err and "Traceback" not in err


def _answers(count: int) -> dict[str, float]:
    return {(q := generated_question(0, i)).text: q.answer for i in range(count)}


@pytest.mark.slow
def test_the_llm_path_runs_end_to_end_and_replays_with_zero_requests(tmp_path):
    first, replay = tmp_path / "first", tmp_path / "replay"
    llm = ["--answerer", "llm", "--model", "fake", "--equilibrium-questions", "2", "--no-null", "--seeds", "1",
           "--questions", "6"]  # fmt: skip
    with ScriptedLLMServer(hostile_script(_answers(6)), models=["fake"]) as server:
        assert _reproduce(first, *llm, "--base-url", server.url) == 3  # (the hostile server's outages)
        asked = len(server.requests)
        assert asked > 0
        record = json.loads((first / "results.jsonl").read_text())
        methods = record["methods"]
        assert set(methods) == {"single", "fixed", "random", "schedule", "tuned", "debate", "econ", "frozen"}
        assert methods["debate"]["tokens"] > methods["fixed"]["tokens"] > methods["single"]["tokens"] > 0
        assert 0 < methods["fixed"]["no_answer"] < 1  # the hostile server's malformed and empty replies count
        assert record["failed"] and all("500" in f["error"] for f in record["failed"])  # its outages do not
        LLMClient.forget()  # (a new process: nothing in memory)
        assert _reproduce(replay, *llm, "--base-url", server.url, "--cache", "read", "--cache-dir",
                          str(first / "llm_cache")) == 3  # fmt: skip
        assert len(server.requests) == asked  # a replay asks nothing, failures included
    again = json.loads((replay / "results.jsonl").read_text())
    assert again["methods"] == methods and again["f2"] == record["f2"] and again["failed"] == record["failed"]
    assert (replay / "methods.md").read_text() == (first / "methods.md").read_text()
    assert "fake" not in json.dumps(record) or "sk-" not in json.dumps(record)


def test_an_unreachable_endpoint_fails_fast(tmp_path, capsys):
    status = _reproduce(tmp_path / "o", "--answerer", "llm", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                        "--no-null", "--seeds", "1")  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err and err.count("\n") <= 3, err


@pytest.mark.slow
def test_a_solver_that_heeds_temperature_is_measured_through_the_model(tmp_path):
    out = tmp_path / "o"
    with ScriptedLLMServer(solver_script(_answers(8), accuracy_at=lambda t: 1.0 if t < 1.0 else 0.0),
                           models=["fake"]) as server:  # fmt: skip
        assert _reproduce(out, "--answerer", "llm", "--model", "fake", "--base-url", server.url, "--no-null",
                          "--seeds", "1", "--questions", "8", "--equilibrium-questions", "2") == 0  # fmt: skip
    methods = json.loads((out / "results.jsonl").read_text())["methods"]
    assert methods["fixed"]["accuracy"] == 1.0  # T = 0.7: always right
    assert methods["single"]["accuracy"] == 1.0


@pytest.mark.slow
def test_train_saves_a_policy_that_plays(tmp_path, capsys):
    out = tmp_path / "econ"
    assert main(["train", "--env", "belief-coordination", "--out", str(out), "--steps", "3",
                 "--eval-questions", "50"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "econ (trained)" in printed and "econ (frozen at init)" in printed
    assert (out / "econ.pt").exists() and (out / "econ.json").exists() and (out / "curve.csv").exists()
    for space in ("grid", "box"):  # (it picks its grid point either way)
        assert main(["play", "--env", "belief-coordination", "--executor", f"econ:path={out}", "--episodes", "5",
                     "--action-space", space]) == 0  # fmt: skip
    assert "accuracy" in capsys.readouterr().out
    assert main(["play", "--env", "belief-coordination", "--executor", f"econ:path={out}", "--episodes", "2",
                 "--n-executors", "4"]) == 2  # fmt: skip
    assert "ECON was trained for a team of 3 executors" in capsys.readouterr().err
