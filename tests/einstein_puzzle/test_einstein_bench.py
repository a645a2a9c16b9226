"""The Einstein puzzle's ``eq-env bench`` tasks (:mod:`eq_env.studies.einstein_puzzle.bench`) against the local test
server scripted as a good, a mediocre and a hostile model (:func:`eq_env.agents.einstein_puzzle.scripts.bench_script`).

One quick battery per quality is played once for the module (each task with its own answer cache, so the
requests a task made are counted on the server), and the good and mediocre ones replayed from their caches.
Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eq_env import einstein_puzzle_v0
from eq_env.agents.client import LLMClient, configure, settings
from eq_env.agents.einstein_puzzle.prompt import render_messages
from eq_env.agents.einstein_puzzle.scripts import (
    HostileScript,
    bench_request,
    bench_script,
    good_action,
    mediocre_action,
    mediocre_script,
)
from eq_env.agents.fake_server import ScriptedLLMServer
from eq_env.core.bench import BenchModel, Cell, TaskReport
from eq_env.core.experiments import Condition, ResultsStore, run_all
from eq_env.studies.einstein_puzzle.bench import SEEDS, TASKS, battery_requests, estimate, gain_label, row_label

QUICK_CAP = 400  # requests of the quick battery for this game, with a good model


def _settings(cache_dir: Path, cache: str = "readwrite") -> None:
    configure(cache=cache, cache_dir=cache_dir, backoff=0.01, max_backoff=0.05, timeout=2.0, max_retries=2,
              check_endpoint=False)  # fmt: skip
    LLMClient.forget()  # no answer kept in memory: a replay reads the disk


def _strip(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what varies from run to run by design (the transport: requests, latency, bill)."""
    out = dict(record)
    if "llm" in out:
        out["llm"] = {role: ({k: v for k, v in s.items() if k != "transport"} if isinstance(s, dict) else s)
                      for role, s in out["llm"].items()}  # fmt: skip
    return out


def _play(quality: str, root: Path) -> dict[str, Any]:
    before = settings()
    out: dict[str, Any] = {"tasks": {}}
    try:
        with ScriptedLLMServer(bench_script(quality)) as server:
            model = BenchModel("fake", server.url)
            for task in TASKS:
                cache = root / task.name.replace("/", "_") / "cache"
                _settings(cache)
                conditions = task.conditions(model, True)
                asked = len(server.requests)
                records = run_all(conditions, task.seeds(True), ResultsStore(cache.parent / "results.jsonl"))
                run = {"conditions": conditions, "records": records, "requests": len(server.requests) - asked,
                       "report": task.report(conditions, records)}  # fmt: skip
                if quality != "hostile":  # replay from the cache alone
                    _settings(cache, "read")
                    asked = len(server.requests)
                    run["replay"] = run_all(conditions, task.seeds(True), ResultsStore(cache.parent / "replay.jsonl"))
                    run["replay_requests"] = len(server.requests) - asked
                out["tasks"][task.name] = run
            out["requests"] = [r for r in server.requests]
    finally:
        configure(**{k: getattr(before, k) for k in before.__dataclass_fields__})
        LLMClient.forget()
    return out


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield _play("good", tmp_path_factory.mktemp("good"))


