"""``eq-env reproduce --env belief-coordination``: ECON's claims against the three falsifiers, in one command.

For each instrument (the *sensitive* simulated answerer, on which T and p matter
as they do for real models, and the *null* one, on which they cannot), each
team size N and each seed, one **run**:

1. trains ECON (:mod:`eq_env.baselines.belief_coordination.econ`) on generated
   questions (the run's own seed), and keeps the same architecture at its random
   initialisation (**F1**'s control);
2. on the same training questions (held out from the evaluation), picks the best
   single fixed (T, p) of the grid (``tuned``: the strongest non-learned constant)
   and the *multi-LLM comparator* of the +11.2% claim: the most accurate of
   ``fixed``, ``schedule`` and ``debate`` there (choosing it on the questions it is
   then tested on would favour whichever baseline was lucky on them);
3. evaluates every method on the same held-out questions with the same draws
   (common random numbers: methods differ only by their choices):

   ============  =======================================================================
   ``single``    one executor at (0.7, 1.1); its answer is the commitment
   ``fixed``     N executors at (0.7, 1.1), majority vote
   ``random``    N executors at uniformly random grid points, majority vote
   ``schedule``  majority vote over a fixed temperature schedule (0.3 … 1.2, p 1.1): **F3**'s baseline
   ``tuned``     N executors at the tuned fixed (T, p), majority vote
   ``debate``    three rounds of debate at (0.7, 1.1) (executors read each other), majority vote
   ``econ``      the trained beliefs, majority vote (the same coordinator as every other method)
   ``frozen``    the same networks frozen at their random initialisation (**F1**)
   ============  =======================================================================

4. checks the equilibrium condition directly (**F2**, :func:`equilibrium_gaps`).

**F2's ε.** For each executor, a unilateral deviation is a grid point per value of
what it observes (the question's difficulty), all others holding their learned
choices; the profile is an ε-equilibrium over the grid for every ε above the
largest gain a deviation offers. The largest gain *measured* is biased upwards:
the best of N·G noisy gains is mostly the luckiest, and the old figure, a mean
over seeds of per-seed maxima, inherited that bias (on the null instrument, where
no deviation can gain, it is 0 only because every gain is exactly 0). So the
choice and the measurement use different questions (cross-fitting): the held-out
questions are split in two halves (alternate questions); on one half each
executor's best deviation *and* the executor whose deviation gains most are
chosen, and that deviation's gain is measured on the other half; then the halves
swap, and ε is the mean over all questions of the gain each was measured with.
Selection and measurement being independent, ε is an unbiased estimate of the
chosen deviation's true gain — so, in expectation, at most the largest true gain:
a deviation gaining this much exists, which is what refutes an equilibrium. The
record keeps each executor's cross-fitted gain (``gain``), the in-sample gains
(``gain_in_sample``) and the largest of the held-out gains (``largest_gain``, for
comparison with the biased figure). With fewer than two usable questions there
is no held-out half: ε is not measured (``null``).

**Statistics** (:mod:`eq_env.studies.belief_coordination.verdicts`). Every claim is a
per-seed paired difference, given as its mean ± the half-width of a 95% t-interval
over seeds. Its verdict is a paired t-test, Holm–Bonferroni-corrected over the
claims the run tests (family-wise error 5%). A seed on which a quantity is
undefined (every question of a method failed) is left out of it and named.

**Files.** Every run is one line of ``DIR/results.jsonl``, written when it
finishes; a killed command started again skips the runs already there. Then the
tables (``DIR/methods.md``, ``DIR/methods.csv``, ``DIR/falsifiers.md``), the figure
(``DIR/belief_coordination.png``) and ``DIR/summary.md``, which states for each of
the paper's claims what our measurement says.

**With a model** (``--answerer llm`` and the LLM flags: ``--model``, ``--base-url``,
``--api-key``, ``--cache``, ``--max-retries``, ``--backoff``, ``--price-*`` …) the
methods' choices are answered by a real model through the LLM answerer
(:class:`eq_env.agents.belief_coordination.answerer.LLMAnswerer`: cached in
``DIR/llm_cache``, ``--concurrency`` requests in flight, resumable; a replay with
``--cache read`` makes no request). ECON and the choices of step 2 are then made on
the simulated answerer — training against the model would take hundreds of
thousands of requests — and evaluated on the model: a transfer, said in the
summary. An *episode* is one question played by one method (F2: one question of
its deviation search, every profile). A request the endpoint still cannot answer
after the retries fails its episode: it is listed in the run's ``failed`` (method,
episode, question, error) and left out of that method's metrics, never scored as
a wrong answer; the command names the failed runs on stderr and exits 3; a claim
measured on runs with failures gets no verdict, and ``summary.md``,
``falsifiers.md`` and ``methods.md`` say so. Run the same command again: a run
with failures is played again, its answers coming from the cache (only the failed
requests are asked again; with ``--cache off`` all of that run's). Each run's
record holds what its requests cost per method (``llm``: answers, tokens, and under
``transport`` requests, retries, cache hits, transport errors and billed tokens,
earlier attempts of a run played again included), and ``DIR/llm_costs.csv`` sums
them per method, with dollars at ``--price-prompt``/``--price-completion``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from tqdm.auto import tqdm

from eq_env.belief_coordination import batch as engine
from eq_env.belief_coordination import rules
from eq_env.belief_coordination.answerers import MAX_EXECUTORS, Answer, AnswerRequest, answer_draws, round_requests
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.questions import BASELINE_SAMPLING, Question
from eq_env.core.cli import Command
from eq_env.core.executors import Call, Executor, LocalExecutor
from eq_env.core.experiments import ResultsStore
from eq_env.core.report import from_json_number, markdown_table, plot_lines, write_csv
from eq_env.studies.belief_coordination.verdicts import Estimate, estimate, holm, left_out, verdict

if TYPE_CHECKING:
    from eq_env.core.experiments import Condition

__all__ = ["CLAIMS", "METHODS", "Options", "add_arguments", "run", "run_one"]

METHODS = ("single", "fixed", "random", "schedule", "tuned", "debate", "econ", "frozen")
MULTI = ("fixed", "schedule", "debate")  # the multi-LLM methods the +11.2% claim is measured against
BASE = BASELINE_SAMPLING  # the fixed baselines' (T, p): a common chat default
SCHEDULE = (0.3, 1.2)  # the temperature schedule's ends
DEBATE_ROUNDS = 3
METRIC_NAMES = ("accuracy", "reward", "alignment", "contribution", "tokens", "temperature", "penalty")
RECORD = "r2"  # the record's layout, in its key: a record of another layout is no run of this command
MAX_TOKENS = 512  # the LLM answerer's completion limit per reply (--max-tokens)

# The paper's claims: (name, what it says, its figure)
CLAIMS = (
    ("single", "+10.9% over single-agent baselines", 10.9),
    ("multi", "+11.2% over multi-LLM methods", 11.2),
    ("tokens", "21.4% fewer tokens than a three-round debate", 21.4),
    ("nine", "+18.1% when scaled to nine executors", 18.1),
)


@dataclass(frozen=True)
class Options:
    """What one ``reproduce`` does.

    Attributes:
        seeds: the seeds (each trains its own ECON and draws its own questions).
        executors: the team sizes N.
        questions: held-out questions per run.
        train_steps: ECON's gradient steps per run (batches of 256 questions).
        null: also run the null instrument (at the first N).
        jobs: worker processes (runs in parallel).
        answerer: ``"simulated"`` or ``"llm"`` (with model and base_url).
        max_tokens: the LLM answerer's completion token limit per reply.
        equilibrium_questions: questions of F2's deviation search with an LLM answerer (each costs N × G
            requests per question); the simulated answerer uses all held-out questions.
        questions_file: the GSM8K-style JSONL file the held-out questions come from (shown, never read
            here); question_set: its questions, read once
            (:func:`~eq_env.belief_coordination.questions.read_questions`); source: how run keys name them
            (``generated``, or the file's name and the digest of what was read).
    """

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    executors: tuple[int, ...] = (3, 5, 9)
    questions: int = 2000
    train_steps: int = 1500
    null: bool = True
    jobs: int = 2
    answerer: str = "simulated"
    model: str = ""
    base_url: str | None = None
    penalty: str = "frequency"
    concurrency: int = 16
    max_tokens: int = MAX_TOKENS
    equilibrium_questions: int = 20
    questions_file: str | None = None
    question_set: tuple[Question, ...] | None = None
    source: str = "generated"
    extra: dict[str, Any] = field(default_factory=dict)


def _config(n: int, instrument: str) -> BeliefCoordinationConfig:
    """The game of a run: the grid (ECON's), the simulated answerer sensitive unless the null instrument."""
    return BeliefCoordinationConfig(n_executors=n, action_space="grid", sensitive=instrument != "null")


def run_key(instrument: str, n: int, seed: int, opts: Options) -> str:
    """What determines a run's results (an LLM run's endpoint with its credentials masked)."""
    answerer = "simulated"
    if opts.answerer != "simulated":
        from eq_env.agents.client import resolve_base_url
        from eq_env.core.redact import public_url

        endpoint = public_url(resolve_base_url(opts.base_url))
        answerer = (
            f"llm:{opts.model}@{endpoint}/penalty={opts.penalty}/mt{opts.max_tokens}/f2q{opts.equilibrium_questions}"
        )
    return f"{instrument}/n{n}/seed{seed}/q{opts.questions}/steps{opts.train_steps}/{answerer}/{opts.source}/{RECORD}"


def file_source(name: str, digest: str) -> str:
    """A questions file as a run key names it: its name and the digest of the lines read (another file of the
    same name, or the file edited where it was read, is another experiment)."""
    return f"{name}@{digest[:16]}"


# ---------------------------------------------------------------------------
# Choosers (engine.Chooser: round, features (B, N, 5) -> T, p)
# ---------------------------------------------------------------------------
def _fixed(t: float, p: float) -> engine.Chooser:
    return engine.fixed_chooser(t, p)


def _schedule(n: int) -> engine.Chooser:
    temps = np.linspace(*SCHEDULE, n) if n > 1 else np.array([sum(SCHEDULE) / 2])
    return lambda r, f: (np.broadcast_to(temps, f.shape[:2]), np.full(f.shape[:2], BASE[1]))


def _random(config: BeliefCoordinationConfig, seed: int) -> engine.Chooser:
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(41,)))

    def choose(r: int, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # drawn for every possible executor, so that executor j's choices do not depend on N
        index = rng.integers(0, config.grid_size, (f.shape[0], MAX_EXECUTORS))[:, : f.shape[1]]
        return config.grid_point(index)

    return choose


def _grid_chooser(config: BeliefCoordinationConfig, index: np.ndarray) -> engine.Chooser:
    """Fixed grid indices (B, N) for every round."""
    t, p = config.grid_point(index)
    return lambda r, f: (t, p)


# ---------------------------------------------------------------------------
# Playing with any answerer (the LLM path); the simulated path is engine.play
# ---------------------------------------------------------------------------
def answer_all(answerer: Any, requests: list[AnswerRequest]) -> list[Answer]:
    """The answerer's answers (the LLM answerer sends them concurrently, and closes its connections after)."""
    return list(answerer.answer(requests))


def play_with(
    questions: Sequence[Question],
    episodes: Sequence[int],
    seed: int,
    config: BeliefCoordinationConfig,
    choose: engine.Chooser,
    answerer: Any,
    coordinator: str = "majority",
    infos: list[list[dict[str, Any]]] | None = None,
) -> engine.Outcome:
    """:func:`engine.play` with any answerer: the same requests the environment would make (episode ``i`` of
    ``seed`` for ``questions[k]``, ``i = episodes[k]``), all of a round at once. ``infos`` (one list per
    question), when given, receives every answer's ``info`` (what the LLM answerer reports it cost)."""
    b, n, rounds = len(questions), config.n_executors, config.rounds
    difficulty = np.array([q.difficulty for q in questions], dtype=float)
    draws = [answer_draws(seed, int(e)) for e in episodes]
    values: np.ndarray | None = None
    replies: list[list[Answer]] = []
    prompt = np.zeros(b, np.int64)
    completion = np.zeros(b, np.int64)
    failed = np.zeros(b, np.int64)
    estimated = np.zeros(b, np.int64)
    temps = np.zeros((b, rounds, n))
    pens = np.zeros((b, rounds, n))
    for r in range(rounds):
        t, p = choose(r, rules.executor_features(difficulty, n, rounds, r, values))
        t, p = np.broadcast_to(np.asarray(t, float), (b, n)), np.broadcast_to(np.asarray(p, float), (b, n))
        temps[:, r], pens[:, r] = t, p
        requests = []
        for k, q in enumerate(questions):
            previous = replies[k] if replies else None
            params = list(zip(t[k], p[k], strict=True))
            requests += round_requests(q, params, previous, draws[k], seed, int(episodes[k]), r)
        answers = answer_all(answerer, requests)
        replies = [answers[k * n : (k + 1) * n] for k in range(b)]
        if infos is not None:
            for k, row in enumerate(replies):
                infos[k].extend(a.info for a in row)
        values = np.array([[math.nan if a.value is None else float(a.value) for a in row] for row in replies])
        prompt += np.array([sum(a.prompt_tokens for a in row) for row in replies], dtype=np.int64)
        completion += np.array([sum(a.completion_tokens for a in row) for row in replies], dtype=np.int64)
        failed += np.array([sum(a.failed for a in row) for row in replies], dtype=np.int64)
        estimated += np.array(
            [sum(bool(a.info.get("usage_estimated")) for a in row) for row in replies], dtype=np.int64
        )
    assert values is not None
    committed = rules.majority(values) if coordinator == "majority" else np.zeros(b, np.int64)
    gold = np.array([float(q.answer) for q in questions])
    terms = rules.reward_terms(values, committed, gold)
    index = np.where(np.isnan(values), -1, 0)
    return engine.Outcome(
        index,
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
        failed,
        estimated,
    )


# ---------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------
def _summary(out: engine.Outcome) -> dict[str, float | None]:
    """A method's metrics over its questions, those with a failed request left out (null: no question left)."""
    keep = np.ones(len(out.ts), bool) if out.failed is None else out.failed == 0

    def mean(x: np.ndarray) -> float | None:
        return float(x[keep].mean()) if keep.any() else None

    return {
        "accuracy": mean(out.ts),
        "reward": mean(out.reward),
        "alignment": mean(out.al),
        "contribution": mean(out.cc),
        "tokens": mean(out.tokens),
        "temperature": mean(out.temperatures),
        "penalty": mean(out.penalties),
        "no_answer": mean(np.isnan(out.values)),  # the model's replies without a number
        # questions left out (a request failed after the retries), and answers whose tokens were estimated
        # because the endpoint reported no usage (per question kept)
        "failed_questions": int((~keep).sum()),
        "estimated_tokens": mean(out.estimated) if out.estimated is not None else 0.0,
    }


def _tuned(config: BeliefCoordinationConfig, pool: engine.Batch) -> int:
    """The grid point whose fixed use scores best on ``pool`` (the training questions)."""
    n = config.n_executors
    rewards = [
        engine.play(pool, config, _grid_chooser(config, np.full((len(pool), n), g))).reward.mean()
        for g in range(config.grid_size)
    ]
    return int(np.argmax(rewards))


def best_multi(config: BeliefCoordinationConfig, pool: engine.Batch) -> str:
    """The multi-LLM comparator of the +11.2% claim: of :data:`MULTI`, the most accurate on ``pool`` (the
    training questions, held out from the evaluation; ties: the first listed)."""
    accuracy = {
        "fixed": engine.play(pool, config, _fixed(*BASE)).ts.mean(),
        "schedule": engine.play(pool, config, _schedule(config.n_executors)).ts.mean(),
        "debate": engine.play(pool, replace(config, rounds=DEBATE_ROUNDS), _fixed(*BASE)).ts.mean(),
    }
    return max(MULTI, key=lambda m: float(accuracy[m]))


def _deviation_gains(
    per_g: np.ndarray, base: np.ndarray, difficulty: np.ndarray, usable: np.ndarray, on: np.ndarray
) -> tuple[np.ndarray, dict[str, int]]:
    """One executor's deviation chosen on the questions ``on`` (a grid point per difficulty level), and its
    gain on every usable question. ``per_g`` (G, B): the reward with the executor at grid point g. At a level
    none of ``on`` has, there is nothing to choose with: the executor keeps its own choice there (gain 0)."""
    gain = np.zeros(len(base))
    choice: dict[str, int] = {}
    for level in np.unique(difficulty[usable]):
        at = (difficulty == level) & usable
        if not (at & on).any():
            continue
        g = int(np.argmax([per_g[g, at & on].mean() for g in range(len(per_g))]))
        gain[at] = per_g[g, at] - base[at]
        choice[f"{level:.3f}"] = g
    return gain, choice


def equilibrium_gaps(
    config: BeliefCoordinationConfig,
    actions: np.ndarray,
    difficulty: np.ndarray,
    play_actions: Callable[[np.ndarray], np.ndarray],
) -> dict[str, Any]:
    """F2: each executor's best unilateral deviation over the (T, p) grid, its gain, and ε (module docstring).

    ``actions`` (B, N): the profile's grid indices; ``play_actions(profiles) -> reward (M·B,)`` plays M
    profiles stacked (M·B, N), each on the same held-out questions (common random numbers); a NaN reward (a
    failed request) leaves its question out of F2. The usable questions are split alternately into two
    halves; each half chooses (each executor's deviation, and the executor gaining most) for the other.
    """
    b, n = actions.shape
    g_count = config.grid_size
    # every deviation at once (one batch: an LLM answerer has them all in flight together)
    profiles = np.repeat(actions[None], 1 + n * g_count, axis=0)
    for i in range(n):
        profiles[1 + i * g_count : 1 + (i + 1) * g_count, :, i] = np.arange(g_count)[:, None]
    rewards = play_actions(profiles.reshape(-1, n)).reshape(1 + n * g_count, b)
    usable = np.isfinite(rewards).all(axis=0)
    base = rewards[0]
    per_g = rewards[1:].reshape(n, g_count, b)
    order = np.flatnonzero(usable)
    halves = [np.isin(np.arange(b), order[h::2]) for h in (0, 1)]
    if not halves[1].any():  # fewer than two usable questions: no half to measure on
        return {
            "questions": int(usable.sum()),
            "gain": [None] * n,
            "gain_in_sample": [None] * n,
            "epsilon": None,
            "largest_gain": None,
            "deviations": [{}] * n,
            "reward": float(base[usable].mean()) if usable.any() else None,
        }
    held = np.zeros((2, n, b))  # held[h, i]: executor i's gains on half 1-h, its deviation chosen on half h
    tuning = np.zeros((2, n))  # the gain each half chose with, on itself
    in_sample, best = [], []
    for i in range(n):
        for h in (0, 1):
            gain, choice = _deviation_gains(per_g[i], base, difficulty, usable, halves[h])
            held[h, i], tuning[h, i] = gain, gain[halves[h]].mean()
            if h == 0:
                best.append(choice)
        all_gain, _ = _deviation_gains(per_g[i], base, difficulty, usable, usable)
        in_sample.append(float(all_gain[usable].mean()))
    # executor i's cross-fitted gain: on each half, its deviation chosen on the other
    gains = [float((held[0, i][halves[1]].sum() + held[1, i][halves[0]].sum()) / usable.sum()) for i in range(n)]
    # ε: on each half, the gain of the executor (and deviation) the other half found best
    chosen = [int(np.argmax(tuning[h])) for h in (0, 1)]
    epsilon = float((held[0, chosen[0]][halves[1]].sum() + held[1, chosen[1]][halves[0]].sum()) / usable.sum())
    return {
        "questions": int(usable.sum()),
        "gain": gains,
        "gain_in_sample": in_sample,
        "epsilon": epsilon,
        "largest_gain": max(gains),
        "deviations": best,
        "reward": float(base[usable].mean()),
    }


def _first_error(infos: Sequence[Mapping[str, Any]]) -> str:
    return next((str(i.get("error")) for i in infos if i.get("failed")), "")


def llm_account(infos: Sequence[Mapping[str, Any]], failed_episodes: int) -> dict[str, Any]:
    """What a method's answers cost, in the layout of the runner's ``llm_summary`` (the executors' role):
    attributed tokens (the same in a replay), and under ``transport`` what was done to get them."""
    transport = [i.get("transport", {}) for i in infos]
    return {
        "failed_episodes": failed_episodes,
        "executor": {
            "calls": sum(not i.get("failed") for i in infos),
            "prompt_tokens": sum(int(i.get("prompt_tokens", 0)) for i in infos),
            "completion_tokens": sum(int(i.get("completion_tokens", 0)) for i in infos),
            "usage_estimated": sum(bool(i.get("usage_estimated")) for i in infos),
            "fallbacks": 0,  # (the answerer has no fallback, re-ask or gate: a reply without a number is no answer)
            "reasks": 0,
            "gated": 0,
            "transport": {
                "requests": sum(t.get("requests", 0) for t in transport),
                "retries": sum(t.get("retries", 0) for t in transport),
                "cache_hits": sum(t.get("cached", 0) for t in transport),
                "billed_prompt_tokens": sum(t.get("billed_prompt_tokens", 0) for t in transport),
                "billed_completion_tokens": sum(t.get("billed_completion_tokens", 0) for t in transport),
                "errors": sum(len(t.get("errors", [])) for t in transport),
            },
        },
    }


def run_one(instrument: str, n: int, seed: int, opts: Options) -> dict[str, Any]:
    """One run (module docstring): its JSON-ready record."""
    import torch

    from eq_env.baselines.belief_coordination.econ import ECON, ECONHyper, train_econ

    torch.set_num_threads(1)  # 2 cores, several workers: more threads only contend
    started = time.perf_counter()
    config = _config(n, instrument)
    hyper = replace(ECONHyper(), steps=opts.train_steps)
    econ, curve = train_econ(config, hyper, seed=seed, progress=False)
    frozen = ECON.untrained(config, hyper, seed=seed)
    train_seconds = time.perf_counter() - started
    pool = engine.training_batch(config, np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(43,))), 1000)
    tuned = _tuned(config, pool)
    multi = best_multi(config, pool)

    questions = None if opts.question_set is None else list(opts.question_set)
    # (a file shorter than --questions is played once, not repeated)
    episodes = list(range(opts.questions if questions is None else min(opts.questions, len(questions))))
    batch = engine.episodes_batch(config, seed, episodes, questions)
    single = replace(config, n_executors=1)
    debate = replace(config, rounds=DEBATE_ROUNDS)
    answerer = _answerer(opts, config)
    infos: dict[str, list[list[dict[str, Any]]]] = {}

    def evaluate(
        method: str, cfg: BeliefCoordinationConfig, choose: engine.Chooser, coordinator: str = "majority"
    ) -> engine.Outcome:
        if answerer is None:
            return engine.play(batch, cfg, choose, coordinator=coordinator)
        infos[method] = [[] for _ in episodes]
        return play_with(batch.questions, episodes, seed, cfg, choose, answerer, coordinator, infos[method])

    outcomes = {
        "single": evaluate("single", single, _fixed(*BASE), "first"),
        "fixed": evaluate("fixed", config, _fixed(*BASE)),
        "random": evaluate("random", config, _random(config, seed)),
        "schedule": evaluate("schedule", config, _schedule(n)),
        "tuned": evaluate("tuned", config, _grid_chooser(config, np.full((len(batch), n), tuned))),
        "debate": evaluate("debate", debate, _fixed(*BASE)),
        "econ": evaluate("econ", config, econ.chooser()),
        "frozen": evaluate("frozen", config, frozen.chooser()),
    }
    features = engine.executor_features(batch, config, 0, None)
    actions = econ.act_batch(features)
    f2_infos: list[list[dict[str, Any]]] = []  # per F2 question, every answer's info (all profiles)
    f2_failed: list[int] = []  # per F2 question, its failed requests

    def stacked(sub: engine.Batch, eps: Sequence[int]) -> Callable[[np.ndarray], np.ndarray]:
        def play_profiles(profiles: np.ndarray) -> np.ndarray:
            m = len(profiles) // len(sub)
            tiled = sub.subset(np.tile(np.arange(len(sub)), m))
            if answerer is None:
                return engine.play(tiled, config, _grid_chooser(config, profiles)).reward
            played: list[list[dict[str, Any]]] = [[] for _ in range(len(tiled))]
            out = play_with(
                tiled.questions, list(eps) * m, seed, config, _grid_chooser(config, profiles), answerer, infos=played
            )
            assert out.failed is not None
            f2_infos.extend([i for j in range(m) for i in played[j * len(sub) + q]] for q in range(len(sub)))
            f2_failed.extend(int(x) for x in out.failed.reshape(m, len(sub)).sum(axis=0))
            return np.where(out.failed > 0, np.nan, out.reward)  # a failed request: the question is left out

        return play_profiles

    if answerer is None:
        f2_episodes = episodes
        f2 = equilibrium_gaps(config, actions, batch.difficulty, stacked(batch, episodes))
    else:
        k = min(opts.equilibrium_questions, len(batch))
        f2_episodes = episodes[:k]
        sub = batch.subset(np.arange(k))
        f2 = equilibrium_gaps(config, actions[:k], sub.difficulty, stacked(sub, f2_episodes))
    failed = _failed_episodes(outcomes, infos, episodes, batch.questions)
    failed += [
        {
            "method": "f2",
            "episode": int(e),
            "question": batch.questions[q].qid,
            "failed_requests": f2_failed[q],
            "error": _first_error(f2_infos[q]),
        }
        for q, e in enumerate(f2_episodes)
        if f2_failed and f2_failed[q] > 0
    ]
    t_grid, p_grid = config.grid_point(actions)
    easy, hard = batch.difficulty <= 0.25, batch.difficulty >= 0.75
    record: dict[str, Any] = {
        "key": run_key(instrument, n, seed, opts),
        "instrument": instrument,
        "n": n,
        "seed": seed,
        "questions": len(batch),
        "episodes": len(METHODS) * len(batch) + len(f2_episodes),
        "answerer": opts.answerer if opts.answerer == "simulated" else f"llm:{opts.model}",
        "multi": multi,
        "methods": {m: _summary(o) for m, o in outcomes.items()},
        "f2": f2,
        "failed": failed,
        "econ": {
            "train_seconds": round(train_seconds, 3),
            "curve": curve,
            "tuned_grid_point": [float(x) for x in config.grid_point(tuned)],
            "temperature_easy": float(t_grid[easy].mean()) if easy.any() else None,  # (JSON has no NaN)
            "temperature_hard": float(t_grid[hard].mean()) if hard.any() else None,
            "penalty_mean": float(p_grid.mean()),
        },
    }
    if answerer is not None:
        lost = {m: sum(1 for f in failed if f["method"] == m) for m in (*METHODS, "f2")}
        record["llm"] = {m: llm_account([i for q in infos[m] for i in q], lost[m]) for m in METHODS}
        record["llm"]["f2"] = llm_account([i for q in f2_infos for i in q], lost["f2"])
    return record


