"""LLM runs under a hostile endpoint and a careless user: replays that reproduce failures,
costs that count every request, caches that cannot be written, specs that cannot be injected, secrets
that never reach a file, endpoints that fail fast.

Every endpoint is a local eq_env.agents.fake_server.ScriptedLLMServer; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import csv
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from test_llm_agents import GOOD, PAPER, fast_llm_settings, play_one, proposer_obs  # noqa: F401 - a fixture

from eq_env.agents.client import LLMClient, LLMSettings, LLMSetupError, _backoff, configure, settings
from eq_env.agents.exchange_audit.policies import LLMProposer, LLMValidator
from eq_env.agents.exchange_audit.scripts import honest_script, observation_in
from eq_env.agents.fake_server import ChaosScript, Reply, ScriptedLLMServer, reply_json
from eq_env.cli import INCOMPLETE, main
from eq_env.core.experiments import Condition, ResultsStore
from eq_env.core.policy import PolicySetupError, make_policy
from eq_env.exchange_audit.runner import EpisodeRecord, FailedEpisode, play_concurrent

FAST = ["--max-retries", "0", "--backoff", "0.01", "--timeout", "2"]


def reproduce(out: Path, url: str, *extra: str, episodes: int = 1) -> int:
    """``eq-env reproduce`` with an LLM proposer, one seed, few episodes."""
    return main(["reproduce", "--out", str(out), "--proposer", "llm", "--model", "m", "--base-url", url,
                 "--seeds", "1", "--episodes", str(episodes), *FAST, *extra])  # fmt: skip


def results(out: Path) -> list[dict[str, Any]]:
    return list(ResultsStore(out / "results.jsonl").load().values())


def failed_episodes(out: Path) -> list[tuple[str, int, int, str]]:
    return sorted((r["key"], f["episode"], f["seed"], f["error"]) for r in results(out) for f in r.get("failed", []))


def requests_in_records(out: Path) -> int:
    return sum(r["llm"][role]["transport"]["requests"] for r in results(out) for role in ("proposer", "validator")
               if r.get("llm", {}).get(role))  # fmt: skip


def timeouts_in_episodes(out: Path) -> int:
    """Requests that timed out, over every attempt the episode files recorded."""
    lines = [json.loads(line) for path in (out / "episodes").glob("*.jsonl") for line in path.read_text().splitlines()]
    roles = [[*(e.get("infos") or {}).values(), e.get("proposer_info"), e.get("validator_info")] for e in lines]
    infos = [i for per_episode in roles for i in per_episode if i]
    return sum("Timeout" in err for i in infos for err in i["transport"]["errors"])


def drawn_costs(out: Path) -> list[tuple[str, ...]]:
    """What a run's samples cost when drawn, per condition: the same in a replay."""
    fields = ("condition", "failed_episodes", "calls", "prompt_tokens", "completion_tokens", "fallbacks", "reasks")
    with (out / "llm_costs.csv").open() as fh:
        return [tuple(r[f] for f in fields) for r in csv.DictReader(fh)]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


# ---------------------------------------------------------------------------
# 1. A replay reproduces a run whose requests failed; both regimes of a state share one outcome
# ---------------------------------------------------------------------------
@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_a_failure_is_shared_by_both_regimes_and_replayed(tmp_path: Path) -> None:
    def first_request_fails(request: dict, n: int) -> Reply:
        return Reply(status=500) if n == 0 else honest_script(request, n)

    live, replay = tmp_path / "live", tmp_path / "replay"
    with ScriptedLLMServer(first_request_fails) as server:
        assert reproduce(live, server.url) == INCOMPLETE
        sent = len(server.requests)
        # the with-artifacts and action-only regimes of q = 0 sent the same request: one outcome, a failure
        q0 = [r for r in results(live) if r["labels"].get("table") == "table1" and r["labels"]["q"] == 0.0]
        assert sorted(r["labels"]["regime"] for r in q0) == ["action_only", "artifacts"]
        assert all(len(r["failed"]) == 1 for r in q0)
        assert q0[0]["failed"][0]["error"] == q0[1]["failed"][0]["error"]
        assert main(["reproduce", "--out", str(replay), "--proposer", "llm", "--model", "m", "--base-url",
                     server.url, "--seeds", "1", "--episodes", "1", *FAST, "--cache", "read", "--cache-dir",
                     str(live / "llm_cache")]) == INCOMPLETE  # fmt: skip
        assert len(server.requests) == sent  # the replay asked nothing
    for name in ("table1.csv", "table2.csv", "table1.md", "table2.md"):
        assert (live / name).read_bytes() == (replay / name).read_bytes(), name
    assert failed_episodes(live) == failed_episodes(replay)
    # eq-env rerun replays the failed run from its recording: the same metrics
    key = q0[0]["key"]
    assert main(["rerun", str(live / "results.jsonl"), key]) == 0


