"""``eq-env reproduce --env einstein-puzzle`` and the noisy player it uses."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import eq_env.baselines.einstein_puzzle  # noqa: F401 - registers the policies
from eq_env.cli import main
from eq_env.core import experiments
from eq_env.core.executors import Executor, LocalExecutor
from eq_env.core.policy import make_policy, parse_policy_spec
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.studies.einstein_puzzle import reproduce as rp

ENV = "einstein-puzzle"
# (4 episodes: the random player's verifier gains are 62 and 88 points, as 60 and 90 with 10; the test asks 20)
TINY = rp.ReproduceOptions(episodes=4, seeds=2, sizes=(4,), comm_modes=("provide_and_seek", "none"),
                           players=("planner", "random", "noisy"), verifiers=("none", "reasoning"), jobs=1,
                           plan_puzzles=5)  # fmt: skip


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def _observations(n: int = 4, turns: int = 12, seed: int = 0) -> list[dict[str, Any]]:
    """Observations of the first seat over a game played by random players."""
    from eq_env import einstein_puzzle_v0

    env = einstein_puzzle_v0.env(config=EinsteinPuzzleConfig(n=n))
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    out = []
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        if term or trunc or len(out) >= turns:
            break
        if agent == "player_0":
            out.append(obs)
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return out


# ---------------------------------------------------------------------------
# The noisy player
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("base", ["planner", "random"])
def test_noisy_with_epsilon_zero_is_its_base(base: str) -> None:
    noisy = make_policy(f"noisy:base={base},epsilon=0", "player_0", ENV)
    plain = make_policy(base, "player_0", ENV)
    noisy.reset(7)
    plain.reset(7)
    for obs in _observations():
        assert noisy.act_privileged(obs, None)[0] == plain.act(obs)


def test_noisy_with_epsilon_one_is_uniform_over_legal_actions() -> None:
    obs = _observations(turns=1)[0]
    legal = set(np.flatnonzero(obs["action_mask"]).tolist())
    noisy = make_policy("noisy:base=planner,epsilon=1", "player_0", ENV)
    noisy.reset(0)
    draws = [noisy.act(obs) for _ in range(200 * len(legal))]
    assert set(draws) == legal  # every legal action, nothing else
    counts = np.bincount(draws)[sorted(legal)]
    assert counts.min() > 0.6 * 200 and counts.max() < 1.4 * 200


def test_noisy_is_seeded_and_mixes_at_epsilon() -> None:
    observations = _observations(turns=15)

    def actions(seed: int, eps: float = 0.5) -> list[int]:
        p = make_policy(f"noisy:base=planner,epsilon={eps}", "player_0", ENV)
        p.reset(seed)
        return [p.act(o) for o in observations * 4]

    assert actions(3) == actions(3)
    assert actions(3) != actions(4)
    p = make_policy("noisy:base=planner,epsilon=0.5", "player_0", ENV)
    p.reset(0)
    for o in observations * 20:
        p.act(o)
    assert 0.35 < p.random_actions / (len(observations) * 20) < 0.65


@pytest.mark.parametrize("spec", ["noisy:epsilon=1.5", "noisy:epsilon=-0.1", "noisy:base=nobody"])
def test_noisy_refuses_bad_parameters(spec: str) -> None:
    with pytest.raises(ValueError):
        make_policy(spec, "player_0", ENV)


# ---------------------------------------------------------------------------
# Conditions
# ---------------------------------------------------------------------------
def test_condition_specs_cover_every_cell() -> None:
    specs = rp.condition_specs(rp.ReproduceOptions())
    assert len(specs) == 3 * 4 * 4 * 5
    policies = {s for _, _, s in specs}
    verified = rp.player_spec("noisy", "reasoning", rp.ReproduceOptions())
    assert parse_policy_spec(verified) == ("verified", {"base": "noisy:base=planner,epsilon=0.2",
                                                        "verifier": "reasoning", "k": 4})  # fmt: skip
    assert {"planner", "random", "noisy:base=planner,epsilon=0.2"} <= policies
    assert "verified:base=random,verifier=affordance,k=4" in policies


def test_llm_conditions_are_built_from_the_spec_strings() -> None:
    opts = rp.ReproduceOptions(players=("llm",), llm="llm:model=m", sizes=(4,), comm_modes=("none",))
    specs = [s for _, _, s in rp.condition_specs(opts)]
    assert specs == ["llm:model=m", "llm:model=m,verifier=affordance,k=4", "llm:model=m,verifier=communication,k=4",
                     "llm:model=m,verifier=reasoning,k=4"]  # fmt: skip


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--player", "genius"], "unknown player kind"),
        (["--n", "3"], "--n"),
        (["--verifiers", "reasoning"], "include none"),
        (["--comm-mode", "shout"], "unknown comm mode"),
        (["--episodes", "0"], "--episodes"),
        (["--epsilon", "2"], "--epsilon"),
        (["--puzzles", "suite", "--n", "4-9"], "suite"),
    ],
)
def test_bad_flags_fail_in_one_line(flags: list[str], message: str, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        status = main(["reproduce", "--env", ENV, "--out", str(out), *flags])
        raise SystemExit(status)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) <= 2  # (argparse: the usage line, then the error)
    assert not out.exists()


def test_dry_run_lists_the_conditions(tmp_path: Path, capsys: Any) -> None:
    status = main(["reproduce", "--env", ENV, "--out", str(tmp_path / "o"), "--n", "4", "--player", "random",
                   "--dry-run"])  # fmt: skip
    assert status == 0
    text = capsys.readouterr().out
    assert "16 conditions x 2 seeds = 32 runs" in text
    assert "verified:base=random,verifier=reasoning,k=4" in text
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------------------
# A tiny run
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("reproduce")
    return out, rp.reproduce(out, TINY, progress=False)


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_tiny_run_writes_every_output(tiny: tuple[Path, dict[str, Any]]) -> None:
    out, result = tiny
    cells = len(TINY.players) * len(TINY.verifiers) * len(TINY.comm_modes) * len(TINY.sizes)
    for name in ("table_success.csv", "table_success.md", "table_gains.csv", "table_metrics.csv",
                 "figure_success.png", "table_plans.csv", "table_plans.md", "results.jsonl", "summary.md"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
    assert (out / "figure_success.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    success = _rows(out / "table_success.csv")
    assert len(success) == cells and set(success[0]) == set(rp.SUCCESS_COLUMNS)
    metrics = _rows(out / "table_metrics.csv")
    assert len(metrics) == cells
    for m in ("success_rate", "steps", "rejected_placements", "rule_inconsistent", "partial_success"):
        assert f"{m}_mean" in metrics[0] and f"{m}_std" in metrics[0]
    gains = _rows(out / "table_gains.csv")
    assert len(gains) == len(TINY.players) * len(TINY.comm_modes) * (len(TINY.verifiers) - 1)
    assert {g["paper_gain_low"] for g in gains} == {"10.0"} and {g["paper_gain_high"] for g in gains} == {"40.0"}
    plans = _rows(out / "table_plans.csv")
    assert len(plans) == len(TINY.sizes) * len(TINY.comm_modes)
    assert all(p["paper_mean_length"] for p in plans)  # n = 4: the paper's figures beside ours
    assert len((out / "results.jsonl").read_text().splitlines()) == cells * TINY.seeds
    if rp.taxonomy_counts() is not None:
        assert len(_rows(out / "taxonomy.csv")) == cells
    assert result["failed"] == []


def test_the_verifier_improves_random_play(tiny: tuple[Path, dict[str, Any]]) -> None:
    out, _ = tiny
    gains = [g for g in _rows(out / "table_gains.csv") if g["player"] == "random" and g["verifier"] == "reasoning"]
    assert gains and all(float(g["gain_points"]) >= 20 for g in gains)
    planner = [g for g in _rows(out / "table_gains.csv") if g["player"] == "planner"]
    assert all(float(g["gain_points"]) == 0 for g in planner)  # nothing to correct


def test_summary_numbers_match_the_tables(tiny: tuple[Path, dict[str, Any]]) -> None:
    out, _ = tiny
    summary = (out / "summary.md").read_text()
    for g in _rows(out / "table_gains.csv"):
        points = rp._points(float(g["gain_points"]))
        assert f"{points} ({rp.MODE_NAMES[g['comm_mode']]})" in summary, g
    for r in _rows(out / "table_success.csv"):
        mean, std = float(r["success_rate_mean"]), float(r["success_rate_std"])
        assert rp.mean_std(mean, std) in summary
    metrics = _rows(out / "table_metrics.csv")
    base = [float(r["success_rate_mean"]) for r in metrics if r["player"] == "random" and r["verifier"] == "none"]
    assert f"**random.** Without a verifier it succeeds in {rp._pct(sum(base) / len(base))}" in summary
    for p in _rows(out / "table_plans.csv"):
        assert re.search(rf"\| {p['n']} \| {re.escape(rp.MODE_NAMES[p['comm_mode']])} \| \d+ \| "
                         rf"{float(p['oracle_mean_length']):.2f} \|", summary)  # fmt: skip
    assert (out / "table_success.md").read_text() in summary


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_resume_recomputes_nothing_then_only_what_is_missing(tmp_path: Path, monkeypatch: Any) -> None:
    opts = rp.ReproduceOptions(episodes=3, seeds=2, sizes=(4,), comm_modes=("none",), players=("random",),
                               verifiers=("none", "reasoning"), jobs=1, plan_puzzles=0)  # fmt: skip
    rp.reproduce(tmp_path, opts, progress=False)
    results = tmp_path / "results.jsonl"
    before = results.read_text()
    summary = (tmp_path / "summary.md").read_text()
    calls: list[tuple[str, int]] = []
    real = experiments.run_one

    def counted(condition: Any, seed: int, *args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append((condition.key, seed))
        return real(condition, seed, *args, **kwargs)

    monkeypatch.setattr(experiments, "run_one", counted)
    rp.reproduce(tmp_path, opts, progress=False)
    assert calls == [] and results.read_text() == before
    lines = before.splitlines(keepends=True)
    kept = [lines[0], lines[2]]
    results.write_text("".join(kept))
    rp.reproduce(tmp_path, opts, progress=False)
    assert len(calls) == 2
    assert sorted(results.read_text().splitlines()) == sorted(before.splitlines())
    # the tables are the same as those of the uninterrupted run (the time taken aside)
    assert re.sub(r"\d+\.\d s\.", "", (tmp_path / "summary.md").read_text()) == re.sub(r"\d+\.\d s\.", "", summary)


class _ReversedExecutor(Executor):
    """Runs every call here, and hands the results back last first: workers finishing out of order."""

    name = "reversed"

    def runs_inline(self, calls: int) -> bool:
        return False

    def map_unordered(self, fn: Any, calls: Any, names: Any = ()) -> Any:
        yield from reversed([fn(*args, **kwargs) for args, kwargs in calls])

    def describe(self) -> str:
        return "reversed"


def test_taxonomy_jsonl_is_in_the_conditions_order_whatever_the_finishing_order(tmp_path: Path) -> None:
    opts = rp.ReproduceOptions(episodes=1, seeds=1, sizes=(4,), comm_modes=("none",), players=("random",),
                               verifiers=("none", "reasoning"), jobs=1, plan_puzzles=0)  # fmt: skip
    conds = rp.conditions(opts)
    keys = [experiments.run_key(c, 0) for c in conds]
    assert len(keys) == 2
    for out, executor in ((tmp_path / "inline", LocalExecutor(1)), (tmp_path / "reversed", _ReversedExecutor())):
        rows = rp._taxonomy(conds, 0, out, executor)
        assert [r["verifier"] for r in rows] == ["none", "reasoning"]
    inline, reversed_ = ((tmp_path / d / "taxonomy.jsonl").read_text() for d in ("inline", "reversed"))
    assert inline == reversed_
    assert [json.loads(line)["key"] for line in inline.splitlines()] == keys
    # a resumed file (a record missing, another written twice) is put back in order too
    lines = inline.splitlines(keepends=True)
    (tmp_path / "reversed" / "taxonomy.jsonl").write_text(lines[1] + lines[1])
    rp._taxonomy(conds, 0, tmp_path / "reversed", _ReversedExecutor())
    assert (tmp_path / "reversed" / "taxonomy.jsonl").read_text() == inline


@pytest.mark.slow
def test_cli_run_with_two_jobs(tmp_path: Path, capsys: Any) -> None:
    # (the command's wiring with two worker processes, not its numbers: few episodes and plans)
    status = main(["reproduce", "--env", ENV, "--out", str(tmp_path), "--episodes", "2", "--n", "4-5",
                   "--jobs", "2", "--plan-puzzles", "2"])  # fmt: skip
    assert status == 0
    assert "wrote" in capsys.readouterr().out
    gains = _rows(tmp_path / "table_gains.csv")
    assert len(gains) == 3 * 4 * 3


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_llm_player_runs_the_same_conditions(tmp_path: Path, capsys: Any) -> None:
    """``--player llm`` against a local scripted server: the LLM in both seats, verified as llm:...,verifier=V."""
    from eq_env.agents.einstein_puzzle.scripts import good_script
    from eq_env.agents.fake_server import ScriptedLLMServer

    with ScriptedLLMServer(good_script) as server:
        status = main(["reproduce", "--env", ENV, "--out", str(tmp_path), "--player", "llm", "--n", "4",
                       "--comm-mode", "none", "--episodes", "2", "--seeds", "1", "--plan-puzzles", "0",
                       "--model", "fake", "--base-url", server.url, "--no-endpoint-check"])  # fmt: skip
        assert server.requests
    assert status == 0
    metrics = _rows(tmp_path / "table_metrics.csv")
    assert [(r["verifier"], parse_policy_spec(r["policy"])[1].get("verifier")) for r in metrics] == [
        ("none", None),
        ("affordance", "affordance"),
        ("communication", "communication"),
        ("reasoning", "reasoning"),
    ]
    assert all(parse_policy_spec(r["policy"])[0] == "llm" for r in metrics)
    assert (tmp_path / "llm_costs.csv").exists() and (tmp_path / "summary.md").exists()
