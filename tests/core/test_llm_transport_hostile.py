"""The LLM transport under a hostile endpoint: the verified player on an endpoint without ``n``,
replies nested past the parser, replies of any size, secrets echoed in any encoding, and a default cache
that answered from another run.

Every endpoint is a local :class:`eq_env.agents.fake_server.ScriptedLLMServer` on 127.0.0.1; requests are counted
on the server's side (``server.requests``) and compared with what the records say.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import tracemalloc
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import numpy as np
import pytest

from eq_env import einstein_puzzle_v0
from eq_env.agents.client import LLMClient, _raw, configure, read_body, settings
from eq_env.agents.einstein_puzzle.scripts import good_script
from eq_env.agents.exchange_audit.schema import PROPOSER_SCHEMA
from eq_env.agents.exchange_audit.scripts import honest_script
from eq_env.agents.fake_server import Reply, ScriptedLLMServer, reply_json
from eq_env.agents.replies import MAX_DEPTH, ReplyError, checked_reply, conforms, extract_json
from eq_env.cli import INCOMPLETE, main
from eq_env.core.policy import PolicyError, make_policy
from eq_env.core.redact import public_url, redact, redact_reply, register_secret
from eq_env.core.runner import FailedEpisode, play_concurrent
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.exchange_audit.config import ExchangeAuditConfig

pytestmark = pytest.mark.usefixtures("fast_llm")  # (tests/conftest.py: own cache, short backoffs, 2 retries)

EINSTEIN = "einstein-puzzle"
PUZZLE = EinsteinPuzzleConfig()
AUDIT = ExchangeAuditConfig()
GOOD = {
    "action": "REQUEST_APPROVAL",
    "proposal": {"intent": "HEDGE", "risk": 0.9, "net_delta": 0.1, "hedge_size": 0.6},
    "claims": {"intent": "HEDGE", "risk_within_limit": True, "net_delta_bounded": True, "risk_metric": 0.9,
               "confidence": 0.8},
    "text": "A hedge well inside both limits.",
}  # fmt: skip


def spec(server: ScriptedLLMServer, **params: Any) -> str:
    return f"llm:model=fake,base_url={server.url}" + "".join(f",{k}={v}" for k, v in params.items())


def first_observation(seed: int = 0) -> tuple[Any, dict[str, Any]]:
    env = einstein_puzzle_v0.env(config=PUZZLE)
    env.reset(seed=seed)
    return env, env.observe("player_0")


def requests_recorded(episodes: list[Any], *agents: str) -> int:
    """Requests the episodes' records count (failed episodes included)."""
    return sum((e.infos.get(a) or {}).get("transport", {}).get("requests", 0) for e in episodes for a in agents)


def digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


# ---------------------------------------------------------------------------
# 3. The verified player on an endpoint that answers 400 to n > 1
# ---------------------------------------------------------------------------
def test_every_request_of_a_verified_decision_is_counted_when_its_samples_fail() -> None:
    """Sample 1 fails once, sample 2 for good: the decision fails, and its record holds the rejected n=3
    request, every sample's requests and retries, and what the answered samples cost."""
    env, obs = first_observation()
    asked: Counter[Any] = Counter()

    def script(request: dict[str, Any], n: int) -> Reply:
        seed = request.get("seed")  # sample i (i > 0) goes with seed i when none is set
        asked[seed] += 1
        if seed == 2:
            return Reply(status=500)
        if seed == 1 and asked[seed] == 1:
            return Reply(status=502)
        return good_script(request, n)

    with ScriptedLLMServer(script, n_supported=False) as server:
        policy = make_policy(spec(server, verifier="reasoning", k=3), "player_0", EINSTEIN)
        with pytest.raises(PolicyError, match=r"1 of 3 samples failed") as caught:
            asyncio.run(policy.aact_privileged(obs, env))  # type: ignore[attr-defined]
        made = len(server.requests)
    info = caught.value.info
    assert made == 1 + 1 + 2 + 3  # the n=3 request, sample 0, sample 1 and its retry, sample 2 and two retries
    assert info["transport"]["requests"] == made and info["transport"]["retries"] == 1 + 2
    assert info["completion_tokens"] > 0  # the two answered samples were paid for
    assert info["transport"]["billed_completion_tokens"] == info["completion_tokens"]
    assert any("n=3 rejected" in e for e in info["transport"]["errors"])


