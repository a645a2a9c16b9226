"""``eq-env bench`` end to end on the real battery (bench-v1-quick), against the local server scripted as a
good, a mediocre and a hostile model (``--demo``): the cards differ in the expected direction, the hostile
model's failures are recorded, a replay asks nothing and gives the same cards, a killed run resumes, the
budget stops cleanly, and bad flags get one line. Nothing leaves 127.0.0.1."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from eq_env.agents.bench_demo import BenchDemoScript
from eq_env.cli import INCOMPLETE, main
from eq_env.studies.bench import STOPPED, battery

pytestmark = pytest.mark.usefixtures("fast_llm")
FAST = ["--timeout", "5"]  # (the default retries: every scripted error asks to be retried within 1 ms)
CARD = ("card.json", "card.md", "card.html")


def _card(out: Path) -> dict[str, Any]:
    return json.loads((out / "card.json").read_text())


def _files(out: Path) -> dict[str, bytes]:
    return {n: (out / n).read_bytes() for n in CARD}


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Any]:
    """The three demo models' quick cards: bench-good killed mid-run (a separate process, SIGKILL) and
    resumed; bench-mediocre and bench-hostile in one command."""
    root = tmp_path_factory.mktemp("bench")
    good = root / "good"
    cmd = [sys.executable, "-m", "eq_env.cli", "bench", "--demo", "--quick", "--model", "bench-good", "--out",
           str(good), *FAST]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    while _lines(good / "results.jsonl") < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = _lines(good / "results.jsonl")
    resumed = main(["bench", "--demo", "--quick", "--model", "bench-good", "--out", str(good), *FAST])
    others = root / "others"
    status = main(["bench", "--demo", "--quick", "--model", "bench-mediocre", "--model", "bench-hostile", "--out",
                   str(others), *FAST])  # fmt: skip
    return {"root": root, "good": good, "mediocre": others / "bench-mediocre", "hostile": others / "bench-hostile",
            "others": others, "killed_at": killed_at, "resumed": resumed, "status": status}  # fmt: skip


@pytest.mark.slow
def test_a_killed_run_resumes_to_a_whole_card(runs):
    total = sum(len(t.conditions(_demo_model(), True)) * len(t.seeds(True)) for t in battery(quick=True).tasks)
    assert 2 <= runs["killed_at"] < total, "the kill came before the end"
    assert runs["resumed"] == 0 and _lines(runs["good"] / "results.jsonl") == total
    assert all((runs["good"] / n).is_file() for n in CARD)


def _demo_model() -> Any:
    from eq_env.core.bench import BenchModel

    return BenchModel("bench-good", "http://eq-env-bench-demo.localhost/v1")


@pytest.mark.slow
def test_good_beats_mediocre_on_every_tasks_main_metric(runs):
    good, mediocre = _card(runs["good"]), _card(runs["mediocre"])
    assert [t["name"] for t in good["tasks"]] == [t.name for t in battery(quick=True).tasks]
    for g, m in zip(good["tasks"], mediocre["tasks"], strict=True):
        better = g["main"]["higher_is_better"]
        a, b = g["main"]["cell"]["mean"], m["main"]["cell"]["mean"]
        assert better is not None and a is not None and b is not None, g["name"]
        assert (a > b) if better else (a < b), f"{g['name']}: good {a} vs mediocre {b}"
    board = (runs["others"] / "leaderboard.md").read_text()
    assert "bench-mediocre" in board and "bench-hostile" in board


@pytest.mark.slow
def test_the_hostile_models_failures_are_recorded(runs):
    assert runs["status"] == INCOMPLETE  # episodes failed: the command says so
    card = _card(runs["hostile"])
    assert sum(t["llm"]["failed_episodes"] for t in card["tasks"]) > 0
    assert sum(t["llm"]["reasks"] + t["llm"]["fallbacks"] for t in card["tasks"]) > 0
    records = [json.loads(line) for line in (runs["hostile"] / "results.jsonl").read_text().splitlines()]
    assert any(r.get("failed") for r in records)
    good = _card(runs["good"])
    assert sum(t["llm"]["failed_episodes"] for t in good["tasks"]) == 0


@pytest.mark.slow
def test_a_replay_asks_nothing_and_gives_the_same_cards(runs, monkeypatch):
    asked = []
    original = BenchDemoScript.__call__
    monkeypatch.setattr(BenchDemoScript, "__call__", lambda self, r, n: asked.append(r) or original(self, r, n))
    replay = runs["root"] / "replay"
    for name, out, cache in (("bench-good", runs["good"], runs["good"]), ("bench-mediocre", runs["mediocre"],
                             runs["others"]), ("bench-hostile", runs["hostile"], runs["others"])):  # fmt: skip
        status = main(["bench", "--demo", "--quick", "--model", name, "--out", str(replay / name), "--cache", "read",
                       "--cache-dir", str(cache / "llm_cache"), *FAST])  # fmt: skip
        assert status == (INCOMPLETE if name == "bench-hostile" else 0)
        assert _files(replay / name) == _files(out), name
    assert asked == []


@pytest.mark.slow
def test_the_budget_stops_cleanly_and_the_same_command_goes_on(runs, capsys):
    out = runs["root"] / "budget"
    prices = ["--price-prompt", "2", "--price-completion", "8"]
    status = main(["bench", "--demo", "--quick", "--model", "bench-good", "--out", str(out), "--max-usd", "0.000001",
                   "--cache-dir", str(runs["good"] / "llm_cache"), *prices, *FAST])  # fmt: skip
    err = capsys.readouterr().err
    assert status == STOPPED and "stopped by --max-usd" in err and "larger --max-usd" in err
    assert not (out / "card.json").exists()
    status = main(["bench", "--demo", "--quick", "--model", "bench-good", "--out", str(out), "--max-usd", "100",
                   "--cache-dir", str(runs["good"] / "llm_cache"), *prices, *FAST])  # fmt: skip
    assert status == 0
    card, whole = _card(out), _card(runs["good"])
    assert card["prices"] == [2.0, 8.0] and [t["main"] for t in card["tasks"]] == [t["main"] for t in whole["tasks"]]


@pytest.mark.slow
def test_the_dry_run_prices_every_task_and_calls_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(BenchDemoScript, "__call__", lambda *a: pytest.fail("the dry run made a request"))
    out = tmp_path / "plan"
    status = main(["bench", "--demo", "--quick", "--model", "bench-good", "--out", str(out), "--dry-run",
                   "--price-prompt", "2.5", "--price-completion", "10"])  # fmt: skip
    text = capsys.readouterr().out
    assert status == 0 and not out.exists()
    for task in battery(quick=True).tasks:
        row = next(line for line in text.splitlines() if line.startswith(f"| {task.name} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[3].replace(",", "")) > 0 and float(cells[6]) > 0, row  # requests, dollars
    total = next(line for line in text.splitlines() if line.startswith("| total |"))
    assert math.isfinite(float(total.strip("|").split("|")[-1]))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-usd", "5"], "--max-usd needs the model's prices"),
        (["--compare", "nowhere1", "nowhere2"], "no card.json"),
        (["--compare", "nowhere1", "nowhere2", "./nowhere1"], "nowhere1 is nowhere1 again: name each"),
        (["--compare", "a", "b", "--model", "m"], "--compare reads finished runs: drop --model"),
        (["--compare", "a", "b", "--dry-run"], "--compare reads finished runs: drop --dry-run"),
        (["--demo", "--model", "gpt-4.1"], "the demo serves bench-good"),
        (["--demo", "--base-url", "http://127.0.0.1:9/v1"], "--demo serves its own endpoint"),
        (["--model", "m", "--model", "m"], "expected distinct models"),
        (["--model", "a/b", "--model", "a_b"], "--model 'a_b': its directory"),
        (["--model", "llm_cache", "--model", "m"], "is the answer cache's too"),
        (["--tasks", "chess"], "--tasks 'chess': bench-v1 has no such task or game; its tasks: exchange-audit/"),
        (["--compare", "a", "b", "--tasks", "exchange-audit"], "--compare reads finished runs: drop --tasks"),
    ],
)
def test_bad_flags_get_one_line(argv, message, tmp_path, capsys):
    status = main(["bench", "--out", str(tmp_path / "o"), *argv])
    err = capsys.readouterr().err
    assert status == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def _table(text: str, header: str) -> str:
    start = text.index(header)
    return text[start : text.index("\n\n", start)]


@pytest.mark.slow
def test_the_readmes_card_summary_and_leaderboard_are_what_the_demo_prints(runs, tmp_path):
    from eq_env.core.card import load_card, render_leaderboard

    readme = (Path(__file__).parents[2] / "docs" / "tutorials" / "bench.md").read_text()
    assert _table((runs["good"] / "card.md").read_text(), "| task | main metric") in readme
    render_leaderboard([load_card(runs[m]) for m in ("good", "mediocre", "hostile")], ["a", "b", "c"], tmp_path)
    assert _table((tmp_path / "leaderboard.md").read_text(), "| model |") in readme
