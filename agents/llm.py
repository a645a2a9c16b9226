"""The generic part of LLM policies: asking, re-asking, falling back, and what it cost.

:class:`LLMPolicy` is the base of every game's LLM policies (the exchange–audit
game's are :mod:`eq_env.agents.exchange_audit.policies`); :func:`template` reads a
versioned prompt template. An endpoint that cannot answer after its retries
raises :class:`~eq_env.core.policy.PolicyError` (the runner records the
episode as failed and goes on); one that cannot serve the run at all,
:class:`~eq_env.core.policy.PolicySetupError` (the run stops).

``act`` is synchronous (it runs one event loop per call); runners that play
episodes concurrently call ``await policy.aact(observation)``, which returns
the action and an info dict: tokens (what the samples cost when drawn, the
same in a replay), fallbacks, re-asks, and under ``transport`` what varies
from run to run — latency, requests, retries, cache hits, tokens billed by
this run, transport errors.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Mapping
from pathlib import Path
from string import Template
from typing import Any, ClassVar

from eq_env.agents.client import Completion, LLMClient, LLMUnavailableError, register_endpoint, resolve_base_url
from eq_env.agents.replies import ReplyError
from eq_env.core.policy import BasePolicy, PolicyError

__all__ = [
    "JSON_REASK",
    "MAX_REASKS",
    "LLMPolicy",
    "account",
    "new_info",
    "new_transport",
    "template",
    "template_digest",
    "template_versions",
]

MAX_REASKS = 20  # each re-ask is a paid request: more than a few only repeats the same mistake


@functools.cache
def template(directory: Path, role: str, version: str) -> Template:
    """The prompt template ``<directory>/<role>_<version>.txt``; a ValueError lists the versions there are."""
    path = directory / f"{role}_{version}.txt"
    if not isinstance(version, str) or "/" in version or not path.is_file():
        raise ValueError(
            f"no prompt template {role}_{version}.txt; prompt_version must be one of: "
            f"{', '.join(template_versions(directory, role))}"
        )
    return Template(path.read_text())


def template_versions(directory: Path, role: str) -> list[str]:
    """The versions (prompt variants) of ``role``'s templates in ``directory``: ``v1``, ``terse_v1``..."""
    return sorted(p.stem.removeprefix(f"{role}_") for p in directory.glob(f"{role}_*.txt"))


@functools.cache
def template_digest(directory: Path, role: str, version: str) -> str:
    """The first 16 hex digits of the SHA-256 of a template's text: results are keyed by it, so a template
    edited under the same version is never mistaken for the one that produced recorded runs."""
    return hashlib.sha256(template(directory, role, version).template.encode()).hexdigest()[:16]


def new_transport() -> dict[str, Any]:
    """How answers were obtained: it varies from run to run (a replay makes no request, bills nothing)."""
    return {
        "latency": 0.0,
        "requests": 0,
        "retries": 0,
        "cached": 0,
        "billed_prompt_tokens": 0,
        "billed_completion_tokens": 0,
        "errors": [],
    }


JSON_REASK = (
    "That reply is invalid: {error}. Answer again with one JSON object that matches the schema, and nothing else."
)


def new_info(model: str) -> dict[str, Any]:
    """A decision's info before anything is asked (see :meth:`LLMPolicy._ask`)."""
    return {
        "model": model,
        "attempts": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "usage_estimated": False,
        "fallback": False,
        "fallback_reason": None,
        "invalid_replies": [],
        "transport": new_transport(),
    }


def account(info: dict[str, Any], c: Completion) -> None:
    """Add what answer ``c`` cost, and how it was obtained, to a decision's ``info``."""
    t = info["transport"]
    # attributed: what the sample cost when drawn, however it reached us (same in a replay)
    info["prompt_tokens"] += c.prompt_tokens
    info["completion_tokens"] += c.completion_tokens
    info["usage_estimated"] |= c.usage_estimated
    t["latency"] += c.latency
    t["requests"] += c.requests
    t["retries"] += c.retries
    t["cached"] += int(c.cached)
    t["errors"] += c.errors
    if c.billed:  # paid by this call
        t["billed_prompt_tokens"] += c.prompt_tokens
        t["billed_completion_tokens"] += c.completion_tokens
    if c.mode:
        info["output_mode"] = c.mode


def unavailable(info: dict[str, Any], err: LLMUnavailableError) -> None:
    """Add what a failed ask tried to a decision's ``info`` (before the :class:`PolicyError`): the answers it
    obtained before failing (``err.answers``), then the failed requests."""
    for c in err.answers:
        account(info, c)
    t = info["transport"]
    t["requests"] += err.requests
    t["retries"] += err.retries
    t["errors"] += err.errors


