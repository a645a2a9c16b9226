"""``eq-env baselines``: the statistics, the records and resume, the report, the command's refusals."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eq_env.cli import main
from eq_env.studies import baselines as bl
from eq_env.studies.baselines import Baseline, Budget, bootstrap_interval, iqm

CALLS: list[tuple[str, int]] = []


def toy_train(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Any) -> dict[str, Any]:
    """A 'training' whose score is a known function of the seed (and that can be told to fail)."""
    CALLS.append((name, seed))
    if (out.parent / "FAIL").exists() and seed == 10:
        raise RuntimeError("the second seed's training died")
    out.mkdir(parents=True, exist_ok=True)
    score = 0.5 + seed / 100  # seeds 0, 10, 20, ...: 0.5, 0.6, 0.7, ...
    return {
        "greedy": {"score": score, "steps": float("nan")},  # (an undefined metric travels as null)
        "sampled": {"score": score - 0.1, "steps": 3.0},
        "curve": [[100, 0.1], [200, score]],
        "steps_run": budget.timesteps,
    }


def toy_reference(name: str, budget: Budget, eval_seeds: Any) -> dict[str, float]:
    return {"score": 0.8, "steps": 2.0}


def toy(name: str, presets: tuple[str, ...] = ("full", "quick"), modes: tuple[str, ...] = bl.MODES) -> Baseline:
    return Baseline(
        name=name,
        game="toy",
        setting=f"toy {name}",
        learner="none",
        metric="score",
        reference_label="oracle",
        train=bl.Bound(toy_train, name),
        reference=bl.Bound(toy_reference, name),
        budgets={p: Budget(256, 2) for p in presets},
        shown=("steps",),
        modes=modes,
    )


@pytest.fixture
def toys(monkeypatch: pytest.MonkeyPatch) -> list[Baseline]:
    CALLS.clear()
    chosen = [toy("toy/a"), toy("toy/b", ("full",))]
    monkeypatch.setattr(bl, "all_baselines", lambda: list(chosen))
    return chosen


def test_iqm_is_the_mean_of_the_middle_half() -> None:
    assert iqm([1, 2, 3, 4, 100]) == pytest.approx(3.0)  # 5 runs: one cut at each end
    assert iqm([4, 1, 3, 2]) == pytest.approx(2.5)  # 4 runs: one cut at each end
    assert iqm([7.0]) == 7.0 and np.isnan(iqm([]))
    x = np.random.default_rng(0).normal(size=40)
    trimmed = np.sort(x)[10:30].mean()  # scipy.stats.trim_mean(x, 0.25)
    assert iqm(x) == pytest.approx(trimmed)


def test_bootstrap_interval_is_seeded_and_stratified() -> None:
    a, b = [0.1, 0.2, 0.3, 0.9, 1.0], [5.0, 5.0, 5.0]
    low, high = bootstrap_interval([a])
    assert (low, high) == bootstrap_interval([a]) and low <= iqm(a) <= high
    assert bootstrap_interval([[2.0, 2.0, 2.0]]) == (2.0, 2.0)
    # stratified: every resample keeps 5 values of a and 3 of b, so the pooled IQM never leaves their range
    low, high = bootstrap_interval([a, b])
    assert 0.1 <= low <= high <= 5.0 and high > low


def test_runs_are_recorded_and_a_second_command_resumes(
    toys: list[Baseline], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "bl"
    result = bl.run_baselines(out, preset="full", seeds=3)
    assert sorted(CALLS) == [(n, s) for n in ("toy/a", "toy/b") for s in (0, 10, 20)]
    row = next(r for r in result["rows"] if r["baseline"] == "toy/a" and r["mode"] == "greedy")
    assert row["values"] == pytest.approx([0.5, 0.6, 0.7]) and row["iqm"] == pytest.approx(0.6)
    assert row["reference"] == 0.8 and row["ratio"] == pytest.approx(0.75) and row["seeds"] == 3
    assert np.isnan(row["steps"])  # undefined on every run: NaN, not an error
    sampled = next(r for r in result["rows"] if r["baseline"] == "toy/a" and r["mode"] == "sampled")
    assert sampled["iqm"] == pytest.approx(0.5) and sampled["steps"] == 3.0
    for name in ("results.jsonl", "baselines.csv", "baselines.md", "curves.png", "ratios.png", "summary.md"):
        assert (out / name).stat().st_size > 0, name
    summary = (out / "summary.md").read_text()
    assert "greedy (the most likely action) and sampled" in summary and "1000, 1001, 1002" in summary
    assert "| toy/a | 256 steps | 2 × 3 |" in summary  # each run's budget and its evaluation's episodes and seeds

    for plot in ("_curves", "_ratios"):  # (drawn and checked once: seconds on a loaded machine)
        monkeypatch.setattr(bl, plot, lambda *args: None)
    CALLS.clear()
    again = bl.run_baselines(out, preset="full", seeds=3)
    assert CALLS == [] and (out / "baselines.md").read_text() == bl._table(again["rows"]) + "\n"
    bl.run_baselines(out, preset="full", seeds=4)  # one more seed: only it runs
    assert sorted(CALLS) == [("toy/a", 30), ("toy/b", 30)]


def test_a_greedy_only_learner_has_no_sampled_row_and_stays_out_of_the_sampled_aggregate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = [toy("toy/a"), toy("toy/q", modes=("greedy",))]
    monkeypatch.setattr(bl, "all_baselines", lambda: list(chosen))
    out = tmp_path / "bl"
    result = bl.run_baselines(out, preset="full", seeds=2)
    assert [(r["baseline"], r["mode"]) for r in result["rows"]] == [
        ("toy/a", "greedy"),
        ("toy/a", "sampled"),
        ("toy/q", "greedy"),
    ]
    assert result["aggregate"]["greedy"][3] == 2 and result["aggregate"]["sampled"][3] == 1
    assert (out / "ratios.png").stat().st_size > 0  # (its rows placed by name: one mark for toy/q)


def test_a_baseline_that_needs_what_is_not_installed_is_listed_and_said_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for plot in ("_curves", "_ratios"):  # (the figures are checked above)
        monkeypatch.setattr(bl, plot, lambda *args: None)
    why = "needs Nothing, which is not installed: pip install nothing"
    chosen = [toy("toy/a"), dataclasses.replace(toy("toy/n"), missing=lambda: why)]
    monkeypatch.setattr(bl, "all_baselines", lambda: list(chosen))
    CALLS.clear()
    out = tmp_path / "bl"
    assert main(["baselines", "--out", str(out), "--seeds", "2"]) == 0
    assert sorted(CALLS) == [("toy/a", 0), ("toy/a", 10)]  # toy/n: not trained, not even its reference
    printed = capsys.readouterr().out
    assert f"not run: toy/n: {why}" in printed and "toy toy/n" not in (out / "baselines.md").read_text()
    assert f"* toy/n: {why}" in (out / "summary.md").read_text()
    assert main(["baselines", "--list"]) == 0
    assert f"toy/n  (none; 256 steps × 5 seeds; reference: oracle)  [not run here: {why}]" in (capsys.readouterr().out)


PAIRS: list[tuple[str, str]] = []


def toy_cross(name: str, a: Path, b: Path, budget: Budget, eval_seeds: Any) -> dict[str, float]:
    """Two runs' models together: a score known from which two they are."""
    PAIRS.append((a.name, b.name))
    return {"score": 0.1 * int(a.name.removeprefix("seed")) + 0.01 * int(b.name.removeprefix("seed"))}


