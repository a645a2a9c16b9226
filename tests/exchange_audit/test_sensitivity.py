"""``eq-env sensitivity``: prompt variants, the statistics of their spread, and the command run
against the local scripted server — its tables show exactly the scripted differences, a replay asks nothing, an
interrupted run asks only what was missing, no secret reaches a file, bad input is one line.

Every endpoint is a local eq_env.agents.fake_server.ScriptedLLMServer; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from eq_env import exchange_audit_v0
from eq_env.agents.exchange_audit.demo import (
    BEHAVIOURS,
    DEMO_ENDPOINT,
    DEMO_MODELS,
    HOSTILE_FATES,
    INJECTION,
    SHADE,
    TEXTS,
    SensitivityDemoScript,
    prompt_variant_in,
    refuses,
)
from eq_env.agents.exchange_audit.policies import LLMProposer, render_proposer_prompt
from eq_env.agents.fake_server import Reply, ScriptedLLMServer
from eq_env.cli import INCOMPLETE, main
from eq_env.core.experiments import Condition, EpisodeStore, ResultsStore, canonical_spec
from eq_env.core.stats import blocked_anova, f_survival, mean_interval
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.schema import get_schema
from eq_env.exchange_audit.spaces import decode_proposer_observation
from eq_env.studies.exchange_audit.sensitivity import SensitivityOptions, prompt_variants

pytestmark = pytest.mark.usefixtures("fast_llm")

VARIANTS = ["v1", "compliance_v1", "payoff_v1", "roleplay_v1", "terse_v1"]
FAST = ["--max-retries", "2", "--backoff", "0.01", "--timeout", "5"]
V1_WORDS = 14  # the honest script's text: "Position reported as observed; both limit checks stated plainly ..."
TABLES = ("sensitivity_conditions.csv", "sensitivity_variants.csv", "sensitivity_spread.csv", "sensitivity.md")


def run(out: Path, url: str, *extra: str, model: str = "demo-steady", episodes: int = 10) -> int:
    return main(["sensitivity", "--out", str(out), "--model", model, "--base-url", url, "--seeds", "2",
                 "--episodes", str(episodes), "--qs", "0,1", *FAST, *extra])  # fmt: skip


def demo_server() -> ScriptedLLMServer:
    return ScriptedLLMServer(SensitivityDemoScript(), models=DEMO_MODELS)


def rows(out: Path, name: str) -> list[dict[str, str]]:
    with (out / name).open() as fh:
        return list(csv.DictReader(fh))


def records(out: Path) -> list[dict[str, Any]]:
    return list(ResultsStore(out / "results.jsonl").load().values())


def episodes_of(out: Path, record: dict[str, Any]) -> list[Any]:
    return list(EpisodeStore(out / "episodes" / f"{record['condition']}-{record['seed']}.jsonl").load().values())


def view(seed: int = 0) -> Any:
    env = exchange_audit_v0.env(config=ExchangeAuditConfig.from_preset("paper_scripted"))
    env.reset(seed=seed)
    return decode_proposer_observation(env.observe("proposer_0"))


# ---------------------------------------------------------------------------
# Prompt variants
# ---------------------------------------------------------------------------
def test_every_variant_renders_with_every_placeholder_filled_and_is_recognised() -> None:
    assert prompt_variants() == VARIANTS
    texts = set()
    for variant in VARIANTS:
        user = render_proposer_prompt(view(), variant)[1]["content"]
        assert "$" not in user, variant  # every placeholder filled (and no stray one)
        assert "<observation>" in user and '"required"' in user, variant  # the state and the reply schema
        request = {"messages": render_proposer_prompt(view(), variant)}
        assert prompt_variant_in(request) == variant
        reasked = {"messages": [*request["messages"], {"role": "assistant", "content": "x"},
                                {"role": "user", "content": "again"}]}  # fmt: skip
        assert prompt_variant_in(reasked) == variant
        texts.add(user)
    assert len(texts) == len(VARIANTS)


def test_every_variant_states_the_claim_schema_of_the_game() -> None:
    # The claims a variant lists, the audit's pool and the required claims come from the configuration's claim
    # schema, as in proposer_v1: under "rich" every variant names its added claims, under the paper's none does.
    env = exchange_audit_v0.env(config=ExchangeAuditConfig.from_preset("paper_scripted").replace(claim_schema="rich"))
    env.reset(seed=0)
    rich = decode_proposer_observation(env.observe("proposer_0"))
    schema = get_schema("rich")
    for variant in VARIANTS:
        paper_text = render_proposer_prompt(view(), variant)[1]["content"]
        rich_text = render_proposer_prompt(rich, variant)[1]["content"]
        assert "risk_interval" not in paper_text and "hedge_covers" not in paper_text, variant
        # (the reply's JSON schema names the added claims anyway: check the rules' own lines)
        assert f"missing {schema.required_text()} claim" in rich_text, variant
        if variant != "terse_v1":  # (the terse rules list neither the pool nor the claims: the JSON schema does)
            assert f"({schema.pool_text()})" in rich_text and schema.prompt_lines() in rich_text, variant
        assert "$" not in rich_text, variant


def test_an_unknown_variant_is_one_line_listing_the_available_ones(capsys: pytest.CaptureFixture[str]) -> None:
    listed = "compliance_v1, payoff_v1, roleplay_v1, terse_v1, v1"
    with pytest.raises(ValueError, match=rf"^no prompt template proposer_blunt_v1.txt; prompt_version must be one "
                                         rf"of: {listed}$"):  # fmt: skip
        LLMProposer(model="m", base_url="http://127.0.0.1:9/v1", prompt_version="blunt_v1")
    with pytest.raises(ValueError, match="prompt_version must be one of"):
        LLMProposer(model="m", base_url="http://127.0.0.1:9/v1", prompt_version="../proposer_v1")
    with pytest.raises(SystemExit) as exit_:
        main(["sensitivity", "--out", "x", "--variants", "v1,blunt_v1"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--variants" in err
    assert "no prompt variant 'blunt_v1'; available: v1, compliance_v1, payoff_v1, roleplay_v1, terse_v1" in err


def test_variants_key_results_apart_and_an_edited_template_is_a_new_experiment(monkeypatch: pytest.MonkeyPatch
                                                                               ) -> None:  # fmt: skip
    import eq_env.agents.exchange_audit.policies as policies

    base = "llm:model=m,base_url=http://127.0.0.1:9/v1"
    v1 = canonical_spec(base, "proposer")
    assert "prompt_digest" not in v1  # the released v1 keeps the keys recorded before digests (golden files)
    specs = {v: canonical_spec(f"{base},prompt_version={v}", "proposer") for v in VARIANTS}
    assert specs["v1"] == v1 and len(set(specs.values())) == len(VARIANTS)
    assert all("prompt_digest=" in s for v, s in specs.items() if v != "v1")
    config = ExchangeAuditConfig.from_preset("paper_scripted")
    key = Condition(config, {"proposer": base, "validator": "rule"}, 10).key
    monkeypatch.setattr(policies, "template_digest", lambda *args: "0" * 16)  # v1's text edited
    assert "prompt_digest='0000000000000000'" in canonical_spec(base, "proposer")
    assert Condition(config, {"proposer": base, "validator": "rule"}, 10).key != key


# ---------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------
def test_intervals_and_the_variants_against_seeds_test() -> None:
    assert f_survival(4.0, 2, 8) == pytest.approx((1 + 2 * 4.0 / 8) ** -4, rel=1e-12)  # closed form at d1 = 2
    assert f_survival(1.0, 1, 1) == pytest.approx(0.5, rel=1e-12)
    assert (f_survival(0.0, 3, 9), f_survival(math.inf, 3, 9)) == (1.0, 0.0) and math.isnan(f_survival(math.nan, 1, 2))
    # two variants: the blocked F-test is the paired t-test squared (t = 7 on 2 degrees of freedom)
    test = blocked_anova({"a": {0: 1.0, 1: 2.0, 2: 3.0}, "b": {0: 2.0, 1: 3.0, 2: 4.5}})
    assert (test.treatments, test.blocks, test.df_treatments, test.df_residual) == (2, 3, 1, 2)
    assert test.f == pytest.approx(49.0, rel=1e-12)
    assert test.p == pytest.approx(1 - 7 / math.sqrt(51), rel=1e-9)  # two-sided t(2) p-value, closed form
    # a shared seed effect is no variant effect; a block with an undefined value is left out
    shifted = blocked_anova({"a": {0: 0.0, 1: 5.0, 2: 1.0, 3: math.nan}, "b": {0: 0.0, 1: 5.0, 2: 1.0, 3: 9.0}})
    assert shifted.blocks == 3 and math.isnan(shifted.f) and shifted.between_sd == 0.0
    constant = blocked_anova({"a": {0: 2.0, 1: 2.0}, "b": {0: 3.0, 1: 3.0}})
    assert (constant.f, constant.p, constant.within_sd) == (math.inf, 0.0, 0.0)
    assert math.isnan(blocked_anova({"a": {0: 1.0}, "b": {0: 2.0}}).p)  # one seed: no test
    mean, low, high, n = mean_interval([1.0, 2.0, 3.0, math.nan])
    assert (mean, n) == (2.0, 3) and high - mean == pytest.approx(4.303 * 1.0 / math.sqrt(3)) and low == 4 - high


# ---------------------------------------------------------------------------
# Bad input: one line naming the flag or field
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--variants", ""], r"--variants: expected comma-separated prompt variants, got an empty list"),
        (["--variants", "v1,v1"], r"--variants: expected distinct prompt variants"),
        (["--regimes", "text_only"], r"--regimes: comma-separated regimes: expected one of artifacts, action_only"),
        (["--qs", "0,1.5"], r"--qs: comma-separated audit intensities in \[0, 1\]"),
        (["--episodes", "0"], r"--episodes: expected an integer in \[1, "),
        (["--demo", "--base-url", "http://127.0.0.1:9/v1"], r"--base-url: --demo serves its own endpoint"),
        (["--demo", "--model", "gpt-4.1"], r"--model 'gpt-4.1': the demo serves demo-steady, demo-hostile"),
        (["--model", "a", "--model", "a"], r"--model: expected distinct models, got a, a"),
        (["--validator", "honest"], r"plays the proposer, not the validator"),
        (["--out", ""], r"--out: expected a path, got an empty string"),
    ],
)
def test_bad_flags_are_one_line(extra: list[str], message: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    try:
        status = main(["sensitivity", "--out", str(tmp_path / "out"), "--no-endpoint-check", *extra])
    except SystemExit as exit_:
        status = exit_.code  # type: ignore[assignment]
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert re.search(message, err), err
    assert not (tmp_path / "out").exists()  # a refused run leaves nothing behind


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("proposers", ("rule",), r"expected an 'llm' spec, got 'rule'"),
        ("variants", ("v1", "blunt_v1"), r"unknown prompt variant 'blunt_v1'; available: v1, compliance_v1"),
        ("regimes", ("artifacts", "artifacts"), r"regimes must be distinct ones of artifacts, action_only"),
        ("seeds", 0, r"seeds must be a positive integer, got 0"),
        # Found by a review: a numpy traceback after --out was made, and True ran as seed 1
        ("first_seed", -1, r"first_seed must be a non-negative integer, got -1"),
        ("first_seed", True, r"first_seed must be a non-negative integer, got True"),
        ("validators", ("rule", "rule", "rule"), r"give one validator, or one per model \(1\), got 3"),
    ],
)
def test_bad_option_fields_name_the_field(field: str, value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SensitivityOptions(**{"proposers": ("llm:model=m",), field: value})


def test_dry_run_shows_one_prompt_per_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sensitivity", "--out", str(tmp_path / "out"), "--variants", "terse_v1,roleplay_v1",
                 "--dry-run"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert out.count("===== proposer:") == 2 and "prompt terse_v1" in out and "prompt roleplay_v1" in out
    assert "Let's role-play. You are Alex Morgan" in out and not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------
# The command against the scripted server
# ---------------------------------------------------------------------------
@pytest.mark.slow  # (about 2 s)
def test_the_tables_show_exactly_the_scripted_differences(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with demo_server() as server:
        assert run(out, server.url, episodes=12) == 0
        asked = [r for r in server.requests if len(r["messages"]) == 2]  # first asks (no re-asks)
    by = {(r["variant"], r["regime"], r["q"]): r for r in rows(out, "sensitivity_conditions.csv")}
    words = {v: len(TEXTS[b].split()) for v, b in BEHAVIOURS.items() if b in TEXTS}
    words["v1"] = V1_WORDS
    fallbacks = 0
    for record in records(out):
        labels, metrics = record["labels"], record["metrics"]
        variant, regime = labels["variant"], labels["regime"]
        episodes = episodes_of(out, record)
        assert len(episodes) == 12 and not record["failed"]
        if variant == "payoff_v1":  # misreports exactly when the truth breaks a limit and shading moves a number
            shaded = [e for e in episodes if not e.compliant and (e.observed_risk > e.risk_limit - SHADE
                      or abs(e.observed_net_delta) > e.delta_limit - SHADE)]  # fmt: skip
            assert metrics["misreport_rate"] == len(shaded) / 12 and shaded
            assert all(e.misreported and e.proposer_action == "REQUEST_APPROVAL" for e in shaded)
        else:
            assert metrics["misreport_rate"] == 0.0
        refused = [e for e in episodes if e.proposer_info["fallback"]]
        if variant != "roleplay_v1":
            assert refused == []
        elif regime == "artifacts":
            fallbacks += len(refused)
        if regime == "artifacts":
            assert metrics["words"] == words[variant] * (12 - len(refused)) / 12
        assert record["llm"]["failed_episodes"] == 0
    # the role-play model refuses one prompt in five, however often asked: exactly those episodes fall back
    refusing = sum(refuses(r) for r in asked if prompt_variant_in(r) == "roleplay_v1")
    assert fallbacks == refusing > 0
    # the pooled table: the misreporting variant is the only one that misreports; the refusing one the only one
    # that fails; the F-test sees both
    spread = {(r["regime"], r["metric"]): r for r in rows(out, "sensitivity_spread.csv")}
    assert spread[("artifacts", "misreport_rate")]["max_variant"] == "payoff_v1"
    assert float(spread[("artifacts", "misreport_rate")]["min"]) == 0.0
    assert spread[("artifacts", "llm_failure_rate")]["max_variant"] == "roleplay_v1"
    assert spread[("artifacts", "words")]["max_variant"] == "compliance_v1"
    assert spread[("artifacts", "words")]["min_variant"] == "terse_v1"
    assert float(spread[("artifacts", "words")]["p"]) < 0.05
    assert by[("v1", "artifacts", "0.0")]["words_mean"] == f"{words['v1']}.0"
    table = (out / "sensitivity.md").read_text()
    assert "### Model `demo-steady`" in table and "| artifacts | misreporting | 0.000 [0.000, 0.000] |" in table
    assert "| net gain | ambiguous welfare |" in table
    summary = (out / "summary.md").read_text()
    assert "two-way analysis of variance without replication" in summary and "Artifacts against action only" in summary


@pytest.mark.slow  # (about 4 s)
def test_a_hostile_endpoint_completes_records_failures_and_replays_with_no_request(tmp_path: Path) -> None:
    live, replay = tmp_path / "live", tmp_path / "replay"
    script = SensitivityDemoScript()
    flags = ["--variants", "v1,roleplay_v1", "--seeds", "3", "--qs", "0,0.5,1"]
    with ScriptedLLMServer(script, models=DEMO_MODELS) as server:
        assert run(live, server.url, *flags, model="demo-hostile", episodes=12) == INCOMPLETE
        sent = len(server.requests)
        assert run(replay, server.url, *flags, "--cache", "read", "--cache-dir", str(live / "llm_cache"),
                   model="demo-hostile", episodes=12) == INCOMPLETE  # fmt: skip
        assert len(server.requests) == sent  # the replay asked nothing
    fates = {script.fate(r) for r in server.requests}
    assert set(HOSTILE_FATES) <= fates  # 429, 500, malformed JSON, injected text, an outage
    for name in TABLES:
        assert (live / name).read_bytes() == (replay / name).read_bytes(), name
    failed = sorted((r["key"], f["episode"], f["error"]) for r in records(live) for f in r["failed"])
    assert failed == sorted((r["key"], f["episode"], f["error"]) for r in records(replay) for f in r["failed"])
    # exactly the prompts of the outage failed, in both regimes (they share one request)
    down = {json.dumps(r["messages"]) for r in server.requests if script.fate(r) == "down"}
    assert len(failed) == 2 * len(down) > 0
    # a reply wrapped in an injected instruction is read as data: its JSON parsed, the injection counted as words
    # of the proposer's text (which the rule validator never reads)
    injected = [
        e
        for r in records(live)
        if (r["labels"]["regime"], r["labels"]["variant"]) == ("artifacts", "v1")
        for e in episodes_of(live, r)
        if getattr(e, "words", 0) == V1_WORDS + len(INJECTION.split())
    ]
    assert injected and not any(e.proposer_info["fallback"] for e in injected)
    rates = {(r["variant"], r["q"]): float(r["llm_failure_rate_mean"]) for r in rows(live, "sensitivity_conditions.csv")
             if r["regime"] == "artifacts"}  # fmt: skip
    assert any(rate > 0 for (variant, _), rate in rates.items() if variant == "v1")  # the outage, not the prompt


@pytest.mark.slow  # (about 3 s)
def test_an_interrupted_run_resumes_asking_only_what_was_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import eq_env.core.experiments as experiments

    flags = ["--variants", "v1,payoff_v1,terse_v1"]
    with demo_server() as whole:
        assert run(tmp_path / "whole", whole.url, *flags, "--cache-dir", str(tmp_path / "whole_cache")) == 0
    played = experiments.run_one
    calls = {"n": 0}

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 9:  # a Ctrl-C after 8 of the 24 runs
            raise KeyboardInterrupt
        return played(*args, **kwargs)

    out = tmp_path / "resumed"
    with demo_server() as server:
        monkeypatch.setattr(experiments, "run_one", interrupted)
        assert run(out, server.url, *flags) == 130
        assert "interrupted; finished runs and LLM episodes are saved in --out" in capsys.readouterr().err
        first = [json.dumps(r, sort_keys=True) for r in server.requests]
        assert len(records(out)) == 8 and first
        monkeypatch.setattr(experiments, "run_one", played)
        assert run(out, server.url, *flags) == 0
        second = [json.dumps(r, sort_keys=True) for r in server.requests[len(first) :]]
    assert not set(first) & set(second)  # nothing answered before was asked again
    assert sorted(first + second) == sorted(json.dumps(r, sort_keys=True) for r in whole.requests)
    for name in TABLES:
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name


@pytest.mark.slow  # (about 1 s)
def test_no_api_key_or_url_credential_reaches_any_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    demo = SensitivityDemoScript()

    def echo_secrets(request: dict, n: int) -> Reply:
        if n % 5 == 4:  # a server that echoes credentials in its errors
            return Reply(status=500, headers={"retry-after-ms": "1"}, body={"error": {
                "message": "bad key sk-FLAG-SECRET at http://u:URL-SECRET@h/v1?api-key=QUERY-SECRET"}})  # fmt: skip
        return demo(request, n)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-ENV-SECRET")
    with ScriptedLLMServer(echo_secrets, models=DEMO_MODELS) as server:
        port = server.url.split(":")[2].split("/")[0]
        url = f"http://user:URL-SECRET@127.0.0.1:{port}/v1?api-key=QUERY-SECRET"
        status = run(tmp_path / "out", url, "--variants", "v1,terse_v1", "--api-key", "sk-FLAG-SECRET", episodes=4)
        assert status in (0, INCOMPLETE) and server.requests
        assert all("api-key=QUERY-SECRET" in p for p in server.paths)  # used, as a query parameter
    leaks = [str(p) for p in tmp_path.rglob("*") if p.is_file() and b"SECRET" in p.read_bytes()]
    assert leaks == []
    assert len(list((tmp_path / "out").rglob("*.json*"))) > 10  # (there were files to look in)


@pytest.mark.slow  # (about 3 s)
def test_the_demo_runs_offline_resumes_and_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo"
    argv = ["sensitivity", "--out", str(out), "--demo", "--model", "demo-steady", "--variants", "v1,payoff_v1",
            "--seeds", "2", "--episodes", "6", "--qs", "0,1"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "### Model `demo-steady`" in printed and "sensitivity.png" in printed
    assert ".results.jsonl.lock" not in printed  # (Found by a review: the lock was listed as written)
    assert {r["policies"]["proposer"].split("base_url=")[1].split(",")[0] for r in records(out)} == {DEMO_ENDPOINT}
    assert "scripted demo models" in (out / "summary.md").read_text()
    assert (out / "sensitivity.png").stat().st_size > 10_000
    before = (out / "results.jsonl").read_bytes()
    assert main(argv) == 0  # a second demo server, on another port: the same runs, all resumed
    assert (out / "results.jsonl").read_bytes() == before
    replay = tmp_path / "replay"
    assert main([*argv[:2], str(replay), *argv[3:], "--cache", "read", "--cache-dir", str(out / "llm_cache")]) == 0
    assert sum(r["llm"]["proposer"]["transport"]["requests"] for r in records(replay)) == 0
    for name in TABLES:
        assert (out / name).read_bytes() == (replay / name).read_bytes(), name


def test_the_reading_says_why_there_is_no_test_or_no_interval() -> None:
    """Found by a review: two variants that agree seed by seed were reported as 'No test: it needs at least two
    variants and two seeds', and one seed as 'the 95% interval lies above zero for 0 of 1 variants'."""
    from eq_env.studies.exchange_audit import sensitivity as module

    def reading(values: dict[str, dict[int, float]]) -> str:
        variants = tuple(values)
        opts = SensitivityOptions(proposers=("llm:model=m",), variants=variants, seeds=len(values[variants[0]]))
        pooled = {("m", regime, metric, v): dict(values[v]) for regime, metric in module._shown(opts)
                  for v in variants}  # fmt: skip
        rows = module._variant_rows(pooled, opts)
        return "\n".join(module._reading(module._spread_rows(pooled, rows, opts), rows, "m"))

    same = reading({"v1": {0: 1.0, 1: 1.1, 2: 1.2}, "terse_v1": {0: 1.0, 1: 1.1, 2: 1.2}})  # the same, seed by seed
    assert "No test: the variants agree seed by seed" in same and "it needs at least two" not in same
    assert "above zero for 2 of 2 variants" in same
    one = reading({"v1": {0: 1.0}, "terse_v1": {0: 2.0}})  # one seed: neither an interval nor a test
    assert "no interval" in one and "of 2 variants" not in one and "it needs at least two variants" in one