def _failed_episodes(
    outcomes: Mapping[str, engine.Outcome],
    infos: Mapping[str, list[list[dict[str, Any]]]],
    episodes: Sequence[int],
    questions: Sequence[Question],
) -> list[dict[str, Any]]:
    """Every (method, question) with a request that failed after the retries: what it was and why."""
    failed = []
    for method, out in outcomes.items():
        if out.failed is None:
            continue
        for k in map(int, np.flatnonzero(out.failed)):
            failed.append(
                {
                    "method": method,
                    "episode": int(episodes[k]),
                    "question": questions[k].qid,
                    "failed_requests": int(out.failed[k]),
                    "error": _first_error(infos[method][k]),
                }
            )
    return failed


def _answerer(opts: Options, config: BeliefCoordinationConfig) -> Any:
    if opts.answerer == "simulated":
        return None
    from eq_env.agents.belief_coordination.answerer import LLMAnswerer

    return LLMAnswerer(
        opts.model, opts.base_url, penalty=opts.penalty, max_tokens=opts.max_tokens, concurrency=opts.concurrency
    )


# ---------------------------------------------------------------------------
# Statistics, tables, figure, summary
# ---------------------------------------------------------------------------
Record = Mapping[str, Any]


def _fmt(mean: float, half: float, digits: int = 3, scale: float = 1.0) -> str:
    if math.isnan(mean):
        return "—"
    if math.isnan(half):
        return f"{mean * scale:.{digits}f}"
    return f"{mean * scale:.{digits}f} ± {half * scale:.{digits}f}"


