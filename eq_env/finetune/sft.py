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

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from eq_env.finetune.data import digest, prompt_completion, read_demos, verified
from eq_env.finetune.runs import (
    chat_tokenizer,
    check_integers,
    check_numbers,
    last_checkpoint,
    library_versions,
    trainer_arguments,
    write_card,
    write_curve,
)

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
        big = 1 << 24
        check_integers(self, dict.fromkeys(("batch_size", "grad_accum", "max_length", "logging_steps"), (1, big)))
        check_integers(self, {"save_steps": (1, big), "lora_r": (1, big), "max_steps": (0, (1 << 31) - 1)})
        check_integers(self, {"seed": (0, 2**32 - 1)})
        check_numbers(self, {"epochs": (0, 1e4), "learning_rate": (1e-12, 1.0), "warmup_ratio": (0, 0.99)})
        check_numbers(self, {"weight_decay": (0, 1.0), "lora_dropout": (0, 1.0)})
        if self.max_steps == 0 and self.epochs <= 0:
            raise ValueError("give epochs > 0 or max_steps > 0: the run has no length")


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


def sft(data: Path, model: str, out: Path, hyper: SFTHyper = SFTHyper(), *, progress: bool = True) -> dict[str, Any]:
    """Fine-tune ``model`` on the demonstrations in ``data``; write ``out`` (module docstring). Returns the card.

    ValueError (one line) for a bad data file, an empty selection, or a model that cannot be loaded; a run
    started in ``out`` with other settings is refused rather than resumed into a mix."""
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
    tokenizer = chat_tokenizer(model, "the demonstrations are chats")
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
        num_train_epochs=hyper.epochs,
        max_steps=hyper.max_steps or -1,
        learning_rate=hyper.learning_rate,
        per_device_train_batch_size=hyper.batch_size,
        gradient_accumulation_steps=hyper.grad_accum,
        max_length=hyper.max_length,
        warmup_steps=float(hyper.warmup_ratio) if hyper.warmup_ratio < 1 else 0,
        weight_decay=hyper.weight_decay,
        dataloader_num_workers=0,
        **trainer_arguments(
            checkpoints,
            seed=hyper.seed,
            logging_steps=hyper.logging_steps,
            save_steps=hyper.save_steps,
            progress=progress,
            checkpointing=hyper.gradient_checkpointing,
        ),
    )
    try:
        trainer = SFTTrainer(
            model=model, args=config, train_dataset=dataset, processing_class=tokenizer, peft_config=peft_config
        )
    except (OSError, ValueError) as err:
        raise ValueError(f"--model {model}: cannot train it ({str(err).splitlines()[0][:200]})") from None
    resume = last_checkpoint(checkpoints)
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
        "versions": library_versions(),
    }
    write_card(out, card)
    return card
