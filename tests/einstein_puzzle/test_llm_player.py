"""The Einstein puzzle's LLM players against a local scripted OpenAI-compatible server.

No test leaves 127.0.0.1: every endpoint is eq_env.agents.fake_server.ScriptedLLMServer, answering with the
participants of eq_env.agents.einstein_puzzle.scripts (a good player, a bad one, the fake server's chaos).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from eq_env import einstein_puzzle_v0
from eq_env.agents.client import LLMClient, configure
from eq_env.agents.einstein_puzzle.policies import LLMPlayer, illegal_reason, player_factory, read_action
from eq_env.agents.einstein_puzzle.prompt import render_messages
from eq_env.agents.einstein_puzzle.scripts import bad_script, candidates_script, good_action, good_script, read_text
from eq_env.agents.fake_server import ChaosScript, Reply, ScriptedLLMServer
from eq_env.core.policy import make_policy
from eq_env.core.runner import FailedEpisode, evaluate, llm_summary, play, play_concurrent
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.grammar import GrammarError
from eq_env.einstein_puzzle.rules import Move, Pass
from eq_env.einstein_puzzle.spaces import action_index, actions, n_from_actions

ENV = "einstein-puzzle"
PAPER = EinsteinPuzzleConfig()


pytestmark = pytest.mark.usefixtures("fast_llm")  # (tests/conftest.py: own cache, short backoffs)


def first_observation(config: EinsteinPuzzleConfig = PAPER, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    env = einstein_puzzle_v0.env(config=config)
    env.reset(seed=seed)
    return env, env.observe("player_0")


def player(server: ScriptedLLMServer, **params: Any) -> LLMPlayer:
    extra = "".join(f",{k}={v}" for k, v in params.items())
    return make_policy(f"llm:model=fake,base_url={server.url}{extra}", "player_0", ENV)  # type: ignore[return-value]


def llm(server: ScriptedLLMServer, **params: Any) -> str:
    return f"llm:model=fake,base_url={server.url}" + "".join(f",{k}={v}" for k, v in params.items())


def user_prompts(server: ScriptedLLMServer) -> list[str]:
    return [r["messages"][-1]["content"] for r in server.requests]


# ---------------------------------------------------------------------------
# Parsing, re-asking, falling back
# ---------------------------------------------------------------------------
class TestPlainPlayer:
    def test_registered_for_both_seats(self) -> None:
        for role in ("player_0", "player_1"):
            p = make_policy("llm:model=fake,base_url=http://127.0.0.1:9/v1", role, ENV)
            assert p.role == role and type(p).__name__ == "LLMPlayer" and callable(getattr(p, "aact", None))
            v = make_policy("llm:model=fake,base_url=http://127.0.0.1:9/v1,verifier=reasoning,k=4", role, ENV)
            assert (
                v.role == role
                and type(v).__name__ == "VerifiedLLMPlayer"
                and callable(getattr(v, "aact_privileged", None))
            )
        with pytest.raises(ValueError, match="verifier must be one of"):
            player_factory("player_0")(model="fake", base_url="http://127.0.0.1:9/v1", verifier="oracle")

    def test_a_good_reply_is_played_and_the_request_is_plain_text(self) -> None:
        _env, obs = first_observation()
        with ScriptedLLMServer(good_script) as server:
            index, info = asyncio.run(player(server).aact(obs))
        expected = good_action(obs["text"])
        assert actions(n_from_actions(len(obs["action_mask"])))[index].text() == expected
        assert obs["action_mask"][index] == 1
        request = server.requests[0]
        assert "response_format" not in request and "n" not in request  # plain text, one sample
        assert request["messages"] == render_messages(obs["text"], "v1")
        assert info["fallbacks"] == 0 and info["reasks"] == 0 and info["transport"]["requests"] == 1
        assert info["prompt_tokens"] > 0 and info["completion_tokens"] > 0

    @pytest.mark.parametrize(
        "bad, reason",
        [("I will move 0 from bottom_start to bottom_left.", "is not an action"),
         ("move 0 from top_start to common", "you cannot reach top_start"),
         ("move 1 from bottom_start to common", "object 1 is not in bottom_start (it is in top_start)"),
         ("ask 99", "there is no object 99"),
         ("", "the reply is empty")],
    )  # fmt: skip
    def test_invalid_reply_is_sent_back_with_the_reason(self, bad: str, reason: str) -> None:
        _env, obs = first_observation()
        good = good_action(obs["text"])
        with ScriptedLLMServer([Reply(content=bad), Reply(content=good)]) as server:
            _index, info = asyncio.run(player(server).aact(obs))
        assert len(server.requests) == 2 and info["reasks"] == 1 and info["fallbacks"] == 0
        second = server.requests[1]["messages"]
        assert second[-2] == {"role": "assistant", "content": bad}
        assert reason in second[-1]["content"] and reason in info["invalid_replies"][0]
        assert info["action"] == good

    def test_an_illegal_reask_names_legal_actions(self) -> None:
        _env, obs = first_observation()
        text = illegal_reason(Move(0, 5, 6), obs["text"], obs["action_mask"])
        legal = [a.text() for a, ok in zip(actions(4), obs["action_mask"], strict=True) if ok]
        assert "Legal now, for example: " + legal[0] in text

    def test_fallback_to_pass_after_max_reasks(self) -> None:
        _env, obs = first_observation()
        with ScriptedLLMServer([Reply(content="share 2 and then ask 1")]) as server:
            index, info = asyncio.run(player(server, max_reasks=1).aact(obs))
        assert index == action_index(Pass(), 4)
        assert len(server.requests) == 2  # the first ask and one re-ask
        assert info["fallback"] is True and info["fallbacks"] == 1 and info["reasks"] == 2
        assert "no valid reply in 2 attempts" in info["fallback_reason"]

    def test_reasoning_mode_reads_the_action_line(self) -> None:
        _env, obs = first_observation()
        with ScriptedLLMServer(good_script) as server:
            _index, info = asyncio.run(player(server, reasoning="true").aact(obs))
        assert "ACTION: <action>" in server.requests[0]["messages"][-1]["content"]
        assert server.requests[0]["max_tokens"] == 1024
        assert info["action"] == good_action(obs["text"]) and info["reasks"] == 0
        assert read_action("Object 0 goes bottom_left.\nACTION: pass\n", 4) == Pass()
        with pytest.raises(GrammarError):  # the last ACTION line counts: prose there is not an action
            read_action("ACTION: pass\nACTION: I pass", 4)

    def test_the_good_participant_reads_the_text(self) -> None:
        env, obs = first_observation()
        seen = read_text(obs["text"])
        game = env.unwrapped.game
        assert seen.player == 0 and seen.n == game.puzzle.n and seen.location == dict(enumerate(game.location))
        assert set(seen.own) == set(game.puzzle.given(0))


# ---------------------------------------------------------------------------
# Whole games
# ---------------------------------------------------------------------------
@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_good_player_with_the_planner_wins_its_games() -> None:
    with ScriptedLLMServer(good_script) as server:
        for seats in ({"player_0": llm(server), "player_1": "planner"},
                      {"player_0": "planner", "player_1": llm(server)}):  # fmt: skip
            records = play(ENV, PAPER, seats, episodes=10, seed=0, concurrency=4)
            assert sum(r.success for r in records) >= 9
            assert all(r.illegal == 0 for r in records)


def test_bad_player_games_finish_with_every_failure_recorded() -> None:
    with ScriptedLLMServer(bad_script()) as server:
        records = play(ENV, PAPER, {"player_0": llm(server, max_reasks=1), "player_1": "planner"}, episodes=3, seed=0)
    for r in records:
        info = r.infos["player_0"]
        decisions = sum(1 for i, a in enumerate(r.actions) if i % 2 == 0 and a)
        assert info["fallbacks"] == decisions  # never a clean action: every decision fell back to pass
        assert info["reasks"] == 2 * decisions and len(info["invalid_replies"]) == 2 * decisions
        assert not r.success
    summary = llm_summary(ENV, PAPER, records)
    # the summary counts decisions, not episodes: every decision of the three games fell back
    total = sum(r.infos["player_0"]["fallbacks"] for r in records)
    assert summary["player_0"]["fallbacks"] == total == summary["player_0"]["calls"] > 3
    assert summary["player_0"]["reasks"] > 0


def test_bad_player_that_corrects_itself_when_asked_again() -> None:
    with ScriptedLLMServer(bad_script(fix_on_reask=True)) as server:
        records = play(ENV, PAPER, {"player_0": llm(server), "player_1": "planner"}, episodes=4, seed=1)
    assert all(r.success for r in records)
    assert all(r.infos["player_0"]["fallbacks"] == 0 and r.infos["player_0"]["reasks"] > 0 for r in records)


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_hostile_endpoint_runs_finish_with_failures_recorded() -> None:
    configure(timeout=0.3)  # (the slow answers outlast it)
    with ScriptedLLMServer(ChaosScript(delay=0.6, answer=good_script)) as server:
        episodes = play_concurrent(ENV, PAPER, {"player_0": llm(server), "player_1": "planner"}, episodes=8, seed=0,
                                   concurrency=8)  # fmt: skip
    failed = [e for e in episodes if isinstance(e, FailedEpisode)]
    done = [e for e in episodes if not isinstance(e, FailedEpisode)]
    assert len(episodes) == 8 and failed and done  # some outages outlast the retries, others are retried through
    assert all(f.role == "player_0" and "gave up" in f.error for f in failed)
    summary = llm_summary(ENV, PAPER, done, failed)
    assert summary["failed_episodes"] == len(failed)
    assert summary["player_0"]["transport"]["retries"] > 0 and summary["player_0"]["transport"]["errors"] > 0


# ---------------------------------------------------------------------------
# Record and replay
# ---------------------------------------------------------------------------
def test_cache_write_then_read_replays_identically_with_no_request(tmp_path: Path) -> None:
    configure(cache="write", api_key="sk-secret-key-123")
    seats = {"player_0": "", "player_1": "planner"}
    with ScriptedLLMServer(good_script, api_key="sk-secret-key-123") as server:
        seats["player_0"] = llm(server, reasoning="true")
        first = evaluate(ENV, PAPER, seats, episodes=4, seeds=[0, 1], concurrency=4)
        asked = len(server.requests)
        LLMClient.forget()
        configure(cache="read")
        again = evaluate(ENV, PAPER, seats, episodes=4, seeds=[0, 1], concurrency=4)
        assert len(server.requests) == asked and server.model_requests <= 1  # the replay asked nothing
    assert asked > 0
    strip = ("transport",)
    for a, b in zip(first.records, again.records, strict=True):
        assert a.actions == b.actions and a.outcomes == b.outcomes and a.success == b.success
        ia, ib = a.infos["player_0"], b.infos["player_0"]
        assert {k: v for k, v in ia.items() if k not in strip} == {k: v for k, v in ib.items() if k not in strip}
    assert first.per_seed == again.per_seed
    files = list((tmp_path / "llm_cache").rglob("*"))
    assert files and not any("sk-secret-key-123" in f.read_text() for f in files if f.is_file())


# ---------------------------------------------------------------------------
# Verifier-assisted play: k candidates
# ---------------------------------------------------------------------------
def privileged(server: ScriptedLLMServer, obs: dict[str, Any], env: Any, **params: Any) -> tuple[int, dict]:
    policy = make_policy(llm(server, **params), "player_0", ENV)
    return asyncio.run(policy.aact_privileged(obs, env))  # type: ignore[attr-defined, no-any-return]


def test_k_candidates_in_one_request_with_n() -> None:
    env, obs = first_observation()
    with ScriptedLLMServer(candidates_script) as server:
        _index, info = privileged(server, obs, env, verifier="reasoning", k=4)
    assert len(server.requests) == 1 and server.requests[0]["n"] == 4
    assert info["action"] == good_action(obs["text"])  # the illegal first candidate was corrected
    assert info["verifier_interventions"] == 1 and info["verifier_candidates"] == 2
    assert info["transport"]["requests"] == 1


def test_k_requests_when_the_endpoint_rejects_n_and_it_is_remembered() -> None:
    env, obs = first_observation()
    with ScriptedLLMServer(good_script, n_supported=False) as server:
        policy = make_policy(llm(server, verifier="affordance", k=3), "player_0", ENV)

        async def twice() -> tuple[dict, dict]:
            first = (await policy.aact_privileged(obs, env))[1]  # type: ignore[attr-defined]
            env2, obs2 = first_observation(seed=1)
            second = (await policy.aact_privileged(obs2, env2))[1]  # type: ignore[attr-defined]
            return first, second

        first, second = asyncio.run(twice())
    with_n = [r for r in server.requests if r.get("n", 1) != 1]
    assert len(with_n) == 1  # asked once with n=3, rejected, then never again
    assert len(server.requests) == 1 + 3 + 3
    # the rejected request is one of the first decision's (every request made is counted)
    assert first["transport"]["requests"] == 4 and any("n=3 rejected" in e for e in first["transport"]["errors"])
    assert second["transport"]["requests"] == 3 and first["attempts"] == second["attempts"] == 3
    assert first["verifier_interventions"] == 0 and first["verifier_candidates"] == 1


def test_verifier_none_plays_the_first_action_and_unparsable_candidates_are_worst() -> None:
    env, obs = first_observation()
    with ScriptedLLMServer([Reply(content="x", choices=["hello", "move 0 from top_start to common", "pass"])]) as s:
        _, info = privileged(s, obs, env, verifier="none", k=3)
    assert info["action"] == "move 0 from top_start to common" and info["verifier_interventions"] == 1
    with ScriptedLLMServer([Reply(content="x", choices=["hello", "move 0 from top_start to common", "pass"])]) as s:
        _, info = privileged(s, obs, env, verifier="reasoning", k=3)
    # none passes the reasoning verifier (a pass while moves are possible): the least bad is played
    assert info["action"] == "pass" and info["verifier_candidates"] == 3 and info["fallbacks"] == 0
    with ScriptedLLMServer([Reply(content="x", choices=["hello", "what?"])]) as s:
        index, info = privileged(s, obs, env, verifier="affordance", k=2)
    assert index == action_index(Pass(), 4) and info["fallback"] is True and info["verifier_interventions"] == 1


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_verifier_assisted_games_count_interventions() -> None:
    with ScriptedLLMServer(candidates_script) as server:
        records = play(ENV, PAPER, {"player_0": llm(server, verifier="reasoning", k=4), "player_1": "planner"},
                       episodes=3, seed=0, concurrency=3)  # fmt: skip
    for r in records:
        assert r.success and r.illegal == 0
        decisions = len(r.actions[::2])
        assert r.verifier_interventions == decisions == r.infos["player_0"]["verifier_interventions"]
    assert len(server.requests) == sum(len(r.actions[::2]) for r in records)  # one request per decision


@pytest.mark.slow
@pytest.mark.parametrize("comm_mode", ["provide_and_seek", "provide_only", "seek_only", "none"])
def test_good_player_success_rate_by_mode(comm_mode: str) -> None:
    config = EinsteinPuzzleConfig(comm_mode=comm_mode)
    with ScriptedLLMServer(good_script) as server:
        records = play(ENV, config, {"player_0": llm(server), "player_1": "planner"}, episodes=50, seed=3,
                       concurrency=8)  # fmt: skip
    rate = sum(r.success for r in records) / len(records)
    assert rate >= (0.5 if comm_mode == "none" else 0.9), rate


# ---------------------------------------------------------------------------
# Found by attacking it
# ---------------------------------------------------------------------------
def verified_games(server: ScriptedLLMServer, episodes: int = 2, **params: Any) -> list[Any]:
    spec = llm(server, **params)
    return play(ENV, PAPER, {"player_0": spec, "player_1": "planner"}, episodes=episodes, seed=0)


def test_a_huge_number_or_a_lookalike_character_is_a_grammar_error_not_a_crash() -> None:
    with ScriptedLLMServer([Reply("ask " + "9" * 5000), Reply("pass")]) as server:
        records = play(ENV, PAPER, {"player_0": llm(server), "player_1": "planner"}, episodes=1, seed=0)
    assert records and "not an action" in records[0].infos["player_0"]["invalid_replies"][0]
    for text in ("move \uff13 from common to top_left", "as\u212a 2", "share\xa01"):
        with pytest.raises(GrammarError, match="outside ASCII"):
            read_action(text, 4)


def test_separate_samples_differ_in_their_seed() -> None:
    with ScriptedLLMServer(good_script, n_supported=False) as server:
        verified_games(server, episodes=1, verifier="reasoning", k=3, seed=7, temperature=0.8)
        singles = [r for r in server.requests if r.get("n", 1) == 1]
    seeds = {r["seed"] for r in singles}
    assert {7, 8, 9} <= seeds  # sample i is asked with seed 7 + i


def test_an_endpoint_answering_422_to_n_gets_k_requests() -> None:
    def script(request: dict[str, Any], n: int) -> Reply:
        if request.get("n", 1) > 1:
            return Reply(status=422, body={"error": {"message": "n > 1 is not supported"}})
        return good_script(request, n)

    with ScriptedLLMServer(script) as server:
        records = verified_games(server, verifier="reasoning", k=2)
        asked_n = [r for r in server.requests if r.get("n", 1) > 1]
    assert all(r.success for r in records) and len(asked_n) == 1  # rejected once, then never asked again


def test_more_choices_than_asked_keep_the_first_k_and_n_stays_in_use() -> None:
    def script(request: dict[str, Any], n: int) -> Reply:
        reply = good_script(request, n)
        return Reply(reply.content, choices=[reply.content or "pass"] * (request.get("n", 1) + 2))

    with ScriptedLLMServer(script) as server:
        verified_games(server, episodes=1, verifier="reasoning", k=2)
        assert all(r.get("n", 1) == 2 for r in server.requests)  # no fallback to single requests


def test_verifier_none_is_the_verified_player() -> None:
    policy = make_policy("llm:model=fake,base_url=http://127.0.0.1:9/v1,verifier=none", "player_0", ENV)
    assert type(policy).__name__ == "VerifiedLLMPlayer" and policy.k == 4


def test_the_view_plays_with_a_verified_llm_partner() -> None:
    import gymnasium

    with ScriptedLLMServer(good_script) as server:
        view = gymnasium.make("eq_env/EinsteinPuzzle-v0", partner=llm(server, verifier="reasoning", k=2),
                              seat="player_1").unwrapped  # fmt: skip
        view.reset(seed=0)
        assert view.game.turn >= 1  # the partner (bottom seat) moved first
