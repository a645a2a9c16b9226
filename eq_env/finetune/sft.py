"""Supervised fine-tuning on a game's demonstrations with TRL's ``SFTTrainer`` (``eq-env finetune sft``).

:func:`sft` trains ``model`` (a checkpoint directory or a Hugging Face model id) on a demonstration file
(:mod:`eq_env.finetune.data`), the loss on the replies only (TRL's prompt–completion form), optionally through
a LoRA adapter (PEFT). It writes into ``out``:

* ``model/`` — the trained model and its tokenizer (with ``--lora``: the adapter), which ``hf:path=OUT/model``
  plays (:mod:`eq_env.agents.hf`);
* ``curve.csv`` and ``curve.png`` — the training loss (and learning rate) per logging step;
* ``card.json`` and ``card.md`` — what was trained on what: the base model, the data file and its SHA-256, the
  lines kept and dropped by the filter, every hyperparameter, the library versions, the final loss;
* ``checkpoints/`` — the trainer's checkpoints: the same command run again resumes from the last one (a run
  killed mid-way loses at most ``save_steps`` steps), and one that finished says so and stops.

The same data, model, arguments and seed train the same weights on the same machine and libraries (TRL and
``transformers`` seed Python, NumPy and torch from ``seed``; the data order comes from it too).
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from eq_env.finetune.data import digest, prompt_completion, read_demos, verified

__all__ = ["SFTHyper", "sft"]


@dataclass(frozen=True)
class SFTHyper:
    """The training run's settings (all on the card). ``max_steps`` bounds the run (0: ``epochs`` epochs)."""

    epochs: float = 1.0
    max_steps: int = 0
    learning_rate: float = 2e-4
    batch_size: int = 8
    grad_accum: int = 1
    max_length: int = 2048
    warmup_ratio: float = 0.03
    weight_decay: float = 0.0
    logging_steps: int = 10
    save_steps: int = 200
    lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    verified_only: bool = False
    gradient_checkpointing: bool = False  # (TRL's default is on: memory for time, which a CPU run need not pay)
    seed: int = 0

    def __post_init__(self) -> None:
        positive = {"batch_size": self.batch_size, "grad_accum": self.grad_accum, "max_length": self.max_length}
        positive |= {"logging_steps": self.logging_steps, "save_steps": self.save_steps, "lora_r": self.lora_r}
        for name, count in positive.items():
            if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 1 << 24:
                raise ValueError(f"{name} must be a positive integer, got {count!r}")
        if isinstance(self.max_steps, bool) or not isinstance(self.max_steps, int) or not 0 <= self.max_steps < 1 << 31:
            raise ValueError(f"max_steps must be a non-negative integer (0: --epochs decides), got {self.max_steps!r}")
        bounded: tuple[tuple[str, float, float], ...] = (
            ("epochs", self.epochs, 1e4),
            ("learning_rate", self.learning_rate, 1.0),
            ("warmup_ratio", self.warmup_ratio, 0.99),
            ("weight_decay", self.weight_decay, 1.0),
            ("lora_dropout", self.lora_dropout, 1.0),
        )
        for name, value, high in bounded:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= high:
                raise ValueError(f"{name} must be a number in [0, {high:g}], got {value!r}")
        if self.max_steps == 0 and self.epochs <= 0:
            raise ValueError("give epochs > 0 or max_steps > 0: the run has no length")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**32:
            raise ValueError(f"seed must be an integer in [0, 2^32), got {self.seed!r}")


def _dataset(data: Path, hyper: SFTHyper) -> tuple[Any, dict[str, int]]:
    from datasets import Dataset

    rows, counts = [], {"lines": 0, "kept": 0, "dropped_unverified": 0}
    for line in read_demos(data):
        counts["lines"] += 1
        if hyper.verified_only and not verified(line):
            counts["dropped_unverified"] += 1
            continue
        rows.append(prompt_completion(line))
    counts["kept"] = len(rows)
    if not rows:
        raise ValueError(f"{data}: no demonstration to train on ({counts['lines']} line(s), none kept)")
    return Dataset.from_list(rows), counts