@pytest.mark.slow
def test_a_hostile_endpoint_is_recorded_and_replayed_exactly(tmp_path: Path) -> None:
    """a server failing about a third of its requests in every way it can; the
    run and its replay give byte-identical tables and the same failed episodes, the replay asks
    nothing, and every request the server saw is in the records."""
    script = ChaosScript(delay=0.8, answer=honest_script)
    flags = ["--validator", "llm", "--episodes", "10", "--concurrency", "5", "--max-retries", "1", "--backoff",
             "0.01", "--timeout", "0.4"]  # fmt: skip
    live, replay = tmp_path / "live", tmp_path / "replay"
    with ScriptedLLMServer(script) as server:
        base = ["reproduce", "--proposer", "llm", "--model", "chaos", "--base-url", server.url, "--seeds", "1"]
        assert main([*base, "--out", str(live), *flags]) == INCOMPLETE
        sent = len(server.requests)
        assert main([*base, "--out", str(replay), *flags, "--cache", "read", "--cache-dir",
                     str(live / "llm_cache")]) == INCOMPLETE  # fmt: skip
        assert len(server.requests) == sent
    failing = sum(script.fate(r) != "good" for r in server.requests) / sent
    assert 0.25 < failing < 0.6, failing  # about a third of the requests met a failure mode
    assert set(ChaosScript.FATES) <= {script.fate(r) for r in server.requests}
    for name in ("table1.csv", "table2.csv", "table1.md", "table2.md"):
        assert (live / name).read_bytes() == (replay / name).read_bytes(), name
    assert drawn_costs(live) == drawn_costs(replay)  # (what the replay paid differs by design)
    assert failed_episodes(live) == failed_episodes(replay) != []
    # every request the server saw is in the records; a request that timed out may not have reached it
    counted = requests_in_records(live)
    assert sent <= counted <= sent + timeouts_in_episodes(live)
    with (live / "llm_costs.csv").open() as fh:
        assert sum(int(r["requests"]) for r in csv.DictReader(fh)) == counted
    assert requests_in_records(replay) == 0


def test_failures_are_shared_within_a_run_and_asked_again_by_the_next() -> None:
    flaky = {"down": True}

    def script(request: dict, n: int) -> Reply:
        return Reply(status=503) if flaky["down"] else honest_script(request, n)

    configure(max_retries=0)
    with ScriptedLLMServer(script) as server:
        full, stripped = f"llm:model=m,base_url={server.url}", f"llm:model=m,base_url={server.url},strip=true"
        conditions = [
            Condition(PAPER, {"proposer": full, "validator": "rule"}, 2),
            Condition(PAPER, {"proposer": stripped, "validator": "rule"}, 2),
        ]
        from eq_env.core.experiments import run_all

        store = ResultsStore(Path(settings().cache_dir).parent / "out" / "results.jsonl")
        first = run_all(conditions, [0], store, progress=False)
        assert [len(r["failed"]) for r in first] == [2, 2] and len(server.requests) == 2  # asked once per state
        flaky["down"] = False
        second = run_all(conditions, [0], store, progress=False)  # a new run asks the failures again
        assert [len(r.get("failed", [])) for r in second] == [0, 0] and len(server.requests) == 4
    # both records of the resumed runs count the earlier, failed attempt's request too
    assert sum(r["llm"]["proposer"]["transport"]["requests"] for r in second) == 4
    lines = store.path.read_text().splitlines()
    assert len(lines) == 2  # the resumed runs replaced their records instead of growing the file


