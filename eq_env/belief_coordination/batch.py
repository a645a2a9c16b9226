"""The batch engine: thousands of questions at once with the simulated answerer, equal to the environment.

:func:`episodes_batch` gathers the questions and the answerer's draws of episodes ``i`` of seed ``s`` exactly
as the environment does (``reset(seed=s, options={"episode": i})``); :func:`play` plays them with a choice of
(T, p) per executor and round and the majority coordinator, in numpy. With the same seed and the same
choices, its answers, commitments, rewards and tokens equal the environment's episode by episode (a test
checks it), so experiments and the ECON learner run at numpy speed on the very game the environment
defines. :func:`training_batch` draws fresh questions from a generator instead (for learning).

A *chooser* is ``choose(round, features) -> (temperatures, penalties)``, with ``features`` the executors'
observation vectors, shape (B, N, 5) as the environment builds them, and both outputs shape (B, N).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from eq_env.belief_coordination import rules
from eq_env.belief_coordination.answerers import (
    MAX_EXECUTORS,
    MAX_ROUNDS,
    SimulationParams,
    answer_draws,
    debate_bonus,
    prompt_tokens,
    question_traits,
    simulate,
)
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.env import BeliefCoordinationParallelEnv
from eq_env.belief_coordination.questions import Question, generate_question, steps_for

__all__ = [
    "Batch",
    "Chooser",
    "Outcome",
    "episodes_batch",
    "executor_features",
    "fixed_chooser",
    "play",
    "sample_batch",
    "training_batch",
]

Chooser = Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass
class Batch:
    """B questions with everything the simulation needs of them."""

    questions: list[Question]
    difficulty: np.ndarray  # (B,)
    steps: np.ndarray  # (B,)
    trap: np.ndarray  # (B,)
    candidates: np.ndarray  # (B, C): candidate values, index 0 correct
    gold: np.ndarray  # (B,)
    prompt: np.ndarray  # (B,) prompt tokens of a first-round request
    draws: np.ndarray  # (B, MAX_EXECUTORS, MAX_ROUNDS, 3)

    def __len__(self) -> int:
        return len(self.questions)

    def subset(self, index: np.ndarray, draws: np.ndarray | None = None) -> Batch:
        """The questions at ``index`` (repeats allowed), with ``draws`` instead of theirs if given."""
        return Batch(
            questions=[self.questions[int(i)] for i in index],
            difficulty=self.difficulty[index],
            steps=self.steps[index],
            trap=self.trap[index],
            candidates=self.candidates[index],
            gold=self.gold[index],
            prompt=self.prompt[index],
            draws=self.draws[index] if draws is None else draws,
        )


def _batch(questions: Sequence[Question], draws: np.ndarray, params: SimulationParams) -> Batch:
    traits = [question_traits(q, params) for q in questions]
    return Batch(
        questions=list(questions),
        difficulty=np.array([q.difficulty for q in questions], dtype=float),
        steps=np.array([q.steps for q in questions], dtype=float),
        trap=np.array([t.trap_score for t in traits]),
        candidates=np.array([t.values for t in traits]),
        gold=np.array([float(q.answer) for q in questions]),
        prompt=np.array([prompt_tokens(q) for q in questions], dtype=np.int64),
        draws=draws,
    )


def episodes_batch(
    config: BeliefCoordinationConfig, seed: int, episodes: Sequence[int], questions: Sequence[Question] | None = None
) -> Batch:
    """Episodes ``episodes`` of seed ``seed``, as the environment plays them."""
    env = BeliefCoordinationParallelEnv(config, questions=questions)
    chosen = [env._question(seed, int(i)) for i in episodes]
    draws = (
        np.stack([answer_draws(seed, int(i)) for i in episodes])
        if len(episodes)
        else np.zeros((0, MAX_EXECUTORS, MAX_ROUNDS, 3))
    )
    return _batch(chosen, draws, config.simulation())


def training_batch(config: BeliefCoordinationConfig, rng: np.random.Generator, size: int) -> Batch:
    """``size`` fresh generated questions (difficulty as configured) and draws, from ``rng``."""
    questions = []
    for i in range(size):
        steps = steps_for(config.difficulty, rng)
        questions.append(generate_question(rng, steps, f"train-{i}"))
    return _batch(questions, rng.random((size, MAX_EXECUTORS, MAX_ROUNDS, 3)), config.simulation())


def sample_batch(pool: Batch, rng: np.random.Generator, size: int) -> Batch:
    """``size`` questions drawn from ``pool`` with replacement, with fresh draws: cheap batches for learning
    (generating a question costs ~150 µs; drawing one from a pool, nothing)."""
    index = rng.integers(0, len(pool), size)
    return pool.subset(index, rng.random((size, MAX_EXECUTORS, MAX_ROUNDS, 3)))


def executor_features(
    batch: Batch, config: BeliefCoordinationConfig, round_: int, previous: np.ndarray | None
) -> np.ndarray:
    """The executors' observation vectors (B, N, 5), as the environment builds them. ``previous``: the last
    round's candidate indices (−1: no number), None in round 0."""
    values = None if previous is None else _values(batch, previous)
    return rules.executor_features(batch.difficulty, config.n_executors, config.rounds, round_, values)


