"""What the core reads back from its files and its policies (planted bugs of the core): the last
record of a run key wins in an uncompacted results file, an early turn's fallback survives later turns that
report none, and JSON's ``true`` is no seed — in an episode file, a results file, or ``eq-env rerun``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from toy_game import ID, RelayConfig

from eq_env.cli import main
from eq_env.core.experiments import Condition, EpisodeStore, ResultsStore, check_run_record, run_all, run_one
from eq_env.core.runner import merge_infos

CONDITION = Condition(RelayConfig(), {"leader": "random", "runner": "random"}, 3)


def _record(seed: int = 0) -> dict[str, Any]:
    return run_one(CONDITION, seed)


def _write(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# ---------------------------------------------------------------------------
# The last record of a key
# ---------------------------------------------------------------------------
def test_an_uncompacted_results_file_loads_the_last_record_of_each_key(tmp_path: Path) -> None:
    # a run resumed after failed episodes is appended again; compaction happens only when run_all runs,
    # so `eq-env rerun` and the Einstein puzzle's taxonomy.jsonl read such files as they are
    path = _write(tmp_path / "results.jsonl", {"key": "a/0", "v": 1}, {"key": "b/0", "v": 2}, {"key": "a/0", "v": 3})
    loaded = ResultsStore(path).load()
    assert loaded == {"a/0": {"key": "a/0", "v": 3}, "b/0": {"key": "b/0", "v": 2}}
    assert list(loaded) == ["a/0", "b/0"]  # in the order each key was first written


def test_rerun_checks_the_last_record_of_its_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = _record()
    stale = {**record, "metrics": {k: -1.0 for k in record["metrics"]}}  # an earlier attempt's, superseded
    path = _write(tmp_path / "results.jsonl", stale, record)
    assert main(["rerun", str(path), record["key"]]) == 0
    assert capsys.readouterr().out.rstrip().endswith("identical")


# ---------------------------------------------------------------------------
# An episode's infos over its turns
# ---------------------------------------------------------------------------
def test_an_early_turns_fallback_survives_later_turns_that_report_none() -> None:
    early = {"fallback": True, "fallback_reason": "invalid JSON", "fallbacks": 1, "invalid_replies": ["x"]}
    later = {"fallback": False, "fallback_reason": None, "fallbacks": 0, "invalid_replies": []}
    merged = merge_infos([early, later, later])
    assert merged == {"fallback": True, "fallback_reason": "invalid JSON", "fallbacks": 1, "invalid_replies": ["x"]}
    assert merge_infos([later, early])["fallback"] is True  # (either order)
    assert merge_infos([later, later]) == later  # none reported in any turn: none in the episode
    # a later turn's own value still replaces an earlier one (the last one's, as documented)
    assert merge_infos([early, {"fallback_reason": "timeout"}])["fallback_reason"] == "timeout"


# ---------------------------------------------------------------------------
# "seed": true
# ---------------------------------------------------------------------------
def test_an_episode_file_refuses_a_seed_of_true_naming_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "episodes" / "c-0.jsonl"
    path.parent.mkdir()
    good = {"seed": 0, "episode": 0, "start": 0, "final": 7, "turns": 4, "success": True, "agent_infos": {}}
    _write(path, {"key": "0", **good})
    assert [e.seed for e in EpisodeStore(path, ID).history()] == [0]
    _write(path, {"key": "0", **good}, {"key": "1", **good, "episode": 1, "seed": True})
    with pytest.raises(ValueError, match=r"c-0\.jsonl:2: seed must be a non-negative integer, got True"):
        EpisodeStore(path, ID).history()


def test_a_results_file_refuses_a_seed_of_true_naming_the_file_and_line(tmp_path: Path) -> None:
    # seed 0's record says "seed": true: resuming, the tables would have put it under seed 1 (int(True))
    path = _write(tmp_path / "results.jsonl", _record(1), {**_record(0), "seed": True})
    needle = r"results\.jsonl:2: run record .*expected 'seed' of type int, at least 0, got True"
    with pytest.raises(ValueError, match=needle):
        run_all([CONDITION], [0, 1], ResultsStore(path))
    with pytest.raises(ValueError, match=needle):
        ResultsStore(path).load(check_run_record)


def test_rerun_refuses_a_seed_of_true_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = _record()
    path = _write(tmp_path / "results.jsonl", {**record, "seed": True})
    assert main(["rerun", str(path), record["key"]]) == 2  # (it ran seed 1 and called it seed True)
    err = capsys.readouterr().err
    assert "results.jsonl:1: run record" in err and "'seed' of type int, at least 0, got True" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"seed": -1}, "'seed' of type int, at least 0, got -1"),
        ({"seed": 0.0}, "'seed' of type int, at least 0, got 0.0"),
        ({"episodes": True}, "'episodes' of type int, at least 1, got True"),
        ({"episodes": 0}, "'episodes' of type int, at least 1, got 0"),
        ({"condition": None}, "'condition' of type str, got None"),
        ({"metrics": []}, "'metrics' of type dict, got []"),
        ({"failed": {}}, "'failed' of type list, got {}"),
    ],
)
def test_a_run_records_fields_are_checked(change: dict[str, Any], needle: str) -> None:
    record = {**_record(), **change}
    with pytest.raises(ValueError, match=r"run record '.*': expected " + re.escape(needle)):
        check_run_record(record)
    missing = {k: v for k, v in _record().items() if k != "episodes"}
    with pytest.raises(ValueError, match="expected 'episodes' of type int, at least 1, got nothing"):
        check_run_record(missing)
    check_run_record(_record())  # a record run_one writes passes
