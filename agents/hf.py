"""A ``transformers`` checkpoint playing in this process: the ``hf`` policy of every LLM role, and ``hf:DIR``.

A fine-tuned model (``eq-env finetune sft`` / ``grpo``, or any causal LM saved with ``save_pretrained``, a
PEFT adapter directory included) plays without a server::

    eq-env play --env einstein-puzzle --policy player_0=hf:path=runs/sft/model --policy player_1=planner
    eq-env bench --model mine --base-url hf:runs/sft/model --quick

``hf:path=DIR`` is the role's ``llm`` policy with ``base_url=hf:DIR`` (the model's name defaults to the
directory's): the same prompts, reply parsing, re-asks, fallbacks, cache and replay as a model at an endpoint
(:mod:`eq_env.agents.local`). Its other parameters are the ``llm`` policy's (``temperature``, ``seed``,
``max_tokens``, ``max_reasks``, ``prompt_version``, the Einstein player's ``reasoning``, ``verifier``, ``k``...).

**Sampling.** ``temperature=0`` decodes greedily (``n > 1`` samples are that one reply ``n`` times, as an
endpoint at temperature 0 gives them; each is counted in the tokens). Above 0, a request's sample is drawn
from a generator seeded by the request itself (its messages, temperature, seed and sample count), so the same
request gets the same sample in every run, as it would from the cache; ``n > 1`` draws ``n`` samples at once.

**Penalties.** ``frequency_penalty`` and ``presence_penalty`` (each in [−2, 2]) lower a token's logit by
``count·frequency + (count > 0)·presence``, ``count`` its occurrences in the reply so far — OpenAI's and vLLM's
definition; ``repetition_penalty`` (> 0, 1 none) is transformers' (and vLLM's) multiplicative one over the
prompt and the reply. So the belief answerers' ``--penalty frequency`` and ``repetition`` both work here.

**Context.** A prompt longer than the model's context (``max_position_embeddings``) is refused, like an
endpoint's 400 (a failed request, recorded); a reply stops at the end of the context.

**Keys.** Answers are keyed by a digest of the checkpoint's files (weights, configuration, tokenizer), not by
its path: a checkpoint moved elsewhere replays its recordings; another checkpoint saved in the same directory
does not; an adapter's digest takes in its base model's (a local directory's files, or a hub id). A replay
(``--cache read``) needs the checkpoint (for its digest) but never loads the model.

Needs the ``finetune`` extra (``pip install "eq_env[finetune]"``: transformers, and peft for adapters).
For speed on a GPU, serve the checkpoint with vLLM and point ``--base-url`` at it
(``vllm serve runs/sft/model --served-model-name mine``, then ``--base-url http://localhost:8000/v1 --model
mine``): the prompts and parsing are the same, the answers are not bit-for-bit those of this backend.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eq_env.agents.local import PENALTIES, LocalReply, register_scheme

__all__ = ["HFModel", "checkpoint_digest", "hf_policy"]

_WEIGHTS = (".safetensors", ".bin", ".pt", ".json", ".jinja", ".model", ".txt")  # what a checkpoint's answers depend on


def checkpoint_digest(path: Path) -> str:
    """The first 16 hex digits of a SHA-256 over a checkpoint's files (names and contents, sorted by name):
    weights, configuration, tokenizer. Files a trainer writes beside them (its state, logs) are left out. For a
    PEFT adapter, its base model's digest (a local directory) or its id (a hub model) too."""
    h = hashlib.sha256()
    adapter = path / "adapter_config.json"
    if adapter.is_file():  # a PEFT adapter's answers depend on its base model too: a local one's files, or its id
        try:
            base = str(json.loads(adapter.read_text()).get("base_model_name_or_path") or "")
        except (ValueError, OSError, AttributeError):
            base = ""
        where = Path(base).expanduser() if base else None
        if where is not None and where.is_dir() and where.resolve() != path.resolve() and _is_checkpoint(where):
            h.update(b"base\0" + checkpoint_digest(where).encode() + b"\0")
        else:
            h.update(b"base\0" + base.encode() + b"\0")
    for f in sorted(path.iterdir()):
        if f.is_file() and f.suffix in _WEIGHTS and not f.name.startswith(("trainer_state", "training_args")):
            h.update(f.name.encode() + b"\0")
            with f.open("rb") as stream:
                for block in iter(lambda: stream.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()[:16]


def _is_checkpoint(path: Path) -> bool:
    return (path / "config.json").is_file() or (path / "adapter_config.json").is_file()


class HFModel:
    """A causal LM and its tokenizer (with a chat template) from a directory, loaded on first use."""

    cacheable = True
    parameters = PENALTIES

    def __init__(self, path: str) -> None:
        where = Path(path).expanduser()
        if not where.is_dir() or not _is_checkpoint(where):
            raise ValueError(
                f"hf:{path}: no checkpoint there (expected a directory with config.json, or a PEFT adapter's "
                "adapter_config.json, as save_pretrained writes)"
            )
        self.path = where
        self.fingerprint = checkpoint_digest(where)
        self._lock = threading.Lock()  # one generation at a time: the model is not thread-safe
        self._loaded: tuple[Any, Any] | None = None

    def problem(self) -> str | None:
        try:
            self._load()
        except ImportError as err:
            return f"hf:{self.path}: {err}; install the finetune extra: pip install 'eq_env[finetune]'"
        except (OSError, ValueError) as err:
            return f"hf:{self.path}: cannot load the checkpoint: {str(err).splitlines()[0][:300]}"
        tokenizer = self._load()[1]
        if not getattr(tokenizer, "chat_template", None):
            return f"hf:{self.path}: the tokenizer has no chat template (the players' prompts are chats)"
        return None

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._loaded is None:
                from transformers import AutoModelForCausalLM, AutoTokenizer

                if (self.path / "adapter_config.json").is_file():
                    from peft import AutoPeftModelForCausalLM

                    model = AutoPeftModelForCausalLM.from_pretrained(self.path)
                else:
                    model = AutoModelForCausalLM.from_pretrained(self.path)
                model.eval()
                self._loaded = (model, AutoTokenizer.from_pretrained(self.path))
            return self._loaded

    async def generate(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float,
        max_tokens: int,
        seed: int | None,
        n: int,
        extra: dict[str, Any],
    ) -> LocalReply:
        def run() -> LocalReply:  # (in a thread, loading included: the event loop keeps serving)
            model, tokenizer = self._load()
            return generate_chat(
                model,
                tokenizer,
                messages,
                temperature=temperature,
                max_tokens=max_tokens,
                seed=seed,
                n=n,
                lock=self._lock,
                extra=extra,
            )

        return await asyncio.to_thread(run)


def request_seed(messages: list[dict[str, str]], temperature: float, seed: int | None, n: int) -> int:
    """The seed of a sampled request's generator: a function of the request alone."""
    text = json.dumps([messages, temperature, seed, n], sort_keys=True, ensure_ascii=False)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") % 2**63


def generate_chat(
    model: Any,
    tokenizer: Any,
    messages: list[dict[str, str]],
    *,
    temperature: float,
    max_tokens: int,
    seed: int | None,
    n: int,
    lock: threading.Lock | None = None,
    generator_seed: int | None = None,
    extra: dict[str, Any] | None = None,
) -> LocalReply:
    """``n`` replies of ``model`` to a chat (see the module docstring for how they are sampled and what
    ``extra``'s penalties do); the token ids of the prompt and of each reply are in the reply's ``extra``
    (``prompt_ids``, ``completion_ids``). ``generator_seed`` seeds the sampling instead of the request (a
    trainer's rollouts: the same prompt, new samples). A ValueError (one line) for a prompt longer than the
    model's context or a penalty out of range."""
    import contextlib

    import torch

    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    if isinstance(prompt, dict) or hasattr(prompt, "keys"):
        prompt = prompt["input_ids"]
    prompt = list(prompt)
    context = getattr(model.config, "max_position_embeddings", None)
    if isinstance(context, int) and len(prompt) >= context:
        raise ValueError(f"the prompt is {len(prompt)} tokens; the model's context is {context}")
    ids = torch.tensor([prompt])
    sample = temperature > 0
    kwargs: dict[str, Any] = {
        "max_new_tokens": max_tokens if not isinstance(context, int) else min(max_tokens, context - len(prompt)),
        "do_sample": sample,
        # (greedy decoding has one answer: asked for n at temperature 0, it is decoded once and given n times)
        "num_return_sequences": n if sample else 1,
        "pad_token_id": tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
    }
    if sample:
        kwargs.update(temperature=float(temperature), top_k=0, top_p=1.0)
    kwargs.update(_penalties(extra or {}, len(prompt)))
    guard = lock if lock is not None else contextlib.nullcontext()
    with guard, torch.no_grad(), torch.random.fork_rng(devices=[]):
        if sample:
            torch.manual_seed(
                request_seed(messages, temperature, seed, n) if generator_seed is None else generator_seed % 2**63
            )
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **kwargs)
    eos = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    completions: list[list[int]] = []
    for row in out[:, len(prompt) :].tolist():
        kept = []
        for t in row:
            if t in eos:
                kept.append(t)
                break
            kept.append(t)
        completions.append(kept)
    if not sample:
        completions = [list(completions[0]) for _ in range(n)]
    texts = [tokenizer.decode(c, skip_special_tokens=True).strip() for c in completions]
    return LocalReply(
        texts,
        prompt_tokens=len(prompt),
        completion_tokens=sum(len(c) for c in completions),
        extra={"prompt_ids": prompt, "completion_ids": completions},
    )