# ---------------------------------------------------------------------------
# 2. Every request is in the records, the proposer's too when the validator fails
# ---------------------------------------------------------------------------
def test_the_proposers_costs_survive_a_failing_validator(tmp_path: Path) -> None:
    def script(request: dict, n: int) -> Reply:
        obs = observation_in(request) or {}
        return Reply(status=500) if obs.get("role") == "validator" else honest_script(request, n)

    configure(max_retries=1)
    with ScriptedLLMServer(script) as server:
        out = play_concurrent(PAPER, f"llm:model=m,base_url={server.url}",
                              f"llm:model=v,base_url={server.url}", episodes=10, seed=0)  # fmt: skip
        sent = len(server.requests)
    failed = [e for e in out if isinstance(e, FailedEpisode)]
    assert failed and all(e.role == "validator" for e in failed)
    assert all(e.infos["proposer_0"]["completion_tokens"] > 0 for e in failed)  # the proposer's answer, paid for
    counted = sum(i["transport"]["requests"] for e in out if isinstance(e, FailedEpisode) for i in e.infos.values())
    counted += sum(i["transport"]["requests"] for e in out if isinstance(e, EpisodeRecord)
                   for i in (e.proposer_info, e.validator_info) if i)  # fmt: skip
    assert counted == sent

    from eq_env.exchange_audit.runner import llm_summary

    summary = llm_summary([e for e in out if isinstance(e, EpisodeRecord)], failed)
    assert summary["proposer"]["transport"]["requests"] + summary["validator"]["transport"]["requests"] == sent
    assert summary["proposer"]["calls"] == 10  # every proposer answered, whatever the validator did


# ---------------------------------------------------------------------------
# 3. The cache: checked before paying, never losing an answer, corrupt files named
# ---------------------------------------------------------------------------
def test_an_unwritable_cache_stops_the_run_before_any_request(tmp_path: Path, capsys: Any) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with ScriptedLLMServer(honest_script) as server:
        status = reproduce(tmp_path / "out", server.url, "--cache-dir", str(blocker))
        assert len(server.requests) == 0  # nothing paid for
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "cannot record answers in the cache directory" in err[0]
    assert str(blocker) in err[0] and "Traceback" not in err[0]


def test_a_directory_where_a_recording_goes_costs_the_recording_not_the_answer(tmp_path: Path) -> None:
    with ScriptedLLMServer(honest_script) as server:
        policy = LLMProposer(model="m", base_url=server.url)
        play_one(policy, proposer_obs())
        (recorded,) = list(settings().cache_dir.rglob("*.json"))
        recorded.unlink()
        recorded.mkdir()  # the path of that recording is now a directory
        LLMClient.forget()
        _, info = play_one(LLMProposer(model="m", base_url=server.url), proposer_obs())
    assert not info["fallback"] and info["transport"]["requests"] == 1  # answered, and the answer kept
    assert not [p for p in settings().cache_dir.rglob("*") if ".tmp" in p.name]  # no temporary file left


def test_a_corrupt_recording_is_named_in_a_replay(tmp_path: Path) -> None:
    with ScriptedLLMServer(honest_script) as server:
        spec = f"llm:model=m,base_url={server.url}"
        assert all(isinstance(e, EpisodeRecord) for e in play_concurrent(PAPER, spec, "rule", episodes=2, seed=0))
        recorded = sorted(settings().cache_dir.rglob("*.json"))
        assert len(recorded) == 2
        recorded[0].write_text('{"content": "trunc')
        configure(cache="read")
        out = play_concurrent(PAPER, spec, "rule", episodes=2, seed=0)
    (bad,) = [e for e in out if isinstance(e, FailedEpisode)]  # the other episode replays as recorded
    assert "unreadable" in bad.error and str(recorded[0]) in bad.error


