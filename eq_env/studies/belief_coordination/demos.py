"""Fine-tuning demonstrations of belief coordination: its LLM parts, the answerer and the coordinator.

:func:`demonstrations` plays the questions of a split through the environment, in every condition of
``eq-env bench``'s task (:mod:`eq_env.studies.belief_coordination.bench`, battery ``bench-v1``: ``single``,
``fixed``, ``majority vote``, ``debate``), and yields one line per prompt a model would be sent there, in TRL
``SFTTrainer``'s (and OpenAI's) chat format::

    {"messages": [{"role": "system", ...}, {"role": "user", ...}, {"role": "assistant", "content": "...\\n#### 14"}],
     "meta": {"split": "train", "seed": 1000, "episode": 3, "role": "answerer", "prompt_version": "v1",
              "game": "belief-coordination", "verified": true, "reason": "", "qid": "gen-1000-3", ...}}

**answerer** — the executors' answerer (:class:`~eq_env.agents.belief_coordination.answerer.LLMAnswerer`): the
user and system messages are exactly :func:`~eq_env.agents.belief_coordination.answerer.executor_messages` of
the request the environment makes (recorded from the environment's own answerer call, so question, round and
the other solvers' previous replies are the environment's). The first round's prompt is the same for every
executor of every condition (T and p are sampling parameters, not in the prompt): one line per question,
``meta.asked_by`` listing the (row, executor, round) requests that send it; each debate round's prompt shows
the other executors' previous replies, which come from the environment's simulated answerer
(:class:`~eq_env.belief_coordination.answerers.SimulatedAnswerer`, the game's offline default: replies
``#### N``, right or wrong as the simulation draws them). The reply is the question's correct answer, worked
out: one line per sentence of the question, the running count after it (``She buys 5 more marbles: 12 + 5 =
17.``), then the final line ``#### N`` the answerer's parser reads
(:func:`~eq_env.belief_coordination.questions.final_number`).

**coordinator** — :class:`~eq_env.agents.belief_coordination.coordinator.LLMCoordinator`, in the conditions where
the model commits (``fixed``: three executors at (0.7, 1.1), one round): the messages are exactly
``LLMCoordinator.messages`` of the environment's coordinator observation (the executors' replies from the
simulated answerer; the numbers from its ``answers``). The target is the commitment that maximises the shared
reward 0.5·TS + 0.3·AL + 0.2·CC: a correct executor's answer whenever one exists (TS = 1 outweighs any
alignment), else the majority (the most common number; ties: the lowest executor), which is also what the
policy falls back to. The reply works the question out, says which solvers agree, and ends with
``#### N``; the policy's own reading (:func:`~eq_env.agents.belief_coordination.coordinator.read_commitment`, then
the lowest allowed executor with that number) must give the target executor — a line it refuses is a bug, and
raises. With no executor giving a number the policy asks nothing: no line (counted as ``not_asked``).

**verified** (``meta.verified``; ``meta.reason`` says why not, and is empty when it is): the answer the line
commits to is the question's correct answer — always for the answerer; for the coordinator, only when some
executor was right (else it commits the majority, the best it can do). Lines that fail are kept and counted
(:class:`DemoStats`), so they can be filtered out. ``meta.worked`` says whether the reply works the question
out (every generated question's text can be; one that could not be would be answered by its final line
alone).

**meta**, besides ``split``, ``seed``, ``episode``, ``role``, ``prompt_version``, ``game``, ``verified`` and
``reason``: the question (``qid``, ``question``, ``answer``, ``steps``, ``difficulty``), ``worked``; answerer —
``round``, ``others_values`` (the numbers of the other replies its prompt shows), ``asked_by`` ([row, executor,
round] of every request sending this prompt); coordinator — ``row``, ``values`` (each executor's number),
``executor`` and ``committed`` (the target), ``majority`` (the majority's executor), ``reward`` (the target's
shared reward).

**Splits, disjoint from the benchmark.** Questions are the game's generated ones: episode i of seed s is
always :func:`~eq_env.belief_coordination.questions.generated_question` ``(s, i)``, and the simulated answers
are that episode's draws.

* ``test``: the bench's own questions: the first ``episodes`` (at most the full battery's 100) of each of the
  full battery's seeds 0–4 (the quick battery's 3 seeds × 8 questions are among them);
* ``train`` (default): questions 0, 1, … of ``seed`` (default :data:`TRAIN_SEED`), skipping every question whose
  text is that of a question the bench plays (both batteries, :func:`bench_questions`) or that
  ``eq-env reproduce``'s default evaluation holds out (its seeds 0–4 × 2,000 questions,
  :func:`held_out_questions`), computed from their own code; skipped questions are counted
  (``bench_collisions``). Texts are compared, not indices: a short question can be drawn under two seeds, and
  it is the text a model learns.

The same arguments always give the same lines (every draw is seeded; no clock is read).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from eq_env.core.demos import SPLITS, RoleDemoStats, check_request

__all__ = [
    "DEFAULT_EPISODES",
    "GAME",
    "ROLES",
    "SPLITS",
    "TRAIN_SEED",
    "BenchCondition",
    "DemoStats",
    "bench_conditions",
    "bench_questions",
    "demonstrations",
    "held_out_questions",
    "worked_solution",
]

GAME = "belief-coordination"
ROLES = ("answerer", "coordinator")
TRAIN_SEED = 1000  # the train split's default seed: none of the bench's (0-4) or reproduce's
DEFAULT_EPISODES = 100  # questions per seed (the full battery asks 100 per seed)
MAX_EPISODES = 1_000_000
COORDINATOR = "coordinator"
_DEMO_MODEL = "demo"  # the model name the bench's conditions are written for (only their settings are read)
_SYMBOLS = {"+": "+", "-": "-", "*": "x", "/": "/"}


class DemoStats(RoleDemoStats):
    """What a :func:`demonstrations` run did: lines per role, lines not verified (per role), train questions
    skipped as bench or held-out questions (``bench_collisions``), coordinator decisions not asked (no executor
    gave a number), requests merged into one line (the same prompt), whether the test split was clipped."""

    ROLES = ROLES
    NOT_ASKED = "coordinator decision(s) not asked (no executor gave a number)"
    MERGED = "request(s) with the same prompt merged"
    COLLISIONS = "train question(s) skipped: bench or held-out questions"
    CLIPPED = "test split clipped to the bench's questions per seed"


# ---------------------------------------------------------------------------
# The bench: its conditions and questions
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchCondition:
    """One row of the bench's task: its game and each executor's (T, p), and whether the model commits."""

    row: str
    config: Any  # BeliefCoordinationConfig
    sampling: tuple[tuple[float, float], ...]  # (T, p) of each executor
    llm_coordinator: bool


def _sampling(kwargs: dict[str, Any], n: int) -> tuple[tuple[float, float], ...]:
    """Each executor's (T, p), as :meth:`~eq_env.agents.belief_coordination.executor.LLMExecutor.sampling`
    gives them for the spec's parameters."""
    from eq_env.belief_coordination.questions import BASELINE_SAMPLING

    t, p = float(kwargs.get("temperature", BASELINE_SAMPLING[0])), float(kwargs.get("penalty", BASELINE_SAMPLING[1]))
    high = kwargs.get("t_high")
    if high is None:
        return ((t, p),) * n
    temps = np.linspace(t, float(high), n) if n > 1 else np.array([(t + float(high)) / 2])
    return tuple((float(x), p) for x in temps)