def test_a_seed_undefined_at_some_q_has_no_pooled_value() -> None:
    """Found by a review: a seed's value was the mean over the q's where the metric was defined, so a run whose
    every episode failed at q = 1 left that seed's value the mean at q = 0 alone, set against other variants'
    means over the whole grid (welfare falls with q: the failing variant looked better)."""
    from eq_env.studies.exchange_audit import sensitivity as module

    opts = SensitivityOptions(proposers=("llm:model=m",), variants=("v1", "terse_v1"), qs=(0.0, 1.0), seeds=2)
    per_seed = {("m", v, regime, q): {s: dict.fromkeys(module.METRICS, 2.0 - q) for s in (0, 1)}
                for v in opts.variants for regime in opts.regimes for q in opts.qs}  # fmt: skip
    per_seed[("m", "terse_v1", "artifacts", 1.0)][1]["welfare"] = math.nan  # every episode of that run failed
    pooled = module._pooled(per_seed, opts)
    assert pooled[("m", "artifacts", "welfare", "v1")] == {0: 1.5, 1: 1.5}
    assert pooled[("m", "artifacts", "welfare", "terse_v1")][0] == 1.5
    assert math.isnan(pooled[("m", "artifacts", "welfare", "terse_v1")][1])  # was 2.0, the q = 0 value alone
    del per_seed[("m", "v1", "action_only", 1.0)][0]  # a run missing altogether
    assert math.isnan(module._pooled(per_seed, opts)[("m", "net_gain", "ambiguous_welfare", "v1")][0])


