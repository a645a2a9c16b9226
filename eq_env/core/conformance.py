"""The conformance battery every registered game passes: PettingZoo's own tests and the core's contract.

Each check takes a game (an :class:`~eq_env.core.spec.EnvSpec`, its id or name)
and environment keywords (one of ``EnvSpec.conformance``); the test suite runs
every check over every registered game and configuration, so a game is tested
the day it is registered. A game outside this package runs them the same way::

    from eq_env.core import conformance
    for name, kwargs in spec.conformance.items():
        for check in conformance.CHECKS:
            check(spec, kwargs)

The checks: PettingZoo's ``api_test``, ``parallel_api_test``, ``seed_test`` and
``parallel_seed_test``; a pickle and a deepcopy that play on exactly as the
original; ``render`` in ``"ansi"`` mode; an action outside the space refused
with an error, not played; the episode-jump contract the runner relies on
(``reset(seed=s, options={"episode": i})`` is the ``i``-th episode of seed
``s``); and the agents the spec declares being the environment's.
"""

from __future__ import annotations

import copy
import pickle
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence

from eq_env.core.spec import EnvSpec, env_spec

__all__ = [
    "CHECKS",
    "check_agents",
    "check_api",
    "check_bad_actions",
    "check_copies",
    "check_episode_jump",
    "check_parallel_api",
    "check_render",
    "check_seeds",
]


def _pettingzoo_test() -> Any:
    with warnings.catch_warnings():  # pettingzoo.test imports a classic environment that warns on import
        warnings.simplefilter("ignore")
        import pettingzoo.test

    return pettingzoo.test


def _aec(game: EnvSpec, kwargs: Mapping[str, Any]) -> Any:
    return game.module().env(**kwargs)


def check_api(env: Any, kwargs: Mapping[str, Any], num_cycles: int = 300) -> None:
    """PettingZoo's ``api_test`` on the AEC environment."""
    _pettingzoo_test().api_test(_aec(env_spec(env), kwargs), num_cycles=num_cycles)


def check_parallel_api(env: Any, kwargs: Mapping[str, Any], num_cycles: int = 300) -> None:
    """PettingZoo's ``parallel_api_test`` on the parallel environment."""
    _pettingzoo_test().parallel_api_test(env_spec(env).module().parallel_env(**kwargs), num_cycles=num_cycles)


def check_seeds(env: Any, kwargs: Mapping[str, Any], num_cycles: int = 50) -> None:
    """PettingZoo's ``seed_test`` and ``parallel_seed_test``: a seed gives the same play."""
    game, test = env_spec(env), _pettingzoo_test()
    test.seed_test(lambda: game.module().env(**kwargs), num_cycles=num_cycles)
    test.parallel_seed_test(lambda: game.module().parallel_env(**kwargs), num_cycles=num_cycles)


def _random_trace(env: Any, seed: int, episodes: int) -> list[Any]:
    """Observations, rewards and infos of random legal play, for comparing two environments."""
    trace = []
    for agent in env.possible_agents:
        env.action_space(agent).seed(seed)
    for i in range(episodes):
        env.reset(seed=seed) if i == 0 else env.reset()
        for agent in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            trace.append((agent, obs, reward, term, trunc, info))
            mask = obs.get("action_mask") if isinstance(obs, Mapping) else None
            env.step(None if term or trunc else env.action_space(agent).sample(mask))
    return trace


def check_copies(env: Any, kwargs: Mapping[str, Any], episodes: int = 20) -> None:
    """A pickled and a deep-copied environment play exactly as the original, from a fresh one and from
    the middle of an episode."""
    game = env_spec(env)
    for clone in (lambda e: pickle.loads(pickle.dumps(e)), copy.deepcopy):
        original = _aec(game, kwargs)
        twin = clone(_aec(game, kwargs))
        assert data_equivalence(_random_trace(original, 3, episodes), _random_trace(twin, 3, episodes)), clone
        # mid-episode: the first agent has acted
        a, b = _aec(game, kwargs), None
        a.reset(seed=11)
        first = a.agent_selection
        space = a.action_space(first)
        space.seed(0)
        obs = a.observe(first)
        a.step(space.sample(obs.get("action_mask") if isinstance(obs, Mapping) else None))
        b = clone(a)
        assert b.agent_selection == a.agent_selection
        assert data_equivalence(a.observe(a.agent_selection), b.observe(b.agent_selection))


