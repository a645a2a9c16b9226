"""The collaborative Einstein puzzle's tasks of ``eq-env bench`` (battery ``bench-v1``).

Two tasks score a model as an Einstein puzzle player (policy ``llm``, the text observation in, one action of
the grammar out; :mod:`eq_env.agents.einstein_puzzle.policies`), each with and without the paper's reasoning
verifier (``llm:...,verifier=reasoning,k=4``: four candidates in one request, the first the verifier
accepts is played), in each communication mode:

================================  ========================================================================
task                              seats
================================  ========================================================================
``einstein-puzzle/both-seats``    the model in both seats (``player_0`` and ``player_1``), as in the paper
``einstein-puzzle/with-planner``  the model as ``player_0`` (bottom row, moves first); the decentralised
                                  planner (``planner``, :class:`eq_env.baselines.einstein_puzzle.scripted.Planner`)
                                  as ``player_1``
================================  ========================================================================

**Sizes** (every condition is played on each of the seeds :data:`SEEDS`, the same in both sizes):

* **quick** — n = 4, verifier none and reasoning, 2 episodes per condition and seed; both-seats in
  provide & seek and none (4 conditions, 24 games), with-planner in provide & seek (2 conditions, 12 games);
* **full** — n = 4…8, every comm mode, verifier none and reasoning, 10 episodes per condition and seed; 40
  conditions (1,200 games) per task.

The quick battery asks a good model about 260 requests (the estimate below: 204 for both-seats, 60 for
with-planner; the scripted good model of the tests made 200 and 56), a few minutes against a real
endpoint, and stays under 400 for a model up to half again as slow as the planner; the full one about
25,000 (16,480 and 8,580; :func:`battery_requests`), each request a prompt of about 540–730 tokens. The
quick battery plays the two ends of communication (everything against nothing: where the paper's humans
were measured) and, with the planner, provide & seek only; the full one every mode and n = 4…8 (the paper
trains on 4–6 objects and tests on 7–8). Two games per condition and seed make the quick battery's
intervals wide: it is a smoke test of a model, the full battery its score.

**Puzzles.** The frozen test suite's (``einstein-suite-v1``, :mod:`eq_env.einstein_puzzle.suite`: 300
puzzles for each n = 4…8, the paper's test set), the seeds playing disjoint slices of it
(``suite_stride`` = the episodes per seed): seed s plays puzzles s·E to s·E + E − 1 of each n, E = 2
(quick) or 10 (full) — the quick battery's 3 seeds puzzles 0–5, the full battery's puzzles 0–29.

**Metrics** (per game, :data:`eq_env.einstein_puzzle.records.METRICS`; a row pools its conditions over n,
each seed's value the mean over them, and the cell is the mean over seeds with a 95% Student-t interval):

* ``success_rate`` — games won / games (higher is better). **The main metric**: over every condition of the
  task (the mean over conditions per seed, then over seeds).
* ``steps`` — turns of the games won (neither way: a row that wins only easy games has few).
* ``rejected_placements`` — wrong placements the environment refused, per game (lower is better).
* ``rule_inconsistent`` — actions the reasoning verifier rejects (illegal ones included), per game
  (lower is better).
* ``partial_success`` — objects placed in their goal bins / n, per game (higher is better).

A row per comm mode and verifier (``provide & seek, no verifier``...), then a row per comm mode with the
reasoning verifier's gain in success rate (the per-seed difference, with − without). Failed episodes (an
endpoint that did not answer after its retries) are left out of the metrics and listed in the records.

**Reference numbers** (:data:`REFERENCE_SOURCE`; both-seats task only, since the paper has no planner
partner): the reasoning verifier's gain of +10 to +40 points of success across action spaces (fine-tuned
Llama 3.1 8B and Qwen 2.5 7B on its 300 test games, which are not public); the human study's pairs:
success 0.922 (provide & seek), 0.911 (none), 0.778 (provide only), steps 18.99 and 18.76, rejected
placements 1.92 and 3.64 per game; no-communication agents above 0.81 for some Llama variants. They are
the paper's players on the paper's puzzles: what compares is the direction and rough size of the effects,
not the digits.

**Estimate** (:func:`estimate`, per episode, for ``--dry-run`` and ``--max-usd``): the planner plays the
condition's first :data:`ESTIMATE_EPISODES` games of the first seed in both seats (a good model's pace:
it plays as the scripted good model does), and the model's prompt is rendered from its seat's real text
observation at each of its turns (:func:`eq_env.agents.einstein_puzzle.prompt.render_messages` with the spec's
prompt version and reasoning flag): requests are the model's turns per game, prompt tokens the mean
rendered length at four characters a token, completion tokens the length of the action played (plus
:data:`REASONING_TOKENS` of thinking with ``reasoning=true``), times ``k`` samples with a verifier (one
request with ``n=k``; an endpoint that serves one sample per request gets ``k`` requests instead). A
weaker model takes more turns, up to the step limit (30; 40 at n = 8), and re-asks its invalid replies.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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
from eq_env.core.policy import parse_policy_spec
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.rules import COMM_MODES

__all__ = [
    "BOTH_SEATS",
    "METRICS",
    "REFERENCE_SOURCE",
    "SEEDS",
    "TASKS",
    "WITH_PLANNER",
    "battery_requests",
    "estimate",
]

SEEDS = (0, 1, 2)  # bench-v1's seeds, both sizes: seed s plays the suite's s-th slice of E puzzles
VERIFIERS = ("none", "reasoning")
K = 4  # candidates the verifier screens, as in the paper and reproduce.py
QUICK_SIZES, FULL_SIZES = (4,), (4, 5, 6, 7, 8)
QUICK_EPISODES, FULL_EPISODES = 2, 10
QUICK_MODES = {"both-seats": ("provide_and_seek", "none"), "with-planner": ("provide_and_seek",)}
PARTNER = "planner"
MODE_NAMES = {
    "provide_and_seek": "provide & seek",
    "provide_only": "provide only",
    "seek_only": "seek only",
    "none": "none",
}
PROMPTS = ("einstein-puzzle player v1",)

METRICS = (
    Metric("success_rate", "success rate", bounds=RATE),
    Metric("steps", "steps (won games)", None, digits=1, bounds=COUNT),
    Metric("rejected_placements", "rejected placements / game", False, digits=2, bounds=COUNT),
    Metric("rule_inconsistent", "rule-inconsistent actions / game", False, digits=2, bounds=COUNT),
    Metric("partial_success", "partial success", bounds=RATE),
)
MAIN = METRICS[0]

REFERENCE_SOURCE = (
    'Peng et al., "Communication and Verification in LLM Agents towards Collaboration under Information '
    "Asymmetry\" (arXiv 2510.25595): the reasoning verifier's gain (+10 to +40 points of success across action "
    "spaces, fine-tuned Llama 3.1 8B and Qwen 2.5 7B, 300 test games), no-communication agents above 81% (some "
    "Llama variants), and the human study (success, steps and rejected placements by comm mode)"
)
# (comm mode, verifier) -> the paper's numbers beside the both-seats row
_REFERENCE: dict[tuple[str, str], dict[str, str]] = {
    ("provide_and_seek", "none"): {
        "success_rate": "0.922 (humans)",
        "steps": "18.99 (humans)",
        "rejected_placements": "1.92 (humans)",
    },
    ("none", "none"): {
        "success_rate": "0.911 (humans); > 0.81 (fine-tuned Llama)",
        "steps": "18.76 (humans)",
        "rejected_placements": "3.64 (humans)",
    },
    ("provide_only", "none"): {"success_rate": "0.778 (humans)"},
}
PAPER_GAIN = "+0.10 to +0.40 (fine-tuned 8B models)"

ESTIMATE_EPISODES = 3
REASONING_TOKENS = 150  # an assumed typical thinking length with reasoning=true (the cap: max_tokens 1024)


# ---------------------------------------------------------------------------
# Conditions
# ---------------------------------------------------------------------------
def _modes(task: str, quick: bool) -> tuple[str, ...]:
    return QUICK_MODES[task] if quick else COMM_MODES


def row_label(mode: str, verifier: str) -> str:
    return f"{MODE_NAMES[mode]}, {'reasoning verifier' if verifier == 'reasoning' else 'no verifier'}"


def gain_label(mode: str) -> str:
    return f"{MODE_NAMES[mode]}: reasoning verifier's gain"


def _player(model: BenchModel, verifier: str) -> str:
    return model.spec("llm") if verifier == "none" else model.spec("llm", verifier=verifier, k=K)


def _conditions(task: str, model: BenchModel, quick: bool) -> list[Condition]:
    episodes = QUICK_EPISODES if quick else FULL_EPISODES
    out = []
    for mode in _modes(task, quick):
        for verifier in VERIFIERS:
            player = _player(model, verifier)
            seats = {"player_0": player, "player_1": player if task == "both-seats" else PARTNER}
            for n in QUICK_SIZES if quick else FULL_SIZES:
                labels = (
                    ("task", task),
                    ("row", row_label(mode, verifier)),
                    ("comm_mode", mode),
                    ("verifier", verifier),
                    ("n", n),
                )
                config = EinsteinPuzzleConfig(n=n, comm_mode=mode, puzzles="suite", suite_stride=episodes)
                out.append(Condition(config, seats, episodes, labels))
    return out


def _seeds(quick: bool) -> tuple[int, ...]:
    return SEEDS


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------
def _where(**labels: Any) -> Callable[[Mapping[str, Any]], bool]:
    """A filter of the records whose labels have these values."""

    def keep(record: Mapping[str, Any]) -> bool:
        mine = record.get("labels", {})
        return all(mine.get(k) == v for k, v in labels.items())

    return keep


def _rows(records: Sequence[Mapping[str, Any]], modes: Sequence[str]) -> list[tuple[str, Mapping[str, Cell]]]:
    rows: list[tuple[str, Mapping[str, Cell]]] = []
    for mode in modes:
        for verifier in VERIFIERS:
            label = row_label(mode, verifier)
            rows.append((label, metric_cells(records, METRICS, where=_where(row=label))))
    for mode in modes:  # the gain, paired by seed (every condition of a seed plays the same puzzles)
        per = {v: seed_values(records, MAIN.key, where=_where(comm_mode=mode, verifier=v)) for v in VERIFIERS}
        gains = [w - o for w, o in zip(per["reasoning"], per["none"], strict=True)]
        rows.append((gain_label(mode), {MAIN.key: Cell.of(gains)}))
    return rows


def _reference(task: str, modes: Sequence[str]) -> tuple[tuple[str, Mapping[str, str]], ...]:
    if task != "both-seats":
        return ()
    out = [(row_label(m, v), _REFERENCE[(m, v)]) for m in modes for v in VERIFIERS if (m, v) in _REFERENCE]
    return (*out, *((gain_label(m), {MAIN.key: PAPER_GAIN}) for m in modes))


def _figure(records: Sequence[Mapping[str, Any]], modes: Sequence[str], sizes: Sequence[int]) -> dict[str, Any] | None:
    if len(sizes) < 2:
        return None
    panels = []
    for verifier in VERIFIERS:
        series = []
        for mode in modes:
            cells = [
                Cell.of(seed_values(records, MAIN.key, where=_where(comm_mode=mode, verifier=verifier, n=n)))
                for n in sizes
            ]
            series.append(
                {
                    "label": MODE_NAMES[mode],
                    "x": list(sizes),
                    "y": [c.mean for c in cells],
                    "yerr": error_bars(cells, MAIN.bounds),
                }
            )
        title = "reasoning verifier" if verifier == "reasoning" else "no verifier"
        panels.append({"ylabel": f"success rate, {title}", "series": series})
    return {"panels": panels, "xlabel": "objects n", "title": "Success against n (95% intervals over seeds)"}


def _report(task: str, conditions: Sequence[Condition], records: Sequence[Mapping[str, Any]]) -> TaskReport:
    if len(conditions) == 0 or len(records) % len(conditions):
        raise ValueError(f"{task}: {len(records)} records for {len(conditions)} conditions; expected a multiple")
    modes = tuple(dict.fromkeys(c.label("comm_mode") for c in conditions))
    sizes = tuple(sorted({int(c.label("n")) for c in conditions}))
    failed = sum(len(r.get("failed") or []) for r in records)
    seat = (
        "the model in both seats"
        if task == "both-seats"
        else "the model as player_0 (bottom row, moves first), the planner as player_1"
    )
    notes = [
        f"{seat}; n = {', '.join(map(str, sizes))}; {conditions[0].episodes} puzzles of the frozen test suite per "
        f"condition and seed, each seed its own slice "
        f"(seeds {', '.join(map(str, SEEDS[: len(records) // len(conditions)]))}).",
        "A row pools its conditions over n; the gain rows are the per-seed difference in success rate, with "
        "the reasoning verifier (k = 4 candidates) minus without.",
    ]
    if task == "both-seats":
        notes.append(
            "The reference numbers are the paper's human pairs and fine-tuned 8B models on its own "
            "puzzles: compare directions and rough sizes, not digits."
        )
    else:
        notes.append(
            "The paper has no planner partner: no reference numbers. A model that hands its partner "
            "what it needs scores as high as the planner with itself."
        )
    if failed:
        notes.append(
            f"{failed} episode(s) failed (the endpoint did not answer after its retries): left out of "
            "the metrics, listed in the records."
        )
    return TaskReport(
        metrics=METRICS,
        rows=tuple(_rows(records, modes)),
        main=Cell.of(seed_values(records, MAIN.key)),
        reference=_reference(task, modes),
        figure=_figure(records, modes, sizes),
        notes=tuple(notes),
    )


# ---------------------------------------------------------------------------
# Estimate
# ---------------------------------------------------------------------------
def _policy_seats(condition: Condition) -> tuple[str, ...]:
    return tuple(role for role, spec in condition.policies if parse_policy_spec(spec)[0] == "llm")


@functools.lru_cache(maxsize=256)
def _turns(config: EinsteinPuzzleConfig, seats: tuple[str, ...], version: str, reasoning: bool) -> tuple[float, ...]:
    """(model turns per game, prompt characters per turn, action characters per turn): the planner's games
    of the condition's first seed, the model's prompt rendered at each of its seats' turns."""
    from eq_env import einstein_puzzle_v0
    from eq_env.agents.einstein_puzzle.prompt import render_messages
    from eq_env.core.policy import make_policy
    from eq_env.einstein_puzzle.spaces import actions, n_from_actions
    from eq_env.einstein_puzzle.spec import ID

    env = einstein_puzzle_v0.env(config=config)
    planners = {role: make_policy(PARTNER, role, ID) for role in ("player_0", "player_1")}
    turns = prompt = reply = 0
    for episode in range(ESTIMATE_EPISODES):
        env.reset(seed=SEEDS[0], options={"episode": episode})
        for role in planners.values():
            role.reset(seed=SEEDS[0])
        for agent in env.agent_iter():
            observation, _, termination, truncation, _ = env.last()
            if termination or truncation:
                env.step(None)
                continue
            index = int(planners[agent].act(observation))
            if agent in seats:
                turns += 1
                messages = render_messages(str(observation["text"]), version, reasoning=reasoning)
                prompt += sum(len(m["content"]) for m in messages)
                reply += len(actions(n_from_actions(len(observation["action_mask"])))[index].text())
            env.step(index)
    return turns / ESTIMATE_EPISODES, prompt / max(turns, 1), reply / max(turns, 1)