@functools.cache
def bench_conditions() -> tuple[BenchCondition, ...]:
    """The bench task's rows in the full battery (:func:`eq_env.studies.belief_coordination.bench.conditions`)."""
    from eq_env.core.bench import BenchModel
    from eq_env.core.policy import parse_policy_spec
    from eq_env.studies.belief_coordination import bench

    out = []
    for c in bench.conditions(BenchModel(_DEMO_MODEL), quick=False):
        name, kwargs = parse_policy_spec(c.policy("executor"))
        if name != "llm":
            raise AssertionError(f"the bench's executors are not the llm policy: {c.policy('executor')!r}")
        llm = parse_policy_spec(c.policy(COORDINATOR))[0] == "llm"
        out.append(BenchCondition(str(c.label("row")), c.config, _sampling(kwargs, c.config.n_executors), llm))
    return tuple(out)


def _difficulty() -> float | None:
    (difficulty,) = {c.config.difficulty for c in bench_conditions()}
    return difficulty  # type: ignore[no-any-return]


@functools.cache
def bench_questions() -> frozenset[str]:
    """The texts of every question the bench asks (the quick and the full battery)."""
    from eq_env.belief_coordination.questions import generated_question
    from eq_env.studies.belief_coordination import bench

    difficulty = _difficulty()
    return frozenset(
        generated_question(s, i, difficulty).text
        for quick in (True, False)
        for s in bench.seeds(quick)
        for i in range(bench.questions(quick))
    )


