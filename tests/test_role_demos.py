"""Fine-tuning demonstrations of the LLM roles of exchange–audit and belief coordination.

For both games: the lines' prompts are what the LLM policies send — checked by playing the bench's own
conditions through the package's runner with the policy classes themselves (their clients answering from the
demonstrations, so every prompt a policy renders must be a line's, and every line's reply must parse into the
target action); the same arguments give the same bytes; the train split holds no state or question the bench
plays (its set computed here from the bench's own code), the test split holds exactly the bench's; bad
arguments are one ValueError.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from eq_env.agents.belief_coordination.answerer import LLMAnswerer
from eq_env.agents.belief_coordination.coordinator import LLMCoordinator
from eq_env.agents.belief_coordination.executor import LLMExecutor
from eq_env.agents.client import Completion
from eq_env.agents.exchange_audit.policies import LLMProposer, LLMValidator
from eq_env.agents.exchange_audit.schema import parse_proposer_reply, parse_validator_reply
from eq_env.belief_coordination.answerers import SimulatedAnswerer
from eq_env.belief_coordination.questions import final_number, generated_question
from eq_env.core.bench import BenchModel
from eq_env.core.policy import parse_policy_spec
from eq_env.core.runner import play as core_play
from eq_env.exchange_audit.rules import DrawStream
from eq_env.exchange_audit.runner import play as ea_play
from eq_env.studies.belief_coordination import bench as bc_bench
from eq_env.studies.belief_coordination import demos as bc
from eq_env.studies.exchange_audit import bench as ea_bench
from eq_env.studies.exchange_audit import demos as ea

URL = "http://127.0.0.1:9/v1"  # never contacted: every policy's client is replaced
SEARCH = 2000  # the best-response search of these tests (the module's default is larger, and slower)


class ScriptedClient:
    """An LLM client answering each prompt with the demonstration's reply to it (a prompt no line holds fails
    the episode, and the runner raises)."""

    def __init__(self, lines: Sequence[dict[str, Any]]) -> None:
        self.replies = {line["messages"][-2]["content"]: line["messages"][-1]["content"] for line in lines}
        self.systems = {line["messages"][-2]["content"]: line["messages"][0] for line in lines}
        self.asked: list[list[dict[str, str]]] = []

    async def complete(self, messages: list[dict[str, str]], **_: Any) -> Completion:
        self.asked.append(messages)
        return Completion(self.replies[messages[-1]["content"]])

    async def check(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def _prompts(lines: Sequence[dict[str, Any]]) -> set[str]:
    return {line["messages"][-2]["content"] for line in lines}


def _asked_exactly(client: ScriptedClient, lines: Sequence[dict[str, Any]]) -> None:
    """Every message the policy sent is a line's (system and user), and every line was asked."""
    for messages in client.asked:
        assert len(messages) == 2 and messages[0] == client.systems[messages[1]["content"]]
    assert {m[-1]["content"] for m in client.asked} == _prompts(lines)


def _dumps(lines: Iterator[dict[str, Any]]) -> list[str]:
    return [json.dumps(line, sort_keys=True) for line in lines]


def _meta_keys(line: dict[str, Any]) -> None:
    meta = line["meta"]
    for key in ("split", "seed", "episode", "role", "prompt_version", "game", "verified", "reason"):
        assert key in meta
    assert isinstance(meta["verified"], bool) and isinstance(meta["reason"], str)
    assert meta["verified"] == (meta["reason"] == "")
    assert [m["role"] for m in line["messages"]] == ["system", "user", "assistant"]


# ---------------------------------------------------------------------------
# Exchange–audit
# ---------------------------------------------------------------------------
EA_EPISODES = 3


@pytest.fixture(scope="module")
def ea_lines() -> dict[str, list[dict[str, Any]]]:
    out = {}
    for split in ("train", "test"):
        stats = ea.DemoStats()
        out[split] = list(ea.demonstrations(episodes=EA_EPISODES, split=split, search_episodes=SEARCH, stats=stats))
        assert stats.total == len(out[split]) and stats.bench_collisions == 0
    return out


def _ea_bench_states() -> set[tuple[int, int]]:
    """Every (seed, episode) the exchange–audit bench tasks play, from the bench's own conditions and seeds."""
    model = BenchModel("any")
    out = set()
    for quick in (True, False):
        for c in [*ea_bench.proposer_conditions(model, quick), *ea_bench.validator_conditions(model, quick)]:
            out |= {(s, i) for s in ea_bench.seeds(quick) for i in range(c.episodes)}
    return out


def _ea_seeds(lines: Sequence[dict[str, Any]]) -> list[int]:
    return sorted({line["meta"]["seed"] for line in lines})


