"""The eq-env command line, the configuration's validation, and the README's examples."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from eq_env.cli import main
from eq_env.exchange_audit.config import PRESETS, ExchangeAuditConfig

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------
def test_play_prints_the_metrics_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "--episodes", "50", "--seeds", "2", "--proposer", "silent", "--q", "0", "--B", "2"]) == 0
    out = capsys.readouterr().out
    assert "SilentProposer" in out and "RuleValidator" in out and "q=0, B=2" in out
    assert re.search(r"^ambiguous_approval_rate\s+0\.\d{3}\s+0\.\d{3}$", out, re.M)
    assert re.search(r"^audit_fail_rate\s+—\s+—$", out, re.M)  # undefined at q = 0


def test_play_json_and_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "out" / "episodes.jsonl"
    argv = ["play", "--episodes", "20", "--seed", "3", "--json", "--records", str(records), "--V", "2", "--L", "1"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["config"]["V"] == 2.0 and summary["seeds"] == [3]
    lines = records.read_text().splitlines()
    assert len(lines) == 20 and json.loads(lines[0])["seed"] == 3
    assert summary["metrics"]["welfare"]["mean"] == pytest.approx(sum(json.loads(x)["welfare"] for x in lines) / 20)


def test_play_render(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "--episodes", "2", "--render"]) == 0
    assert capsys.readouterr().out.count("=== exchange-audit episode") == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (["play", "--q", "1.5"], r"q must be a number in \[0, 1\], got 1.5"),
        (["play", "--B", "-2"], r"B must be an integer in \[0, inf\), got -2"),
        (["play", "--proposer", "oracle"], r"unknown policy 'oracle'"),
        (["play", "--validator", "honest"], r"plays the proposer, not the validator"),
        (["play", "--episodes", "0"], r"--episodes: expected an integer in \[1, "),
    ],
)
def test_play_errors_name_the_problem(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        status = main(argv)
    except SystemExit as exit_:  # refused while parsing the flags
        status = exit_.code  # type: ignore[assignment]
    assert status == 2
    assert re.search(message, capsys.readouterr().err)


def test_json_writes_undefined_metrics_as_null(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "--episodes", "5", "--q", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["audit_fail_rate"] == {"mean": None, "std": None}


def test_budget_flag_accepts_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "--episodes", "5", "--B", "all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["B"] is None


def test_policies_lists_builtins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    for name in ("honest", "silent", "strategic", "rule", "approve", "block"):
        assert re.search(rf"^{name}\s", out, re.M)


@pytest.mark.slow  # (over 0.5 s: starts the installed console script in a new process)
def test_console_script_is_installed() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "eq_env.cli", "play", "--episodes", "5"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "approval_rate" in result.stdout


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------
def test_paper_preset_is_the_spec() -> None:
    cfg = PRESETS["paper"]
    assert (cfg.V, cfg.L, cfg.alpha, cfg.audit_cost, cfg.B, cfg.max_words) == (1.0, 2.0, 0.02, 0.1, 4, 60)
    assert (cfg.noise_sd, cfg.delta_limit, cfg.risk_limit_low, cfg.risk_limit_high) == (0.05, 0.3, 0.8, 1.2)
    assert (cfg.safe_margin, cfg.no_trade_payoff, cfg.bad_approval_loss, cfg.ambiguous_rate) == (0.05, 1.0, 10.0, 0.5)
    assert PRESETS["paper_main_script"].ambiguous_rate == 0.4
    assert ExchangeAuditConfig() == cfg


@pytest.mark.parametrize(
    "field, value",
    [
        ("q", 1.5),
        ("q", -0.01),
        ("q", float("nan")),
        ("q", True),
        ("B", -2),
        ("B", 2.5),
        ("V", -1.0),
        ("L", -1.0),
        ("alpha", -0.02),
        ("audit_cost", -0.1),
        ("max_words", -1),
        ("max_words", 3.5),
        ("ambiguous_rate", 1.01),
        ("noise_sd", -0.05),
        ("delta_limit", 0.0),
        ("risk_limit_high", 3.5),
        ("safe_margin", -0.01),
        ("bad_approval_loss", -10.0),
        ("max_text_chars", 0),
        ("reveal_compliance", "yes"),
    ],
)
def test_invalid_values_name_the_field_and_range(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"^{field} must be"):
        ExchangeAuditConfig().replace(**{field: value})


def test_limits_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="risk_limit_low"):
        ExchangeAuditConfig(risk_limit_low=1.3, risk_limit_high=1.2)


def test_numpy_numbers_are_accepted() -> None:
    import numpy as np

    cfg = ExchangeAuditConfig().replace(q=np.float32(0.25), B=np.int64(2), max_words=np.int64(10), V=np.float64(2))
    assert (cfg.q, cfg.B, cfg.max_words, cfg.V) == (0.25, 2, 10, 2.0)
    assert type(cfg.B) is int and type(cfg.q) is float
    assert ExchangeAuditConfig(reveal_compliance=np.True_).reveal_compliance is True
    with pytest.raises(ValueError, match=r"^B must be"):
        ExchangeAuditConfig(B=np.bool_(True))
    with pytest.raises(ValueError, match=r"^B must be"):
        ExchangeAuditConfig(B=float("inf"))
    assert ExchangeAuditConfig(B=10**400).checks_per_audit == 4


def test_round_trip_and_normalisation() -> None:
    cfg = ExchangeAuditConfig(q=1, B=2.0, max_words=10.0)
    assert cfg.q == 1.0 and isinstance(cfg.B, int) and isinstance(cfg.max_words, int)
    assert ExchangeAuditConfig.from_dict(cfg.to_dict()) == cfg
    assert hash(cfg) == hash(ExchangeAuditConfig.from_dict(cfg.to_dict()))
    assert ExchangeAuditConfig(B=None).checks_per_audit == 4 == ExchangeAuditConfig(B=9).checks_per_audit


# ---------------------------------------------------------------------------
# README
# ---------------------------------------------------------------------------
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"
GUIDE = (DOCS / "guide" / "exchange-audit.md").read_text()  # (the README's Table 1 and parameters moved here)
# What the main suite runs: the README without its <!-- needs:compat --> regions (the compat extra's libraries; run by
# tests/compat/test_readme.py). The same line is in tests/core/test_packaging.py's CO_INSTALLED: keep them in step.
MAIN_README = re.sub(r"<!-- needs:compat -->.*?<!-- /needs:compat -->", "", README, flags=re.S)


def test_readme_parameter_table_lists_every_field() -> None:
    table = GUIDE.split("## Parameters", 1)[1].split("## ", 1)[0]
    for name in ExchangeAuditConfig.field_names():
        assert f"`{name}`" in table, name


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(re.findall(r"```python\n", MAIN_README))))
def test_readme_python_examples_run(
    index: int, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # an example may write (an LLM cache): not into the repository
    block = re.findall(r"```python\n(.*?)```", MAIN_README, re.S)[index]
    exec(compile(block, f"README.md python block {index}", "exec"), {})
    assert capsys.readouterr().out  # every example prints something


COMPAT_LIBRARIES = re.compile(r"^\s*(import|from) (supersuit|torchrl|tianshou|tensordict)\b", re.M)


def test_readme_blocks_that_need_the_compat_extra_are_marked_and_both_runners_skip_them() -> None:
    """Every python block runs somewhere: those of the compat extra's libraries in tests/compat/test_readme.py
    (marked ``needs:compat``), the README's here and beside the wheel, the docs' in tests/docs/test_docs_blocks.py,
    whose runners skip the same regions."""
    loop = (DOCS / "tutorials" / "pettingzoo.md").read_text()
    assert loop.count("<!-- needs:compat -->") == loop.count("<!-- /needs:compat -->") >= 3
    texts = [README, *(p.read_text() for p in DOCS.rglob("*.md") if "_build" not in p.parts)]
    for text in texts:
        main = re.sub(r"<!-- needs:compat -->.*?<!-- /needs:compat -->", "", text, flags=re.S)
        main = re.sub(r"<!-- needs:jax -->.*?<!-- /needs:jax -->", "", main, flags=re.S)
        for block in re.findall(r"```python\n(.*?)```", main, re.S):
            assert not COMPAT_LIBRARIES.search(block), f"a docs block needs the compat extra, unmarked:\n{block}"
            assert not re.search(r"\b(jax|jaxmarl|optax)\b|jax_engine|jax_rl", block), (
                f"a docs block needs the jax extra, unmarked (<!-- needs:jax -->):\n{block}"
            )
    skip = 're.sub(r"<!-- needs:compat -->.*?<!-- /needs:compat -->", "", '
    runners = [
        Path(__file__),
        ROOT / "tests" / "core" / "test_packaging.py",
        ROOT / "tests" / "docs" / "test_docs_blocks.py",
    ]
    assert all(skip in runner.read_text() for runner in runners)


def test_readme_commands_are_the_ci_commands() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "readme_block ci:main" in ci and "readme_block ci:test" in ci
    for tag in ("ci:main", "ci:test"):
        block = README.split(f"<!-- {tag} -->", 1)[1].split(f"<!-- /{tag} -->", 1)[0]
        assert "pip install" in block
    assert "pytest" in README.split("<!-- ci:test -->", 1)[1].split("<!-- /ci:test -->", 1)[0]


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_readme_table1_is_what_the_main_command_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    command = README.split("<!-- ci:main -->", 1)[1].split("<!-- /ci:main -->", 1)[0]
    argv = command.split("eq-env", 1)[1].split("```", 1)[0].split()
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0
    printed = capsys.readouterr().out
    shown = GUIDE.split("Its Table 1:", 1)[1].split("With an 18-word text", 1)[0].strip()
    assert shown and shown in printed
    assert (tmp_path / "results" / "summary.md").exists()


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_readme_sweep_examples_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shlex

    from eq_env.core.sweep import SweepSpec, load_spec_file

    section = (DOCS / "tutorials" / "sweeps.md").read_text().split("# Sweeps", 1)[1]
    spec_file = tmp_path / "budget.toml"
    spec_file.write_text(re.findall(r"```toml\n(.*?)```", section, re.S)[0])
    spec = SweepSpec.from_mapping(load_spec_file(spec_file))
    assert len(spec.conditions()) == 10
    bash = re.findall(r"```bash\n(.*?)```", section, re.S)[0].replace("\\\n", " ")
    argv = shlex.split(bash)[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "temptation")
    assert main(argv) == 0
    assert "20 conditions x 5 seeds" in capsys.readouterr().out
    # "mine - rule" per cell: the paired table the README shows is the one the command writes
    bash = next(b for b in re.findall(r"```bash\n(.*?)```", section, re.S) if "--baseline" in b).replace("\\\n", " ")
    argv = shlex.split(bash)[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "mine-vs-rule")
    assert "--baseline" in argv and main(argv) == 0
    shown = re.findall(r"```text\n(.*?)```", section, re.S)[0]
    assert shown in (tmp_path / "mine-vs-rule" / "summary.md").read_text()
