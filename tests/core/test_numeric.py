"""The games' numeric adapters (what RLlib trains on), without Ray: spaces, round trips, the CLI's refusal."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.test import api_test

from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.numeric import numeric_env as belief_env
from eq_env.core.numeric import NumericAECEnv
from eq_env.core.spec import env_spec
from eq_env.einstein_puzzle.numeric import numeric_env as einstein_env
from eq_env.exchange_audit.numeric import numeric_env as exchange_env

GAMES = {"exchange-audit": exchange_env, "einstein-puzzle": einstein_env, "belief-coordination": belief_env}


def _play(env: NumericAECEnv, seed: int, episodes: int) -> tuple[list[float], list[object]]:
    """Random numeric actions (legal ones where there is a mask); every observation checked against its space."""
    rng = np.random.default_rng(seed)
    returns: list[float] = []
    sent: list[object] = []
    env.reset(seed=seed)
    for _ in range(episodes):
        total = 0.0
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, _ = env.last()
            total += reward
            assert env.observation_space(agent).contains(obs), agent
            if terminated or truncated:
                env.step(None)
                continue
            space = env.action_space(agent)
            if isinstance(obs, dict):
                action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            else:
                action = space.sample() if not hasattr(space, "n") else int(rng.integers(space.n))
            sent.append(env.adapter.env_action(env.roles[agent], action, env.env.observe(agent)))
            env.step(action)
        returns.append(total)
        env.reset()
    return returns, sent


@pytest.mark.parametrize("name", GAMES)
def test_spaces_hold_every_observation_and_are_the_same_objects(name: str) -> None:
    env = GAMES[name]()
    _play(env, seed=0, episodes=3)
    for agent in env.possible_agents:
        assert env.observation_space(agent) is env.observation_space(agent)
        assert env.action_space(agent) is env.action_space(agent)


def test_exchange_audit_passes_pettingzoo_api_test() -> None:
    api_test(exchange_env(), num_cycles=20)


@pytest.mark.parametrize("name", GAMES)
def test_numeric_env_has_the_games_state_and_pettingzoos_key(name: str) -> None:
    """The adapter's environment has ``state()`` and ``state_space`` (the game's), and a masked observation's
    features under PettingZoo's ``"observation"`` (RLlib's ``"observations"`` is its adapter's, below)."""
    from eq_env.baselines.rllib import RLlibNumericEnv

    env = GAMES[name]()
    env.reset(seed=0)
    assert env.state_space.contains(env.state())
    rllib = RLlibNumericEnv(env.adapter, env.config)
    rllib.reset(seed=0)
    for agent in env.possible_agents:
        space, seen = env.observation_space(agent), env.observe(agent)
        if isinstance(space, spaces.Dict):
            assert set(space.spaces) == set(seen) == {"observation", "action_mask"}
            assert set(rllib.observation_space(agent).spaces) == {"observations", "action_mask"}
            assert rllib.observation_space(agent).contains(rllib.observe(agent))


@pytest.mark.parametrize("name", GAMES)
def test_numeric_actions_play_as_the_game_plays_their_translation(name: str) -> None:
    """The numeric environment and the raw one, given the translated actions, play the same episodes."""
    numeric = GAMES[name]()
    returns, sent = _play(numeric, seed=3, episodes=4)
    spec = env_spec(numeric.adapter.env)
    raw = spec.module().raw_env(config=numeric.config, **numeric.adapter.env_options)
    raw.reset(seed=3)
    replay = iter(sent)
    raw_returns = []
    for _ in range(4):
        total = 0.0
        for _agent in raw.agent_iter():
            _, reward, terminated, truncated, _ = raw.last()
            total += reward
            idle = numeric.adapter.idle is not None and numeric.adapter.idle(numeric.roles[_agent], raw.observe(_agent))
            raw.step(None if terminated or truncated or idle else next(replay))
        raw_returns.append(total)
        raw.reset()
    assert raw_returns == returns


