"""Local models (:mod:`eq_env.agents.local`): an LLM policy whose ``base_url`` names a model in this process.

The players must ask it exactly as they ask an endpoint — the same prompts, re-asks and fallbacks — and the client
must cache and replay its answers (a cacheable model), or never cache them (a model being trained), keying them by
the model's fingerprint so another checkpoint's answers are never replayed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from eq_env.agents.client import LLMClient, LLMSetupError, LLMUnavailableError, configure, settings
from eq_env.agents.local import LocalReply, forget_local, is_local, local_model, register_local
from eq_env.core.policy import make_policy
from eq_env.core.runner import evaluate
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig

N4 = EinsteinPuzzleConfig(n=4, comm_mode="provide_and_seek")


class Scripted:
    """Answers each request with the next reply of a script; counts what it was asked."""

    def __init__(
        self,
        replies: list[str],
        *,
        cacheable: bool = True,
        fingerprint: str = "scripted-1",
        parameters: frozenset[str] = frozenset(),
    ) -> None:
        self.replies = list(replies)
        self.cacheable = cacheable
        self.fingerprint = fingerprint
        self.parameters = parameters
        self.extras: list[dict[str, Any]] = []
        self.asked: list[list[dict[str, str]]] = []

    def problem(self) -> str | None:
        return None

    async def generate(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float,
        max_tokens: int,
        seed: int | None,
        n: int,
        extra: dict[str, Any],
    ) -> LocalReply:
        self.asked.append(messages)
        self.extras.append(extra)
        text = self.replies[min(len(self.asked) - 1, len(self.replies) - 1)]
        return LocalReply([text] * n, prompt_tokens=10, completion_tokens=2)


@pytest.fixture
def cache(tmp_path: Path) -> Any:
    before = settings()
    configure(cache="write", cache_dir=tmp_path / "cache")
    LLMClient.forget()
    yield tmp_path / "cache"
    configure(cache=before.cache, cache_dir=before.cache_dir)
    LLMClient.forget()


def test_which_urls_name_local_models() -> None:
    assert is_local("hf:runs/model") and is_local("local:x")
    assert not is_local("http://localhost:8000/v1") and not is_local("hf://host/x") and not is_local(None)
    with pytest.raises(ValueError, match="no model registered"):
        local_model("local:nobody")
    with pytest.raises(ValueError, match="non-empty word"):
        register_local("a/b", Scripted(["pass"]))


def test_a_player_asks_a_local_model_as_an_endpoint_and_replays_it(cache: Path) -> None:
    model = Scripted(["no action here", "pass"])  # first an invalid reply: re-asked with the grammar's error
    url = register_local("scripted", model)
    try:
        player = make_policy(f"llm:model=m,base_url={url},max_reasks=1", role="player_0", env="einstein-puzzle")
        partner = "planner"
        run = evaluate("einstein-puzzle", N4, {"player_0": player, "player_1": partner}, seeds=[0], episodes=1)
        asked = len(model.asked)
        assert asked >= 2 and "invalid" in model.asked[1][-1]["content"].lower()  # the re-ask quotes the error
        assert any(cache.rglob("*.json"))  # recorded
        configure(cache="read")
        LLMClient.forget()
        replay = make_policy(f"llm:model=m,base_url={url},max_reasks=1", role="player_0", env="einstein-puzzle")
        again = evaluate("einstein-puzzle", N4, {"player_0": replay, "player_1": partner}, seeds=[0], episodes=1)
        assert len(model.asked) == asked  # no request
        assert again.summary == run.summary
    finally:
        forget_local(url)


def test_a_model_being_trained_is_never_cached(cache: Path) -> None:
    model = Scripted(["pass"], cacheable=False)
    url = register_local("learner", model)
    try:
        client = LLMClient("m", url)
        ask = {
            "schema_name": "x",
            "schema": None,
            "prompt_version": "v1",
            "temperature": 1.0,
            "max_tokens": 8,
            "seed": None,
        }
        for _ in range(2):
            asyncio.run(client.complete([{"role": "user", "content": "same"}], **ask))
        assert len(model.asked) == 2 and not any(cache.rglob("*.json"))
    finally:
        forget_local(url)


def test_answers_are_keyed_by_the_models_fingerprint(cache: Path) -> None:
    ask = {
        "schema_name": "x",
        "schema": None,
        "prompt_version": "v1",
        "temperature": 0.0,
        "max_tokens": 8,
        "seed": None,
    }
    first = Scripted(["one"], fingerprint="weights-a")
    url = register_local("ckpt", first)
    try:
        assert asyncio.run(LLMClient("m", url).complete([{"role": "user", "content": "q"}], **ask)).content == "one"
        LLMClient.forget()
        register_local("ckpt", Scripted(["two"], fingerprint="weights-b"))  # another checkpoint, the same name
        assert asyncio.run(LLMClient("m", url).complete([{"role": "user", "content": "q"}], **ask)).content == "two"
    finally:
        forget_local(url)


def test_a_local_model_that_cannot_serve_stops_the_run(cache: Path) -> None:
    class Broken(Scripted):
        def problem(self) -> str | None:
            return "the checkpoint is unreadable"

    url = register_local("broken", Broken(["pass"]))
    try:
        client = LLMClient("m", url)
        with pytest.raises(LLMSetupError, match="unreadable"):
            asyncio.run(client.check())
    finally:
        forget_local(url)


def test_a_missing_checkpoint_is_one_line(tmp_path: Path) -> None:
    client = LLMClient("m", f"hf:{tmp_path / 'none'}")
    with pytest.raises(LLMSetupError, match="no checkpoint there"):
        asyncio.run(client.check())


@pytest.mark.parametrize(
    ("game", "role"),
    [
        ("einstein-puzzle", "player_0"),
        ("einstein-puzzle", "player_1"),
        ("exchange-audit", "proposer"),
        ("exchange-audit", "validator"),
        ("belief-coordination", "coordinator"),
        ("belief-coordination", "executor"),
    ],
)
def test_every_llm_role_has_an_hf_policy(game: str, role: str, tmp_path: Path) -> None:
    policy = make_policy(f"hf:path={tmp_path},temperature=0", role=role, env=game)
    client = getattr(policy, "client", None) or getattr(getattr(policy, "answerer", None), "client", None)
    assert client is not None and client.base_url == f"hf:{tmp_path}" and client.local
    with pytest.raises(ValueError, match="base_url"):
        make_policy(f"hf:path={tmp_path},base_url=http://x", role=role, env=game)


ASK = {"schema_name": "x", "schema": None, "prompt_version": "v1", "temperature": 0.0, "max_tokens": 8, "seed": None}


def test_penalties_reach_a_model_that_takes_them_and_stop_one_that_does_not(cache: Path) -> None:
    takes = Scripted(["7"], parameters=frozenset({"frequency_penalty"}))
    url = register_local("penalised", takes)
    try:
        chat = [{"role": "user", "content": "q"}]
        asyncio.run(LLMClient("m", url).complete(chat, **ASK, extra={"frequency_penalty": 0.4}))
        assert takes.extras == [{"frequency_penalty": 0.4}]
        LLMClient.forget()
        register_local("penalised", Scripted(["7"]))  # takes nothing further: every such request would fail
        refused = r"does not take the sampling parameter frequency_penalty \(it takes: none"
        with pytest.raises(LLMSetupError, match=refused):
            asyncio.run(LLMClient("m", url).complete(chat, **ASK, extra={"frequency_penalty": 0.4}))
    finally:
        forget_local(url)


def test_a_request_the_model_refuses_is_a_recorded_failure(cache: Path) -> None:
    class Refusing(Scripted):
        async def generate(self, messages: list[dict[str, str]], **kwargs: Any) -> LocalReply:
            self.asked.append(messages)
            raise ValueError("the prompt is 5000 tokens; the model's context is 2048\nmore detail")

    model = Refusing(["unused"])
    url = register_local("short", model)
    try:
        chat = [{"role": "user", "content": "a long question"}]
        first_line = r"refused: the prompt is 5000 tokens; the model's context is 2048$"
        with pytest.raises(LLMUnavailableError, match=first_line):
            asyncio.run(LLMClient("m", url).complete(chat, **ASK))
        configure(cache="read")
        LLMClient.forget()
        with pytest.raises(LLMUnavailableError, match="context is 2048"):  # a replay fails the same way
            asyncio.run(LLMClient("m", url).complete(chat, **ASK))
        assert len(model.asked) == 1
    finally:
        forget_local(url)


def test_the_hf_backends_count_penalties_are_openais() -> None:
    import torch  # (a core dependency, through stable-baselines3)

    from eq_env.agents.hf import _CountPenalty, _penalties

    prompt = [5, 5, 1]  # the prompt's tokens are not counted
    ids = torch.tensor([[*prompt, 2, 2, 3]])  # the reply so far: token 2 twice, 3 once
    scores = torch.zeros(1, 6)
    got = _CountPenalty(frequency=0.5, presence=0.25, prompt_length=len(prompt))(ids, scores)
    assert got.tolist() == [[0.0, 0.0, -(2 * 0.5 + 0.25), -(0.5 + 0.25), 0.0, 0.0]]
    assert _penalties({"repetition_penalty": 1.0}, 3) == {}  # 1 is none
    for bad in ({"frequency_penalty": 2.5}, {"presence_penalty": True}, {"repetition_penalty": 0}, {"top_k": 3}):
        with pytest.raises(ValueError, match=r"must be a number in|does not take"):
            _penalties(bad, 3)
