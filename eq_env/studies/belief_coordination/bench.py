"""Belief coordination in ``eq-env bench`` (battery ``bench-v1``): the model as the *answerer*.

One task, ``belief-coordination/answerer``. The model answers every executor request (the question, at the
executor's temperature T and repetition penalty p) under the non-learned baselines that ECON is measured
against, on the generated arithmetic word problems (:func:`~eq_env.belief_coordination.questions.generated_question`:
episode i of seed s is always the same question, difficulty mixed, so every row of a seed sees the same
questions). N = 3 executors, as in the paper's main setting.

=================  ===============================================================  =================
row                condition                                                        requests/question
=================  ===============================================================  =================
``single``         one executor at (T, p) = (0.7, 1.1); its answer is committed      1
``fixed``          3 executors at (0.7, 1.1); **the model commits** (the LLM            4
                   coordinator reads the three replies): ECON's pipeline as its
                   public code runs at test time — fixed (T, p) — without the
                   strategy message
``majority vote``  3 executors at the temperature schedule 0.3, 0.75, 1.2 (p 1.1),    3
                   majority vote: the review's falsifier F3 baseline
``debate``         3 executors at (0.7, 1.1), 3 rounds (from round 2 each reads the     9
                   others' previous replies), majority vote of the last round
=================  ===============================================================  =================

Sizes: ``--quick`` plays 8 questions per seed on seeds 0, 1, 2 (24 questions a row); the full battery 100
questions per seed on seeds 0–4 (500 a row). By the table that is 17 requests a question: **408 requests**
quick and **8,500** full. Fewer reach the endpoint: the rows share their common samples (the request of
executor i at (0.7, 1.1) in round 1 of question q is the same request, keyed by (seed, episode, executor,
round), in ``single``, ``fixed`` and ``debate``), so the model is asked 13 a question (312 quick, 6,500 full),
plus the retries.

Metrics (per question, mean over the row's questions, then over seeds with a 95% t interval):

* ``accuracy`` ↑ — **the main metric** (the task's number is the mean accuracy over the four rows): the
  committed answer equals the question's;
* ``reward`` ↑ — ECON's shared reward 0.5·TS + 0.3·AL + 0.2·CC;
* ``tokens`` ↓ — prompt and completion tokens of every request of the question (executors, all rounds,
  and the model as coordinator), as the endpoint reports them;
* ``no_answer`` ↓ — share of the executors' final replies with no number;
* ``gain_vs_single`` ↑ — accuracy minus the ``single`` row's on the same seed (questions in common);
* ``tokens_vs_debate`` ↓ — tokens divided by the ``debate`` row's on the same seed.

An executor request the endpoint cannot answer after the client's retries fails its episode (recorded
under the run's ``failed``, played again when the bench is resumed): an outage is not scored as a wrong
answer. A reply without a number is the model's: it counts in ``no_answer`` and can make a wrong commit.

**Reference numbers** (the paper, arXiv 2506.08292, as the spec ``belief_coordination.md`` states its
claims): ECON with learned beliefs is +10.9 points of accuracy over single-agent baselines and uses 21.4%
fewer tokens than a three-round debate. They sit beside the ``fixed`` row (ECON's pipeline with its beliefs
fixed), as ``gain_vs_single`` +0.109 and ``tokens_vs_debate`` 0.786. They are comparable in direction only:
the paper's model, benchmarks (GSM8K, MATH...) and learned (T, p) differ from these generated questions and
non-learned baselines; a baseline that reaches the claimed gain by itself is falsifier F3's evidence that the
learned equilibrium is not what produces it. The paper gives no absolute accuracy to compare with.

**The model in the executor seat.** The executors' answers come from the environment's answerer, which a
:class:`~eq_env.core.experiments.Condition` cannot name (it holds a configuration and policy specs), so the
executor policy ``llm`` (:class:`eq_env.agents.belief_coordination.executor.LLMExecutor`) carries the model: it
asks :class:`eq_env.agents.belief_coordination.answerer.LLMAnswerer` (same prompt ``executor_v1``, same sampling,
same sample keys, same cache as ``eq-env reproduce --answerer llm``) for exactly the request the
environment is about to make, and hands the answer to the environment when it steps. The coordinator of
``fixed`` is :class:`eq_env.agents.belief_coordination.coordinator.LLMCoordinator` (``model.spec("llm")``). The
executors' specs take the model, the endpoint and ``max_tokens`` from the bench's LLM flags, not
``temperature`` or ``seed``: T is the condition's, and each request's seed is fixed by its sample key.

**The estimate** (:func:`estimate`, per question): requests as in the table; prompt tokens by rendering the
real prompts (``executor_v1``, ``coordinator_v1``) on episode 0 of seed 0 with a typical reply
(:data:`TYPICAL_REPLY`, a short step-by-step solution ending ``#### N``) in the debate and coordinator
prompts, four characters a token; completion tokens the typical reply's length. It counts the shared samples
in every row, so it over-estimates the requests by about a quarter (17 vs 13 a question).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from eq_env.belief_coordination.answerers import AnswerRequest
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.questions import BASELINE_SAMPLING, BENCH_V1_QUESTIONS, generated_question
from eq_env.core.bench import (
    COUNT,
    RATE,
    BenchModel,
    BenchTask,
    Cell,
    Estimate,
    Metric,
    TaskReport,
    error_bars,
    metric_cells,
    seed_values,
)
from eq_env.core.experiments import Condition
from eq_env.core.policy import format_policy_spec, parse_policy_spec

__all__ = [
    "BASE",
    "DEBATE_ROUNDS",
    "METRICS",
    "N_EXECUTORS",
    "ROWS",
    "SCHEDULE",
    "TASKS",
    "TYPICAL_REPLY",
    "conditions",
    "estimate",
    "questions",
    "report",
    "seeds",
]

TASK = "belief-coordination/answerer"
N_EXECUTORS = 3
BASE = BASELINE_SAMPLING  # the fixed baselines' (T, p), as eq-env reproduce's
SCHEDULE = (0.3, 1.2)  # majority vote's temperature schedule, as eq-env reproduce's (F3)
DEBATE_ROUNDS = 3
QUICK = BENCH_V1_QUESTIONS["quick"]  # (seeds, questions per seed)
FULL = BENCH_V1_QUESTIONS["full"]
ROWS = ("single", "fixed", "majority vote", "debate")

METRICS = (
    Metric("accuracy", "accuracy", bounds=RATE),
    Metric("reward", "reward"),
    Metric("tokens", "tokens / question", higher_is_better=False, digits=0, bounds=COUNT),
    Metric("no_answer", "no answer", higher_is_better=False, bounds=RATE),
    Metric("gain_vs_single", "accuracy − single"),
    Metric("tokens_vs_debate", "tokens ÷ debate's", higher_is_better=False),
)
MAIN = METRICS[0]
PROMPTS = ("belief-coordination executor v1", "belief-coordination coordinator v1")

# What a model typically writes for a generated question (the estimate's reply and the debate/coordinator
# prompts' replies): a few short steps and the final line.
TYPICAL_REPLY = (
    "Start with 55 books.\nGrace takes 10: 55 - 10 = 45.\nHe buys more until he has 6 times as many: "
    "45 x 6 = 270.\nHe wins 134: 270 + 134 = 404.\nThe collection doubles: 404 x 2 = 808.\nHe wins 472: "
    "808 + 472 = 1280.\nEach book becomes 9: 1280 x 9 = 11520.\nHe keeps one of 2 equal piles: "
    "11520 / 2 = 5760.\n#### 5760"
)


# ---------------------------------------------------------------------------
# The battery
# ---------------------------------------------------------------------------
def seeds(quick: bool) -> tuple[int, ...]:
    return (QUICK if quick else FULL)[0]


def questions(quick: bool) -> int:
    """Questions per seed (episodes of every condition)."""
    return (QUICK if quick else FULL)[1]


def _executor_spec(model: BenchModel, **sampling: Any) -> str:
    kwargs: dict[str, Any] = {"model": model.model}
    if model.base_url is not None:
        kwargs["base_url"] = model.base_url
    if "max_tokens" in model.params:
        kwargs["max_tokens"] = model.params["max_tokens"]
    return format_policy_spec("llm", {**kwargs, **sampling})


def conditions(model: BenchModel, quick: bool) -> list[Condition]:
    """The four rows of the module docstring, in :data:`ROWS` order."""
    episodes = questions(quick)
    base = {"temperature": BASE[0], "penalty": BASE[1]}
    plan = (
        ("single", 1, 1, _executor_spec(model, **base), "first"),
        ("fixed", N_EXECUTORS, 1, _executor_spec(model, **base), model.spec("llm")),
        (
            "majority vote",
            N_EXECUTORS,
            1,
            _executor_spec(model, temperature=SCHEDULE[0], t_high=SCHEDULE[1], penalty=BASE[1]),
            "majority",
        ),
        ("debate", N_EXECUTORS, DEBATE_ROUNDS, _executor_spec(model, **base), "majority"),
    )
    return [
        Condition(
            BeliefCoordinationConfig(n_executors=n, rounds=rounds),
            {"executor": executor, "coordinator": coord},
            episodes,
            labels=(("task", TASK), ("row", row), ("executors", n), ("rounds", rounds)),
        )
        for row, n, rounds, executor, coord in plan
    ]


def _by_seed(records: Sequence[Mapping[str, Any]], key: str) -> dict[int, float]:
    """{seed: metric ``key``} of one row's records (NaN where a run has no value)."""
    values = seed_values(records, key)
    return dict(zip(sorted({int(r["seed"]) for r in records}), values, strict=True))


