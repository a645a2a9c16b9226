"""``eq-env reproduce --env belief-coordination``: ECON's claims against the three falsifiers, in one command.

For each instrument (the *sensitive* simulated answerer, on which T and p matter
as they do for real models, and the *null* one, on which they cannot), each
team size N and each seed, one **run**:

1. trains ECON (:mod:`baselines.belief_coordination.econ`) on generated
   questions (the run's own seed), and keeps the same architecture at its random
   initialisation (**F1**'s control);
2. picks the best single fixed (T, p) of the grid on the same training questions
   (``tuned``: the strongest non-learned constant);
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

4. checks the equilibrium condition directly (**F2**): for each executor, the
   best unilateral change of its own (T, p) — a grid point per value of what it
   observes, the question's difficulty, all others holding their learned choices
   — chosen on half the questions and measured on the other half; the profile
   is an ε-equilibrium for every ε above the largest gain.

Every run is one line of ``DIR/results.jsonl``, written when it finishes; a
killed command started again skips the runs already there. Then the tables
(``DIR/methods.md``, ``DIR/methods.csv``, ``DIR/falsifiers.md``), the figure
(``DIR/belief_coordination.png``) and ``DIR/summary.md``, which states for each
of the paper's claims what our measurement says, with 95% intervals over seeds
(t intervals of the per-seed paired differences).

With ``--answerer llm --model M --base-url U`` the methods' choices are answered
by a real model through the LLM answerer (cached, concurrent, resumable: a
replay with ``--cache read`` makes no request). ECON is then trained on the
simulated answerer — training against the model would take hundreds of
thousands of requests — and evaluated on the model: a transfer, said in the
summary.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from eq_env.belief_coordination import engine, rules
from eq_env.belief_coordination.answerers import MAX_EXECUTORS, Answer, AnswerRequest, answer_draws, round_requests
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.questions import Question
from eq_env.core.executors import Call, Executor, LocalExecutor
from eq_env.core.experiments import ResultsStore, t_quantile_975
from eq_env.core.report import markdown_table, plot_lines, write_csv

__all__ = ["CLAIMS", "METHODS", "Options", "add_arguments", "run", "run_one"]

METHODS = ("single", "fixed", "random", "schedule", "tuned", "debate", "econ", "frozen")
BASE = (0.7, 1.1)  # the fixed baselines' (T, p): a common chat default
SCHEDULE = (0.3, 1.2)  # the temperature schedule's ends
DEBATE_ROUNDS = 3
METRIC_NAMES = ("accuracy", "reward", "alignment", "contribution", "tokens", "temperature", "penalty")

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
        equilibrium_questions: questions of F2's deviation search with an LLM answerer (each costs N × G
            requests per question); the simulated answerer uses all held-out questions.
        questions_file: a GSM8K-style JSONL file for the held-out questions instead of generated ones.
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
    equilibrium_questions: int = 20
    questions_file: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _config(n: int, instrument: str) -> BeliefCoordinationConfig:
    """The game of a run: the grid (ECON's), the simulated answerer sensitive unless the null instrument."""
    return BeliefCoordinationConfig(n_executors=n, action_space="grid", sensitive=instrument != "null")


def run_key(instrument: str, n: int, seed: int, opts: Options) -> str:
    """What determines a run's results (an LLM run's endpoint with its credentials masked)."""
    answerer = "simulated"
    if opts.answerer != "simulated":
        from agents.client import resolve_base_url
        from eq_env.core.redact import public_url

        endpoint = public_url(resolve_base_url(opts.base_url))
        answerer = f"llm:{opts.model}@{endpoint}/penalty={opts.penalty}/f2q{opts.equilibrium_questions}"
    source = "generated" if not opts.questions_file else _file_id(opts.questions_file)
    return f"{instrument}/n{n}/seed{seed}/q{opts.questions}/steps{opts.train_steps}/{answerer}/{source}"


def _file_id(path: str) -> str:
    """A questions file as a run key names it: its name and its content's digest (another file of the same
    name, or the file edited, is another experiment)."""
    import hashlib

    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    return f"{Path(path).name}@{digest}"


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


def play_with(questions: Sequence[Question], episodes: Sequence[int], seed: int, config: BeliefCoordinationConfig,
              choose: engine.Chooser, answerer: Any, coordinator: str = "majority") -> engine.Outcome:  # fmt: skip
    """:func:`engine.play` with any answerer: the same requests the environment would make (episode ``i`` of
    ``seed`` for ``questions[k]``, ``i = episodes[k]``), all of a round at once."""
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
        values = np.array([[math.nan if a.value is None else float(a.value) for a in row] for row in replies])
        prompt += np.array([sum(a.prompt_tokens for a in row) for row in replies], dtype=np.int64)
        completion += np.array([sum(a.completion_tokens for a in row) for row in replies], dtype=np.int64)
        failed += np.array([sum(a.failed for a in row) for row in replies], dtype=np.int64)
        estimated += np.array([sum(bool(a.info.get("usage_estimated")) for a in row) for row in replies],
                              dtype=np.int64)  # fmt: skip
    assert values is not None
    committed = rules.majority(values) if coordinator == "majority" else np.zeros(b, np.int64)
    gold = np.array([float(q.answer) for q in questions])
    terms = rules.reward_terms(values, committed, gold)
    index = np.where(np.isnan(values), -1, 0)
    return engine.Outcome(index, values, committed, terms["ts"], terms["al"], terms["cc"],
                          rules.reward(terms, config.weights), prompt, completion, temps, pens, failed,
                          estimated)  # fmt: skip


# ---------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------
def _summary(out: engine.Outcome) -> dict[str, float]:
    return {
        "accuracy": float(out.ts.mean()),
        "reward": float(out.reward.mean()),
        "alignment": float(out.al.mean()),
        "contribution": float(out.cc.mean()),
        "tokens": float(out.tokens.mean()),
        "temperature": float(out.temperatures.mean()),
        "penalty": float(out.penalties.mean()),
        "no_answer": float(np.isnan(out.values).mean()),
        # requests that failed after the retries (counted in no_answer too), and answers whose tokens were
        # estimated because the endpoint reported no usage: per question
        "failed_requests": float(out.failed.mean()) if out.failed is not None else 0.0,
        "estimated_tokens": float(out.estimated.mean()) if out.estimated is not None else 0.0,
    }


def _tuned(config: BeliefCoordinationConfig, pool: engine.Batch) -> int:
    """The grid point whose fixed use scores best on ``pool`` (the training questions)."""
    n = config.n_executors
    rewards = [engine.play(pool, config, _grid_chooser(config, np.full((len(pool), n), g))).reward.mean()
               for g in range(config.grid_size)]  # fmt: skip
    return int(np.argmax(rewards))


def equilibrium_gaps(config: BeliefCoordinationConfig, actions: np.ndarray, difficulty: np.ndarray,
                     play_actions: Callable[[np.ndarray], np.ndarray]) -> dict[str, Any]:  # fmt: skip
    """F2: each executor's best unilateral deviation over the (T, p) grid, and its gain.

    ``actions`` (B, N): the profile's grid indices; ``play_actions(profiles) -> reward (M·B,)`` plays M
    profiles stacked (M·B, N), each on the same held-out questions (common random numbers). The deviation is
    a grid point per difficulty value (what an executor observes in round 1), chosen on the even-indexed
    questions; its gain is measured on the odd-indexed ones (``gain``) and, for reference, in-sample on all
    (``gain_in_sample``, biased upwards by the choice). At a difficulty no even-indexed question has, there is
    nothing to choose with: the executor keeps its own choice there (gain 0).
    """
    b, n = actions.shape
    g_count = config.grid_size
    # every deviation at once (one batch: an LLM answerer has them all in flight together)
    profiles = np.repeat(actions[None], 1 + n * g_count, axis=0)
    for i in range(n):
        profiles[1 + i * g_count : 1 + (i + 1) * g_count, :, i] = np.arange(g_count)[:, None]
    rewards = play_actions(profiles.reshape(-1, n)).reshape(1 + n * g_count, b)
    base = rewards[0]
    per_g = rewards[1:].reshape(n, g_count, b)
    tune, test = np.arange(b) % 2 == 0, np.arange(b) % 2 == 1
    levels = np.unique(difficulty)
    gains, in_sample, best = [], [], []
    for i in range(n):
        out_gain = np.zeros(b)
        all_gain = np.zeros(b)
        choice = {}
        for level in levels:
            at = difficulty == level
            if not (at & tune).any():  # nothing to choose a deviation on: the executor keeps its choice (gain 0)
                continue
            g_tune = int(np.argmax([per_g[i, g, at & tune].mean() for g in range(config.grid_size)]))
            g_all = int(np.argmax([per_g[i, g, at].mean() for g in range(config.grid_size)]))
            out_gain[at] = per_g[i, g_tune, at] - base[at]
            all_gain[at] = per_g[i, g_all, at] - base[at]
            choice[f"{level:.3f}"] = g_tune
        gains.append(float(out_gain[test].mean()))
        in_sample.append(float(all_gain.mean()))
        best.append(choice)
    return {"gain": gains, "gain_in_sample": in_sample, "epsilon": max(gains), "deviations": best,
            "reward": float(base.mean())}  # fmt: skip


def run_one(instrument: str, n: int, seed: int, opts: Options) -> dict[str, Any]:
    """One run (module docstring): its JSON-ready record."""
    import torch

    from baselines.belief_coordination.econ import ECON, ECONHyper, train_econ

    torch.set_num_threads(1)  # 2 cores, several workers: more threads only contend
    started = time.perf_counter()
    config = _config(n, instrument)
    hyper = replace(ECONHyper(), steps=opts.train_steps)
    econ, curve = train_econ(config, hyper, seed=seed, progress=False)
    frozen = ECON.untrained(config, hyper, seed=seed)
    train_seconds = time.perf_counter() - started
    pool = engine.training_batch(config, np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(43,))), 1000)
    tuned = _tuned(config, pool)

    questions = None
    if opts.questions_file:
        from eq_env.belief_coordination.questions import load_jsonl

        questions = load_jsonl(opts.questions_file)
    # (a file shorter than --questions is played once, not repeated)
    episodes = list(range(opts.questions if questions is None else min(opts.questions, len(questions))))
    batch = engine.episodes_batch(config, seed, episodes, questions)
    single = replace(config, n_executors=1)
    debate = replace(config, rounds=DEBATE_ROUNDS)
    answerer = _answerer(opts, config)

    def evaluate(cfg: BeliefCoordinationConfig, choose: engine.Chooser, coordinator: str = "majority"
                 ) -> engine.Outcome:  # fmt: skip
        if answerer is None:
            return engine.play(batch, cfg, choose, coordinator=coordinator)
        return play_with(batch.questions, episodes, seed, cfg, choose, answerer, coordinator)

    outcomes = {
        "single": evaluate(single, _fixed(*BASE), "first"),
        "fixed": evaluate(config, _fixed(*BASE)),
        "random": evaluate(config, _random(config, seed)),
        "schedule": evaluate(config, _schedule(n)),
        "tuned": evaluate(config, _grid_chooser(config, np.full((len(batch), n), tuned))),
        "debate": evaluate(debate, _fixed(*BASE)),
        "econ": evaluate(config, econ.chooser()),
        "frozen": evaluate(config, frozen.chooser()),
    }
    features = engine.executor_features(batch, config, 0, None)
    actions = econ.act_batch(features)

    def stacked(sub: engine.Batch, eps: Sequence[int]) -> Callable[[np.ndarray], np.ndarray]:
        def play_profiles(profiles: np.ndarray) -> np.ndarray:
            m = len(profiles) // len(sub)
            tiled = sub.subset(np.tile(np.arange(len(sub)), m))
            if answerer is None:
                return engine.play(tiled, config, _grid_chooser(config, profiles)).reward
            return play_with(tiled.questions, list(eps) * m, seed, config, _grid_chooser(config, profiles),
                             answerer).reward  # fmt: skip

        return play_profiles

    if answerer is None:
        f2 = equilibrium_gaps(config, actions, batch.difficulty, stacked(batch, episodes))
    else:
        k = min(opts.equilibrium_questions, len(batch))
        sub = batch.subset(np.arange(k))
        f2 = equilibrium_gaps(config, actions[:k], sub.difficulty, stacked(sub, episodes[:k]))
    t_grid, p_grid = config.grid_point(actions)
    easy, hard = batch.difficulty <= 0.25, batch.difficulty >= 0.75
    return {
        "key": run_key(instrument, n, seed, opts),
        "instrument": instrument,
        "n": n,
        "seed": seed,
        "questions": len(batch),
        "answerer": opts.answerer if opts.answerer == "simulated" else f"llm:{opts.model}",
        "methods": {m: _summary(o) for m, o in outcomes.items()},
        "f2": f2,
        "econ": {
            "train_seconds": round(train_seconds, 3),
            "curve": curve,
            "tuned_grid_point": [float(x) for x in config.grid_point(tuned)],
            "temperature_easy": float(t_grid[easy].mean()) if easy.any() else None,  # (JSON has no NaN)
            "temperature_hard": float(t_grid[hard].mean()) if hard.any() else None,
            "penalty_mean": float(p_grid.mean()),
        },
    }