def _show(est: Estimate, digits: int = 3, scale: float = 1.0) -> str:
    return _fmt(est.mean, est.half, digits, scale)


def _runs(records: Sequence[Record], instrument: str, n: int) -> list[Record]:
    return sorted([r for r in records if r["instrument"] == instrument and r["n"] == n], key=lambda r: r["seed"])


def _metric(method: str, metric: str) -> Callable[[Record], float]:
    return lambda r: from_json_number(r["methods"][method][metric])


def per_seed(runs: Sequence[Record], value: Callable[[Record], float]) -> Estimate:
    """The :class:`~eq_env.studies.belief_coordination.verdicts.Estimate` of ``value(run)`` over the runs' seeds."""
    return estimate({int(r["seed"]): value(r) for r in runs})


def paired(runs: Sequence[Record], a: Callable[[Record], float], b: Callable[[Record], float]) -> Estimate:
    """a(run) − b(run) over seeds (common random numbers: the same questions and draws on each seed)."""
    return per_seed(runs, lambda r: a(r) - b(r))


def _epsilon(r: Record) -> float:
    return from_json_number(r["f2"].get("epsilon"))


def _token_saving(r: Record) -> float:
    econ, debate = _metric("econ", "tokens")(r), _metric("debate", "tokens")(r)
    return 1 - econ / debate if debate > 0 else math.nan  # (NaN for NaN: a method with no question left)


