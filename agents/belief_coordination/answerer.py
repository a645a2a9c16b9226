"""The LLM answerer of belief coordination: an executor's (question, T, p) answered by a real model.

:class:`LLMAnswerer` implements :class:`eq_env.belief_coordination.answerers.Answerer`
on any OpenAI-compatible endpoint, through :class:`eq_env.agents.client.LLMClient` (so
retries, ``Retry-After``, record and replay, in-flight deduplication and the
fail-fast checks are the client's)::

    answerer = LLMAnswerer("gpt-4.1-mini", penalty="frequency")
    answers = answerer.answer(requests)            # synchronous: the environment's step
    answers = await answerer.aanswer(requests)     # in a coroutine

**The prompt** is ``prompts/executor_<version>.txt``, in sections (``=== system ===``,
``=== user ===``, ``=== debate ===``): the system message asks for a step-by-step solution
ending with a line ``#### N``; the user message is the question; in a debate round
(``request.round >= 1``) the debate section follows it, with the other executors'
previous replies, each fenced in ``<solver_reply>`` tags, labelled as untrusted
text from other solvers and cut to its last :data:`OTHERS_CAP` characters (the final
answer is at the end). ``<`` and ``>`` inside a reply are shown as ``‹`` and ``›``, so no
reply can close its fence or open another.

**Sampling.** ``temperature`` is the request's T, sent as is. The repetition penalty p
(1: none) is mapped by ``penalty``:

==============  ===========================================  ==================================
``penalty``     sent                                         servers
==============  ===========================================  ==================================
``frequency``   ``frequency_penalty = clip(2·(p − 1), −2, 2)``  OpenAI and most compatible ones
                (OpenAI's range is [−2, 2]; p = 1: 0, none;
                p ≥ 2: the maximum)
``repetition``  ``repetition_penalty = p``                   vLLM, TGI, llama.cpp (their own
                                                             parameter: multiplicative, 1 none)
``none``        nothing (p is ignored)                       endpoints that reject both
==============  ===========================================  ==================================

**Samples.** Requests that differ only in who asks (two executors with the same (T, p)
on the same question) must be independent samples, and a replay must find each one's
recording. Each request is therefore keyed apart by its ``sample_key`` (seed, episode,
executor, round): the client's ``sample`` is a 62-bit hash of it and the request's
``seed`` (sent, for endpoints that honour it) a 31-bit hash (:func:`sample_ids`).

**Answers.** ``Answer.value`` is :func:`eq_env.belief_coordination.questions.final_number`
of the whole reply (after the last ``####``, else the last ``\\boxed{}``, else the last
number); ``Answer.text`` is the reply cut to its last :data:`TEXT_CAP` characters; the
tokens are the completion's ``usage`` (the same in a replay); ``Answer.info`` is the
account of :func:`eq_env.agents.llm.new_info` / :func:`eq_env.agents.llm.account`: tokens, and under
``transport`` requests, retries, cache hits, tokens billed by this run and transport
errors, plus ``sampling`` (what was sent), ``seed``, ``failed`` and ``error``.

**Failures.** A request the endpoint cannot answer after the client's retries
(:class:`~eq_env.agents.client.LLMUnavailableError`) gives ``Answer(None, "", 0, 0, failed=True)``
with the error in ``info``: the executor gave no answer and the episode goes on. The
failure is recorded like an answer, so a replay (``cache="read"``) fails the same way.
A run that cannot make requests at all (endpoint unreachable, key rejected, model not
served, cache unusable: :class:`~eq_env.agents.client.LLMSetupError`) stops at the first batch,
as does an endpoint that rejects the penalty parameter (400 or 422 naming it: choose another
``penalty``); so does a replay that finds no recording of a request (:class:`~eq_env.agents.client.NotRecordedError`):
the recording is of another run, and an answer that run never asked for cannot be
replayed as "no answer".

**Concurrency.** :meth:`LLMAnswerer.aanswer` sends a batch's requests concurrently, at most
``concurrency`` (default :data:`DEFAULT_CONCURRENCY`) at once per event loop (the client's
settings bound retries and timeouts, not concurrency). :meth:`LLMAnswerer.answer` runs
it on a new event loop, or, when called from inside a running one (a synchronous
environment step under an asynchronous runner), on a worker thread with its own loop;
the caller's loop waits for the batch either way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from string import Template
from typing import Any

from eq_env.agents.client import LLMClient, LLMSetupError, LLMUnavailableError, NotRecordedError
from eq_env.agents.llm import account, new_info, template, unavailable
from eq_env.belief_coordination.answerers import Answer, AnswerRequest
from eq_env.belief_coordination.questions import final_number

__all__ = [
    "DEFAULT_CONCURRENCY",
    "OTHERS_CAP",
    "PENALTY_MODES",
    "PROMPT_DIR",
    "TEXT_CAP",
    "LLMAnswerer",
    "executor_messages",
    "fence",
    "penalty_parameters",
    "sample_ids",
    "sections",
    "tail",
]

PROMPT_DIR = Path(__file__).parent / "prompts"
PENALTY_MODES = ("frequency", "repetition", "none")
DEFAULT_CONCURRENCY = 8  # requests in flight per batch and event loop: N executors of one question, or a few
TEXT_CAP = 4000  # characters of a reply kept in Answer.text
OTHERS_CAP = 1500  # characters of each other solver's reply shown in a debate round
# no digit in it: a cut reply's number must still be its own
OMITTED = "[... earlier text omitted ...]\n"
_SECTION = re.compile(r"^=== (\w+) ===$", re.M)


@functools.cache
def sections(role: str, version: str) -> dict[str, Template]:
    """The sections of the template ``prompts/<role>_<version>.txt`` (``=== name ===`` lines open them)."""
    text = template(PROMPT_DIR, role, version).template
    parts = _SECTION.split(text)
    found = {name: Template(body.strip("\n")) for name, body in zip(parts[1::2], parts[2::2], strict=True)}
    for needed in ("system", "user"):
        if needed not in found:
            raise ValueError(f"prompt template {role}_{version}.txt has no '=== {needed} ===' section")
    return found


def tail(text: str, cap: int) -> str:
    """``text`` cut to its last ``cap`` characters (a reply's final answer is at its end), marked when cut."""
    return text if len(text) <= cap else OMITTED + text[len(text) - cap :]


def fence(text: str, cap: int, **attributes: Any) -> str:
    """``text`` (cut to ``cap``) between ``<solver_reply ...>`` tags it cannot close: its own ``<`` and ``>``
    are shown as ``‹`` and ``›``."""
    attrs = "".join(f' {k}="{v}"' for k, v in attributes.items())
    body = tail(text, cap).replace("<", "‹").replace(">", "›").strip() or "(empty reply)"
    return f"<solver_reply{attrs}>\n{body}\n</solver_reply>"


def executor_messages(request: AnswerRequest, version: str = "v1") -> list[dict[str, str]]:
    """The chat messages (system, user) of one executor's request (see the module docstring)."""
    parts = sections("executor", version)
    user = parts["user"].substitute(question=request.question.text.strip())
    if request.round >= 1:
        if "debate" not in parts:
            raise ValueError(f"prompt template executor_{version}.txt has no '=== debate ===' section")
        others = "\n\n".join(fence(text, OTHERS_CAP, solver=j + 1) for j, text in enumerate(request.others))
        user += "\n\n" + parts["debate"].substitute(others=others or "(no other replies)")
    return [{"role": "system", "content": parts["system"].substitute()}, {"role": "user", "content": user}]


def penalty_parameters(mode: str, penalty: float) -> dict[str, float]:
    """The request parameters repetition penalty ``penalty`` (p; 1 is none) becomes (module docstring)."""
    if mode == "frequency":
        return {"frequency_penalty": round(min(2.0, max(-2.0, 2.0 * (penalty - 1.0))), 6)}
    if mode == "repetition":
        return {"repetition_penalty": round(float(penalty), 6)}
    if mode == "none":
        return {}
    raise ValueError(f"penalty must be one of {', '.join(PENALTY_MODES)}, got {mode!r}")


def sample_ids(sample_key: Sequence[int]) -> tuple[int, int]:
    """(``sample``, ``seed``) of a request: a non-zero 62-bit number keying it apart, and a 31-bit seed,
    both fixed by its ``sample_key`` (the same in every run and on every machine)."""
    digest = hashlib.blake2b(json.dumps([int(x) for x in sample_key]).encode(), digest_size=16).digest()
    sample = 1 + int.from_bytes(digest[:8], "little") % (2**62 - 1)  # never 0: 0 is the unkeyed default
    return sample, int.from_bytes(digest[8:12], "little") & 0x7FFF_FFFF


class LLMAnswerer:
    """Executors' answers from a model at an OpenAI-compatible endpoint (see the module docstring).

    Args:
        model: the model name the endpoint knows, sent byte for byte.
        base_url: the endpoint (default ``OPENAI_BASE_URL``, else OpenAI's); credentials in it are used,
            never recorded.
        penalty: how p is sent: ``frequency``, ``repetition`` or ``none``.
        max_tokens: completion token limit of each reply.
        prompt_version: the template ``prompts/executor_<version>.txt``.
        concurrency: requests in flight at once (per event loop).
    """

    name = "llm"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        penalty: str = "frequency",
        max_tokens: int = 512,
        prompt_version: str = "v1",
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        if penalty not in PENALTY_MODES:
            raise ValueError(f"penalty must be one of {', '.join(PENALTY_MODES)}, got {penalty!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= 10_000_000:
            raise ValueError(f"max_tokens must be an integer in [1, 10000000], got {max_tokens!r}")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= 1024:
            raise ValueError(f"concurrency must be an integer in [1, 1024], got {concurrency!r}")
        sections("executor", prompt_version)  # an unknown version fails now
        self.client = LLMClient(model, base_url)  # (checks the model name and the URL)
        self.model = model
        self.base_url = self.client.base_url
        self.penalty = penalty
        self.max_tokens = max_tokens
        self.prompt_version = prompt_version
        self.concurrency = concurrency
        self._semaphores: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Semaphore]] = {}

    def __repr__(self) -> str:
        return f"LLMAnswerer(model={self.model!r}, base_url={self.base_url!r}, penalty={self.penalty!r})"

    def messages(self, request: AnswerRequest) -> list[dict[str, str]]:
        """The chat messages of one request."""
        return executor_messages(request, self.prompt_version)

    async def check(self) -> None:
        """Before a run's first batch: can the endpoint serve this model? (:meth:`LLMClient.check`)"""
        await self.client.check()

    async def aclose(self) -> None:
        """Release the connections of the running event loop."""
        await self.client.aclose()

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        """One answer per request, in order (synchronous; see the module docstring)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._answer_once(requests))
        # inside a running loop (a synchronous step under an async runner), which this call blocks anyway:
        # a loop of our own on a worker thread
        with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-answerer") as pool:
            return pool.submit(asyncio.run, self._answer_once(requests)).result()

    async def _answer_once(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        try:
            return await self.aanswer(requests)
        finally:
            await self.aclose()  # before its loop closes

    async def aanswer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        """One answer per request, in order, asked concurrently (at most ``concurrency`` at once)."""
        tasks = [asyncio.ensure_future(self._answer(r)) for r in requests]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:  # a setup error stops the batch: nothing more is paid for
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        entry = self._semaphores.get(id(loop))
        if entry is None or entry[0] is not loop:  # (a new loop may reuse a closed one's id)
            entry = (loop, asyncio.Semaphore(self.concurrency))
            self._semaphores = {k: v for k, v in self._semaphores.items() if not v[0].is_closed()}
            self._semaphores[id(loop)] = entry
        return entry[1]

    async def _answer(self, request: AnswerRequest) -> Answer:
        sample, seed = sample_ids(request.sample_key)
        extra = penalty_parameters(self.penalty, request.penalty)
        info = new_info(self.model)
        info.update(sampling={"temperature": float(request.temperature), **extra}, seed=seed, failed=False, error=None)
        async with self._semaphore():
            try:
                c = await self.client.complete(
                    self.messages(request),
                    schema_name="answer",
                    schema=None,
                    prompt_version=f"executor_{self.prompt_version}",
                    temperature=float(request.temperature),
                    max_tokens=self.max_tokens,
                    seed=seed,
                    sample=sample,
                    extra=extra or None,
                )
            except NotRecordedError:
                raise  # a replay of another run: see the module docstring
            except LLMUnavailableError as err:  # the executor gave no answer; the episode goes on
                # a 400/422 naming the penalty parameter: every request would fail the same way
                rejected = next((k for k in extra if k in str(err)), None)
                if rejected is not None and ("(400)" in str(err) or "(422)" in str(err)):
                    raise LLMSetupError(
                        f"the endpoint {self.base_url} rejected {rejected} ({err}); choose another "
                        f"penalty mapping: {', '.join(PENALTY_MODES)}"
                    ) from None
                unavailable(info, err)
                info.update(failed=True, error=str(err))
                return Answer(None, "", 0, 0, failed=True, info=info)
        info["attempts"] = 1
        account(info, c)
        return Answer(
            final_number(c.content), tail(c.content, TEXT_CAP), c.prompt_tokens, c.completion_tokens, info=info
        )
