"""LLM episodes per second against a local OpenAI-compatible server answering in 100 ms.

The LLM proposer plays the paper's rule validator (one request per episode,
the cache off) through the concurrent runner, at concurrency 1, 8, 32, 64 and
128, against ``eq_env.agents.fake_server`` running in its own process. The ideal rate
is latency-bound: concurrency / latency episodes per second; the script prints,
per level, the measured rate, its ratio to the ideal, and the CPU time per
request of the client (this process: prompt, request, transport, reply
checking, environment steps) and of the server (its process, where ``/proc``
tells). Each level is measured ``--repeat`` times and the best run is shown.

    python benchmarks/llm_concurrency.py [--latency 0.1] [--waves 40] [--levels 1,8,32,64,128] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from eq_env.agents.client import LLMClient, configure
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.runner import FailedEpisode, play_concurrent


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (None where ``/proc`` does not tell)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the server takes per answer")
    parser.add_argument("--waves", type=int, default=40,
                        help="episodes per measurement, in multiples of the concurrency (default 40: steady state, "
                        "not the ramp up and down)")  # fmt: skip
    parser.add_argument("--levels", default="1,8,32,64,128")
    parser.add_argument("--repeat", type=int, default=1, help="runs per level; the best is reported")
    args = parser.parse_args()
    configure(cache="off")
    config = ExchangeAuditConfig()
    # the server runs in its own process, as a real endpoint would: it does not share our interpreter
    server = subprocess.Popen([sys.executable, "-m", "eq_env.agents.fake_server", "--latency", str(args.latency)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        spec = f"llm:model=bench,base_url={url}"
        play_concurrent(config, spec, "rule", episodes=8, seed=99, concurrency=8)  # warm up: imports, pool
        print(f"server latency {args.latency * 1000:.0f} ms, one request per episode, best of {args.repeat}; "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} before")  # fmt: skip
        for level in (int(x) for x in args.levels.split(",")):
            episodes = args.waves * level
            best: tuple[float, float, float | None] | None = None
            for _ in range(args.repeat):
                LLMClient.forget()
                served = _cpu_seconds(server.pid)
                cpu, start = time.process_time(), time.perf_counter()
                out = play_concurrent(config, spec, "rule", episodes=episodes, seed=level, concurrency=level)
                elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
                after = _cpu_seconds(server.pid)
                server_cpu = None if served is None or after is None else after - served
                assert not any(isinstance(e, FailedEpisode) for e in out)
                if best is None or elapsed < best[0]:
                    best = (elapsed, cpu, server_cpu)
            assert best is not None
            elapsed, cpu, server_cpu = best
            rate, ideal = episodes / elapsed, level / args.latency
            served_ms = "" if server_cpu is None else f", server {server_cpu / episodes * 1000:.2f} ms"
            print(f"concurrency {level:>3}: {rate:7.1f} episodes/s, ideal {ideal:6.1f}, {rate / ideal:6.1%} of ideal "
                  f"({episodes} episodes in {elapsed:.2f} s); CPU per request: client {cpu / episodes * 1000:.2f} ms"
                  f"{served_ms}")  # fmt: skip
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
