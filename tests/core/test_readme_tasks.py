"""The docs' "Three tasks, three commands" (docs/tutorials/tasks.md; docs/tutorials/training.md shows the first two),
run as written, from a fresh directory (the user's own validator module beside them): each command exits 0 and
prints what the page says it gives."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "docs" / "tutorials" / "tasks.md").read_text()
MY_VALIDATORS = SECTION.split("<!-- save-as: my_validators.py -->\n```python\n", 1)[1].split("```", 1)[0]


def _commands() -> list[str]:
    """The bash blocks' commands, continuation lines joined, comments dropped."""
    found = re.findall(r"```bash\n(.*?)```", SECTION, re.S)
    lines = "\n".join(found).replace("\\\n", " ").splitlines()
    return [c.strip() for c in lines if c.strip() and not c.startswith("#")]


def test_the_section_has_the_three_tasks() -> None:
    commands = _commands()
    assert [c.split()[:2] for c in commands] == [
        ["eq-env", "train"],
        ["eq-env", "play"],
        ["python", "-m"],
        ["eq-env", "play"],
        ["eq-env", "play"],
        ["eq-env", "sweep"],
    ]
    assert "class Mine(BasePolicy)" in MY_VALIDATORS  # the page shows the file the third task names
    training = (ROOT / "docs" / "tutorials" / "training.md").read_text()
    assert re.findall(r"```bash\n(.*?)```", training, re.S) == ["\n".join(commands[:2]) + "\n"]  # run here too


@pytest.mark.slow  # (a 20k-step training and 200 LLM games against the stand-in: about half a minute)
def test_the_three_tasks_run_as_written(tmp_path: Path) -> None:
    (tmp_path / "my_validators.py").write_text(MY_VALIDATORS)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)  # the user's module is found in the current directory, as the README says

    def run(command: str) -> str:
        done = subprocess.run(shlex.split(command), cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{command}\n{done.stderr[-2000:]}"
        return done.stdout

    train, play_seat, serve, play_llm, play_verified, sweep = _commands()
    trained = run(train)
    assert re.search(r"^\| greedy \| 1\.000 ± 0\.000 \|", trained, re.M), trained  # the README's claim
    assert re.search(r"^\| sampled \|", trained, re.M) and (tmp_path / "runs/ep_seat/model.zip").is_file()
    assert re.search(r"^success_rate\s+1\.000", run(play_seat), re.M)

    server = subprocess.Popen(
        shlex.split(serve), cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()  # its URL first: the event that it listens
        assert url == "http://127.0.0.1:8765/v1", url
        plain, verified = run(play_llm), run(play_verified)
    finally:
        server.terminate()
        server.communicate(timeout=60)

    def success(out: str) -> float:
        return float(re.search(r"^success_rate\s+([0-9.]+)", out, re.M).group(1))  # type: ignore[union-attr]

    assert success(plain) < 1.0 == success(verified)  # the verifier wins the bad model's games back
    assert "verifier_interventions" in verified

    swept = run(sweep)
    assert "## Paired differences" in swept or (tmp_path / "runs/mine-vs-rule/paired.csv").is_file()
    paired = (tmp_path / "runs/mine-vs-rule/paired.csv").read_text()
    assert "my_validators:Mine" in paired and ",rule," not in paired  # each cell: mine − rule
