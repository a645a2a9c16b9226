"""`eq-env reproduce` (the paper's tables, figure and summary) and `eq-env sweep`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from eq_env.cli import main
from eq_env.core.experiments import ResultsStore
from eq_env.core.sweep import SweepSpec, load_spec_file, parse_value, run_sweep
from eq_env.studies.exchange_audit import paper
from eq_env.studies.exchange_audit.reproduce import (
    TABLE1_COLUMNS,
    TABLE2_COLUMNS,
    ReproduceOptions,
    conditions,
    reproduce,
)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("reproduce")
    return out, reproduce(out, ReproduceOptions(), progress=False)


def test_reproduce_writes_every_file(reproduced: tuple[Path, dict]) -> None:
    out, _ = reproduced
    for name in ("table1.csv", "table1.md", "table1_text_length.csv", "table2.csv", "table2.md",
                 "figure4.png", "results.jsonl", "summary.md"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
    assert (out / "figure4.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    t1 = read_csv(out / "table1.csv")
    assert list(t1[0]) == list(TABLE1_COLUMNS)
    assert [(float(r["q"]), r["regime"]) for r in t1] == [
        (q, g) for q in paper.TABLE1_QS for g in ("artifacts", "action_only")
    ]
    t2 = read_csv(out / "table2.csv")
    assert list(t2[0]) == list(TABLE2_COLUMNS)
    assert {r["scenario"] for r in t2} == set(paper.TABLE2_SCENARIOS)
    assert {r["proposer"] for r in t2} == {"honest", "honest_sincere", "strategic"}
    summary = (out / "summary.md").read_text()
    assert "![Figure 4](figure4.png)" in summary and "## Reading" in summary


def test_table1_artifacts_within_003_of_the_paper_with_gpt41_length_text(reproduced: tuple[Path, dict]) -> None:
    _, result = reproduced
    for row in result["table1"]:
        if row["regime"] == "artifacts":
            assert row["avg_words_mean"] == 18
            assert abs(row["ambiguous_welfare_mean"] - row["paper_ambiguous_welfare_mean"]) <= 0.03, row["q"]
            assert row["ambiguous_approval_mean"] >= 0.96
            assert row["net_gain_ci_low"] > 0


def test_table1_action_only_falls_from_about_ten_percent_to_zero(reproduced: tuple[Path, dict]) -> None:
    _, result = reproduced
    action = [r for r in result["table1"] if r["regime"] == "action_only"]
    assert 0.05 <= action[0]["ambiguous_approval_mean"] <= 0.15  # q = 0
    assert action[-1]["ambiguous_approval_mean"] == 0.0  # q = 1
    rates = [r["ambiguous_approval_mean"] for r in action]
    assert rates == sorted(rates, reverse=True)


def test_summary_states_what_was_measured(reproduced: tuple[Path, dict]) -> None:
    out, result = reproduced
    summary = (out / "summary.md").read_text()
    gap = max(abs(r["ambiguous_welfare_mean"] - r["paper_ambiguous_welfare_mean"])
              for r in result["table1"] if r["regime"] == "artifacts")  # fmt: skip
    assert f"largest gap {gap:.3f}" in summary and "within 0.03" in summary
    temptation = next(r for r in result["table2"] if (r["scenario"], r["proposer"]) == ("temptation", "strategic"))
    assert f"{temptation['bad_approval_mean']:.3f}" in summary


def test_results_records_carry_the_full_configuration(reproduced: tuple[Path, dict]) -> None:
    out, _ = reproduced
    records = ResultsStore(out / "results.jsonl").load()
    conds = conditions(ReproduceOptions())
    assert len(conds) == 6 * 2 + 6 + 6 * 3
    # identical experiments (Table 2's baseline and full audit; Table 1 at q = 0.3) run once
    assert len(records) == len({c.key for c in conds}) * 5 < len(conds) * 5
    assert (out / "results.jsonl").read_text().count("\n") == len(records)  # and are written once
    r = next(iter(records.values()))
    assert set(r) >= {"config", "env", "policies", "seed", "episodes", "metrics", "labels", "engine"}
    assert set(r["policies"]) == {"proposer", "validator"}
    assert r["config"]["reveal_compliance"] is True


def test_reproduce_again_resumes_and_gives_identical_tables(reproduced: tuple[Path, dict]) -> None:
    out, result = reproduced
    before = (out / "table1.csv").read_text(), (out / "table2.csv").read_text()
    again = reproduce(out, ReproduceOptions(), progress=False)
    assert ((out / "table1.csv").read_text(), (out / "table2.csv").read_text()) == before
    assert again["table1"] == result["table1"]


@pytest.mark.slow
def test_reproduce_through_the_aec_engine_matches(tmp_path: Path) -> None:
    opts = ReproduceOptions(seeds=2, episodes=60)
    batch = reproduce(tmp_path / "b", opts, progress=False)
    aec = reproduce(tmp_path / "a", ReproduceOptions(seeds=2, episodes=60, engine="aec"), progress=False)
    assert batch["table1"] == aec["table1"] and batch["table2"] == aec["table2"]


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_summary_under_other_options_says_only_what_holds(tmp_path: Path) -> None:
    reproduce(tmp_path, ReproduceOptions(seeds=1, episodes=30, words=0), progress=False)
    summary = (tmp_path / "summary.md").read_text()
    assert "nan" not in summary
    assert "Writing 0 words (GPT-4.1 averaged about 17–18" in summary
    assert "the intervals need at least two seeds" in summary
    assert "0.26 less than with 0 words" in summary
    assert "--seeds 1 --episodes 30 --words 0" in summary
    reproduce(tmp_path, ReproduceOptions(seeds=1, episodes=30, words=13), progress=False)
    assert not (tmp_path / "table1_text_length.csv").exists()  # the stale file is gone
    assert "table1_text_length" not in (tmp_path / "summary.md").read_text()


def test_rerun_one_record(reproduced: tuple[Path, dict], capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = reproduced
    key = next(iter(ResultsStore(out / "results.jsonl").load()))
    assert main(["rerun", str(out / "results.jsonl"), key, "--engine", "aec"]) == 0
    printed = capsys.readouterr().out
    assert "identical" in printed and "engine aec (recorded: batch)" in printed
    assert main(["rerun", str(out / "results.jsonl"), "nope/0"]) == 2
    assert "no record with key 'nope/0'" in capsys.readouterr().err


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_reproduce_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--out", str(tmp_path), "--seeds", "2", "--episodes", "50", "--words", "13"]) == 0
    out = capsys.readouterr().out
    assert "net gain" in out and "wrote" in out
    assert not (tmp_path / "table1_text_length.csv").exists()  # 13 words is the paper's script already
    with pytest.raises(SystemExit, match="2"):  # refused while parsing the flags
        main(["reproduce", "--out", str(tmp_path), "--words", "61"])
    assert "--words: expected an integer in [0, 60]" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# Sweeps
# ---------------------------------------------------------------------------
TOML = """
preset = "paper_scripted"
seeds = 2
episodes = 80
proposers = ["honest:claims_from=truth", "strategic:trigger=payoff,claims_from=truth"]