def _number(extra: dict[str, Any], name: str, low: float, high: float, *, open_low: bool = False) -> float | None:
    value = extra.get(name)
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value <= high
    ok = ok and (value > low if open_low else value >= low)
    if not ok:
        bound = f"({low:g}, {high:g}]" if open_low else f"[{low:g}, {high:g}]"
        raise ValueError(f"{name} must be a number in {bound}, got {value!r}")
    return float(value)


def _penalties(extra: dict[str, Any], prompt_length: int) -> dict[str, Any]:
    """generate()'s arguments for ``extra``'s penalties (the module docstring)."""
    unknown = sorted(set(extra) - PENALTIES)
    if unknown:
        raise ValueError(f"the hf backend does not take {', '.join(unknown)}")
    kwargs: dict[str, Any] = {}
    repetition = _number(extra, "repetition_penalty", 0.0, 100.0, open_low=True)
    if repetition is not None and repetition != 1.0:
        kwargs["repetition_penalty"] = repetition
    frequency = _number(extra, "frequency_penalty", -2.0, 2.0) or 0.0
    presence = _number(extra, "presence_penalty", -2.0, 2.0) or 0.0
    if frequency or presence:
        from transformers import LogitsProcessorList

        kwargs["logits_processor"] = LogitsProcessorList([_CountPenalty(frequency, presence, prompt_length)])
    return kwargs


