"""When the bench marks a score, stops a battery, and bolds a leaderboard cell (planted bugs of the
bench, stats and card): the † at more than 10% fallbacks (and 5% failed episodes), the circuit breaker only
when every run of a chunk failed entirely, and no bold when every model ties. Played on the suite's toy
game with a scripted policy that waits like an LLM one: no server, no tokens."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from toy_game import ID, RelayConfig

from eq_env.core.bench import (
    FAILED_LIMIT,
    FALLBACK_LIMIT,
    Battery,
    BenchModel,
    BenchTask,
    Cell,
    Estimate,
    Metric,
    TaskReport,
    run_battery,
    score_caveats,
    seed_values,
)
from eq_env.core.card import load_card, render_card_markdown, render_leaderboard
from eq_env.core.experiments import Condition
from eq_env.core.policy import PolicyError, register_policy


# ---------------------------------------------------------------------------
# The dagger
# ---------------------------------------------------------------------------
def _llm(calls: int = 100, fallbacks: int = 0, episodes: int = 100, failed: int = 0) -> dict[str, float]:
    return {"calls": calls, "fallbacks": fallbacks, "episodes": episodes, "failed_episodes": failed}


def test_the_fallback_limit_is_ten_percent_exclusive() -> None:
    assert FALLBACK_LIMIT == 0.10
    (caveat,) = score_caveats(_llm(fallbacks=15))
    assert caveat.startswith("15% of the model's decisions were fallbacks (over 10%)")
    assert score_caveats(_llm(fallbacks=10)) == []  # exactly the limit: the model's score
    assert score_caveats(_llm(fallbacks=11))  # just over it
    assert score_caveats(_llm(calls=0, fallbacks=0)) == []


def test_the_failed_episodes_limit_is_five_percent_exclusive() -> None:
    assert FAILED_LIMIT == 0.05
    (caveat,) = score_caveats(_llm(failed=6))
    assert caveat.startswith("6% of the episodes failed (over 5%)")
    assert score_caveats(_llm(failed=5)) == []


def test_the_card_daggers_a_score_with_15_percent_fallbacks_and_not_one_with_10() -> None:
    def summary_row(fallbacks: int) -> str:
        md = render_card_markdown(_card("m", 1.0, fallbacks=fallbacks))
        return next(line for line in md.splitlines() if line.startswith("| relay/test |"))

    assert "1.000 [0.500, 1.500] †" in summary_row(15) and "15 / 100" in summary_row(15)
    assert "†" not in summary_row(10)


# ---------------------------------------------------------------------------
# Bold on the leaderboard
# ---------------------------------------------------------------------------
def _card(model: str, mean: float, *, fallbacks: int = 0) -> dict[str, Any]:
    """A card as card.json holds it: one task, its main metric's mean ± 0.5."""
    cell = {"mean": mean, "low": mean - 0.5, "high": mean + 0.5, "n": 3}
    zero = ("failed_episodes", "reasks", "usage_estimated", "prompt_tokens", "completion_tokens", "cost_usd")
    llm = {**dict.fromkeys(zero, 0.0), "calls": 100.0, "fallbacks": float(fallbacks), "episodes": 100.0}
    metric = {"key": "success_rate", "title": "success", "higher_is_better": True, "digits": 3}
    return {"card": 1, "battery": "test-v1", "quick": True, "eq_env": "0", "model": model, "endpoint": None,
            "params": {}, "prices": [0.0, 0.0],
            "tasks": [{"name": "relay/test", "title": "relay", "env": "relay", "seeds": [0, 1, 2], "runs": 3,
                       "prompts": [], "main": {**metric, "cell": cell}, "metrics": [metric],
                       "rows": [{"label": "all", "cells": {"success_rate": cell}}], "reference": [],
                       "reference_source": "", "notes": [], "figure": None, "llm": llm}]}  # fmt: skip


