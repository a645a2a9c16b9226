"""A small causal LM made from nothing: a tokenizer trained on a game's own text and a randomly initialised model.

Nothing is downloaded: the tokenizer is a byte-level BPE trained with ``tokenizers`` on the demonstrations'
text, wrapped as a ``transformers`` fast tokenizer with a chat template; the model is a Llama-architecture
decoder built from a configuration (:class:`TinySpec`) with random weights drawn from ``seed``. The directory it
writes loads with ``AutoModelForCausalLM`` / ``AutoTokenizer`` like any checkpoint, so the same commands train
it (``eq-env finetune sft --model DIR``) and play it (``hf:path=DIR``). Used by the tests and by
``benchmarks/einstein_from_scratch.py``; on a GPU, give ``--model`` a pretrained checkpoint instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["CHAT_TEMPLATE", "END", "TinySpec", "make_tiny", "train_tokenizer"]

END = "<|end|>"  # ends every turn; the tokenizer's end-of-sequence token, so a reply stops at it
PAD = "<|pad|>"
ROLES = ("system", "user", "assistant")
# (one token per role marker: a role is never split across tokens, and the template's text is all special)
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)


@dataclass(frozen=True)
class TinySpec:
    """The model's size: a Llama decoder (RMSNorm, rotary positions, SwiGLU), tied input and output
    embeddings. The default has about 0.9 M parameters."""

    vocab_size: int = 2048
    hidden_size: int = 128
    layers: int = 4
    heads: int = 4
    intermediate_size: int = 344
    max_positions: int = 2048

    def __post_init__(self) -> None:
        from eq_env.finetune.runs import check_integers

        check_integers(
            self,
            {
                "vocab_size": (300, 1 << 17),
                "hidden_size": (8, 1 << 14),
                "layers": (1, 256),
                "heads": (1, 256),
                "intermediate_size": (8, 1 << 16),
                "max_positions": (64, 1 << 17),
            },
        )
        if self.hidden_size % self.heads:
            raise ValueError(f"hidden_size ({self.hidden_size}) must be a multiple of heads ({self.heads})")


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> Any:
    """A byte-level BPE fast tokenizer trained on ``texts``, with the chat template and special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = [PAD, END, *(f"<|{r}|>" for r in ROLES)]
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte: no text is out of vocabulary
        show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token=END, pad_token=PAD, additional_special_tokens=special[2:]
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.padding_side = "left"  # (generation pads prompts on the left)
    return tokenizer


def make_tiny(out: Path, texts: Iterable[str], spec: TinySpec = TinySpec(), seed: int = 0) -> Path:
    """Write a tokenizer trained on ``texts`` and a randomly initialised model of size ``spec`` to ``out``
    (``save_pretrained`` layout, plus ``tiny.json`` saying how it was made); the same arguments write the
    same weights. Returns ``out``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = train_tokenizer(texts, spec.vocab_size)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.heads,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    made = {"spec": asdict(spec), "seed": seed, "parameters": sum(p.numel() for p in model.parameters())}
    (out / "tiny.json").write_text(json.dumps(made, indent=2) + "\n")
    return out
