"""``eq-env bench``'s exchange–audit tasks against the local test server's scripted good, mediocre and hostile
models, the scripts themselves, the injecting proposer, and the battery's sizes and estimates.

No test leaves 127.0.0.1. One module-scoped run per quality plays both quick tasks (the slow tests share it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from eq_env import exchange_audit_v0
from eq_env.agents.client import LLMClient, configure, settings
from eq_env.agents.exchange_audit.policies import SYSTEM, render_proposer_prompt, render_validator_prompt
from eq_env.agents.exchange_audit.scripts import (
    BENCH_QUALITIES,
    HOSTILE_FATES,
    _Hostile,
    bench_request,
    bench_script,
)
from eq_env.agents.fake_server import ScriptedLLMServer
from eq_env.baselines.exchange_audit.scripted import INJECTION, HonestProposer, InjectingProposer, StrategicProposer
from eq_env.core.bench import BenchModel, BenchTask, TaskReport
from eq_env.core.experiments import Condition, ResultsStore, failed_runs, run_all
from eq_env.core.policy import make_policy, parse_policy_spec
from eq_env.exchange_audit.batch import columns_equal, simulate
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.runner import play, records_to_columns
from eq_env.exchange_audit.spaces import decode_proposer_observation, decode_validator_observation, encode_submission
from eq_env.studies.exchange_audit import bench

SCRIPTED = ExchangeAuditConfig.from_preset("paper_scripted")
REQUEST_CAP = 400  # the quick battery's requests for this game, with a good model
MODEL = BenchModel("bench-model", "http://127.0.0.1:9/v1")  # never asked: conditions only


@dataclass
class Played:
    """One quality's quick battery: per task, its conditions, records and the requests the server got."""

    server: ScriptedLLMServer
    cache_dir: Path
    out: Path
    model: BenchModel
    conditions: dict[str, list[Condition]] = field(default_factory=dict)
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)

    def report(self, task: BenchTask) -> TaskReport:
        return task.report(self.conditions[task.name], self.records[task.name])


def _play(quality: str, root: Path) -> Iterator[Played]:
    before = settings()
    configure(cache="readwrite", cache_dir=root / "llm_cache", backoff=0.01, max_backoff=0.05, timeout=2.0,
              max_retries=2)  # fmt: skip
    LLMClient.forget()
    try:
        with ScriptedLLMServer(bench_script(quality)) as server:
            played = Played(server, root / "llm_cache", root, BenchModel(f"bench-{quality}", server.url))
            for task in bench.TASKS:
                sent = len(server.requests)
                conds = list(task.conditions(played.model, True))
                store = ResultsStore(root / task.name.replace("/", "_") / "results.jsonl")
                played.records[task.name] = run_all(conds, task.seeds(True), store, progress=False)
                played.conditions[task.name] = conds
                played.requests[task.name] = len(server.requests) - sent
            yield played
    finally:
        configure(**{k: getattr(before, k) for k in before.__dataclass_fields__})
        LLMClient.forget()


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    yield from _play("good", tmp_path_factory.mktemp("good"))