def _answerer(opts: Options, config: BeliefCoordinationConfig) -> Any:
    if opts.answerer == "simulated":
        return None
    from agents.belief_coordination.answerer import LLMAnswerer

    return LLMAnswerer(opts.model, opts.base_url, penalty=opts.penalty, concurrency=opts.concurrency)


# ---------------------------------------------------------------------------
# Statistics, tables, figure, summary
# ---------------------------------------------------------------------------
def interval(values: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval over seeds (NaN half-width with one seed)."""
    x = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if len(x) == 0:
        return math.nan, math.nan
    if len(x) == 1:
        return float(x[0]), math.nan
    return float(x.mean()), t_quantile_975(len(x) - 1) * float(x.std(ddof=1)) / math.sqrt(len(x))


def _fmt(mean: float, half: float, digits: int = 3, scale: float = 1.0) -> str:
    if math.isnan(mean):
        return "—"
    if math.isnan(half):
        return f"{mean * scale:.{digits}f}"
    return f"{mean * scale:.{digits}f} ± {half * scale:.{digits}f}"


def _runs(records: Sequence[Mapping[str, Any]], instrument: str, n: int) -> list[Mapping[str, Any]]:
    return sorted([r for r in records if r["instrument"] == instrument and r["n"] == n], key=lambda r: r["seed"])


def paired(records: Sequence[Mapping[str, Any]], a: Callable[[Mapping[str, Any]], float],
           b: Callable[[Mapping[str, Any]], float]) -> tuple[float, float]:  # fmt: skip
    """Mean and 95% half-width over seeds of a(run) − b(run)."""
    return interval([a(r) - b(r) for r in records])


def _metric(method: str, metric: str) -> Callable[[Mapping[str, Any]], float]:
    return lambda r: float(r["methods"][method][metric])


def method_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for instrument in sorted({r["instrument"] for r in records}, key=lambda s: s == "null"):
        for n in sorted({r["n"] for r in records if r["instrument"] == instrument}):
            runs = _runs(records, instrument, n)
            for m in METHODS:
                row: dict[str, Any] = {"instrument": instrument, "n": n, "method": m, "seeds": len(runs)}
                for metric in METRIC_NAMES:
                    row[metric], row[f"{metric}_ci"] = interval([r["methods"][m][metric] for r in runs])
                rows.append(row)
    return rows


def falsifier_rows(records: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    rows = []
    for instrument in sorted({r["instrument"] for r in records}, key=lambda s: s == "null"):
        for n in sorted({r["n"] for r in records if r["instrument"] == instrument}):
            runs = _runs(records, instrument, n)
            f1 = paired(runs, _metric("econ", "accuracy"), _metric("frozen", "accuracy"))
            f1r = paired(runs, _metric("econ", "reward"), _metric("frozen", "reward"))
            eps = interval([r["f2"]["epsilon"] for r in runs])
            f3 = paired(runs, _metric("econ", "accuracy"), _metric("schedule", "accuracy"))
            f3r = paired(runs, _metric("econ", "reward"), _metric("schedule", "reward"))
            rows.append([instrument, str(n), str(len(runs)), _fmt(*f1), _fmt(*f1r), _fmt(*eps, digits=4),
                         _fmt(*f3), _fmt(*f3r)])  # fmt: skip
    return rows


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _verdict(mean: float, half: float, words: tuple[str, str] = ("higher", "lower")) -> str:
    if math.isnan(half):
        return "one seed: no interval"
    if mean - half > 0:
        return f"{words[0]} (the interval excludes 0)"
    if mean + half < 0:
        return f"{words[1]} (the interval excludes 0)"
    return "no difference we can detect (the interval contains 0)"


def summary(records: Sequence[Mapping[str, Any]], opts: Options) -> str:
    """The claims, one by one, against our measurements."""
    answerer = "the simulated answerer" if opts.answerer == "simulated" else f"the model {opts.model!r}"
    main = "llm" if any(r["instrument"] == "llm" for r in records) else "sensitive"
    sizes = sorted({r["n"] for r in records if r["instrument"] == main})
    n0 = 3 if 3 in sizes else sizes[0]
    runs = _runs(records, main, n0)
    lines = [f"# Belief coordination: ECON's claims, measured ({answerer})", "",
             f"{_plural(len(runs), 'seed')}, {records[0]['questions']} held-out questions per run, N = {n0} unless "
             "said; "
             "± is the half-width of a 95% t-interval over seeds of per-seed paired differences "
             "(percentage points of accuracy).", ""]  # fmt: skip
    acc = "accuracy"
    c1 = paired(runs, _metric("econ", acc), _metric("single", acc))
    multi = max(("fixed", "schedule", "debate"), key=lambda m: np.mean([r["methods"][m][acc] for r in runs]))
    c2 = paired(runs, _metric("econ", acc), _metric(multi, acc))
    c3 = interval([1 - r["methods"]["econ"]["tokens"] / r["methods"]["debate"]["tokens"] for r in runs])
    lines.append("| claim (paper) | ours | verdict |")
    lines.append("|---|---|---|")
    lines.append(f"| +10.9% over single-agent baselines | {_fmt(*c1, 1, 100)} points (ECON − single) | "
                 f"{_verdict(*c1)} |")  # fmt: skip
    lines.append(f"| +11.2% over multi-LLM methods | {_fmt(*c2, 1, 100)} points (ECON − {multi}, the best of "
                 f"fixed-T majority, schedule majority and 3-round debate) | {_verdict(*c2)} |")  # fmt: skip
    lines.append(f"| 21.4% fewer tokens than a three-round debate | {_fmt(*c3, 1, 100)}% fewer | "
                 f"{_verdict(*c3, ('fewer', 'more'))} |")  # fmt: skip
    if 9 in sizes:
        nine = _runs(records, main, 9)
        c4 = paired(nine, _metric("econ", acc), _metric("single", acc))
        three = {r["seed"]: r for r in runs}
        c4b = interval([r["methods"]["econ"][acc] - three[r["seed"]]["methods"]["econ"][acc] for r in nine
                        if r["seed"] in three])  # fmt: skip
        lines.append(f"| +18.1% when scaled to nine executors | {_fmt(*c4, 1, 100)} points (ECON with 9 − single); "
                     f"{_fmt(*c4b, 1, 100)} points (ECON with 9 − ECON with {n0}) | {_verdict(*c4)} |")  # fmt: skip
    lines += ["", "## The falsifiers", ""]
    f1 = paired(runs, _metric("econ", acc), _metric("frozen", acc))
    eps = interval([r["f2"]["epsilon"] for r in runs])
    gains = [g for r in runs for g in r["f2"]["gain"]]
    f3 = paired(runs, _metric("econ", acc), _metric("schedule", acc))
    tuned = paired(runs, _metric("econ", "reward"), _metric("tuned", "reward"))
    lines.append(f"* **F1** (trained vs the same networks frozen at random initialisation): {_fmt(*f1, 1, 100)} "
                 f"points of accuracy — {_verdict(*f1)}.")  # fmt: skip
    lines.append(f"* **F2** (equilibrium, checked directly): the best unilateral change of one executor's own "
                 f"(T, p) — a point of the (T, p) grid per difficulty — gains at most {_fmt(*eps, 4)} reward out "
                 f"of sample (largest over executors; mean {np.mean(gains):.4f}); over the grid the learned profile "
                 "is an ε-equilibrium only for ε above that (deviations off the grid may gain more).")  # fmt: skip
    if eps[0] <= 0:
        lines.append("  (At most 0 or less: no deviation chosen on half the questions did better on the other half.)")
    learned = [r.get("econ", {}) for r in runs]
    easy = [e["temperature_easy"] for e in learned if e.get("temperature_easy") is not None]
    hard = [e["temperature_hard"] for e in learned if e.get("temperature_hard") is not None]
    if easy and hard:
        lines.append(f"* What ECON learned: mean temperature {np.mean(easy):.2f} on easy questions (difficulty "
                     f"≤ 0.25) and {np.mean(hard):.2f} on hard ones (≥ 0.75); mean penalty "
                     f"{np.mean([e.get('penalty_mean', math.nan) for e in learned]):.2f}.")  # fmt: skip
    lines.append(f"* **F3** (vs majority vote over a fixed temperature schedule, same coordinator): "
                 f"{_fmt(*f3, 1, 100)} points — {_verdict(*f3)}.")  # fmt: skip
    lines.append(f"* Against the best fixed (T, p) tuned on the training questions: {_fmt(*tuned, 4)} reward — "
                 f"{_verdict(*tuned)}.")  # fmt: skip
    null = _runs(records, "null", n0) or _runs(records, "null", min({r["n"] for r in records}))
    if null:
        g1 = paired(null, _metric("econ", "reward"), _metric("frozen", "reward"))
        g3 = paired(null, _metric("econ", "reward"), _metric("fixed", "reward"))
        lines += ["", "## The null instrument", "",
                  f"On the answerer that ignores T and p, ECON − frozen = {_fmt(*g1, 4)} reward and ECON − fixed = "
                  f"{_fmt(*g3, 4)}: the instrument cannot report a gain it cannot produce."]  # fmt: skip
    if opts.answerer != "simulated":
        lines += [
            "",
            "ECON and the tuned point were trained on the simulated answerer and evaluated on the model "
            "(a transfer): training on the model itself would take hundreds of thousands of requests.",
        ]
    lines.append("")
    return "\n".join(lines)


def write_outputs(records: Sequence[Mapping[str, Any]], out: Path, opts: Options) -> None:
    rows = method_rows(records)
    columns = ["instrument", "n", "method", "seeds"] + [c for m in METRIC_NAMES for c in (m, f"{m}_ci")]
    write_csv(out / "methods.csv", rows, columns)
    table = markdown_table(
        ["answerer", "N", "method", "accuracy", "reward", "tokens / question", "mean T", "mean p"],
        [[r["instrument"], r["n"], r["method"], _fmt(r["accuracy"], r["accuracy_ci"]),
          _fmt(r["reward"], r["reward_ci"]), _fmt(r["tokens"], r["tokens_ci"], 0),
          _fmt(r["temperature"], r["temperature_ci"], 2), _fmt(r["penalty"], r["penalty_ci"], 2)] for r in rows],
    )  # fmt: skip
    (out / "methods.md").write_text(table + "\n")
    falsifiers = markdown_table(
        ["answerer", "N", "seeds", "F1 accuracy (econ − frozen)", "F1 reward", "F2 ε (largest gain)",
         "F3 accuracy (econ − schedule)", "F3 reward"],
        falsifier_rows(records),
    )  # fmt: skip
    (out / "falsifiers.md").write_text(falsifiers + "\n")
    (out / "summary.md").write_text(summary(records, opts))
    who = "simulated answerer" if opts.answerer == "simulated" else f"model {opts.model}"
    _figure(rows, out / "belief_coordination.png", who)


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


def run_all(opts: Options, out: Path, progress: bool | None = None,
            executor: Executor | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Every run not yet in ``out/results.jsonl``, in parallel, each written when it finishes; every record.

    Runs go to ``executor`` (default: ``opts.jobs`` local worker processes; a
    :class:`~eq_env.core.executors.RayExecutor` for a Ray cluster: the records are the same bytes, and this
    process alone writes them). Runs with an LLM answerer stay in this process, one by one, on every backend
    (their requests are concurrent already, and the answer cache is this process's)."""
    store = ResultsStore(out / "results.jsonl")
    with store.exclusive():
        done = {r["key"]: r for r in store.records(check_record)}
        todo = [r for r in plan(opts) if run_key(*r, opts) not in done]
        bar = tqdm(total=len(plan(opts)), initial=len(plan(opts)) - len(todo), unit="run",
                   desc="belief coordination", disable=None if progress is None else not progress)  # fmt: skip
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
                    store.append(run_one(*r, opts))
                    bar.update()
        done = {r["key"]: r for r in store.records(check_record)}
    return [done[run_key(*r, opts)] for r in plan(opts)]


def check_record(record: Mapping[str, Any]) -> None:
    """A ValueError saying what a results line lacks (the store names the file and line)."""
    problems = []
    if record.get("instrument") not in ("sensitive", "null", "llm"):
        problems.append("'instrument' must be sensitive, null or llm")
    for field_ in ("n", "seed", "questions"):
        if isinstance(record.get(field_), bool) or not isinstance(record.get(field_), int):
            problems.append(f"{field_!r} must be an integer")
    methods = record.get("methods")
    if not isinstance(methods, dict) or any(
        not isinstance(methods.get(m), dict)
        or any(isinstance(methods[m].get(k), bool) or not isinstance(methods[m].get(k), (int, float))
               for k in METRIC_NAMES)
        for m in METHODS
    ):  # fmt: skip
        problems.append(f"'methods' must give {', '.join(METRIC_NAMES)} for each of {', '.join(METHODS)}")
    f2 = record.get("f2")
    if (
        not isinstance(f2, dict)
        or not isinstance(f2.get("epsilon"), (int, float))
        or not isinstance(f2.get("gain"), list)
    ):
        problems.append("'f2' must give epsilon and gain")
    if problems:
        raise ValueError(f"not a belief-coordination run record: {'; '.join(problems)}; remove that line to run it "
                         "again")  # fmt: skip


async def _check(answerer: Any) -> None:
    try:
        await answerer.check()
    finally:
        await answerer.aclose()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from eq_env.core.cli import add_backend_flags, int_in, list_of, out_dir, positive_float
    from eq_env.core.spec import registered_envs

    names = [s.name for s in registered_envs()] + [s.id for s in registered_envs()]
    parser.add_argument("--env", choices=names, metavar="NAME", help="the game (belief-coordination here)")
    parser.add_argument("--out", type=out_dir, required=True, help="directory for results, tables, figure, summary")
    parser.add_argument("--seeds", type=int_in(1, 100), default=5, help="seeds 0..K-1 (default 5)")
    parser.add_argument("--n-executors", type=list_of(int_in(1, 16), "team sizes", distinct=True),
                        default=[3, 5, 9], dest="executors",
                        help="comma-separated team sizes N (default 3,5,9)")  # fmt: skip
    parser.add_argument("--questions", type=int_in(2, 100_000), default=2000,
                        help="held-out questions per run (default 2000)")  # fmt: skip
    parser.add_argument("--train-steps", type=int_in(1, 1_000_000), default=1500,
                        help="ECON's gradient steps per run, batches of 256 (default 1500)")  # fmt: skip
    parser.add_argument("--no-null", action="store_true", help="skip the null instrument")
    parser.add_argument("--jobs", type=int_in(1, 64), help="worker processes (default 2); with --backend ray, the "
                        "CPUs of the Ray instance started here")  # fmt: skip
    add_backend_flags(parser)
    parser.add_argument("--questions-file", type=str, default=None,
                        help="held-out questions from a GSM8K-style JSONL file instead of generated ones (on a Ray "
                        "cluster, at the same path on every node)")  # fmt: skip
    parser.add_argument("--answerer", choices=("simulated", "llm"), default="simulated",
                        help="the simulated answerer (offline) or a model (--model, --base-url)")  # fmt: skip
    parser.add_argument("--model", default="", help="the model (with --answerer llm; the key: $OPENAI_API_KEY)")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint (default $OPENAI_BASE_URL)")
    parser.add_argument("--penalty", choices=("frequency", "repetition", "none"), default="frequency",
                        help="p as frequency_penalty = 2(p-1) (default), repetition_penalty = p, or none")  # fmt: skip
    parser.add_argument("--concurrency", type=int_in(1, 1024), default=16,
                        help="requests in flight (default 16; LLM runs go one by one, whatever --jobs)")  # fmt: skip
    parser.add_argument("--max-retries", type=int_in(0, 100), default=5,
                        help="retries after a 429, 5xx, timeout or dropped connection (default 5)")  # fmt: skip
    parser.add_argument("--timeout", type=positive_float, default=60.0, help="seconds per request (default 60)")
    parser.add_argument("--equilibrium-questions", type=int_in(2, 100_000), default=20,
                        help="F2's questions with --answerer llm (default 20; N x grid requests each)")  # fmt: skip
    parser.add_argument("--cache", choices=("off", "read", "write", "readwrite"), default=None,
                        help="LLM answers: replay (read: no request), record, or both (default readwrite)")  # fmt: skip
    parser.add_argument("--no-endpoint-check", dest="endpoint_check", action="store_false",
                        help="do not ask the endpoint for its model list before the first request")  # fmt: skip
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="where LLM answers are recorded (default DIR/llm_cache); replay another run's with "
                        "--cache read --cache-dir THAT/llm_cache")  # fmt: skip
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="a progress bar (default: on a terminal)")  # fmt: skip


