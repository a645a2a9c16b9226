"""Models that answer in this process: every LLM policy's ``base_url`` may name one instead of an endpoint.

An LLM policy asks its :class:`~eq_env.agents.client.LLMClient`; the client sends the request to an
OpenAI-compatible endpoint, or — when ``base_url`` names a *local model* — to a :class:`LocalModel` in this
process. Everything else is the same: the prompts, the reply parsing, the re-asks and fallbacks of the
policies, the client's cache and replay (a local answer is recorded and replayed like any other), the
token counts. Two kinds of ``base_url`` name local models:

* ``hf:DIR`` — a Hugging Face ``transformers`` checkpoint (:mod:`eq_env.agents.hf`, the ``finetune`` extra):
  ``llm:model=mine,base_url=hf:ckpt/`` or the shorthand policy spec ``hf:path=ckpt/``;
* ``local:NAME`` — a model registered in this process with :func:`register_local` (the GRPO trainer's policy
  being trained, an OpenEnv server's remote player).

A local model's :attr:`LocalModel.fingerprint` (a digest of its weights, for a checkpoint) is part of every
request key, so answers recorded with one checkpoint are never replayed for another one saved in the same
directory. A model with ``cacheable = False`` (one being trained, one played by a remote client) is never
cached in memory or on disk: each request is a new sample.

Sampling parameters beyond temperature, seed and ``n`` (the belief answerers' ``frequency_penalty`` or
``repetition_penalty``) reach :meth:`LocalModel.generate` as ``extra``; a model lists those it honours in
:attr:`LocalModel.parameters`, and a request with any other stops the run with one line naming it, as an
endpoint's 400 would (:data:`PENALTIES` are the ones the ``hf`` backend honours).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "LOCAL_SCHEMES",
    "PENALTIES",
    "LocalModel",
    "LocalReply",
    "forget_local",
    "is_local",
    "local_model",
    "register_local",
    "register_scheme",
]

LOCAL_SCHEMES = ("hf", "local")
# the further sampling parameters the hf backend honours, with OpenAI's / vLLM's meaning
PENALTIES = frozenset({"frequency_penalty", "presence_penalty", "repetition_penalty"})


@dataclass
class LocalReply:
    """A local model's answer: one text per sample asked, and what they cost in tokens."""

    texts: list[str]
    prompt_tokens: int
    completion_tokens: int
    extra: dict[str, Any] = field(default_factory=dict)  # (not recorded: e.g. token ids, for a trainer)


@runtime_checkable
class LocalModel(Protocol):
    """What a model answering in-process provides (see the module docstring)."""

    fingerprint: str  # keys its answers: a digest of its weights, or a name for one that is not cached
    cacheable: bool  # False: every request is a new sample, never cached
    parameters: frozenset[str]  # the further sampling parameters (``extra``) it honours

    def problem(self) -> str | None:
        """Why this model cannot serve a run (one line), or None; called before a run's first request."""
        ...

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
        """``n`` samples of the assistant's next turn after ``messages``; ``extra`` holds only names of
        :attr:`parameters`."""
        ...


_MODELS: dict[str, LocalModel] = {}
# scheme -> factory(rest of the URL) for a model made on first use (hf: loads a checkpoint)
_SCHEMES: dict[str, Callable[[str], LocalModel]] = {}
_BUILT_IN = {"hf": "eq_env.agents.hf"}  # the module that registers each scheme when imported


def is_local(base_url: str | None) -> bool:
    """Does ``base_url`` name a local model (``hf:...``, ``local:...``) rather than an endpoint?"""
    if not isinstance(base_url, str):
        return False
    scheme, colon, _ = base_url.partition(":")
    return bool(colon) and scheme in LOCAL_SCHEMES and not base_url.startswith(f"{scheme}://")


def register_scheme(scheme: str, factory: Callable[[str], LocalModel]) -> None:
    """Make ``SCHEME:REST`` base URLs name the model ``factory(REST)`` (made once per URL, on first use)."""
    if scheme not in LOCAL_SCHEMES:
        raise ValueError(f"scheme must be one of {LOCAL_SCHEMES}, got {scheme!r}")
    _SCHEMES[scheme] = factory


def register_local(name: str, model: LocalModel) -> str:
    """Serve ``model`` as ``local:NAME`` in this process; returns that base URL."""
    if not isinstance(name, str) or not name or any(c in name for c in "/:, \n"):
        raise ValueError(f"a local model's name must be a non-empty word (no '/', ':', ',' or space), got {name!r}")
    if not isinstance(model, LocalModel):
        raise TypeError(f"{model!r} is not a LocalModel (fingerprint, cacheable, parameters, problem(), generate())")
    url = f"local:{name}"
    _MODELS[url] = model
    return url


def forget_local(base_url: str) -> None:
    """Drop a model registered with :func:`register_local` (or loaded for an ``hf:`` URL)."""
    _MODELS.pop(base_url, None)


def local_model(base_url: str) -> LocalModel:
    """The model ``base_url`` names; ValueError (one line) when there is none."""
    model = _MODELS.get(base_url)
    if model is not None:
        return model
    scheme, _, rest = base_url.partition(":")
    if scheme in _BUILT_IN and scheme not in _SCHEMES:  # (by name, as an entry point: hf.py builds on this module)
        importlib.import_module(_BUILT_IN[scheme])
    factory = _SCHEMES.get(scheme)
    if factory is None:
        raise ValueError(f"base_url {base_url!r} names no model registered in this process")
    model = _MODELS[base_url] = factory(rest)
    return model
