"""The LLM client's connection pools follow the concurrency asked of it (eq_env.agents.client._Pools)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from eq_env.agents.client import PER_POOL, LLMClient, configure, settings
from eq_env.agents.fake_server import ScriptedLLMServer, reply_json

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


@pytest.fixture(autouse=True)
def no_cache() -> Iterator[None]:
    before = settings()
    configure(cache="off", check_endpoint=False)
    LLMClient.forget()
    yield
    configure(**vars(before))
    LLMClient.forget()


async def _ask_all(client: LLMClient, k: int) -> tuple[list[str], int]:
    """``k`` distinct requests at once; (their answers, how many pools the client opened)."""
    answers = await asyncio.gather(*(
        client.complete([{"role": "user", "content": f"question {i} — ünïcode"}], schema_name="a", schema=SCHEMA,
                        prompt_version="v1", temperature=0.0, max_tokens=16, seed=None)
        for i in range(k)))  # fmt: skip
    pools = len(client._pools().clients)
    await client.aclose()
    return [a.content for a in answers], pools


def test_one_pool_serves_a_low_concurrency() -> None:
    with ScriptedLLMServer([reply_json({"answer": "yes"})], latency=0.05) as server:
        answers, pools = asyncio.run(_ask_all(LLMClient("fake", server.url), 4))
        assert answers == ['{"answer": "yes"}'] * 4 and pools == 1
        assert server.max_in_flight == 4
        # the body the SDK would have sent: JSON, UTF-8, with the client's parameters
        assert server.requests[0]["messages"][0]["content"].endswith("ünïcode")
        assert server.requests[0]["response_format"]["json_schema"]["schema"] == SCHEMA


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_pools_follow_the_concurrency_and_cap_nothing() -> None:
    k = 2 * PER_POOL + 8
    with ScriptedLLMServer([reply_json({"answer": "yes"})], latency=0.2) as server:
        answers, pools = asyncio.run(_ask_all(LLMClient("fake", server.url), k))
        assert len(answers) == k and pools == 3  # a pool per PER_POOL requests in flight
        assert server.max_in_flight == k  # every request in flight at once: no pool holds one back


def test_pools_belong_to_their_event_loop() -> None:
    with ScriptedLLMServer([reply_json({"answer": "yes"})]) as server:
        client = LLMClient("fake", server.url)
        first, _ = asyncio.run(_ask_all(client, 1))
        LLMClient.forget()  # (else the answer comes from memory, with no request)
        again, pools = asyncio.run(_ask_all(client, 1))  # a new loop: new pools, the old loop's dropped
        assert first == again and pools == 1 and len(client._clients) <= 1
