"""Answerers: how an executor's (question, temperature T, repetition penalty p) becomes an answer and a token count.

An :class:`Answerer` takes a batch of :class:`AnswerRequest` and returns one
:class:`Answer` each. Two implement it: :class:`SimulatedAnswerer` (offline,
seeded, vectorised; below) and the LLM answerer of
:mod:`eq_env.agents.belief_coordination` (a real model behind an OpenAI-compatible
endpoint, ``async aanswer``).

The simulated answerer's model
------------------------------
A real model's answer to a reasoning question is the end of a sampled
*reasoning path*. Greedy decoding follows the single most likely path, which on
a hard question is often a confident wrong one, while the answer reached by
*most* paths is more often right: the reason sampling plus a vote
(self-consistency) beats greedy decoding. The simulation keeps exactly that.
Each question has a fixed set of candidate answers, the same for every
executor (so their errors are correlated):

========================  =====  ====================================  =====================================
candidate                 paths  score of each path                    meaning
========================  =====  ====================================  =====================================
the correct answer        M      ``−λ·(p − 1)²``                       many moderately likely derivations
the trap (one wrong)      1      ``Δ = β·(d − d0) + σ·z``              one confident slip; z ~ N(0, 1) per
                                                                       question, d its difficulty
K noise answers (wrong)   1 each ``−η``                                 scattered arithmetic errors
========================  =====  ====================================  =====================================

At temperature T an answer's probability is proportional to
``Σ_paths exp(score / T)``: a softmax of the path scores over T, summed by
answer. So at low T every executor gives the top path's answer (the same one:
agreement 1), which is the trap whenever ``Δ > 0`` (hard questions); at
``T > Δ / ln M`` the correct answer's many paths outweigh the trap; at high T
the noise answers dilute everything (diverse, less accurate). The best
temperature therefore depends on the question's difficulty: low for easy
questions, high for hard ones — the adaptation a learned belief could exploit.

The repetition penalty p ≥ 1 (1: none) acts twice. Too little and decoding
falls into a repetition loop with probability ``ρ0·exp(−κ(p − 1))·exp(−T/τ)``
(more often at low T), which produces no final answer and ``max_tokens``
tokens. Too much and the model avoids repeating the numbers it needs: the
correct paths' score drops by ``λ·(p − 1)²``. The best p lies in between
where loops threaten (about 1.2 at low T, with the defaults) and near 1 at
high T, where they are rare. A reply's length is
``tokens_per_step·(steps + 1)·(0.9 + 0.2·T)·exp(−0.15(p − 1))``, times a
uniform factor in [0.6, 1.4].

In a debate round (round ≥ 1) an executor reads the others' previous answers:
each candidate's path scores rise by ``conformity·share`` (the share of the
other executors who gave it), and the correct answer's by ``verification`` more
when at least one other executor gave it (a correct derivation, once shown, is
recognised).

All draws come from three uniforms per (episode, executor, round), drawn from
the episode's seed with a fixed layout (:func:`answer_draws`): the answer (by
the inverse of its distribution, candidates in a fixed order, so that a small
change of T changes few answers: common random numbers), the loop and the
length. An executor's draws do not depend on how many executors there are.

``sensitive=False`` makes the answerer ignore the requested T and p and answer
every request at ``(insensitive_temperature, insensitive_penalty)``: the
*null instrument*, on which no choice of (T, p) can matter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from eq_env.belief_coordination.questions import Question, show_number

__all__ = [
    "ANSWER_STREAM",
    "MAX_EXECUTORS",
    "MAX_ROUNDS",
    "Answer",
    "AnswerRequest",
    "Answerer",
    "SimulatedAnswerer",
    "SimulationParams",
    "answer_draws",
    "question_traits",
    "round_requests",
]

MAX_EXECUTORS = 16
MAX_ROUNDS = 5
ANSWER_STREAM = 11  # the answerer's seed stream (questions draw from their own)


@dataclass(frozen=True)
class AnswerRequest:
    """What one executor asks its answerer in one round.

    Attributes:
        question: the question.
        temperature, penalty: the executor's own sampling parameters (T, p).
        executor: its index; round: 0 for the first answer, r ≥ 1 for a debate revision.
        others: the other executors' previous replies, in executor order (empty in round 0).
        others_values: the numbers those replies commit to (None: no number).
        others_tokens: their lengths in tokens (what reading them costs; estimated from the text if empty).
        draws: the episode's uniforms for this executor and round (the simulated answerer's randomness).
        sample_key: (seed, episode, executor, round): tells apart otherwise identical LLM requests.
    """

    question: Question
    temperature: float
    penalty: float
    executor: int
    round: int = 0
    others: tuple[str, ...] = ()
    others_values: tuple[float | None, ...] = ()
    others_tokens: tuple[int, ...] = ()
    draws: tuple[float, float, float] = (0.5, 0.5, 0.5)
    sample_key: tuple[int, int, int, int] = (0, 0, 0, 0)


def round_requests(
    question: Question,
    parameters: Sequence[tuple[float, float]],
    previous: Sequence[Answer] | None,
    draws: np.ndarray,
    seed: int,
    episode: int,
    round_: int,
) -> list[AnswerRequest]:
    """The executors' requests of one round of one question: executor i at ``parameters[i]`` (T, p), reading the
    others' ``previous`` answers (a debate round; None in the first), with the episode's ``draws``
    (:func:`answer_draws`) — what the environment asks, and what any batch of its episodes asks."""
    requests = []
    for i, (t, p) in enumerate(parameters):
        others = [] if previous is None else [a for j, a in enumerate(previous) if j != i]
        requests.append(
            AnswerRequest(
                question=question,
                temperature=float(t),
                penalty=float(p),
                executor=i,
                round=round_,
                others=tuple(o.text for o in others),
                others_values=tuple(o.value for o in others),
                others_tokens=tuple(o.completion_tokens for o in others),
                draws=tuple(float(x) for x in draws[i, round_]),  # type: ignore[arg-type]
                sample_key=(seed, episode, i, round_),
            )
        )
    return requests


@dataclass(frozen=True)
class Answer:
    """One executor's reply: its text, the number it commits to (None: none), and what it cost.

    ``info`` holds what an LLM answerer reports (requests, retries, cache hits, errors); ``failed`` is
    set when no reply could be obtained (the executor then gave no answer).
    """

    value: float | None
    text: str
    prompt_tokens: int
    completion_tokens: int
    failed: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Answerer(Protocol):
    """What the environment needs of an answerer."""

    name: str

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        """One answer per request, in order."""


@dataclass(frozen=True)
class SimulationParams:
    """The simulated answerer's parameters (see the module docstring for the model)."""

    correct_paths: int = 4  # M
    trap_slope: float = 3.0  # β
    trap_midpoint: float = 0.35  # d0
    trap_noise: float = 0.6  # σ
    noise_answers: int = 6  # K
    noise_score: float = -1.0  # −η
    corruption: float = 3.0  # λ
    loop_rate: float = 0.15  # ρ0
    loop_decay: float = 8.0  # κ
    loop_temperature: float = 0.5  # τ
    tokens_per_step: float = 40.0
    max_tokens: int = 512
    conformity: float = 1.0
    verification: float = 0.5
    sensitive: bool = True
    insensitive_temperature: float = 1.0
    insensitive_penalty: float = 1.2

    def __post_init__(self) -> None:
        checks = {
            "correct_paths": self.correct_paths >= 1,
            "noise_answers": 0 <= self.noise_answers <= 64,
            "trap_noise": self.trap_noise >= 0,
            "loop_rate": 0 <= self.loop_rate <= 1,
            "loop_decay": self.loop_decay >= 0,
            "loop_temperature": self.loop_temperature > 0,
            "tokens_per_step": self.tokens_per_step > 0,
            "max_tokens": self.max_tokens >= 1,
            "insensitive_temperature": self.insensitive_temperature > 0,
            "insensitive_penalty": self.insensitive_penalty >= 1,
        }
        for name, ok in checks.items():
            value = getattr(self, name)
            if not ok or (isinstance(value, float) and not math.isfinite(value)):
                raise ValueError(f"SimulationParams.{name}: invalid value {value!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def answer_draws(seed: int, episode: int) -> np.ndarray:
    """The episode's uniforms, shape (MAX_EXECUTORS, MAX_ROUNDS, 3): (answer, loop, length) for each executor
    and round, the same whatever the number of executors."""
    ss = np.random.SeedSequence(seed, spawn_key=(ANSWER_STREAM, episode))
    return np.random.default_rng(ss).random((MAX_EXECUTORS, MAX_ROUNDS, 3))


@dataclass(frozen=True)
class QuestionTraits:
    """What the simulation fixes for one question: its trap score and its candidate answers' values
    (index 0 correct, 1 the trap, then the noise answers; all distinct)."""

    trap_score: float
    values: tuple[float, ...]


def question_traits(question: Question, params: SimulationParams) -> QuestionTraits:
    """The question's fixed traits, from its own key: the same for every executor, episode and run."""
    rng = np.random.default_rng(question.key)
    z = float(rng.standard_normal())
    delta = params.trap_slope * (question.difficulty - params.trap_midpoint) + params.trap_noise * z
    gold = float(question.answer)
    values = [gold]
    scale = max(1.0, abs(gold))
    tries = 0
    while len(values) < 2 + params.noise_answers:
        tries += 1
        if tries > 1000:  # (a small answer has few plausible slips: fill with distinct ones, never loop forever)
            step = 1.0
            while len(values) < 2 + params.noise_answers:
                if all(abs(gold + step - v) > 1e-9 * max(1.0, abs(v)) for v in values):
                    values.append(gold + step)
                step += 1.0
            break
        # plausible slips: small additive errors or a wrong factor, never the answer itself
        kind = rng.integers(3)
        if kind == 0:
            wrong = gold + float(rng.integers(1, 10)) * (1 if rng.random() < 0.5 else -1)
        elif kind == 1:
            wrong = gold * float(rng.choice([2.0, 0.5, 3.0, 10.0]))
        else:
            wrong = gold + round(float(rng.uniform(-0.5, 0.5)) * scale)
        if all(abs(wrong - v) > 1e-9 * max(1.0, abs(v)) for v in values):
            values.append(wrong)
    return QuestionTraits(delta, tuple(values))


def answer_probabilities(
    trap: np.ndarray,
    temperature: np.ndarray,
    penalty: np.ndarray,
    params: SimulationParams,
    bonus: np.ndarray | None = None,
) -> np.ndarray:
    """P(candidate) for each (question, executor): shape ``temperature.shape + (2 + K,)``.

    ``trap`` is broadcast against ``temperature``; ``bonus`` (same trailing shape as the result) adds to
    the candidates' path scores (debate rounds).
    """
    k = params.noise_answers
    t = np.asarray(temperature, dtype=float)
    p = np.asarray(penalty, dtype=float)
    trap = np.broadcast_to(np.asarray(trap, dtype=float), t.shape)
    scores = np.empty((*t.shape, 2 + k))
    scores[..., 0] = -params.corruption * (p - 1.0) ** 2
    scores[..., 1] = trap
    scores[..., 2:] = params.noise_score
    if bonus is not None:
        scores = scores + bonus
    logits = scores / t[..., None]
    logits[..., 0] += math.log(params.correct_paths)
    logits -= logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


def loop_probability(temperature: np.ndarray, penalty: np.ndarray, params: SimulationParams) -> np.ndarray:
    """P(the reply falls into a repetition loop and commits to nothing)."""
    return (
        params.loop_rate * np.exp(-params.loop_decay * (penalty - 1.0)) * np.exp(-temperature / params.loop_temperature)
    )


def reply_length(
    steps: np.ndarray, temperature: np.ndarray, penalty: np.ndarray, u: np.ndarray, params: SimulationParams
) -> np.ndarray:
    """Completion tokens of a reply that does not loop."""
    mean = params.tokens_per_step * (steps + 1) * (0.9 + 0.2 * temperature) * np.exp(-0.15 * (penalty - 1.0))
    return np.minimum(np.rint(mean * (0.6 + 0.8 * u)), params.max_tokens).astype(np.int64)


def debate_bonus(previous: np.ndarray, params: SimulationParams) -> np.ndarray:
    """The path-score bonus each executor gets from the others' previous answers.

    ``previous``: candidate index per (…, executor), −1 for no answer. Returns shape previous.shape + (2+K,).
    """
    c = 2 + params.noise_answers
    onehot = (previous[..., None] == np.arange(c)).astype(float)  # (…, N, C)
    n = previous.shape[-1]
    others = onehot.sum(axis=-2, keepdims=True) - onehot  # counts among the other executors
    share = others / max(n - 1, 1)
    bonus = params.conformity * share
    bonus[..., 0] += params.verification * (others[..., 0] > 0)
    return bonus  # type: ignore[no-any-return]


def simulate(
    trap: np.ndarray,
    steps: np.ndarray,
    temperature: np.ndarray,
    penalty: np.ndarray,
    draws: np.ndarray,
    params: SimulationParams,
    bonus: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One round of answers for a batch: candidate index (−1: a loop, no answer) and completion tokens.

    Shapes: ``temperature``, ``penalty`` (B, N); ``trap``, ``steps`` (B,); ``draws`` (B, N, 3);
    ``bonus`` (B, N, 2 + K): the debate's score bonus (:func:`debate_bonus` of the last round), None in round 0.
    """
    t = np.asarray(temperature, dtype=float)
    p = np.asarray(penalty, dtype=float)
    if not params.sensitive:
        t = np.full_like(t, params.insensitive_temperature)
        p = np.full_like(p, params.insensitive_penalty)
    probs = answer_probabilities(np.asarray(trap, dtype=float)[:, None], t, p, params, bonus)
    cdf = np.cumsum(probs, axis=-1)
    index = np.minimum((cdf < draws[..., 0:1]).sum(axis=-1), probs.shape[-1] - 1)
    loops = draws[..., 1] < loop_probability(t, p, params)
    index = np.where(loops, -1, index)
    length = reply_length(np.asarray(steps, dtype=float)[:, None], t, p, draws[..., 2], params)
    tokens = np.where(loops, params.max_tokens, length)
    return index.astype(np.int64), tokens.astype(np.int64)


def prompt_tokens(question: Question) -> int:
    """The simulated prompt's tokens: the instructions (60) and the question (4 characters a token)."""
    return 60 + math.ceil(len(question.text) / 4)


class SimulatedAnswerer:
    """The offline answerer of the module docstring (``params``: its :class:`SimulationParams`)."""

    name = "simulated"

    def __init__(self, params: SimulationParams | None = None) -> None:
        self.params = params or SimulationParams()
        self._traits: dict[tuple[str, float, float], QuestionTraits] = {}

    def traits(self, question: Question) -> QuestionTraits:
        # by content, not qid: two questions may share a qid (generated ones at two difficulties)
        key = (question.text, float(question.answer), float(question.difficulty))
        cached = self._traits.get(key)
        if cached is None:
            if len(self._traits) > 100_000:
                self._traits.clear()
            cached = self._traits[key] = question_traits(question, self.params)
        return cached

    def answer(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        """Answers to one round of one question's executors (requests of several questions are answered
        one question at a time)."""
        out: list[Answer] = []
        for group in _by_question(requests):
            out.extend(self._answer_group(group))
        return out

    def _answer_group(self, requests: Sequence[AnswerRequest]) -> list[Answer]:
        q = requests[0].question
        traits = self.traits(q)
        t = np.array([[r.temperature for r in requests]])
        p = np.array([[r.penalty for r in requests]])
        draws = np.array([[r.draws for r in requests]])
        bonus = None
        if requests[0].round > 0:
            # each executor's view of the others' last answers (its own slot: no answer, so it adds nothing)
            rows = []
            for r in requests:
                previous = [_candidate(traits, v) for v in r.others_values]
                at = min(r.executor, len(previous))
                previous.insert(at, -1)
                rows.append(debate_bonus(np.array(previous), self.params)[at])
            bonus = np.stack(rows)[None]
        index, tokens = simulate(np.array([traits.trap_score]), np.array([q.steps]), t, p, draws, self.params, bonus)
        base = prompt_tokens(q)
        out = []
        for j, r in enumerate(requests):
            i = int(index[0, j])
            value = None if i < 0 else traits.values[i]
            text = "... (no final answer: the reply loops)" if value is None else f"#### {show_number(value)}"
            read = sum(r.others_tokens) if r.others_tokens else sum(_reply_tokens(o) for o in r.others)
            out.append(Answer(value, text, base + read, int(tokens[0, j])))
        return out


def _candidate(traits: QuestionTraits, value: float | None) -> int:
    if value is None:
        return -1
    for i, v in enumerate(traits.values):
        if abs(v - value) <= 1e-9 * max(1.0, abs(v)):
            return i
    return -1  # (a number no candidate has: it supports nothing)


def _reply_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def _by_question(requests: Sequence[AnswerRequest]) -> list[list[AnswerRequest]]:
    groups: dict[str, list[AnswerRequest]] = {}
    for r in requests:
        groups.setdefault(r.question.qid, []).append(r)
    return list(groups.values())