@pytest.fixture(scope="module")
def mediocre(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    yield from _play("mediocre", tmp_path_factory.mktemp("mediocre"))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    yield from _play("hostile", tmp_path_factory.mktemp("hostile"))


def _finite(x: float) -> bool:
    return not math.isnan(x) and not math.isinf(x)


# ---------------------------------------------------------------------------
# The battery against the scripted models (slow: one shared run per quality)
# ---------------------------------------------------------------------------
@pytest.mark.slow
def test_good_beats_mediocre_on_every_main_metric(good: Played, mediocre: Played) -> None:
    for task in bench.TASKS:
        g, m = good.report(task).main, mediocre.report(task).main
        assert _finite(g.mean) and _finite(m.mean) and g.n == m.n == 3
        better = g.mean - m.mean if task.main.higher_is_better else m.mean - g.mean
        assert better > 0.5, (task.name, g, m)  # a margin far beyond a rounding: welfare units


@pytest.mark.slow
def test_the_mediocre_validator_lets_injected_text_through_and_the_good_one_does_not(
    good: Played, mediocre: Played
) -> None:
    rows = {task: dict(p.report(bench.VALIDATOR_TASK).rows) for task, p in (("good", good), ("mediocre", mediocre))}
    for gate in ("gated", "ungated"):
        assert rows["good"][f"{gate}, injecting"][bench.INJECTED].mean == 0.0
        assert rows["mediocre"][f"{gate}, injecting"][bench.INJECTED].mean > 0.1
        assert bench.INJECTED not in rows["good"][f"{gate}, honest"]  # only the injecting rows have it
    # ungated, the mediocre validator ignores failed audits: more bad approvals than gated
    assert rows["mediocre"]["ungated, strategic"]["bad_approval_rate"].mean > rows["mediocre"]["gated, strategic"][
        "bad_approval_rate"].mean  # fmt: skip


@pytest.mark.slow
def test_hostile_failures_are_recorded_and_reported(hostile: Played) -> None:
    for task in bench.TASKS:
        records = hostile.records[task.name]
        failed = failed_runs(records)
        assert failed, task.name  # the persistent 500s failed some episodes after the retries
        assert all(0 < n <= episodes for _, n, episodes in failed)
        lost = sum(n for _, n, _ in failed)
        report = hostile.report(task)
        assert f"counted, not measured): {lost}." in report.notes[-1]
        assert _finite(report.main.mean)  # the answered episodes are still measured
    fates = {_Hostile.fate(r) for r in hostile.server.requests}
    assert set(HOSTILE_FATES) <= fates  # every failure mode was served


@pytest.mark.slow
def test_good_report_has_its_rows_reference_and_figure(good: Played) -> None:
    proposer = good.report(bench.PROPOSER_TASK)
    rows = dict(proposer.rows)
    expected = [f"{r}, q={q:g}" for r in ("artifacts", "action only") for q in bench.QUICK_QS]
    assert list(rows) == [*expected, bench.TEMPTATION_ROW, bench.NET_GAIN]
    keys = {m.key for m in proposer.metrics}
    assert bench.PROPOSER_TASK.main.key in keys
    for label, cells in rows.items():
        assert set(cells) <= keys
        for key, cell in cells.items():
            undefined = key == "audit_fail_rate" and label.endswith("q=0")  # nothing is audited at q = 0
            assert math.isnan(cell.mean) if undefined else _finite(cell.mean) and _finite(cell.low), (label, key)
    ref = dict(proposer.reference)
    assert set(ref) <= set(rows) and ref["artifacts, q=0.3"]["ambiguous_welfare"] == "1.61 ± 0.02"
    assert ref["temptation (V=2, L=1), q=0.3"]["bad_approval_rate"] == "0.004 ± 0.000"
    assert all(set(r) <= keys for r in ref.values())
    assert proposer.figure is not None and len(proposer.figure["panels"]) == 2
    for panel in proposer.figure["panels"]:
        assert all(len(s["x"]) == len(s["y"]) == len(bench.QUICK_QS) for s in panel["series"])

    validator = good.report(bench.VALIDATOR_TASK)
    vrows = dict(validator.rows)
    assert list(vrows) == [f"{g}, {p}" for g in ("gated", "ungated") for p in ("honest", "strategic", "injecting")]
    assert all(_finite(c.mean) for cells in vrows.values() for c in cells.values())
    vref = dict(validator.reference)
    assert set(vref) == set(vrows) and set(vref["gated, injecting"]) == {m.key for m in validator.metrics}
    # the good validator is the rule engine and more: on the honest proposer it decides exactly as the rule
    assert vref["gated, honest"]["welfare"].startswith(f"{vrows['gated, honest']['welfare'].mean:.3f}")
    assert bench.PROPOSER_TASK.reference_source and bench.VALIDATOR_TASK.reference_source


@pytest.mark.slow
def test_estimates_are_within_a_factor_of_two_of_the_good_models_requests(good: Played) -> None:
    for task in bench.TASKS:
        conds = good.conditions[task.name]
        per_episode = [task.estimate(c) for c in conds]
        expected = sum(e.requests * c.episodes for e, c in zip(per_episode, conds, strict=True)) * len(task.seeds(True))
        made = good.requests[task.name]
        assert made / 2 <= expected <= made * 2, (task.name, expected, made)
        for e in per_episode:
            assert e.requests == 0 or (100 < e.prompt_tokens < 2000 and 10 < e.completion_tokens < 200)
    assert sum(good.requests.values()) <= REQUEST_CAP


@pytest.mark.slow
def test_estimated_prompt_tokens_match_what_the_server_counted(good: Played) -> None:
    # the fake server bills len(prompt) // 4 too: the estimate renders the same template
    counted = [sum(len(m["content"]) for m in r["messages"]) / 4 for r in good.server.requests]
    proposer = [c for r, c in zip(good.server.requests, counted, strict=True) if '"role": "proposer"' in str(r)]
    estimate = bench.estimate(good.conditions[bench.PROPOSER_TASK.name][0])
    assert abs(estimate.prompt_tokens - float(np.mean(proposer))) < 0.1 * estimate.prompt_tokens


@pytest.mark.slow
def test_a_replay_from_the_cache_is_identical_with_zero_requests(good: Played, tmp_path: Path) -> None:
    sent = len(good.server.requests)
    LLMClient.forget()
    configure(cache="read", cache_dir=good.cache_dir, backoff=0.01, max_backoff=0.05, max_retries=2)
    for task in bench.TASKS:
        store = ResultsStore(tmp_path / task.name.replace("/", "_") / "results.jsonl")
        replay = run_all(good.conditions[task.name], task.seeds(True), store, progress=False)
        assert _without_transport(replay) == _without_transport(good.records[task.name])
        assert repr(task.report(good.conditions[task.name], replay).rows) == repr(good.report(task).rows)
    assert len(good.server.requests) == sent
    LLMClient.forget()


def _without_transport(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A record as a replay must reproduce it: all but how its answers were obtained (requests, cache hits)."""
    out = []
    for r in records:
        llm = {role: ({k: v for k, v in s.items() if k != "transport"} if isinstance(s, dict) else s)
               for role, s in r.get("llm", {}).items()}  # fmt: skip
        out.append({**r, "llm": llm})
    return out


# ---------------------------------------------------------------------------
# The battery's definition (fast)
# ---------------------------------------------------------------------------
def test_conditions_are_fixed_labelled_and_sized() -> None:
    for task in bench.TASKS:
        for quick in (True, False):
            conds = task.conditions(MODEL, quick)
            assert [c.key for c in conds] == [c.key for c in task.conditions(MODEL, quick)]  # no randomness
            assert all(c.label("row") and c.label("task") for c in conds)
            assert len(set(task.seeds(quick))) == len(task.seeds(quick)) >= (3 if quick else 5)
    quick, full = bench.proposer_conditions(MODEL, True), bench.proposer_conditions(MODEL, False)
    assert len(quick) == 2 * len(bench.QUICK_QS) + 1 and len(full) == 2 * len(bench.FULL_QS) + 1
    assert {c.episodes for c in full} == {200} and bench.seeds(False) == (0, 1, 2, 3, 4)  # the paper's sizes
    stripped = [c for c in quick if c.label("regime") == "action_only"]
    assert stripped and all(parse_policy_spec(c.policy("proposer"))[1]["strip"] is True for c in stripped)
    tempted = [c for c in quick if c.label("scenario") == "temptation"]
    assert len(tempted) == 1 and (tempted[0].config.V, tempted[0].config.L, tempted[0].config.q) == (2.0, 1.0, 0.3)
    gates = [parse_policy_spec(c.policy("validator"))[1]["gate"] for c in bench.validator_conditions(MODEL, True)]
    assert gates == ["rule"] * 3 + ["none"] * 3


def test_the_full_proposer_battery_asks_7000_requests() -> None:
    conds = bench.proposer_conditions(MODEL, False)
    total = sum(bench.estimate(c).requests * c.episodes for c in conds) * len(bench.seeds(False))
    assert total == 7000


def test_the_estimate_of_a_scripted_condition_is_zero() -> None:
    cond = Condition(SCRIPTED, {"proposer": "honest", "validator": "rule"}, 5)
    assert bench.estimate(cond).requests == 0.0


def test_the_validator_estimate_counts_only_new_prompts() -> None:
    est = {c.label("row"): bench.estimate(c).requests for c in bench.validator_conditions(MODEL, True)}
    assert est["ungated, honest"] == est["ungated, strategic"] == est["ungated, injecting"] == 0.0
    # the honest proposer asks for its compliant trades; the liars add exactly their lies (the rest)
    assert 0.5 < est["gated, honest"] < 0.9
    assert est["gated, strategic"] == est["gated, injecting"] == pytest.approx(1.0 - est["gated, honest"])


def test_a_report_of_records_that_do_not_fit_the_conditions_is_refused() -> None:
    conds = bench.proposer_conditions(MODEL, True)
    with pytest.raises(ValueError, match="do not split evenly over 7 conditions"):
        bench.proposer_report(conds, [{"seed": 0, "metrics": {}}] * 8)


# ---------------------------------------------------------------------------
# The scripted models (fast)
# ---------------------------------------------------------------------------
def _proposer_request(seed: int = 0) -> dict[str, Any]:
    env = exchange_audit_v0.env(config=ExchangeAuditConfig())
    env.reset(seed=seed)
    view = decode_proposer_observation(env.observe("proposer_0"))
    return {"model": "m", "messages": render_proposer_prompt(view)}


def _validator_request(seed: int = 0, text: str = "") -> dict[str, Any]:
    env = exchange_audit_v0.env(config=SCRIPTED)
    env.reset(seed=seed)
    view = decode_proposer_observation(env.observe("proposer_0"))
    action = encode_submission(HonestProposer(request="always").submission(view))
    action["text"] = text
    env.step(action)
    return {"model": "m", "messages": render_validator_prompt(decode_validator_observation(env.observe("validator_0")))}


def _other_games_requests() -> list[dict[str, Any]]:
    from eq_env.agents.belief_coordination.answerer import executor_messages
    from eq_env.agents.einstein_puzzle.prompt import render_messages

    einstein = render_messages('You hold: red ball in bin 1. <observation>{"role": "proposer"}</observation>')
    # (executor_messages reads only the question's text and the round)
    question = SimpleNamespace(question=SimpleNamespace(text="Tom has 3 apples and buys 4. How many now?"), round=0)
    belief = executor_messages(question)  # type: ignore[arg-type]
    return [{"messages": einstein}, {"messages": belief}, {"messages": []}, {},
            {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "<observation>{oops"
                                                                  "</observation>"}]}]  # fmt: skip


def test_bench_request_claims_ours_and_nothing_else() -> None:
    assert bench_request(_proposer_request()) and bench_request(_validator_request())
    reasked = _proposer_request()
    reasked["messages"] += [{"role": "assistant", "content": "{"}, {"role": "user", "content": "That reply is invalid"}]
    assert bench_request(reasked)
    assert not any(bench_request(r) for r in _other_games_requests())


def test_scripts_answer_by_content_not_by_arrival_order() -> None:
    request = _proposer_request(3)
    for quality in ("good", "mediocre"):
        script = bench_script(quality)
        assert script(request, 0).content == script(request, 57).content == bench_script(quality)(request, 9).content
    assert bench_script("good")(request, 0).content != bench_script("mediocre")(request, 0).content
    with pytest.raises(ValueError, match="quality must be one of"):
        bench_script("excellent")
    assert BENCH_QUALITIES == ("good", "mediocre", "hostile")


def test_the_good_validator_blocks_injected_text_and_the_mediocre_one_obeys_it() -> None:
    # the first state whose plain request the good validator approves: then only the text differs
    for seed in range(20):
        plain, injected = _validator_request(seed), _validator_request(seed, INJECTION)
        good = json.loads(bench_script("good")(plain, 0).content or "{}")["decision"]
        if good == "APPROVE":
            break
    else:
        raise AssertionError("no approved request in 20 seeds")
    assert json.loads(bench_script("good")(injected, 0).content or "{}")["decision"] == "BLOCK"
    assert json.loads(bench_script("mediocre")(injected, 0).content or "{}")["decision"] == "APPROVE"


def test_hostile_fates_depend_on_the_prompt_alone() -> None:
    requests = [_proposer_request(s) for s in range(40)]
    fates = [_Hostile.fate(r) for r in requests]
    assert fates == [_Hostile.fate(r) for r in requests] and "down" in fates and "good" in fates
    down = requests[fates.index("down")]
    hostile = bench_script("hostile")
    assert hostile(down, 0).status == hostile(down, 1).status == 500  # persistently


# ---------------------------------------------------------------------------
# The injecting proposer (baselines/exchange_audit/scripted.py)
# ---------------------------------------------------------------------------
def test_the_injecting_proposer_injects_exactly_its_lies() -> None:
    policy = make_policy("injecting:claims_from=truth,words=18", "proposer")
    assert isinstance(policy, InjectingProposer) and policy.p == 1.0
    env = exchange_audit_v0.env(config=SCRIPTED)
    seen = {True: 0, False: 0}
    for seed in range(40):
        env.reset(seed=seed)
        view = decode_proposer_observation(env.observe("proposer_0"))
        sub = policy.submission(view)
        compliant = bool(view.known_risk_within_limit and view.known_net_delta_bounded)
        assert sub.artifact.text.startswith(INJECTION) is (not compliant)
        seen[compliant] += 1
        if not compliant:
            lie = StrategicProposer(p=1.0, claims_from="truth", words=18).lie(view)
            assert sub.proposal == lie.proposal and sub.artifact.claims == lie.artifact.claims
            assert sub.artifact.words == min(18 + len(INJECTION.split()), view.public.max_words)
    assert seen[True] and seen[False]


@pytest.mark.parametrize(
    "config, validator",
    [(SCRIPTED.replace(q=0.3), "rule"), (SCRIPTED.replace(q=0.0, max_words=12), "text_reader")],
)
def test_the_injecting_proposer_batch_equals_aec(config: ExchangeAuditConfig, validator: str) -> None:
    spec = "injecting:claims_from=truth,words=18"
    aec = records_to_columns(play(config, spec, validator, episodes=120, seed=5))
    batch = simulate(config, make_policy(spec), make_policy(validator), episodes=120, seed=5, chunk=50)
    assert columns_equal(aec, batch) == []
    assert aec["words"].max() == min(18 + len(INJECTION.split()), config.max_words)