def options_from_args(args: argparse.Namespace) -> Options:
    if args.answerer == "llm" and not args.model:
        raise ValueError("--answerer llm needs --model (and --base-url, or $OPENAI_BASE_URL)")
    if args.answerer == "simulated":
        given = [
            flag
            for flag, value in (
                ("--model", args.model),
                ("--base-url", args.base_url),
                ("--cache", args.cache),
                ("--cache-dir", args.cache_dir),
            )
            if value
        ]
        if given:
            raise ValueError(f"{' and '.join(given)} need{'s' if len(given) == 1 else ''} --answerer llm (the "
                             "simulated answerer asks nothing and records nothing)")  # fmt: skip
    if args.questions_file is not None:
        from eq_env.belief_coordination.questions import load_jsonl

        load_jsonl(args.questions_file)  # (its errors name the file and line before anything runs)
    return Options(seeds=tuple(range(args.seeds)), executors=tuple(args.executors), questions=args.questions,
                   train_steps=args.train_steps, jobs=args.jobs or 2, answerer=args.answerer,
                   null=not args.no_null and args.answerer == "simulated",
                   model=args.model, base_url=args.base_url, penalty=args.penalty, concurrency=args.concurrency,
                   equilibrium_questions=args.equilibrium_questions,
                   questions_file=args.questions_file)  # fmt: skip


