"""Bad input: one clear line naming the flag, field or file (and line), exit status 2; never a traceback.

Each test here was written against a defect and failed before its fix.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest

from eq_env import exchange_audit_v0
from eq_env.cli import build_parser, main
from eq_env.core.experiments import EpisodeStore, ResultsStore
from eq_env.core.report import cell, label, mean_std
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.runner import EpisodeRecord, episode_from_dict, evaluate, play

ROOT = Path(__file__).resolve().parents[2]
HUGE = "1" * 400  # an integer no float can hold


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``eq-env argv`` (argparse's errors exit through SystemExit)."""
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    return status, out, err


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str, parse_only: bool = False) -> str:
    """Run ``argv`` (or only parse it); check it exits 2 with one line on stderr holding every needle; return
    that line."""
    if parse_only:  # refused at parse time: nothing may run (a command that did would take minutes)
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args(argv)
        status, err = exit_.value.code, capsys.readouterr().err
    else:
        status, _, err = run(argv, capsys)
    line = err.strip()
    assert status == 2, (argv, status, err)
    assert "Traceback" not in err and "\n" not in line, err
    for needle in needles:
        assert needle in line, (needle, line)
    return line


# ---------------------------------------------------------------------------
# 7. numbers no float holds, spec files that are not mappings or do not parse
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("field", ["q", "V", "alpha", "risk_limit_low"])
def test_a_huge_integer_for_a_float_field_is_a_value_error_naming_it(field: str) -> None:
    with pytest.raises(ValueError, match=rf"^{field} must be a number in "):
        ExchangeAuditConfig(**{field: int(HUGE)})
    with pytest.raises(ValueError, match=rf"^{field} must be"):
        ExchangeAuditConfig().replace(**{field: -int(HUGE)})