def _board(tmp_path: Path, *cards: dict[str, Any]) -> dict[str, str]:
    dirs = []
    for card in cards:
        d = tmp_path / card["model"]
        d.mkdir(parents=True)
        (d / "card.json").write_text(json.dumps(card))
        dirs.append(d)
    render_leaderboard([load_card(d) for d in dirs], [d.name for d in dirs], tmp_path / "board")
    lines = (tmp_path / "board" / "leaderboard.md").read_text().splitlines()
    return {c["model"]: next(line for line in lines if line.startswith(f"| {c['model']} |")) for c in cards}


def test_no_model_is_best_when_every_model_ties() -> None:
    from eq_env.core.card import _best  # (what the leaderboard bolds; rendered below)

    assert _best([_card("a", 0.5), _card("b", 0.5), _card("c", 0.5)], 0) == set()
    assert _best([_card("a", 0.5), _card("b", 0.7), _card("c", 0.6)], 0) == {1}
    assert _best([_card("a", 0.7), _card("b", 0.7), _card("c", 0.6)], 0) == {0, 1}  # a tie for best: both


@pytest.mark.slow  # (two leaderboards, their figures drawn with matplotlib: a second and more)
def test_the_leaderboard_bolds_no_one_when_every_ranked_model_ties(tmp_path: Path) -> None:
    # the daggered model is the only one above; the two that rank tie: nobody is bold
    rows = _board(tmp_path / "tie", _card("a", 0.5), _card("b", 0.5), _card("c", 0.9, fallbacks=50))
    assert not any("**" in row for row in rows.values()) and "†" in rows["c"]
    rows = _board(tmp_path / "best", _card("a", 0.5), _card("b", 0.7))
    assert "**" in rows["b"] and "**" not in rows["a"]


# ---------------------------------------------------------------------------
# The circuit breaker
# ---------------------------------------------------------------------------
class _Outage:
    """A runner that waits like an LLM policy; with ``down``, its endpoint fails every request."""

    role = "runner"

    def __init__(self, down: bool = False) -> None:
        self.down = down

    def reset(self, seed: int | None = None) -> None:
        pass

    async def aact(self, observation: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.down:
            raise PolicyError("scripted outage")
        return 0, {"calls": 1, "fallbacks": 0}


register_policy("test-outage", "runner", _Outage, env=ID)
SUCCESS = Metric("success_rate", "success")


def _battery(*down: bool) -> Battery:
    def conditions(model: BenchModel, quick: bool) -> list[Condition]:
        return [Condition(RelayConfig(), {"leader": "random", "runner": f"test-outage:down={d}"}, 2, (("down", d),))
                for d in down]  # fmt: skip

    def report(conds: Sequence[Condition], records: Sequence[Mapping[str, Any]]) -> TaskReport:
        return TaskReport((SUCCESS,), (), Cell.of(seed_values(records, "success_rate")))

    task = BenchTask(name="relay/test", title="relay", env="relay", main=SUCCESS, prompts=(),
                     conditions=conditions, seeds=lambda quick: (0, 1), report=report,
                     estimate=lambda c: Estimate(1.0, 1.0, 1.0))  # fmt: skip
    return Battery("test-v1", (task,), quick=True)


def test_a_chunk_with_one_run_failed_entirely_does_not_stop_the_battery(tmp_path: Path) -> None:
    outcome = run_battery(_battery(True, False), BenchModel("m"), tmp_path, progress=False)
    assert outcome.status == "complete" and outcome.runs_played == 4 and outcome.card is not None
    assert sorted((n, total) for _, n, total in outcome.failed) == [(2, 2), (2, 2)]  # the down runs, both seeds


def test_a_chunk_whose_every_run_failed_entirely_stops_the_battery(tmp_path: Path) -> None:
    outcome = run_battery(_battery(True, True), BenchModel("m"), tmp_path, progress=False)
    assert outcome.status == "failing" and outcome.runs_played == 2 and outcome.runs_left == 2
    assert outcome.error == "scripted outage" and outcome.card is None


@pytest.mark.parametrize("down", [(False,), (False, False)])
def test_a_battery_with_no_failure_completes(down: tuple[bool, ...], tmp_path: Path) -> None:
    outcome = run_battery(_battery(*down), BenchModel("m"), tmp_path, progress=False)
    assert outcome.status == "complete" and outcome.failed == ()