def test_a_self_play_baseline_plays_each_run_with_the_next_and_resumes_the_pairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for plot in ("_curves", "_ratios"):  # (the figures are checked above)
        monkeypatch.setattr(bl, plot, lambda *args: None)
    selfplay = dataclasses.replace(toy("toy/s"), cross=bl.Bound(toy_cross, "toy/s"))
    chosen = [toy("toy/a"), selfplay]
    monkeypatch.setattr(bl, "all_baselines", lambda: list(chosen))
    out = tmp_path / "bl"
    PAIRS.clear()
    rows = bl.run_baselines(out, preset="full", seeds=3)["rows"]
    assert PAIRS == [("seed0", "seed1"), ("seed1", "seed2")]  # k − 1 pairs, each after its two runs
    greedy = next(r for r in rows if r["baseline"] == "toy/s" and r["mode"] == "greedy")
    assert greedy["cross_play"] == pytest.approx((0.01 + 0.12) / 2) and greedy["reference_cross_play"] == 0.8
    assert all("cross_play" not in r for r in rows if r["baseline"] == "toy/a" or r["mode"] == "sampled")
    assert "cross_play 0.07 (ref. 0.80)" in (out / "baselines.md").read_text()
    header = (out / "baselines.csv").read_text().splitlines()[0].split(",")
    assert "cross_play" in header and "steps" in header  # (every row's columns, not the first row's only)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["pair"] for r in records if r["kind"] == "cross") == [[0, 1], [1, 2]]

    PAIRS.clear()
    bl.run_baselines(out, preset="full", seeds=4)  # one more seed: its run, then only the new pair
    assert PAIRS == [("seed2", "seed3")]
    PAIRS.clear()
    bl.run_baselines(out, preset="full", seeds=2)  # fewer seeds: the recorded pairs within them
    assert PAIRS == [] and "cross_play 0.01 (ref. 0.80)" in (out / "baselines.md").read_text()