def failed_count(runs: Sequence[Record]) -> int:
    """Failed episodes over ``runs`` (their ``failed`` lists)."""
    return sum(len(r.get("failed") or ()) for r in runs)


def method_rows(records: Sequence[Record]) -> list[dict[str, Any]]:
    rows = []
    for instrument in sorted({r["instrument"] for r in records}, key=lambda s: s == "null"):
        for n in sorted({r["n"] for r in records if r["instrument"] == instrument}):
            runs = _runs(records, instrument, n)
            for m in METHODS:
                row: dict[str, Any] = {"instrument": instrument, "n": n, "method": m}
                ests = {metric: per_seed(runs, _metric(m, metric)) for metric in METRIC_NAMES}
                row["seeds"] = len(ests["accuracy"].seeds)
                row["left_out"] = ests["accuracy"].dropped
                for metric, est in ests.items():
                    row[metric], row[f"{metric}_ci"] = est.mean, est.half
                rows.append(row)
    return rows


def falsifier_rows(records: Sequence[Record]) -> list[list[str]]:
    rows = []
    for instrument in sorted({r["instrument"] for r in records}, key=lambda s: s == "null"):
        for n in sorted({r["n"] for r in records if r["instrument"] == instrument}):
            runs = _runs(records, instrument, n)
            cells = (
                paired(runs, _metric("econ", "accuracy"), _metric("frozen", "accuracy")),
                paired(runs, _metric("econ", "reward"), _metric("frozen", "reward")),
                per_seed(runs, _epsilon),
                paired(runs, _metric("econ", "accuracy"), _metric("schedule", "accuracy")),
                paired(runs, _metric("econ", "reward"), _metric("schedule", "reward")),
            )
            shown = [_show(e) if k != 2 else _show(e, 4) for k, e in enumerate(cells)]
            rows.append(
                [instrument, str(n), str(len(runs)), *(s + left_out(e) for s, e in zip(shown, cells, strict=True))]
            )
    return rows


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _span(values: Iterable[int]) -> str:
    """Distinct integers, runs of three or more shortened: "0–4", "0, 1", "1, 3, 7–9" (a count alone does not
    say which seeds were run)."""
    groups: list[list[int]] = []
    for v in sorted(set(values)):
        if groups and groups[-1][-1] == v - 1:
            groups[-1].append(v)
        else:
            groups.append([v])
    parts = [f"{g[0]}–{g[-1]}" if len(g) > 2 else ", ".join(map(str, g)) for g in groups]
    return ", ".join(parts) or "none"