def test_exchange_audit_validator_approval_outside_the_mask_goes_to_the_game() -> None:
    """A masked approval is sent as it is, so the game's convention for an illegal action applies (a masked
    module never sends one)."""
    env = exchange_env()
    env.reset(seed=0)
    obs = {"action_mask": np.array([1, 0], np.int8)}
    assert env.adapter.env_action("validator", 1, obs) == 1


def test_belief_coordination_agents_act_only_in_their_phase() -> None:
    """Executors choose grid points (one turn each per round), the coordinator commits (one turn), and every
    agent is paid the shared reward at the end; a Box configuration is refused."""
    config = BeliefCoordinationConfig(n_executors=3, rounds=2, action_space="grid")
    env = belief_env(config)
    assert env.action_space("executor_0").n == config.grid_size == 30
    assert env.action_space("coordinator").n == 3
    assert env.observation_space("coordinator").shape == (10,)
    env.reset(seed=1)
    acted, paid = [], {}
    for agent in env.agent_iter():
        _, reward, terminated, _, _ = env.last()
        if terminated:
            paid[agent] = reward
            env.step(None)
            continue
        acted.append(agent)
        env.step(7 if agent != "coordinator" else 2)
    assert acted == ["executor_0", "executor_1", "executor_2"] * 2 + ["coordinator"]
    assert set(paid) == set(env.possible_agents) and len(set(paid.values())) == 1
    assert env.env.unwrapped.committed == 2 and env.env.unwrapped.temperatures[0] == [config.grid_point(7)[0]] * 3
    with pytest.raises(ValueError, match="action_space='grid'"):
        belief_env(BeliefCoordinationConfig(action_space="box"))


@pytest.mark.slow  # (over a quarter of a second: the fast run stays under a minute)
def test_train_rllib_without_ray_says_which_extra_in_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from eq_env.baselines.rllib import rllib_missing

    if rllib_missing() is None:
        pytest.skip("RLlib is installed here: the refusal is for environments without it")
    for argv in (["train", "--backend", "rllib"], ["train", "--env", "einstein-puzzle"],
                 ["train", "--env", "belief-coordination", "--backend", "rllib"]):  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "eq_env.cli", *argv, "--out", str(tmp_path / "o")],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "pip install 'eq-env[rllib]'" in lines[0], done.stderr
        assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_ray_without_the_rllib_extra_is_told_to_install_it(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Plain `ray` ships the ray.rllib sources without RLlib's dependencies: finding ray.rllib is not enough."""
    from eq_env.baselines import rllib

    monkeypatch.setattr(rllib, "_installed", lambda module: module != "tree")  # (found on disk: test_executors.py)
    assert rllib.rllib_missing() == ("--backend rllib needs RLlib, which is not installed (no module 'tree'): "
                                     "pip install 'eq-env[rllib]'")  # fmt: skip


def test_rllib_policies_are_registered_for_every_role() -> None:
    from eq_env.core.policy import make_policy

    for env, role in (("exchange-audit", "proposer"), ("exchange-audit", "validator"), ("einstein-puzzle", "player_1"),
                      ("belief-coordination", "executor"), ("belief-coordination", "coordinator")):  # fmt: skip
        with pytest.raises(ValueError, match="not an RLlib training"):
            make_policy("rllib:path=/nonexistent", role, env)


def test_rllib_env_runners_play_disjoint_episode_streams() -> None:
    """RLlib resets environment i of runner w with seed + w + i: two runners would replay 31 of 32 streams. Each
    environment gets its own seed of training_seeds (runner 1 keeps RLlib's)."""
    from eq_env.baselines.rllib import _stream_seed, training_seeds

    seed, runners, envs = 5, 3, 4
    played = [_stream_seed(seed + w + i, seed=seed, worker=w, envs_per_runner=envs)
              for w in range(1, runners + 1) for i in range(envs)]  # fmt: skip
    assert sorted(played) == list(training_seeds(seed, runners, envs)) == list(range(6, 18))
    assert [_stream_seed(seed + 1 + i, seed=seed, worker=1, envs_per_runner=envs) for i in range(envs)] == [6, 7, 8, 9]
    assert [_stream_seed(seed + i, seed=seed, worker=0, envs_per_runner=envs) for i in range(envs)] == [5, 6, 7, 8]
    assert list(training_seeds(seed, 0, envs)) == [5, 6, 7, 8]


@pytest.mark.parametrize(("seed", "runners", "envs"), [(998, 1, 32), (0, 0, 1003), (0, 40, 32)])
def test_rllib_training_refuses_eval_seeds_it_trains_on(tmp_path, seed: int, runners: int, envs: int) -> None:  # type: ignore[no-untyped-def]
    """The held-out evaluation must not replay training episodes (a seed's stream is the same in both), refused in
    one line before anything starts, with or without RLlib."""
    from eq_env.baselines.rllib import train

    with pytest.raises(ValueError, match=r"^--eval-seeds 1000,1001,1002 would evaluate on training episodes") as err:
        train("exchange-audit", tmp_path / "o", seed=seed, env_runners=runners, envs_per_runner=envs)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "o").exists()