[set]
L = 1.0

[grid]
q = [0.0, 0.5]
V = [1.0, 2.0]
"""


def test_spec_files_in_every_format(tmp_path: Path) -> None:
    data = {"preset": "paper", "seeds": [3, 4], "episodes": 10, "grid": {"q": [0.1, 0.2]}, "proposers": "silent"}
    (tmp_path / "s.json").write_text(json.dumps(data))
    (tmp_path / "s.yaml").write_text(
        "preset: paper\nseeds: [3, 4]\nepisodes: 10\ngrid:\n  q: [0.1, 0.2]\nproposers: silent\n"
    )
    (tmp_path / "s.toml").write_text(
        'preset = "paper"\nseeds = [3, 4]\nepisodes = 10\nproposers = "silent"\n[grid]\nq = [0.1, 0.2]\n'
    )
    specs = [SweepSpec.from_mapping(load_spec_file(tmp_path / f"s.{ext}")) for ext in ("json", "yaml", "toml")]
    assert specs[0] == specs[1] == specs[2]
    assert specs[0].seeds == [3, 4] and specs[0].policies["proposer"] == ["silent"]
    assert len(specs[0].conditions()) == 2


@pytest.mark.parametrize(
    "data, match",
    [
        ({"grd": {}}, r"unknown key\(s\) \['grd'\]"),
        ({"grid": {"q": [1.5]}}, r"q must be a number in \[0, 1\]"),
        ({"grid": {"qq": [0.1]}}, r"unknown exchange-audit parameter"),
        ({"grid": {"q": []}}, "has no values"),
        ({"set": {"q": 0.1}, "grid": {"q": [0.2]}}, "both fixed"),
        ({"proposers": ["oracle"]}, "unknown policy"),
        ({"seeds": "five"}, "seeds must be"),
        ({"seeds": [1, 1]}, "seeds repeat"),
        ({"seeds": [1, 2], "first_seed": 3}, "first_seed goes with a count"),
        ({"proposers": []}, "at least one proposer"),
        ({"set": 3}, "set must be a table"),
        ({"engine": "gpu"}, "engine must be"),
        ({"preset": "gpt"}, "unknown preset"),
    ],
)
def test_bad_specs_are_named(data: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SweepSpec.from_mapping(data)


def test_spec_must_be_a_mapping() -> None:
    with pytest.raises(ValueError, match="must be a mapping"):
        SweepSpec.from_mapping([1, 2])  # type: ignore[arg-type]


def test_budget_all_in_a_spec_file(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text('seeds = 1\nepisodes = 10\n[grid]\nB = [1, "all"]\n')
    spec = SweepSpec.from_mapping(load_spec_file(tmp_path / "s.toml"))
    assert [c.config.B for c in spec.conditions()] == [1, None]
    rows = run_sweep(spec, tmp_path / "out", progress=False)
    assert [r["B"] for r in rows] == [1, "none"]
    assert read_csv(tmp_path / "out" / "summary.csv")[1]["B"] == "none"


def test_parse_value() -> None:
    assert [parse_value(x) for x in ("2", "0.5", "true", "all", "honest")] == [2, 0.5, True, None, "honest"]


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_sweep_from_file_and_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec_file = tmp_path / "sweep.toml"
    spec_file.write_text(TOML)
    out = tmp_path / "out"
    assert main(["sweep", "--config", str(spec_file), "--out", str(out), "--grid", "B=1,4"]) == 0
    assert "16 conditions x 2 seeds" in capsys.readouterr().out
    rows = read_csv(out / "summary.csv")
    assert len(rows) == 16 and {r["B"] for r in rows} == {"1", "4"}
    for name in ("results.jsonl", "summary.md", "paired.csv", "sweep.png", "sweep.json"):
        assert (out / name).exists(), name
    assert json.loads((out / "sweep.json").read_text())["grid"]["B"] == [1, 4]
    paired = read_csv(out / "paired.csv")
    assert len(paired) == 15 * 13 and {"difference", "ci_low", "ci_high"} <= set(paired[0])
    # the strategic proposer lies under temptation at q = 0: more bad approvals than the honest one
    tempted = [r for r in rows if r["q"] == "0.0" and r["V"] == "2.0" and r["proposer"].startswith("strategic")]
    assert all(float(r["bad_approval_rate_mean"]) > 0.1 for r in tempted)


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_sweep_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "--out", str(tmp_path), "--grid", "q"]) == 2
    assert "--grid expects NAME=VALUE" in capsys.readouterr().err
    assert main(["sweep", "--out", str(tmp_path), "--grid", "q=0,2"]) == 2
    assert "q must be a number in [0, 1], got 2" in capsys.readouterr().err
    assert main(["sweep", "--out", str(tmp_path), "--config", str(tmp_path / "missing.toml")]) == 2
    assert main(["sweep", "--out", str(tmp_path), "--metrics", "happiness"]) == 2
    assert "unknown metric" in capsys.readouterr().err


def test_run_sweep_plot_x_must_be_a_grid_parameter_checked_before_running(tmp_path: Path) -> None:
    spec = SweepSpec.from_mapping({"grid": {"q": [0.0, 1.0]}, "seeds": 1, "episodes": 10})
    with pytest.raises(ValueError, match="plot x 'V' is not a grid parameter"):
        run_sweep(spec, tmp_path, plot_x="V", progress=False)
    assert not (tmp_path / "results.jsonl").exists()


def test_sweep_over_policies_only_plots_categories(tmp_path: Path) -> None:
    spec = SweepSpec.from_mapping({"proposers": ["honest", "silent"], "validators": ["rule", "approve"],
                                   "seeds": 2, "episodes": 20})  # fmt: skip
    run_sweep(spec, tmp_path, progress=False)
    assert (tmp_path / "sweep.png").stat().st_size > 0


@pytest.mark.slow  # (over a quarter of a second: the fast run stays under a minute)
def test_the_summary_quotes_the_configuration_it_ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eq_env.exchange_audit.config import ExchangeAuditConfig

    changed = ExchangeAuditConfig.PRESETS["paper_scripted"].replace(
        alpha=0.03, audit_cost=0.2, safe_margin=0.04, no_trade_payoff=1.5
    )
    monkeypatch.setitem(ExchangeAuditConfig.PRESETS, "paper_scripted", changed)  # type: ignore[index]
    reproduce(tmp_path, ReproduceOptions(seeds=2, episodes=40), progress=False)
    summary = (tmp_path / "summary.md").read_text()
    for said in ("2 − 0.03·words − 0.2·(audit rate)", "α = 0.03 per word", "more than 0.04 inside both limits",
                 "NO_TRADE welfare of 3", "> 1.5 (the NO_TRADE payoff)"):  # fmt: skip
        assert said in summary, said
    assert "0.02·words" not in summary and "payoff of 2" not in summary


# "my validator" (here approve) against rule, at two audit intensities
SWEEP_MINE_AND_RULE = ["sweep", "--grid", "q=0.1,0.5", "--proposer", "strategic", "--validator", "approve"]
SWEEP_MINE_AND_RULE += ["--validator", "rule"]


@pytest.mark.slow  # (most of a second)
def test_sweep_baseline_gives_each_cell_its_own_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--baseline validator=rule``: "approve − rule" at each q, seed by seed, as the per-seed rows give it
    (the default compared every condition with the first, q=0.1 with rule, so q=0.5 approve − q=0.1 rule)."""
    out = tmp_path / "out"
    flags = [*SWEEP_MINE_AND_RULE, "--seeds", "3", "--episodes", "30"]
    assert main([*flags, "--baseline", "validator=rule", "--out", str(out)]) == 0
    assert "same cell with validator=rule" in capsys.readouterr().out
    per_seed: dict[tuple[str, str], dict[int, float]] = {}
    for r in ResultsStore(out / "results.jsonl").load().values():
        per_seed.setdefault((str(r["labels"]["q"]), r["labels"]["validator"]), {})[r["seed"]] = r["metrics"]["welfare"]
    paired = {(r["q"], r["validator"]): r for r in read_csv(out / "paired.csv") if r["metric"] == "welfare"}
    assert set(paired) == {("0.1", "approve"), ("0.5", "approve")}  # (no row for rule against itself)
    for q in ("0.1", "0.5"):
        mine, rule = per_seed[(q, "approve")], per_seed[(q, "rule")]
        by_hand = sum(mine[s] - rule[s] for s in (0, 1, 2)) / 3
        assert float(paired[(q, "approve")]["difference"]) == pytest.approx(by_hand, abs=1e-8)
        assert paired[(q, "approve")]["seeds"] == "3"
    assert by_hand != 0  # (q=0.5: the rule's audits block lies that approve lets through)
    summary = (out / "summary.md").read_text()
    assert "## Paired differences" in summary and "| 0.5 | approve |" in summary.partition("## Paired")[2]