def test_replaying_from_a_missing_cache_directory_is_refused_at_once(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits = no_backoff(monkeypatch)
    status = main(["reproduce", "--out", str(tmp_path / "out"), "--proposer", "llm", "--cache", "read",
                   "--cache-dir", str(tmp_path / "no_such_dir")])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "nothing to replay" in err[0] and "does not exist" in err[0]
    assert waits == []  # at once: refused before any request, so never a retry's wait
    assert not (tmp_path / "out" / "results.jsonl").exists() or not (tmp_path / "out" / "results.jsonl").read_text()


# ---------------------------------------------------------------------------
# 4. A model name is opaque: no flag or variable changes another setting
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["x,gate=none", "007", "none", "gpt,4", 'a"b', " padded ", "true"])
def test_the_model_reaches_the_endpoint_byte_for_byte(tmp_path: Path, model: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    always_approve = reply_json({"decision": "APPROVE", "reason": "ok"})
    with ScriptedLLMServer([always_approve]) as server:
        status = main(["play", "--validator", "llm", "--model", model, "--base-url", server.url, "--episodes", "30",
                       "--records", str(tmp_path / "r.jsonl"), "--proposer", "honest:request=always",
                       *FAST])  # fmt: skip
        models = {r["model"] for r in server.requests}
    assert status == 0 and models == {model}
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    decided = [r for r in records if r["validator_info"]]
    assert decided and all(r["validator_info"]["model"] == model for r in decided)
    # still gated: the always-approve model never overrode the rule engine's blocks
    assert any(r["validator_info"]["gated"] for r in decided)
    assert all(r["approved"] == (r["validator_info"]["rule_decision"] == "APPROVE") for r in decided)


def test_an_environment_variable_cannot_change_other_settings(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EQ_ENV_MODEL", "y,max_reasks=0,temperature=2")
    with ScriptedLLMServer([Reply(content="not json")]) as server:
        assert main(["play", "--proposer", "llm", "--base-url", server.url, "--episodes", "1", *FAST]) == 0
        sent = server.requests
    assert {r["model"] for r in sent} == {"y,max_reasks=0,temperature=2"}
    assert {r["temperature"] for r in sent} == {0.0} and len(sent) == 3  # default temperature, two re-asks


def test_specs_read_back_exactly_and_refuse_repeated_keys() -> None:
    from eq_env.core.policy import format_policy_spec, parse_policy_spec

    for kwargs in ({"model": "x,gate=none"}, {"model": "007"}, {"model": "none"}, {"model": 'q"uote\\'},
                   {"base_url": "http://h/v1?a=1,b=2", "temperature": 0.5, "seed": None, "strip": True}):  # fmt: skip
        assert parse_policy_spec(format_policy_spec("llm", kwargs)) == ("llm", kwargs)
    with pytest.raises(ValueError, match="'gate' is given twice"):
        parse_policy_spec("llm:gate=rule,gate=none")
    with pytest.raises(ValueError, match="model must be a non-empty string"):
        make_policy("llm:model=007", "proposer")  # unquoted, 007 is a number: quote it to mean the name
    assert make_policy('llm:model="007",base_url=http://127.0.0.1:9/v1', "proposer").model == "007"  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# 5. No secret reaches a file
# ---------------------------------------------------------------------------
@pytest.mark.slow
def test_no_secret_from_a_flag_a_url_or_the_environment_reaches_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def echo_secrets(request: dict, n: int) -> Reply:
        if n % 4 == 3:  # a server that echoes credentials in its errors
            return Reply(status=500, body={"error": {"message": "bad key sk-FLAG-SECRET at "
                                                     "http://u:URL-SECRET@h/v1?api-key=QUERY-SECRET"}})  # fmt: skip
        return honest_script(request, n)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-ENV-SECRET")
    # (no key check here: httpx answers userinfo in a URL with Basic auth, in place of the bearer key)
    with ScriptedLLMServer(echo_secrets) as server:
        port = server.url.split(":")[2].split("/")[0]
        url = f"http://user:URL-SECRET@127.0.0.1:{port}/v1?api-key=QUERY-SECRET&api-version=2024"
        out = tmp_path / "out"
        status = reproduce(out, url, "--api-key", "sk-FLAG-SECRET", "--validator", "llm", episodes=4)
        assert status in (0, INCOMPLETE) and len(server.requests) > 0
        assert all("api-key=QUERY-SECRET" in p and "api-version=2024" in p for p in server.paths)  # sent, as query
        # a policy made from what was recorded still talks to the real endpoint, in this process
        spec = results(out)[0]["policies"]["proposer"]
        assert "SECRET" not in spec and "***" in spec
    leaks = [str(p) for p in tmp_path.rglob("*") if p.is_file() and b"SECRET" in p.read_bytes()]
    assert leaks == []
    assert len(list(tmp_path.rglob("*"))) > 20  # (there were files to look in: tables, cache, costs...)


def test_a_spec_typed_with_credentials_is_recorded_without_them(tmp_path: Path) -> None:
    from eq_env.core.experiments import run_all

    with ScriptedLLMServer(honest_script) as server:
        url = server.url.replace("http://", "http://user:TYPED-SECRET@")
        condition = Condition(PAPER, {"proposer": f"llm:model=m,base_url={url}", "validator": "rule"}, 3)
        assert "TYPED-SECRET" not in condition.policy("proposer")
        (record,) = run_all([condition], [0], ResultsStore(tmp_path / "results.jsonl"), progress=False)
        assert len(server.requests) == 3 and not record.get("failed")  # the real endpoint was used
    assert b"TYPED-SECRET" not in (tmp_path / "results.jsonl").read_bytes()
    assert not [p for p in settings().cache_dir.rglob("*.json") if b"TYPED-SECRET" in p.read_bytes()]


def test_a_dummy_key_that_is_a_common_word_masks_no_model_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")  # what local servers are often given
    settings().key()
    condition = Condition(
        PAPER, {"proposer": "llm:model=test-model,base_url=http://127.0.0.1:9/v1", "validator": "rule"}, 1
    )
    assert "model=test-model" in condition.policy("proposer")  # specs are masked structurally, not word by word


def test_credentials_are_masked_in_every_recorded_endpoint() -> None:
    from eq_env.core.redact import public_url, redact

    assert public_url("http://u:pw1234@h:8/v1") == "http://***@h:8/v1"
    assert public_url("https://h/v1?api-key=abcd1234&api-version=1") == "https://h/v1?api-key=***&api-version=1"
    assert public_url("https://h/v1?sig=abcd1234&access_token=zzzz9999") == "https://h/v1?sig=***&access_token=***"
    assert public_url("http://h/v1") == "http://h/v1"
    assert "abcd1234" not in redact("error: key abcd1234 rejected") and "pw1234" not in redact("pw1234!")
    policy = LLMValidator(model="m", base_url="http://u:hunter2hunter2@127.0.0.1:9/v1")
    assert "hunter2" not in repr(policy) and "hunter2" not in policy.base_url


# ---------------------------------------------------------------------------
# 12. An endpoint that cannot serve the run fails fast, with one line
# ---------------------------------------------------------------------------
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the client would make before retrying (none, for a run that fails fast): recorded, not slept,
    so a test checks "fast" by the events that would make it slow, not by the clock."""
    import eq_env.agents.client

    waits: list[float] = []
    real = eq_env.agents.client._backoff
    monkeypatch.setattr(eq_env.agents.client, "_backoff", lambda *a: waits.append(real(*a)) or 0.0)
    return waits


def one_line_error(capsys: Any) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def test_an_unreachable_endpoint_fails_fast_and_records_nothing(tmp_path: Path, capsys: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    waits = no_backoff(monkeypatch)
    status = main(["play", "--proposer", "llm", "--base-url", f"http://127.0.0.1:{closed_port()}/v1",
                   "--max-retries", "5"])  # fmt: skip
    assert status == 2 and waits == []  # fast: stopped at the check, never retried (5 retries would wait ~15 s)
    line = one_line_error(capsys)
    assert "cannot reach the endpoint" in line and "to replay a recording without it, pass --cache read" in line
    assert list(tmp_path.iterdir()) == []  # no recorded failure left behind, not even a cache directory


def test_no_key_for_openai_fails_before_any_request(capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    configure(api_key=None)
    with pytest.raises(PolicySetupError, match="no API key"):
        play_one(LLMProposer(model="gpt-4.1"), proposer_obs())  # (no connection is tried)


def test_a_rejected_key_and_an_unserved_model_fail_fast(tmp_path: Path, capsys: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    with ScriptedLLMServer(honest_script, api_key="right-key", models=["llama3.1:latest", "qwen"]) as server:
        base = ["play", "--proposer", "llm", "--base-url", server.url, "--episodes", "20", *FAST]
        assert main([*base, "--model", "qwen", "--api-key", "wrong-key"]) == 2
        assert "rejected the API key (401)" in one_line_error(capsys)
        assert main([*base, "--model", "gpt-9", "--api-key", "right-key"]) == 2
        line = one_line_error(capsys)
        assert "does not serve the model 'gpt-9'" in line and "qwen" in line
        assert len(server.requests) == 0
        # an Ollama-style name without its tag is served; the check is made once per run
        assert main([*base, "--model", "llama3.1", "--api-key", "right-key"]) == 0
        assert len(server.requests) == 20 and server.model_requests == 2  # (the 401 was answered before routing)
        # --no-endpoint-check: no check, the requests decide
        assert main([*base, "--model", "unlisted", "--api-key", "right-key", "--no-endpoint-check"]) == 0
        assert server.model_requests == 2


def test_an_endpoint_that_dies_mid_run_is_retried_and_recorded() -> None:
    def dies(request: dict, n: int) -> Reply:
        return honest_script(request, n) if n < 3 else Reply(status=503)

    configure(max_retries=1)
    with ScriptedLLMServer(dies, models=["m"]) as server:
        out = play_concurrent(PAPER, f"llm:model=m,base_url={server.url}", "rule", episodes=6, seed=0, concurrency=1)
    assert [isinstance(e, EpisodeRecord) for e in out] == [True] * 3 + [False] * 3
    assert all("gave up after 1 retries" in e.error for e in out if isinstance(e, FailedEpisode))


def test_a_setup_error_stops_concurrent_episodes_without_recording_them(tmp_path: Path) -> None:
    saved: list[Any] = []
    with ScriptedLLMServer(honest_script, api_key="k", latency=0.05) as server:
        configure(api_key="wrong")
        with pytest.raises(LLMSetupError, match="rejected the API key"):
            play_concurrent(PAPER, f"llm:model=m,base_url={server.url}", "rule", episodes=16, seed=0,
                            concurrency=8, on_episode=saved.append)  # fmt: skip
        assert len(server.requests) == 0
    assert saved == []


# ---------------------------------------------------------------------------
# The cache key is what complete() sends; write mode keeps answers; backoff is capped
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "change", [{"model": "other"}, {"temperature": 0.7}, {"max_tokens": 99}, {"seed": 5}, {"prompt_version": "v2"}]
)
def test_every_part_of_a_request_keys_its_answer(change: dict[str, Any]) -> None:
    sent = {"model": "m", "temperature": 0.0, "max_tokens": 50, "seed": None, "prompt_version": "v1"}
    messages = [{"role": "user", "content": "<observation>{}</observation>"}]
    with ScriptedLLMServer([reply_json(GOOD)]) as server:

        async def ask(params: dict[str, Any]) -> None:
            client = LLMClient(params["model"], server.url)
            try:
                await client.complete(messages, schema_name="s", schema={"type": "object"},
                                      prompt_version=params["prompt_version"], temperature=params["temperature"],
                                      max_tokens=params["max_tokens"], seed=params["seed"])  # fmt: skip
            finally:
                await client.aclose()

        asyncio.run(ask(sent))
        asyncio.run(ask(sent))  # the same request: answered from the cache
        assert len(server.requests) == 1
        asyncio.run(ask({**sent, **change}))
        assert len(server.requests) == 2, change  # a different request: asked


def test_a_failure_never_overwrites_a_recorded_answer_in_write_mode() -> None:
    spec = "llm:model=m,base_url={}"
    with ScriptedLLMServer(honest_script) as up:
        play_concurrent(PAPER, spec.format(up.url), "rule", episodes=1, seed=0)
    (recorded,) = list(settings().cache_dir.rglob("*.json"))
    answer = recorded.read_text()
    configure(cache="write", max_retries=0, check_endpoint=False)
    with ScriptedLLMServer([Reply(status=500)]) as down:
        # (the same key: the recorded URL is the one asked; requests go to the dead server instead)
        from eq_env.agents import client as client_module

        client_module._ENDPOINTS[up.url] = down.url
        try:
            (out,) = play_concurrent(PAPER, spec.format(up.url), "rule", episodes=1, seed=0)
        finally:
            del client_module._ENDPOINTS[up.url]
        assert isinstance(out, FailedEpisode) and len(down.requests) == 1
    assert recorded.read_text() == answer


def test_backoff_is_capped_and_jittered() -> None:
    s = LLMSettings(backoff=0.5, max_backoff=2.0)
    waits = [_backoff(RuntimeError("x"), attempt, s) for attempt in (0, 3, 10, 60) for _ in range(20)]
    assert max(waits) <= 2.0 and min(waits[:20]) >= 0.25 and min(waits[-20:]) >= 1.0
    assert len(set(waits[-20:])) > 1  # jitter


# ---------------------------------------------------------------------------
# A second hostile pass: secrets in other encodings, replays of nothing, checks before the first episode
# ---------------------------------------------------------------------------
@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_secrets_are_masked_in_every_encoding_a_server_may_echo(tmp_path: Path) -> None:
    import base64

    basic = base64.b64encode(b"usr:pw@SECRET1").decode()  # (holds no "SECRET": looked for by itself below)

    def echo(request: dict, n: int) -> Reply:
        if n % 3 == 2:  # the request line and the Authorization header, as a proxy's error page shows them
            page = f"GET /v1?api-key=SECRET2%2Bplus&tok=1 Authorization: Basic {basic} user usr%3Apw%40SECRET1"
            return Reply(status=500, body={"error": {"message": page}})
        return honest_script(request, n)

    with ScriptedLLMServer(echo) as server:
        url = server.url.replace("http://", "http://usr:pw%40SECRET1@") + "?api-key=SECRET2%2Bplus"
        status = reproduce(tmp_path / "out", url, "--max-retries", "1", episodes=3)
        assert status in (0, INCOMPLETE) and len(server.requests) > 0
    assert any(f["error"] for r in results(tmp_path / "out") for f in r.get("failed", []))  # (errors were stored)
    files = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert not [f for f in files if b"SECRET" in f or basic.encode() in f]
    from eq_env.core.redact import public_url

    masked = public_url("http://h/v1;api-key=SECRET3xyz?pass=SECRET5&jwt=SECRET6&pw=SECRET7#token=SECRET4xyz")
    assert "SECRET" not in masked and masked.startswith("http://h/v1;api-key=***?")


def test_credentials_in_the_url_rejected_say_how_they_were_sent(capsys: Any, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    with ScriptedLLMServer(honest_script, api_key="k", models=["m"]) as server:
        url = server.url.replace("http://", "http://user:pass@")
        assert main(["play", "--proposer", "llm", "--model", "m", "--base-url", url, "--api-key", "k"]) == 2
    line = one_line_error(capsys)
    assert "rejected the credentials in the URL (401; they are sent as HTTP Basic auth" in line


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
@pytest.mark.parametrize("where", ["empty", "run_dir", "other_endpoint"])
def test_a_replay_of_nothing_is_refused_at_once(where: str, tmp_path: Path, capsys: Any) -> None:
    live = tmp_path / "live"
    with ScriptedLLMServer(honest_script) as server:
        assert reproduce(live, server.url, episodes=2) == 0
        sent = len(server.requests)
        cache = {"empty": tmp_path / "empty", "run_dir": live, "other_endpoint": live / "llm_cache"}[where]
        cache.mkdir(exist_ok=True)
        url = server.url.replace("127.0.0.1", "localhost") if where == "other_endpoint" else server.url
        status = reproduce(tmp_path / "replay", url, "--cache", "read", "--cache-dir", str(cache), episodes=2)
        assert len(server.requests) == sent
    line = one_line_error(capsys)
    assert status == 2 and "nothing to replay" in line
    if where == "other_endpoint":  # says what the recording holds
        assert f"model 'm' at {server.url}" in line
    else:
        assert f"{cache} holds no recording" in line
    assert not (tmp_path / "replay" / "results.jsonl").exists()


def test_every_llm_policy_is_checked_before_the_first_episode(tmp_path: Path) -> None:
    with ScriptedLLMServer(honest_script, models=["m"]) as server:
        with pytest.raises(PolicySetupError, match="does not serve the model 'nope'"):
            play_concurrent(PAPER, f"llm:model=m,base_url={server.url}", f"llm:model=nope,base_url={server.url}",
                            episodes=8, seed=0)  # fmt: skip
        assert len(server.requests) == 0  # not one proposer request was paid for


@pytest.mark.parametrize(
    "spec, match",
    [("llm:max_reasks=100000", "max_reasks must be an integer in"), ("llm:seed=1.5", "seed must be"),
     ('llm:seed="abc"', "seed must be"), ("llm:model=007", 'quote a name .*model="7"'),
     ("llm:base_url=", "base_url must be a URL"), ('llm:base_url="http://[::1"', "base_url must be an http"),
     ("llm:base_url=ftp://h/v1", "base_url must be an http"), ('llm:model="\\udcff"', "UTF-8")],
)  # fmt: skip
def test_absurd_llm_parameters_are_refused(spec: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_policy(spec if "base_url" in spec else spec + ",base_url=http://127.0.0.1:9/v1", "proposer")


@pytest.mark.parametrize("key", [None, " "])
def test_no_key_for_openai_is_caught_whatever_the_case(key: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    configure(api_key=key)
    with pytest.raises(PolicySetupError, match="no API key"):
        play_concurrent(PAPER, "llm:model=gpt-4.1,base_url=https://API.OpenAI.com/v1", "rule", episodes=1, seed=0)


def test_a_failure_recorded_again_replays_as_it_failed_last() -> None:
    spec = "llm:model=m,base_url={}"
    configure(max_retries=0)
    with ScriptedLLMServer([Reply(status=500)]) as first:
        play_concurrent(PAPER, spec.format(first.url), "rule", episodes=1, seed=0)
    from eq_env.agents import client as client_module

    with ScriptedLLMServer([Reply(status=429, headers={"Retry-After": "0"})]) as second:
        client_module._ENDPOINTS[first.url] = second.url  # (the same key, another outcome)
        try:
            (again,) = play_concurrent(PAPER, spec.format(first.url), "rule", episodes=1, seed=0)
        finally:
            del client_module._ENDPOINTS[first.url]
    configure(cache="read")
    (replayed,) = play_concurrent(PAPER, spec.format(first.url), "rule", episodes=1, seed=0)
    assert isinstance(again, FailedEpisode) and "429" in again.error
    assert isinstance(replayed, FailedEpisode) and replayed.error == again.error


def test_an_unwritable_recording_is_warned_about_once_a_run(caplog: pytest.LogCaptureFixture,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from eq_env.agents.client import ResponseCache

    def full_disk(self: ResponseCache, key: str, value: dict) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ResponseCache, "put", full_disk)
    with ScriptedLLMServer(honest_script) as server:
        out = play_concurrent(PAPER, f"llm:model=m,base_url={server.url}", "rule", episodes=6, seed=0)
    assert all(isinstance(e, EpisodeRecord) for e in out)  # every answer kept
    assert len([r for r in caplog.records if "could not record" in r.getMessage()]) == 1


def test_two_runs_cannot_write_into_the_same_results_at_once(tmp_path: Path) -> None:
    from eq_env.core.experiments import run_all

    store = ResultsStore(tmp_path / "results.jsonl")
    with store.exclusive():  # another run holds the file
        with pytest.raises(ValueError, match=r"another run is writing to .*results\.jsonl"):
            run_all(
                [Condition(PAPER, {"proposer": "honest", "validator": "rule"}, 5)],
                [0],
                ResultsStore(tmp_path / "results.jsonl"),
            )
    assert (
        len(run_all([Condition(PAPER, {"proposer": "honest", "validator": "rule"}, 5)], [0], store, progress=False))
        == 1
    )  # free again
