"""What the training commands share (``finetune sft``, ``finetune grpo``, ``finetune tiny``): loading a chat
tokenizer, the trainer's common arguments, checkpoints to resume from, the training curve, the card, and the
checks of a run's settings.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "chat_tokenizer",
    "check_integers",
    "check_numbers",
    "has_accelerator",
    "last_checkpoint",
    "library_versions",
    "trainer_arguments",
    "write_card",
    "write_curve",
]


def check_integers(owner: Any, ranges: Mapping[str, tuple[int, int]]) -> None:
    """A ValueError (one line) for the first of ``owner``'s attributes ``ranges`` names that is not an integer
    in its [low, high] (a bool is not an integer here)."""
    for name, (low, high) in ranges.items():
        value = getattr(owner, name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r}")


def check_numbers(owner: Any, ranges: Mapping[str, tuple[float, float]]) -> None:
    """As :func:`check_integers`, for numbers (int or float) in [low, high]."""
    for name, (low, high) in ranges.items():
        value = getattr(owner, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ValueError(f"{name} must be a number in [{low:g}, {high:g}], got {value!r}")


def chat_tokenizer(model: str, used_for: str) -> Any:
    """``model``'s tokenizer, with a pad token; a ValueError (one line) when it cannot be loaded or has no
    chat template (``used_for`` says why one is needed)."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
    except (OSError, ValueError) as err:
        raise ValueError(f"--model {model}: cannot load its tokenizer ({str(err).splitlines()[0][:200]})") from None
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"--model {model}: its tokenizer has no chat template ({used_for})")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def has_accelerator() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def trainer_arguments(
    checkpoints: Path, *, seed: int, logging_steps: int, save_steps: int, progress: bool, checkpointing: bool = False
) -> dict[str, Any]:
    """The arguments both trainers' configurations get: checkpoints (the last two kept), seeds, no reporting;
    without a GPU, float32 and no activation checkpointing (TRL's bf16 autocast and checkpointing made a CPU step
    of the tiny model 4.4 s instead of 0.7 s here)."""
    gpu = has_accelerator()
    return {
        "output_dir": str(checkpoints),
        "logging_steps": logging_steps,
        "save_steps": save_steps,
        "save_total_limit": 2,
        "seed": seed,
        "data_seed": seed,
        "report_to": [],
        "use_cpu": not gpu,
        "bf16": gpu,
        "activation_checkpointing": checkpointing,  # (transformers 5's name of gradient_checkpointing)
        "disable_tqdm": not progress,
    }


def last_checkpoint(directory: Path) -> Path | None:
    """The trainer's last ``checkpoint-N`` in ``directory`` (None when there is none): where a rerun resumes."""
    done = [p for p in directory.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return max(done, key=lambda p: int(p.name.split("-")[-1])) if done else None


def write_curve(
    history: list[dict[str, Any]], out: Path, title: str, *, value: str = "loss", ylabel: str = ""
) -> list[dict[str, float]]:
    """``curve.csv`` (step, epoch, ``value``, learning rate) and ``curve.png`` from a trainer's log history
    (its entries with a ``loss``)."""
    rows = [
        {
            "step": h["step"],
            "epoch": h.get("epoch", 0.0),
            value: h["loss"],
            "learning_rate": h.get("learning_rate", 0.0),
        }
        for h in history
        if "loss" in h and "step" in h
    ]
    with (out / "curve.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["step", "epoch", value, "learning_rate"])
        writer.writeheader()
        writer.writerows(rows)
    if rows:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot([r["step"] for r in rows], [r[value] for r in rows])
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel or "training loss (replies' tokens)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "curve.png", dpi=120)
        plt.close(fig)
    return rows


def library_versions() -> dict[str, str]:
    """The versions of the training libraries installed (for the card)."""
    import importlib.metadata as md

    out = {}
    for name in ("trl", "transformers", "torch", "peft", "datasets", "accelerate", "eq-env"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


def write_card(out: Path, card: dict[str, Any]) -> None:
    """``card.json`` and its readable form ``card.md`` (written last: a finished run has both)."""
    hyper = card.get("hyper", {})
    lines = [
        f"# {card['kind'].upper()} model card",
        "",
        f"- base model: `{card['base_model']}`",
        f"- data: `{card['data']}`"
        + (f" (sha256 `{card['data_sha256'][:16]}…`)" if card.get("data_sha256") else "")
        + f"; lines {card['data_lines']}",
        f"- steps: {card['steps']}; final logged {'mean episode reward' if card['kind'] == 'grpo' else 'loss'}: "
        f"{card['final_loss']}",
        f"- versions: {', '.join(f'{k} {v}' for k, v in card['versions'].items())}",
        "",
        "| setting | value |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in hyper.items()),
        "",
        "Play it: `eq-env play ... --<role> hf:path=" + str(out / "model") + "`.",
        "",
    ]
    (out / "card.md").write_text("\n".join(lines))
    (out / "card.json").write_text(json.dumps(card, indent=2) + "\n")