@pytest.mark.parametrize("flag, value", [("--grid", f"V={HUGE}"), ("--set", f"q={HUGE}"), ("--grid", f"q=0,{HUGE}")])
def test_sweep_refuses_a_huge_integer(
    flag: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", "--out", str(tmp_path), flag, value, "--seeds", "1", "--episodes", "5"]
    line = refused(argv, capsys, "must be a number", "an integer of 400 digits")
    assert len(line) < 200  # the number is shortened, not printed in full


def test_play_refuses_a_huge_integer_for_an_integer_field(capsys: pytest.CaptureFixture[str]) -> None:
    refused(["play", "--max-words", HUGE], capsys, "--max-words", "max_words must be an integer in [0, 10000]")


@pytest.mark.parametrize(
    "name, text, needles",
    [
        ("list.json", "[1, 2]", ("list.json", "mapping")),
        ("scalar.yaml", "3\n", ("scalar.yaml", "mapping")),
        ("broken.yaml", "grid:\n  q: [0, 1\nseeds: 2\n", ("broken.yaml:", "YAML")),
        ("broken.json", '{\n  "grid": {"q": [0, 1]},\n  "seeds": \n}\n', ("broken.json:4", "JSON")),
        ("broken.toml", "seeds = 2\n[grid\nq = [0, 1]\n", ("broken.toml:2", "TOML")),
        ("binary.toml", "\udcff", ("binary.toml", "UTF-8")),
    ],
)
def test_spec_files_that_do_not_hold_a_spec_are_named(
    name: str, text: str, needles: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    refused(["sweep", "--out", str(tmp_path / "o"), "--config", str(path)], capsys, *needles)


def test_a_yaml_syntax_error_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("seeds: 2\ngrid:\n  q: [0, 1\nepisodes: 10\n")
    line = refused(["sweep", "--out", str(tmp_path / "o"), "--config", str(path)], capsys, str(path))
    assert re.search(r"s\.yaml:[34]\b", line), line  # where the parser noticed the open bracket


# ---------------------------------------------------------------------------
# 8. results and episode files: a complete line that is not a record is named by file and line
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("last", ["123", "null", '"text"', "[1, 2]", '{"v": 1}', '{"key": 5}'])
def test_a_complete_last_line_that_is_not_a_run_record_is_named(last: str, tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"key": "a/0"}\n{"key": "a/1"}\n' + last + "\n")
    with pytest.raises(ValueError, match=r"results\.jsonl:3 is not a run record") as err:
        ResultsStore(path).load()
    assert "key" in str(err.value)
    assert path.read_text().count("\n") == 3  # nothing was cut: a complete line is no torn write


def test_a_torn_last_line_is_still_dropped_and_cut(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"key": "a/0"}\n123')  # a kill mid-write: no newline at the end
    assert set(ResultsStore(path).load()) == {"a/0"}
    assert path.read_text() == '{"key": "a/0"}\n'


def test_rerun_names_the_line_of_a_bad_results_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"key": "a/0"}\nnull\n')
    refused(["rerun", str(path), "a/0"], capsys, "results.jsonl:2", "not a run record")


def episode_dict(**changes: Any) -> dict[str, Any]:
    record = play(ExchangeAuditConfig(), "honest", "rule", episodes=1, seed=0)[0]
    return {**record.to_dict(), **changes}


@pytest.mark.parametrize(
    "changes, needle",
    [
        ({"episode": "nine"}, "episode must be a non-negative integer, got 'nine'"),
        ({"seed": -1}, "seed must be a non-negative integer, got -1"),
        ({"approved": "yes"}, "approved must be true or false, got 'yes'"),
        ({"welfare": "high"}, "welfare must be a number, got 'high'"),
        ({"audit_checked": "intent"}, "audit_checked must be a list of strings"),
        ({"claim_intent": 3}, "claim_intent must be a string or null, got 3"),
        ({"proposer_info": [1]}, "proposer_info must be an object or null"),
    ],
)
def test_episode_records_name_the_bad_field(changes: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=re.escape(needle)):
        EpisodeRecord.from_dict(episode_dict(**changes))
    with pytest.raises(ValueError, match=re.escape(needle)):
        episode_from_dict(episode_dict(**changes))


def test_episode_records_name_a_missing_field_and_failed_ones_are_checked_too() -> None:
    data = episode_dict()
    del data["welfare"]
    with pytest.raises(ValueError, match="missing field 'welfare'"):
        EpisodeRecord.from_dict(data)
    with pytest.raises(ValueError, match="episode must be a non-negative integer, got 'nine'"):
        episode_from_dict({"failed": True, "seed": 0, "episode": "nine", "role": "proposer", "error": "x"})
    with pytest.raises(ValueError, match="missing field 'error'"):
        episode_from_dict({"failed": True, "seed": 0, "episode": 1, "role": "proposer"})
    with pytest.raises(ValueError, match="an episode record must be a JSON object, got 3"):
        episode_from_dict(3)  # type: ignore[arg-type]
    assert episode_from_dict(episode_dict()) == EpisodeRecord.from_dict(episode_dict())  # good ones still load


@pytest.mark.parametrize("bad", [{"episode": "nine"}, {"welfare": None}])
def test_an_episode_file_names_its_bad_line(bad: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "episodes" / "c-0.jsonl"
    store = EpisodeStore(path)
    store.append(EpisodeRecord.from_dict(episode_dict()))
    with path.open("a") as fh:
        fh.write(json.dumps({"key": "9", **episode_dict(**bad)}) + "\n")
    with pytest.raises(ValueError, match=rf"c-0\.jsonl:2: .*{next(iter(bad))}"):
        store.load()


def test_an_episode_file_line_without_a_key_is_not_silently_dropped(tmp_path: Path) -> None:
    path = tmp_path / "c-0.jsonl"
    path.write_text('{"episode": "nine"}\n')
    with pytest.raises(ValueError, match=r"c-0\.jsonl:1 is not a run record"):
        EpisodeStore(path).load()


# ---------------------------------------------------------------------------
# 10. an empty output path
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "--out", ""],
        ["sweep", "--out", ""],
        ["train", "--role", "proposer", "--out", ""],
        ["selfplay", "--out", " "],
        ["frontier", "--out", "", "--no-ppo"],
        ["noisy-audits", "--out", ""],
        ["play", "--records", ""],
        ["sweep", "--out", "x", "--config", ""],
        ["rerun", "", "a/0"],
    ],
)
def test_an_empty_path_is_refused(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    flag = next((a for a in argv if a.startswith("--") and argv[argv.index(a) + 1].strip() == ""), "results")
    refused(argv, capsys, flag, "empty", parse_only=True)
    assert list(tmp_path.iterdir()) == []  # nothing written into the current directory


# ---------------------------------------------------------------------------
# 13. every numeric flag, refused at parse time with the flag named
# ---------------------------------------------------------------------------
OUT = "never_written"
BAD_FLAGS = [
    (["play"], "--episodes", "0"),
    (["play"], "--episodes", "-3"),
    (["play"], "--episodes", "100000000000"),
    (["play"], "--seeds", "0"),
    (["play"], "--seed", "-1"),
    (["play"], "--seed", "1.5"),
    (["play"], "--seed", "99999999999999"),
    (["play"], "--q", "nan"),
    (["play"], "--q", "1e400"),
    (["play"], "--V", "-1"),
    (["play"], "--B", "-2"),
    (["play"], "--max-text-chars", "0"),
    (["reproduce", "--out", OUT], "--seeds", "0"),
    (["reproduce", "--out", OUT], "--first-seed", "-1"),
    (["reproduce", "--out", OUT], "--episodes", "0"),
    (["reproduce", "--out", OUT], "--words", "61"),
    (["reproduce", "--out", OUT], "--words", "-1"),
    (["reproduce", "--out", OUT], "--jobs", "0"),
    (["reproduce", "--out", OUT], "--jobs", "1000000"),
    (["sweep", "--out", OUT], "--seeds", "0"),
    (["sweep", "--out", OUT], "--first-seed", "-1"),
    (["sweep", "--out", OUT], "--episodes", "-5"),
    (["sweep", "--out", OUT], "--jobs", "0"),
    (["train", "--role", "proposer", "--out", OUT], "--timesteps", "10"),
    (["train", "--role", "proposer", "--out", OUT], "--timesteps", "-1"),
    (["train", "--role", "proposer", "--out", OUT], "--n-envs", "٤"),
    (["train", "--role", "proposer", "--out", OUT], "--n-envs", "99999"),
    (["train", "--role", "proposer", "--out", OUT], "--seed", "-1"),
    (["train", "--role", "proposer", "--out", OUT], "--eval-episodes", "0"),
    (["train", "--role", "proposer", "--out", OUT], "--q-values", ""),
    (["train", "--role", "proposer", "--out", OUT], "--q-values", "0.1,2"),
    (["train", "--role", "proposer", "--out", OUT], "--q-values", "nan"),
    (["train", "--role", "proposer", "--out", OUT], "--eval-seeds", ""),
    (["train", "--role", "proposer", "--out", OUT], "--eval-seeds", "1000,-1"),
    (["train", "--role", "proposer", "--out", OUT], "--eval-seeds", "1.5"),
    (["selfplay", "--out", OUT], "--rounds", "0"),
    (["selfplay", "--out", OUT], "--rounds", "100000"),
    (["selfplay", "--out", OUT], "--timesteps", "-1"),
    (["selfplay", "--out", OUT], "--seed", "-1"),
    (["equilibrium"], "--episodes", "-10"),
    (["equilibrium"], "--episodes", "0"),
    (["equilibrium"], "--episodes", "3"),
    (["equilibrium"], "--seed", "-1"),
    (["frontier", "--out", OUT], "--qs", ""),
    (["frontier", "--out", OUT], "--qs", "0.1,2"),
    (["frontier", "--out", OUT], "--qs", "0.1,x"),
    (["frontier", "--out", OUT], "--qs", "0.1,0.1"),
    (["frontier", "--out", OUT], "--episodes", "0"),
    (["frontier", "--out", OUT], "--timesteps", "0"),
    (["frontier", "--out", OUT], "--seed", "-1"),
    (["noisy-audits", "--out", OUT], "--noise", ""),
    (["noisy-audits", "--out", OUT], "--noise", "0.1"),
    (["noisy-audits", "--out", OUT], "--noise", "0.1:1.5"),
    (["noisy-audits", "--out", OUT], "--noise", "0:0,0:0"),
    (["noisy-audits", "--out", OUT], "--qs", "0.1,2"),
    (["noisy-audits", "--out", OUT], "--q", "nan"),
    (["noisy-audits", "--out", OUT], "--V", "-1"),
    (["noisy-audits", "--out", OUT], "--episodes", "0"),
    # the LLM flags
    (["play"], "--model", ""),
    (["play"], "--temperature", "-5"),
    (["play"], "--temperature", "nan"),
    (["play"], "--temperature", "2.5"),
    (["play"], "--max-tokens", "0"),
    (["play"], "--max-tokens", "100000000000"),
    (["play"], "--llm-seed", "-1"),
    (["play"], "--max-reasks", "-1"),
    (["play"], "--concurrency", "0"),
    (["play"], "--concurrency", "100000"),
    (["reproduce", "--out", OUT], "--max-retries", "-1"),
    (["reproduce", "--out", OUT], "--max-retries", "1000"),
    (["reproduce", "--out", OUT], "--backoff", "-1"),
    (["reproduce", "--out", OUT], "--backoff", "inf"),
    (["reproduce", "--out", OUT], "--timeout", "0"),
    (["sweep", "--out", OUT], "--price-prompt", "-1"),
    (["sweep", "--out", OUT], "--price-completion", "nan"),
    (["sweep", "--out", OUT], "--cache-dir", " "),
    (["play"], "--base-url", ""),
    (["play"], "--base-url", "http://[::1"),
    (["reproduce", "--out", OUT], "--base-url", "localhost:8000/v1"),
]


@pytest.mark.parametrize("command, flag, value", BAD_FLAGS, ids=[f"{c[0]} {f} {v!r}" for c, f, v in BAD_FLAGS])
def test_numeric_flags_are_refused_at_parse_time(
    command: list[str],
    flag: str,
    value: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    line = refused([*command, f"{flag}={value}"], capsys, f"argument {flag}", parse_only=True)
    assert command[0] in line
    assert list(tmp_path.iterdir()) == []  # refused before anything ran


def test_sb3_without_a_path_says_how_to_give_it(capsys: pytest.CaptureFixture[str]) -> None:
    refused(["play", "--proposer", "sb3"], capsys, "policy 'sb3' needs path=", "sb3:path=")


def test_policies_shows_a_required_parameter_as_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    assert "inspect._empty" not in out and "path (required)" in out


def test_sweep_set_preset_points_to_the_preset_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refused(["sweep", "--out", str(tmp_path), "--set", "preset=paper"], capsys, "preset", "--preset")
    refused(["sweep", "--out", str(tmp_path), "--grid", "preset=paper,paper_scripted"], capsys, "preset", "--preset")
    with pytest.raises(ValueError, match=r"unknown exchange-audit parameter\(s\) \['preset'\]"):
        ExchangeAuditConfig.from_preset("paper", **{"preset": "paper_scripted"})


@pytest.mark.parametrize(
    "text, needle",
    [
        ("grid: [1, 2]\n", "grid must be a table"),
        ("set: [1, 2]\n", "set must be a table"),
        ("grid: 3\n", "grid must be a table"),
        ("episodes: ten\n", "episodes must be a positive integer"),
        ("engine: 3\n", "engine must be one of"),
        ("proposers: 3\n", "proposers must be"),
        ("preset: [1]\n", "preset"),
    ],
)
def test_sweep_spec_file_types_are_checked(
    text: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    refused(["sweep", "--out", str(tmp_path / "o"), "--config", str(path)], capsys, "s.yaml", needle)


def test_env_refuses_a_config_with_a_preset() -> None:
    with pytest.raises(ValueError, match=r"config.*preset"):
        exchange_audit_v0.env(config=ExchangeAuditConfig(q=0.5), preset="paper_scripted")
    with pytest.raises(ValueError, match=r"config.*preset"):
        exchange_audit_v0.parallel_env(config=ExchangeAuditConfig(q=0.5), preset="paper")
    # either alone is fine, and a config takes overrides
    assert exchange_audit_v0.env(config=ExchangeAuditConfig(q=0.5), B=2).unwrapped.config.B == 2
    assert exchange_audit_v0.env(preset="paper_scripted").unwrapped.config.reveal_compliance


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"episodes": 0, "seeds": [0]}, "episodes must be a positive integer, got 0"),
        ({"episodes": True, "seeds": [0]}, "episodes must be a positive integer, got True"),
        ({"episodes": 5, "seeds": []}, "a non-empty sequence of distinct non-negative integers, got none"),
        ({"episodes": 5, "seeds": [-1]}, "non-negative integers, got -1"),
        ({"episodes": 5, "seeds": [0.5]}, "non-negative integers, got 0.5"),
    ],
)
def test_evaluate_refuses_nothing_to_measure(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=re.escape(needle)):
        evaluate(ExchangeAuditConfig(), "honest", "rule", **kwargs)


