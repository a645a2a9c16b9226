"""The benchmark machinery (eq_env.core.bench, eq_env.core.card) on a small task of its own: an LLM proposer
of the exchange–audit game against the local scripted server — recorded, resumed, replayed with no request,
stopped by a budget, planned, carded and compared. The real battery's tasks are tested in each game's
folder and end to end in tests/test_bench_cli.py."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from eq_env.agents.client import LLMClient, configure
from eq_env.agents.exchange_audit.scripts import honest_script
from eq_env.agents.fake_server import ScriptedLLMServer
from eq_env.core.bench import (
    RATE,
    Battery,
    BenchModel,
    BenchTask,
    Cell,
    Estimate,
    Metric,
    TaskReport,
    metric_cells,
    plan,
    run_battery,
    seed_values,
)
from eq_env.core.card import compare_cards, load_card, render_card_markdown, render_leaderboard, write_card
from eq_env.core.experiments import Condition
from eq_env.exchange_audit.config import ExchangeAuditConfig

pytestmark = pytest.mark.usefixtures("fast_llm")

WELFARE = Metric("welfare", "welfare")
APPROVAL = Metric("approval_rate", "approval")
QS = (0.0, 1.0)


def _conditions(model: BenchModel, quick: bool) -> list[Condition]:
    return [Condition(ExchangeAuditConfig.from_preset("paper").replace(q=q),
                      {"proposer": model.spec("llm"), "validator": "rule"}, 3 if quick else 4, (("q", q),))
            for q in QS]  # fmt: skip


def _report(conditions: Sequence[Condition], records: Sequence[Mapping[str, Any]]) -> TaskReport:
    rows = tuple((f"q={q:g}", metric_cells(records, (WELFARE, APPROVAL), where=lambda r, q=q: r["labels"]["q"] == q))
                 for q in QS)  # fmt: skip
    return TaskReport(
        metrics=(WELFARE, APPROVAL), rows=rows, main=Cell.of(seed_values(records, "welfare")),
        reference=(("q=0", {"welfare": "2.9"}),), notes=("a test task",),
        figure={"panels": [{"ylabel": "welfare", "series": [
            {"label": "model", "x": list(QS), "y": [cells["welfare"].mean for _, cells in rows]}]}], "xlabel": "q"},
    )  # fmt: skip


TASK = BenchTask(
    name="exchange-audit/test-proposer", title="A test task", env="exchange-audit", main=WELFARE,
    prompts=("exchange-audit proposer v1",), conditions=_conditions, seeds=lambda quick: (0, 1),
    report=_report, estimate=lambda c: Estimate(1.0, 400.0, 80.0), reference_source="a made-up table",
)  # fmt: skip
BATTERY = Battery("test-v1", (TASK,), quick=True)


@pytest.fixture
def server():
    with ScriptedLLMServer(honest_script) as s:
        yield s


def _model(server: ScriptedLLMServer, name: str = "m") -> BenchModel:
    return BenchModel(name, server.url, {"temperature": 0.0})


def _files(out: Path) -> dict[str, bytes]:
    return {n: (out / n).read_bytes() for n in ("card.json", "card.md", "card.html")}


@pytest.mark.slow
def test_a_run_is_recorded_carded_and_resumed(server, tmp_path):
    out = tmp_path / "a"
    outcome = run_battery(BATTERY, _model(server), out, progress=False)
    assert outcome.status == "complete" and outcome.runs_played == 4 and outcome.failed == ()
    assert len(server.requests) == 3 * 2 * 2  # 3 episodes x 2 q x 2 seeds, one proposer call each
    write_card(outcome.card, out)
    card = load_card(out)
    (task,) = card["tasks"]
    assert task["name"] == TASK.name and task["seeds"] == [0, 1] and task["runs"] == 4
    assert math.isfinite(task["main"]["cell"]["mean"]) and task["main"]["cell"]["n"] == 2
    assert task["llm"]["calls"] == 12 and task["llm"]["failed_episodes"] == 0 and task["llm"]["prompt_tokens"] > 0
    md = (out / "card.md").read_text()
    assert "## Summary" in md and "exchange-audit/test-proposer" in md and "2.9" in md and "a made-up table" in md
    assert (out / "figures" / "exchange-audit-test-proposer.png").stat().st_size > 1000
    page = (out / "card.html").read_text()
    # self-contained: the figure embedded, nothing fetched (no script, link, external source or import)
    assert page.count('src="data:image/png;base64,') == 1 and page.count("src=") == 1
    assert not any(s in page for s in ("<script", "<link", "href=", "@import", "url("))
    before = _files(out)
    again = run_battery(BATTERY, _model(server), out, progress=False)  # everything recorded: nothing played
    assert again.runs_played == 0 and len(server.requests) == 12
    write_card(again.card, out)
    assert _files(out) == before


@pytest.mark.slow
def test_a_replay_asks_nothing_and_gives_the_same_card(server, tmp_path):
    first = run_battery(BATTERY, _model(server), tmp_path / "a", progress=False)
    write_card(first.card, tmp_path / "a")
    asked = len(server.requests)
    LLMClient.forget()
    configure(cache="read")
    replay = run_battery(BATTERY, _model(server), tmp_path / "b", progress=False)
    write_card(replay.card, tmp_path / "b")
    assert len(server.requests) == asked
    assert _files(tmp_path / "b") == _files(tmp_path / "a")


@pytest.mark.slow
def test_the_budget_stops_before_a_chunk_and_a_rerun_goes_on(server, tmp_path):
    prices = (10.0, 30.0)  # the task's estimate of a chunk: 2 conditions x 3 episodes x (400 x 10 + 80 x 30) / 1e6
    whole = run_battery(BATTERY, _model(server), tmp_path / "whole", prices=prices, progress=False)
    write_card(whole.card, tmp_path / "whole")
    out = tmp_path / "cut"
    LLMClient.forget()
    configure(cache_dir=tmp_path / "cut_cache")  # (its own answers: the bill must be real)
    stopped = run_battery(BATTERY, _model(server), out, prices=prices, max_usd=0.12, progress=False)
    assert stopped.status == "budget" and stopped.card is None
    assert stopped.runs_played == 2 and stopped.runs_left == 2
    # the real prompts are longer than the task's 400 tokens: the first chunk cost more than its $0.0384, and the
    # second chunk's estimate is scaled by that bill — unscaled, 0.0384 more would have fitted into $0.12
    assert 0.0384 < stopped.spent_usd and stopped.spent_usd + 0.0384 <= 0.12
    assert stopped.next_usd == pytest.approx(stopped.spent_usd, rel=0.05)
    assert plan(BATTERY, _model(server), out, prices).total("runs_left") == 2
    done = run_battery(BATTERY, _model(server), out, prices=prices, progress=False)
    assert done.status == "complete" and done.runs_played == 2
    write_card(done.card, out)
    assert _files(out) == _files(tmp_path / "whole")


def test_the_plan_counts_what_is_left_and_its_price(server, tmp_path):
    p = plan(BATTERY, _model(server), tmp_path / "none", (2.0, 8.0))
    (row,) = p.rows
    assert row["runs_left"] == row["runs"] == 4 and row["episodes_left"] == 12
    assert row["requests"] == 12 and row["prompt_tokens"] == 12 * 400 and row["completion_tokens"] == 12 * 80
    assert row["usd"] == pytest.approx((12 * 400 * 2 + 12 * 80 * 8) / 1e6)
    assert server.requests == [] and not (tmp_path / "none").exists()  # nothing called, nothing written


@pytest.mark.slow
def test_the_leaderboard_puts_cards_side_by_side(server, tmp_path):
    for name in ("m1", "m2"):
        outcome = run_battery(BATTERY, _model(server, name), tmp_path / name, progress=False)
        write_card(outcome.card, tmp_path / name)
    cards = [load_card(tmp_path / n) for n in ("m1", "m2")]
    wrote = render_leaderboard(cards, ["m1", "m2"], tmp_path / "board")
    assert wrote == ["leaderboard.md", "leaderboard.html", "leaderboard.png"]
    md = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "| m1 |" in md.replace("**", "") and "| m2 |" in md.replace("**", "")
    other = {**cards[1], "battery": "other-v1"}
    with pytest.raises(ValueError, match="different batteries"):
        compare_cards([cards[0], other], ["m1", "x"])
    with pytest.raises(ValueError, match="at least two"):
        compare_cards(cards[:1], ["m1"])


def test_broken_cards_are_refused_in_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"no card\.json"):
        load_card(tmp_path)
    (tmp_path / "card.json").write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        load_card(tmp_path)
    (tmp_path / "card.json").write_text(json.dumps({"card": 99}))
    with pytest.raises(ValueError, match="not a model card of this version"):
        load_card(tmp_path)


def test_cells_and_seed_values_leave_undefined_values_out():
    records = [{"seed": 0, "metrics": {"x": 1.0}}, {"seed": 0, "metrics": {"x": 3.0}},
               {"seed": 1, "metrics": {"x": None}}, {"seed": 2, "metrics": {}},
               {"seed": 3, "metrics": {"x": 4.0}}]  # fmt: skip
    values = seed_values(records, "x")
    assert values[0] == 2.0 and math.isnan(values[1]) and math.isnan(values[2]) and values[3] == 4.0
    cell = Cell.of(values)
    assert cell.n == 2 and cell.mean == 3.0 and cell.low < 3.0 < cell.high
    assert Cell.from_dict(json.loads(json.dumps({k: None if isinstance(v, float) and math.isnan(v) else v
                                                 for k, v in Cell.of([1.0]).to_dict().items()}))).n == 1  # fmt: skip
    rate = Cell.of([0.9, 1.0, 1.0])  # a t-interval over 3 seeds runs past 1; the card cuts it to the rate's range
    assert rate.high > 1 and rate.within(RATE) == Cell(rate.mean, rate.low, 1.0, 3) and rate.within(None) == rate
    lone = Cell.of([0.5]).within(RATE)
    assert lone.mean == 0.5 and math.isnan(lone.low) and math.isnan(lone.high)
    with pytest.raises(ValueError, match="task names repeat"):
        Battery("x", (TASK, TASK))


@pytest.mark.slow
def test_a_model_whose_every_reply_is_garbage_is_marked_and_never_best(server, tmp_path):
    """Found by a new user: garbage replies make the proposer's fallback (NO_TRADE) act, which pays well — the
    garbage model ranked first, silently."""
    from eq_env.agents.fake_server import Reply

    good = run_battery(BATTERY, _model(server, "good"), tmp_path / "good", progress=False)
    write_card(good.card, tmp_path / "good")
    with ScriptedLLMServer(lambda request, n: Reply(content="banana banana I am a teapot {not json")) as junk:
        bad = run_battery(BATTERY, _model(junk, "junk"), tmp_path / "junk", progress=False)
    write_card(bad.card, tmp_path / "junk")
    (task,) = bad.card["tasks"]
    assert task["llm"]["fallbacks"] == task["llm"]["calls"] == 12
    md = (tmp_path / "junk" / "card.md").read_text()
    assert "100% of the model's decisions were fallbacks" in md and " †" in md
    cards = [load_card(tmp_path / "good"), load_card(tmp_path / "junk")]
    render_leaderboard(cards, ["good", "junk"], tmp_path / "board")
    board = (tmp_path / "board" / "leaderboard.md").read_text().splitlines()
    rows = {line.split("|")[1].strip(): line for line in board if line.startswith(("| good", "| junk"))}
    assert "**" not in rows["junk"] and "†" in rows["junk"]  # never best, whatever its welfare


@pytest.mark.slow
def test_an_endpoint_that_fails_everything_stops_the_battery_after_one_chunk(tmp_path):
    from eq_env.agents.fake_server import Reply

    down = Reply(status=503, headers={"retry-after-ms": "1"}, body={"error": {"message": "scripted outage"}})
    with ScriptedLLMServer(lambda request, n: down) as dead:
        outcome = run_battery(BATTERY, _model(dead), tmp_path / "out", progress=False)
    assert outcome.status == "failing" and outcome.runs_played == 2 and outcome.runs_left == 2
    assert "503" in outcome.error and outcome.card is None


def test_outside_text_cannot_break_or_script_the_card(tmp_path):
    from eq_env.core.card import render_card_html, render_card_markdown

    name = "<script>alert(1)</script>|x\ny"
    card = {"card": 1, "battery": "t", "quick": True, "eq_env": "0", "model": name, "endpoint": None, "params": {},
            "prices": [0.0, 0.0], "tasks": []}  # fmt: skip
    md, page = render_card_markdown(card), render_card_html(card, tmp_path)
    assert not re.search(r"(?<!\\)<script", md) and "<script" not in page and "&lt;script&gt;" in page
    row = next(line for line in md.splitlines() if line.startswith("| model |"))
    assert row.count("|") - row.count("\\|") == 3  # the name's pipe escaped, its newline gone: one row, two cells


def _hand_card(model: str, mean: float | None = 1.5) -> dict[str, Any]:
    """A card as card.json holds it, of one task, written without a run."""
    cell = {"mean": mean, "low": None if mean is None else mean - 0.5, "high": None if mean is None else mean + 0.5,
            "n": 0 if mean is None else 3}  # fmt: skip
    llm = dict.fromkeys(("episodes", "failed_episodes", "calls", "fallbacks", "reasks", "usage_estimated",
                         "prompt_tokens", "completion_tokens", "cost_usd"), 0.0)  # fmt: skip
    return {"card": 1, "battery": "test-v1", "quick": True, "eq_env": "0.1.0", "model": model,
            "endpoint": "http://***@example.test/v1", "params": {"temperature": 0.0}, "prices": [0.0, 0.0],
            "tasks": [{"name": TASK.name, "title": TASK.title, "env": TASK.env, "seeds": [0, 1, 2], "runs": 6,
                       "prompts": list(TASK.prompts),
                       "main": {"key": "welfare", "title": "welfare", "higher_is_better": True, "digits": 3,
                                "cell": cell},
                       "metrics": [{"key": "welfare", "title": "welfare", "higher_is_better": True, "digits": 3}],
                       "rows": [{"label": "q=0", "cells": {"welfare": cell}}], "reference": [],
                       "reference_source": "", "notes": [], "figure": None, "llm": llm}]}  # fmt: skip


def _write(directory: Path, card: Mapping[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "card.json").write_text(json.dumps(card))
    return directory


def _table_widths(md: str) -> set[int]:
    """How many cells each row of every markdown table in ``md`` has (escaped pipes are no cell borders)."""
    rows = [line.replace("\\|", "") for line in md.splitlines() if line.startswith("|")]
    return {row.count("|") for row in rows}


HOSTILE_NAME = "evil|</code><script>alert(1)</script>\n## [click](javascript:x) `x` $\\frac{1}$"  # ($: mathtext)


def test_a_hostile_model_name_breaks_no_table_and_runs_no_script(tmp_path):
    card = _hand_card(HOSTILE_NAME)
    (tmp_path / "card").mkdir()
    write_card(card, tmp_path / "card")
    md = (tmp_path / "card" / "card.md").read_text()
    assert "<script>" not in md and not re.search(r"(?<!\\)\]\(javascript", md) and "\n## [" not in md
    assert not any(line.startswith("## ") and "click" in line for line in md.splitlines())
    header = md.split("## Summary")[0]
    assert _table_widths(header) == {3}  # the header table: two cells a row, the name in one of them
    page = (tmp_path / "card" / "card.html").read_text()
    assert "<script" not in page and "&lt;script&gt;" in page
    render_leaderboard([_hand_card("good"), card], ["good", "a|b\ndir"], tmp_path / "board")
    board = (tmp_path / "board" / "leaderboard.md").read_text()
    # model, the task, fallbacks, failed episodes, cost: five cells
    assert "<script>" not in board and _table_widths(board) == {6}
    assert "good: good" in board and "a\\|b dir" in board
    assert "<script" not in (tmp_path / "board" / "leaderboard.html").read_text()


@pytest.mark.parametrize(
    "edit",
    [lambda c: c.pop("battery"), lambda c: c["tasks"].__setitem__(0, {}), lambda c: c["tasks"][0].pop("llm"),
     lambda c: c["tasks"][0]["main"]["cell"].__setitem__("mean", "abc"), lambda c: c.__setitem__("params", [1])],
)  # fmt: skip
def test_a_partial_or_hand_edited_card_is_refused_in_one_line(edit, tmp_path):
    card = _hand_card("m")
    edit(card)
    with pytest.raises(ValueError, match=r"card\.json: not a model card eq_env can read"):
        load_card(_write(tmp_path / "c", card))


def test_the_leaderboard_survives_all_failed_and_inconsistent_cards(tmp_path):
    dirs = [_write(tmp_path / "good", _hand_card("good")), _write(tmp_path / "none", _hand_card("all-failed", None))]
    edited = _hand_card("edited")
    edited["tasks"][0]["main"]["cell"]["mean"] = 9.0  # by hand: the mean outside its interval [1, 2]
    dirs.append(_write(tmp_path / "edited", edited))
    render_leaderboard([load_card(d) for d in dirs], [str(d) for d in dirs], tmp_path / "board")
    rows = {line.split(" | ")[0]: line for line in (tmp_path / "board" / "leaderboard.md").read_text().splitlines()}
    assert "| all-failed | — |" in rows["| all-failed"] and "**" not in rows["| all-failed"]
    assert "**" in rows["| edited"] and "**" not in rows["| good"]


@pytest.mark.slow
def test_a_resumed_run_bills_only_what_this_call_asked(server, tmp_path):
    prices = (10.0, 30.0)
    out = tmp_path / "a"
    whole = run_battery(BATTERY, _model(server), out, prices=prices, progress=False)
    assert whole.spent_usd > 0
    # killed before the last run's record was written: its episodes are saved, so nothing is asked again
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:-1]))
    asked = len(server.requests)
    again = run_battery(BATTERY, _model(server), out, prices=prices, progress=False)
    assert len(server.requests) == asked and again.runs_played == 1
    assert again.status == "complete" and again.spent_usd == pytest.approx(0.0, abs=1e-12)


def test_the_summary_says_its_tokens_count_shared_answers_in_each_condition(tmp_path):
    # the proposer task's two regimes share one reply, the validator's conditions meet the same prompts: the
    # card's tokens and cost exceed the bill (1.7x and 4.3x for the demo's good model), and must say so
    md = render_card_markdown(_hand_card("m"))
    assert "answers shared between conditions counted in each" in md.split("| task |")[0]
    assert "the bill of a fresh run is lower" in md


@pytest.mark.slow
def test_the_plan_and_the_budget_count_only_the_episodes_left(server, tmp_path):
    out = tmp_path / "a"
    run_battery(BATTERY, _model(server), out, progress=False)
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:-1]))  # killed before the last run's record...
    last = json.loads(lines[-1])
    episodes = out / "episodes" / f"{last['condition']}-{last['seed']}.jsonl"
    kept = episodes.read_text().splitlines(keepends=True)
    episodes.write_text("".join(kept[:1]))  # ... and after its first episode of three
    (row,) = plan(BATTERY, _model(server), out, (2.0, 8.0)).rows
    assert row["runs_left"] == 1 and row["episodes_left"] == 2 and row["requests"] == 2
    # the budget counts the same two episodes: 2 x (400 x 2 + 80 x 8) / 1e6 = $0.00288, not the three's $0.00432
    stopped = run_battery(BATTERY, _model(server), out, prices=(2.0, 8.0), max_usd=0.0035, progress=False)
    assert stopped.status == "complete"


@pytest.mark.slow
def test_a_hand_cut_run_record_is_refused_in_one_line(server, tmp_path):
    out = tmp_path / "a"
    run_battery(BATTERY, _model(server), out, progress=False)
    lines = (out / "results.jsonl").read_text().splitlines()
    lines[1] = json.dumps({"key": json.loads(lines[1])["key"]})  # valid JSON, a record's key, nothing else
    (out / "results.jsonl").write_text("\n".join(lines) + "\n")
    for call in (lambda: plan(BATTERY, _model(server), out), lambda: run_battery(BATTERY, _model(server), out)):
        with pytest.raises(ValueError, match=r"results\.jsonl:2: run record .*expected 'condition' of type str"):
            call()


@pytest.mark.slow
def test_a_part_of_a_battery_is_carded_as_a_part_and_the_whole_plays_only_the_rest(server, tmp_path):
    other = BenchTask(
        name="exchange-audit/another", title="Another", env="exchange-audit", main=WELFARE,
        prompts=TASK.prompts, conditions=lambda m, quick: _conditions(m, quick)[:1], seeds=lambda quick: (2, 3),
        report=_report, estimate=TASK.estimate,
    )  # fmt: skip
    whole = Battery("test-v2", (TASK, other), quick=True)
    assert whole.select(["exchange-audit"]) is whole  # a game: all its tasks
    with pytest.raises(ValueError, match=r"--tasks 'chess': test-v2 has no such task or game; its tasks: "):
        whole.select(["chess"])
    part = whole.select([other.name])
    out = tmp_path / "a"
    outcome = run_battery(part, _model(server), out, progress=False)
    assert outcome.runs_played == 2 and [t["name"] for t in outcome.card["tasks"]] == [other.name]
    write_card(outcome.card, out)
    card = load_card(out)
    assert card["part_of"] == 2
    md = (out / "card.md").read_text()
    assert "on test-v2 (1 of its tasks)" in md and "exchange-audit/another only: 1 of the battery's 2" in md
    rest = run_battery(whole, _model(server), out, progress=False)  # the same runs: only TASK's are played
    assert rest.runs_played == 4 and "part_of" not in rest.card
    assert rest.card["tasks"][1] == outcome.card["tasks"][0]
    with pytest.raises(ValueError, match="different tasks"):
        compare_cards([rest.card, card], ["whole", "part"])