def _relative(rows: Mapping[str, Sequence[Mapping[str, Any]]], row: str, key: str, to: str, ratio: bool) -> Cell:
    """Per seed, ``key`` of ``row`` minus (or divided by) that of row ``to``; a Cell over the seeds."""
    mine, theirs = _by_seed(rows[row], key), _by_seed(rows[to], key)
    values = []
    for seed, value in mine.items():
        other = theirs.get(seed, math.nan)
        values.append(value / other if ratio and other > 0 else math.nan if ratio else value - other)
    return Cell.of(values)


def report(conds: Sequence[Condition], records: Sequence[Mapping[str, Any]]) -> TaskReport:
    """The table: one row per condition (:data:`ROWS`), cells over seeds; main: accuracy over the rows."""
    per = len(records) // max(len(conds), 1)
    if per * len(conds) != len(records) or per == 0:
        raise ValueError(f"{TASK}: {len(records)} records for {len(conds)} conditions (expected a multiple)")
    rows: dict[str, list[Mapping[str, Any]]] = {}
    for i, c in enumerate(conds):
        rows.setdefault(str(c.label("row")), []).extend(records[i * per : (i + 1) * per])
    table = []
    for row, rs in rows.items():
        cells = metric_cells(rs, METRICS[:4])
        if "single" in rows:
            cells["gain_vs_single"] = _relative(rows, row, "accuracy", "single", ratio=False)
        if "debate" in rows:
            cells["tokens_vs_debate"] = _relative(rows, row, "tokens", "debate", ratio=True)
        table.append((row, cells))
    main = Cell.of(seed_values(records, MAIN.key))  # per seed, the mean over the rows
    reference = (("fixed", {"gain_vs_single": "+0.109", "tokens_vs_debate": "0.786"}),)
    failed = sum(len(r.get("failed") or ()) for r in records)
    notes = [
        "The model answers every executor request; in `fixed` it also commits (the LLM coordinator); the other "
        "rows commit by majority vote (`single`: its one answer).",
        "Accuracy: the committed answer is the question's; no answer: the share of executor replies with no "
        "number (a committed answer can still be right when the others gave one); reward: ECON's shared reward "
        "0.5 TS + 0.3 AL + 0.2 CC.",
        "Reference: ECON (learned beliefs) in the paper (arXiv 2506.08292): +10.9 points over single-agent "
        "baselines and 21.4% fewer tokens than a three-round debate, on GSM8K/MATH with other models — "
        "comparable in direction only; the paper gives no absolute accuracy.",
        "Rows share their common samples (common random numbers): executor i at (0.7, 1.1) in round 1 is one "
        "request for `single`, `fixed` and `debate`.",
        f"The executors sample at their row's temperature (T = {BASE[0]:g}; majority vote {SCHEDULE[0]:g} to "
        f"{SCHEDULE[1]:g}), each request's seed fixed by its sample key: the card's sampling line (--temperature, "
        "--llm-seed) applies here to the `fixed` coordinator only.",
    ]
    if failed:
        notes.append(
            f"{failed} episode(s) failed (the endpoint gave no answer after the retries): left out of "
            "the cells, played again when the bench is resumed."
        )
    return TaskReport(METRICS, tuple(table), main, reference, _figure(table), tuple(notes))