def _seeds(runs: Sequence[Record]) -> str:
    """The runs' seeds, named: "5 seeds (0–4)"."""
    seeds = {int(r["seed"]) for r in runs}
    return f"{_plural(len(seeds), 'seed')} ({_span(seeds)})"


def _count(values: Sequence[int]) -> str:
    """A count the runs share ("2000"), or their range ("38–40": some questions failed or a file was short)."""
    low, high = min(values, default=0), max(values, default=0)
    return str(low) if low == high else f"{low}–{high}"


# what every score of ECON (and of its frozen control) measures: the trained policy's most likely choice
GREEDY = "ECON and frozen play greedily (each executor's most likely grid point, its argmax Q_i)"


def _scope(records: Sequence[Record]) -> str:
    """The line above a table: its seeds, its questions per run and how the learned policy acted."""
    return (
        f"{_seeds(records)}, each run on {_count([int(r['questions']) for r in records])} held-out questions "
        f"drawn from its seed; {GREEDY}."
    )


def _incomplete_note(records: Sequence[Record]) -> str:
    """The paragraph every table and the summary carry when some episodes failed (empty when none did)."""
    lost = failed_count(records)
    if not lost:
        return ""
    runs = sum(1 for r in records if r.get("failed"))
    total = sum(int(r.get("episodes", 0)) for r in records)
    return (
        f"**Incomplete: {lost} of {total} episodes failed** in {_plural(runs, 'run')} (no answer from the "
        "endpoint after the retries; `results.jsonl` lists them under 'failed'). They are left out of the "
        "metrics, and no claim measured on those runs gets a verdict. Run the same command again to ask them "
        "again."
    )


@dataclass(frozen=True)
class Claim:
    """One claim the summary tests: its measurement, the runs it was measured on, the words of its verdict."""

    name: str
    est: Estimate
    runs: tuple[Record, ...]
    words: tuple[str, str] = ("higher", "lower")


def verdicts(claims: Sequence[Claim]) -> dict[str, str]:
    """Each claim's verdict: Holm's correction over every claim of the run (those measured on incomplete data
    count in the family too, but get no verdict)."""
    adjusted = holm([c.est.p for c in claims])
    out = {}
    for c, p in zip(claims, adjusted, strict=True):
        lost = failed_count(c.runs)
        out[c.name] = (
            f"no verdict: {lost} of its episodes failed (incomplete data)" if lost else verdict(c.est, p, c.words)
        )
    return out


def summary(records: Sequence[Record], opts: Options) -> str:
    """The claims, one by one, against our measurements."""
    answerer = "the simulated answerer" if opts.answerer == "simulated" else f"the model {opts.model!r}"
    main = "llm" if any(r["instrument"] == "llm" for r in records) else "sensitive"
    sizes = sorted({r["n"] for r in records if r["instrument"] == main})
    n0 = 3 if 3 in sizes else sizes[0]
    runs = _runs(records, main, n0)
    acc = "accuracy"
    claims = [
        Claim("single", paired(runs, _metric("econ", acc), _metric("single", acc)), tuple(runs)),
        Claim("multi", paired(runs, _metric("econ", acc), lambda r: _metric(r["multi"], acc)(r)), tuple(runs)),
        Claim("tokens", per_seed(runs, _token_saving), tuple(runs), ("fewer", "more")),
    ]
    nine = _runs(records, main, 9) if 9 in sizes else []
    if nine:
        claims.append(Claim("nine", paired(nine, _metric("econ", acc), _metric("single", acc)), tuple(nine)))
    claims += [
        Claim("F1", paired(runs, _metric("econ", acc), _metric("frozen", acc)), tuple(runs)),
        Claim("F3", paired(runs, _metric("econ", acc), _metric("schedule", acc)), tuple(runs)),
        Claim("tuned", paired(runs, _metric("econ", "reward"), _metric("tuned", "reward")), tuple(runs)),
    ]
    said = verdicts(claims)
    c = {claim.name: claim.est for claim in claims}
    lines = [f"# Belief coordination: ECON's claims, measured ({answerer})", ""]
    if note := _incomplete_note(records):
        lines += [note, ""]
    lines += [
        f"{_seeds(runs)}, {records[0]['questions']} held-out questions per run (drawn from its seed), N = {n0} "
        f"unless said; {GREEDY}; ± is the half-width of a 95% t-interval over seeds of per-seed paired differences "
        f"(percentage points of accuracy). Verdicts: paired t-tests over seeds, Holm–Bonferroni-corrected "
        f"over the {len(claims)} claims below (family-wise error 5%).",
        "",
    ]
    chosen = sorted({r["multi"] for r in runs})
    lines.append("| claim (paper) | ours | verdict |")
    lines.append("|---|---|---|")
    lines.append(
        f"| +10.9% over single-agent baselines | {_show(c['single'], 1, 100)} points (ECON − single)"
        f"{left_out(c['single'])} | {said['single']} |"
    )
    lines.append(
        f"| +11.2% over multi-LLM methods | {_show(c['multi'], 1, 100)} points (ECON − "
        f"{' / '.join(chosen)}: the most accurate of fixed-T majority, schedule majority and 3-round "
        f"debate on each seed's training questions){left_out(c['multi'])} | {said['multi']} |"
    )
    lines.append(
        f"| 21.4% fewer tokens than a three-round debate | {_show(c['tokens'], 1, 100)}% fewer"
        f"{left_out(c['tokens'])} | {said['tokens']} |"
    )
    if nine:
        three = {r["seed"]: r for r in runs}
        c4b = per_seed(
            [r for r in nine if r["seed"] in three],
            lambda r: _metric("econ", acc)(r) - _metric("econ", acc)(three[r["seed"]]),
        )
        lines.append(
            f"| +18.1% when scaled to nine executors | {_show(c['nine'], 1, 100)} points (ECON with 9 − "
            f"single){left_out(c['nine'])}; {_show(c4b, 1, 100)} points (ECON with 9 − ECON with {n0}) | "
            f"{said['nine']} |"
        )
    lines += ["", "## The falsifiers", ""]
    eps = per_seed(runs, _epsilon)
    largest = per_seed(runs, lambda r: from_json_number(r["f2"].get("largest_gain")))
    lines.append(
        f"* **F1** (trained vs the same networks frozen at random initialisation): {_show(c['F1'], 1, 100)} "
        f"points of accuracy{left_out(c['F1'])} — {said['F1']}."
    )
    if math.isnan(eps.mean):
        lines.append(
            f"* **F2** (equilibrium, checked directly): not measured{left_out(eps)}: a run needs two "
            "questions with no failed request, one to choose a deviation on and one to measure it."
        )
    else:
        lines.append(
            f"* **F2** (equilibrium, checked directly): the best unilateral change of one executor's own "
            f"(T, p) — a point of the (T, p) grid per difficulty — chosen on half the questions, gains "
            f"{_show(eps, 4)} reward on the other half (each half in turn){left_out(eps)}. Chosen and "
            "measured apart, this is unbiased for the chosen deviation's gain: over the grid the learned "
            "profile is an ε-equilibrium only for ε above it (deviations off the grid may gain more). The "
            f"largest of the executors' held-out gains, biased upwards by the maximum, is "
            f"{_show(largest, 4)}."
        )
    if not math.isnan(eps.mean) and eps.mean <= 0:
        lines.append("  (0 or less: no deviation chosen on half the questions did better on the other half.)")
    learned = [r.get("econ", {}) for r in runs]
    easy = [e["temperature_easy"] for e in learned if e.get("temperature_easy") is not None]
    hard = [e["temperature_hard"] for e in learned if e.get("temperature_hard") is not None]
    if easy and hard:
        lines.append(
            f"* What ECON learned: mean temperature {np.mean(easy):.2f} on easy questions (difficulty "
            f"≤ 0.25) and {np.mean(hard):.2f} on hard ones (≥ 0.75); mean penalty "
            f"{np.mean([e.get('penalty_mean', math.nan) for e in learned]):.2f}."
        )
    lines.append(
        f"* **F3** (vs majority vote over a fixed temperature schedule, same coordinator): "
        f"{_show(c['F3'], 1, 100)} points{left_out(c['F3'])} — {said['F3']}."
    )
    lines.append(
        f"* Against the best fixed (T, p) tuned on the training questions: {_show(c['tuned'], 4)} reward"
        f"{left_out(c['tuned'])} — {said['tuned']}."
    )
    null = _runs(records, "null", n0) or _runs(records, "null", min({r["n"] for r in records}))
    if null:
        g1 = paired(null, _metric("econ", "reward"), _metric("frozen", "reward"))
        g3 = paired(null, _metric("econ", "reward"), _metric("fixed", "reward"))
        lines += [
            "",
            "## The null instrument",
            "",
            f"On the answerer that ignores T and p, ECON − frozen = {_show(g1, 4)} reward and ECON − fixed = "
            f"{_show(g3, 4)}: the instrument cannot report a gain it cannot produce.",
        ]
    if opts.answerer != "simulated":
        lines += [
            "",
            "ECON, the tuned point and the multi-LLM comparator were chosen on the simulated answerer and evaluated "
            "on the model (a transfer): training on the model itself would take hundreds of thousands of requests. "
            "What the requests cost is in `llm_costs.csv`.",
        ]
    lines.append("")
    return "\n".join(lines)