def check_render(env: Any, kwargs: Mapping[str, Any]) -> None:
    """``render_mode="ansi"`` renders text, before and after an episode's end."""
    game = env_spec(env)
    e = game.module().env(**{**kwargs, "render_mode": "ansi"})
    e.reset(seed=0)
    assert isinstance(e.render(), str)
    for agent in e.agent_iter():
        obs, _, term, trunc, _ = e.last()
        mask = obs.get("action_mask") if isinstance(obs, Mapping) else None
        e.step(None if term or trunc else e.action_space(agent).sample(mask))
    assert isinstance(e.render(), str) and e.render()


def _outside(space: spaces.Space[Any]) -> Any:
    """A value that is not in ``space`` (None when this check cannot make one for it)."""
    if isinstance(space, spaces.Discrete):
        return int(space.start + space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return np.asarray(space.nvec) + 1
    if isinstance(space, spaces.Box):
        return np.full(space.shape, np.inf, dtype=space.dtype)
    if isinstance(space, spaces.Dict):
        return {}
    return None


def check_bad_actions(env: Any, kwargs: Mapping[str, Any]) -> None:
    """An action outside its space is refused with an error (never played, never silently mended), and the
    environment is left as it was."""
    game = env_spec(env)
    e = game.module().raw_env(**kwargs)
    e.reset(seed=0)
    agent = e.agent_selection
    bad = _outside(e.action_space(agent))
    if bad is None:
        return
    before = e.observe(agent)
    try:
        e.step(bad)
    except (ValueError, TypeError, KeyError, IndexError, AssertionError):
        pass
    else:
        raise AssertionError(f"{game.name}: the action {bad!r} outside {e.action_space(agent)} was played")
    assert e.agent_selection == agent and data_equivalence(e.observe(agent), before)


def check_episode_jump(env: Any, kwargs: Mapping[str, Any], episodes: int = 5, seed: int = 7) -> None:
    """``reset(seed=s, options={"episode": i})`` starts the ``i``-th episode of seed ``s``: what the runner
    plays episodes out of order, concurrently and after a resume with."""
    game = env_spec(env)
    in_order = _aec(game, kwargs)
    for i in range(episodes):
        in_order.reset(seed=seed) if i == 0 else in_order.reset()
        jumped = _aec(game, kwargs)
        jumped.reset(seed=seed, options={"episode": i})
        for agent in in_order.possible_agents:
            assert data_equivalence(in_order.observe(agent), jumped.observe(agent)), (i, agent)
        state = getattr(in_order.unwrapped, "state", None)
        if callable(state):
            assert data_equivalence(state(), jumped.unwrapped.state()), i


def check_agents(env: Any, kwargs: Mapping[str, Any]) -> None:
    """The agents the spec declares are the environment's, in both APIs, and the ids are registered."""
    import pettingzoo

    game = env_spec(env)
    aec, par = _aec(game, kwargs), game.module().parallel_env(**kwargs)
    declared = [a for agents in game.agents(aec.unwrapped.config).values() for a in agents]
    assert sorted(declared) == sorted(aec.possible_agents) == sorted(par.possible_agents)
    assert game.id in pettingzoo.aec_registry and game.id in pettingzoo.parallel_registry


CHECKS: tuple[Callable[[Any, Mapping[str, Any]], None], ...] = (
    check_api,
    check_parallel_api,
    check_seeds,
    check_copies,
    check_render,
    check_bad_actions,
    check_episode_jump,
    check_agents,
)