def _values(batch: Batch, index: np.ndarray) -> np.ndarray:
    """The numbers of candidate indices (B, N), NaN for −1 (no number)."""
    return np.where(index >= 0, np.take_along_axis(batch.candidates, np.maximum(index, 0), axis=1), np.nan)


@dataclass
class Outcome:
    """What :func:`play` produced, per question."""

    index: np.ndarray  # (B, N) final candidate index per executor (−1: no number)
    values: np.ndarray  # (B, N) final numbers (NaN: none)
    committed: np.ndarray  # (B,)
    ts: np.ndarray
    al: np.ndarray
    cc: np.ndarray
    reward: np.ndarray
    prompt_tokens: np.ndarray  # (B,) executors over all rounds
    completion_tokens: np.ndarray  # (B,)
    temperatures: np.ndarray  # (B, R, N)
    penalties: np.ndarray  # (B, R, N)
    failed: np.ndarray | None = None  # (B,) requests the answerer could not answer (an LLM's, after retries)
    estimated: np.ndarray | None = None  # (B,) answers whose tokens were estimated (no usage reported)

    @property
    def tokens(self) -> np.ndarray:
        return self.prompt_tokens + self.completion_tokens  # type: ignore[no-any-return]


def play(batch: Batch, config: BeliefCoordinationConfig, choose: Chooser, *, coordinator: str = "majority") -> Outcome:
    """Play every question of ``batch``: ``choose`` gives each round's (T, p), the simulated answerer (under
    ``config``) answers, and the coordinator commits (``"majority"``, or ``"first"``: executor 0)."""
    params = config.simulation()
    b, n, rounds = len(batch), config.n_executors, config.rounds
    previous: np.ndarray | None = None
    prompt = np.zeros(b, np.int64)
    completion = np.zeros(b, np.int64)
    temps = np.zeros((b, rounds, n))
    pens = np.zeros((b, rounds, n))
    last_tokens = np.zeros((b, n), np.int64)
    for r in range(rounds):
        t, p = choose(r, executor_features(batch, config, r, previous))
        t, p = np.broadcast_to(np.asarray(t, float), (b, n)), np.broadcast_to(np.asarray(p, float), (b, n))
        temps[:, r], pens[:, r] = t, p
        bonus = None if previous is None else debate_bonus(previous, params)
        index, tokens = simulate(batch.trap, batch.steps, t, p, batch.draws[:, :n, r], params, bonus)
        read = np.zeros((b, n), np.int64) if previous is None else last_tokens.sum(axis=1, keepdims=True) - last_tokens
        prompt += (batch.prompt[:, None] + read).sum(axis=1)
        completion += tokens.sum(axis=1)
        previous, last_tokens = index, tokens
    assert previous is not None
    values = _values(batch, previous)
    if coordinator == "majority":
        committed = rules.majority(values)
    elif coordinator == "first":
        committed = np.zeros(b, np.int64)
    else:
        raise ValueError(f"coordinator must be 'majority' or 'first', got {coordinator!r}")
    terms = rules.reward_terms(values, committed, batch.gold)
    return Outcome(
        previous,
        values,
        committed,
        terms["ts"],
        terms["al"],
        terms["cc"],
        rules.reward(terms, config.weights),
        prompt,
        completion,
        temps,
        pens,
    )


def fixed_chooser(temperature: float, penalty: float) -> Chooser:
    """Every executor at (T, p) in every round."""
    return lambda r, f: (np.full(f.shape[:2], temperature), np.full(f.shape[:2], penalty))
