"""The offline stand-in (``python -m eq_env.agents.fake_server``): scripted models good, bad and hostile for
every LLM role of every game, on 127.0.0.1.

Every game × model plays real episodes through ``eq-env play`` with every LLM role of the game on the
stand-in; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from eq_env.agents.fake_server import ScriptedLLMServer
from eq_env.agents.fake_server import main as serve
from eq_env.agents.stand_in import MODELS, StandInScript, stand_in, stand_in_games
from eq_env.cli import main
from eq_env.core.policy import available_policies
from eq_env.core.spec import env_spec

ROOT = Path(__file__).resolve().parents[2]
GAMES = stand_in_games()
# each game's main metric, and the value the good model reaches where its script plays correctly
GOOD = {
    "exchange-audit": ("bad_approval_rate", 0.0),
    "exchange-audit-repeated": ("bad_approval_rate", 0.0),
    "einstein-puzzle": ("success_rate", 1.0),
    "belief-coordination": ("accuracy", 1.0),
}
HIGHER_IS_BETTER = {"bad_approval_rate": False, "success_rate": True, "accuracy": True}
WELFARE = {"exchange-audit": "welfare", "exchange-audit-repeated": "welfare"}  # (bad is worse in welfare there)


def test_every_llm_role_of_every_game_has_a_stand_in() -> None:
    """A game whose roles have an ``llm`` policy and no stand-in (or a stand-in for a role with none) fails here."""
    from eq_env.core.spec import registered_envs

    llm_roles = {
        spec.name: tuple(e.role for e in available_policies(env=spec.id) if e.name == "llm")
        for spec in registered_envs()
    }
    assert {game: roles for game, roles in llm_roles.items() if roles} == {g: stand_in(g).roles for g in GAMES}
    assert set(GOOD) == set(GAMES)


@pytest.fixture
def stand_in_server() -> Iterator[tuple[ScriptedLLMServer, StandInScript]]:
    """A fresh stand-in per test: the hostile model's "first time" is per server."""
    script = StandInScript()
    with ScriptedLLMServer(script, models=MODELS) as server:
        yield server, script


def play(game: str, model: str, url: str, records: Path, episodes: int = 4) -> tuple[int, dict, list[dict], str]:
    """``eq-env play`` with every LLM role of ``game`` on the stand-in's ``model``: (status, JSON summary,
    the episode records, stderr)."""
    roles = [arg for role in stand_in(game).roles for arg in (f"--{role}", "llm")]
    extra = ["--rounds", "3"] if game == "exchange-audit-repeated" else []
    argv = ["play", "--env", game, *roles, "--model", model, "--base-url", url, "--episodes", str(episodes)]
    argv += ["--json", "--records", str(records), *extra]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    return status, json.loads(out.getvalue()), lines, err.getvalue()


@pytest.mark.slow  # (whole commands: a second or so each)
@pytest.mark.parametrize("game", GAMES)
def test_every_model_plays_every_role_of_the_game_through_eq_env_play(
    game: str, stand_in_server: tuple[ScriptedLLMServer, StandInScript], tmp_path: Path
) -> None:
    server, script = stand_in_server
    runs = {m: play(game, m, server.url, tmp_path / f"{m}.jsonl") for m in MODELS}
    metric, reached = GOOD[game]
    for model, (status, summary, records, err) in runs.items():
        assert len(records) == 4, model  # every episode finished, played or failed
        llm = summary["llm"]
        failed = [r for r in records if "error" in r]
        assert llm["failed_episodes"] == len(failed), model  # the failures as the records count them
        assert status == (3 if failed else 0), (model, err[-500:])
        roles = stand_in(game).roles
        assert all(llm[role]["requests"] > 0 for role in roles), model  # every role asked the stand-in
        if model != "hostile":  # well formed: nothing re-asked, nothing fallen back, nothing failed
            assert not failed and all(llm[r]["fallbacks"] == llm[r]["reasks"] == llm[r]["retries"] == 0 for r in roles)
    good, bad = (runs[m][1]["metrics"] for m in ("good", "bad"))
    assert good[metric]["mean"] == reached
    key = WELFARE.get(game, metric)
    worse = (lambda b, g: b < g) if HIGHER_IS_BETTER.get(key, True) else (lambda b, g: b > g)
    assert worse(bad[key]["mean"], good[key]["mean"]), (key, bad[key], good[key])
    hostile = runs["hostile"][1]["llm"]
    assert sum(hostile[r]["retries"] for r in stand_in(game).roles) > 0  # (429s and 5xx, retried)
    # every role's prompts recognised as its own (the repeated game's rounds are one-shot prompts: answered as those)
    answered_as = next(g for g in GAMES if stand_in(g) is stand_in(game))
    assert {(role, m) for g, role, m in script.served if g == answered_as} == {
        (role, m) for role in stand_in(game).roles for m in MODELS
    }