def test_rllib_refuses_more_env_runners_than_cpus_in_one_line() -> None:
    """RLlib would wait for ever for a runner no CPU is left for (measured: still waiting after 100 s)."""
    from eq_env.baselines.rllib import _check_cpus

    _check_cpus(2, 2.0)
    with pytest.raises(ValueError, match=r"^--env-runners 3 needs 3 CPUs \(one per runner\), the Ray cluster has 2"):
        _check_cpus(3, 2.0)


def test_rllib_policy_from_a_corrupt_training_is_refused_in_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A cut policy.json, or one without its checkpoint: one line naming the file, with or without RLlib."""
    import json

    from eq_env.core.policy import make_policy

    (tmp_path / "policy.json").write_text('{"env": "eq_env/einstein-puzzle-v0", "libr')
    with pytest.raises(ValueError, match=r"policy.json is not valid JSON .*: train again into") as err:
        make_policy(f"rllib:path={tmp_path}", "player_0", "einstein-puzzle")
    (tmp_path / "policy.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="is not an RLlib training"):
        make_policy(f"rllib:path={tmp_path}", "player_0", "einstein-puzzle")
    meta = {"env": "eq_env/einstein-puzzle-v0", "config": {}, "modules": {"player_0": "player"}, "library": "rllib"}
    (tmp_path / "policy.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"has no checkpoint of module 'player' \(.*rl_module/player is missing\)"):
        make_policy(f"rllib:path={tmp_path}", "player_0", "einstein-puzzle")
    assert "\n" not in str(err.value)


def test_exchange_audit_validator_sees_its_mask_so_it_learns_nothing_from_a_forced_block() -> None:
    """After a NO_TRADE the game ignores the validator's choice (only BLOCK is legal): the numeric validator sees
    the mask, so a masked module gives that block probability 1 instead of training on an ignored action."""
    from eq_env.exchange_audit.features import artifact_nvec

    env = exchange_env()
    assert set(env.observation_space("validator_0").spaces) == {"action_mask", "observation"}
    nvec = artifact_nvec()
    seen = set()
    env.reset(seed=0)
    for episode in range(4):
        trade = episode % 2  # choices[0]: 0 NO_TRADE, 1 REQUEST_APPROVAL
        for agent in env.agent_iter():
            obs, _, terminated, _, _ = env.last()
            if terminated:
                env.step(None)
                continue
            if agent == "proposer_0":
                env.step(np.array([trade] + [0] * (len(nvec) - 1)))
                continue
            assert env.observation_space(agent).contains(obs)
            seen.add((trade, tuple(obs["action_mask"].tolist())))
            env.step(0)
        env.reset()
    assert seen == {(0, (1, 0)), (1, (1, 1))}
