"""The LLM coordinator of belief coordination: reads the executors' replies and commits one of them.

Spec (``eq-env`` fills ``model``, ``base_url``, ``temperature``, ``max_tokens``, ``seed`` and
``max_reasks`` from its LLM flags when the spec leaves them out)::

    llm:model=gpt-4.1,base_url=http://localhost:8000/v1,max_reasks=1,prompt_version=v1

**Observation.** ``question`` (the text), ``replies`` (each executor's reply), ``answers`` (the number
each reply commits to, as the environment scores it: lines ``i: N`` or ``i: none``), ``action_mask``
(length N; 1: that executor gave a number); ``transcript`` and ``observation`` are not needed. The
numbers come from ``answers``, never from the replies' text, which the executors write: an executor
cannot change what another one answered. (An observation without ``replies``/``answers``, as before
they existed, falls back to reading the transcript, below.)

**Reading a transcript** (only without ``replies``). The blocks are found from the end: executor
N−1's header is the last header line naming it, executor i's the last naming i before executor i+1's. A header line an
executor writes into its own reply therefore moves only the start of its own block; no reply can
take over another executor's block (a forged header naming an earlier executor comes after that
executor's real one; one naming a later executor comes before the real one). Each block's number
is :func:`~eq_env.belief_coordination.questions.final_number` of its text.

**Asking.** The prompt (``prompts/coordinator_<version>.txt``, sections as in
:mod:`eq_env.agents.belief_coordination.answerer`) gives the question and each executor's reply fenced in
``<solver_reply solver="i">`` tags as untrusted text (cut to its last :data:`BLOCK_CAP` characters),
and asks the model to commit one of the solvers' final answers on a last line ``#### N``. There is
no strategy message: the coordinator is asked once per question (plus re-asks).

**The commitment** is the first number after the reply's *last* ``####``; numbers anywhere before
it — an executor's injected ``#### 999999`` the model quotes, its own working — do not count. It
becomes the lowest-indexed executor, among those the mask allows, whose block's number equals it
(within 1e-6, as the rules compare answers). A reply without ``####``, without a number
after it, or committing a number no allowed executor gave is invalid: it is sent back with the
reason up to ``max_reasks`` times (default 0: the paper's one call), then the coordinator falls
back to the **majority** among allowed executors (the most common number; ties: the lowest index)
with ``fallback=True`` and the reason. With no executor giving a number, nothing is asked:
executor 0 (a commitment to nothing), ``fallback=True``.

**Info** (per decision): the LLM policies' (:meth:`eq_env.agents.llm.LLMPolicy._ask`: tokens, attempts,
invalid replies, fallback and its reason, transport), plus ``committed`` (the model's number, or
None), ``values`` (each executor's number, from ``answers``), ``executor`` (the index
played), ``action``, ``decisions``, ``fallbacks`` and ``reasks``. An endpoint that cannot answer
after its retries raises :class:`~eq_env.core.policy.PolicyError` (the runner records a failed
episode).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from eq_env.agents.belief_coordination.answerer import PROMPT_DIR, fence, sections
from eq_env.agents.llm import LLMPolicy, new_info
from eq_env.agents.replies import ReplyError
from eq_env.belief_coordination.questions import final_number, show_number
from eq_env.belief_coordination.rules import ATOL, RTOL

__all__ = [
    "BLOCK_CAP",
    "ID",
    "LLMCoordinator",
    "coordinator_messages",
    "majority",
    "parse_answers",
    "read_commitment",
    "split_transcript",
]

ID = "eq_env/belief-coordination-v0"  # the game (eq_env.belief_coordination.spec registers it)
BLOCK_CAP = 2000  # characters of each executor's reply the coordinator reads (their ends)
TRANSCRIPT_CAP = 8000  # characters of a transcript with no executor header at all
_HEADER = re.compile(r"^\[executor (\d+)\][^\n]*$", re.M)


def split_transcript(transcript: str, n: int) -> list[str | None]:
    """Each executor's block of ``transcript`` (None: no header names it), found from the end (module docstring)."""
    headers = [(int(m[1]), m.start(), m.end()) for m in _HEADER.finditer(transcript)]
    spans: list[tuple[int, int] | None] = [None] * n
    limit = len(transcript)
    for i in reversed(range(n)):
        found = [(start, end) for j, start, end in headers if j == i and end <= limit]
        if found:
            spans[i] = found[-1]
            limit = found[-1][0]
    blocks: list[str | None] = [None] * n
    starts = sorted(s[0] for s in spans if s is not None)
    for i, span in enumerate(spans):
        if span is not None:
            stop = next((s for s in starts if s > span[0]), len(transcript))
            blocks[i] = transcript[span[1] : stop].strip("\n")
    return blocks


def parse_answers(text: str, n: int) -> list[float | None]:
    """The environment's ``answers`` text (lines ``i: N`` or ``i: none``) as N numbers (None: none, or a
    line that is not the environment's)."""
    values: list[float | None] = [None] * n
    for line in text.splitlines():
        index, _, value = line.partition(": ")
        if index.isdigit() and int(index) < n and value != "none":
            try:
                number = float(value)
            except ValueError:
                continue
            values[int(index)] = number if np.isfinite(number) else None
    return values


def read_commitment(reply: str) -> float:
    """The number a coordinator's reply commits to: the first after its last ``####`` (a
    :class:`ReplyError` when there is no ``####`` or no number after it)."""
    marker = reply.rfind("####")
    if marker < 0:
        raise ReplyError('no final line "#### N" in the reply')
    value = final_number(reply[marker:])
    if value is None:
        raise ReplyError('no number after the last "####"')
    return value


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= ATOL + RTOL * abs(b)  # (as the rules compare answers)


