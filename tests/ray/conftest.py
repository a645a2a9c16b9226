"""The Ray tests' cluster: two nodes on this machine, as a real cluster of two machines would be.

These tests are not collected by ``pytest`` alone (``norecursedirs`` in pyproject.toml): they need the
``ray`` extra and a minute. ``.ci/ray`` makes their virtual environment and runs them
(``pytest tests/ray``). Without Ray installed, collecting them stops at once with one line saying so,
rather than skipping them: whoever asked for these tests asked for Ray.

The cluster (:func:`cluster`): a head node and a worker node of one CPU each, each a
``ray start --block`` process of its own process group (ending that process ends its node: SIGTERM
gracefully, SIGKILL of the group at once, which is how a test loses a node), on the loopback address,
in a short temporary directory (Ray's socket paths must fit the 107-byte limit of AF_UNIX paths,
which pytest's ``tmp_path`` exceeds), with usage statistics off and a token of the fixture's own for
Ray's authentication (passed in the environment: nothing is written to ``~/.ray``). Both nodes are
stopped and the directory removed at the end, whatever the tests did.

The default path, a Ray instance of the command's own (no ``--ray-address``), is tested with no cluster on
the machine: the tests that do not use the cluster run first (:func:`pytest_collection_modifyitems`),
each command in a driver process of its own (:class:`LocalDriver`) with no ``RAY_*`` variable, as on a
user's machine, which must leave no Ray process, temporary directory or ``~/.ray`` file behind.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

if importlib.util.find_spec("ray") is None:  # said once, rather than a skip per test
    raise pytest.UsageError("tests/ray/ needs Ray: pip install -e '.[ray,test]' (or run .ci/ray)")

ROOT = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).with_name("ray"))
START_TIMEOUT = 120.0  # seconds for a node to join (3-20 s measured on 2 busy cores)


@dataclass
class Node:
    """One ``ray start --block`` process: the node lives as long as it does."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        """End the node: ``SIGTERM`` lets ``ray start`` stop its processes; ``SIGKILL`` kills its whole
        process group at once (a lost machine). Whatever is left after ``timeout`` is killed."""
        if self.process.poll() is None:
            try:
                if sig == signal.SIGKILL:
                    os.killpg(self.process.pid, signal.SIGKILL)
                else:
                    self.process.send_signal(sig)
                self.process.wait(timeout)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                pass
        try:  # the node's raylet, workers and agents are in the group too
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

    def running_tasks(self) -> int:
        """How many Ray worker processes of this node are running a task (Ray titles them ``ray::<task>``;
        an idle one is ``ray::IDLE``)."""
        count = 0
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if os.getpgid(int(pid)) != self.process.pid:
                    continue
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except (OSError, ProcessLookupError):
                continue
            if cmdline.startswith(b"ray::") and not cmdline.startswith(b"ray::IDLE"):
                count += 1
        return count


@dataclass
class Cluster:
    """A running two-node cluster: ``address`` (``127.0.0.1:PORT`` of the head), its nodes, and the
    environment a driver needs to join it (``env``)."""

    address: str
    head: Node
    worker: Node
    env: dict[str, str]

    def eq_env(self, *argv: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
        """``python -m eq_env.cli ARGV`` run from the work tree, as a driver of this cluster could be."""
        return subprocess.run([sys.executable, "-m", "eq_env.cli", *argv], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip

    def start_eq_env(self, *argv: str) -> subprocess.Popen[str]:
        """:meth:`eq_env`, started and not waited for (its output in pipes)."""
        return subprocess.Popen([sys.executable, "-m", "eq_env.cli", *argv], cwd=ROOT, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip

    def alive_nodes(self) -> int:
        """Nodes ``ray status`` lists as active."""
        done = subprocess.run([RAY, "status", f"--address={self.address}"], env=self.env, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        active = re.search(r"Active:\n((?:\s+\d+ \S+\n)*)", done.stdout)
        return sum(int(line.split()[0]) for line in active.group(1).splitlines()) if active else 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(name: str, args: list[str], env: dict[str, str], temp: Path) -> Node:
    log = temp / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen([RAY, "start", "--block", "--num-cpus=1", "--node-ip-address=127.0.0.1", *args],
                                   env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    return Node(name, process, log)


def _wait_for(cluster: Cluster, nodes: int, node: Node) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while cluster.alive_nodes() < nodes:
        if node.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the Ray {node.name} node did not start; its log:\n{node.log.read_text()[-3000:]}")
        time.sleep(0.5)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """A head and a worker node of one CPU each, on this machine; stopped at the end of the session."""
    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # short: see the module docstring
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32), "PYTHONPATH": str(ROOT)}  # fmt: skip
    env.pop("RAY_ADDRESS", None)
    nodes: list[Node] = []
    try:
        head = _start("head", ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={temp}",
                               "--disable-usage-stats"], env, temp)  # fmt: skip
        nodes.append(head)
        started = time.monotonic()
        address = f"127.0.0.1:{port}"
        probe = Cluster(address, head, head, env)
        _wait_for(probe, 1, head)
        head_seconds = time.monotonic() - started
        worker = _start("worker", [f"--address={address}"], env, temp)
        nodes.append(worker)
        _wait_for(probe, 2, worker)
        print(f"\nRay cluster at {address}: head up in {head_seconds:.1f} s, worker joined "
              f"{time.monotonic() - started - head_seconds:.1f} s later")  # fmt: skip
        yield Cluster(address, head, worker, env)
    finally:
        for node in reversed(nodes):
            node.stop()
        shutil.rmtree(temp, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests without the cluster first, so that they run on a machine with no cluster (the session's
    starts with the first test that asks for it and stays up to the end)."""
    items.sort(key=lambda item: "cluster" in getattr(item, "fixturenames", ()))