@functools.cache
def held_out_questions() -> frozenset[str]:
    """The texts of the questions ``eq-env reproduce`` evaluates on by default (its seeds × its questions)."""
    from eq_env.belief_coordination.config import BeliefCoordinationConfig
    from eq_env.belief_coordination.questions import generated_question
    from eq_env.studies.belief_coordination.reproduce import Options

    opts, difficulty = Options(), BeliefCoordinationConfig().difficulty
    return frozenset(generated_question(s, i, difficulty).text for s in opts.seeds for i in range(opts.questions))


def _questions(split: str, episodes: int, seed: int, stats: DemoStats) -> Iterator[tuple[int, int]]:
    """The (seed, episode) pairs of the split's questions, seed by seed, in episode order."""
    from eq_env.belief_coordination.questions import generated_question
    from eq_env.studies.belief_coordination import bench

    if split == "test":
        per_seed = bench.questions(False)
        stats.test_clipped = stats.test_clipped or episodes > per_seed
        for s in bench.seeds(False):
            for i in range(min(episodes, per_seed)):
                yield s, i
        return
    excluded, difficulty = bench_questions() | held_out_questions(), _difficulty()
    found, i = 0, 0
    while found < episodes:
        if generated_question(seed, i, difficulty).text in excluded:
            stats.bench_collisions += 1
        else:
            found += 1
            yield seed, i
        i += 1


# ---------------------------------------------------------------------------
# Working a question out
# ---------------------------------------------------------------------------
def _apply(value: int, op: str, k: int) -> int | None:
    if op == "+":
        return value + k
    if op == "-":
        return value - k
    if op == "*":
        return value * k
    return value // k if k and value % k == 0 else None


def worked_solution(text: str) -> tuple[list[str], int] | None:
    """A generated question worked out: a line per sentence (its running count after it) and the answer; None
    for a text the generator did not write, or one whose reading is not exact (as
    :func:`~eq_env.belief_coordination.questions.read_generated` reads it, sentence by sentence)."""
    from eq_env.belief_coordination.questions import _sentence_patterns, read_generated

    expected = read_generated(text)
    if expected is None:
        return None
    *sentences, _ = re.split(r"(?<=[.?]) ", text.strip())
    lines: list[str] = []
    value = 0
    for i, sentence in enumerate(sentences):
        patterns = [(op, p) for op, p in _sentence_patterns() if (op == "=") == (i == 0)]
        readings = {(op, int(m.group("k"))) for op, p in patterns if (m := p.fullmatch(sentence))}
        if len(readings) != 1:
            return None
        ((op, k),) = readings
        if op == "=":
            value = k
            lines.append(sentence)
            continue
        after = _apply(value, op, k)
        if after is None:
            return None
        lines.append(f"{sentence[:-1]}: {value} {_SYMBOLS[op]} {k} = {after}.")
        value = after
    return (lines, value) if value == expected else None


def _worked(question: Any) -> list[str]:
    """The working lines of ``question``: empty when its text cannot be worked out step by step (the reply then
    gives the answer alone), or when the working does not reach the question's answer."""
    from eq_env.belief_coordination.rules import equal

    solved = worked_solution(question.text)
    if solved is None:
        return []
    lines, value = solved
    return lines if bool(equal(np.array(float(value)), np.array(float(question.answer)))) else []


# ---------------------------------------------------------------------------
# Playing a question
# ---------------------------------------------------------------------------
class _Recording:
    """The environment's answerer (the simulated one), keeping every request it is asked."""

    def __init__(self, answerer: Any) -> None:
        self.answerer = answerer
        self.name = answerer.name
        self.requests: list[Any] = []

    def answer(self, requests: Sequence[Any]) -> list[Any]:
        self.requests.extend(requests)
        return list(self.answerer.answer(requests))


@dataclass
class _Played:
    """One condition of one question: the requests its executors made, and the coordinator's observation."""

    condition: BenchCondition
    requests: list[Any]
    coordinator: dict[str, Any]
    question: Any


def _play(condition: BenchCondition, seed: int, episode: int) -> _Played:
    from eq_env import belief_coordination_v0
    from eq_env.baselines.belief_coordination.scripted import as_action
    from eq_env.belief_coordination.answerers import SimulatedAnswerer

    recording = _Recording(SimulatedAnswerer(condition.config.simulation()))
    env = belief_coordination_v0.parallel_env(config=condition.config, answerer=recording)
    observations, _ = env.reset(seed=seed, options={"episode": episode})
    game = env.unwrapped
    while game.answering:
        actions = {
            agent: as_action(observations[agent], *condition.sampling[i])
            for i, agent in enumerate(condition.config.executors)
        }
        observations, *_ = env.step(actions)
    return _Played(condition, recording.requests, observations[COORDINATOR], game.question)