@pytest.mark.parametrize("split", ["train", "test"])
def test_ea_proposer_prompts_are_the_policys_and_replies_parse(ea_lines, split):
    lines = [line for line in ea_lines[split] if line["meta"]["role"] == "proposer"]
    rows = {c.row: c for c in ea.proposer_conditions()}
    assert {line["meta"]["row"] for line in lines} == set(rows)
    for line in lines:
        _meta_keys(line)
        meta = line["meta"]
        assert meta["game"] == "exchange-audit" and meta["split"] == split
        data = json.loads(line["messages"][-1]["content"])
        parse_proposer_reply(line["messages"][-1]["content"], 60, 100_000)
        assert data["action"] == meta["action"]
    for row, condition in rows.items():
        mine = [line for line in lines if line["meta"]["row"] == row]
        for seed in _ea_seeds(mine):
            at_seed = [line for line in mine if line["meta"]["seed"] == seed]
            assert [line["meta"]["episode"] for line in at_seed] == list(range(EA_EPISODES))
            policy = LLMProposer(model="demo", base_url=URL)
            client = policy.client = ScriptedClient(at_seed)  # type: ignore[assignment]
            records = ea_play(condition.config, policy, "rule", episodes=EA_EPISODES, seed=seed)
            _asked_exactly(client, at_seed)
            for record, line in zip(records, at_seed, strict=True):
                reply = json.loads(line["messages"][-1]["content"])
                assert record.proposer_action == reply["action"]
                assert record.reported_risk == reply["proposal"]["risk"]
                assert record.reported_net_delta == reply["proposal"]["net_delta"]
                assert record.misreported == line["meta"]["misreport"]
                if condition.config.q == 1.0:  # every episode audited on every claim: the game's own verdict
                    assert record.audit_outcome == line["meta"]["full_audit"]
                    if line["meta"]["verified"]:
                        assert record.audit_outcome in (
                            ("PASS",) if record.proposer_action != "NO_TRADE" else ("PASS", "INCONCLUSIVE")
                        )


@pytest.mark.parametrize("split", ["train", "test"])
def test_ea_validator_prompts_are_the_policys_and_replies_parse(ea_lines, split):
    lines = [line for line in ea_lines[split] if line["meta"]["role"] == "validator"]
    assert lines
    for line in lines:
        _meta_keys(line)
        decision, _ = parse_validator_reply(line["messages"][-1]["content"])
        assert decision.name == line["meta"]["decision"]
    for seed in _ea_seeds(lines):
        at_seed = [line for line in lines if line["meta"]["seed"] == seed]
        asked: set[str] = set()
        for condition in ea.validator_conditions():
            for gate in ("rule", "none"):  # (the gate is not in the prompt: both ask the same)
                policy = LLMValidator(model="demo", base_url=URL, gate=gate)
                client = policy.client = ScriptedClient(at_seed)  # type: ignore[assignment]
                records = ea_play(condition.config, condition.spec, policy, episodes=EA_EPISODES, seed=seed)
                asked |= {m[-1]["content"] for m in client.asked}
                by_episode = {
                    line["meta"]["episode"]: line for line in at_seed if condition.proposer in line["meta"]["proposers"]
                }
                for record in records:
                    line = by_episode.get(record.episode)
                    if record.proposer_action == "REQUEST_APPROVAL":
                        assert line is not None and record.decision == line["meta"]["decision"]
                        info = record.validator_info  # the reply's decision is the rule engine's
                        assert info["llm_decision"] == info["rule_decision"] == line["meta"]["decision"]
        assert asked == _prompts(at_seed)


def test_ea_splits_are_the_bench_and_disjoint_from_it(ea_lines):
    bench = _ea_bench_states()
    full = {(s, i) for s in ea_bench.seeds(False) for i in range(ea_bench.EPISODES["proposer"][False])}
    test = {(line["meta"]["seed"], line["meta"]["episode"]) for line in ea_lines["test"]}
    assert test == {(s, i) for s, i in full if i < EA_EPISODES} and test <= bench
    train = {(line["meta"]["seed"], line["meta"]["episode"]) for line in ea_lines["train"]}
    assert train and not train & bench
    assert ea.bench_states() >= bench  # (the module's own set covers the bench's)
    # the draws, too: no training state is a test state under another seed or episode
    draws = set()
    for s in ea_bench.seeds(False):
        u, z, a = DrawStream(s).batch(ea_bench.EPISODES["proposer"][False])
        draws |= {np.concatenate([u[i], z[i], a[i]]).tobytes() for i in range(len(u))}
    for s, i in train:
        stream = DrawStream(s)
        stream.skip(i)
        d = stream.next()
        assert np.concatenate([d.state_u, d.noise_z, d.audit_u]).tobytes() not in draws