def test_the_k_requests_of_an_endpoint_without_n_are_k_different_requests() -> None:
    env, obs = first_observation()
    with ScriptedLLMServer(good_script, n_supported=False) as server:
        policy = make_policy(spec(server, verifier="reasoning", k=4), "player_0", EINSTEIN)
        _, info = asyncio.run(policy.aact_privileged(obs, env))  # type: ignore[attr-defined]
        singles = [r for r in server.requests if r.get("n", 1) == 1]
    assert len(singles) == 4 and len({json.dumps(r, sort_keys=True) for r in singles}) == 4
    assert sorted(str(r.get("seed")) for r in singles) == ["1", "2", "3", "None"]
    assert info["attempts"] == 4 and info["transport"]["requests"] == 5  # (and the rejected n=4 request)
    # at temperature 0 the candidates are alike on a deterministic endpoint: the info says so
    assert info["greedy_candidates"] is True
    with ScriptedLLMServer(good_script, n_supported=False) as server:
        policy = make_policy(spec(server, verifier="reasoning", k=2, temperature=0.7, seed=5), "player_0", EINSTEIN)
        _, info = asyncio.run(policy.aact_privileged(obs, env))  # type: ignore[attr-defined]
        assert sorted(r["seed"] for r in server.requests if r.get("n", 1) == 1) == [5, 6]
    assert "greedy_candidates" not in info


class OneThirdFails:
    """Rejects ``n > 1`` (the server does) and fails about a third of the requests it answers: one prompt in
    twenty always (a state that fails for good), the others by the hash of the request and its attempt."""

    def __init__(self, answer: Callable[[dict[str, Any], int], Reply]) -> None:
        self.answer, self.seen, self.lock = answer, Counter[str](), threading.Lock()

    def __call__(self, request: dict[str, Any], n: int) -> Reply:
        body = json.dumps(request, sort_keys=True)
        with self.lock:
            self.seen[body] += 1
            attempt = self.seen[body]
        if digest(json.dumps(request["messages"][:2])) % 20 == 0 or digest(f"{body}#{attempt}") % 10 < 3:
            return Reply(status=500, body={"error": {"message": "scripted failure"}})
        return self.answer(request, n)


