"""The command line's edges: what ``play``, ``sweep``, ``rerun`` and the commands do with odd input. Each
test failed before its fix; the few that passed (no LLM block without LLM policies, the reset options and
seeds that must still be taken) guard against the fixes going too far.

1. ``play`` reports what LLM policies cost; 2. a replay's failures are not "retried" by running it
again; 3. sweeps refuse what they would silently drop or repeat, and spec files get the flags' limits;
4. missing and misplaced paths are named; 5. a closed pipe ends ``eq-env`` quietly; 6. bad options
leave no output directory behind; 7. ``rerun`` can be given the credentials a record masks; 8. the
wrapped environment's edges; 9. ``evaluate``'s seeds.

LLM endpoints are local eq_env.agents.fake_server.ScriptedLLMServer instances; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_bad_input import refused, run
from test_llm_agents import fast_llm_settings  # noqa: F401 - a fixture

import eq_env.agents.client
from eq_env import exchange_audit_v0
from eq_env.agents.client import LLMClient, configure
from eq_env.agents.exchange_audit.scripts import honest_script
from eq_env.agents.fake_server import Reply, ScriptedLLMServer
from eq_env.cli import INCOMPLETE
from eq_env.core.cli import MAX_EPISODES, MAX_SEED, MAX_SEEDS
from eq_env.core.experiments import ResultsStore
from eq_env.core.sweep import SweepSpec, run_sweep
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.runner import EpisodeRecord, evaluate, llm_summary

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--max-retries", "0", "--backoff", "0.01", "--timeout", "2"]


def llm_sweep(out: Path, url: str, *extra: str, episodes: int = 2) -> list[str]:
    """``eq-env sweep`` argv with an LLM proposer: one condition, one seed."""
    return ["sweep", "--out", str(out), "--proposer", "llm", "--model", "m", "--base-url", url, "--seeds", "1",
            "--episodes", str(episodes), *FAST, *extra]  # fmt: skip


# ---------------------------------------------------------------------------
# 1. play: what LLM policies cost, after the metrics and in --json
# ---------------------------------------------------------------------------
PRICES = ["--price-prompt", "2", "--price-completion", "8"]


def test_play_prints_what_llm_policies_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "episodes.jsonl"
    with ScriptedLLMServer(honest_script) as server:
        argv = ["play", "--proposer", "llm", "--validator", "llm", "--model", "m", "--base-url", server.url,
                "--episodes", "6", "--cache-dir", str(tmp_path / "cache"), *FAST, *PRICES]  # fmt: skip
        status, out, _ = run([*argv, "--records", str(records)], capsys)
        asked = len(server.requests)
    assert status == 0 and asked > 0
    block = out[out.index("validator_payoff") :].splitlines()[1:]
    assert 2 <= len([line for line in block if line.strip()]) <= 6, block  # a few lines, after the table
    # the totals are those of the episodes played, priced per million tokens
    played = [EpisodeRecord.from_dict(json.loads(line)) for line in records.read_text().splitlines()]
    totals = llm_summary(played)
    prompt = sum(totals[r]["prompt_tokens"] for r in ("proposer", "validator"))
    completion = sum(totals[r]["completion_tokens"] for r in ("proposer", "validator"))
    dollars = (prompt * 2 + completion * 8) / 1e6
    text = "\n".join(block)
    assert f"${dollars:.4f}" in text, text
    assert f"{totals['proposer']['transport']['requests']} requests" in text and "cache hits" in text
    assert "failed episodes 0" in text and "re-asks" in text and "fallbacks" in text

    # the same in --json, under "llm"; a replay from the cache costs the same when drawn, nothing billed
    LLMClient.forget()
    status, out, _ = run([*argv, "--json", "--cache", "read"], capsys)  # (the server is gone)
    assert status == 0
    llm = json.loads(out)["llm"]
    assert llm["failed_episodes"] == 0 and llm["prices"] == {"prompt": 2.0, "completion": 8.0}
    assert llm["cost_usd"] == pytest.approx(dollars) and llm["billed_usd"] == 0.0
    assert llm["proposer"]["cache_hits"] == llm["proposer"]["calls"] > 0 and llm["proposer"]["requests"] == 0
    assert llm["proposer"]["prompt_tokens"] == totals["proposer"]["prompt_tokens"]


def test_play_without_llm_policies_prints_no_llm_block(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(["play", "--episodes", "5", *PRICES], capsys)
    assert status == 0 and "LLM" not in out and "$" not in out
    status, out, _ = run(["play", "--episodes", "5", "--json"], capsys)
    assert status == 0 and "llm" not in json.loads(out)


# ---------------------------------------------------------------------------
# 2. a replay that ends with failed episodes does not tell you to replay it again
# ---------------------------------------------------------------------------
@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_a_replay_with_failures_says_how_to_ask_them_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def first_request_fails(request: dict, n: int) -> Reply:
        return Reply(status=500) if n == 0 else honest_script(request, n)

    live, replay = tmp_path / "live", tmp_path / "replay"
    with ScriptedLLMServer(first_request_fails) as server:
        status, _, err = run(llm_sweep(live, server.url), capsys)
        assert status == INCOMPLETE and "run the same command again to retry them" in err
        replay_argv = llm_sweep(replay, server.url, "--cache", "read", "--cache-dir", str(live / "llm_cache"))
        status, _, err = run(replay_argv, capsys)
    assert status == INCOMPLETE
    notice, line = err.strip().split("\n")  # the replay's notice first, then the one line on the failures
    assert notice.startswith("eq-env: replaying the LLM answers recorded in"), notice
    assert "run the same command again" not in line, line
    assert "replay" in line and "fails what the recording failed" in line, line
    assert "without --cache read" in line and "readwrite" in line, line


# ---------------------------------------------------------------------------
# 3. sweeps: nothing dropped or repeated silently; spec files within the flags' limits
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "flags, needles",
    [
        (["--grid", "q=0,1", "--grid", "q=0.5"], ["--grid q", "twice"]),
        (["--grid", "q=0,0"], ["--grid q", "repeats", "0"]),
        (["--grid", "B=all,none"], ["--grid B", "repeats"]),
        (["--proposer", "honest", "--proposer", "honest"], ["--proposer", "'honest'", "twice"]),
        (["--validator", "rule", "--validator", "block", "--validator", "rule"], ["--validator", "'rule'", "twice"]),
        (["--proposer", "honest", "--proposer", "honest:words=13"], ["--proposer", "same policy"]),
    ],
)
def test_sweep_refuses_repeated_flags_and_values(
    flags: list[str], needles: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused(["sweep", "--out", str(tmp_path / "out"), "--episodes", "5", "--seeds", "1", *flags], capsys, *needles)
    assert not (tmp_path / "out").exists()


YAML_DUPLICATE = "episodes: 5\nseeds: 1\ngrid:\n  q: [0, 1]\n  V: [1, 2]\n  q: [0.5]\n"
JSON_DUPLICATE = '{\n  "episodes": 5,\n  "grid": {"q": [0, 1]},\n  "episodes": 10\n}\n'


@pytest.mark.parametrize(
    "name, text, needles",
    [
        ("spec.yaml", YAML_DUPLICATE, ["spec.yaml:6", "duplicate key 'q'"]),
        ("spec.json", JSON_DUPLICATE, ["spec.json:1", "duplicate key 'episodes'"]),
        ("spec.toml", "episodes = 5\nproposers = ['honest', 'honest']\n", ["spec.toml", "proposers", "'honest'"]),
        ("spec.yaml", "grid:\n  q: [0.3, 0.3]\n", ["spec.yaml", "grid", "'q'", "repeats"]),
    ],
)
def test_a_spec_file_with_a_repeated_key_or_value_is_refused(
    name: str, text: str, needles: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / name).write_text(text)
    refused(["sweep", "--out", str(tmp_path / "out"), "--config", str(tmp_path / name)], capsys, *needles)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "line, needles",
    [
        ("episodes = 100000000000", ["episodes", f"[1, {MAX_EPISODES}]", "100000000000"]),
        (f"seeds = {MAX_SEEDS + 1}", ["seeds", f"[1, {MAX_SEEDS}]"]),
        (f"first_seed = {MAX_SEED + 1}", ["first_seed", f"[0, {MAX_SEED}]"]),
        (f"seeds = [0, {MAX_SEED + 1}]", ["seeds", f"[0, {MAX_SEED}]"]),
    ],
)
def test_spec_file_values_have_the_flags_limits(
    line: str, needles: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "big.toml"
    spec.write_text(line + "\n")
    refused(["sweep", "--out", str(tmp_path / "out"), "--config", str(spec)], capsys, "big.toml", *needles)
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------
# 4. missing results files and --out paths that are files
# ---------------------------------------------------------------------------
def test_rerun_of_a_missing_file_says_it_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.jsonl"
    refused(["rerun", str(missing), "KEY"], capsys, str(missing), "does not exist", parse_only=True)
    refused(["rerun", str(tmp_path), "KEY"], capsys, str(tmp_path), "is a directory", parse_only=True)


@pytest.mark.parametrize(
    "argv",
    [["reproduce"], ["sweep"], ["train", "--role", "proposer"], ["selfplay"], ["frontier", "--no-ppo"]],
    ids=lambda a: a[0],
)
def test_out_that_is_a_file_is_refused_at_parse_time(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = tmp_path / "a_file"
    existing.write_text("keep me\n")
    refused([*argv, "--out", str(existing)], capsys, "--out", f"{existing} exists and is not a directory",
            parse_only=True)  # fmt: skip
    refused([*argv, "--out", str(existing / "sub")], capsys, "--out", f"cannot create a directory under {existing}: "
            "it is a file", parse_only=True)  # fmt: skip
    assert existing.read_text() == "keep me\n"


# ---------------------------------------------------------------------------
# 5. a reader that closes the pipe early
# ---------------------------------------------------------------------------
@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_a_closed_pipe_ends_quietly_with_sigpipes_status() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "eq_env.cli", "play", "--episodes", "5"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `| head -0`: the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert err == "", err


# ---------------------------------------------------------------------------
# 6. bad options leave no output directory behind
# ---------------------------------------------------------------------------
def test_reproduce_refuses_bad_policies_before_creating_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    refused(["reproduce", "--out", str(out), "--proposer", "bogus"], capsys, "unknown policy 'bogus'")
    assert not out.exists()
    # a batch engine for a policy that cannot act in bulk is known before anything runs, too
    refused(["reproduce", "--out", str(out), "--engine", "batch", "--proposer", "llm", "--base-url",
             "http://127.0.0.1:9/v1", "--no-endpoint-check"], capsys, "batch engine")  # fmt: skip
    assert not out.exists()


def test_sweep_refuses_bad_options_before_creating_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    refused(["sweep", "--out", str(out), "--engine", "batch", "--proposer", "llm", "--base-url",
             "http://127.0.0.1:9/v1", "--no-endpoint-check"], capsys, "batch engine")  # fmt: skip
    assert not out.exists()
    with pytest.raises(ValueError, match="unknown policy 'bogus'"):
        run_sweep(SweepSpec(policies={"proposer": ["bogus"]}), out)
    with pytest.raises(ValueError, match="jobs must be a positive integer"):
        run_sweep(SweepSpec(), out, jobs=0)
    assert not out.exists()


# ---------------------------------------------------------------------------
# 7. rerun with the credentials a record masks
# ---------------------------------------------------------------------------
def _credentials(url: str, kind: str) -> str:
    """``url`` (http://127.0.0.1:PORT/v1) with credentials of ``kind`` in it."""
    if kind == "userinfo":
        return url.replace("http://", "http://user:pw-s3cret@")
    return url + "?api-key=q-s3cret"


@pytest.mark.parametrize("kind", ["userinfo", "query"])
def test_rerun_resolves_a_masked_endpoint_with_base_url(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "sweep"
    with ScriptedLLMServer(honest_script) as server:
        url = _credentials(server.url, kind)
        assert run(llm_sweep(out, url, episodes=3), capsys)[0] == 0
        (key,) = ResultsStore(out / "results.jsonl").load()
        record = ResultsStore(out / "results.jsonl").load()[key]
        assert "s3cret" not in json.dumps(record) and "***" in record["policies"]["proposer"]
        recorded = len(server.requests)
        # a new process: it knows the masked endpoint only
        monkeypatch.setattr(eq_env.agents.client, "_ENDPOINTS", {})
        LLMClient.forget()
        rerun = ["rerun", str(out / "results.jsonl"), key, "--cache", "readwrite", "--cache-dir",
                 str(tmp_path / "fresh_cache")]  # fmt: skip
        # without the credentials a request would authenticate as '***': refused, nothing sent
        refused(rerun, capsys, "masked credentials", "--base-url")
        assert len(server.requests) == recorded
        # another endpoint than the record's: refused
        other = _credentials(server.url.replace("127.0.0.1", "localhost"), kind)
        refused([*rerun, "--base-url", other], capsys, "--base-url", "does not match", "127.0.0.1")
        status, printed, _ = run([*rerun, "--base-url", url], capsys)
        assert len(server.requests) == 2 * recorded  # asked again (a fresh cache), with the credentials
        if kind == "query":
            assert all("q-s3cret" in p for p in server.paths), server.paths
    assert status == 0 and "identical" in printed


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_rerun_passes_api_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "sweep"
    with ScriptedLLMServer(honest_script, api_key="sk-right") as server:
        assert run(llm_sweep(out, server.url, "--api-key", "sk-right"), capsys)[0] == 0
        (key,) = ResultsStore(out / "results.jsonl").load()
        recorded = len(server.requests)
        configure(api_key=None)  # a new process: no key but the one given
        LLMClient.forget()
        rerun = ["rerun", str(out / "results.jsonl"), key, "--cache", "write"]
        refused(rerun, capsys, "401")  # the endpoint wants a key
        LLMClient.forget()
        status, printed, _ = run([*rerun, "--api-key", "sk-right"], capsys)
        assert len(server.requests) == 2 * recorded
    assert status == 0 and "identical" in printed


# ---------------------------------------------------------------------------
# 8. the wrapped environment's edges
# ---------------------------------------------------------------------------
def _play_out(env: Any) -> None:
    for agent in env.agent_iter():
        obs, _, termination, truncation, _ = env.last()
        done = termination or truncation
        env.step(None if done else env.action_space(agent).sample(obs.get("action_mask")))


@pytest.mark.parametrize("make", [exchange_audit_v0.raw_env, exchange_audit_v0.env])
def test_last_after_the_episode_says_it_is_over(make: Any) -> None:
    env = make()
    env.reset(seed=0)
    _play_out(env)
    assert env.agents == []
    with pytest.raises(RuntimeError, match=r"the episode is over.*call reset\(\)"):
        env.last()
    env.reset()  # and the next episode plays as usual
    _play_out(env)


def test_raw_step_after_the_episode_says_it_is_over() -> None:
    env = exchange_audit_v0.raw_env()
    env.reset(seed=0)
    _play_out(env)
    with pytest.raises(RuntimeError, match=r"step\(\) after the episode ended; call reset\(\)"):
        env.step(None)


@pytest.mark.parametrize("make", [exchange_audit_v0.raw_env, exchange_audit_v0.env, exchange_audit_v0.parallel_env])
@pytest.mark.parametrize(
    "options, needle",
    [
        ("x", "options must be a dict"),
        (["episode"], "options must be a dict"),
        ({"q": 5}, "unknown reset option 'q'"),
        ({"episode": 1, "episod": 3}, "unknown reset option 'episod'"),
    ],
    ids=repr,
)
def test_reset_refuses_options_it_would_ignore(make: Any, options: Any, needle: str) -> None:
    with pytest.raises(ValueError, match=needle) as err:
        make().reset(seed=0, options=options)
    assert "'episode'" in str(err.value)  # names what it does take


def test_reset_still_takes_the_episode_option_and_pettingzoos_probe() -> None:
    env = exchange_audit_v0.env()
    env.reset(seed=3, options={"episode": 2})
    jumped = env.observe("proposer_0")
    env.reset(seed=3)
    env.reset()
    env.reset()
    assert all((jumped[k] == v).all() for k, v in env.observe("proposer_0").items())
    env.reset(seed=0, options={})
    env.reset(seed=0, options={"options": 1})  # what PettingZoo's api_test sends to check the signature


# ---------------------------------------------------------------------------
# 9. evaluate's seeds
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seeds", [5, "01", None, [0, 0], [], [0, -1], [0, 1.5]], ids=repr)
def test_evaluate_wants_distinct_non_negative_integer_seeds(seeds: Any) -> None:
    with pytest.raises(ValueError, match=r"^seeds must be a non-empty sequence of distinct non-negative integers"):
        evaluate(ExchangeAuditConfig(), "honest", "rule", episodes=3, seeds=seeds)


def test_evaluate_takes_ranges_and_numpy_seeds() -> None:
    a = evaluate(ExchangeAuditConfig(), "honest", "rule", episodes=3, seeds=range(2))
    b = evaluate(ExchangeAuditConfig(), "honest", "rule", episodes=3, seeds=np.array([0, 1]))
    assert a.per_seed == b.per_seed and a.seeds == [0, 1]


@pytest.mark.parametrize("view", ["eq_env/ExchangeAuditProposer-v0", "eq_env/ExchangeAuditValidator-v0"])
def test_the_gymnasium_views_refuse_reset_options_they_would_ignore(view: str) -> None:
    import gymnasium

    env = gymnasium.make(view)
    env.reset(seed=0, options={})  # (Gymnasium's own checker passes an empty dict)
    with pytest.raises(ValueError, match="takes no reset options"):
        env.reset(seed=0, options={"q": 0.5})
