"""LLM episodes per second against a local OpenAI-compatible server answering in 100 ms.

The LLM proposer plays the paper's rule validator (one request per episode,
the cache off) through the concurrent runner, at concurrency 1, 8 and 32,
against ``agents.fake_server`` running in its own process. The ideal rate is
latency-bound: concurrency / latency episodes per second; the script prints
the measured rate and its ratio to the ideal.

    python benchmarks/llm_concurrency.py [--latency 0.1] [--waves 40]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from agents.client import LLMClient, configure
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.runner import FailedEpisode, play_concurrent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the server takes per answer")
    parser.add_argument("--waves", type=int, default=40,
                        help="episodes per measurement, in multiples of the concurrency (default 40: steady state, "
                        "not the ramp up and down)")  # fmt: skip
    parser.add_argument("--levels", default="1,8,32")
    args = parser.parse_args()
    configure(cache="off")
    config = ExchangeAuditConfig()
    # the server runs in its own process, as a real endpoint would: it does not share our interpreter
    server = subprocess.Popen([sys.executable, "-m", "agents.fake_server", "--latency", str(args.latency)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        spec = f"llm:model=bench,base_url={url}"
        play_concurrent(config, spec, "rule", episodes=8, seed=99, concurrency=8)  # warm up: imports, pool
        print(f"server latency {args.latency * 1000:.0f} ms, one request per episode")
        for level in (int(x) for x in args.levels.split(",")):
            episodes = args.waves * level
            LLMClient.forget()
            start = time.perf_counter()
            out = play_concurrent(config, spec, "rule", episodes=episodes, seed=level, concurrency=level)
            elapsed = time.perf_counter() - start
            assert not any(isinstance(e, FailedEpisode) for e in out)
            rate, ideal = episodes / elapsed, level / args.latency
            print(f"concurrency {level:>3}: {rate:7.1f} episodes/s, ideal {ideal:6.1f}, "
                  f"{rate / ideal:6.1%} of ideal ({episodes} episodes in {elapsed:.2f} s)")  # fmt: skip
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