def _last_checkpoint(directory: Path) -> Path | None:
    done = [p for p in directory.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return max(done, key=lambda p: int(p.name.split("-")[-1])) if done else None


def write_curve(history: list[dict[str, Any]], out: Path, title: str) -> list[dict[str, float]]:
    """``curve.csv`` (step, epoch, loss, learning rate) and ``curve.png`` from a trainer's log history."""
    rows = [
        {
            "step": h["step"],
            "epoch": h.get("epoch", 0.0),
            "loss": h["loss"],
            "learning_rate": h.get("learning_rate", 0.0),
        }
        for h in history
        if "loss" in h and "step" in h
    ]
    with (out / "curve.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["step", "epoch", "loss", "learning_rate"])
        writer.writeheader()
        writer.writerows(rows)
    if rows:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot([r["step"] for r in rows], [r["loss"] for r in rows])
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (replies' tokens)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "curve.png", dpi=120)
        plt.close(fig)
    return rows


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for name in ("trl", "transformers", "torch", "peft", "datasets", "accelerate", "eq-env"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


def sft(data: Path, model: str, out: Path, hyper: SFTHyper = SFTHyper(), *, progress: bool = True) -> dict[str, Any]:
    """Fine-tune ``model`` on the demonstrations in ``data``; write ``out`` (module docstring). Returns the card.

    ValueError (one line) for a bad data file, an empty selection, or a model that cannot be loaded; a run
    started in ``out`` with other settings is refused rather than resumed into a mix."""
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    dataset, counts = _dataset(data, hyper)
    out.mkdir(parents=True, exist_ok=True)
    settings = {"data": str(data), "data_sha256": digest(data), "base_model": model, "hyper": asdict(hyper)}
    started_with = out / "run.json"
    if started_with.exists():
        before = json.loads(started_with.read_text())
        if before != settings:
            changed = sorted(k for k in settings if before.get(k) != settings[k])
            raise ValueError(
                f"{out}: a run with other settings ({', '.join(changed)}) is there; give another --out to start anew"
            )
    else:
        started_with.write_text(json.dumps(settings, indent=2) + "\n")
    card_path = out / "card.json"
    if card_path.exists() and (out / "model").is_dir():
        return dict(json.loads(card_path.read_text()))  # finished: nothing to do
    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
    except (OSError, ValueError) as err:
        raise ValueError(f"--model {model}: cannot load its tokenizer ({str(err).splitlines()[0][:200]})") from None
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"--model {model}: its tokenizer has no chat template (the demonstrations are chats)")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    peft_config = None
    if hyper.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=hyper.lora_r,
            lora_alpha=hyper.lora_alpha,
            lora_dropout=hyper.lora_dropout,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        )
    checkpoints = out / "checkpoints"
    config = SFTConfig(
        output_dir=str(checkpoints),
        num_train_epochs=hyper.epochs,
        max_steps=hyper.max_steps or -1,
        learning_rate=hyper.learning_rate,
        per_device_train_batch_size=hyper.batch_size,
        gradient_accumulation_steps=hyper.grad_accum,
        max_length=hyper.max_length,
        warmup_steps=float(hyper.warmup_ratio) if hyper.warmup_ratio < 1 else 0,
        weight_decay=hyper.weight_decay,
        logging_steps=hyper.logging_steps,
        save_steps=hyper.save_steps,
        save_total_limit=2,
        seed=hyper.seed,
        data_seed=hyper.seed,
        report_to=[],
        use_cpu=not _has_accelerator(),
        bf16=_has_accelerator(),  # (TRL's default; on a CPU, bfloat16 autocast made a step 6x slower here)
        disable_tqdm=not progress,
        dataloader_num_workers=0,
        gradient_checkpointing=hyper.gradient_checkpointing,
    )
    try:
        trainer = SFTTrainer(
            model=model, args=config, train_dataset=dataset, processing_class=tokenizer, peft_config=peft_config
        )
    except (OSError, ValueError) as err:
        raise ValueError(f"--model {model}: cannot train it ({str(err).splitlines()[0][:200]})") from None
    resume = _last_checkpoint(checkpoints)
    started = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    seconds = time.perf_counter() - started
    trainer.save_model(str(out / "model"))
    tokenizer.save_pretrained(str(out / "model"))
    rows = write_curve(trainer.state.log_history, out, f"SFT of {Path(model).name} on {data.name}")
    card = {
        "format": 1,
        "kind": "sft",
        **settings,
        "data_lines": counts,
        "steps": trainer.state.global_step,
        "final_loss": rows[-1]["loss"] if rows else None,
        "train_loss": result.training_loss,
        "resumed_from": resume.name if resume else None,
        "seconds_this_run": round(seconds, 1),
        "versions": _versions(),
    }
    _write_card(out, card)
    return card


def _has_accelerator() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _write_card(out: Path, card: dict[str, Any]) -> None:
    """``card.json`` and its readable form ``card.md`` (written last: a finished run has both)."""
    hyper = card.get("hyper", {})
    lines = [
        f"# {card['kind'].upper()} model card",
        "",
        f"- base model: `{card['base_model']}`",
        f"- data: `{card['data']}` (sha256 `{card['data_sha256'][:16]}…`); lines {card['data_lines']}",
        f"- steps: {card['steps']}; final logged loss: {card['final_loss']}",
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
