"""LLM plumbing under stress: odd response bodies, concurrent asks, recorded failures, resumes, billing.

Like test_llm_agents.py, every endpoint is a local eq_env.agents.fake_server.ScriptedLLMServer.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
from pathlib import Path
from typing import Any

import pytest
from test_llm_agents import GOOD, PAPER, fast_llm_settings, play_one, proposer_obs  # noqa: F401 - a fixture

from eq_env.agents.client import (
    LLMClient,
    LLMSettings,
    ResponseCache,
    UnreadableCacheEntryError,
    UnreadableResponseError,
    _retry_after,
    configure,
    parse_chat_completion,
    request_key,
    settings,
)
from eq_env.agents.exchange_audit.policies import LLMProposer
from eq_env.agents.exchange_audit.scripts import honest_script
from eq_env.agents.fake_server import Reply, ScriptedLLMServer, reply_json
from eq_env.core.policy import PolicyError, PolicySetupError
from eq_env.exchange_audit.rules import ProposerAction
from eq_env.exchange_audit.runner import EpisodeRecord, FailedEpisode, play_concurrent


def body(data: Any) -> bytes:
    return json.dumps(data).encode()


# ---------------------------------------------------------------------------
# Response bodies
# ---------------------------------------------------------------------------
class TestResponseBodies:
    @pytest.mark.parametrize(
        "raw",
        [b"<html>502 Bad Gateway</html>", b"", body([1, 2]), body({"choices": "none"}), body({"choices": []}),
         body({"choices": ["text"]}), body({"choices": [{"message": "hi"}]}), body({"object": "error"})],
    )  # fmt: skip
    def test_bodies_that_are_not_completions_are_unreadable(self, raw: bytes) -> None:
        with pytest.raises(UnreadableResponseError):
            parse_chat_completion(raw)

    def test_message_shapes_and_usage(self) -> None:
        def completion(message: dict, usage: Any = None) -> bytes:
            return body({"choices": [{"message": message}], **({"usage": usage} if usage is not None else {})})

        ok = {"prompt_tokens": 10, "completion_tokens": 3}
        assert parse_chat_completion(completion({"content": "x"}, ok)) == ("x", ok)
        assert parse_chat_completion(completion({"content": None, "refusal": "no"}, ok)) == ("", ok)
        parts = {"content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}
        assert parse_chat_completion(completion(parts, ok))[0] == "ab"
        assert parse_chat_completion(completion({"content": 5}))[0] == ""
        for usage in ({}, {"prompt_tokens": "10", "completion_tokens": 3},
                      {"prompt_tokens": -1, "completion_tokens": 3},
                      {"prompt_tokens": True, "completion_tokens": 3}, [10, 3]):  # fmt: skip
            assert parse_chat_completion(completion({"content": "x"}, usage))[1] is None, usage

    def test_an_unreadable_body_is_retried_and_never_cached(self) -> None:
        replies = [Reply(raw=b"<html>upstream hiccup</html>"), Reply(body={"choices": "broken"}), reply_json(GOOD)]
        with ScriptedLLMServer(replies) as server:
            action, info = play_one(LLMProposer(model="m", base_url=server.url), proposer_obs())
        assert int(action["action"]) == ProposerAction.REQUEST_APPROVAL and not info["fallback"]
        assert info["transport"]["retries"] == 2 and info["transport"]["requests"] == 3
        assert all("UnreadableResponseError" in e for e in info["transport"]["errors"])
        cached = [json.loads(f.read_text()) for f in Path(settings().cache_dir).rglob("*.json")]
        assert [c["content"] for c in cached] == [json.dumps(GOOD)]

    def test_missing_usage_is_estimated_and_flagged(self) -> None:
        no_usage = Reply(body={"choices": [{"message": {"role": "assistant", "content": json.dumps(GOOD)}}]})
        with ScriptedLLMServer([no_usage]) as server:
            _, info = play_one(LLMProposer(model="m", base_url=server.url), proposer_obs())
        assert info["usage_estimated"] is True
        assert info["completion_tokens"] == -(-len(json.dumps(GOOD)) // 4) and info["prompt_tokens"] > 100
        with ScriptedLLMServer(honest_script) as server:
            _, info = play_one(LLMProposer(model="m", base_url=server.url), proposer_obs(seed=1))
        assert info["usage_estimated"] is False


# ---------------------------------------------------------------------------
# Retries
# ---------------------------------------------------------------------------
class TestRetries:
    def test_retry_after_forms(self) -> None:
        assert _retry_after({"retry-after": "2"}) == 2.0
        assert _retry_after({"retry-after-ms": "250"}) == 0.25
        assert _retry_after({"retry-after": "nan"}) is None  # unreadable: our own backoff
        assert _retry_after({"retry-after": "inf"}) is None
        assert _retry_after({"retry-after": "-3"}) == 0.0
        assert _retry_after({"retry-after": "99999"}) == 300.0  # capped
        later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=30)
        waited = _retry_after({"retry-after": email.utils.format_datetime(later, usegmt=True)})
        assert waited is not None and 25 <= waited <= 30
        past = email.utils.format_datetime(datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc), usegmt=True)
        assert _retry_after({"retry-after": past}) == 0.0
        assert _retry_after({"retry-after": "next tuesday"}) is None
        assert _retry_after({}) is None

    @pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 503, 529])
    def test_transient_statuses_are_retried(self, status: int) -> None:
        with ScriptedLLMServer([Reply(status=status), reply_json(GOOD)]) as server:
            _, info = play_one(LLMProposer(model="m", base_url=server.url), proposer_obs())
        assert info["transport"]["retries"] == 1 and str(status) in info["transport"]["errors"][0]

    def test_a_permanent_status_fails_the_episode_at_once(self) -> None:
        with ScriptedLLMServer([Reply(status=422), reply_json(GOOD)]) as server:
            out = play_concurrent(PAPER, f"llm:model=m,base_url={server.url}", "rule", episodes=1, seed=0)
            assert len(server.requests) == 1
        assert isinstance(out[0], FailedEpisode) and "request failed (422)" in out[0].error
        assert out[0].info is not None and out[0].info["transport"]["requests"] == 1

    @pytest.mark.parametrize("status", [401, 403, 404])
    def test_a_status_no_request_can_pass_stops_the_run(self, status: int) -> None:
        # a rejected key or an unknown model fails every request alike: stop, instead of failing each episode
        saved: list[Any] = []
        # (the good answers come later than the refusal: the episodes in flight with it cannot finish first,
        # however the machine schedules them)
        with ScriptedLLMServer([Reply(status=status), reply_json(GOOD, delay=0.5)]) as server:
            with pytest.raises(PolicySetupError, match=f"\\({status}"):
                play_concurrent(PAPER, f"llm:model=m,base_url={server.url}", "rule", episodes=6, seed=0,
                                on_episode=saved.append)  # fmt: skip
            assert len(server.requests) <= 8 and saved == []  # (the episodes in flight at once, at most)

    def test_settings_are_validated(self) -> None:
        for bad in ({"timeout": 0}, {"timeout": -1}, {"backoff": float("nan")}, {"max_retries": 1.5},
                    {"cache": "sometimes"}):  # fmt: skip
            with pytest.raises(ValueError):
                LLMSettings(**bad)


# ---------------------------------------------------------------------------
# Concurrency: one request per key, modes move once
# ---------------------------------------------------------------------------
def test_concurrent_identical_requests_share_one_answer() -> None:
    async def both(a: LLMProposer, b: LLMProposer, obs: dict) -> list[Any]:
        try:
            return list(await asyncio.gather(a.aact(obs), b.aact(obs)))
        finally:
            await a.aclose()
            await b.aclose()

    with ScriptedLLMServer(honest_script, latency=0.2) as server:
        a = LLMProposer(model="m", base_url=server.url)
        b = LLMProposer(model="m", base_url=server.url, strip=True)  # the action-only regime of the same state
        (act_a, info_a), (act_b, info_b) = asyncio.run(both(a, b, proposer_obs()))
        assert len(server.requests) == 1  # asked once, answered twice
    assert act_a["reported_numbers"].tolist() == act_b["reported_numbers"].tolist() and act_b["text"] == ""
    # the same attributed tokens; only the asker was billed
    assert info_a["completion_tokens"] == info_b["completion_tokens"] > 0
    billed = sorted(i["transport"]["billed_completion_tokens"] for i in (info_a, info_b))
    assert billed == [0, info_a["completion_tokens"]]


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_concurrent_rejections_move_one_mode_at_a_time() -> None:
    def script(request: dict, n: int) -> Reply:
        if (request.get("response_format") or {}).get("type") == "json_schema":
            return Reply(status=400, body={"error": {"message": "response_format json_schema is not supported"}},
                         delay=0.1)  # fmt: skip
        return honest_script(request, n)

    with ScriptedLLMServer(script) as server:
        out = play_concurrent(PAPER, f"llm:model=m,base_url={server.url}", "rule", episodes=8, seed=0, concurrency=8)
        kinds = [(r.get("response_format") or {}).get("type") for r in server.requests]
    assert all(isinstance(e, EpisodeRecord) for e in out)
    # eight requests were rejected at once; they all moved to JSON mode, none skipped it for plain text
    assert kinds.count("json_schema") == 8 and kinds.count("json_object") == 8 and None not in kinds
    assert {e.proposer_info["output_mode"] for e in out} == {"json_object"}  # type: ignore[index]


# ---------------------------------------------------------------------------
# The cache: failures, odd files, odd strings
# ---------------------------------------------------------------------------
def test_failures_are_recorded_replayed_and_asked_again() -> None:
    spec = "llm:model=m,base_url={}"
    with ScriptedLLMServer([Reply(status=500)]) as down:
        first = play_concurrent(PAPER, spec.format(down.url), "rule", episodes=2, seed=0)
    assert all(isinstance(e, FailedEpisode) for e in first)
    assert all(e.info and e.info["transport"]["retries"] == settings().max_retries for e in first)  # type: ignore[union-attr]
    with ScriptedLLMServer(honest_script) as up:
        # a replay fails the same way, and asks nothing; the recording names the original failure
        LLMClient.forget()
        configure(cache="read")
        replay = play_concurrent(PAPER, spec.format(down.url), "rule", episodes=2, seed=0)
        assert all(isinstance(e, FailedEpisode) and "gave up" in e.error for e in replay)
        assert [e.error for e in replay] == [e.error for e in first]  # the same failure, word for word
        # readwrite asks again (here the same URL key is kept by pointing the endpoint at the live server)
        configure(cache="readwrite")
        again = play_concurrent(PAPER, spec.format(up.url), "rule", episodes=2, seed=0)
        assert all(isinstance(e, EpisodeRecord) for e in again) and len(up.requests) == 2


def test_a_recorded_failure_becomes_an_answer_when_asked_again_in_readwrite() -> None:
    flaky = {"down": True}

    def script(request: dict, n: int) -> Reply:
        return Reply(status=503) if flaky["down"] else honest_script(request, n)

    with ScriptedLLMServer(script) as server:
        spec = f"llm:model=m,base_url={server.url}"
        assert isinstance(play_concurrent(PAPER, spec, "rule", episodes=1, seed=0)[0], FailedEpisode)
        flaky["down"] = False
        assert isinstance(play_concurrent(PAPER, spec, "rule", episodes=1, seed=0)[0], EpisodeRecord)
        LLMClient.forget()
        configure(cache="read")  # the answer replaced the recorded failure
        assert isinstance(play_concurrent(PAPER, spec, "rule", episodes=1, seed=0)[0], EpisodeRecord)


def test_odd_cache_files_are_misses_and_get_overwritten(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    junks = [
        '{"content": 5, "prompt_tokens": 1, "completion_tokens": 1}',
        "[1, 2]",
        "not json",
        '{"content": "x", "prompt_tokens": -1, "completion_tokens": 1}',
        '{"error": 7}',
    ]
    for i, junk in enumerate(junks):
        path = cache._path(f"k{i}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(junk)
        assert cache.lookup(f"k{i}") is None, junk  # readwrite: a miss, to be written over
        with pytest.raises(UnreadableCacheEntryError, match=str(path)):  # a replay: says which file is bad
            cache.get(f"k{i}")
    configure(cache_dir=tmp_path / "c")
    with ScriptedLLMServer(honest_script) as server:
        play_one(LLMProposer(model="m", base_url=server.url), proposer_obs())
        (stored,) = list((tmp_path / "c").rglob("*.json"))
        stored.write_text('{"content": null}')
        LLMClient.forget()
        _, info = play_one(LLMProposer(model="m", base_url=server.url), proposer_obs())
        assert len(server.requests) == 2 and info["transport"]["cached"] == 0
    assert isinstance(json.loads(stored.read_text())["content"], str)  # the bad file was overwritten


def test_any_string_keys_a_request() -> None:
    base = {"model": "m", "messages": [{"role": "user", "content": "lone surrogate \ud800 and é"}]}
    assert len(request_key(base)) == 64
    assert request_key(base) != request_key({**base, "messages": [{"role": "user", "content": "é"}]})


# ---------------------------------------------------------------------------
# Runs: failures are retried on resume; no bad reply ends a run
# ---------------------------------------------------------------------------
def test_a_resumed_run_plays_its_failed_episodes_again(tmp_path: Path) -> None:
    from eq_env.core.experiments import Condition, ResultsStore, run_all

    flaky = {"down": True}

    def script(request: dict, n: int) -> Reply:
        return Reply(status=500) if flaky["down"] and n % 3 == 0 else honest_script(request, n)

    configure(max_retries=0)
    with ScriptedLLMServer(script) as server:
        condition = Condition(PAPER, {"proposer": f"llm:model=m,base_url={server.url}", "validator": "rule"}, 12)
        store = ResultsStore(tmp_path / "results.jsonl")
        (first,) = run_all([condition], [0], store, progress=False, concurrency=1)
        lost = len(first["failed"])
        assert 0 < lost < 12 and first["llm"]["failed_episodes"] == lost
        asked = len(server.requests)
        flaky["down"] = False
        (second,) = run_all([condition], [0], store, progress=False, concurrency=1)
        assert not second["failed"] and len(server.requests) == asked + lost  # only the failed ones again
        (third,) = run_all([condition], [0], store, progress=False)
        assert third == second and len(server.requests) == asked + lost  # complete: nothing left to do
    configure(cache="off")
    with ScriptedLLMServer(honest_script) as server:
        condition = Condition(PAPER, {"proposer": f"llm:model=m,base_url={server.url}", "validator": "rule"}, 12)
        clean = run_all([condition], [0], type(store)(tmp_path / "clean.jsonl"), progress=False)[0]
    assert clean["metrics"] == second["metrics"]


def test_a_policy_that_raises_anything_fails_only_its_episode() -> None:
    from eq_env.core.policy import BasePolicy

    class Buggy(BasePolicy):
        role = "validator"

        def act(self, observation: Any) -> int:
            raise ZeroDivisionError("oops")

    with ScriptedLLMServer(honest_script) as server:
        out = play_concurrent(PAPER.replace(q=0.0), f"llm:model=m,base_url={server.url}", Buggy(), episodes=6, seed=0)
    failed = [e for e in out if isinstance(e, FailedEpisode)]
    assert failed and all(e.role == "validator" and e.error == "ZeroDivisionError: oops" for e in failed)
    assert len(out) == 6  # the NO_TRADE episodes never called the validator and finished


def test_llm_runs_stay_in_process_with_jobs(tmp_path: Path) -> None:
    """jobs=2 sends scripted runs to worker processes, but LLM runs stay here: the action-only regime
    reuses the with-artifacts answers (asking once per state), which separate processes could not."""
    from eq_env.core.experiments import Condition, ResultsStore, run_all

    configure(cache="off")
    with ScriptedLLMServer(honest_script) as server:
        spec = f"llm:model=m,base_url={server.url}"
        conditions = [
            Condition(PAPER, {"proposer": p, "validator": "rule"}, 10)
            for p in (spec, spec + ",strip=true", "honest", "silent")
        ]
        records = run_all(conditions, [0, 1], ResultsStore(tmp_path / "r.jsonl"), jobs=2, progress=False)
        assert len(records) == 8 and len(server.requests) == 20  # 2 seeds x 10 states, asked once each


def test_the_endpoint_from_the_environment_keys_results(monkeypatch: pytest.MonkeyPatch) -> None:
    from eq_env.core.experiments import canonical_spec

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1111/v1")
    a = canonical_spec("llm:model=m", "proposer")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:2222/v1/")
    b = canonical_spec("llm:model=m", "proposer")
    assert "127.0.0.1:1111/v1'" in a and "127.0.0.1:2222/v1'" in b
    assert canonical_spec("llm:model=m,base_url=http://127.0.0.1:2222/v1", "proposer") == b


# ---------------------------------------------------------------------------
# The command line with LLM policies
# ---------------------------------------------------------------------------
def test_play_records_failed_episodes_renders_and_exits_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eq_env.cli import INCOMPLETE, main

    def script(request: dict, n: int) -> Reply:
        return Reply(status=500) if n % 4 == 0 else honest_script(request, n)

    with ScriptedLLMServer(script) as server:
        status = main(["play", "--proposer", "llm", "--model", "m", "--base-url", server.url, "--episodes", "6",
                       "--max-retries", "0", "--concurrency", "1", "--render", "--records", str(tmp_path / "r.jsonl"),
                       "--cache", "off"])  # fmt: skip
    out, err = capsys.readouterr()
    assert status == INCOMPLETE
    lines = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    failed = [x for x in lines if x.get("failed")]
    assert len(lines) == 6 and failed and all("gave up after 0 retries" in x["error"] for x in failed)
    assert f"{len(failed)} of 6 episodes failed" in err
    assert out.count("decision") >= 6 - len(failed)  # each finished episode was rendered
    assert "approval_rate" in out  # and the table of the others was printed


def test_flags_are_checked_and_fill_the_spec(capsys: pytest.CaptureFixture[str]) -> None:
    from eq_env.cli import main

    for bad in (["--concurrency", "0"], ["--timeout", "0"], ["--max-retries", "-1"], ["--max-reasks", "x"]):
        with pytest.raises(SystemExit) as exc:
            main(["play", "--proposer", "llm", *bad])
        assert exc.value.code == 2
        assert "expected a" in capsys.readouterr().err
    from eq_env.agents.cli import LLM_FLAGS
    from eq_env.cli import build_parser
    from eq_env.core.policy import make_policy

    args = build_parser().parse_args(["play", "--model", "m", "--max-reasks", "0", "--temperature", "0.5"])
    policy = make_policy(LLM_FLAGS.fill("llm", args), "proposer")
    assert isinstance(policy, LLMProposer) and policy.max_reasks == 0 and policy.temperature == 0.5
    kept = make_policy(LLM_FLAGS.fill("llm:max_reasks=4", args), "proposer")
    assert isinstance(kept, LLMProposer) and kept.max_reasks == 4  # the spec wins over the flag


def test_sweep_dry_run_shows_every_llm_policy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from eq_env.cli import main

    assert main(["sweep", "--out", str(tmp_path), "--proposer", "llm:model=a", "--proposer", "llm:model=b",
                 "--proposer", "honest", "--validator", "llm:model=c,gate=none", "--dry-run"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert out.count("===== proposer") == 2 and out.count("===== validator") == 1
    assert "model='a'" in out and "model='b'" in out and "gate='none'" in out
    assert not (tmp_path / "results.jsonl").exists()  # nothing was run


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_rerun_replays_an_llm_record_from_its_recordings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from eq_env.cli import main
    from eq_env.core.experiments import ResultsStore

    out = tmp_path / "sweep"
    with ScriptedLLMServer(honest_script) as server:
        assert main(["sweep", "--out", str(out), "--proposer", "llm", "--model", "m", "--base-url", server.url,
                     "--seeds", "1", "--episodes", "8", "--grid", "q=0.5"]) == 0  # fmt: skip
        asked = len(server.requests)
        LLMClient.forget()
        (key,) = ResultsStore(out / "results.jsonl").load()
        capsys.readouterr()
        assert main(["rerun", str(out / "results.jsonl"), key]) == 0
        assert len(server.requests) == asked  # replayed from OUT/llm_cache: no request
    assert "identical" in capsys.readouterr().out


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_a_waiter_asks_itself_when_the_first_asker_is_cancelled() -> None:
    async def scenario(url: str) -> Any:
        a = LLMProposer(model="m", base_url=url)
        b = LLMProposer(model="m", base_url=url)
        first = asyncio.create_task(a.aact(proposer_obs()))
        await asyncio.sleep(0.05)  # the first request is in flight
        second = asyncio.create_task(b.aact(proposer_obs()))  # waits on it
        await asyncio.sleep(0.05)
        first.cancel()
        try:
            return await asyncio.wait_for(second, 5)
        finally:
            await a.aclose()
            await b.aclose()

    with ScriptedLLMServer(honest_script, latency=0.3) as server:
        action, info = asyncio.run(scenario(server.url))
        assert len(server.requests) == 2  # the waiter sent its own request
    assert int(action["action"]) in (0, 1) and not info["fallback"]


def test_a_waiter_never_hangs_when_the_cache_cannot_be_written(monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(self: ResponseCache, key: str, value: dict) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ResponseCache, "put", full_disk)

    async def both(url: str) -> list[Any]:
        a, b = LLMProposer(model="m", base_url=url), LLMProposer(model="m", base_url=url)
        try:
            return await asyncio.wait_for(
                asyncio.gather(a.aact(proposer_obs()), b.aact(proposer_obs()), return_exceptions=True), 5
            )
        finally:
            await a.aclose()
            await b.aclose()

    for script in ([Reply(status=500)], honest_script):  # the failure, then the answer, cannot be recorded
        with ScriptedLLMServer(script) as server:
            out = asyncio.run(both(server.url))
        # the asker and the waiter got one outcome (the disk's failure costs the recording, not the answer)
        assert len(out) == 2 and not any(isinstance(x, OSError) for x in out)
        assert isinstance(out[0], PolicyError) == isinstance(out[1], PolicyError) == (script is not honest_script)
