"""``eq-env reproduce --env belief-coordination --answerer llm``: failed requests, accounting and the LLM flags,
against local scripted servers only (127.0.0.1); and the statistics of the summary (Holm's correction, the
held-out comparator, F2's ε, seeds left out), on records made up here.

The defects fixed here: failed requests scored as wrong answers (exit 0, never retried); no accounting, no
``--price-*``, an error naming an ``--api-key`` that did not exist; a one-question file refused, no
``--backoff``; and the statistics."""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eq_env.agents.belief_coordination.scripts import solver_script
from eq_env.agents.client import LLMClient, configure, settings
from eq_env.agents.fake_server import Reply, ScriptedLLMServer
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.questions import generated_question
from eq_env.cli import main
from eq_env.studies.belief_coordination import reproduce
from eq_env.studies.belief_coordination.verdicts import estimate, holm

TABLES = ("methods.md", "methods.csv", "falsifiers.md", "summary.md")
ARGS = ["reproduce", "--env", "belief-coordination", "--seeds", "2", "--n-executors", "2", "--questions", "6",
        "--train-steps", "1", "--jobs", "1", "--answerer", "llm", "--model", "fake", "--equilibrium-questions", "2",
        "--concurrency", "8", "--max-retries", "1", "--backoff", "0.01", "--timeout", "5", "--no-progress"]  # fmt: skip


@pytest.fixture(autouse=True)
def fresh_client() -> Iterator[None]:
    before = settings()
    LLMClient.forget()
    yield
    configure(**{k: getattr(before, k) for k in before.__dataclass_fields__})
    LLMClient.forget()


def _answers() -> dict[str, float]:
    return {(q := generated_question(s, i)).text: q.answer for s in range(2) for i in range(6)}


def _doomed(request: dict[str, Any]) -> bool:
    """A fixed 30% of the requests (by body): the ones the outage fails for good."""
    body = json.dumps({"messages": request["messages"], "seed": request.get("seed"),
                       "temperature": request.get("temperature")}, sort_keys=True)  # fmt: skip
    return hashlib.sha256(body.encode()).digest()[0] < 0.3 * 256


class Outage:
    """Always right (every reply has the correct number), except during the outage: 30% of the requests then
    get 500 every time they are asked."""

    def __init__(self) -> None:
        self.solver = solver_script(_answers(), accuracy_at=lambda t: 1.0)
        self.down = True

    def __call__(self, request: dict[str, Any], n: int) -> Reply:
        if self.down and _doomed(request):
            return Reply(status=500, body={"error": {"message": "the model is down"}})
        return self.solver(request, n)


def _run(out: Path, url: str, *extra: str) -> int:
    LLMClient.forget()  # (each command is a process of its own: nothing of the last one's in memory)
    return main([*ARGS, "--out", str(out), "--base-url", url, *extra])


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _costs(out: Path) -> list[dict[str, str]]:
    with (out / "llm_costs.csv").open() as fh:
        return list(csv.DictReader(fh))


def _requests_recorded(out: Path) -> int:
    return sum(int(row["requests"]) for row in _costs(out))