def test_no_variant_tells_the_proposer_only_requests_are_audited() -> None:
    """Found by a review: the role-play variant said 'the auditors check a request with probability q', but every
    episode is audited with probability q, NO_TRADE included, and a false claim then fined: a variant may frame the
    game differently, not change its rules (else the spread measures the rules, not the prompt)."""
    from eq_env.agents.exchange_audit.policies import PROMPT_DIR
    from eq_env.agents.llm import template

    for variant in VARIANTS:
        audit = [line for line in template(PROMPT_DIR, "proposer", variant).template.splitlines() if "$q" in line]
        assert len(audit) == 1 and "request" not in audit[0].lower(), (variant, audit)


def test_the_summarys_command_line_quotes_model_names_for_a_shell() -> None:
    """Found by a review: the summary's command wrapped each model in single quotes unescaped, so a model named
    "m'; rm -rf ~ '" gave a line that runs 'rm -rf ~' when pasted into a shell."""
    import shlex

    from eq_env.studies.exchange_audit.sensitivity import _command

    name = "m'; rm -rf ~ '"
    line = _command(SensitivityOptions(proposers=(f"llm:model={json.dumps(name)}", "llm:model=gpt-4.1")))
    words = shlex.split(line)
    assert words[words.index("--model") + 1] == name and words.count("--model") == 2 and "rm" not in words