def test_ea_train_on_a_bench_seed_skips_the_bench_states():
    stats = ea.DemoStats()
    lines = list(ea.demonstrations(["validator"], episodes=2, seed=0, search_episodes=SEARCH, stats=stats))
    played = max(c.episodes for c in ea_bench.validator_conditions(BenchModel("any"), False))
    assert stats.bench_collisions == played
    assert lines and all(line["meta"]["seed"] == 0 and line["meta"]["episode"] >= played for line in lines)


def test_ea_is_deterministic():
    first = _dumps(ea.demonstrations(episodes=2, search_episodes=SEARCH))
    ea._best_response_tables.cache_clear()  # (the search again, from scratch)
    again = _dumps(ea.demonstrations(episodes=2, search_episodes=SEARCH))
    assert first == again and first


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"split": "both"}, "split must be"),
        ({"roles": ["trader"]}, "roles must be among"),
        ({"roles": "proposer"}, "roles must be a sequence"),
        ({"roles": []}, "roles must be among"),
        ({"episodes": 0}, "episodes must be"),
        ({"episodes": True}, "episodes must be"),
        ({"seed": -1}, "seed must be"),
        ({"seed": 1.5}, "seed must be"),
        ({"prompt_version": "v9"}, "no proposer template"),
        ({"prompt_version": "terse_v1"}, "no validator template"),
        ({"search_episodes": 10}, "search_episodes must be"),
    ],
)
def test_ea_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ea.demonstrations(**kwargs)


def test_ea_prompt_variant_for_the_proposer_alone():
    lines = list(ea.demonstrations(["proposer"], episodes=1, prompt_version="terse_v1", search_episodes=SEARCH))
    assert lines and {line["meta"]["prompt_version"] for line in lines} == {"terse_v1"}


@pytest.mark.slow
def test_ea_default_run():
    for split, per_state in (("train", 1), ("test", 5)):
        stats = ea.DemoStats()
        lines = list(ea.demonstrations(split=split, stats=stats))
        states = per_state * ea.DEFAULT_EPISODES
        assert stats.lines["proposer"] == states * len(ea.proposer_conditions())
        assert stats.total == len(lines) and 0 < stats.unverified["proposer"] < stats.lines["proposer"]


# ---------------------------------------------------------------------------
# Belief coordination
# ---------------------------------------------------------------------------
BC_EPISODES = 2


@pytest.fixture(scope="module")
def bc_lines() -> dict[str, list[dict[str, Any]]]:
    out = {}
    for split in ("train", "test"):
        stats = bc.DemoStats()
        out[split] = list(bc.demonstrations(episodes=BC_EPISODES, split=split, stats=stats))
        assert stats.total == len(out[split])
    return out


class SimulatedModel:
    """The executors' model of these tests: the environment's simulated answerer, keeping every request."""

    def __init__(self, config: Any) -> None:
        self.simulated = SimulatedAnswerer(config.simulation())
        self.requests: list[Any] = []

    async def aanswer(self, requests: Sequence[Any]) -> list[Any]:
        self.requests.extend(requests)
        return self.simulated.answer(requests)


def _bc_play(condition: Any, seed: int, coordinator: Any) -> tuple[list[Any], SimulatedModel, LLMExecutor]:
    """The bench's condition played by the bench's executor policy (its model: the simulated answerer) and
    ``coordinator`` (the condition's own spec when None), through the package's runner."""
    spec = next(c for c in bc_bench.conditions(BenchModel("demo"), quick=False) if c.label("row") == condition.row)
    _, kwargs = parse_policy_spec(spec.policy("executor"))
    executor = LLMExecutor(**{**kwargs, "base_url": URL})
    executor.answerer.client = ScriptedClient([])  # type: ignore[assignment]  # (its check and close)
    model = SimulatedModel(condition.config)
    executor.answerer.aanswer = model.aanswer  # type: ignore[method-assign]
    policies = {"executor": executor, "coordinator": coordinator or spec.policy("coordinator")}
    records = core_play("belief-coordination", condition.config, policies, episodes=BC_EPISODES, seed=seed)
    return records, model, executor