def estimate(condition: Condition) -> Estimate:
    """What one episode of ``condition`` asks of the model (see the module docstring)."""
    seats = _policy_seats(condition)
    if not seats:
        return Estimate(0.0, 0.0, 0.0)
    _, params = parse_policy_spec(condition.policy(seats[0]))
    reasoning = bool(params.get("reasoning", False))
    version = str(params.get("prompt_version") or "v1")
    samples = int(params.get("k") or K) if "verifier" in params or "k" in params else 1
    turns, prompt_chars, reply_chars = _turns(condition.config, seats, version, reasoning)
    completion = reply_chars / 4 + (REASONING_TOKENS if reasoning else 0)
    return Estimate(requests=turns, prompt_tokens=prompt_chars / 4, completion_tokens=samples * completion)


def battery_requests(task: BenchTask, quick: bool, model: BenchModel | None = None) -> float:
    """The requests the task's battery is estimated to ask of a good model (estimate × episodes × seeds)."""
    model = model or BenchModel("any", "http://127.0.0.1:9/v1")
    seeds = len(task.seeds(quick))
    return math.fsum(estimate(c).requests * c.episodes * seeds for c in task.conditions(model, quick))


# ---------------------------------------------------------------------------
# The tasks
# ---------------------------------------------------------------------------
def _task(name: str, title: str) -> BenchTask:
    return BenchTask(
        name=f"einstein-puzzle/{name}",
        title=title,
        env=EinsteinPuzzleConfig.NAME,
        main=MAIN,
        prompts=PROMPTS,
        conditions=lambda model, quick: _conditions(name, model, quick),
        seeds=_seeds,
        report=lambda conditions, records: _report(name, conditions, records),
        estimate=estimate,
        reference_source=REFERENCE_SOURCE,
    )


BOTH_SEATS = _task(
    "both-seats", "Einstein puzzle: the model in both seats, by comm mode, with and without the reasoning verifier"
)
WITH_PLANNER = _task(
    "with-planner",
    "Einstein puzzle: the model (player_0) with the planner as partner, by comm "
    "mode, with and without the reasoning verifier",
)
TASKS: tuple[BenchTask, ...] = (BOTH_SEATS, WITH_PLANNER)
