"""What users of the exchange–audit game get must not move when the code under it does.

``golden/`` holds the output of ``eq-env reproduce --out DIR`` (the README's main job) and the run keys
of its results, as the package produced them before the core was made generic (eq_env 0.1.0, commit
9c075d3 plus the bad-input fixes). Tables must come out byte for byte, and every run key must be
the same, so that results.jsonl files written before resume after.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eq_env.core.experiments import Condition, ResultsStore
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.studies.exchange_audit.reproduce import reproduce

GOLDEN = Path(__file__).parent / "golden"
TABLES = ("table1.csv", "table1.md", "table2.csv", "table2.md", "table1_text_length.csv")


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reproduce")
    reproduce(out, progress=False)
    return out


@pytest.mark.parametrize("name", TABLES)
def test_reproduce_tables_are_byte_for_byte_the_same(reproduced: Path, name: str) -> None:
    assert (reproduced / name).read_bytes() == (GOLDEN / name).read_bytes()


def test_reproduce_summary_is_the_same_but_for_the_time_taken(reproduced: Path) -> None:
    summary = re.sub(r"; [0-9.]+ s\. Preset", "; <seconds> s. Preset", (reproduced / "summary.md").read_text())
    assert summary == (GOLDEN / "summary.md").read_text()


def test_reproduce_run_keys_are_the_same(reproduced: Path) -> None:
    golden = json.loads((GOLDEN / "run_keys.json").read_text())["reproduce"]
    records = ResultsStore(reproduced / "results.jsonl").records()
    assert [{"key": r["key"], "labels": r["labels"]} for r in records] == golden


def test_condition_keys_are_the_same() -> None:
    for case in json.loads((GOLDEN / "run_keys.json").read_text())["conditions"]:
        config = ExchangeAuditConfig.from_preset("paper").replace(**case["config"])
        condition = Condition(config, {"proposer": case["proposer"], "validator": case["validator"]}, case["episodes"])
        assert condition.key == case["key"], case


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_results_written_before_the_core_was_generic_resume_and_rerun(
    reproduced: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A results.jsonl of eq_env 0.1.0 as it was written then: the policies at the top level, no game named."""
    from eq_env.cli import main

    old = tmp_path / "old"
    old.mkdir()
    lines = []
    for record in ResultsStore(reproduced / "results.jsonl").records():
        policies = record.pop("policies")
        record.pop("env")
        lines.append(json.dumps({**record, **policies}))
    (old / "results.jsonl").write_text("\n".join(lines) + "\n")
    before = (old / "results.jsonl").read_text()
    reproduce(old, progress=False)  # every run is recorded already: nothing runs again
    assert (old / "results.jsonl").read_text() == before
    for name in TABLES:
        assert (old / name).read_bytes() == (GOLDEN / name).read_bytes()
    key = json.loads(lines[0])["key"]
    assert main(["rerun", str(old / "results.jsonl"), key]) == 0
    assert "identical" in capsys.readouterr().out