def _notes(records: Sequence[Record], rows: Sequence[Mapping[str, Any]]) -> str:
    """What a table's reader must know besides its numbers: failed episodes, seeds left out."""
    notes = [note] if (note := _incomplete_note(records)) else []
    for r in rows:
        if r.get("left_out"):
            notes.append(
                f"{r['instrument']} N={r['n']} {r['method']}: seeds {', '.join(map(str, r['left_out']))} "
                "left out (every question of theirs failed)."
            )
    return "".join(f"\n{n}\n" for n in notes)


def write_outputs(records: Sequence[Record], out: Path, opts: Options) -> list[str]:
    """The tables, the figure, the summary and (an LLM answerer's) ``llm_costs.csv``; the files written."""
    rows = method_rows(records)
    columns = ["instrument", "n", "method", "seeds"] + [c for m in METRIC_NAMES for c in (m, f"{m}_ci")]
    write_csv(out / "methods.csv", rows, columns)
    table = markdown_table(
        ["answerer", "N", "method", "accuracy", "reward", "tokens / question", "mean T", "mean p"],
        [
            [
                r["instrument"],
                r["n"],
                r["method"],
                _fmt(r["accuracy"], r["accuracy_ci"]),
                _fmt(r["reward"], r["reward_ci"]),
                _fmt(r["tokens"], r["tokens_ci"], 0),
                _fmt(r["temperature"], r["temperature_ci"], 2),
                _fmt(r["penalty"], r["penalty_ci"], 2),
            ]
            for r in rows
        ],
    )
    (out / "methods.md").write_text(_scope(records) + "\n\n" + table + "\n" + _notes(records, rows))
    falsifiers = markdown_table(
        [
            "answerer",
            "N",
            "seeds",
            "F1 accuracy (econ − frozen)",
            "F1 reward",
            "F2 ε (held-out gain of the best deviation)",
            "F3 accuracy (econ − schedule)",
            "F3 reward",
        ],
        falsifier_rows(records),
    )
    said = "\nVerdicts (in summary.md) are Holm–Bonferroni-corrected over the claims of the run.\n"
    f2 = [int(r["f2"]["questions"]) for r in records if r["f2"].get("questions") is not None]
    f2_on = f" F2 on {_count(f2)} of them (those with no failed request), in two halves." if f2 else ""
    scope = _scope(records) + f2_on
    (out / "falsifiers.md").write_text(scope + "\n\n" + falsifiers + "\n" + _notes(records, []) + said)
    (out / "summary.md").write_text(summary(records, opts))
    who = "simulated answerer" if opts.answerer == "simulated" else f"model {opts.model}"
    _figure(rows, out / "belief_coordination.png", who)
    files = ["results.jsonl", "methods.md", "methods.csv", "falsifiers.md", "summary.md", "belief_coordination.png"]
    costs = llm_rows(records)
    if costs:
        from eq_env.core.experiments import llm_columns

        write_csv(out / "llm_costs.csv", costs, llm_columns("belief-coordination"))
        files.append("llm_costs.csv")
    return files


@dataclass(frozen=True)
class _CostGroup:
    """What :func:`eq_env.core.experiments.llm_report` reads of a condition: its key and its policies per role
    (here a method's executors and coordinator)."""

    key: str
    policies: tuple[tuple[str, str], ...]


_PLAYED_BY = {  # (executors, coordinator) of each method's row in llm_costs.csv
    "single": (f"fixed:temperature={BASE[0]},penalty={BASE[1]} (one executor)", "first"),
    "fixed": (f"fixed:temperature={BASE[0]},penalty={BASE[1]}", "majority"),
    "random": ("random grid points", "majority"),
    "schedule": ("schedule", "majority"),
    "tuned": ("the tuned fixed grid point", "majority"),
    "debate": (f"fixed:temperature={BASE[0]},penalty={BASE[1]}, {DEBATE_ROUNDS} rounds of debate", "majority"),
    "econ": ("econ (trained)", "majority"),
    "frozen": ("econ (frozen at initialisation)", "majority"),
    "f2": ("F2's unilateral deviations", "majority"),
}


def llm_rows(records: Sequence[Record], prices: tuple[float, float] | None = None) -> list[dict[str, Any]]:
    """``llm_costs.csv``'s rows: per instrument, N and method, over seeds, what the requests cost
    (:func:`~eq_env.core.experiments.llm_report`, from each run's ``llm``; dollars at ``prices``, default the
    ``--price-*`` flags)."""
    from eq_env.core.experiments import llm_report

    groups: dict[str, _CostGroup] = {}
    parts = []
    for r in records:
        for method, part in (r.get("llm") or {}).items():
            name = f"{r['instrument']}/n{r['n']}/{method}"
            executors, coordinator = _PLAYED_BY[method]
            groups.setdefault(name, _CostGroup(name, (("executor", executors), ("coordinator", coordinator))))
            questions = int(r["f2"].get("questions") or 0) if method == "f2" else int(r["questions"])
            if method == "f2":  # (F2's questions: those used, plus those a failure left out)
                questions += int(part.get("failed_episodes", 0))
            parts.append({"key": f"{r['key']}/{method}", "condition": name, "episodes": questions, "llm": part})
    if not parts:
        return []
    return llm_report(cast("Sequence[Condition]", list(groups.values())), parts, prices)