def test_records_path_is_checked_before_playing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    refused(["play", "--records", str(tmp_path / "file" / "x.jsonl")], capsys, "--records", "file", parse_only=True)
    refused(["play", "--records", str(tmp_path)], capsys, "--records", "is a directory", parse_only=True)
    # where no directory can be made (a user's /missing/dir: / is not theirs), say so before the run, not after
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == tmp_path else real_access(p, mode))
    refused(["play", "--records", str(tmp_path / "missing" / "x.jsonl")], capsys, "--records", "permission denied",
            parse_only=True)  # fmt: skip
    assert not (tmp_path / "missing").exists()
    monkeypatch.undo()
    # where one can, missing directories are made, as for --out, once the run is over
    target = tmp_path / "missing" / "dir" / "x.jsonl"
    assert main(["play", "--episodes", "5", "--records", str(target), "--json"]) == 0
    assert len(target.read_text().splitlines()) == 5


# ---------------------------------------------------------------------------
# 14. output that misleads
# ---------------------------------------------------------------------------
def test_negative_zero_prints_as_zero() -> None:
    from eq_env.core.report import no_negative_zeros

    assert mean_std(-0.001, 0.04) == "0.00 ± 0.04"
    assert mean_std(-0.004, -0.0) == "0.00 ± 0.00"
    assert mean_std(-0.006, 0.04) == "-0.01 ± 0.04"
    assert cell(-0.0001) == "0.000" and cell(-0.0) == "0.000"
    assert label(-0.0) == "0"
    assert mean_std(math.nan, 0.1) == "—"
    table = "metric  mean  std\n------  ----  ---\nw     -0.000  -0.0001\nx     -1.000  0.002"
    assert no_negative_zeros(table) == table.replace("w     -0.000", "w      0.000")  # same width


