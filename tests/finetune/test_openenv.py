"""Each game served over OpenEnv on 127.0.0.1 and played by its client (``eq_env.finetune.openenv``): the remote
player sees exactly the LLM player's prompt, its malformed replies are re-asked as the player re-asks them, and the
reward at the end is the game's own for the episode played — the same as the same replies give in-process."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest
from ft_support import need

need("openenv", "uvicorn")

import uvicorn  # noqa: E402

from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig  # noqa: E402
from eq_env.finetune.openenv import GameAction, GameClient, GameEnvironment, serve_app  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.finetune]

N4 = EinsteinPuzzleConfig(n=4, comm_mode="provide_and_seek")
# (game, the remote seat, the partner, the configuration, replies to cycle: a malformed one, then a legal one)
SERVED = {
    "einstein-puzzle": ("player_0", "planner", N4, ["not an action", "pass"]),
    "exchange-audit": ("proposer", "default", None, ["not an action", '{"action": "NO_TRADE"}']),
    "belief-coordination": ("coordinator", "default", None, ["not an action", "#### 12"]),
}


@contextlib.contextmanager
def _serving(game: str) -> Iterator[str]:
    """A server of ``game`` (its SERVED seat) on a free port of 127.0.0.1: its URL, until the block ends."""
    role, partner, config, _ = SERVED[game]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = serve_app(game, role, partner, config, max_reasks=1)
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    started = threading.Event()
    while not started.is_set() and thread.is_alive():  # until uvicorn says it listens (an event, not a clock)
        if srv.started:
            started.set()
        else:
            started.wait(0.01)
    assert srv.started, "the server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join()


@pytest.fixture(scope="module", params=sorted(SERVED))
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(game, URL): a server of each game."""
    with _serving(request.param) as url:
        yield request.param, url


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with _serving("einstein-puzzle") as url:
        yield url


def _play(client, replies: list[str], seed: int) -> tuple[list, float]:
    shown = []
    result = client.reset(seed=seed, episode=0)
    i = 0
    while not result.done:
        shown.append(result.observation.messages)
        result = client.step(GameAction(reply=replies[i % len(replies)]))
        i += 1
    return shown, float(result.reward)


def test_the_client_plays_a_whole_episode_and_gets_the_games_reward(served: tuple[str, str]) -> None:
    game, url = served
    role, partner, config, replies = SERVED[game]
    with GameClient(base_url=url).sync() as client:
        shown, reward = _play(client, replies, seed=3)
    assert len(shown) >= 2 and shown[0][-1]["role"] == "user"
    # the malformed reply was re-asked as the LLM player re-asks: quoted back, with the grammar's error
    assert shown[1][-2] == {"role": "assistant", "content": "not an action"}
    assert shown[1][-1]["content"].startswith("That reply is invalid")
    # the same replies, played in-process, give the same episode and reward
    env = GameEnvironment(game, role, partner, config, max_reasks=1)
    try:
        obs, i, here = env.reset(seed=3, episode=0), 0, []
        while not obs.done:
            here.append(obs.messages)
            obs = env.step(GameAction(reply=replies[i % 2]))
            i += 1
    finally:
        env.close()
    assert here == shown and float(obs.reward) == reward


def test_sessions_are_apart_and_an_episode_can_be_left_mid_way(server: str) -> None:
    with GameClient(base_url=server).sync() as a, GameClient(base_url=server).sync() as b:
        first = a.reset(seed=5, episode=0)
        a.step(GameAction(reply="pass"))
        other = b.reset(seed=6, episode=0)
        assert other.observation.decision == 1 and first.observation.messages != other.observation.messages
        again = a.reset(seed=5, episode=0)  # the unfinished episode is abandoned, the same one starts anew
        assert again.observation.messages == first.observation.messages