BOUNDS = {m.key: m.bounds for m in METRICS}


def _figure(table: Sequence[tuple[str, Mapping[str, Cell]]]) -> dict[str, Any]:
    def series(key: str) -> dict[str, Any]:
        cells = [cells[key] for _, cells in table]
        return {
            "label": "",
            "x": list(range(len(cells))),
            "y": [c.mean for c in cells],
            "yerr": error_bars(cells, BOUNDS[key]),
            "style": {"fmt": "o"},
        }

    return {
        "panels": [
            {"ylabel": "accuracy", "series": [series("accuracy")]},
            {"ylabel": "tokens per question", "series": [series("tokens")]},
        ],
        "xlabel": "condition",
        "xticklabels": [row for row, _ in table],
        "title": "Belief coordination: the model as answerer",
    }


# ---------------------------------------------------------------------------
# The estimate
# ---------------------------------------------------------------------------
def _tokens(messages: Sequence[Mapping[str, str]]) -> float:
    return sum(len(m["content"]) for m in messages) / 4


def estimate(condition: Condition) -> Estimate:
    """Requests and tokens per request of one question of ``condition`` (module docstring)."""
    from eq_env.agents.belief_coordination.answerer import executor_messages
    from eq_env.agents.belief_coordination.coordinator import coordinator_messages

    config: BeliefCoordinationConfig = condition.config
    n, rounds = config.n_executors, config.rounds
    question = generated_question(0, 0, config.difficulty)
    base = AnswerRequest(question, BASE[0], BASE[1], 0)
    first = _tokens(executor_messages(base))
    later = _tokens(executor_messages(AnswerRequest(question, BASE[0], BASE[1], 0, 1, (TYPICAL_REPLY,) * (n - 1))))
    requests, prompt = n * rounds, n * first + n * (rounds - 1) * later
    if parse_policy_spec(condition.policy("coordinator"))[0] == "llm":  # the model commits: one request more
        requests += 1
        prompt += _tokens(coordinator_messages(question.text, "", n, "v1", [TYPICAL_REPLY] * n, [5760.0] * n))
    return Estimate(float(requests), prompt / requests, len(TYPICAL_REPLY) / 4)


TASKS: tuple[BenchTask, ...] = (
    BenchTask(
        name=TASK,
        title="Belief coordination: the model as answerer (fixed, majority vote, debate)",
        env="belief-coordination",
        main=MAIN,
        prompts=PROMPTS,
        conditions=conditions,
        seeds=seeds,
        report=report,
        estimate=estimate,
        reference_source="From Debate to Equilibrium: Belief-Driven Multi-Agent LLM Reasoning via Bayesian Nash "
        "Equilibrium (ECON, ICML 2025, arXiv 2506.08292): its claimed results, +10.9% over single-agent baselines "
        "and 21.4% fewer tokens than a three-round debate",
    ),
)