@pytest.mark.slow
def test_failed_requests_are_recorded_named_left_out_retried_and_healed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Defect 1: against a server failing 30% of the requests for good (``--max-retries 1``), the failures were
    scored as wrong answers, the command exited 0 saying nothing, the verdicts were computed on them, and a
    rerun made 0 requests. Now: exit 3, the failed runs named on stderr, the failures in results.jsonl (not
    as answers: every answer the server gave is right, so every method's accuracy is 1 on what is left), no
    verdict, and each rerun asks exactly the failed requests again, until the server heals and the tables are
    those of a run that never met the outage. The records hold every request the server counted."""
    out, clean = tmp_path / "out", tmp_path / "clean"
    script = Outage()
    with ScriptedLLMServer(script, models=["fake"]) as server:
        assert _run(out, server.url) == 3
        err = capsys.readouterr().err
        made = len(server.requests)
        doomed = {json.dumps(r, sort_keys=True) for r in server.requests if _doomed(r)}
        assert doomed and made == _requests_recorded(out)  # every request recorded, retries included
        records = _records(out)
        assert all(r["failed"] for r in records)
        assert all(f["method"] in (*reproduce.METHODS, "f2") and "500" in f["error"] and f["failed_requests"] >= 1
                   for r in records for f in r["failed"])  # fmt: skip
        for r in records:
            for m, metrics in r["methods"].items():  # only right answers are left: failures are not answers
                assert metrics["accuracy"] in (1.0, None) and metrics["no_answer"] in (0.0, None), (m, metrics)
                lost = sum(1 for f in r["failed"] if f["method"] == m)
                assert metrics["failed_questions"] == lost
        lines = err.strip().splitlines()
        assert any(line.startswith("eq-env reproduce: run llm N=2 seed 0: ") for line in lines), err
        assert any(line.startswith("eq-env reproduce: run llm N=2 seed 1: ") for line in lines), err
        assert "episode(s) failed in 2 run(s)" in lines[-1] and "run the same command again" in lines[-1], err
        summary = (out / "summary.md").read_text()
        assert "**Incomplete:" in summary and "Holm-adjusted p" not in summary and "no verdict" in summary
        assert all("**Incomplete:" in (out / name).read_text() for name in ("falsifiers.md", "methods.md"))

        # run again, the outage still on: exactly the failed requests are asked again (and fail again)
        assert _run(out, server.url) == 3
        again = server.requests[made:]
        assert {json.dumps(r, sort_keys=True) for r in again} == doomed and len(again) == 2 * len(doomed)
        assert _requests_recorded(out) == len(server.requests)  # (a run played again bills every attempt)
        assert len(_records(out)) == 2  # one record per run: the new replaced the old
        # the server heals: the failed requests are asked once more (and, their answers now read by the later
        # debate rounds, those rounds' new requests), nothing answered before is asked again
        script.down = False
        before = len(server.requests)
        assert _run(out, server.url) == 0
        healed = [json.dumps(r, sort_keys=True) for r in server.requests[before:]]
        earlier = {json.dumps(r, sort_keys=True) for r in server.requests[:before]}
        first_round = {b for b in doomed if "<solver_reply" not in b}  # (a debate round's prompt may change)
        assert first_round and first_round <= set(healed) and len(healed) == len(set(healed))
        assert not (set(healed) - doomed) & earlier
        assert _requests_recorded(out) == len(server.requests)
        assert _run(clean, server.url) == 0  # a run that never met the outage
    assert all(not r["failed"] for r in _records(out))
    for name in TABLES:
        assert (out / name).read_text() == (clean / name).read_text(), name
    assert [(r["methods"], r["f2"]) for r in _records(out)] == [(r["methods"], r["f2"]) for r in _records(clean)]
    healed_summary = (out / "summary.md").read_text()
    assert "Incomplete" not in healed_summary and "Holm-adjusted p" in healed_summary


@pytest.mark.slow
def test_the_llm_path_takes_the_generic_llm_flags_and_records_its_costs(tmp_path: Path) -> None:
    """Defect 2: a 599-request run recorded no requests, retries, cache hits or billed tokens, wrote no
    llm_costs.csv, had no --price-* flags, and refused --api-key. Now --api-key (the server requires it),
    --backoff and the prices are taken, every record says what each method's requests cost, and
    llm_costs.csv sums them: as many requests as the server counted, billed at the given prices. A replay
    (--cache read) makes none and bills nothing, and gives the same tables."""
    out, replay = tmp_path / "out", tmp_path / "replay"
    key = "sk-test-belief-0123456789"
    flags = ["--api-key", key, "--price-prompt", "2", "--price-completion", "5", "--seeds", "1"]
    with ScriptedLLMServer(solver_script(_answers()), models=["fake"], api_key=key) as server:
        assert _run(out, server.url, *flags) == 0
        made = len(server.requests)
        assert _run(replay, server.url, *flags, "--cache", "read", "--cache-dir", str(out / "llm_cache")) == 0
        assert len(server.requests) == made
    record = _records(out)[0]
    transport = record["llm"]["fixed"]["executor"]["transport"]
    assert set(record["llm"]) == {*reproduce.METHODS, "f2"}
    assert set(transport) >= {"requests", "retries", "cache_hits", "billed_prompt_tokens", "billed_completion_tokens"}
    rows = _costs(out)
    assert {row["condition"] for row in rows} == {f"llm/n2/{m}" for m in (*reproduce.METHODS, "f2")}
    assert sum(int(row["requests"]) for row in rows) == made
    assert sum(int(row["cache_hits"]) for row in rows) > 0  # (single, fixed and debate share round 1's samples)
    for row in rows:
        billed = (int(row["billed_prompt_tokens"]) * 2 + int(row["billed_completion_tokens"]) * 5) / 1e6
        assert math.isclose(float(row["billed_usd"]), billed) and float(row["cost_usd"]) > 0
    assert sum(int(row["requests"]) for row in _costs(replay)) == 0
    assert sum(float(row["billed_usd"]) for row in _costs(replay)) == 0
    for name in TABLES:
        assert (replay / name).read_text() == (out / name).read_text(), name


@pytest.mark.slow  # (two commands in process: over a quarter of a second)
def test_the_no_key_error_names_flags_that_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Defect 2: with no key for OpenAI's endpoint the error said "pass --api-key", which the command then
    refused as an unrecognized argument. (Nothing is sent: the key is missing before any request.)"""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    status = main(["reproduce", "--env", "belief-coordination", "--out", str(tmp_path / "o"), "--answerer", "llm",
                   "--model", "m", "--base-url", "https://api.openai.com/v1", "--no-null", "--seeds", "1"])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and "pass --api-key" in err and err.count("\n") == 1, err
    flags = {word.strip(".,;:()") for word in err.split() if word.startswith("--")}
    assert flags == {"--api-key"}
    status = main(["reproduce", "--env", "belief-coordination", "--out", str(tmp_path / "o"), "--answerer", "llm",
                   "--model", "m", "--api-key", "k", "--backoff", "1", "--dry-run"])  # fmt: skip
    printed = capsys.readouterr()
    assert status == 0 and "===== executor request, first round" in printed.out, printed.err
    assert not (tmp_path / "o").exists()  # (a dry run makes nothing)


@pytest.mark.slow
def test_a_one_question_file_runs_and_says_f2_is_not_measured(tmp_path: Path) -> None:
    """Defect 10: a valid one-question --questions-file was refused with "Out of range float values are not JSON
    compliant" (F2's held-out half was empty: its gain a NaN). Now the run is recorded, F2's ε is null and
    shown as not measured, and the summary names the seed left out."""
    questions = tmp_path / "one.jsonl"
    questions.write_text(json.dumps({"question": "Ann has 3 apples and buys 4 more. How many?", "answer": 7}) + "\n")
    out = tmp_path / "o"
    assert main(["reproduce", "--env", "belief-coordination", "--seeds", "1", "--n-executors", "2", "--questions", "5",
                 "--train-steps", "1", "--jobs", "1", "--no-null", "--questions-file", str(questions), "--out",
                 str(out)]) == 0  # fmt: skip
    (record,) = _records(out)
    assert record["questions"] == 1 and record["f2"]["epsilon"] is None and record["f2"]["questions"] == 1
    f2 = next(line for line in (out / "summary.md").read_text().splitlines() if "**F2**" in line)
    assert "not measured" in f2 and "seed 0 left out: undefined" in f2, f2


# ---------------------------------------------------------------------------
# The statistics (defect 12), on records made up here
# ---------------------------------------------------------------------------
def _record(seed: int, accuracy: dict[str, float | None], *, multi: str = "fixed", failed: int = 0,
            epsilon: float | None = 0.01) -> dict[str, Any]:  # fmt: skip
    methods = {}
    for m in reproduce.METHODS:
        a = accuracy.get(m, 0.5)
        methods[m] = {k: (None if a is None else (a if k in ("accuracy", "reward") else 1.0))
                      for k in reproduce.METRIC_NAMES}  # fmt: skip
        methods[m]["tokens"] = None if a is None else (300.0 if m == "econ" else 1000.0)
    return {"key": f"k{seed}/r2", "instrument": "sensitive", "n": 3, "seed": seed, "questions": 40, "episodes": 340,
            "multi": multi, "methods": methods,
            "failed": [{"method": "fixed", "episode": k, "question": f"q{k}", "failed_requests": 1, "error": "500"}
                       for k in range(failed)],
            "f2": {"epsilon": epsilon, "gain": [epsilon], "largest_gain": epsilon}}  # fmt: skip


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def test_holm_adjusts_over_the_claims_of_a_run() -> None:
    """Defect 12: up to seven verdicts at 95% each. Holm's adjusted p-values, checked by hand; a claim with
    p = 0.03 among seven is no longer a difference."""
    assert holm([0.01, 0.04, 0.03, math.nan]) == pytest.approx([0.03, 0.06, 0.06, math.nan], nan_ok=True)
    assert holm([0.2, 0.001]) == pytest.approx([0.2, 0.002])
    assert holm([0.5, 0.4, 0.3]) == pytest.approx([0.9, 0.9, 0.9])  # (monotone: never below an earlier one)
    # t-test p-values: t = mean / (sd / sqrt(n)) with n - 1 degrees of freedom
    est = estimate({0: 0.1, 1: 0.2, 2: 0.3})  # t = 0.2 / (0.1 / sqrt 3) = 3.464 on 2 df: p = 0.0742
    assert est.p == pytest.approx(0.07418, abs=1e-4) and est.half == pytest.approx(4.303 * 0.1 / math.sqrt(3))
    # five seeds, ECON +3.0 ± 2.0 points over single (its interval excludes 0; p = 0.013 alone), and so over
    # fixed, schedule and tuned: four such claims and two more in the family, so Holm multiplies p by five
    deltas = (0.02, 0.03, 0.05, 0.01, 0.04)
    records = [_record(s, {"econ": 0.5 + d, "frozen": 0.5 + d}) for s, d in enumerate(deltas)]
    text = reproduce.summary(records, reproduce.Options())
    single = _line(text, "| +10.9%")
    assert "3.0 ± 2.0 points" in single and "no difference we can detect (Holm-adjusted p = 0.0662)" in single, single
    assert "over the 6 claims below" in text
    assert "fewer (Holm-adjusted p = 0)" in _line(text, "| 21.4%")  # (70% fewer on every seed)


def test_the_multi_llm_comparator_is_the_one_chosen_on_the_training_questions() -> None:
    """Defect 12: the comparator of "+11.2% over multi-LLM methods" was the best of three on the very data it was
    tested on. Now each run names the one its training questions chose, and the claim is measured against it,
    even where another baseline happened to do better on the held-out questions."""
    records = [_record(s, {"econ": 0.6, "fixed": 0.5, "debate": 0.9}, multi="fixed") for s in range(3)]
    multi = _line(reproduce.summary(records, reproduce.Options()), "| +11.2%")
    assert "10.0 ± 0.0 points (ECON − fixed" in multi, multi
    config = BeliefCoordinationConfig(n_executors=3, action_space="grid")
    pool = reproduce.engine.training_batch(config, np.random.default_rng(0), 100)
    accuracy = {m: reproduce.engine.play(pool, config if m != "debate" else BeliefCoordinationConfig(
        n_executors=3, action_space="grid", rounds=3), reproduce._fixed(*reproduce.BASE) if m != "schedule"
        else reproduce._schedule(3)).ts.mean() for m in reproduce.MULTI}  # fmt: skip
    assert reproduce.best_multi(config, pool) == max(reproduce.MULTI, key=lambda m: accuracy[m])


@pytest.mark.slow  # (200 deviation searches: a second or two)
def test_f2s_epsilon_is_not_biased_upwards_by_the_maximum() -> None:
    """Defect 12: ε was a mean over seeds of per-seed maxima of executors' gains, biased upwards. Where no
    deviation can gain anything (every reward is noise, the same for every profile in distribution), the
    cross-fitted ε averages 0 within its standard error, while the largest held-out gain (the old statistic)
    is clearly positive."""
    config = BeliefCoordinationConfig(n_executors=3, action_space="grid", grid_temperatures=3, grid_penalties=2)
    b, trials = 40, 200
    difficulty = np.repeat([0.0, 0.5, 1.0, 1.0], b // 4)
    actions = np.zeros((b, 3), np.int64)
    rng = np.random.default_rng(5)
    eps, largest = [], []
    for _ in range(trials):
        f2 = reproduce.equilibrium_gaps(config, actions, difficulty, lambda p: rng.normal(0.0, 1.0, len(p)))
        eps.append(f2["epsilon"])
        largest.append(f2["largest_gain"])
    se = np.std(eps, ddof=1) / math.sqrt(trials)
    assert abs(np.mean(eps)) < 3 * se, (np.mean(eps), se)
    assert np.mean(largest) > 3 * np.std(largest, ddof=1) / math.sqrt(trials), np.mean(largest)


def test_seeds_left_out_are_named_and_incomplete_runs_get_no_verdict() -> None:
    """Defect 12: seeds giving NaN were dropped without a word; defect 1: verdicts were computed on data with
    failures in it. Seed 1's ECON has no question left (every one failed): the summary says the seed is left
    out; and claims measured on runs with failed episodes get no verdict."""
    records = [_record(0, {"econ": 0.6}), _record(1, {"econ": None}, failed=3), _record(2, {"econ": 0.7})]
    text = reproduce.summary(records, reproduce.Options())
    single = _line(text, "| +10.9%")
    assert "(seed 1 left out: undefined)" in single and "no verdict: 3 of its episodes failed" in single, single
    assert text.count("no verdict") == 6 and "**Incomplete: 3 of 1020 episodes failed** in 1 run" in text
    rows = reproduce.falsifier_rows(records)
    assert rows[0][2] == "3" and "(seed 1 left out: undefined)" in rows[0][3], rows
    assert "left out" not in rows[0][5]  # (F2's ε is defined on every seed)
