"""``eq-env einstein play``: a person in one seat, driven here by scripted lines."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from eq_env import einstein_puzzle_v0
from eq_env.core.policy import make_policy
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.grammar import GRAMMAR
from eq_env.einstein_puzzle.rules import ILLEGAL
from eq_env.einstein_puzzle.spaces import actions
from eq_env.studies.einstein_puzzle.human import Session, legal_texts, play_human

CONFIG = EinsteinPuzzleConfig(n=4)


class Person:
    """A scripted person: the given lines first, then the oracle's action for its seat, typed as text."""

    def __init__(self, env: Any, seat: str, lines: Iterable[str] = ()) -> None:
        self.env = env
        self.seat = seat
        self.lines = list(lines)
        self.oracle = make_policy("oracle", seat, "einstein-puzzle")
        self.oracle.reset(seed=0)
        self.turns_seen: list[int] = []  # the game's turn at each prompt

    def __call__(self, prompt: str) -> str:
        assert prompt == f"{self.seat}> "
        game = self.env.unwrapped.game
        self.turns_seen.append(game.turn)
        if self.lines:
            return self.lines.pop(0)
        index, _ = self.oracle.act_privileged(self.env.observe(self.seat), self.env)  # type: ignore[attr-defined]
        return actions(game.puzzle.n)[index].text()


def _session(seat: str = "player_0", partner: Any = "planner", lines: Iterable[str] = (), seed: int = 0,
             config: EinsteinPuzzleConfig = CONFIG, episodes: int = 1) -> tuple[Session, Person, str, Any]:  # fmt: skip
    env = einstein_puzzle_v0.env(config=config, render_mode="ansi")
    person = Person(env, seat, lines)
    out = io.StringIO()
    session = play_human(config, human=seat, partner=partner, seed=seed, episodes=episodes, input_fn=person,
                         out=out, env=env)  # fmt: skip
    return session, person, out.getvalue(), env


def _eof(prompt: str) -> str:
    raise EOFError


def test_a_scripted_person_wins_with_the_planner() -> None:
    session, person, text, env = _session()
    assert not session.quit
    [result] = session.results
    assert result.success and result.placed == 4 and result.steps == env.unwrapped.game.turn
    assert "Episode 1: solved" in text and f"success yes, steps {result.steps}, placed 4/4" in text
    assert "--- your observation ---" in text and "It is your turn." in text  # its text observation
    assert "move 0 from bottom_start to common" in text  # its legal actions, in the grammar
    assert "0/4 placed, turn 0/" in text and "last: turn 1, player_0" in text  # the board after each turn
    game = env.unwrapped.game
    assert [e.player for e in game.history][:2] == [0, 1]
    assert len(person.turns_seen) == sum(e.player == 0 for e in game.history)  # one prompt per own turn


def test_bad_lines_are_refused_with_a_reason_and_spend_no_turn() -> None:
    lines = ["dance", "move 9 from bottom_start to common", "move 0 from top_start to common", "answer 1 top_left",
             "help", "move 0 from bottom_start to bottom_start"]  # fmt: skip
    session, person, text, env = _session(lines=lines)
    assert session.results[0].success
    assert person.turns_seen[: len(lines) + 1] == [0] * (len(lines) + 1)  # all asked on the first turn
    assert "Not an action: 'dance' is not an action" in text
    assert "Not an action: 'move 9 from bottom_start to common': there is no object 9" in text
    assert "Not legal now: move 0 from top_start to common: " in text
    assert "Not legal now: answer 1 top_left: " in text
    assert f"Actions: {GRAMMAR}." in text  # help
    refusals = [line for line in text.splitlines() if line.startswith(("Not an action", "Not legal now"))]
    assert "Not legal now: move 0 from bottom_start to bottom_start: from and to are the same bin." in text
    assert len(refusals) == 5 and all(line.strip() for line in refusals)
    assert not [e for e in env.unwrapped.game.history if e.outcome == ILLEGAL]  # none was played


@pytest.mark.parametrize("how", ["eof", "quit"])
def test_eof_or_quit_ends_cleanly(how: str) -> None:
    out = io.StringIO()
    lines = iter(["pass", "QUIT"])
    reader: Callable[[str], str] = _eof if how == "eof" else (lambda prompt: next(lines))
    session = play_human(CONFIG, input_fn=reader, out=out)
    assert session.quit and session.results == []
    text = out.getvalue()
    assert "Quit: the game ended here, unfinished." in text and "No episode finished." in text
    assert ("(end of input)" in text) == (how == "eof")


def test_human_as_player_1_lets_the_partner_move_first() -> None:
    session, person, text, env = _session(seat="player_1", seed=2)
    assert session.results[0].success
    assert person.turns_seen[0] == 1  # first asked after the partner's turn
    game = env.unwrapped.game
    assert game.history[0].player == 0 and game.history[1].player == 1
    assert "You are player_1 (top row)" in text


class AsyncPlanner:
    """A waiting policy (as LLM policies are): the planner behind ``aact``."""

    role = "player_1"

    def __init__(self) -> None:
        self.inner = make_policy("planner", "player_1", "einstein-puzzle")
        self.calls = 0

    def reset(self, seed: int | None = None) -> None:
        self.inner.reset(seed)

    async def aact(self, observation: Any) -> tuple[int, dict[str, Any] | None]:
        self.calls += 1
        return int(self.inner.act(observation)), None


def test_privileged_and_async_partners() -> None:
    session, *_ = _session(partner="oracle")
    assert session.results[0].success
    partner = AsyncPlanner()
    session, *_ = _session(partner=partner)
    assert session.results[0].success and partner.calls > 0


def test_several_episodes_and_game_flags() -> None:
    config = EinsteinPuzzleConfig(n=5, comm_mode="seek_only")
    session, _, text, _ = _session(config=config, episodes=2)
    assert [r.episode for r in session.results] == [0, 1] and all(r.n == 5 for r in session.results)
    assert "5 objects, seek_only" in text and "2 of 2 finished episode(s) solved" in text


def test_legal_texts_follow_the_mask() -> None:
    env = einstein_puzzle_v0.env(config=CONFIG)
    env.reset(seed=0)
    texts = legal_texts(env.observe("player_0")["action_mask"], 4)
    assert "pass" in texts and all(not t.startswith("answer") for t in texts)


def test_cli_entry(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from eq_env.cli import main

    monkeypatch.setattr("sys.stdin", io.StringIO("ask 9\npass\n"))  # a refused line, a turn, then EOF
    status = main(["einstein", "play", "--n", "5", "--comm-mode", "seek_only", "--preset", "paper", "--seed", "1",
                   "--human", "player_1", "--partner", "random"])  # fmt: skip
    text = capsys.readouterr().out
    assert status == 0
    assert "5 objects, seek_only" in text and "You are player_1" in text
    assert "Not an action: 'ask 9': there is no object 9" in text
    assert "last: turn 2, player_1 (top): pass" in text
    assert "(end of input)" in text and "Quit" in text


def test_cli_refuses_a_bad_partner(capsys: pytest.CaptureFixture[str]) -> None:
    from eq_env.cli import main

    assert main(["einstein", "play", "--partner", "no-such-policy"]) == 2
    assert "no-such-policy" in capsys.readouterr().err
