"""``eq-env finetune``: train LLMs in the games — demonstrations, a model from scratch, SFT, GRPO, servers.

=========  ===================================================================================================
``demos``  a game's demonstrations for its LLM roles, as chat JSONL (``eq_env.finetune.demos``)
``tiny``   a tokenizer trained on a demonstration file and a randomly initialised small model
           (``eq_env.finetune.tiny``): a model to train from scratch, with nothing downloaded
``sft``    supervised fine-tuning on a demonstration file with TRL's SFTTrainer (``eq_env.finetune.sft``)
``grpo``   multi-turn RL with TRL's GRPOTrainer, whole episodes of the game (``eq_env.finetune.grpo``)
``serve``  a game as an OpenEnv environment server on 127.0.0.1 (``eq_env.finetune.openenv``)
=========  ===================================================================================================

The trained model plays every LLM role in-process: ``hf:path=OUT/model`` (``eq-env play``), ``--base-url
hf:OUT/model`` (``eq-env bench``). Needs the ``finetune`` extra: ``pip install "eq_env[finetune]"``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from eq_env.core.cli import Command, int_in, new_file, out_dir, path_arg, seed_arg

__all__ = ["COMMAND"]

_EXTRA = "install the finetune extra: pip install 'eq_env[finetune]'"


def _float_in(low: float, high: float) -> object:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number in [{low:g}, {high:g}], got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected a number in [{low:g}, {high:g}], got {text!r}")
        return value

    return parse


def _data_file(text: str) -> Path:
    path = path_arg(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{path}: no such file (write one with eq-env finetune demos)")
    return path


def _add_demos(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from eq_env.finetune import demos

    p = sub.add_parser(
        "demos", help="a game's demonstrations for its LLM roles (chat JSONL)", description=demos.__doc__
    )
    p.add_argument("--env", required=True, choices=sorted(demos.GAMES), dest="game", help="the game")
    p.add_argument("--out", type=new_file, required=True, help="the JSONL file to write")
    p.add_argument(
        "--split",
        choices=("train", "test"),
        default="train",
        help="train (default): disjoint from the bench's test sets; test: the bench's own states",
    )
    p.add_argument(
        "--episodes", type=int_in(1, 1_000_000), default=100, help="episodes (puzzles, states) (default 100)"
    )
    p.add_argument("--seed", type=seed_arg, default=None, help="the train split's seed (default: the game's)")
    p.add_argument("--roles", default=None, help="comma-separated roles (default: every LLM role of the game)")
    p.add_argument("--n", default=None, help="Einstein puzzle: object counts (default 4-6; test 7-8)")
    p.add_argument("--comm-mode", default=None, dest="comm_modes", help="Einstein puzzle: comm modes (default all)")


def _add_tiny(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from eq_env.finetune import tiny
    from eq_env.finetune.tiny import TinySpec

    d = TinySpec()
    p = sub.add_parser(
        "tiny",
        help="a small model from scratch: a tokenizer trained on the demonstrations, random weights",
        description=(tiny.__doc__ or "").split("\n\n")[0],
    )
    p.add_argument("--data", type=_data_file, required=True, help="a demonstration file: the tokenizer's text")
    p.add_argument("--out", type=out_dir, required=True, help="the checkpoint directory to write")
    p.add_argument("--vocab-size", type=int_in(300, 1 << 17), default=d.vocab_size)
    p.add_argument("--hidden-size", type=int_in(8, 1 << 14), default=d.hidden_size)
    p.add_argument("--layers", type=int_in(1, 256), default=d.layers)
    p.add_argument("--heads", type=int_in(1, 256), default=d.heads)
    p.add_argument("--intermediate-size", type=int_in(8, 1 << 16), default=d.intermediate_size)
    p.add_argument("--max-positions", type=int_in(64, 1 << 17), default=d.max_positions)
    p.add_argument("--seed", type=seed_arg, default=0, help="the weights' seed (default 0)")


def _add_sft(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from eq_env.finetune.sft import SFTHyper

    d = SFTHyper()
    p = sub.add_parser(
        "sft",
        help="supervised fine-tuning on demonstrations (TRL SFTTrainer)",
        description=(sys.modules["eq_env.finetune.sft"].__doc__ or ""),
    )
    p.add_argument("--data", type=_data_file, required=True, help="a demonstration file (eq-env finetune demos)")
    p.add_argument("--model", required=True, help="a checkpoint directory or a Hugging Face model id")
    p.add_argument("--out", type=out_dir, required=True, help="the run's directory (run again to resume)")
    p.add_argument("--epochs", type=_float_in(0, 1e4), default=d.epochs)
    p.add_argument("--max-steps", type=int_in(0, 1 << 31), default=d.max_steps, help="0 (default): --epochs decides")
    p.add_argument("--learning-rate", type=_float_in(1e-12, 1.0), default=d.learning_rate)
    p.add_argument("--batch-size", type=int_in(1, 1 << 16), default=d.batch_size)
    p.add_argument("--grad-accum", type=int_in(1, 1 << 16), default=d.grad_accum)
    p.add_argument("--max-length", type=int_in(16, 1 << 20), default=d.max_length, help="tokens per example")
    p.add_argument("--logging-steps", type=int_in(1, 1 << 24), default=d.logging_steps)
    p.add_argument("--save-steps", type=int_in(1, 1 << 24), default=d.save_steps)
    p.add_argument("--lora", action="store_true", help="train a LoRA adapter (PEFT) instead of every weight")
    p.add_argument("--lora-r", type=int_in(1, 4096), default=d.lora_r)
    p.add_argument("--verified-only", action="store_true", help="drop demonstrations the game's verifiers flag")
    p.add_argument("--seed", type=seed_arg, default=0)


def _add_serve(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from eq_env.finetune.grpo import config_arg

    p = sub.add_parser(
        "serve",
        help="a game as an OpenEnv environment server on 127.0.0.1",
        description="Serve a game over OpenEnv (openenv-core) on 127.0.0.1: one seat is the remote player's, "
        "the others the partner's; see eq_env.finetune.openenv.",
    )
    p.add_argument("--env", required=True, dest="game", help="the game")
    p.add_argument("--role", required=True, help="the remote player's role (player_0, proposer, coordinator...)")
    p.add_argument("--partner", default="default", help="the other roles' policy spec (default: eq-env play's)")
    p.add_argument("--config", type=config_arg, default={}, help="the game's parameters: n=4,comm_mode=none")
    p.add_argument("--port", type=int_in(1, 65535), default=8000)
    p.add_argument("--max-reasks", type=int_in(0, 20), default=2)
    p.add_argument("--max-sessions", type=int_in(1, 4096), default=8, help="episodes at once (default 8)")


def _serve(args: argparse.Namespace) -> int:
    import importlib.util

    if importlib.util.find_spec("openenv") is None:
        raise ValueError(f"openenv-core not installed: {_EXTRA}")
    from eq_env.finetune import openenv

    return openenv.run(args)


def _arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="finetune_command", required=True, metavar="{demos,tiny,sft,grpo,serve}")
    _add_demos(sub)
    _add_tiny(sub)
    _add_sft(sub)
    from eq_env.finetune import grpo

    grpo.add_arguments(sub)
    _add_serve(sub)


def _need_extra() -> None:
    import importlib.util

    missing = [m for m in ("transformers", "trl", "datasets", "tokenizers") if importlib.util.find_spec(m) is None]
    if missing:
        raise ValueError(f"{', '.join(missing)} not installed: {_EXTRA}")


def _demos(args: argparse.Namespace) -> int:
    from eq_env.finetune import demos

    roles = None if args.roles is None else [r.strip() for r in args.roles.split(",") if r.strip()]
    stats = demos.write(
        args.game,
        args.out,
        split=args.split,
        episodes=args.episodes,
        seed=args.seed,
        roles=roles,
        sizes=args.n,
        comm_modes=args.comm_modes,
    )
    print(f"wrote {args.out}: {stats}", file=sys.stderr)
    return 0


def _tiny(args: argparse.Namespace) -> int:
    _need_extra()
    from eq_env.finetune.data import read_demos
    from eq_env.finetune.tiny import TinySpec, make_tiny

    spec = TinySpec(
        args.vocab_size, args.hidden_size, args.layers, args.heads, args.intermediate_size, args.max_positions
    )
    texts = [m["content"] for line in read_demos(args.data) for m in line["messages"]]
    make_tiny(args.out, texts, spec, args.seed)
    print(
        f"wrote {args.out}: a {args.layers}-layer model from scratch, tokenizer trained on {args.data}", file=sys.stderr
    )
    return 0


def _sft(args: argparse.Namespace) -> int:
    _need_extra()
    from eq_env.finetune.sft import SFTHyper, sft

    hyper = SFTHyper(
        epochs=args.epochs,
        max_steps=args.max_steps,
        learning_rate=args.learning_rate,
        batch_size=args.batch_size,
        grad_accum=args.grad_accum,
        max_length=args.max_length,
        logging_steps=args.logging_steps,
        save_steps=args.save_steps,
        lora=args.lora,
        lora_r=args.lora_r,
        verified_only=args.verified_only,
        seed=args.seed,
    )
    card = sft(args.data, args.model, args.out, hyper)
    loss = card["final_loss"]
    logged = f"final logged loss {loss:.4f}" if loss is not None else "no loss logged: --logging-steps > steps"
    print(
        f"wrote {args.out}/model ({card['steps']} steps, {logged}); play it with hf:path={args.out}/model",
        file=sys.stderr,
    )
    return 0


def _run(args: argparse.Namespace) -> int:
    from eq_env.finetune import grpo

    run = {"demos": _demos, "tiny": _tiny, "sft": _sft, "grpo": grpo.run, "serve": _serve}
    return run[args.finetune_command](args)


COMMAND = Command(
    "finetune",
    "train LLMs in the games: demos, tiny, sft, grpo, serve",
    _arguments,
    _run,
    (__doc__ or "").split("\n\n")[0],
    "a finetune run keeps its checkpoints in OUT/checkpoints; run the same command again to resume",
)
