"""Every command that takes ``--backend ray``, on a Ray instance of its own (no ``--ray-address``), as on a
machine with no cluster: each run twice in a row, the same tables as the local backend, nothing left.

Ray reads its authentication settings once per process (see :func:`eq_env.core.executors.ray_connected`),
so what broke was a second start: the Einstein reproduce starts Ray twice (its runs, then its taxonomy)
and failed with ``InvalidAuthToken`` after its runs. Here one driver process runs every command one after
another, and the first again at the end (eight starts in one process: every command starts Ray after
another start), and a second process runs the two that start Ray first and twice again, having imported
Ray before its first command (Ray then read its settings before any token was set). Each process must leave
no Ray process, no temporary directory and no ``~/.ray`` file (:class:`conftest.LocalDriver`). These tests
run before the session's cluster starts (:func:`conftest.pytest_collection_modifyitems`).
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from eq_env.cli import main

if TYPE_CHECKING:
    from conftest import LocalDriver

pytestmark = pytest.mark.ray

# command line (without --out and backend flags), the tables compared with the local backend's (summary.md, also
# written by each reproduce, holds the command's seconds), how often the command starts Ray
COMMANDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], int]] = {
    "sweep": (("sweep", "--grid", "q=0.0,0.5", "--seeds", "2", "--episodes", "50"),
              ("summary.csv", "summary.md", "paired.csv"), 1),
    "exchange-audit reproduce": (("reproduce", "--seeds", "2", "--episodes", "20"),
                                 ("table1.csv", "table1.md", "table1_text_length.csv", "table2.csv", "table2.md"),
                                 1),
    "einstein-puzzle reproduce": (("reproduce", "--env", "einstein-puzzle", "--seeds", "2", "--episodes", "2", "--n",
                                   "4", "--plan-puzzles", "0"),
                                  ("table_success.csv", "table_success.md", "table_gains.csv", "table_metrics.csv",
                                   "taxonomy.csv"), 2),  # its runs, then its taxonomy
    "belief-coordination reproduce": (("reproduce", "--env", "belief-coordination", "--seeds", "2", "--n-executors",
                                       "3", "--questions", "10", "--train-steps", "1"),
                                      ("methods.csv", "methods.md", "falsifiers.md"), 1),
    "frontier": (("frontier", "--no-ppo", "--qs", "0,1", "--episodes", "20"),
                 ("frontier.csv", "frontier_summary.csv", "frontier.md"), 1),
    "free-text": (("free-text", "--qs", "0,1", "--q", "1", "--seeds", "2", "--episodes", "20"),
                  ("free_text.csv", "free_text.md"), 1),
    "baselines": (("baselines", "--preset", "quick", "--only", "einstein-puzzle/seat", "--seeds", "2"),
                  ("baselines.csv", "baselines.md"), 1),  # (a training per Ray task: the same models' scores)
}  # fmt: skip


def _argv(name: str, out: Path, *flags: str) -> list[str]:
    return [*COMMANDS[name][0], "--out", str(out / name.replace(" ", "-")), *flags]


def test_every_ray_command_runs_twice_in_a_row_on_an_instance_of_its_own(
    tmp_path: Path, local_driver: LocalDriver, capsys: pytest.CaptureFixture[str]
) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.fail("belief-coordination's reproduce needs torch in the Ray venv (.ci/ray installs it)")
    for name in COMMANDS:  # the local backend's tables, in this process (their printed tables captured)
        assert main(_argv(name, tmp_path / "local")) == 0, name
    ray_flags = ("--backend", "ray", "--jobs", "1")  # a CPU: this machine's two are shared
    first = next(iter(COMMANDS))
    # every command after another start; then, in a process that imported Ray first, the first command and the
    # one that starts Ray twice (each command's outputs in a directory of its own, so the first's second run
    # compares its own tables too)
    runs = ((1, False, [*COMMANDS, first]), (2, True, [first, "einstein-puzzle reproduce"]))
    for process, import_ray_first, names in runs:
        out = tmp_path / f"ray{process}"
        argvs = [_argv(name, out / str(i), *ray_flags) for i, name in enumerate(names)]
        started = time.monotonic()
        done = local_driver.run(argvs, import_ray_first=import_ray_first)
        with capsys.disabled():
            print(f"\nprocess {process} (Ray imported first: {import_ray_first}): {len(names)} commands, "
                  f"{sum(done.ray_starts)} Ray starts, {time.monotonic() - started:.1f} s")  # fmt: skip
        assert done.ray_starts == [COMMANDS[name][2] for name in names], done.ray_starts
        for i, name in enumerate(names):
            argv, files, _ = COMMANDS[name]
            assert argv[0] != "reproduce" or (out / str(i) / name.replace(" ", "-") / "summary.md").is_file(), (
                process,
                name,
            )
            for file in files:
                ours = (out / str(i) / name.replace(" ", "-") / file).read_bytes()
                assert ours == (tmp_path / "local" / name.replace(" ", "-") / file).read_bytes(), (process, name, file)
