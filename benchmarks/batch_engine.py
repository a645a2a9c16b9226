"""Batch engine vs the AEC loop: episodes per second on the paper preset, scripted policies, one core.

Both play the truth-knowing honest proposer against the paper's rule-engine
validator (preset ``paper_scripted``) in the same process: the AEC loop is
``eq_env.exchange_audit.runner.play`` (PettingZoo environment, standard wrappers, policies
acting on observation dicts), the batch engine ``eq_env.exchange_audit.batch.simulate``.
Both produce the same per-episode outcomes (tests/test_batch.py), and the
script checks that here too on the episodes both ran.

    python benchmarks/batch_engine.py [--aec-episodes 5000] [--batch-episodes 2000000]
"""

from __future__ import annotations

import argparse
import os
import time

from eq_env.core.policy import make_policy
from eq_env.exchange_audit.batch import columns_equal, simulate
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.runner import play, records_to_columns

PROPOSER, VALIDATOR = "honest:claims_from=truth", "rule"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--aec-episodes", type=int, default=5_000)
    parser.add_argument("--batch-episodes", type=int, default=2_000_000)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    config = ExchangeAuditConfig.from_preset("paper_scripted")

    start = time.perf_counter()
    records = play(config, PROPOSER, VALIDATOR, episodes=args.aec_episodes, seed=0)
    aec_rate = args.aec_episodes / (time.perf_counter() - start)

    simulate(config, make_policy(PROPOSER), make_policy(VALIDATOR), episodes=10_000, seed=1)  # warm up
    start = time.perf_counter()
    simulate(config, make_policy(PROPOSER), make_policy(VALIDATOR), episodes=args.batch_episodes, seed=0)
    batch_rate = args.batch_episodes / (time.perf_counter() - start)

    same = simulate(config, make_policy(PROPOSER), make_policy(VALIDATOR), episodes=args.aec_episodes, seed=0)
    differing = columns_equal(records_to_columns(records), same)
    print(f"AEC loop (runner.play):   {aec_rate:>12,.0f} episodes/s")
    print(f"batch engine (simulate):  {batch_rate:>12,.0f} episodes/s  (target >= 1,000,000 on one core)")
    print(f"ratio batch / AEC: {batch_rate / aec_rate:,.0f}x  (target >= 100x)")
    print(f"same outcomes on the {args.aec_episodes} common episodes: {'yes' if not differing else differing}")


if __name__ == "__main__":
    main()