def _answerer_lines(
    played: Sequence[_Played], split: str, seed: int, episode: int, version: str, stats: DemoStats
) -> list[dict[str, Any]]:
    """One line per distinct executor prompt of the question, over every condition."""
    from eq_env.agents.belief_coordination.answerer import executor_messages
    from eq_env.belief_coordination.questions import final_number, show_number
    from eq_env.belief_coordination.rules import equal

    question = played[0].question
    working = _worked(question)
    reply = "\n".join([*working, f"#### {show_number(question.answer)}"])
    read = final_number(reply)
    if read is None or not bool(equal(np.array(read), np.array(float(question.answer)))):
        raise AssertionError(f"the answerer's parser reads {read!r} from the reply written for {question.answer!r}")
    lines: dict[str, dict[str, Any]] = {}
    for p in played:
        for request in p.requests:
            messages = executor_messages(request, version)
            asker = [p.condition.row, request.executor, request.round]
            prompt = messages[-1]["content"]
            if prompt in lines:
                lines[prompt]["meta"]["asked_by"].append(asker)
                stats.merged += 1
                continue
            meta = {
                "split": split,
                "seed": seed,
                "episode": episode,
                "role": "answerer",
                "prompt_version": version,
                "game": GAME,
                "verified": True,  # (its reply is the question's answer, as the parser reads it: asserted above)
                "reason": "",
                "qid": question.qid,
                "question": question.text,
                "answer": question.answer,
                "steps": question.steps,
                "difficulty": question.difficulty,
                "worked": bool(working),
                "round": request.round,
                "others_values": list(request.others_values),
                "asked_by": [asker],
            }
            lines[prompt] = {"messages": [*messages, {"role": "assistant", "content": reply}], "meta": meta}
    for line in lines.values():
        stats.lines["answerer"] += 1
        stats.unverified["answerer"] += not line["meta"]["verified"]
    return list(lines.values())


def _target(values: Sequence[float | None], allowed: Sequence[int], gold: float) -> tuple[int | None, bool]:
    """The commitment that maximises the shared reward: the lowest allowed executor with the correct answer
    (True), else the majority (False); None when no allowed executor gave a number."""
    from eq_env.agents.belief_coordination.coordinator import majority
    from eq_env.belief_coordination.rules import equal

    right = [i for i in allowed if values[i] is not None and bool(equal(np.array(values[i]), np.array(gold)))]
    if right:
        return right[0], True
    return majority(values, allowed), False


def _coordinator_reply(
    working: list[str], values: Sequence[float | None], target: int, correct: bool, gold: float
) -> str:
    from eq_env.belief_coordination.questions import show_number
    from eq_env.belief_coordination.rules import equal

    value = values[target]
    assert value is not None
    agreeing = [str(i) for i, v in enumerate(values) if v is not None and bool(equal(np.array(v), np.array(value)))]
    who = f"solver {agreeing[0]}" if len(agreeing) == 1 else f"solvers {', '.join(agreeing[:-1])} and {agreeing[-1]}"
    shown = show_number(value)
    if correct:
        verdict = f"That gives {shown}, the answer of {who}." if working else f"{shown} is the answer of {who}."
    elif working:
        verdict = f"That gives {show_number(gold)}, which no solver reached; the most common answer is {shown} ({who})."
    else:
        verdict = f"The most common answer is {shown} ({who})."
    return "\n".join([*working, verdict, f"#### {shown}"])


def _committed_executor(reply: str, values: Sequence[float | None], allowed: Sequence[int]) -> int | None:
    """The executor ``LLMCoordinator`` plays for ``reply``: the lowest allowed one whose number equals its
    commitment (:func:`~eq_env.agents.belief_coordination.coordinator.read_commitment`); None: it refuses it."""
    from eq_env.agents.belief_coordination.coordinator import read_commitment
    from eq_env.belief_coordination.rules import ATOL, RTOL

    value = read_commitment(reply)
    given = [(i, v) for i in allowed if (v := values[i]) is not None]
    return next((i for i, v in given if abs(value - v) <= ATOL + RTOL * abs(v)), None)


