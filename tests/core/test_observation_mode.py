"""The numeric observation mode of every game (``observation_mode="numeric"``, :mod:`eq_env.core.numeric`): the
agreed spaces, one legal no-op for an idle agent, infos of fixed numeric keys, and the same game as text mode."""

from __future__ import annotations

from typing import Any

import numpy as np
import pettingzoo
import pytest
from gymnasium import spaces

from eq_env.core.spec import env_spec

# (game, keywords): every game, in both APIs
GAMES = [
    ("exchange-audit", {}),
    ("exchange-audit-repeated", {"rounds": 3}),
    ("einstein-puzzle", {"max_steps": 12}),
    ("belief-coordination", {"action_space": "grid", "rounds": 2}),
]
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _numeric(name: str, kwargs: dict[str, Any], parallel: bool = False) -> Any:
    module = env_spec(name).module()
    return (module.parallel_env if parallel else module.env)(**kwargs, observation_mode="numeric")


def _legal(obs: dict[str, np.ndarray], rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(obs["action_mask"])))


@pytest.mark.parametrize(("name", "kwargs"), GAMES)
def test_numeric_spaces_are_the_agreed_ones_and_hold_every_observation(name: str, kwargs: dict[str, Any]) -> None:
    env = _numeric(name, kwargs)
    for agent in env.possible_agents:
        space, action = env.observation_space(agent), env.action_space(agent)
        assert set(space.spaces) == {"observation", "action_mask"} and isinstance(action, spaces.Discrete)
        features, mask = space["observation"], space["action_mask"]
        assert features.dtype == np.float32 and len(features.shape) == 1
        assert mask.dtype == np.int8 and mask.shape == (action.n,) and mask.low.min() == 0 and mask.high.max() == 1
    rng = np.random.default_rng(0)
    env.reset(seed=4)
    keys: dict[str, set[str]] = {}
    for agent in env.agent_iter(200):
        obs, _, terminated, truncated, info = env.last()
        assert env.observation_space(agent).contains(obs), agent
        assert all(isinstance(v, float) for v in info.values()), info
        keys.setdefault(agent, set(info))
        assert set(info) == keys[agent], (agent, info)  # the same keys every step
        if env.unwrapped.idle(agent) or terminated or truncated:
            assert obs["action_mask"].sum() == 1  # an agent with nothing to decide: exactly one legal no-op
        env.step(None if terminated or truncated else _legal(obs, rng))
    assert env.state_space.contains(env.state())


@pytest.mark.parametrize(("name", "kwargs"), GAMES)
def test_numeric_parallel_idle_agents_have_one_legal_no_op(name: str, kwargs: dict[str, Any]) -> None:
    env = _numeric(name, kwargs, parallel=True)
    rng = np.random.default_rng(1)
    observations, infos = env.reset(seed=2)
    one_legal = 0
    while env.agents:
        for agent, obs in observations.items():
            assert env.observation_space(agent).contains(obs) and obs["action_mask"].any()  # (never all zeros)
            if env.idle(agent):
                assert obs["action_mask"].sum() == 1
            one_legal += int(obs["action_mask"].sum() == 1)
        observations, _, _, _, infos = env.step({a: _legal(observations[a], rng) for a in env.agents})
        assert {frozenset(i) for i in infos.values()} <= {frozenset(env.numbers.info({}))}
    assert one_legal > 0  # (each game has turns in which an agent only waits: its no-op is its one legal action)
    assert env.state_space.contains(env.state())


def _text_play(env: Any, seed: int, choose: Any, episodes: int) -> list[Any]:
    trace = []
    for i in range(episodes):
        env.reset(seed=seed) if i == 0 else env.reset()
        for agent in env.agent_iter():
            _, reward, terminated, truncated, _ = env.last()
            trace.append((agent, reward, terminated, truncated))
            env.step(None if terminated or truncated else choose(env, agent))
    return trace


@pytest.mark.parametrize(("name", "kwargs"), GAMES)
def test_the_same_seed_plays_the_same_game_in_both_modes(name: str, kwargs: dict[str, Any]) -> None:
    """The numeric environment's actions, translated, played in the text environment: the same turns, rewards and
    ends, episode after episode of one seed; and the same state."""
    numeric, text = _numeric(name, kwargs), env_spec(name).module().env(**kwargs)
    rng, sent = np.random.default_rng(3), []

    def numeric_choice(env: Any, agent: str) -> int:
        action = _legal(env.observe(agent), rng)
        sent.append(env.unwrapped.numbers.env_action(agent, action, env.unwrapped.env.observe(agent)))
        return action

    played = _text_play(numeric, 5, numeric_choice, 3)
    replay = iter(sent)
    assert _text_play(text, 5, lambda env, agent: next(replay), 3) == played
    assert np.array_equal(numeric.state(), text.state())


def test_pettingzoo_make_takes_the_observation_mode() -> None:
    aec = pettingzoo.make("aec", "eq_env/einstein-puzzle-v0", observation_mode="numeric")
    par = pettingzoo.make("parallel", "eq_env/exchange-audit-v0", observation_mode="numeric")
    assert set(aec.observation_space("player_0").spaces) == set(par.observation_space("proposer_0").spaces)
    text = pettingzoo.make("aec", "eq_env/einstein-puzzle-v0")
    assert "text" in text.observation_space("player_0").spaces  # (the default: text mode, as before)


@pytest.mark.parametrize("make", ["env", "parallel_env", "raw_env"])
def test_an_unknown_observation_mode_is_refused_in_one_line(make: str) -> None:
    with pytest.raises(ValueError, match=r"^observation_mode must be 'text' or 'numeric', got 'numbers'$"):
        getattr(env_spec("exchange-audit").module(), make)(observation_mode="numbers")


def test_a_numeric_action_outside_its_space_is_refused_naming_the_agent() -> None:
    env = _numeric("exchange-audit", {})
    env.reset(seed=0)
    for bad in (648, -1, 1.0, True, "0"):
        with pytest.raises(ValueError, match=r"^proposer_0's action must be an integer in \[0, 648\)"):
            env.step(bad)
    assert env.agent_selection == "proposer_0"


@pytest.mark.parametrize(("name", "kwargs"), GAMES)
def test_text_mode_masks_are_never_all_zeros_in_the_parallel_api(name: str, kwargs: dict[str, Any]) -> None:
    """One convention in every game, text mode too: an agent with nothing to decide (waiting, or after the end) has
    one legal no-op, never a mask of zeros (TorchRL's samplers fail on one: "invalid multinomial distribution")."""
    env = env_spec(name).module().parallel_env(**kwargs)
    observations, _ = env.reset(seed=6)
    for agent in env.possible_agents:
        env.action_space(agent).seed(6)
    seen = 0
    while True:
        for obs in observations.values():
            if "action_mask" in obs:
                assert obs["action_mask"].any()
                seen += 1
        if not env.agents:
            break
        actions = {a: env.action_space(a).sample(observations[a].get("action_mask")) for a in env.agents}
        observations, *_ = env.step(actions)
    assert seen


def test_belief_coordination_numeric_mode_without_the_grid_is_refused_in_one_line() -> None:
    with pytest.raises(
        ValueError,
        match=r"^belief coordination's numeric adapter \(observation_mode='numeric', RLlib\) "
        r"needs action_space='grid' .*got 'box'$",
    ):
        _numeric("belief-coordination", {})
