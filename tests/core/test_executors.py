"""The executors (:mod:`eq_env.core.executors`) and the experiment commands' ``--backend`` flags, without Ray.

What needs Ray — a sweep on a two-node local Ray cluster equal to the local one, a node killed mid-sweep —
is in ``tests/ray/`` (run by ``.ci/ray``). Here: the local executor, the one-line refusals of the flags,
and that nothing imports Ray unless the Ray backend runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import ClassVar

import pytest

from eq_env.cli import main
from eq_env.core import executors
from eq_env.core.executors import LocalExecutor, RayExecutor, executor_from_args

ROOT = Path(__file__).resolve().parents[2]


def _square(x: int, *, plus: int = 0) -> int:
    return x * x + plus


def _fail_on_3(x: int) -> int:
    if x == 3:
        raise ValueError(f"no {x}")
    return x


def test_the_local_executor_yields_every_result_as_it_finishes() -> None:
    calls = [((x,), {"plus": 1}) for x in range(5)]
    pool = LocalExecutor(2)
    assert not pool.runs_inline(len(calls)) and pool.runs_inline(1) and LocalExecutor(1).runs_inline(5)
    assert sorted(pool.map_unordered(_square, calls)) == [1, 2, 5, 10, 17]


def test_a_failed_call_raises_its_own_error() -> None:
    with pytest.raises(ValueError, match="no 3"):
        list(LocalExecutor(2).map_unordered(_fail_on_3, [((3,), {}), ((4,), {})]))


def test_the_flags_make_the_executor_or_refuse_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    local = executor_from_args("local", None, None, default_jobs=3)
    assert isinstance(local, LocalExecutor) and local.jobs == 3
    assert executor_from_args("local", 2, None, default_jobs=3).jobs == 2  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="--ray-address goes with --backend ray"):
        executor_from_args("local", None, "127.0.0.1:6379", default_jobs=1)
    monkeypatch.setattr(executors, "ray_missing", lambda: None)  # (Ray need not be installed to build one)
    with pytest.raises(ValueError, match=r"a cluster's \(--ray-address\) are its own"):
        executor_from_args("ray", 2, "127.0.0.1:6379", default_jobs=1)
    ray = executor_from_args("ray", 2, None, default_jobs=1)
    assert isinstance(ray, RayExecutor) and ray.num_cpus == 2 and ray.address is None
    joined = executor_from_args("ray", None, "auto", default_jobs=1)
    assert isinstance(joined, RayExecutor) and joined.num_cpus is None and joined.address == "auto"


def test_the_ray_backend_without_ray_says_which_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(executors.importlib.util, "find_spec", lambda name: None)
    out = tmp_path / "out"
    assert main(["sweep", "--out", str(out), "--seeds", "1", "--episodes", "5", "--backend", "ray"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'eq-env[ray]'" in err, err
    assert not out.exists()  # refused before anything was made


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--ray-address", "127.0.0.1:6379"], "--ray-address goes with --backend ray"),
        (["--backend", "ray", "--ray-address", "not an address"], "expected HOST:PORT"),
        (["--backend", "ray", "--ray-address", "127.0.0.1:99999"], "a port in 1..65535"),
        (["--backend", "ray", "--ray-address", "127.0.0.1:0"], "a port in 1..65535"),
        (["--backend", "dask"], "invalid choice: 'dask'"),
    ],
)
def test_bad_backend_flags_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    out = tmp_path / "out"
    try:  # (a bad flag value is refused by the parser, which exits; a bad combination by the command)
        status = main(["sweep", "--out", str(out), "--seeds", "1", "--episodes", "5", *flags])
    except SystemExit as exit_:
        status = exit_.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and message in err, err
    assert not out.exists()


@pytest.mark.slow  # (over a quarter of a second: the fast run stays under a minute)
def test_the_local_backend_is_the_default_and_gives_the_same_sweep(tmp_path: Path) -> None:
    argv = ["sweep", "--grid", "q=0.0,0.5", "--seeds", "2", "--episodes", "20"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert main([*argv, "--out", str(tmp_path / "b"), "--backend", "local", "--jobs", "2"]) == 0
    for name in ("summary.csv", "summary.md", "paired.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.slow  # (over a quarter of a second: the fast run stays under a minute)
def test_importing_the_package_and_its_help_import_no_ray() -> None:
    """``import eq_env`` (0.2 s) must not pull in Ray (seconds, and RLlib more): only the Ray backend imports it."""
    script = (
        "import sys, contextlib\n"
        "import eq_env\n"
        "from eq_env.cli import main\n"
        "for argv in ([], ['--help'], ['sweep', '--help'], ['reproduce', '--help'], ['frontier', '--help'],\n"
        "             ['free-text', '--help']):\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(None):\n"
        "        main(argv)\n"
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().replace("'", '"')) == []


# every experiment command with a backend: (argv without --out, the flags), tiny
COMMANDS = {
    "reproduce": ["reproduce", "--seeds", "1", "--episodes", "5"],
    "reproduce einstein-puzzle": [
        "reproduce",
        "--env",
        "einstein-puzzle",
        "--seeds",
        "1",
        "--episodes",
        "2",
        "--n",
        "4",
        "--plan-puzzles",
        "0",
    ],
    "reproduce belief-coordination": [
        "reproduce",
        "--env",
        "belief-coordination",
        "--seeds",
        "1",
        "--n-executors",
        "3",
        "--questions",
        "10",
        "--train-steps",
        "1",
    ],
    "frontier": ["frontier", "--no-ppo", "--qs", "0,1", "--episodes", "20"],
    "free-text": ["free-text", "--qs", "0,1", "--q", "1", "--seeds", "1", "--episodes", "20"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--ray-address", "127.0.0.1:6379"], "--ray-address goes with --backend ray"),
        (["--backend", "ray", "--ray-address", "h:1", "--jobs", "2"], "a cluster's (--ray-address) are its own"),
        (["--backend", "ray", "--ray-address", "not an address"], "expected HOST:PORT"),
    ],
)
def test_every_command_refuses_bad_backend_flags_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, flags: list[str], message: str
) -> None:
    if "belief" in command:
        pytest.importorskip("torch")
    out = tmp_path / "out"
    try:
        status = main([*COMMANDS[command], "--out", str(out), *flags])
    except SystemExit as exit_:
        status = exit_.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and message in err, err
    assert not out.exists()


@pytest.mark.parametrize("command", ["reproduce", "frontier", "free-text"])
def test_every_command_without_ray_says_which_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    monkeypatch.setattr(executors.importlib.util, "find_spec", lambda name: None)
    out = tmp_path / "out"
    assert main([*COMMANDS[command], "--out", str(out), "--backend", "ray"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'eq-env[ray]'" in err, err
    assert not out.exists()


@pytest.mark.slow  # (over a quarter of a second: the fast run stays under a minute)
def test_the_frontier_resumes_from_its_points(tmp_path: Path) -> None:
    """A driver killed mid-run (here: the record file cut after two points, the last line torn) is resumed
    by the same command: the missing points only, the same tables as one uninterrupted run."""
    argv = ["frontier", "--no-ppo", "--qs", "0,0.5,1", "--episodes", "40"]
    assert main([*argv, "--out", str(tmp_path / "whole"), "--jobs", "2"]) == 0
    points = (tmp_path / "whole" / "points.jsonl").read_text().splitlines(keepends=True)
    assert len(points) == 15  # five scenarios x three qs
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "points.jsonl").write_text("".join(points[:2]) + points[2][:10])
    assert main([*argv, "--out", str(cut)]) == 0
    for name in ("frontier.csv", "frontier_summary.csv", "frontier.md"):
        assert (cut / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    again = (cut / "points.jsonl").read_text().splitlines(keepends=True)
    assert again[:2] == points[:2] and sorted(again) == sorted(points)


@pytest.mark.parametrize("command", ["noisy-audits", "inspection", "sensitivity", "claim-schemas", "repeated"])
def test_the_commands_without_a_backend_say_why(capsys: pytest.CaptureFixture[str], command: str) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "it takes no --backend" in text and "--backend " not in text.replace("no --backend", ""), text


@pytest.mark.parametrize("address", ["127.0.0.1:1", "no-such-host.invalid:6379", "ray://user:s3cret@127.0.0.1:1"])
def test_an_address_where_nothing_answers_is_refused_at_once_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], address: str
) -> None:
    """Ray retries an unreachable head for minutes (``ray.init`` hung over 300 s on a refused port); the
    flag is refused in seconds, before anything is written, and a secret in the address is not shown."""
    monkeypatch.setattr(executors, "ray_missing", lambda: None)  # (refused before Ray is imported)
    out = tmp_path / "out"
    start = time.monotonic()
    status = main(["sweep", "--out", str(out), "--seeds", "1", "--episodes", "5", "--backend", "ray",
                   "--ray-address", address])  # fmt: skip
    err = capsys.readouterr().err
    assert time.monotonic() - start < 2 * executors.PROBE_TIMEOUT
    assert status == 2 and err.count("\n") == 1 and "nothing answers there" in err, err
    assert "--ray-address expects HOST:PORT" in err and "s3cret" not in err, err
    assert not out.exists()


class _FakeRay(types.ModuleType):
    """Stands in for ``ray`` (not installed here): records what ``init`` saw, or fails as told."""

    def __init__(self, fail: BaseException | None = None) -> None:
        super().__init__("ray")
        self.fail, self.seen, self.shut = fail, {}, False

    def is_initialized(self) -> bool:
        return False

    def init(self, **options: object) -> None:
        self.seen = {**options, **{k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}}
        if self.fail is not None:
            raise self.fail

    def shutdown(self) -> None:
        self.shut = True


class _FakeConfig:
    """Stands in for ``ray._raylet.Config`` (Ray's RayConfig): records the auth mode in the environment at each
    ``initialize``, when Ray would read it again."""

    reads: ClassVar[list[str | None]] = []

    @classmethod
    def initialize(cls, config: str) -> None:
        cls.reads.append(os.environ.get("RAY_AUTH_MODE"))


def _fake_ray(monkeypatch: pytest.MonkeyPatch, fail: BaseException | None = None) -> _FakeRay:
    fake = _FakeRay(fail)
    monkeypatch.setitem(sys.modules, "ray", fake)
    raylet = types.ModuleType("ray._raylet")
    raylet.Config = _FakeConfig  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray._raylet", raylet)
    monkeypatch.setattr(_FakeConfig, "reads", [])
    monkeypatch.setattr(executors, "ray_missing", lambda: None)
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return fake


def test_a_ray_instance_started_here_has_a_token_of_its_own_and_writes_none_home(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ray 2.60 started with no token configured writes one to ~/.ray/auth_token (a secret left in the home
    after the command); the instance of a command gets one in the environment, for its lifetime only."""
    fake = _fake_ray(monkeypatch)
    with executors.ray_connected(None, num_cpus=1):
        pass
    assert fake.seen["RAY_AUTH_MODE"] == "token" and len(str(fake.seen["RAY_AUTH_TOKEN"])) == 64 and fake.shut
    assert "RAY_AUTH_MODE" not in os.environ and "RAY_AUTH_TOKEN" not in os.environ
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # the user's own setting stands
    with executors.ray_connected(None, num_cpus=1):
        pass
    assert fake.seen["RAY_AUTH_MODE"] == "disabled" and fake.seen["RAY_AUTH_TOKEN"] is None


def test_every_ray_instance_a_process_starts_has_the_same_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's driver reads RAY_AUTH_TOKEN once per process and keeps it, while each new instance's processes
    read it from the environment: a fresh token at the second start of a process (the Einstein reproduce's
    taxonomy after its runs) gave InvalidAuthToken."""
    fake = _fake_ray(monkeypatch)
    tokens = []
    for _ in range(2):
        with executors.ray_connected(None, num_cpus=1):
            pass
        tokens.append(fake.seen["RAY_AUTH_TOKEN"])
        assert "RAY_AUTH_TOKEN" not in os.environ  # in the environment for the instance's lifetime only
    assert tokens[0] == tokens[1] and len(str(tokens[0])) == 64


def test_ray_imported_before_the_token_was_set_reads_its_auth_mode_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray reads RAY_AUTH_MODE when imported: imported before ray_connected set it (as finding ray.rllib did),
    its driver sent no token to the instance started here. It is told to read the mode again, once set, before
    ray.init; a cluster joined, or the user's own settings, are left alone."""
    _fake_ray(monkeypatch)  # (already in sys.modules: imported before)
    with executors.ray_connected(None, num_cpus=1):
        pass
    assert _FakeConfig.reads == ["token"]
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    with executors.ray_connected(None, num_cpus=1):
        pass
    assert _FakeConfig.reads == ["token"]


def test_looking_up_rllib_imports_no_ray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``find_spec("ray.rllib")`` imports ``ray``, which then reads its auth mode before ray_connected sets
    it: ``eq-env train --backend rllib`` could not start a Ray instance here at all. rllib_missing finds the
    extra (here a stand-in on disk whose ``import ray`` would fail) without importing any of it."""
    from eq_env.baselines import rllib

    (tmp_path / "ray" / "rllib").mkdir(parents=True)
    (tmp_path / "ray" / "__init__.py").write_text("raise ImportError('ray was imported')\n")
    (tmp_path / "ray" / "rllib" / "__init__.py").write_text("")
    (tmp_path / "pyarrow").mkdir()
    (tmp_path / "pyarrow" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("ray", "ray.rllib", "pyarrow", "tree"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    try:
        assert rllib.rllib_missing() == ("--backend rllib needs RLlib, which is not installed (no module 'tree'): "
                                         "pip install 'eq-env[rllib]'")  # fmt: skip
        (tmp_path / "tree.py").write_text("")
        assert rllib.rllib_missing() is None
        assert "ray" not in sys.modules
    finally:
        for name in ("ray", "ray.rllib", "pyarrow", "tree"):
            sys.modules.pop(name, None)


def test_a_ray_instance_that_fails_to_start_leaves_no_temporary_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_ray(monkeypatch, fail=RuntimeError("the raylet died"))
    with pytest.raises(RuntimeError, match="the raylet died"), executors.ray_connected(None, num_cpus=1):
        pass
    assert not Path(str(fake.seen["_temp_dir"])).exists()


def test_the_temporary_directory_of_a_killed_driver_is_removed_by_the_next_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A driver killed by SIGKILL leaves its Ray instance's directory in /tmp; the next start removes it (and
    leaves the directory of a driver still running)."""
    fake = _fake_ray(monkeypatch)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = Path(tempfile.mkdtemp(prefix=f"{executors.TEMP_PREFIX}{int(gone.stdout)}-", dir="/tmp"))
    live = Path(tempfile.mkdtemp(prefix=f"{executors.TEMP_PREFIX}{os.getppid()}-", dir="/tmp"))
    try:
        with executors.ray_connected(None, num_cpus=1):
            assert Path(str(fake.seen["_temp_dir"])).is_dir()
        assert not stale.exists() and live.exists() and not Path(str(fake.seen["_temp_dir"])).exists()
        assert len(str(fake.seen["_temp_dir"])) < 40  # (Ray's socket paths must fit 107 bytes)
    finally:
        shutil.rmtree(stale, ignore_errors=True)
        shutil.rmtree(live, ignore_errors=True)
