"""Where a command's runs execute: a process pool on this machine, or Ray tasks on a cluster.

An :class:`Executor` takes independent calls of one function (in the experiments, ``run_one(condition,
seed, ...)``) and yields their results **as they finish**, in whatever order. The caller (the driver)
alone writes what comes back — ``results.jsonl`` is never written by a worker — so resume, compaction and
the progress bar work the same on every backend, and a table made from the results does not depend on
the backend (the records of a run are the same bytes wherever it ran).

Two executors:

========================  ==========================================================================
``LocalExecutor(jobs)``   a process pool of ``jobs`` workers on this machine (the default; with
                          ``jobs=1``, or a single call, the calls run in this process)
``RayExecutor(address)``  one Ray core task per call (``ray.remote(fn)``): on a Ray instance started
                          for the command on this machine (``address=None``; ``num_cpus`` CPUs), or
                          on a running cluster (``address="HOST:PORT"`` or ``"auto"``; its nodes'
                          CPUs decide, so ``num_cpus`` is refused)
========================  ==========================================================================

On the command line: ``eq-env sweep --backend ray [--ray-address ADDR]`` (see :func:`executor_from_args`).

Ray is an optional dependency (``pip install 'eq-env[ray]'``) and is imported only here, only when a
:class:`RayExecutor` runs: ``import eq_env`` and every command on the local backend never import it.

Failures: a call that raises makes :meth:`Executor.map_unordered` raise the same exception (its own
type and message, also from a Ray worker), as a failed run does locally; results yielded before it
were already written by the caller, so the same command run again resumes. A Ray task lost with its
worker process or node is resubmitted by Ray (``max_retries`` times, on any node left); a task lost
more often than that ends the command with :class:`RunLostError`, one line naming the run, and the same
command run again completes it.

Every node of a Ray cluster needs this package installed, at the same version as the driver (a run's
key includes the version), and whatever registers the games and policies a sweep names: a game or
policy registered by the package, by a module its configuration class lives in, or by an entry point
is known to the workers; one registered by a call in the driver's own script is not.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import importlib.util
import logging
import os
import secrets
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "BACKENDS",
    "Call",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "RunLostError",
    "executor_from_args",
    "ray_connected",
    "ray_missing",
]

BACKENDS = ("local", "ray")
T = TypeVar("T")
Call = tuple[tuple[Any, ...], Mapping[str, Any]]  # (positional arguments, keyword arguments) of one call


class RunLostError(RuntimeError):
    """A call lost with its Ray worker or node more often than Ray resubmits it; running the same command
    again runs it (the calls that finished are recorded)."""


def ray_missing() -> str | None:
    """What to install for the Ray backend, one line, or None when Ray can be imported (looked up
    without importing it)."""
    if importlib.util.find_spec("ray") is None:
        return "the ray backend needs Ray, which is not installed: pip install 'eq-env[ray]'"
    return None


class Executor(abc.ABC):
    """Runs independent calls of one function and yields their results as they finish."""

    name: str = ""

    def runs_inline(self, calls: int) -> bool:
        """Whether ``calls`` calls are better run one by one in this process, in order (then the caller
        does so itself and never calls :meth:`map_unordered`)."""
        return False

    @abc.abstractmethod
    def map_unordered(
        self, fn: Callable[..., T], calls: Sequence[Call], names: Sequence[str] = ()
    ) -> Generator[T, None, None]:
        """``fn(*args, **kwargs)`` for each call, yielded as each finishes (in any order). ``names`` (one per
        call) name a call in an error. Leaving the iteration early (an exception, ``close()``) ends or
        cancels the calls still running."""

    def describe(self) -> str:
        """Where the calls run, for a progress line or a log."""
        return self.name


class LocalExecutor(Executor):
    """A pool of ``jobs`` worker processes on this machine (today's behaviour, the default).

    The workers die with the driver, leave Ctrl-C to it, and are terminated at once when the iteration
    is left by an exception (see :func:`worker_pool`).
    """

    name = "local"

    def __init__(self, jobs: int = 1) -> None:
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
        self.jobs = jobs

    def runs_inline(self, calls: int) -> bool:
        return self.jobs == 1 or calls <= 1

    def map_unordered(
        self, fn: Callable[..., T], calls: Sequence[Call], names: Sequence[str] = ()
    ) -> Generator[T, None, None]:
        from concurrent.futures import as_completed

        with worker_pool(self.jobs) as pool:
            futures = [pool.submit(fn, *args, **kwargs) for args, kwargs in calls]
            for future in as_completed(futures):
                yield future.result()

    def describe(self) -> str:
        return f"local ({self.jobs} process{'es' if self.jobs > 1 else ''})"


class RayExecutor(Executor):
    """One Ray core task per call.

    ``address``: a running cluster to join (``"HOST:PORT"`` of its head, or ``"auto"`` for the one this
    machine belongs to); None starts a Ray instance on this machine for the iteration, with ``num_cpus``
    CPUs (default: Ray's count); both as :func:`ray_connected` does. ``max_retries``: how often Ray
    resubmits a task lost with its worker or node. Each task asks for one CPU.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None, max_retries: int = 3) -> None:
        _check_ray(address, num_cpus)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        self.address = address
        self.num_cpus = num_cpus
        self.max_retries = max_retries

    def describe(self) -> str:
        return f"ray (cluster at {_shown(self.address)})" if self.address else "ray (local instance)"

    def map_unordered(
        self, fn: Callable[..., T], calls: Sequence[Call], names: Sequence[str] = ()
    ) -> Generator[T, None, None]:
        with ray_connected(self.address, num_cpus=self.num_cpus) as ray:
            from ray import exceptions as rex

            lost = (rex.WorkerCrashedError, rex.NodeDiedError, rex.ObjectLostError, rex.OwnerDiedError)
            task = ray.remote(num_cpus=1, max_retries=self.max_retries, retry_exceptions=False)(_call)
            pending = {task.remote(fn, args, dict(kwargs)): i for i, (args, kwargs) in enumerate(calls)}
            try:
                while pending:
                    ready, _ = ray.wait(list(pending), num_returns=1)
                    for ref in ready:
                        i = pending.pop(ref)
                        try:
                            result = ray.get(ref)
                        except rex.RayTaskError as err:  # the call raised: raise what it raised, as locally
                            cause = getattr(err, "cause", None)
                            raise (cause if isinstance(cause, Exception) else err) from None
                        except lost as err:
                            name = names[i] if i < len(names) else f"call {i}"
                            raise RunLostError(
                                f"run {name} was lost with its Ray worker or node {self.max_retries + 1} time(s) "
                                f"({type(err).__name__}); run the same command again to complete it"
                            ) from None
                        yield result
            finally:
                for ref in pending:  # left early: what still runs is of no use to anyone
                    with contextlib.suppress(Exception):
                        ray.cancel(ref, force=True)


@contextlib.contextmanager
def ray_connected(address: str | None = None, *, num_cpus: int | None = None) -> Iterator[Any]:
    """The ``ray`` module, initialised for this driver for the ``with`` block, shut down when it is left.

    ``address``: a running cluster to join (``"HOST:PORT"`` of its head, or ``"auto"``); None starts a Ray
    instance on this machine with ``num_cpus`` CPUs (default: Ray's count), on the loopback address, no
    dashboard, in a short temporary directory (Ray's socket paths must fit the 107-byte limit of AF_UNIX
    paths), removed afterwards (after a SIGKILL, by the next start), with this process's token for Ray's
    authentication (in the environment for the block, unless ``RAY_AUTH_MODE`` or ``RAY_AUTH_TOKEN`` is
    set: nothing is written to ``~/.ray``). Every local start of a process has the same token, since Ray
    reads it once per process, so a command may start instances one after another (the Einstein reproduce:
    its runs, then its taxonomy), and ``ray`` may have been imported before. Usage statistics are off
    (``RAY_USAGE_STATS_ENABLED=0`` unless set). A driver already connected (``ray.is_initialized()``) is
    used as it is and left connected.

    The start-up of :class:`RayExecutor` and of RLlib training (``baselines/rllib.py``). Refusals (Ray not
    installed, an empty address, ``num_cpus`` with an address, nothing answering at the address, no cluster
    there) are one-line ValueErrors.
    """
    _check_ray(address, num_cpus)
    if address is not None:
        _probe(address)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    imported = "ray" in sys.modules
    with _token_of_its_own(address is None) as token_set_here:
        import ray

        if ray.is_initialized():
            yield ray
            return
        if token_set_here and imported:
            _reread_auth_mode()
        temp_dir = None
        options: dict[str, Any] = {"logging_level": logging.WARNING, "configure_logging": True}
        if address is not None:
            options["address"] = address  # never num_cpus here: joining a cluster refuses it
        else:
            temp_dir = _temp_dir()
            # on the loopback address: a Ray instance of one command is nobody else's to join
            options.update(num_cpus=num_cpus, include_dashboard=False, _temp_dir=temp_dir, _node_ip_address="127.0.0.1")
        try:
            ray.init(**options)
        except BaseException as err:
            if temp_dir:
                shutil.rmtree(temp_dir, ignore_errors=True)
            if isinstance(err, ConnectionError):  # no cluster at the address (or "auto" with none running)
                raise ValueError(
                    f"cannot join the Ray cluster at {_shown(address or 'auto')}: {_first_line(err)}"
                ) from None
            raise
        try:
            yield ray
        finally:
            ray.shutdown()
            if temp_dir:
                shutil.rmtree(temp_dir, ignore_errors=True)


TEMP_PREFIX = "eqray"  # + the driver's pid: the temporary directories of the Ray instances of commands


def _temp_dir() -> str:
    """A short directory for a Ray instance started here. A driver killed by SIGKILL cannot remove its own:
    those of drivers no longer running are removed first."""
    parent = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
    for path in Path(parent).glob(f"{TEMP_PREFIX}*-*"):
        pid = path.name.removeprefix(TEMP_PREFIX).partition("-")[0]
        with contextlib.suppress(OSError, ValueError):
            if path.stat().st_uid == os.getuid() and not _running(int(pid)):
                shutil.rmtree(path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", dir=parent)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# Ray 2.60 reads its authentication settings once per process, not at each ray.init (read in its sources):
# * the mode (RAY_AUTH_MODE) into its RayConfig when `ray` is imported; ray.init re-reads it only when it
#   sets the mode itself (RAY_AUTH_MODE unset: authentication_token_setup.enable_token_auth_by_default);
# * the token (RAY_AUTH_TOKEN) the first time it is needed, by a C++ AuthenticationTokenLoader that caches
#   it for the life of the process: ray.shutdown does not reset it.
# The GCS, raylet and workers of each new instance read both afresh from the environment they inherit. A
# fresh token at every start therefore broke the second start of a process (its GCS held the new token,
# the driver still sent the first: InvalidAuthToken, e.g. in the Einstein reproduce's taxonomy after its
# runs), and Ray imported before the mode was set (find_spec("ray.rllib") runs ray/__init__) left the
# driver sending none. Hence one token for the whole process, and the mode re-read when Ray was imported
# before it was set.
@functools.cache
def _process_token() -> str:
    """The token of every Ray instance this process starts (made once: Ray's driver keeps the first it read)."""
    return secrets.token_hex(32)


@contextlib.contextmanager
def _token_of_its_own(local: bool) -> Iterator[bool]:
    """For a Ray instance started here (``local``) with no token auth configured: this process's token
    (:func:`_process_token`) in its environment (which Ray's processes inherit) for the block; yields whether
    it was set. Otherwise Ray 2.60 makes one and writes it to ``~/.ray/auth_token``, a secret in the user's
    home that outlives the command."""
    if not local or "RAY_AUTH_MODE" in os.environ or "RAY_AUTH_TOKEN" in os.environ:
        yield False  # the user's own settings (e.g. RAY_AUTH_MODE=disabled) stand
        return
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=_process_token())
    try:
        yield True
    finally:
        for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
            os.environ.pop(name, None)


def _reread_auth_mode() -> None:
    """Ray was imported before RAY_AUTH_MODE was set here, so its RayConfig holds the mode of that moment
    (``disabled``, or this process's token mode at an earlier start): have it read the environment again,
    as Ray's own ``_enable_token_auth`` does when ray.init sets the mode itself."""
    from ray._raylet import Config  # type: ignore[import-not-found]

    Config.initialize("")


def _check_ray(address: str | None, num_cpus: int | None) -> None:
    missing = ray_missing()
    if missing:
        raise ValueError(missing)
    if address is not None and not address.strip():
        raise ValueError("the Ray address is empty; give HOST:PORT of the cluster's head, or auto")
    if address is not None and num_cpus is not None:
        raise ValueError("a Ray cluster's nodes decide its CPUs: give no CPU count (--jobs) with a Ray address")
    if num_cpus is not None and (isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1):
        raise ValueError(f"num_cpus must be a positive integer, got {num_cpus!r}")


PROBE_TIMEOUT = 5.0  # seconds for a cluster's head to accept a connection


def _shown(address: str) -> str:
    """An address as it may be printed: without user information (``ray://USER:SECRET@HOST:PORT``)."""
    if "@" not in address:
        return address
    scheme = "ray://" if address.startswith("ray://") else ""
    return scheme + address.rpartition("@")[2]


def _probe(address: str) -> None:
    """Refuse at once, in one line, an address where nothing listens: Ray itself retries an unreachable
    head for minutes (a refused port on this machine hung ``ray.init`` for over 300 s)."""
    target = _shown(address).removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if address == "auto" or not host or not port.isdigit():
        return  # "auto" (Ray looks it up) or a form Ray parses itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT).close()
    except OSError as err:
        why = "timed out" if isinstance(err, TimeoutError) else (err.strerror or type(err).__name__)
        raise ValueError(
            f"cannot join the Ray cluster at {target}: nothing answers there ({why}); "
            "--ray-address expects HOST:PORT of a running head (ray start --head)"
        ) from None


def _call(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    """A Ray task's body. (A fresh worker has the games registered already: unpickling this function imports
    its module, and so the package, whose import registers them.)"""
    return fn(*args, **kwargs)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def executor_from_args(backend: str, jobs: int | None, ray_address: str | None, default_jobs: int) -> Executor:
    """The executor of a command's ``--backend``, ``--jobs`` and ``--ray-address`` flags.

    ``local``: a process pool of ``jobs`` workers (``default_jobs`` when not given); ``--ray-address`` is
    refused. ``ray``: a Ray instance started on this machine with ``jobs`` CPUs (Ray's count when not
    given), or the cluster at ``--ray-address``, whose nodes decide the CPUs (``--jobs`` is refused; an
    address where nothing answers is refused within seconds). Every refusal is a one-line ValueError.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "local":
        if ray_address is not None:
            raise ValueError("--ray-address goes with --backend ray")
        return LocalExecutor(default_jobs if jobs is None else jobs)
    if ray_address is not None and jobs is not None:
        raise ValueError("--jobs sets the CPUs of a Ray instance started here; a cluster's (--ray-address) are its own")
    executor = RayExecutor(ray_address, num_cpus=jobs)
    if ray_address is not None:
        _probe(ray_address)  # before the command writes anything
    return executor


def _worker_init() -> None:
    """A pool worker: dies with its parent, and leaves Ctrl-C to it (a worker interrupted while it holds the pool's
    queue lock would leave the parent waiting forever; the parent ends the workers itself)."""
    import signal

    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def worker_pool(jobs: int) -> Iterator[ProcessPoolExecutor]:
    """A process pool whose workers end with it when the block is left by an exception (Ctrl-C, a failed run):
    they are terminated at once, not waited for, so an interrupted command exits in a moment."""
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init)
    try:
        yield pool
    except BaseException:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _die_with_parent() -> None:
    """In a worker: exit when the parent dies, even by SIGKILL (Linux), instead of lingering forever."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: workers end when the pool's pipe closes, as usual
        pass