# The driver of LocalDriver: runs each command line of argv[2] (JSON) with eq_env.cli.main in this one
# process, one after another, and prints per command its status and how often it started Ray (calls of
# ray_connected, the one start-up of RayExecutor and RLlib training). "import-ray-first" imports Ray before
# anything else, as a script using the package as a library might (Ray then reads its settings at once).
DRIVER = """
import json, sys
if sys.argv[1] == "import-ray-first":
    import ray  # noqa: F401
from eq_env.cli import main
from eq_env.core import executors

real, starts = executors.ray_connected, []
def counted(*args, **kwargs):
    starts.append(1)
    return real(*args, **kwargs)
executors.ray_connected = counted
for argv in json.loads(sys.argv[2]):
    starts.clear()
    status = main(argv)
    print("@@" + json.dumps({"status": status, "ray_starts": len(starts)}), flush=True)
    if status:
        sys.exit(status)
"""
GONE_TIMEOUT = 120.0  # seconds for the Ray processes of a driver to end once it has (workers end after their raylet)


@dataclass
class Driven:
    """What a :class:`LocalDriver` process did: its output, and how often each command started Ray."""

    pid: int
    stdout: str
    stderr: str
    ray_starts: list[int]


class LocalDriver:
    """Driver processes of eq-env commands on a Ray instance of their own, as on a machine with no cluster:
    no ``RAY_*`` variable in their environment (so no token, no address), ``HOME`` and ``TMPDIR`` in
    ``root`` (where Ray would write ``~/.ray/auth_token`` and its default temporary directory), and a
    marker variable their processes and Ray's (which inherit it) are found by."""

    def __init__(self, root: Path) -> None:
        self.home, self.tmp = root / "home", root / "tmp"
        self.home.mkdir(parents=True)
        self.tmp.mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        self.env.update(HOME=str(self.home), TMPDIR=str(self.tmp), PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")

    def run(self, commands: Sequence[Sequence[str]], *, import_ray_first: bool = False, hash_seed: int | None = None,
            timeout: float = 1800.0) -> Driven:  # fmt: skip
        """Run ``commands`` (eq-env command lines) one after another in one new process; then check that each
        succeeded and that it left no Ray process, no temporary directory of its instances and nothing Ray
        writes home. ``hash_seed``: the process's PYTHONHASHSEED (default: random, as a user's)."""
        marker = uuid.uuid4().hex
        env = {**self.env, "EQ_ENV_TEST_DRIVER": marker}
        if hash_seed is not None:
            env["PYTHONHASHSEED"] = str(hash_seed)
        first = "import-ray-first" if import_ray_first else "-"
        argv = [sys.executable, "-c", DRIVER, first, json.dumps([list(c) for c in commands])]
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        finally:
            if process.poll() is None:
                process.kill()
        lines = [json.loads(line[2:]) for line in stdout.splitlines() if line.startswith("@@")]
        driven = Driven(process.pid, stdout, stderr, [line["ray_starts"] for line in lines])
        left = _wait_gone(marker)  # (waited for even when a command failed: none may outlive the test)
        assert process.returncode == 0, f"the driver exited with status {process.returncode}:\n{stderr[-4000:]}"
        assert not left, f"Ray processes left by the driver: {left}"
        assert not list(Path("/tmp").glob(f"eqray{process.pid}-*")), "a Ray instance's temporary directory was left"
        assert not (self.home / ".ray").exists(), sorted(p.name for p in (self.home / ".ray").iterdir())
        assert "auth_token" not in stderr, stderr[-2000:]
        assert not [p.name for p in self.tmp.iterdir() if "ray" in p.name.lower()]  # Ray's default temp dir
        return driven


@pytest.fixture
def local_driver(tmp_path: Path) -> LocalDriver:
    """Driver processes with no cluster, no ``RAY_*`` variable, and a home and temporary directory in ``tmp_path``."""
    return LocalDriver(tmp_path / "driver")


def _processes_marked(marker: str) -> list[str]:
    """The command lines of the processes whose environment holds the driver's marker."""
    found, needle = [], f"EQ_ENV_TEST_DRIVER={marker}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if needle in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                found.append(Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # ended meanwhile, or not ours to read
            continue
    return found


def _wait_gone(marker: str) -> list[str]:
    """Wait until no process of the driver is left (or the deadline): what is still running then."""
    deadline = time.monotonic() + GONE_TIMEOUT
    while (left := _processes_marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left
