"""One space for every agent of a numeric-mode game (:mod:`eq_env.core.padding`): :func:`pad_numeric` and
:func:`flatten_numeric`, for the AEC and the parallel API, on every game's numeric configuration."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.test import api_test, parallel_api_test

from eq_env import flatten_numeric, pad_numeric
from eq_env.core.spec import EnvSpec, registered_envs

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # (api_test's advice on Dict spaces and names)

# every game with a numeric configuration in its conformance battery (the toy game has none)
GAMES = [spec for spec in registered_envs(installed=False) if "numeric" in spec.conformance]


def _env(spec: EnvSpec, parallel: bool) -> Any:
    module = spec.module()
    return (module.parallel_env if parallel else module.env)(**spec.conformance["numeric"])


def _legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def test_every_game_has_a_numeric_configuration() -> None:
    assert {spec.name for spec in GAMES} >= {
        "exchange-audit",
        "exchange-audit-repeated",
        "einstein-puzzle",
        "belief-coordination",
    }


@pytest.mark.parametrize("parallel", [False, True], ids=["aec", "parallel"])
@pytest.mark.parametrize("spec", GAMES, ids=lambda s: s.name)
def test_one_space_for_every_agent_padded_from_the_largest(spec: EnvSpec, parallel: bool) -> None:
    game = _env(spec, parallel)
    own = {a: game.observation_space(a) for a in game.possible_agents}
    length = max(s["observation"].shape[0] for s in own.values())
    actions = max(int(game.action_space(a).n) for a in game.possible_agents)
    padded, flat = pad_numeric(_env(spec, parallel)), flatten_numeric(_env(spec, parallel))
    first = padded.possible_agents[0]
    for agent, space in own.items():
        assert padded.observation_space(agent) is padded.observation_space(first)
        assert padded.action_space(agent) == spaces.Discrete(actions)
        features, mask = padded.observation_space(agent)["observation"], padded.observation_space(agent)["action_mask"]
        assert features.shape == (length,) and features.dtype == np.float32
        assert mask.shape == (actions,) and mask.dtype == np.int8
        n = space["observation"].shape[0]
        assert (features.low[:n] <= space["observation"].low).all()  # the union of the agents' bounds
        assert (features.high[:n] >= space["observation"].high).all()
        assert (features.low[n:] <= 0).all() and (features.high[n:] >= 0).all()  # (the padding's zeros inside)
        box = flat.observation_space(agent)
        assert isinstance(box, spaces.Box) and box.shape == (length + actions,) and box.dtype == np.float32
        assert np.array_equal(box.low, np.concatenate([features.low, np.zeros(actions, np.float32)]))
        assert np.array_equal(box.high, np.concatenate([features.high, np.ones(actions, np.float32)]))
        assert flat.action_space(agent) == spaces.Discrete(actions)
    if len({s["action_mask"].shape for s in own.values()}) > 1:  # (the games whose roles differ: padding does pad)
        assert any(game.action_space(a).n < actions for a in game.possible_agents)


def _play_aec(env: Any, seed: int, own: Any, rng: np.random.Generator, steps: int = 300) -> list[Any]:
    """A trace of ``env`` (AEC) under legal actions of each agent's own mask (``own(obs)``: its part of ``obs``)."""
    env.reset(seed=seed)
    trace = []
    for agent in env.agent_iter(steps):
        obs, reward, terminated, truncated, info = env.last()
        features, mask = own(agent, obs)
        trace.append((agent, features.tolist(), mask.tolist(), reward, terminated, truncated, info))
        env.step(None if terminated or truncated else _legal(mask, rng))
    return [*trace, env.state().tolist()]