def _transport_free(line: str) -> Any:
    """A record without what varies from run to run: how answers were obtained (``transport``, in every
    info) and a failure's message (it names the retries made)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "transport"}
        return [strip(v) for v in value] if isinstance(value, list) else value

    record = strip(json.loads(line))
    record.pop("error", None)
    return record


def _table(out: str) -> str:
    """The printed metrics (what a replay must give byte for byte), without the transport counts."""
    return re.sub(r"\d+ requests, \d+ retries, \d+ cache hits; ", "", out)


@pytest.mark.slow  # (hundreds of requests)
def test_a_verified_run_without_n_records_every_request_and_replays(tmp_path: Path, capsys: Any) -> None:
    live, again = tmp_path / "live.jsonl", tmp_path / "replay.jsonl"
    args = ["play", "--env", EINSTEIN, "--player_0", "llm:verifier=reasoning,k=4", "--player_1", "planner",
            "--episodes", "6", "--model", "fake", "--no-endpoint-check", "--max-retries", "1", "--backoff", "0.01",
            "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    with ScriptedLLMServer(OneThirdFails(good_script), n_supported=False) as server:
        status = main([*args, "--base-url", server.url, "--records", str(live)])
        made = len(server.requests)
        first = capsys.readouterr().out
        records = [json.loads(line) for line in live.read_text().splitlines()]
        recorded = sum(r["agent_infos"]["player_0"]["transport"]["requests"] if "agent_infos" in r
                       else r["infos"]["player_0"]["transport"]["requests"] for r in records)  # fmt: skip
        assert status == INCOMPLETE and any(r.get("failed") for r in records)  # some states failed for good
        assert recorded == made > 50
        singles = [r for r in server.requests if r.get("n", 1) == 1]
        per_prompt: dict[str, set[Any]] = {}
        for r in singles:
            per_prompt.setdefault(json.dumps(r["messages"]), set()).add(r.get("seed"))
        assert all(seeds == {None, 1, 2, 3} for seeds in per_prompt.values())  # k different requests each
        assert main([*args, "--base-url", server.url, "--records", str(again), "--cache", "read"]) == INCOMPLETE
        assert len(server.requests) == made  # the replay asked nothing
    assert _table(capsys.readouterr().out) == _table(first)
    assert [_transport_free(x) for x in again.read_text().splitlines()] == [
        _transport_free(x) for x in live.read_text().splitlines()
    ]


# ---------------------------------------------------------------------------
# 4. JSON nested past the parser
# ---------------------------------------------------------------------------
DEEP = "[" * 100_000 + "]" * 100_000  # what a hostile endpoint sent: nested 100,000 deep


@pytest.mark.parametrize(
    "text", ['{"a":' * 100_000 + "1" + "}" * 100_000, DEEP, "[" * 100_000, '{"a":' * 100_000,
             'Here: {"action": ' + "[" * 5000 + "]" * 5000 + "}"]
)  # fmt: skip
def test_json_nested_past_the_parser_is_an_invalid_reply(text: str) -> None:
    with pytest.raises(ReplyError, match=f"nested more than {MAX_DEPTH} levels"):
        extract_json(text)


def test_deep_but_parseable_json_is_refused_naming_the_depth_and_the_schema_speaks_below_it() -> None:
    deep = '{"action": ' + "[" * 900 + "]" * 900 + "}"
    with pytest.raises(ReplyError, match=f"nested more than {MAX_DEPTH} levels"):
        checked_reply(deep, PROPOSER_SCHEMA)
    nested = json.loads("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))
    within = json.dumps({**GOOD, "action": nested})  # exactly MAX_DEPTH levels: parsed, then checked
    with pytest.raises(ReplyError, match="breaks the schema at action: "):
        checked_reply(within, PROPOSER_SCHEMA)
    assert conforms(json.loads(within), PROPOSER_SCHEMA) is False
    # an error quotes the reply's values cut short, whatever their size
    with pytest.raises(ReplyError) as caught:
        checked_reply(json.dumps({**GOOD, "action": "x" * 100_000}), PROPOSER_SCHEMA)
    assert len(str(caught.value)) < 500


def test_a_megabyte_of_braces_is_refused_at_once() -> None:
    # (each place an object could start is tried at most so many times: this took hours before)
    with pytest.raises(ReplyError, match="no JSON object"):
        extract_json('{"a"' * 250_000)


def test_deep_replies_are_reasked_then_fall_back_on_the_exchange_audit_roles() -> None:
    with ScriptedLLMServer([Reply(content=DEEP)]) as server:
        episodes = play_concurrent("exchange-audit", AUDIT, {"proposer": spec(server, max_reasks=1),
                                                             "validator": "rule"}, episodes=2, seed=0)  # fmt: skip
        made = len(server.requests)
    assert not [e for e in episodes if isinstance(e, FailedEpisode)]
    info = episodes[0].infos["proposer_0"]
    assert info["fallback"] is True and "nested more than" in info["invalid_replies"][0]
    assert made == 2 * 2 == requests_recorded(episodes, "proposer_0")
    with ScriptedLLMServer([Reply(content=DEEP)]) as server:
        episodes = play_concurrent("exchange-audit", AUDIT, {"proposer": "honest", "validator": spec(server)},
                                   episodes=2, seed=0)  # fmt: skip
        made = len(server.requests)
    assert not [e for e in episodes if isinstance(e, FailedEpisode)]
    assert made == requests_recorded(episodes, "validator_0") > 0
    assert all(e.infos["validator_0"]["fallback"] for e in episodes if e.infos.get("validator_0"))


def test_deep_replies_are_invalid_replies_on_the_einstein_and_belief_roles() -> None:
    env, obs = first_observation()
    with ScriptedLLMServer([Reply(content=DEEP), Reply(content=DEEP, choices=[DEEP, DEEP])]) as server:
        _, info = asyncio.run(make_policy(spec(server, max_reasks=0), "player_0", EINSTEIN).aact(obs))
        assert info["fallbacks"] == 1 and "is not an action" in info["invalid_replies"][0]
        policy = make_policy(spec(server, verifier="reasoning", k=2), "player_0", EINSTEIN)
        _, info = asyncio.run(policy.aact_privileged(obs, env))  # type: ignore[attr-defined]
        assert info["fallback"] is True and len(info["invalid_replies"]) == 2

    from eq_env.agents.belief_coordination.coordinator import LLMCoordinator

    observation = {"question": "3 + 4?", "replies": ["#### 7", "#### 7"], "answers": "0: 7\n1: 7",
                   "action_mask": np.array([1, 1], dtype=np.int8)}  # fmt: skip
    with ScriptedLLMServer([Reply(content=DEEP)]) as server:
        _, info = asyncio.run(LLMCoordinator("fake", base_url=server.url, max_reasks=1).aact(observation))
        assert info["fallback"] is True and info["transport"]["requests"] == len(server.requests) == 2


def test_a_response_body_nested_past_the_parser_is_unreadable_and_asked_again() -> None:
    body = b'{"choices": [{"message": {"content": "pass"}}], "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    _, obs = first_observation()
    with ScriptedLLMServer([Reply(raw=body), Reply(content="pass")]) as server:
        _, info = asyncio.run(make_policy(spec(server), "player_0", EINSTEIN).aact(obs))
    assert info["transport"]["requests"] == 2 and "nested too deep" in info["transport"]["errors"][0]


def test_a_link_dropped_while_the_body_streams_is_retried_and_counted() -> None:
    """The headers came (200, a Content-Length) and the connection closed partway through the body: the
    transport's error escaped the SDK's (the body is read as a stream), so the decision crashed instead of
    being retried; the request it cost was not counted."""
    _, obs = first_observation()
    with ScriptedLLMServer([Reply(content="pass", cut=20), Reply(content="pass")]) as server:
        _, info = asyncio.run(make_policy(spec(server), "player_0", EINSTEIN).aact(obs))
        asked = len(server.requests)
    assert asked == 2 and info["transport"]["requests"] == 2 and info["transport"]["retries"] == 1, info
    assert "connection" in info["transport"]["errors"][0].lower(), info["transport"]["errors"]
    with ScriptedLLMServer([Reply(content="pass", cut=20)]) as server:  # dropped every time: a failure
        with pytest.raises(PolicyError, match="gave up after 2 retries") as failure:
            asyncio.run(make_policy(spec(server), "player_0", EINSTEIN).aact(obs))
        asked = len(server.requests)
    assert failure.value.info["transport"]["requests"] == asked == 3, failure.value.info


# ---------------------------------------------------------------------------
# 5. Replies of any size
# ---------------------------------------------------------------------------
MIB = 1 << 20
HUGE = "x" * (10 * MIB)  # 10 MiB of reply, whatever max_tokens asked


async def _chunks(count: int, size: int = 65536) -> AsyncIterator[bytes]:
    chunk = b"y" * size  # (one object, yielded again and again: the reader's memory is what is measured)
    for _ in range(count):
        yield chunk


def test_a_body_is_read_up_to_its_limit_in_bounded_memory() -> None:
    tracemalloc.start()
    try:
        body = asyncio.run(read_body(_chunks(160), MIB))  # 10 MiB sent
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert body.over and body.size == 160 * 65536 and body.ended
    assert len(body.data) <= 65536 and len(body.tail) <= 65536
    assert peak < 3 * MIB  # (10 MiB read whole would be over 10 MiB)
    endless = asyncio.run(read_body(_chunks(10_000, 1024), 1024))  # a body that never ends is cut
    assert endless.over and not endless.ended and endless.size <= 65 * 1024
    small = asyncio.run(read_body(_chunks(3, 100), 1024))
    assert not small.over and small.data == b"y" * 300


def test_an_oversize_reply_is_an_invalid_reply_billed_never_quoted_or_cached() -> None:
    from eq_env.agents.exchange_audit.policies import LLMProposer

    env = __import__("eq_env.exchange_audit_v0", fromlist=["env"]).env(config=AUDIT)
    env.reset(seed=0)
    obs = env.observe("proposer_0")

    async def ask() -> dict[str, Any]:
        policy = LLMProposer(model="m", base_url=server.url)
        try:
            return (await policy.aact(obs))[1]
        finally:
            await policy.aclose()

    with ScriptedLLMServer([Reply(content=HUGE), reply_json(GOOD)]) as server:
        info = asyncio.run(ask())
        first, second = (r["messages"] for r in server.requests)
        assert info["fallback"] is False and "over the limit of 1,048,576 bytes" in info["invalid_replies"][0]
        assert second[:2] == first and len(second[2]["content"]) < 100  # the re-ask quotes none of it
        assert len(json.dumps(second)) < len(json.dumps(first)) + 1000
        assert info["completion_tokens"] > len(HUGE) // 4  # the server's usage for it, billed
        assert info["transport"]["billed_completion_tokens"] == info["completion_tokens"]
        files = list(settings().cache_dir.rglob("*.json"))
        assert len(files) == 2 and sum(f.stat().st_size for f in files) < 4000
        # a replay reads the same: the same invalid reply, the same re-ask, no request
        configure(cache="read")
        LLMClient.forget()
        again = asyncio.run(ask())
        assert len(server.requests) == 2
    strip = ("transport",)
    assert {k: v for k, v in again.items() if k not in strip} == {k: v for k, v in info.items() if k not in strip}


def test_the_limit_is_a_setting_and_a_flag() -> None:
    from eq_env.agents.client import LLMSettings, reply_limit

    with pytest.raises(ValueError, match="max_reply_bytes must be an integer in"):
        LLMSettings(max_reply_bytes=10)
    configure(max_reply_bytes=4096)
    assert reply_limit(32) == 4096 and reply_limit(32, n=3) == 3 * 4096 and reply_limit(1000) == 64 * 1000
    with pytest.raises(SystemExit):
        main(["play", "--proposer", "llm", "--max-reply-bytes", "12", "--dry-run"])


_SERVE = """
import sys, hashlib, json
from eq_env.agents.fake_server import Reply, ScriptedLLMServer
from eq_env.agents.einstein_puzzle.scripts import good_script
HUGE = "x" * (10 << 20)
def script(request, n):
    body = json.dumps(request, sort_keys=True)
    if int(hashlib.sha256(body.encode()).hexdigest(), 16) % 10 < 4:  # 40% of requests
        return Reply(content=HUGE)
    return good_script(request, n)