class LLMPolicy(BasePolicy):
    """Base of every game's LLM policies: a model at an endpoint, a versioned prompt template per role,
    replies checked by the game's parser and asked again with the error, then a fallback.

    A game's subclass sets ``role`` and ``PROMPTS`` (the directory of its ``<role>_<version>.txt``
    templates), renders its observation into messages and parses replies (see
    :mod:`eq_env.agents.exchange_audit.policies`); everything about asking — retries, the cache, costs, the
    checks before a run — is here and in :mod:`eq_env.agents.client`.
    """

    PROMPTS: ClassVar[Path]
    PROMPT_ROLE: ClassVar[str | None] = None  # the templates' role name, when not the policy's role (seats)
    # parameters that change how requests are made, never what they return: left out of result keys
    RUNTIME_PARAMETERS: tuple[str, ...] = ()

    @classmethod
    def canonical_parameters(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Parameters as results are keyed: the endpoint the policy will really talk to, credentials masked."""
        return {**params, "base_url": register_endpoint(resolve_base_url(params.get("base_url")))}

    def __init__(
        self,
        model: str,
        base_url: str | None,
        temperature: float,
        max_tokens: int,
        seed: int | None,
        prompt_version: str,
        max_reasks: int,
    ) -> None:
        super().__init__()
        if isinstance(max_reasks, bool) or not isinstance(max_reasks, int) or not 0 <= max_reasks <= MAX_REASKS:
            raise ValueError(f"max_reasks must be an integer in [0, {MAX_REASKS}], got {max_reasks!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63):
            raise ValueError(f"seed must be a non-negative integer or none, got {seed!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= 10_000_000:
            raise ValueError(f"max_tokens must be an integer in [1, 10000000], got {max_tokens!r}")
        if not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
            raise ValueError(f"temperature must be a number in [0, 2], got {temperature!r}")
        template(self.PROMPTS, self.PROMPT_ROLE or self.role, prompt_version)  # an unknown version fails now
        self.client = LLMClient(model, base_url)  # (checks the model name: an opaque, non-empty string)
        self.model = model
        self.base_url = self.client.base_url
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self.seed = seed
        self.prompt_version = prompt_version
        self.max_reasks = max_reasks

    def __repr__(self) -> str:
        return f"{self.name}(model={self.model!r}, base_url={self.client.base_url!r})"

    def act(self, observation: Mapping[str, Any]) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._act_once(observation))
        raise RuntimeError(f"{self.name}.act() inside a running event loop; use `await policy.aact(observation)`")

    async def aact(self, observation: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:  # pragma: no cover
        raise NotImplementedError

    async def _act_once(self, observation: Mapping[str, Any]) -> Any:
        try:
            return (await self.aact(observation))[0]
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Release the connections of the running event loop (the runners call it when a run ends)."""
        await self.client.aclose()

    async def check(self) -> None:
        """Before a run's first episode: can this policy be served at all? (See :meth:`LLMClient.check`.)"""
        await self.client.check()

    async def _ask(
        self,
        messages: list[dict[str, str]],
        schema_name: str,
        schema: dict[str, Any] | None,
        parse: Any,
        reask: str = JSON_REASK,
    ) -> tuple[Any, dict[str, Any]]:
        """Ask, re-asking with the validation error; (parsed value or None, info).

        ``parse(completion)`` raises :class:`ReplyError` for an invalid reply, which is sent back in the
        ``reask`` message (``{error}``: the error); ``schema=None`` asks for plain text. An oversize reply
        (over the client's reply limit: :func:`eq_env.agents.client.reply_limit`) is invalid without being parsed,
        and is not quoted back: the re-ask's assistant turn says only how long it was. Anything else
        ``parse`` raises fails the decision as a :class:`PolicyError` that keeps what was asked (the
        episode's record counts its requests)."""
        info = new_info(self.model)
        for attempt in range(self.max_reasks + 1):
            try:
                c = await self.client.complete(
                    messages,
                    schema_name=schema_name,
                    schema=schema,
                    prompt_version=self.prompt_version,
                    temperature=self.temperature,
                    max_tokens=self.max_tokens,
                    seed=self.seed,
                )
            except LLMUnavailableError as err:
                unavailable(info, err)
                raise PolicyError(f"{self.name}: {err}", info=info) from None
            info["attempts"] = attempt + 1
            account(info, c)
            try:
                if c.oversize_error is not None:
                    raise ReplyError(c.oversize_error)
                return parse(c), info
            except ReplyError as err:
                info["invalid_replies"].append(str(err))
                said = c.content if c.oversize is None else f"(a reply of {c.oversize['bytes']:,} bytes, not shown)"
                messages = [
                    *messages,
                    {"role": "assistant", "content": said},
                    {"role": "user", "content": reask.format(error=err)},
                ]
            except Exception as err:  # a parser's bug, say: the decision fails, its costs stay recorded
                raise PolicyError(
                    f"{self.name}: the reply could not be read ({type(err).__name__}: {str(err)[:200]})", info=info
                ) from err
        info["fallback"] = True
        info["fallback_reason"] = f"no valid reply in {self.max_reasks + 1} attempts: {info['invalid_replies'][-1]}"
        return None, info
