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
"""

from __future__ import annotations

import importlib.util
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
from collections.abc import Iterator
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