@pytest.fixture(scope="module")
def mediocre(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield _play("mediocre", tmp_path_factory.mktemp("mediocre"))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield _play("hostile", tmp_path_factory.mktemp("hostile"))


# ---------------------------------------------------------------------------
# Against the test server (one module-scoped run per quality)
# ---------------------------------------------------------------------------
@pytest.mark.slow
def test_good_beats_mediocre_on_every_main_metric(good: dict[str, Any], mediocre: dict[str, Any]) -> None:
    for task in TASKS:
        g: TaskReport = good["tasks"][task.name]["report"]
        m: TaskReport = mediocre["tasks"][task.name]["report"]
        assert task.main.higher_is_better is True
        assert g.main.mean >= m.main.mean + 0.2, (task.name, g.main, m.main)
        # and without the verifier, on every row: the mediocre model wastes most of its turns
        rows_g, rows_m = dict(g.rows), dict(m.rows)
        for label, cells in rows_g.items():
            if label.endswith("no verifier"):
                assert cells["success_rate"].mean > rows_m[label]["success_rate"].mean, (task.name, label)


@pytest.mark.slow
def test_the_reasoning_verifier_helps_the_mediocre_model(mediocre: dict[str, Any]) -> None:
    for task in TASKS:
        rows = dict(mediocre["tasks"][task.name]["report"].rows)
        gains = [cells["success_rate"].mean for label, cells in rows.items() if label.endswith("gain")]
        assert gains and all(g > 0 for g in gains), (task.name, gains)


@pytest.mark.slow
def test_hostile_failures_are_recorded(hostile: dict[str, Any]) -> None:
    failed = 0
    for task in TASKS:
        run = hostile["tasks"][task.name]
        assert len(run["records"]) == len(run["conditions"]) * len(SEEDS)  # every run finished, and is recorded
        failed += sum(len(r.get("failed") or []) for r in run["records"])
        for r in run["records"]:
            for f in r.get("failed") or []:
                assert "500" in str(f) or "outage" in str(f), f
    assert failed > 0
    report = hostile["tasks"][TASKS[0].name]["report"]
    assert any("failed" in n for n in report.notes)
    # the other fates were served too, and the runs went on through them
    fates = {HostileScript.fate(r) for r in hostile["requests"]}
    assert {"malformed_once", "schema", "injection", "rate_limited_once", "error_once", "good"} <= fates


@pytest.mark.slow
def test_report_has_rows_main_and_reference_of_the_right_shape(good: dict[str, Any]) -> None:
    for task in TASKS:
        run = good["tasks"][task.name]
        report: TaskReport = run["report"]
        modes = list(dict.fromkeys(c.label("comm_mode") for c in run["conditions"]))
        expected = [row_label(m, v) for m in modes for v in ("none", "reasoning")] + [gain_label(m) for m in modes]
        assert [label for label, _ in report.rows] == expected
        assert {c.label("row") for c in run["conditions"]} == {row_label(m, v) for m in modes
                                                              for v in ("none", "reasoning")}  # fmt: skip
        keys = [m.key for m in report.metrics]
        assert report.metrics[0] == task.main and task.main.key == "success_rate"
        for label, cells in report.rows:
            wanted = ["success_rate"] if label.endswith("gain") else keys
            assert list(cells) == wanted, label
            for cell in cells.values():
                assert isinstance(cell, Cell) and cell.n == len(SEEDS)
                assert all(math.isfinite(x) for x in (cell.mean, cell.low, cell.high)), (label, cell)
        assert math.isfinite(report.main.mean) and report.main.n == len(SEEDS) and report.main.mean > 0.9
        labels = [label for label, _ in report.rows]
        assert all(label in labels for label, _ in report.reference)
        if task.name.endswith("both-seats"):
            assert dict(report.reference)[row_label("provide_and_seek", "none")]["success_rate"].startswith("0.922")
            assert task.reference_source.startswith("Peng et al.")
        else:
            assert report.reference == ()
        assert report.figure is None  # one n in the quick battery: the table says it all
        assert report.notes


@pytest.mark.slow
def test_estimate_is_within_a_factor_of_two_of_the_requests_made(good: dict[str, Any]) -> None:
    for task in TASKS:
        run = good["tasks"][task.name]
        expected = sum(estimate(c).requests * c.episodes * len(SEEDS) for c in run["conditions"])
        assert run["requests"] > 0
        assert 0.5 <= expected / run["requests"] <= 2.0, (task.name, expected, run["requests"])


@pytest.mark.slow
def test_quick_battery_stays_under_the_request_cap(good: dict[str, Any]) -> None:
    made = sum(run["requests"] for run in good["tasks"].values())
    assert 0 < made <= QUICK_CAP
    assert sum(battery_requests(t, True) for t in TASKS) <= QUICK_CAP


@pytest.mark.slow
def test_bench_request_claims_every_request_of_the_runs(good: dict[str, Any], hostile: dict[str, Any]) -> None:
    requests = good["requests"] + hostile["requests"]
    assert requests and all(bench_request(r) for r in requests)


@pytest.mark.slow
@pytest.mark.parametrize("quality", ["good", "mediocre"])
def test_replay_from_the_cache_is_identical_with_zero_requests(quality: str, good: dict[str, Any],
                                                              mediocre: dict[str, Any]) -> None:  # fmt: skip
    played = {"good": good, "mediocre": mediocre}[quality]
    for task in TASKS:
        run = played["tasks"][task.name]
        assert run["replay_requests"] == 0
        assert [_strip(r) for r in run["replay"]] == [_strip(r) for r in run["records"]]
        replayed = task.report(run["conditions"], run["replay"])
        assert replayed == run["report"]


# ---------------------------------------------------------------------------
# Without the server
# ---------------------------------------------------------------------------
def _observation(n: int = 4, mode: str = "provide_and_seek", seed: int = 0) -> str:
    env = einstein_puzzle_v0.env(n=n, comm_mode=mode)
    env.reset(seed=seed)
    return str(env.observe("player_0")["text"])


def test_bench_request_claims_ours_and_not_the_other_games() -> None:
    from eq_env import exchange_audit_v0
    from eq_env.agents.belief_coordination.answerer import executor_messages
    from eq_env.agents.belief_coordination.coordinator import coordinator_messages
    from eq_env.agents.exchange_audit.policies import render_proposer_prompt
    from eq_env.belief_coordination.answerers import AnswerRequest
    from eq_env.belief_coordination.questions import generated_question
    from eq_env.exchange_audit.config import ExchangeAuditConfig
    from eq_env.exchange_audit.spaces import decode_proposer_observation

    ours = {"model": "m", "messages": render_messages(_observation())}
    assert bench_request(ours)
    assert bench_request({"model": "m", "messages": render_messages(_observation(), reasoning=True)})
    reasked = [*ours["messages"], {"role": "assistant", "content": "x"}, {"role": "user", "content": "again"}]
    assert bench_request({"messages": reasked, "n": 4})

    env = exchange_audit_v0.env(config=ExchangeAuditConfig.from_preset("paper_scripted"))
    env.reset(seed=0)
    proposer = render_proposer_prompt(decode_proposer_observation(env.observe("proposer_0")))
    question = generated_question(0, 0)
    executor = executor_messages(AnswerRequest(question=question, temperature=0.7, penalty=0.0, executor=0))
    coordinator = coordinator_messages(question.text, "", 3)
    for theirs in (proposer, executor, coordinator):
        assert not bench_request({"model": "m", "messages": theirs})
    assert not bench_request({"messages": "not a list"}) and not bench_request({})


def test_bench_script_qualities() -> None:
    assert callable(bench_script("good")) and callable(bench_script("mediocre"))
    assert isinstance(bench_script("hostile"), HostileScript)
    with pytest.raises(ValueError, match="quality must be one of good, mediocre, hostile"):
        bench_script("excellent")


def test_mediocre_is_decided_by_the_content_and_wastes_turns() -> None:
    texts = [_observation(n, mode, seed) for n in (4, 6) for mode in ("provide_and_seek", "none") for seed in range(8)]
    request = {"messages": render_messages(texts[0]), "n": 4}
    first = mediocre_script(request, 0)
    assert mediocre_script(request, 99) == first  # never by arrival order
    assert first.choices is not None and len(first.choices) == 4
    wasted = [mediocre_action(t) != good_action(t) for t in texts]
    assert 0.3 < float(np.mean(wasted)) < 0.95  # mostly confused, not always


def test_hostile_fates_are_fixed_by_the_prompt() -> None:
    requests = [{"messages": render_messages(_observation(4, "provide_and_seek", s))} for s in range(200)]
    fates = [HostileScript.fate(r) for r in requests]
    assert fates == [HostileScript.fate(r) for r in requests]
    assert 0 < fates.count("down") < 30 and fates.count("good") > 100
    script = HostileScript()
    down = requests[fates.index("down")]
    assert all(script(down, i).status == 500 for i in range(3))  # persistent: the episode fails
    once = requests[fates.index("error_once")]
    assert script(once, 0).status == 502 and script(once, 1).status == 200


def test_conditions_are_the_documented_battery() -> None:
    model = BenchModel("m", "http://127.0.0.1:9/v1", {"temperature": 0.0})
    both, planner = TASKS
    assert [t.name for t in TASKS] == ["einstein-puzzle/both-seats", "einstein-puzzle/with-planner"]
    quick = both.conditions(model, True)
    assert len(quick) == 4 and {c.config.n for c in quick} == {4} and all(c.episodes == 2 for c in quick)
    assert all(c.policy("player_0") == c.policy("player_1") for c in quick)
    assert {c.policy("player_0") for c in quick} == {model.spec("llm"), model.spec("llm", verifier="reasoning", k=4)}
    quick_p = planner.conditions(model, True)
    assert len(quick_p) == 2 and all(c.policy("player_1") == "planner" for c in quick_p)
    assert all(c.config.puzzles == "suite" and c.config.suite_stride == c.episodes for c in quick + quick_p)
    assert list(both.seeds(True)) == list(both.seeds(False)) == list(SEEDS) and len(SEEDS) >= 2
    # the same inputs, the same battery (keys and all)
    assert [c.key for c in both.conditions(model, True)] == [c.key for c in quick]
    for c in quick + quick_p:
        assert {"task", "row", "comm_mode", "verifier", "n"} <= set(dict(c.labels))


def test_report_refuses_records_that_do_not_match() -> None:
    model = BenchModel("m", "http://127.0.0.1:9/v1")
    conditions: list[Condition] = list(TASKS[0].conditions(model, True))
    with pytest.raises(ValueError, match="expected a multiple"):
        TASKS[0].report(conditions, [{"seed": 0, "metrics": {}}])


def test_estimate_renders_the_real_prompt() -> None:
    model = BenchModel("m", "http://127.0.0.1:9/v1")
    plain, verified = TASKS[0].conditions(model, True)[:2]
    e, v = estimate(plain), estimate(verified)
    prompt = sum(len(m["content"]) for m in render_messages(_observation())) / 4
    assert e.requests > 4 and e.prompt_tokens >= prompt * 0.8 and 2 <= e.completion_tokens <= 20
    assert v.requests == e.requests and v.completion_tokens == pytest.approx(4 * e.completion_tokens)
    with_planner = estimate(TASKS[1].conditions(model, True)[0])
    assert with_planner.requests < e.requests  # one seat of two
    thinking = estimate(TASKS[0].conditions(BenchModel("m", None, {"reasoning": True}), True)[0])
    assert thinking.completion_tokens > 100 and thinking.prompt_tokens > e.prompt_tokens


@pytest.mark.slow
def test_full_battery_is_far_larger_than_the_quick_one() -> None:
    model = BenchModel("m", "http://127.0.0.1:9/v1")
    for task in TASKS:
        full = task.conditions(model, False)
        assert len(full) == 40 and {c.config.n for c in full} == {4, 5, 6, 7, 8}
        assert {c.config.comm_mode for c in full} == {"provide_and_seek", "provide_only", "seek_only", "none"}
    total = sum(battery_requests(t, False) for t in TASKS)
    assert 20_000 < total < 30_000  # the docstring's count


@pytest.mark.slow
def test_full_report_pools_over_n_and_draws_its_figure(tmp_path: Path) -> None:
    from eq_env.core.report import plot_lines

    task = TASKS[0]
    conditions = task.conditions(BenchModel("m", "http://127.0.0.1:9/v1"), False)
    rng = np.random.default_rng(0)
    records = [{"seed": s, "labels": dict(c.labels),
                "metrics": {"success_rate": float(rng.uniform()), "steps": 10.0, "rejected_placements": 1.0,
                            "rule_inconsistent": 0.5, "partial_success": 0.9}}
               for c in conditions for s in SEEDS]  # fmt: skip
    report = task.report(conditions, records)
    assert len(report.rows) == 4 * 2 + 4  # a row per comm mode and verifier, and a gain row per comm mode
    first = dict(report.rows)[row_label("provide_and_seek", "none")]["success_rate"]
    pooled = [np.mean([r["metrics"]["success_rate"] for r in records if r["seed"] == s
                       and r["labels"]["row"] == row_label("provide_and_seek", "none")]) for s in SEEDS]  # fmt: skip
    assert first.mean == pytest.approx(float(np.mean(pooled)))
    assert report.main.mean == pytest.approx(float(np.mean([r["metrics"]["success_rate"] for r in records])))
    assert report.figure is not None and len(report.figure["panels"]) == 2
    assert all(s["x"] == [4, 5, 6, 7, 8] for p in report.figure["panels"] for s in p["series"])
    plot_lines(tmp_path / "figure.png", **report.figure)
    assert (tmp_path / "figure.png").stat().st_size > 1000


def test_suite_stride_gives_each_seed_its_own_slice_of_the_suite():
    from eq_env.einstein_puzzle import suite
    from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
    from eq_env.einstein_puzzle.env import episode_puzzle

    puzzles = suite.load_suite(5)
    plain = EinsteinPuzzleConfig(n=5, puzzles="suite")
    strided = plain.replace(suite_stride=10)
    assert episode_puzzle(plain, 3, 1) == episode_puzzle(plain, 0, 1) == puzzles[1]  # no stride: the seed is ignored
    assert episode_puzzle(strided, 3, 1) == puzzles[31] and episode_puzzle(strided, 29, 12) == puzzles[(290 + 12) % 300]
    assert "suite_stride" not in plain.to_dict() and strided.to_dict()["suite_stride"] == 10  # keys as before at 0
    with pytest.raises(ValueError, match="suite_stride=2 applies to puzzles='suite' only"):
        EinsteinPuzzleConfig(n=5, suite_stride=2)
