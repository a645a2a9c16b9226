"""A fuzz of every registered game's PettingZoo API (:func:`eq_env.core.conformance.fuzz_api`): malformed calls of
every kind on ``env()`` and ``parallel_env()`` — unknown agents, calls before ``reset`` and after the end, actions
of every wrong type and shape, bad seeds and options, the parallel step given a list or an unknown agent — each
working as documented or refused with a clear error naming what was wrong: no raw exception, no silent
acceptance, nothing changed by a refused call. The games come from the registry (the suite's toy game too), so a
game is fuzzed the day it is registered. Then the cases the hostile run found, by name, and the fuzz's own power:
planted API bugs are caught."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import toy_game
from gymnasium import spaces

from eq_env import belief_coordination_v0, einstein_puzzle_v0, exchange_audit_v0
from eq_env.core.conformance import EITHER, INVALID, VALID, _Fuzzer, action_verdict, fuzz_api
from eq_env.core.spec import registered_envs

FAST_CALLS = 300


def _first_configurations() -> list[Any]:
    return [pytest.param(spec.id, dict(next(iter(spec.conformance.values()))), id=spec.name)
            for spec in registered_envs()]  # fmt: skip


def _every_configuration() -> list[Any]:
    return [pytest.param(spec.id, dict(kwargs), i, id=f"{spec.name}-{name}")
            for spec in registered_envs() for i, (name, kwargs) in enumerate(spec.conformance.items())]  # fmt: skip


def _assert_clean(report: Any) -> None:
    assert not report.problems, report.summary() + "\n" + "\n".join(report.problems[:30])
    assert report.refused > report.calls // 3 and report.worked > report.calls // 10  # (it did call both kinds)


@pytest.mark.parametrize(("env_id", "kwargs"), _first_configurations())
def test_every_game_refuses_every_malformed_call_clearly(env_id: str, kwargs: dict[str, Any]) -> None:
    report = fuzz_api(env_id, kwargs, calls=FAST_CALLS, seed=0)
    assert report.calls == FAST_CALLS
    _assert_clean(report)


@pytest.mark.slow  # (a few seconds per configuration)
@pytest.mark.parametrize(("env_id", "kwargs", "seed"), _every_configuration())
def test_every_configuration_of_every_game_under_a_long_fuzz(env_id: str, kwargs: dict[str, Any], seed: int) -> None:
    _assert_clean(fuzz_api(env_id, kwargs, calls=2000, seed=1 + seed))


def test_the_same_seed_makes_the_same_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[list[str]] = []
    real = _Fuzzer.judge

    def spy(self: Any, snapshot: Any, env: Any, obs: Any, call: Any) -> None:
        made[-1].append(f"{snapshot.api}/{snapshot.phase}: {call.text}")
        real(self, snapshot, env, obs, call)

    monkeypatch.setattr(_Fuzzer, "judge", spy)
    for seed in (5, 5, 6):
        made.append([])
        fuzz_api("relay", calls=60, seed=seed)
    assert made[0] == made[1] != made[2] and len(made[0]) == 60


# -- the fuzz's oracle ------------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:.*Casting input x to numpy array")
def test_what_is_an_action_of_a_space() -> None:
    discrete, box = spaces.Discrete(5), spaces.Box(0.0, 1.0, (2,), np.float32)
    assert action_verdict(discrete, 3) == action_verdict(discrete, np.int64(4)) == VALID
    for bad in (5, -1, 1.0, "1", None, [1], 2**70, float("nan")):
        assert action_verdict(discrete, bad) == INVALID, bad
    assert action_verdict(discrete, True) == action_verdict(discrete, np.array(2)) == EITHER
    assert action_verdict(discrete, 2, mask=np.array([1, 1, 0, 1, 1])) == EITHER  # (illegal: the game decides)
    assert action_verdict(box, np.array([0.5, 0.5], np.float32)) == VALID
    assert action_verdict(box, [0.5, 0.5]) in (VALID, EITHER)
    for bad in ([0.5, np.nan], [0.5, 1.5], [0.5], [[0.5, 0.5]], ["0.5", "0.5"], [[1, 2], [3]], None):
        assert action_verdict(box, bad) == INVALID, bad
    d = spaces.Dict({"a": discrete, "b": box})
    assert action_verdict(d, {"a": 1, "b": np.zeros(2, np.float32)}) == VALID
    assert action_verdict(d, {"a": 1}) == action_verdict(d, {"a": 1, "b": [0, 0], "c": 0}) == INVALID
    assert action_verdict(d, {"a": 9, "b": np.zeros(2, np.float32)}) == INVALID


def test_the_fuzz_catches_planted_api_bugs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind of problem, planted in the toy game, is reported: a silent acceptance (any agent has spaces), a
    raw exception (a KeyError from the parallel step's lookup) and a refused reset that moved the seed."""
    monkeypatch.setattr(toy_game.raw_env, "observation_space", lambda self, agent: self._obs_space)
    silent = fuzz_api("relay", calls=300, seed=0)
    assert any("observation_space(" in line for line in silent.silent), silent.summary()
    monkeypatch.undo()

    def raw_step(self: Any, actions: dict[str, Any]) -> Any:
        aec = self._aec
        aec.step(actions[aec.agent_selection])  # (unchecked: a KeyError for a missing entry, a TypeError...)
        if any(aec.terminations.values()) or any(aec.truncations.values()):
            self.agents = []
        return ({a: aec.observe(a) for a in toy_game.AGENTS}, dict(aec.rewards), dict(aec.terminations),
                dict(aec.truncations), dict(aec.infos))  # fmt: skip

    monkeypatch.setattr(toy_game.parallel_env, "step", raw_step)
    raw = fuzz_api("relay", calls=300, seed=0)
    assert any("parallel/" in line and ("KeyError" in line or "TypeError" in line) for line in raw.raw), raw.summary()
    monkeypatch.undo()

    real_reset = toy_game.raw_env.reset

    def seed_first(self: Any, seed: Any = None, options: Any = None) -> None:
        if isinstance(seed, int) and seed >= 0:
            self._seed, self._episode = seed, -1  # (the seed taken before the options are checked)
        real_reset(self, seed, options)

    monkeypatch.setattr(toy_game.raw_env, "reset", seed_first)
    corrupted = fuzz_api("relay", calls=300, seed=0)
    assert corrupted.corrupted and all("reset(" in line for line in corrupted.corrupted), corrupted.summary()