def _figure(rows: Sequence[Mapping[str, Any]], path: Path, who: str) -> None:
    sensitive = [r for r in rows if r["instrument"] != "null"]
    sizes = sorted({r["n"] for r in sensitive})
    panels = []
    for metric, label in (("accuracy", "accuracy"), ("tokens", "tokens per question")):
        series = []
        for m in METHODS:
            pts = [next(r for r in sensitive if r["n"] == n and r["method"] == m) for n in sizes]
            series.append(
                {
                    "label": m,
                    "x": sizes,
                    "y": [p[metric] for p in pts],
                    "yerr": [0 if math.isnan(p[f"{metric}_ci"]) else p[f"{metric}_ci"] for p in pts],
                }
            )
        panels.append({"ylabel": label, "series": series})
    plot_lines(path, panels, xlabel="executors N", title=f"Belief coordination ({who}): methods vs N")


# ---------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------
def plan(opts: Options) -> list[tuple[str, int, int]]:
    """Every (instrument, N, seed) run of the command, in order."""
    main = "sensitive" if opts.answerer == "simulated" else "llm"  # (the model is the instrument; no null one)
    runs = [(main, n, s) for n in opts.executors for s in opts.seeds]
    if opts.null:
        runs += [("null", opts.executors[0], s) for s in opts.seeds]
    return runs


def _carry_bill(record: dict[str, Any], earlier: Record | None) -> dict[str, Any]:
    """``record`` with what an earlier attempt of the same run (with failed episodes) did and paid for added to
    its ``transport`` counts: a run played again bills every attempt."""
    if not earlier or not record.get("llm") or not earlier.get("llm"):
        return record
    for method, part in record["llm"].items():
        before = earlier["llm"].get(method, {}).get("executor", {}).get("transport", {})
        transport = part["executor"]["transport"]
        for k in transport:
            transport[k] += before.get(k, 0)
    return record


def run_all(
    opts: Options, out: Path, progress: bool | None = None, executor: Executor | None = None
) -> list[dict[str, Any]]:
    """Every run not yet in ``out/results.jsonl`` — or recorded with failed episodes — in parallel, each written
    when it finishes; every record (the last of each run).

    Runs go to ``executor`` (default: ``opts.jobs`` local worker processes; a
    :class:`~eq_env.core.executors.RayExecutor` for a Ray cluster: the records are the same bytes, and this
    process alone writes them). Runs with an LLM answerer stay in this process, one by one, on every backend
    (their requests are concurrent already, and the answer cache is this process's). A run recorded with
    failed episodes is played again (its answers from the cache: only what failed is asked again), and its new
    record replaces the old."""
    store = ResultsStore(out / "results.jsonl")
    with store.exclusive():
        store.compact()
        done = {r["key"]: r for r in store.records(check_record)}
        todo = [r for r in plan(opts) if (key := run_key(*r, opts)) not in done or done[key].get("failed")]
        bar = tqdm(
            total=len(plan(opts)),
            initial=len(plan(opts)) - len(todo),
            unit="run",
            desc="belief coordination",
            disable=None if progress is None else not progress,
        )
        with bar:
            executor = executor or LocalExecutor(opts.jobs)
            if not executor.runs_inline(len(todo)) and opts.answerer == "simulated":
                calls: list[Call] = [((*r, opts), {}) for r in todo]
                names = [f"{i} N={n} seed={seed}" for i, n, seed in todo]
                with contextlib.closing(executor.map_unordered(run_one, calls, names)) as finished:
                    for record in finished:
                        store.append(record)
                        bar.update()
            else:
                for r in todo:
                    store.append(_carry_bill(run_one(*r, opts), done.get(run_key(*r, opts))))
                    bar.update()
        store.compact()  # runs played again replaced their records
        done = {r["key"]: r for r in store.records(check_record)}
    return [done[run_key(*r, opts)] for r in plan(opts)]


def check_record(record: Mapping[str, Any]) -> None:
    """A ValueError saying what a results line lacks (the store names the file and line). A record of another
    layout (its key does not end with ``/r2``) is no run of this command's and is left alone."""
    if not str(record.get("key", "")).endswith(f"/{RECORD}"):
        return
    problems = []
    if record.get("instrument") not in ("sensitive", "null", "llm"):
        problems.append("'instrument' must be sensitive, null or llm")
    for field_ in ("n", "seed", "questions", "episodes"):
        if isinstance(record.get(field_), bool) or not isinstance(record.get(field_), int):
            problems.append(f"{field_!r} must be an integer")
    methods = record.get("methods")
    if not isinstance(methods, dict) or any(
        not isinstance(methods.get(m), dict)
        or any(
            isinstance(methods[m].get(k), bool)
            or not isinstance(methods[m].get(k, ""), (int, float, type(None)))
            or k not in methods[m]
            for k in METRIC_NAMES
        )
        for m in METHODS
    ):
        problems.append(f"'methods' must give {', '.join(METRIC_NAMES)} for each of {', '.join(METHODS)}")
    if record.get("multi") not in MULTI:
        problems.append(f"'multi' must be one of {', '.join(MULTI)}")
    f2 = record.get("f2")
    if (
        not isinstance(f2, dict)
        or not isinstance(f2.get("epsilon", ""), (int, float, type(None)))
        or not isinstance(f2.get("gain"), list)
    ):
        problems.append("'f2' must give epsilon and gain")
    failed = record.get("failed")
    if not isinstance(failed, list) or not all(
        isinstance(f, dict) and f.get("method") in (*METHODS, "f2") for f in failed
    ):
        problems.append("'failed' must list the failed episodes, each with its method")
    if problems:
        raise ValueError(
            f"not a belief-coordination run record: {'; '.join(problems)}; remove that line to run it again"
        )


async def _check(answerer: Any) -> None:
    try:
        await answerer.check()
    finally:
        await answerer.aclose()