def test_a_missing_model_stops_cross_play_with_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = [dataclasses.replace(toy("toy/s"), cross=bl.Bound(toy_cross, "toy/s"))]
    monkeypatch.setattr(bl, "all_baselines", lambda: list(chosen))
    (tmp_path / "runs" / "toy" / "s" / "seed0").mkdir(parents=True)  # run 1's model was moved away
    with pytest.raises(FileNotFoundError, match=r"seed1: the model of a recorded run is missing"):
        bl.cross_one("toy/s", "full", 0, str(tmp_path))


def test_a_failed_run_keeps_the_others_and_the_same_command_completes(
    toys: list[Baseline], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for plot in ("_curves", "_ratios"):  # (the figures are checked above)
        monkeypatch.setattr(bl, plot, lambda *args: None)
    out = tmp_path / "bl"
    (out / "runs" / "toy" / "a").mkdir(parents=True)
    (out / "runs" / "toy" / "a" / "FAIL").write_text("")
    with pytest.raises(RuntimeError, match="second seed"):
        bl.run_baselines(out, preset="full", seeds=2, only=["toy/a"])
    kept = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {(r["kind"], r.get("seed")) for r in kept} == {("reference", None), ("run", 0)}
    (out / "runs" / "toy" / "a" / "FAIL").unlink()
    CALLS.clear()
    bl.run_baselines(out, preset="full", seeds=2, only=["toy/a"])
    assert CALLS == [("toy/a", 10)]


def test_a_torn_last_line_is_dropped_and_a_corrupt_one_named(
    toys: list[Baseline], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for plot in ("_curves", "_ratios"):  # (the figures are checked above)
        monkeypatch.setattr(bl, plot, lambda *args: None)
    out = tmp_path / "bl"
    bl.run_baselines(out, preset="quick", seeds=1)
    path = out / "results.jsonl"
    whole = path.read_text()
    path.write_text(whole + '{"key": "half a reco')  # killed mid-write
    CALLS.clear()
    bl.run_baselines(out, preset="quick", seeds=1)
    assert CALLS == [] and path.read_text() == whole
    path.write_text(whole + "not json\n")
    with pytest.raises(ValueError, match=r"results.jsonl:3 is not a run record"):
        bl.run_baselines(out, preset="quick", seeds=1)


def test_the_quick_preset_has_only_its_own_rows(toys: list[Baseline], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["baselines", "--list", "--preset", "quick"]) == 0
    listed = capsys.readouterr().out
    assert "toy/a" in listed and "toy/b" not in listed and "2 seeds" in listed


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--only", "nothing/like/it", "--out", "X"], "--only nothing/like/it: no baseline of preset full"),
        ([], "--out is required"),
        (["--seeds", "0", "--out", "X"], "--seeds"),
        (["--preset", "huge", "--out", "X"], "--preset"),
        (["--backend", "local", "--ray-address", "127.0.0.1:1", "--out", "X"], "--ray-address goes with"),
    ],
)
def test_bad_flags_are_refused_in_one_line(
    toys: list[Baseline], argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = [str(tmp_path / a) if a == "X" else a for a in argv]
    try:
        code = main(["baselines", *argv])
    except SystemExit as done:  # (argparse's own refusals exit from the parser)
        code = done.code  # type: ignore[assignment]
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_every_game_lists_baselines_with_a_budget_for_each_preset_they_name() -> None:
    every = bl.all_baselines()
    games = {b.game for b in every}
    assert games == {"exchange-audit", "einstein-puzzle", "belief-coordination"}
    assert all(set(b.budgets) <= set(bl.PRESETS) and "full" in b.budgets for b in every)
    quick = bl.select("quick")
    assert {b.game for b in quick} == games and len(quick) < len(every)  # CI's preset: a row or so per game
    names = [b.name for b in every]
    assert "einstein-puzzle/self-play/n4/provide_and_seek" in names and "exchange-audit/proposer/V1" in names


PAGE = Path(__file__).resolve().parents[2] / "docs/guide/baselines.md"  # its quick block is run here (run-by)


@pytest.mark.slow  # (five short trainings and their evaluations: about a minute on two cores)
def test_the_quick_preset_trains_every_game_and_reports_greedy_and_sampled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the command as docs/guide/baselines.md shows it, into a directory of this test's own
    (line,) = [ln for ln in PAGE.read_text().splitlines() if ln.startswith("eq-env baselines --preset quick")]
    argv = line.split()[1:]
    out = tmp_path / "quick"
    argv[argv.index("--out") + 1] = str(out)
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for setting in (
        "exchange–audit proposer vs rule, V = 2, L = 1",
        "Einstein self-play, n = 4, provide & seek",
        "belief coordination team (ECON), N = 3",
    ):
        assert f"| {setting} | " in printed
    assert "| greedy |" in printed and "| sampled |" in printed and "aggregate ratio" in printed
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    runs = [r for r in records if r["kind"] == "run"]
    not_run = bl.not_installed(bl.select("quick"))  # (RLlib's rows, without the rllib extra: said, not trained)
    assert len(runs) == 2 * (len(bl.select("quick")) - len(not_run))
    assert all(r["eval_seeds"] == [1000, 1001, 1002] for r in runs)
    for name, why in not_run.items():
        assert f"not run: {name}: {why}" in printed and f"* {name}: {why}" in (out / "summary.md").read_text()
    for r in runs:
        metric = bl._by_name()[r["baseline"]].metric
        assert 0 <= r["greedy"][metric] <= 10 and any(Path(r["model"]).iterdir())  # (SB3's zip, ECON's econ.pt)
        assert (r["sampled"] == {}) == (bl._by_name()[r["baseline"]].modes == ("greedy",))
    crosses = [r for r in records if r["kind"] == "cross" and r["baseline"] not in not_run]
    (cross,) = crosses  # SB3 self-play's one pair of its two seeds
    assert cross["baseline"] == "einstein-puzzle/self-play/n4/provide_and_seek" and cross["pair"] == [0, 1]
    assert 0 <= cross["greedy"]["success_rate"] <= 1 and "cross_play" in printed


def test_records_of_a_changed_baseline_stay_out_of_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget changed: the runs train again under the new key, and the table holds only those (the old
    records stay in results.jsonl), curves and cross-play pairs included."""
    for plot in ("_ratios",):
        monkeypatch.setattr(bl, plot, lambda *args: None)
    drawn: list[int] = []
    monkeypatch.setattr(bl, "_curves", lambda path, chosen, records, preset: drawn.append(len(records)))
    selfplay = dataclasses.replace(toy("toy/s"), cross=bl.Bound(toy_cross, "toy/s"))
    chosen = [selfplay]
    monkeypatch.setattr(bl, "all_baselines", lambda: list(chosen))
    out = tmp_path / "bl"
    bl.run_baselines(out, preset="full", seeds=2)
    chosen[0] = dataclasses.replace(selfplay, budgets={"full": Budget(512, 2)})
    CALLS.clear()
    PAIRS.clear()
    rows = bl.run_baselines(out, preset="full", seeds=2)["rows"]
    assert sorted(CALLS) == [("toy/s", 0), ("toy/s", 10)] and PAIRS == [("seed0", "seed1")]
    assert all(r["seeds"] == 2 for r in rows) and rows[0]["cross_play"] == pytest.approx(0.01)
    assert drawn == [2 + 1 + 1, 2 + 1 + 1]  # the runs, the reference and the pair: now's only
    kinds = [json.loads(line)["kind"] for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(kinds) == 2 * 4  # (the old ones kept)
