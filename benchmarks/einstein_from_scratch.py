"""A transformer trained from scratch on the Einstein puzzle's demonstrations, scored as an LLM player.

The whole pipeline on a real neural model, on a CPU, with nothing downloaded:

1. ``eq-env finetune demos --env einstein-puzzle --n 4 --comm-mode provide_and_seek`` — the oracle's games
   (generated puzzles of seed 0, none from the suite);
2. ``eq-env finetune tiny`` — a byte-level BPE tokenizer trained on that text, a 4-layer Llama-architecture
   decoder with random weights;
3. ``eq-env finetune sft`` — TRL's SFTTrainer, a fixed number of steps (a step budget, not a clock: the same
   command trains the same weights);
4. the checkpoint plays through the ordinary LLM-player path (``hf:path=DIR``: the prompts, the grammar, the
   re-asks and the fallback of ``llm``), greedy, on held-out generated puzzles (seed 1000), in seat 0 with the
   planner as partner and in both seats, beside random play and the oracle (the planner in both seats).

It prints, per condition, the success rate, the moves' validity (decisions whose final reply was a legal action,
re-asks per decision) and the turns, and writes ``results.json`` in ``--out``. The default budget took about 25
minutes on 2 cores here. Run it with::

    OMP_NUM_THREADS=1 python benchmarks/einstein_from_scratch.py --out runs/einstein-scratch
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def _run(argv: list[str]) -> None:
    from eq_env.cli import main

    print("+ eq-env " + " ".join(argv), flush=True)
    status = main(argv)
    if status:
        sys.exit(f"eq-env {argv[0]} {argv[1]} failed ({status})")


def _score(name: str, policies: dict[str, str], episodes: int, cache: Path) -> dict[str, Any]:
    from eq_env.agents.client import configure
    from eq_env.core.runner import evaluate, llm_summary
    from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig

    configure(cache="readwrite", cache_dir=cache)
    config = EinsteinPuzzleConfig(n=4, comm_mode="provide_and_seek")
    started = time.perf_counter()
    ev = evaluate("einstein-puzzle", config, policies, seeds=[1000], episodes=episodes, progress=True)
    summary = ev.summary
    row: dict[str, Any] = {
        "condition": name,
        "policies": policies,
        "episodes": episodes,
        "success_rate": summary["success_rate"][0],
        "steps": summary["steps"][0],
        "illegal_actions": summary["illegal_actions"][0],
        "rejected_placements": summary["rejected_placements"][0],
        "seconds": round(time.perf_counter() - started, 1),
    }
    llm = llm_summary("einstein-puzzle", config, ev.records, ev.failed)
    calls = sum(v["calls"] for k, v in llm.items() if isinstance(v, dict))
    if calls:
        fallbacks = sum(v["fallbacks"] for k, v in llm.items() if isinstance(v, dict))
        reasks = sum(v["reasks"] for k, v in llm.items() if isinstance(v, dict))
        row |= {
            "model_decisions": calls,
            "valid_action_rate": (calls - fallbacks) / calls,
            "reasks_per_decision": reasks / calls,
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("runs/einstein-scratch"))
    parser.add_argument("--puzzles", type=int, default=400, help="training puzzles (default 400)")
    parser.add_argument("--steps", type=int, default=600, help="SFT steps of 8 examples (default 600)")
    parser.add_argument("--episodes", type=int, default=30, help="evaluation episodes per condition (default 30)")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    demos, tiny, sft = out / "demos.jsonl", out / "tiny", out / "sft"
    started = time.perf_counter()
    if not demos.exists():
        _run(
            [
                "finetune",
                "demos",
                "--env",
                "einstein-puzzle",
                "--n",
                "4",
                "--comm-mode",
                "provide_and_seek",
                "--episodes",
                str(args.puzzles),
                "--out",
                str(demos),
            ]
        )
    if not (tiny / "config.json").exists():
        _run(["finetune", "tiny", "--data", str(demos), "--out", str(tiny)])
    _run(
        [
            "finetune",
            "sft",
            "--data",
            str(demos),
            "--model",
            str(tiny),
            "--out",
            str(sft),
            "--max-steps",
            str(args.steps),
            "--batch-size",
            "8",
            "--learning-rate",
            "0.001",
            "--logging-steps",
            "25",
            "--save-steps",
            "100",
        ]
    )
    trained = time.perf_counter() - started
    model = f"hf:path={sft / 'model'},max_tokens=16,max_reasks=2"
    conditions = [
        ("model + planner", {"player_0": model, "player_1": "planner"}),
        ("model + model", {"player_0": model, "player_1": model}),
        ("random + planner", {"player_0": "random", "player_1": "planner"}),
        ("random + random", {"player_0": "random", "player_1": "random"}),
        ("oracle (planner + planner)", {"player_0": "planner", "player_1": "planner"}),
    ]
    rows = [_score(name, policies, args.episodes, out / "cache") for name, policies in conditions]
    card = json.loads((sft / "card.json").read_text())
    result = {
        "puzzles": args.puzzles,
        "demonstrations": card["data_lines"],
        "steps": card["steps"],
        "final_loss": card["final_loss"],
        "parameters": json.loads((tiny / "tiny.json").read_text())["parameters"],
        "train_seconds": round(trained, 1),
        "decoding": "greedy (temperature 0)",
        "evaluation": "seed 1000 (held-out generated puzzles), n = 4, provide_and_seek",
        "rows": rows,
    }
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"\n{result['parameters']:,}-parameter model, {result['steps']} SFT steps on {card['data_lines']['kept']} "
        f"demonstrations (final logged loss {result['final_loss']}), {trained / 60:.1f} min; greedy, "
        f"{args.episodes} episodes of seed 1000 each"
    )
    print(f"{'condition':28} {'success':>8} {'valid':>7} {'re-asks':>8} {'turns':>6}")
    for r in rows:
        valid = f"{r['valid_action_rate']:.3f}" if "valid_action_rate" in r else "—"
        reasks = f"{r['reasks_per_decision']:.2f}" if "reasks_per_decision" in r else "—"
        print(f"{r['condition']:28} {r['success_rate']:8.3f} {valid:>7} {reasks:>8} {r['steps']:6.1f}")
    oracle = rows[-1]["success_rate"]
    if oracle:
        print(
            f"model + planner reaches {rows[0]['success_rate'] / oracle:.2f}x the oracle's success; "
            f"random + planner {rows[2]['success_rate'] / oracle:.2f}x"
        )


if __name__ == "__main__":
    main()