def majority(values: Sequence[float | None], allowed: Sequence[int]) -> int | None:
    """Among the ``allowed`` executors with a number, one whose number is the most common (ties: the lowest
    index); None when none has a number."""
    given = [i for i in allowed if values[i] is not None]
    if not given:
        return None
    support = {i: sum(_same(values[j], values[i]) for j in given) for i in given}  # type: ignore[arg-type]
    return min(given, key=lambda i: (-support[i], i))


def coordinator_messages(
    question: str,
    transcript: str,
    n: int,
    version: str = "v1",
    replies: Sequence[str] | None = None,
    values: Sequence[float | None] | None = None,
) -> list[dict[str, str]]:
    """The chat messages (system, user) of a coordinator's observation (``replies``: each executor's, when the
    observation gives them apart; else they are read out of ``transcript``)."""
    parts = sections("coordinator", version)
    blocks: list[str | None] = list(replies) if replies is not None else split_transcript(transcript, n)
    if any(b is not None for b in blocks):
        # each reply's final answer as the environment scores it, in the tag (outside the untrusted text: a long
        # reply's own last line may be cut away)
        shown = [
            fence(
                b if b is not None else "(no reply)",
                BLOCK_CAP,
                solver=i,
                **({} if values is None else {"final_answer": "none" if values[i] is None else show_number(values[i])}),  # type: ignore[arg-type]
            )
            for i, b in enumerate(blocks)
        ]
        answers = "\n\n".join(shown)
    else:  # not the environment's layout: the whole text, fenced all the same
        answers = fence(transcript, TRANSCRIPT_CAP, solver="all")
    user = parts["user"].substitute(question=question.strip(), answers=answers)
    return [{"role": "system", "content": parts["system"].substitute()}, {"role": "user", "content": user}]


class LLMCoordinator(LLMPolicy):
    """A belief-coordination coordinator played by an LLM (see the module docstring).

    Args:
        model: the model name the endpoint knows, sent byte for byte (quote one that reads as a number).
        base_url: the endpoint (default ``OPENAI_BASE_URL``, else OpenAI's); credentials in it are used,
            never recorded.
        temperature, seed: sampling parameters sent with every request.
        max_tokens: completion token limit.
        prompt_version: the template ``agents/belief_coordination/prompts/coordinator_<version>.txt``.
        max_reasks: invalid replies sent back with the reason before falling back to the majority.
    """

    role: ClassVar[str] = "coordinator"
    PROMPTS = PROMPT_DIR

    def __init__(
        self,
        model: str = "gpt-4.1",
        base_url: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = None,
        prompt_version: str = "v1",
        max_reasks: int = 0,
    ) -> None:
        super().__init__(model, base_url, temperature, max_tokens, seed, prompt_version, max_reasks)
        sections("coordinator", prompt_version)  # a template without its sections fails now

    def messages(self, observation: Mapping[str, Any]) -> list[dict[str, str]]:
        """The chat messages an observation becomes."""
        n = len(np.asarray(observation["action_mask"]))
        replies = observation.get("replies")
        texts = None if replies is None else [str(r) for r in replies]
        values = parse_answers(str(observation["answers"]), n) if "answers" in observation else None
        return coordinator_messages(
            str(observation["question"]), str(observation.get("transcript", "")), n, self.prompt_version, texts, values
        )

    async def aact(self, observation: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        mask = np.asarray(observation["action_mask"])
        n = len(mask)
        if "answers" in observation:
            values = parse_answers(str(observation["answers"]), n)
        else:
            blocks = split_transcript(str(observation["transcript"]), n)
            values = [final_number(b) if b is not None else None for b in blocks]
        allowed = [i for i in range(n) if mask[i]]
        eligible = [i for i in allowed if values[i] is not None]
        if not eligible:
            info = new_info(self.model)
            reason = "no executor gave a number (none in the transcript the mask allows)"
            chosen = allowed[0] if allowed else 0
            info.update(fallback=True, fallback_reason=f"{reason}: nothing asked, executor {chosen}")
            return chosen, self._finish(info, chosen, None, values)
        shown = ", ".join(dict.fromkeys(show_number(values[i]) for i in eligible))  # type: ignore[arg-type]
        reask = (
            'That reply is invalid: {error}. End your reply with one line "#### N", N being one of the '
            f"solvers' final answers: {shown}."
        )
        committed: list[float] = []

        def parse(c: Any) -> int:
            value = read_commitment(c.content)
            committed.append(value)
            match = next((i for i in eligible if _same(values[i], value)), None)  # type: ignore[arg-type]
            if match is None:
                raise ReplyError(f"{show_number(value)} is no solver's final answer (theirs: {shown})")
            return match

        picked, info = await self._ask(self.messages(observation), "commit", None, parse, reask=reask)
        if picked is None:
            picked = majority(values, allowed)
            assert picked is not None  # (eligible is not empty)
            info["fallback_reason"] = f"{info['fallback_reason']}; majority: executor {picked}"
        return int(picked), self._finish(info, int(picked), committed[-1] if committed else None, values)

    @staticmethod
    def _finish(
        info: dict[str, Any], chosen: int, committed: float | None, values: list[float | None]
    ) -> dict[str, Any]:
        info.update(
            committed=committed,
            values=values,
            executor=chosen,
            action=f"executor {chosen}",
            decisions=1,
            fallbacks=int(info["fallback"]),
            reasks=len(info["invalid_replies"]),
        )
        return info