with ScriptedLLMServer(script) as server:
    print(server.url, flush=True)
    sys.stdin.read()  # until the test closes it
    print(len(server.requests), flush=True)
"""


@pytest.mark.slow  # (tens of 10 MiB replies)
def test_a_server_sending_10_mib_to_40_percent_of_requests_costs_no_more_than_the_limit() -> None:
    """The server runs in another process, so that the memory traced here is the client's alone."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    server = subprocess.Popen([sys.executable, "-c", _SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env)  # fmt: skip
    assert server.stdout is not None and server.stdin is not None
    url = server.stdout.readline().strip()
    _raw()  # (the SDK imported first: its import is not what is measured)
    tracemalloc.start()
    try:
        episodes = play_concurrent(
            EINSTEIN,
            PUZZLE,
            {"player_0": f"llm:model=fake,base_url={url}", "player_1": "planner"},
            episodes=2,
            seed=0,
            concurrency=1,
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        server.stdin.close()
        made = int(server.stdout.readline())
        server.wait()
    infos = [e.infos["player_0"] for e in episodes]
    oversize = sum("over the limit" in r for i in infos for r in i["invalid_replies"])
    assert oversize >= 5 and made == requests_recorded(episodes, "player_0")
    assert peak < 16 * MIB  # (one 10 MiB reply read whole is more than that)
    prompt = sum(i["prompt_tokens"] for i in infos)
    assert prompt < made * 3000  # every request's prompt is a puzzle's, never a reply quoted back
    assert sum(i["completion_tokens"] for i in infos) > oversize * len(HUGE) // 4  # (their usage is billed)
    cached = list(settings().cache_dir.rglob("*.json"))
    assert cached and max(f.stat().st_size for f in cached) < 4000


# ---------------------------------------------------------------------------
# 6. Secrets, in every encoding, echoed in errors and completions
# ---------------------------------------------------------------------------
def encodings(secret: str) -> list[str]:
    """The forms a secret may reach a file in: as typed, case-folded, percent-encoded, base64'd."""
    b64 = base64.b64encode
    return [secret, secret.lower(), secret.upper(), quote(secret, safe=""), quote_plus(secret),
            b64(secret.encode()).decode(), b64(f"Bearer {secret}".encode()).decode(),
            base64.urlsafe_b64encode(secret.encode()).decode(), b64(f"user:{secret}".encode()).decode(),
            b64(f"Authorization: Bearer {secret}".encode()).decode()]  # fmt: skip


def leaks(text: str, secrets: list[str]) -> list[str]:
    folded = text.lower()
    return [form for s in secrets for form in encodings(s) if form.lower() in folded]


def test_a_percent_encoded_parameter_name_is_masked() -> None:
    assert public_url("https://h/v1?api%5Fk%65y=SECRET-pn-1&v=1") == "https://h/v1?api%5Fk%65y=***&v=1"
    assert public_url("https://h/v1?api%255Fk%2565y=SECRET-pn-2") == "https://h/v1?api%255Fk%2565y=***"
    assert leaks(redact("echoed: SECRET-pn-1, SECRET-pn-2"), ["SECRET-pn-1", "SECRET-pn-2"]) == []


def test_a_registered_key_is_masked_in_every_encoding_and_case() -> None:
    key = "sk-proj-Zq8/Tt+Uv=Ww_Xx-Yy0123456789"
    configure(api_key=key)
    for form in encodings(key):
        assert leaks(redact(f"error: {form} was rejected"), [key]) == [], form
        assert leaks(redact_reply(f"I was told {form}."), [key]) == [], form
    register_secret("pass")  # a short one (a password, a dummy key) stays a word in completions
    assert redact_reply("ACTION: pass") == "ACTION: pass" and "pass" not in redact("user:pass")


def _echo(server: ScriptedLLMServer, secrets: list[str], answer: Callable[[dict[str, Any], int], Reply],
          completion: Callable[[str], Reply]) -> Callable[[dict[str, Any], int], Reply]:  # fmt: skip
    """A server that echoes what it was sent (the Authorization header, the path with its query) and every
    secret in every encoding: in one request of three in an error body, in another inside the completion."""

    def script(request: dict[str, Any], n: int) -> Reply:
        echo = " ".join([server.authorizations[n], server.paths[n], *(f for s in secrets for f in encodings(s))])
        if n % 3 == 0:
            return Reply(status=500, body={"error": {"message": f"bad credentials: {echo}"}})
        if n % 3 == 1:
            return completion(echo)
        return answer(request, n)

    return script


@pytest.mark.slow  # (two runs and a replay through the command)
@pytest.mark.parametrize("key_from", ["flag", "environment"])
def test_no_secret_reaches_a_file_or_the_terminal_in_any_encoding(
    key_from: str, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, password, query = "sk-proj-Key/1+2=3_x-0123456789", "pw-Pass/9+8=7", "qs-Query/5+4=3"
    secrets = [key, password, query, f"usr:{password}"]
    if key_from == "environment":
        monkeypatch.setenv("OPENAI_API_KEY", key)
    out = tmp_path / "out"
    outputs: list[tuple[str, str]] = []  # (stdout, stderr) of each command

    def play(url: str, env: str, roles: list[str], *extra: str) -> int:
        name = f"{env}-{len(outputs)}"
        status = main(["play", "--env", env, *roles, "--episodes", "2", "--model", "fake", "--base-url", url,
                       "--no-endpoint-check", "--max-retries", "2", "--backoff", "0.01", "--records",
                       str(out / f"{name}.jsonl"), "--cache-dir", str(out / "cache"), *extra,
                       *(["--api-key", key] if key_from == "flag" else [])])  # fmt: skip
        captured = capsys.readouterr()
        outputs.append((captured.out, captured.err))
        return status

    def einstein_reply(echo: str) -> Reply:
        return Reply(content=f"PASS, as my key {echo} says")  # not an action: quoted back in the re-ask

    def audit_reply(echo: str) -> Reply:
        return reply_json({**GOOD, "text": f"My key is {echo}"[:1500]})

    for env, roles, answer, completion in (
        (EINSTEIN, ["--player_0", "llm", "--player_1", "planner"], good_script, einstein_reply),
        ("exchange-audit", ["--proposer", "llm", "--validator", "llm"], honest_script, audit_reply),
    ):
        with ScriptedLLMServer(honest_script) as server:
            server._server.script = _echo(server, secrets, answer, completion)
            port = server.url.split(":")[2].split("/")[0]
            url = f"http://usr:{quote(password, safe='')}@127.0.0.1:{port}/v1?api-key={quote(query, safe='')}"
            assert play(url, env, roles) in (0, INCOMPLETE)
            made = len(server.requests)
            # (every kind of echo was served: n % 3 cycles; and the secrets were sent)
            assert made >= 6 and all(quote(query, safe="") in p for p in server.paths)
            assert play(url, env, roles, "--cache", "read") in (0, INCOMPLETE)
            assert len(server.requests) == made  # the replay asked nothing
        live, replay = sorted(out.glob(f"{env}-*.jsonl"))
        assert [_transport_free(x) for x in live.read_text().splitlines()] == [
            _transport_free(x) for x in replay.read_text().splitlines()
        ]
        assert _table(outputs[-2][0]) == _table(outputs[-1][0])
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) > 10  # records and recordings: there was something to look in
    found = {str(p): leaks(p.read_text(errors="replace"), secrets) for p in files}
    assert {p: f for p, f in found.items() if f} == {}
    assert [leaks(out + err, secrets) for out, err in outputs] == [[]] * len(outputs)
    assert all(err.startswith("eq-env: replaying the LLM answers recorded in") for _, err in outputs[1::2])


# ---------------------------------------------------------------------------
# 11. No run answers from recordings it did not make, unless asked to, and then it says so first
# ---------------------------------------------------------------------------
def _play(url: str, *extra: str) -> int:
    return main(["play", "--proposer", "llm", "--episodes", "2", "--model", "m", "--base-url", url,
                 "--no-endpoint-check", "--json", *extra])  # fmt: skip


def test_play_asks_the_endpoint_by_default_whatever_is_recorded(tmp_path: Path, monkeypatch: Any,
                                                                capsys: Any) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)  # (the default directory, .eq_env_cache/llm, is the working directory's)
    configure(cache_dir=Path(".eq_env_cache/llm"))
    with ScriptedLLMServer(honest_script) as server:
        assert _play(server.url) == 0
        asked = len(server.requests)
        assert asked > 0 and list((tmp_path / ".eq_env_cache/llm").rglob("*.json"))  # recorded, for replays
        capsys.readouterr()
        server._server.script = lambda request, n: reply_json({**GOOD, "text": "Another model."})  # same name
        assert _play(server.url) == 0
        assert len(server.requests) == 2 * asked  # asked again: the recordings of the first run are not answers
        out = capsys.readouterr()
        assert json.loads(out.out)["llm"]["proposer"]["requests"] == asked and "recordings" not in out.err
        assert _play(server.url, "--cache", "readwrite") == 0  # reuse asked for: said on the first line
        assert len(server.requests) == 2 * asked
        err = capsys.readouterr().err
        assert err.startswith("eq-env: answering LLM requests from the recordings in .eq_env_cache/llm")
        assert "pass --cache write to ask it for every answer" in err.splitlines()[0]
        assert _play(server.url, "--cache", "read") == 0
        assert capsys.readouterr().err.startswith("eq-env: replaying the LLM answers recorded in .eq_env_cache/llm")