@pytest.mark.slow  # (two whole commands)
def test_the_reasoning_verifier_wins_back_what_the_bad_model_loses_in_the_einstein_puzzle(
    stand_in_server: tuple[ScriptedLLMServer, StandInScript], tmp_path: Path
) -> None:
    """The README's offline comparison: the bad model in the bottom seat beside the planner, with and without
    the reasoning verifier."""
    server, _ = stand_in_server
    flags = ["play", "--env", "einstein-puzzle", "--model", "bad", "--base-url", server.url, "--episodes", "20"]
    results = {}
    for player in ("llm", "llm:verifier=reasoning,k=4"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main([*flags, "--json", "--player_0", player, "--temperature", "0.7"]) == 0
        results[player] = json.loads(out.getvalue())["metrics"]
    plain, verified = results["llm"], results["llm:verifier=reasoning,k=4"]
    assert verified["success_rate"]["mean"] > plain["success_rate"]["mean"]
    assert verified["verifier_interventions"]["mean"] > 0 == plain["verifier_interventions"]["mean"]


def request(model: str, messages: object) -> dict:
    return {"model": model, "messages": messages}


def einstein_prompt() -> list[dict[str, str]]:
    from eq_env.agents.einstein_puzzle.prompt import render_messages

    return render_messages("You are player_0. Communication: provide_and_seek.")


def test_a_model_not_served_is_404_naming_the_three() -> None:
    reply = StandInScript()(request("gpt-4.1", einstein_prompt()), 0)
    assert reply.status == 404
    assert "model 'gpt-4.1' is not served here; this stand-in serves good, bad, hostile" in str(reply.body)


@pytest.mark.parametrize("messages", [[{"role": "user", "content": "hello"}], "not a list", [None], [{"x": 1}]])
def test_a_prompt_of_no_served_role_is_400_naming_what_each_game_expects(messages: object) -> None:
    reply = StandInScript()(request("good", messages), 0)
    assert reply.status == 400
    message = reply.body["error"]["message"]  # type: ignore[index]
    assert message.startswith("not a prompt of any role served here; expected one of exchange-audit (proposer, ")
    assert all(f"{g} ({', '.join(stand_in(g).roles)}): " in message for g in GAMES)


def test_a_server_of_one_game_refuses_another_games_prompt() -> None:
    script = StandInScript(["exchange-audit"])
    reply = script(request("good", einstein_prompt()), 0)
    assert reply.status == 400 and "einstein" not in reply.body["error"]["message"]  # type: ignore[index]
    assert not script.served
    assert StandInScript(["einstein-puzzle"])._role(request("good", einstein_prompt())) == (
        "einstein-puzzle",
        "player_0",
    )


def test_an_unknown_game_names_the_games_with_a_stand_in() -> None:
    with pytest.raises(ValueError, match="no stand-in model for the game 'chess'; games with one: exchange-audit, "):
        stand_in("chess")
    assert env_spec(GAMES[0]).name == GAMES[0]


def test_a_port_in_use_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedLLMServer(StandInScript()) as busy:
        port = int(busy.url.rsplit(":", 1)[1].split("/")[0])
        assert serve(["--port", str(port)]) == 2
    err = capsys.readouterr().err
    prog = "python -m eq_env.agents.fake_server"
    assert err.strip() == f"{prog}: error: --port {port}: cannot listen on 127.0.0.1:{port} (Address already in use)"


@pytest.mark.slow  # (a process of its own, and a whole command against it)
def test_the_command_prints_its_url_serves_an_episode_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "eq_env.agents.fake_server", "--env", "einstein-puzzle"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = proc.stdout.readline().strip()  # type: ignore[union-attr]  # (the first line, once it listens)
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), url
        status, summary, _, _ = play("einstein-puzzle", "good", url, tmp_path / "r.jsonl", episodes=1)
        assert status == 0 and summary["metrics"]["success_rate"]["mean"] == 1.0
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Ctrl-C stops" in err
    assert "stopped; answered einstein-puzzle player_0 good: " in err
    assert "einstein-puzzle player_1 good: " in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("[]", "request body must be a JSON object, got an array"),
        ('"str"', "request body must be a JSON object, got a string"),
        ("3", "request body must be a JSON object, got a number"),
        ('{"model": "good"}', "'messages' must be an array of message objects, got none"),
        (
            '{"model": "good", "messages": {"role": "user"}}',
            "'messages' must be an array of message objects, got an object",
        ),
        (
            '{"model": "good", "messages": ["hi"]}',
            "'messages[0]' must be an object with 'role' and 'content', got a string",
        ),
        (
            '{"model": "good", "messages": [{"role": "user", "content": 5}]}',
            "'messages[0].content' must be a string, got a number",
        ),
        ('{"model": "good", "messages": [{"role": "user"}]}', "'messages[0].content' must be a string, got none"),
    ],
)
def test_a_body_of_the_wrong_shape_is_400_naming_what_was_expected(body: str, expected: str) -> None:
    with ScriptedLLMServer(StandInScript()) as server:  # (it dropped the connection on a body that is no object)
        host, _, port = server.url.removeprefix("http://").partition("/")[0].partition(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        connection.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        assert (response.status, json.loads(response.read())["error"]["message"]) == (400, expected)
        connection.close()
        assert server.requests == []  # (a request of no valid shape reaches no script)