LISTED = "its conditions: q=0.1 | 0.5; proposer=strategic; validator=approve | rule"


@pytest.mark.parametrize(
    ("baseline", "message"),
    [
        ("validator=rulez", f"--baseline validator=rulez names no condition of this sweep; {LISTED}"),
        ("q=0.3", "--baseline q=0.3 names no condition"),
        ("happiness=1", "--baseline happiness=1 names no condition"),
        # (it was accepted, and summary.md pointed at a paired.csv of its header alone)
        (
            "proposer=strategic",
            "--baseline proposer=strategic: every condition has proposer=strategic, so it compares "
            f"nothing; name a dimension with several values ({LISTED})",
        ),
    ],
)
def test_sweep_baseline_naming_no_condition_is_one_line_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], baseline: str, message: str
) -> None:
    flags = [*SWEEP_MINE_AND_RULE, "--seeds", "1", "--episodes", "5", "--baseline", baseline]
    assert main([*flags, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_sweep_metrics_given_twice_are_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # (welfare,welfare gave summary.md a duplicated column)
    argv = [*SWEEP_MINE_AND_RULE, "--seeds", "1", "--episodes", "5", "--metrics", "welfare,welfare"]
    with pytest.raises(SystemExit) as exit_:  # (refused while parsing the flags)
        main([*argv, "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        "eq-env sweep: error: argument --metrics: expected distinct metric names, got 'welfare,welfare' "
        "(see eq-env sweep --help)\n"
    )
    assert not (tmp_path / "out").exists()


SWEEP_FILE = 'proposers = ["strategic"]\nvalidators = ["approve", "rule"]\n[grid]\nq = [0.1, 0.5]\n'


@pytest.mark.parametrize(
    ("baseline", "flags", "said"),
    [
        ('"validator=rule"', [], "same cell with validator=rule"),
        ('["validator=rule"]', [], "same cell with validator=rule"),
        ('"validator=rulez"', ["--baseline", "validator=rule"], "same cell with validator=rule"),  # the flag wins
        ('"validator=rule"', ["--baseline", "q=0.1"], "same cell with q=0.1"),
        ('"validator=rulez"', [], "s.toml: baseline validator=rulez names no condition of this sweep; " + LISTED),
        ("3", [], "s.toml: baseline must be a NAME=VALUE string or a list of them (e.g. 'validator=rule'), got 3"),
        ('"proposer=strategic"', [], "s.toml: baseline proposer=strategic: every condition has proposer=strategic"),
    ],
)
def test_a_sweep_file_names_its_baseline_and_the_flag_overrides_it(
    baseline: str, flags: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (a file's baseline was refused: "unknown key(s) ['baseline']")
    (tmp_path / "s.toml").write_text(f"baseline = {baseline}\n{SWEEP_FILE}")
    argv = ["sweep", "--config", str(tmp_path / "s.toml"), "--seeds", "1", "--episodes", "5", *flags]
    status = main([*argv, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    if said.startswith("same cell"):
        assert (status, err) == (0, "")
        assert said in (tmp_path / "out" / "summary.md").read_text()
    else:
        assert status == 2 and err.startswith(f"eq-env sweep: error: {tmp_path / 's.toml'}: baseline ")
        assert said.removeprefix("s.toml: ") in err and len(err.splitlines()) == 1
        assert not (tmp_path / "out").exists()


def test_a_sweep_of_one_condition_says_it_has_no_paired_differences(tmp_path: Path) -> None:
    # (summary.md said "Paired differences ... are in paired.csv", which held its header alone)
    assert main(["sweep", "--seeds", "1", "--episodes", "3", "--out", str(tmp_path)]) == 0
    summary = (tmp_path / "summary.md").read_text()
    assert "Paired differences need two conditions; this sweep has one (`paired.csv` holds its header only)." in summary
    assert "are in `paired.csv`" not in summary and len(read_csv(tmp_path / "paired.csv")) == 0