# -- the hostile run's cases, by name -------------------------------------------------------------------------


@pytest.mark.parametrize("nobody", ["nobody", "executor_9", 0, None, ["executor_0"]])
def test_belief_names_an_unknown_agent(nobody: Any) -> None:
    for env in (belief_coordination_v0.env(), belief_coordination_v0.parallel_env()):
        for call in (env.observation_space, env.action_space):
            with pytest.raises(ValueError, match=rf"unknown agent {re.escape(repr(nobody))}; agents: executor_0"):
                call(nobody)
    aec = belief_coordination_v0.env()
    aec.reset(seed=0)
    with pytest.raises(ValueError, match="unknown agent"):
        aec.observe(nobody)


@pytest.mark.parametrize("make", [belief_coordination_v0.env, belief_coordination_v0.raw_env])
def test_belief_calls_before_reset_say_to_reset(make: Any) -> None:
    env = make()
    for call in (env.last, env.state, lambda: env.observe("executor_0")):
        with pytest.raises(RuntimeError, match=r"call reset\(\) before"):
            call()
    with pytest.raises(RuntimeError, match=r"call reset\(\) before state"):
        belief_coordination_v0.parallel_env().state()


def test_belief_parallel_step_takes_only_a_dict_of_its_agents() -> None:
    env = belief_coordination_v0.parallel_env(n_executors=2)
    env.reset(seed=0)
    for form in ([[0.5, 0.5], [0.5, 0.5]], [np.zeros(2), np.zeros(2)], "x"):
        with pytest.raises(ValueError, match=r"actions must be a dict agent -> action"):
            env.step(form)
    with pytest.raises(ValueError, match="executor_9"):
        env.step({"executor_0": [0.5, 0.5], "executor_1": [0.5, 0.5], "executor_9": [0.5, 0.5]})
    assert env.round == 0  # nothing was played


@pytest.mark.parametrize(("options", "named"), [({"n_executors": 9}, "n_executors is a game parameter"),
                                                ("x", "options must be a dict"), ([1], "options must be a dict"),
                                                ({"episode": -1}, r"options\['episode'\]")])  # fmt: skip
def test_belief_reset_refuses_options_it_does_not_take(options: Any, named: str) -> None:
    env = belief_coordination_v0.parallel_env()
    env.reset(seed=3)
    first, _ = env.reset(seed=3)
    with pytest.raises(ValueError, match=named):
        env.reset(seed=5, options=options)
    assert env.agents == ["executor_0", "executor_1", "executor_2", "coordinator"]  # still 4 agents
    again, _ = env.reset()  # the refused reset took nothing, not even its seed: episode 1 of seed 3 comes next
    env.reset(seed=3, options={"episode": 1})
    question = env.observe("coordinator")["question"]
    assert again["coordinator"]["question"] == question != first["coordinator"]["question"]


def test_einstein_parallel_step_refuses_an_unknown_agent() -> None:
    env = einstein_puzzle_v0.parallel_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="'player_9'"):
        env.step({"player_0": 0, "player_9": "junk"})
    with pytest.raises(ValueError, match="actions must be a dict"):
        env.step([0, 0])
    assert env.game is not None and env.game.turn == 0


def test_exchange_audit_refuses_an_episode_it_would_skip_to_for_ever() -> None:
    for make in (exchange_audit_v0.env, exchange_audit_v0.parallel_env):
        with pytest.raises(ValueError, match=r"options\['episode'\] must be a non-negative integer below 10,000,000"):
            make().reset(seed=0, options={"episode": 10**30})
    env = exchange_audit_v0.parallel_env()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="actions must be a dict"):
        env.step([np.zeros(2), np.zeros(2)])
    with pytest.raises(ValueError, match="'proposer_0x'"):
        env.step({"proposer_0": None, "proposer_0x": 0})


@pytest.mark.parametrize("schema", ["paper", "rich"])
def test_exchange_audit_names_a_ragged_claims_list(schema: str) -> None:
    env = exchange_audit_v0.env(claim_schema=schema)
    env.reset(seed=0)
    action = env.action_space("proposer_0").sample()
    action["claims"] = [[1, 2], [3]]
    with pytest.raises(ValueError, match=r"proposer_0 action\['claims'\] must be \d integers"):
        env.step(action)
    assert env.agent_selection == "proposer_0"  # nothing was played


def test_a_refused_reset_is_no_reset() -> None:
    env = einstein_puzzle_v0.env()
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before last"):
        env.last()
    with pytest.raises(AttributeError, match="before reset"):
        env.agents  # noqa: B018