def _play_parallel(env: Any, seed: int, own: Any, rng: np.random.Generator) -> list[Any]:
    observations, infos = env.reset(seed=seed)
    trace: list[Any] = []
    while env.agents:
        seen = {a: own(a, o) for a, o in observations.items()}
        trace.append(({a: (f.tolist(), m.tolist()) for a, (f, m) in seen.items()}, infos))
        actions = {a: _legal(seen[a][1], rng) for a in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        trace.append((rewards, terminations, truncations))
    return [*trace, env.state().tolist()]


@pytest.mark.parametrize("parallel", [False, True], ids=["aec", "parallel"])
@pytest.mark.parametrize("spec", GAMES, ids=lambda s: s.name)
def test_the_same_seed_plays_the_same_game_as_the_unwrapped_env_with_zeros_padded(
    spec: EnvSpec, parallel: bool
) -> None:
    """The wrapped observation is the agent's own, then zeros (features) and zeros (mask: padded actions masked
    out); the flattened one is those two, concatenated. The same seed and actions: the same game, to the bit."""
    game = _env(spec, parallel)
    sizes = {
        a: (game.observation_space(a)["observation"].shape[0], int(game.action_space(a).n))
        for a in game.possible_agents
    }
    padded_env = pad_numeric(_env(spec, parallel))
    length = padded_env.observation_space(game.possible_agents[0])["observation"].shape[0]

    def unwrapped(agent: str, obs: Any) -> tuple[np.ndarray, np.ndarray]:
        return obs["observation"], obs["action_mask"]

    def padded(agent: str, obs: Any) -> tuple[np.ndarray, np.ndarray]:
        n, a = sizes[agent]
        assert padded_env.observation_space(agent).contains(obs)
        assert not obs["observation"][n:].any() and not obs["action_mask"][a:].any()
        return obs["observation"][:n], obs["action_mask"][:a]

    def flat(agent: str, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return padded(agent, {"observation": obs[:length], "action_mask": obs[length:].astype(np.int8)})

    play = _play_parallel if parallel else _play_aec
    expected = play(game, 7, unwrapped, np.random.default_rng(0))
    assert play(padded_env, 7, padded, np.random.default_rng(0)) == expected
    assert play(flatten_numeric(_env(spec, parallel)), 7, flat, np.random.default_rng(0)) == expected


@pytest.mark.parametrize("wrap", [pad_numeric, flatten_numeric])
@pytest.mark.parametrize("spec", GAMES, ids=lambda s: s.name)
def test_pettingzoo_api_tests_pass_on_the_wrapped_envs(spec: EnvSpec, wrap: Any) -> None:
    with contextlib.redirect_stdout(io.StringIO()):  # (the tests print their progress)
        api_test(wrap(_env(spec, parallel=False)), num_cycles=100)
        parallel_api_test(wrap(_env(spec, parallel=True)), num_cycles=100)


def _exchange_audit(parallel: bool) -> Any:
    spec = next(s for s in GAMES if s.name == "exchange-audit")
    return pad_numeric(_env(spec, parallel))


NO_TRADE, REQUEST = 0, 647  # the proposer's artifacts in C order: the first choice, 0 NO_TRADE, 1 REQUEST_APPROVAL


@pytest.mark.parametrize("parallel", [False, True], ids=["aec", "parallel"])
def test_a_padded_action_is_played_as_the_masked_action_the_game_punishes(parallel: bool) -> None:
    """The validator's padded action after a NO_TRADE (its mask [1, 0]) is its masked APPROVE: the game's illegal
    action (the episode ends, the validator rewarded -1, the info saying so); facing a request (nothing of its own
    masked) it is action 0, BLOCK, as SuperSuit's pad_action_space_v0 plays it."""
    outcomes = {}
    for proposal, validator in [(NO_TRADE, 5), (NO_TRADE, 1), (NO_TRADE, 0), (REQUEST, 5), (REQUEST, 0)]:
        env = _exchange_audit(parallel)
        if parallel:
            env.reset(seed=0)
            env.step({"proposer_0": proposal, "validator_0": 0})
            _, rewards, terminations, _, infos = env.step({"proposer_0": 0, "validator_0": validator})
        else:
            env.reset(seed=0)
            env.step(proposal)
            assert env.agent_selection == "validator_0"
            env.step(validator)
            rewards, terminations, infos = env.rewards, env.terminations, env.infos
        outcomes[proposal, validator] = (rewards, terminations, infos["validator_0"]["illegal_action"])
    assert outcomes[NO_TRADE, 5] == outcomes[NO_TRADE, 1] != outcomes[NO_TRADE, 0]
    assert outcomes[NO_TRADE, 5][0]["validator_0"] == -1.0 and outcomes[NO_TRADE, 5][2] == 1.0
    assert outcomes[REQUEST, 5] == outcomes[REQUEST, 0] and outcomes[REQUEST, 5][2] == 0.0


def test_a_padded_coordinator_action_is_played_as_action_0() -> None:
    """Belief coordination's coordinator (3 actions of its own, 30 padded) has no masked action: a padded one plays
    as its action 0, the same game as sending 0."""
    spec = next(s for s in GAMES if s.name == "belief-coordination")
    traces = []
    for sent in (0, 29):
        env = pad_numeric(_env(spec, parallel=True))
        observations, _ = env.reset(seed=3)
        trace = []
        while env.agents:
            actions = {a: (sent if a == "coordinator" else 4) for a in env.agents}
            observations, rewards, terminations, _, _ = env.step(actions)
            trace.append((rewards, terminations, {a: o["observation"].tolist() for a, o in observations.items()}))
        traces.append(trace)
    assert traces[0] == traces[1] and len(traces[0]) > 1


@pytest.mark.parametrize("parallel", [False, True], ids=["aec", "parallel"])
@pytest.mark.parametrize("action", [648, -1, 2.5, "approve"])
def test_an_action_outside_the_padded_space_is_refused_in_one_line_naming_the_agent(
    parallel: bool, action: Any
) -> None:
    env = _exchange_audit(parallel)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"^proposer_0's action must be an integer in \[0, 648\)") as err:
        env.step({"proposer_0": action, "validator_0": 0} if parallel else action)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("wrap", [pad_numeric, flatten_numeric])
def test_a_text_mode_env_or_a_non_env_is_refused_in_one_line(wrap: Any) -> None:
    import eq_env

    name, expected = wrap.__name__, r"numeric observation mode \(observation_mode='numeric'\)"
    with pytest.raises(ValueError, match=rf"^{name} needs a game's {expected}") as err:
        wrap(eq_env.exchange_audit_v0.env())
    assert "\n" not in str(err.value)
    with pytest.raises(TypeError, match=rf"^{name} takes a PettingZoo AECEnv or ParallelEnv, got list"):
        wrap([])


def test_padding_twice_pads_once() -> None:
    env = _exchange_audit(parallel=False)
    assert pad_numeric(env) is env
    assert flatten_numeric(env).env is env