# the LLM flags (agents/cli.py's group) that --answerer simulated cannot use: (flag, dest)
_LLM_ONLY = (
    ("--model", "model"),
    ("--base-url", "base_url"),
    ("--api-key", "api_key"),
    ("--temperature", "temperature"),
    ("--max-tokens", "max_tokens"),
    ("--llm-seed", "llm_seed"),
    ("--max-reasks", "max_reasks"),
    ("--concurrency", "concurrency"),
    ("--cache", "cache"),
    ("--cache-dir", "cache_dir"),
    ("--max-retries", "max_retries"),
    ("--backoff", "backoff"),
    ("--timeout", "timeout"),
    ("--price-prompt", "price_prompt"),
    ("--price-completion", "price_completion"),
    ("--no-endpoint-check", "endpoint_check"),
)
# ... and those the answerer has no use for: each request's T is its executor's, its seed its sample key's
_NOT_FOR_ANSWERER = {
    "--temperature": "each executor's temperature is its method's choice",
    "--llm-seed": "each request's seed is fixed by its sample key (seed, episode, executor, round)",
    "--max-reasks": "the answerer does not re-ask: a reply without a number is no answer",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from eq_env.core.cli import add_backend_flags, add_flag_groups, int_in, list_of, out_dir
    from eq_env.core.spec import registered_envs

    parser.description = (
        (parser.description or "") + ". With --answerer llm the LLM flags below ask a model for every executor "
        "answer (--concurrency: requests in flight; --temperature, --llm-seed and --max-reasks do not apply); the "
        "command exits 3 when requests failed after the retries (running it again asks them again)."
    )
    names = [s.name for s in registered_envs()] + [s.id for s in registered_envs()]
    parser.add_argument("--env", choices=names, metavar="NAME", help="the game (belief-coordination here)")
    parser.add_argument("--out", type=out_dir, required=True, help="directory for results, tables, figure, summary")
    parser.add_argument("--seeds", type=int_in(1, 100), default=5, help="seeds 0..K-1 (default 5)")
    parser.add_argument(
        "--n-executors",
        type=list_of(int_in(1, 16), "team sizes", distinct=True),
        default=[3, 5, 9],
        dest="executors",
        help="comma-separated team sizes N (default 3,5,9)",
    )
    parser.add_argument(
        "--questions", type=int_in(2, 100_000), default=2000, help="held-out questions per run (default 2000)"
    )
    parser.add_argument(
        "--train-steps",
        type=int_in(1, 1_000_000),
        default=1500,
        help="ECON's gradient steps per run, batches of 256 (default 1500)",
    )
    parser.add_argument("--no-null", action="store_true", help="skip the null instrument")
    parser.add_argument(
        "--jobs",
        type=int_in(1, 64),
        help="worker processes (default 2); with --backend ray, the CPUs of the Ray instance started here",
    )
    add_backend_flags(parser)
    parser.add_argument(
        "--questions-file",
        type=str,
        default=None,
        help="held-out questions from a GSM8K-style JSONL file instead of generated ones: its first "
        "--questions questions, read once (a pipe or FIFO works)",
    )
    parser.add_argument(
        "--answerer",
        choices=("simulated", "llm"),
        default="simulated",
        help="the simulated answerer (offline) or a model (the LLM flags)",
    )
    parser.add_argument(
        "--penalty",
        choices=("frequency", "repetition", "none"),
        default="frequency",
        help="p as frequency_penalty = 2(p-1) (default), repetition_penalty = p, or none",
    )
    parser.add_argument(
        "--equilibrium-questions",
        type=int_in(2, 100_000),
        default=20,
        help="F2's questions with --answerer llm (default 20; N x grid requests each)",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar (default: on a terminal)",
    )
    add_flag_groups(parser, "OUT/llm_cache")
    # what "not given" is for each LLM flag (whatever its group's defaults are now)
    parser.set_defaults(llm_defaults={dest: parser.get_default(dest) for _, dest in _LLM_ONLY})


def _llm_flags_given(args: argparse.Namespace) -> list[str]:
    defaults = getattr(args, "llm_defaults", {})
    return [flag for flag, dest in _LLM_ONLY if hasattr(args, dest) and getattr(args, dest) != defaults.get(dest)]


def options_from_args(args: argparse.Namespace) -> Options:
    given = _llm_flags_given(args)
    model = ""
    if args.answerer == "simulated" and given:
        raise ValueError(
            f"{' and '.join(given)} need{'s' if len(given) == 1 else ''} --answerer llm (the "
            "simulated answerer asks nothing and records nothing)"
        )
    if args.answerer == "llm":
        useless = [flag for flag in given if flag in _NOT_FOR_ANSWERER]
        if useless:
            raise ValueError(f"{useless[0]} does not apply to --answerer llm: {_NOT_FOR_ANSWERER[useless[0]]}")
        from eq_env.core.cli import fill_spec
        from eq_env.core.policy import parse_policy_spec

        model = str(parse_policy_spec(fill_spec("llm", args))[1]["model"])  # (--model, $EQ_ENV_MODEL, gpt-4.1)
    question_set, source = None, "generated"
    if args.questions_file is not None:
        from eq_env.belief_coordination.questions import read_questions

        # read once, and only the questions a run plays (its errors name the file and line before anything runs)
        read = read_questions(args.questions_file, limit=args.questions)
        question_set, source = read.questions, file_source(Path(args.questions_file).name, read.digest)
    return Options(
        seeds=tuple(range(args.seeds)),
        executors=tuple(args.executors),
        questions=args.questions,
        train_steps=args.train_steps,
        jobs=args.jobs or 2,
        answerer=args.answerer,
        null=not args.no_null and args.answerer == "simulated",
        model=model,
        base_url=args.base_url,
        penalty=args.penalty,
        concurrency=args.concurrency,
        max_tokens=args.max_tokens if args.max_tokens is not None else MAX_TOKENS,
        equilibrium_questions=args.equilibrium_questions,
        questions_file=args.questions_file,
        question_set=question_set,
        source=source,
    )


def need_torch() -> None:
    """ECON is PyTorch: a ValueError (one line, the install command) where it is missing."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ValueError(
            "ECON needs PyTorch: pip install 'eq-env[rl]' (on a machine without a GPU, a CPU build of torch first)"
        ) from None


def _dry_run(opts: Options) -> int:
    """``--dry-run``: the runs, and what the LLM answerer would be sent first (a first-round and a debate
    request of seed 0's first question); nothing is trained or called."""
    runs = plan(opts)
    print(
        f"{_plural(len(runs), 'run')} ({', '.join(f'{i} N={n} seed={s}' for i, n, s in runs[:6])}"
        f"{', ...' if len(runs) > 6 else ''}), {opts.questions} held-out questions each"
    )
    if opts.answerer == "simulated":
        print("the simulated answerer sends nothing")
        return 0
    from eq_env.agents.belief_coordination.answerer import executor_messages

    config = _config(opts.executors[0], "llm")
    question = engine.episodes_batch(
        config, 0, [0], None if opts.question_set is None else list(opts.question_set)
    ).questions[0]
    first = AnswerRequest(question, BASE[0], BASE[1], 0, sample_key=(0, 0, 0, 0))
    debate = replace(first, round=1, others=("(another executor's reply)\n#### 0",), others_values=(0.0,))
    for title, request in (("first round", first), ("a debate round", debate)):
        print(f"===== executor request, {title}: model {opts.model!r}, T = {BASE[0]}, p = {BASE[1]} =====")
        for m in executor_messages(request):
            print(f"--- {m['role']} ---\n{m['content']}")
    print('--- reply: a step-by-step solution, then a last line "#### N" ---')
    return 0


def _name_failures(records: Sequence[Record], limit: int = 5) -> None:
    """One stderr line per run with failed episodes (the first ``limit``): how many, and the first of them."""
    failed = [r for r in records if r.get("failed")]
    for r in failed[:limit]:
        first = r["failed"][0]
        print(
            f"eq-env reproduce: run {r['instrument']} N={r['n']} seed {r['seed']}: {len(r['failed'])} of "
            f"{r['episodes']} episodes failed, e.g. {first['method']} episode {first['episode']} "
            f"({first['question']}): {first['error']}",
            file=sys.stderr,
        )
    if len(failed) > limit:
        print(f"eq-env reproduce: ... and {len(failed) - limit} more run(s) with failed episodes", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from eq_env.core.cli import configure_flag_groups, executor_of, failures

    opts = options_from_args(args)
    if getattr(args, "dry_run", False):
        return _dry_run(opts)
    executor = executor_of(args, default_jobs=opts.jobs)
    out: Path = args.out
    if opts.answerer == "llm":
        configure_flag_groups(args, out / "llm_cache")
        answerer = _answerer(opts, _config(opts.executors[0], "sensitive"))
        asyncio.run(_check(answerer))  # an unreachable endpoint fails now, not after the training
    need_torch()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        records = run_all(opts, out, progress=args.progress, executor=executor)
    except RuntimeError as err:  # an answer a replay does not hold (LLMUnavailableError): one line
        from eq_env.agents.client import LLMUnavailableError

        if not isinstance(err, LLMUnavailableError):
            raise
        raise ValueError(f"{err} (runs finished before it are saved in {out / 'results.jsonl'})") from None
    files = write_outputs(records, out, opts)
    print((out / "summary.md").read_text())
    print(f"wrote {', '.join(files)} to {out}; {_plural(len(records), 'run')} in {time.perf_counter() - started:.0f} s")
    _name_failures(records)
    lost = [(str(r["key"]), len(r["failed"]), int(r["episodes"])) for r in records if r.get("failed")]
    return failures(getattr(args, "command", "reproduce"), lost, getattr(args, "cache", None))


COMMAND = Command(
    "reproduce",
    "ECON's claims against the three falsifiers, with intervals over seeds",
    add_arguments,
    run,
    interrupted="finished runs are saved in --out/results.jsonl; run the same command to resume",
)