def _coordinator_line(
    p: _Played, split: str, seed: int, episode: int, version: str, stats: DemoStats
) -> dict[str, Any] | None:
    from eq_env.agents.belief_coordination.coordinator import coordinator_messages, parse_answers
    from eq_env.belief_coordination import rules

    observation, question = p.coordinator, p.question
    mask = np.asarray(observation["action_mask"])
    n = len(mask)
    values = parse_answers(str(observation["answers"]), n)
    allowed = [i for i in range(n) if mask[i]]
    target, correct = _target(values, allowed, float(question.answer))
    if target is None:  # no executor gave a number: the policy asks nothing
        stats.not_asked += 1
        return None
    # exactly LLMCoordinator.messages(observation)
    messages = coordinator_messages(
        str(observation["question"]),
        str(observation.get("transcript", "")),
        n,
        version,
        [str(r) for r in observation["replies"]],
        values,
    )
    working = _worked(question)
    reply = _coordinator_reply(working, values, target, correct, float(question.answer))
    played = _committed_executor(reply, values, allowed)
    if played != target:
        raise AssertionError(f"the coordinator's reading plays executor {played}, the target is {target}: {reply!r}")
    numbers = np.array([[np.nan if v is None else v for v in values]])
    gold = np.array([float(question.answer)])
    rewards = [
        float(rules.reward(rules.reward_terms(numbers, np.array([i]), gold), p.condition.config.weights)[0])
        for i in range(n)
    ]
    if rewards[target] < max(rewards) - 1e-12:
        raise AssertionError(f"executor {target} is not the best commitment: rewards {rewards}")
    meta = {
        "split": split,
        "seed": seed,
        "episode": episode,
        "role": "coordinator",
        "prompt_version": version,
        "game": GAME,
        "verified": correct,
        "reason": "" if correct else "no executor gave the correct answer: the majority is committed",
        "qid": question.qid,
        "question": question.text,
        "answer": question.answer,
        "steps": question.steps,
        "difficulty": question.difficulty,
        "worked": bool(working),
        "row": p.condition.row,
        "values": values,
        "executor": target,
        "committed": values[target],
        "majority": rules.majority(numbers)[0].item(),
        "reward": rewards[target],
    }
    stats.lines["coordinator"] += 1
    stats.unverified["coordinator"] += not correct
    return {"messages": [*messages, {"role": "assistant", "content": reply}], "meta": meta}


# ---------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------
def _checked(roles: Sequence[str] | None, episodes: int, seed: int, split: str, prompt_version: str) -> tuple[str, ...]:
    """The roles asked for, once each in :data:`ROLES` order; a ValueError naming a bad argument."""
    from eq_env.agents.belief_coordination.answerer import PROMPT_DIR
    from eq_env.agents.llm import template_versions

    wanted = check_request(roles, ROLES, episodes, MAX_EPISODES, seed, split)
    for role in wanted:
        template = "executor" if role == "answerer" else "coordinator"
        versions = template_versions(PROMPT_DIR, template)
        if prompt_version not in versions:
            raise ValueError(
                f"prompt_version {prompt_version!r} has no {template} template (its versions: {', '.join(versions)})"
            )
    return wanted


def demonstrations(
    roles: Sequence[str] | None = None,
    episodes: int = DEFAULT_EPISODES,
    seed: int = TRAIN_SEED,
    *,
    split: str = "train",
    prompt_version: str = "v1",
    stats: DemoStats | None = None,
) -> Iterator[dict[str, Any]]:
    """The demonstration lines (dicts; see the module docstring), question by question (seed, then episode),
    each question's answerer lines (``roles``: ``answerer``, ``coordinator``, default both) before its
    coordinator line.

    ``split``: ``"train"`` — ``episodes`` questions of ``seed``, bench and held-out questions skipped;
    ``"test"`` — the bench's seeds, the first ``episodes`` (at most 100) questions of each (``seed`` is not
    used). ``prompt_version``: the templates' version (``executor_<v>``, ``coordinator_<v>``). ``stats`` (a
    :class:`DemoStats`) is filled as it goes. A ValueError names a bad argument before anything is played.
    """
    wanted = _checked(roles, episodes, seed, split, prompt_version)
    stats = stats if stats is not None else DemoStats()
    return _lines(wanted, episodes, seed, split, prompt_version, stats)


def _lines(
    roles: tuple[str, ...], episodes: int, seed: int, split: str, version: str, stats: DemoStats
) -> Iterator[dict[str, Any]]:
    conditions = bench_conditions()
    for s, i in _questions(split, episodes, seed, stats):
        wanted = conditions if "answerer" in roles else [c for c in conditions if c.llm_coordinator]
        played = [_play(c, s, i) for c in wanted]
        if "answerer" in roles:
            yield from _answerer_lines(played, split, s, i, version, stats)
        if "coordinator" in roles:
            for p in played:
                if p.condition.llm_coordinator:
                    line = _coordinator_line(p, split, s, i, version, stats)
                    if line is not None:
                        yield line