@pytest.mark.parametrize("split", ["train", "test"])
def test_bc_prompts_are_the_policies_and_replies_parse(bc_lines, split):
    lines = bc_lines[split]
    for line in lines:
        _meta_keys(line)
        assert line["meta"]["game"] == "belief-coordination" and line["meta"]["split"] == split
    answerer_lines = [line for line in lines if line["meta"]["role"] == "answerer"]
    coordinator_lines = [line for line in lines if line["meta"]["role"] == "coordinator"]
    assert answerer_lines and coordinator_lines
    for seed in sorted({line["meta"]["seed"] for line in lines}):
        mine = [line for line in answerer_lines if line["meta"]["seed"] == seed]
        theirs = [line for line in coordinator_lines if line["meta"]["seed"] == seed]
        requests: dict[str, Any] = {}
        for condition in bc.bench_conditions():
            coordinator = None
            if condition.llm_coordinator:
                coordinator = LLMCoordinator(model="demo", base_url=URL)
                client = coordinator.client = ScriptedClient(theirs)  # type: ignore[assignment]
            records, model, executor = _bc_play(condition, seed, coordinator)
            for request in model.requests:  # the prompt the answerer class renders for each request made
                messages = executor.answerer.messages(request)
                requests.setdefault(messages[-1]["content"], request)
                assert messages[0] == ScriptedClient(mine).systems[messages[-1]["content"]]
            if coordinator is not None:
                _asked_exactly(client, theirs)
                by_episode = {line["meta"]["episode"]: line for line in theirs}
                for record in records:
                    assert record.committed == by_episode[record.episode]["meta"]["executor"]
        assert set(requests) == _prompts(mine)
        answerer = LLMAnswerer("demo", base_url=URL)
        answerer.client = ScriptedClient(mine)  # type: ignore[assignment]
        answers = asyncio.run(answerer.aanswer(list(requests.values())))  # the reply, read by the answerer itself
        by_prompt = {line["messages"][-2]["content"]: line for line in mine}
        for prompt, answer in zip(requests, answers, strict=True):
            line = by_prompt[prompt]
            assert answer.value == final_number(line["messages"][-1]["content"]) == line["meta"]["answer"]


def _bc_bench_questions() -> set[str]:
    """The texts of every question the belief-coordination bench asks, from the bench's own code."""
    out = set()
    for quick in (True, False):
        for c in bc_bench.conditions(BenchModel("any"), quick):
            out |= {
                generated_question(s, i, c.config.difficulty).text
                for s in bc_bench.seeds(quick)
                for i in range(c.episodes)
            }
    return out


def test_bc_splits_are_the_bench_and_disjoint_from_it(bc_lines):
    bench = _bc_bench_questions()
    test = {line["meta"]["question"] for line in bc_lines["test"]}
    first = {generated_question(s, i).text for s in bc_bench.seeds(False) for i in range(BC_EPISODES)}
    assert test == first and test <= bench
    train = {line["meta"]["question"] for line in bc_lines["train"]}
    assert train and not train & bench
    for line in bc_lines["train"]:  # the text in the prompt is the meta's
        assert line["meta"]["question"] in line["messages"][1]["content"]


def test_bc_train_skips_bench_questions(monkeypatch):
    # a train seed whose questions include bench questions: they are skipped and counted
    bench = list(bc.bench_questions())
    seed, index = 0, 0  # question 0 of seed 0 is one of the bench's
    assert generated_question(seed, index).text in bench
    monkeypatch.setattr(bc, "held_out_questions", lambda: frozenset())  # (the bench's alone: quicker)
    stats = bc.DemoStats()
    lines = list(bc.demonstrations(["coordinator"], episodes=1, seed=0, stats=stats))
    assert stats.bench_collisions == bc_bench.questions(False)
    assert {line["meta"]["episode"] for line in lines} <= {bc_bench.questions(False)}


def test_bc_is_deterministic():
    first = _dumps(bc.demonstrations(episodes=2))
    assert first == _dumps(bc.demonstrations(episodes=2)) and first


def test_bc_worked_solutions_reach_the_answer():
    for i in range(40):
        q = generated_question(7, i)
        solved = bc.worked_solution(q.text)
        assert solved is not None and solved[1] == q.answer and len(solved[0]) == q.steps + 1
    assert bc.worked_solution("What is six times seven?") is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"split": "both"}, "split must be"),
        ({"roles": ["executor"]}, "roles must be among"),
        ({"roles": "answerer"}, "roles must be a sequence"),
        ({"episodes": 0}, "episodes must be"),
        ({"seed": -3}, "seed must be"),
        ({"prompt_version": "v2"}, "no executor template"),
    ],
)
def test_bc_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bc.demonstrations(**kwargs)


@pytest.mark.slow
def test_bc_default_run():
    for split, seeds in (("train", 1), ("test", 5)):
        stats = bc.DemoStats()
        lines = list(bc.demonstrations(split=split, stats=stats))
        assert stats.lines["coordinator"] + stats.not_asked == seeds * bc.DEFAULT_EPISODES
        assert stats.total == len(lines) and stats.unverified["answerer"] == 0