def test_readme_table1_has_no_negative_zero() -> None:
    readme = (ROOT / "docs" / "guide" / "exchange-audit.md").read_text()
    table = readme[readme.index("Ambiguous welfare (mean ± std over seeds)") :].split("\n\n")[1]
    assert "-0.00" not in table and "| 0.00 ± 0.04 |" in table


def test_readme_play_command_prints_table1s_row(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (ROOT / "docs" / "guide" / "exchange-audit.md").read_text()
    section = readme[readme.index("Ambiguous welfare (mean ± std over seeds)") :]
    command = re.search(r"`eq-env (play [^`]*)`", section)
    assert command, "the README names the play command for a Table 1 row"
    argv = command.group(1).split()
    q = argv[argv.index("--q") + 1]
    row = next(r for r in section.splitlines() if r.startswith(f"| {float(q):.1f} |"))
    expected = row.split("|")[2].strip()  # artifacts (ours): "1.61 ± 0.00"
    assert main([*argv, "--json"]) == 0
    metric = json.loads(capsys.readouterr().out)["metrics"]["ambiguous_welfare"]
    assert mean_std(metric["mean"], metric["std"]) == expected


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_frontier_without_ppo_says_nothing_of_ppo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eq_env.studies.exchange_audit import frontier as frontier_module

    plotted: list[Any] = []
    monkeypatch.setattr(frontier_module, "plot_lines", lambda path, panels, **kw: plotted.extend(panels))
    scenarios = (frontier_module.Scenario("temptation", 2.0, 1.0, 4),)
    summary = frontier_module.frontier(tmp_path, scenarios=scenarios, qs=(0.0, 0.6), episodes=400, train_ppo=False,
                                       progress=False)  # fmt: skip
    text = (tmp_path / "frontier.md").read_text()
    assert "PPO" not in text and "ppo" not in "".join(summary[0])
    assert plotted and all(s["label"] != "PPO" for p in plotted for s in p["series"])
    for name in ("frontier.csv", "frontier_summary.csv"):
        assert "ppo" not in (tmp_path / name).read_text().splitlines()[0]


def test_frontier_without_sb3_says_so_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Found by a new user: in the ray extra's environment (no SB3) the frontier computed every point, then died
    on the PPO column's import with a traceback."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "stable_baselines3"
                        else real(name, *a))  # fmt: skip
    status, _, err = run(["frontier", "--out", str(tmp_path / "f")], capsys)
    assert status == 2 and "pip install 'eq-env[rl]', or leave PPO out with --no-ppo" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "f").exists()


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_equilibrium_says_never_instead_of_inf_and_no_false_threshold(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(["equilibrium", "--episodes", "400", "--B", "0"], capsys)
    assert status == 0
    assert "inf" not in out and "q < 0.000" not in out
    assert "eq. 3 never deters a one-claim lie" in out and "never pays" in out
    status, out, _ = run(["equilibrium", "--episodes", "400", "--V", "2", "--L", "1", "--B", "1"], capsys)
    assert status == 0 and "pays while q < 0.500" in out


def test_best_response_summaries_say_when_there_are_too_few_episodes_for_an_interval() -> None:
    from eq_env.exchange_audit.equilibrium import proposer_best_response, validator_best_response

    for summary in (proposer_best_response(ExchangeAuditConfig(), episodes=2).summary(),
                    validator_best_response(ExchangeAuditConfig(), episodes=2).summary()):  # fmt: skip
        assert "nan" not in summary and "no 95% CI" in summary


# ---------------------------------------------------------------------------
# 15. feedback on long work
# ---------------------------------------------------------------------------
@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_equilibrium_shows_progress_bars(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from eq_env.exchange_audit import equilibrium

    seen: list[Any] = []
    for name in ("proposer_best_response", "validator_best_response"):
        real = getattr(equilibrium, name)

        def spy(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            seen.append(kwargs.get("progress", "missing"))
            return _real(*args, **kwargs)

        monkeypatch.setattr(equilibrium, name, spy)
    assert main(["equilibrium", "--episodes", "100"]) == 0
    assert seen == [None, None]  # the CLI's convention: a bar on a terminal
    capsys.readouterr()
    equilibrium.proposer_best_response(ExchangeAuditConfig(), episodes=100, progress=True)
    equilibrium.validator_best_response(ExchangeAuditConfig(), episodes=100, progress=True)
    err = capsys.readouterr().err
    assert "648/648" in err and "validator best response" in err


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_train_bar_ends_at_its_total_and_evaluation_shows_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eq_env.baselines.exchange_audit.rl import train

    train("proposer", tmp_path, timesteps=200, seed=0, eval_episodes=20, eval_seeds=(1000,), progress=True)
    err = capsys.readouterr().err
    counts = re.findall(r"train proposer \(ppo\):[^\r\n]*?(\d+)/(\d+)", err)
    assert counts and counts[-1][0] == counts[-1][1], counts[-1:]  # no 256/200
    assert re.search(r"seed 1000[^\r\n]*20/20", err), err[-500:]  # the held-out evaluation's bar


def test_panels_that_share_their_series_share_one_legend_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.figure import Figure

    from eq_env.core.report import plot_lines

    saved: list[Figure] = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: saved.append(self))
    series = [{"label": f"proposer={p}", "x": [0, 1], "y": [1, 2], "yerr": [0.1, 0.1]} for p in "abcd"]
    plot_lines(tmp_path / "s.png", [{"ylabel": m, "series": series} for m in ("w", "x", "y", "z")], xlabel="q")
    (fig,) = saved
    assert all(ax.get_legend() is None for ax in fig.axes)
    assert len(fig.legends) == 1 and len(fig.legends[0].get_texts()) == 4
    # a single panel keeps its own legend; series without a label get none
    plot_lines(tmp_path / "one.png", [{"ylabel": "w", "series": series}], xlabel="q")
    plot_lines(tmp_path / "bare.png", [{"ylabel": m, "series": [{**series[0], "label": ""}]} for m in "wx"], xlabel="q")
    one, bare = saved[1:]
    assert one.axes[0].get_legend() is not None and not one.legends
    assert not bare.legends and all(ax.get_legend() is None for ax in bare.axes)


def test_readme_gives_the_cpu_torch_advice_before_the_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme.index("CPU build of PyTorch") < readme.index("<!-- ci:test -->")