def need_torch() -> None:
    """ECON is PyTorch: a ValueError (one line, the install command) where it is missing."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ValueError("ECON needs PyTorch: pip install 'eq-env[rl]' (on a machine without a GPU, a CPU build of "
                         "torch first)") from None  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from eq_env.core.cli import executor_of

    need_torch()
    opts = options_from_args(args)
    executor = executor_of(args, default_jobs=opts.jobs)
    out: Path = args.out
    if opts.answerer == "llm":
        from agents.client import configure

        configure(cache=args.cache or "readwrite", cache_dir=args.cache_dir or out / "llm_cache",
                  max_retries=args.max_retries, timeout=args.timeout, check_endpoint=args.endpoint_check)  # fmt: skip
        answerer = _answerer(opts, _config(opts.executors[0], "sensitive"))
        asyncio.run(_check(answerer))  # an unreachable endpoint fails now, not after the training
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        records = run_all(opts, out, progress=args.progress, executor=executor)
    except RuntimeError as err:  # an answer a replay does not hold (LLMUnavailableError): one line
        from agents.client import LLMUnavailableError

        if not isinstance(err, LLMUnavailableError):
            raise
        raise ValueError(f"{err} (runs finished before it are saved in {out / 'results.jsonl'})") from None
    write_outputs(records, out, opts)
    print((out / "summary.md").read_text())
    print(f"tables: {out / 'methods.md'}, {out / 'falsifiers.md'}; figure: {out / 'belief_coordination.png'}; "
          f"{_plural(len(records), 'run')} in {time.perf_counter() - started:.0f} s")  # fmt: skip
    return 0