class _CountPenalty:
    """OpenAI's frequency and presence penalties: a token's logit minus ``count·frequency + (count > 0)·presence``
    over the reply's tokens so far (not the prompt's)."""

    def __init__(self, frequency: float, presence: float, prompt_length: int) -> None:
        self.frequency, self.presence, self.prompt_length = frequency, presence, prompt_length

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        reply = input_ids[:, self.prompt_length :]
        if reply.shape[1] == 0:
            return scores
        counts = torch.zeros_like(scores).scatter_add_(1, reply, torch.ones_like(reply, dtype=scores.dtype))
        return scores - counts * self.frequency - (counts > 0).to(scores.dtype) * self.presence


register_scheme("hf", HFModel)


def hf_policy(llm: Callable[..., Any]) -> Callable[..., Any]:
    """The ``hf`` policy of a role whose ``llm`` policy is ``llm``: ``hf:path=DIR,...`` is
    ``llm:model=<DIR's name>,base_url=hf:DIR,...``."""
    wrapped = inspect.signature(llm)

    def hf(path: str, model: str | None = None, **params: Any) -> Any:
        if "base_url" in params:
            raise ValueError("an hf policy's endpoint is its checkpoint: give path=DIR, not base_url")
        if not isinstance(path, str) or not path.strip():
            raise ValueError(f"path must name a checkpoint directory, got {path!r}")
        name = model if model is not None else Path(path).expanduser().resolve().name or "model"
        return llm(model=str(name), base_url=f"hf:{path}", **params)

    kept = [p for n, p in wrapped.parameters.items() if n not in ("model", "base_url")]
    hf.__signature__ = wrapped.replace(  # type: ignore[attr-defined]
        parameters=[
            inspect.Parameter("path", inspect.Parameter.KEYWORD_ONLY, annotation=str),
            inspect.Parameter("model", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="str | None"),
            *[p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in kept],
        ]
    )
    hf.__doc__ = "A transformers checkpoint played in this process (path=DIR): the llm policy with base_url=hf:DIR."
    return hf