def test_the_cache_defaults_of_each_kind_of_command(tmp_path: Path) -> None:
    from eq_env.agents.cli import cache_mode_default, replay_notice
    from eq_env.cli import build_parser

    assert cache_mode_default(".eq_env_cache/llm") == "write" and cache_mode_default("OUT/llm_cache") == "readwrite"
    parser = build_parser()
    assert parser.parse_args(["play", "--proposer", "llm"]).cache == "write"
    assert parser.parse_args(["einstein", "play"]).cache == "write"
    assert parser.parse_args(["reproduce", "--out", str(tmp_path)]).cache == "readwrite"  # resumes its own run
    assert replay_notice("readwrite", tmp_path / "nothing") is None  # nothing recorded: nothing to say
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / "abc.json").write_text("{}")
    assert replay_notice("write", tmp_path) is None and replay_notice("off", tmp_path) is None
    assert replay_notice("readwrite", tmp_path) is not None


# ---------------------------------------------------------------------------
# Replies the Einstein grammar reads: quoted as written, and read in linear time
# ---------------------------------------------------------------------------
def test_a_reply_that_is_no_action_is_quoted_as_written() -> None:
    from eq_env.einstein_puzzle.grammar import GrammarError, parse_action

    with pytest.raises(GrammarError, match="'I Pass Now, Key sk-ABC' is not an action"):
        parse_action("I Pass  Now, Key sk-ABC", 4)  # (not case-folded: a secret in it stays maskable)


def test_the_action_line_is_found_the_same_way_in_linear_time() -> None:
    import random

    from eq_env.agents.einstein_puzzle.policies import read_action
    from eq_env.einstein_puzzle.grammar import GrammarError, action_line, parse_action
    from eq_env.einstein_puzzle.rules import Pass

    def outcome(read: Callable[[str], Any], text: str) -> Any:
        try:
            return read(text)
        except GrammarError as err:
            return str(err)

    rng = random.Random(0)
    atoms = ["\n", " ", "\r", "\t", "\x0b", "\u2028", "\x85", "\xa0", "ACTION", "action", ":", "pass", "x", "é",
             "move 0 from top_start to common", "\n\n"]  # fmt: skip
    for _ in range(2000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 12)))
        assert outcome(lambda t: read_action(t, 4), text) == outcome(lambda t: parse_action(action_line(t), 4), text)
    # a megabyte of line breaks (the search for the ACTION line took hours on it)
    assert read_action("\n" * 1_000_000 + "ACTION: pass\n" + " \n" * 100_000, 4) == Pass()
