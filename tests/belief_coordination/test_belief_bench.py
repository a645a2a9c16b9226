"""Belief coordination's part of ``eq-env bench`` (``bench-v1``): the quick task played through ``run_all``
against the local test server scripted as a good, a mediocre and a hostile model (127.0.0.1 only).

One module-scoped run per quality (each a few seconds); the good one is also replayed from its cache.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from eq_env.agents.belief_coordination.answerer import executor_messages
from eq_env.agents.belief_coordination.coordinator import coordinator_messages
from eq_env.agents.belief_coordination.scripts import bench_request, bench_script
from eq_env.agents.client import LLMClient, configure, settings
from eq_env.agents.fake_server import ScriptedLLMServer
from eq_env.belief_coordination.answerers import AnswerRequest
from eq_env.belief_coordination.questions import generated_question
from eq_env.core.bench import BenchModel, TaskReport
from eq_env.core.experiments import Condition, ResultsStore, run_all
from eq_env.studies.belief_coordination import bench

FAST = {"backoff": 0.01, "max_backoff": 0.05, "timeout": 2.0, "max_retries": 1}
(TASK,) = bench.TASKS


@dataclass
class Run:
    conditions: list[Condition]
    records: list[dict[str, Any]]
    requests: list[dict[str, Any]]  # every chat request the server received
    replay: list[dict[str, Any]] | None = None
    replay_requests: int = -1


@pytest.fixture(scope="module")
def llm_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    before = settings()
    out = tmp_path_factory.mktemp("bench_bc")
    configure(cache="readwrite", cache_dir=out / "llm_cache", **FAST)
    LLMClient.forget()
    yield out
    configure(**{k: getattr(before, k) for k in before.__dataclass_fields__})
    LLMClient.forget()


def _play(quality: str, out: Path, replay: bool = False) -> Run:
    # a cache of its own: a later server may get an earlier one's port, and must not find its answers
    configure(cache_dir=out / f"llm_cache_{quality}")
    with ScriptedLLMServer(bench_script(quality)) as server:
        model = BenchModel("fake", server.url, {"temperature": 0.0, "max_tokens": 256})
        conditions = list(TASK.conditions(model, True))
        records = run_all(conditions, TASK.seeds(True), ResultsStore(out / f"{quality}.jsonl"), progress=False)
        run = Run(conditions, records, list(server.requests))
        if replay:  # from the cache alone, the server still up to count what reaches it
            configure(cache="read")
            LLMClient.forget()
            try:
                run.replay = run_all(conditions, TASK.seeds(True), ResultsStore(out / f"{quality}-replay.jsonl"),
                                     progress=False)  # fmt: skip
            finally:
                configure(cache="readwrite")
            run.replay_requests = len(server.requests) - len(run.requests)
    LLMClient.forget()
    return run


@pytest.fixture(scope="module")
def good(llm_settings: Path) -> Run:
    return _play("good", llm_settings, replay=True)


@pytest.fixture(scope="module")
def mediocre(llm_settings: Path) -> Run:
    return _play("mediocre", llm_settings)


@pytest.fixture(scope="module")
def hostile(llm_settings: Path) -> Run:
    return _play("hostile", llm_settings)


def _report(run: Run) -> TaskReport:
    return TASK.report(run.conditions, run.records)


def _stable(record: Mapping[str, Any]) -> dict[str, Any]:
    """A run record without what varies from run to run by design (requests, retries, latency, cache hits)."""
    out = {k: v for k, v in record.items() if k not in ("llm", "failed")}
    out["failed"] = [(f["episode"], f["role"], f["error"]) for f in record.get("failed", [])]
    return out


# ---------------------------------------------------------------------------
# The three scripted models
# ---------------------------------------------------------------------------
@pytest.mark.slow
def test_good_beats_mediocre_on_the_main_metric_and_every_row(good: Run, mediocre: Run) -> None:
    g, m = _report(good), _report(mediocre)
    sign = 1 if TASK.main.higher_is_better else -1
    assert sign * (g.main.mean - m.main.mean) > 0.2, (g.main, m.main)
    assert g.main.low > m.main.high, (g.main, m.main)  # the intervals over seeds do not even overlap
    for (row, gc), (row_m, mc) in zip(g.rows, m.rows, strict=True):
        assert row == row_m
        assert sign * (gc[TASK.main.key].mean - mc[TASK.main.key].mean) > 0, row


@pytest.mark.slow
def test_hostile_failures_are_recorded_and_the_rest_is_measured(hostile: Run) -> None:
    failed = [f for r in hostile.records for f in r.get("failed", [])]
    episodes = sum(r["episodes"] for r in hostile.records)
    assert 0 < len(failed) < episodes  # some episodes failed after the retries, not all
    assert {f["role"] for f in failed} <= {"executor", "coordinator"}
    assert any("scripted outage" in f["error"] for f in failed)  # the states answered with a persistent 500
    assert all(math.isfinite(r["metrics"]["accuracy"]) for r in hostile.records if len(r["failed"]) < r["episodes"])
    transport = [r["llm"][role]["transport"] for r in hostile.records for role in ("executor", "coordinator")
                 if role in r["llm"]]  # fmt: skip
    assert sum(t["retries"] for t in transport) > 0 and sum(t["errors"] for t in transport) > 0
    bodies = {json.dumps(r, sort_keys=True) for r in hostile.requests}
    assert len(bodies) < len(hostile.requests)  # 429s, 500s and cut bodies were asked again
    report = _report(hostile)
    assert any("failed" in note for note in report.notes)
    # an executor reply without a number is the model's answer, not a failure: it shows in no_answer
    assert any(cells["no_answer"].mean > 0 for _, cells in report.rows)


@pytest.mark.slow
def test_the_report_has_every_row_metric_and_reference(good: Run) -> None:
    report = _report(good)
    assert [row for row, _ in report.rows] == list(bench.ROWS)
    keys = [m.key for m in report.metrics]
    assert TASK.main in report.metrics
    for row, cells in report.rows:
        assert sorted(cells) == sorted(keys), row
        for key, cell in cells.items():
            assert cell.n == len(TASK.seeds(True)) and math.isfinite(cell.mean), (row, key, cell)
            assert math.isfinite(cell.low) and cell.low <= cell.mean <= cell.high, (row, key, cell)
    assert math.isfinite(report.main.mean) and report.main.n == len(TASK.seeds(True))
    assert report.reference and TASK.reference_source
    for row, numbers in report.reference:
        assert row in bench.ROWS and set(numbers) <= set(keys)
        assert all(math.isfinite(float(v)) for v in numbers.values())
    assert report.figure is not None and len(report.figure["xticklabels"]) == len(bench.ROWS)
    # the card's sampling line is the LLM flags': the note says the executors sample at their own T and seeds
    assert any("applies here to the `fixed` coordinator only" in note for note in report.notes)
    debate = dict(report.rows)["debate"]
    assert debate["tokens_vs_debate"].mean == 1.0  # (itself)
    assert dict(report.rows)["single"]["gain_vs_single"].mean == 0.0


@pytest.mark.slow
def test_the_estimate_is_within_a_factor_of_two_of_what_the_good_model_was_asked(good: Run) -> None:
    seeds = len(TASK.seeds(True))
    estimated = sum(TASK.estimate(c).requests * c.episodes * seeds for c in good.conditions)
    assert 0.5 <= estimated / len(good.requests) <= 2.0, (estimated, len(good.requests))
    # prompt tokens per request: the estimate's rendering against what the records attribute to each row
    for c, records in zip(good.conditions, [good.records[i * seeds : (i + 1) * seeds] for i in range(4)],
                          strict=True):  # fmt: skip
        e = TASK.estimate(c)
        used = [r["llm"][role] for r in records for role in ("executor", "coordinator") if role in r["llm"]]
        calls = sum(u["calls"] for u in used)
        assert calls == e.requests * c.episodes * seeds, c.label("row")
        prompt = sum(u["prompt_tokens"] for u in used) / calls
        completion = sum(u["completion_tokens"] for u in used) / calls
        assert 0.5 <= e.prompt_tokens / prompt <= 2.0, (c.label("row"), e.prompt_tokens, prompt)
        assert 0.5 <= e.completion_tokens / completion <= 2.0, (c.label("row"), e.completion_tokens, completion)


@pytest.mark.slow
def test_the_quick_battery_stays_under_the_request_cap(good: Run, mediocre: Run) -> None:
    assert len(good.requests) <= 400 and len(mediocre.requests) <= 400
    assert all(bench_request(r) for r in good.requests)  # and every one of them is this game's


@pytest.mark.slow
def test_a_replay_from_the_cache_is_identical_and_asks_nothing(good: Run) -> None:
    assert good.replay is not None and good.replay_requests == 0
    assert [_stable(r) for r in good.replay] == [_stable(r) for r in good.records]
    assert _report(Run(good.conditions, good.replay, [])).rows == _report(good).rows


# ---------------------------------------------------------------------------
# Fast: the battery's fixed shape, the router, the scripts
# ---------------------------------------------------------------------------
MODEL = BenchModel("fake", "http://127.0.0.1:9/v1", {"temperature": 0.0, "max_tokens": 256, "seed": 3})


def test_the_battery_is_fixed_and_documented() -> None:
    assert TASK.name == "belief-coordination/answerer" and TASK.env == "belief-coordination"
    assert TASK.seeds(True) == (0, 1, 2) and TASK.seeds(False) == (0, 1, 2, 3, 4)
    for quick, total in ((True, 408), (False, 8500)):  # the request counts the module docstring states
        conds = TASK.conditions(MODEL, quick)
        assert [c.label("row") for c in conds] == list(bench.ROWS)
        assert sum(TASK.estimate(c).requests * c.episodes for c in conds) * len(TASK.seeds(quick)) == total
        assert str(total if total < 1000 else f"{total:,}") in (bench.__doc__ or "")
    # the same inputs give the same conditions (no randomness of their own)
    assert [c.key for c in TASK.conditions(MODEL, True)] == [c.key for c in TASK.conditions(MODEL, True)]
    # the executors carry the model, never the LLM flags' temperature or seed (T is the condition's)
    executor = dict(TASK.conditions(MODEL, True)[2].policies)["executor"]
    assert "model=fake" in executor and "temperature=0.3" in executor and "seed" not in executor


def test_report_refuses_records_that_do_not_match_the_conditions() -> None:
    conds = TASK.conditions(MODEL, True)
    with pytest.raises(ValueError, match="7 records for 4 conditions"):
        TASK.report(conds, [{"seed": 0, "metrics": {}}] * 7)


def test_bench_executor_refuses_a_bad_temperature() -> None:
    with pytest.raises(ValueError, match="temperature must be a number"):
        Condition(bench.BeliefCoordinationConfig(), {"executor": "llm:model=m,temperature=hot",
                                                     "coordinator": "majority"}, 1)  # fmt: skip


def _question() -> Any:
    return generated_question(0, 0)


def test_bench_request_claims_this_game_and_not_the_others() -> None:
    from eq_env import exchange_audit_v0
    from eq_env.agents.einstein_puzzle.prompt import render_messages
    from eq_env.agents.exchange_audit.policies import prompt_variants, render_proposer_prompt
    from eq_env.exchange_audit.config import ExchangeAuditConfig
    from eq_env.exchange_audit.spaces import decode_proposer_observation

    q = _question()
    ours = [
        executor_messages(AnswerRequest(q, 0.7, 1.1, 0)),
        executor_messages(AnswerRequest(q, 0.7, 1.1, 0, 1, ("#### 5", "#### 6"))),
        coordinator_messages(q.text, "", 3, "v1", ["#### 5"] * 3, [5.0] * 3),
    ]
    assert all(bench_request({"model": "m", "messages": m}) for m in ours)
    env = exchange_audit_v0.env(config=ExchangeAuditConfig.from_preset("paper_scripted"))
    env.reset(seed=0)
    view = decode_proposer_observation(env.observe("proposer_0"))
    theirs = [render_proposer_prompt(view, v) for v in prompt_variants()]
    theirs.append(render_messages("You solve math word problems. Bin 3 holds the red block."))
    theirs.append([{"role": "user", "content": ours[0][0]["content"]}])  # our words, but not as a system message
    assert not any(bench_request({"model": "m", "messages": m}) for m in theirs)


def test_bench_scripts_answer_by_content_not_arrival_order() -> None:
    q = _question()
    request = {"model": "m", "temperature": 0.7, "seed": 11,
               "messages": executor_messages(AnswerRequest(q, 0.7, 1.1, 0))}  # fmt: skip
    for quality in ("good", "mediocre"):
        script = bench_script(quality)
        assert script(request, 0) == script(request, 57)
    with pytest.raises(ValueError, match="quality must be one of good, mediocre, hostile"):
        bench_script("excellent")
