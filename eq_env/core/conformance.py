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
``s``); the agents the spec declares being the environment's; and PettingZoo's mask-unaware utilities,
``average_total_reward`` over seeds 0–11 and ``state_test``.

:func:`fuzz_api` goes further: a seeded fuzz of malformed calls of every kind on
``env()`` and ``parallel_env()``, each of which must work as documented or be
refused with a clear error naming what was wrong (its report lists every raw
exception, silent acceptance and refused call that changed the environment)::

    report = conformance.fuzz_api(spec, kwargs, calls=300, seed=0)
    assert not report.problems, report.problems
"""

from __future__ import annotations

import copy
import pickle
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence

from eq_env.core.spec import EnvSpec, env_spec

__all__ = [
    "CHECKS",
    "EITHER",
    "INVALID",
    "VALID",
    "FuzzReport",
    "action_verdict",
    "check_agents",
    "check_api",
    "check_average_total_reward",
    "check_bad_actions",
    "check_copies",
    "check_episode_jump",
    "check_parallel_api",
    "check_render",
    "check_seeds",
    "check_state",
    "fuzz_api",
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
    """The agents the spec declares are the environment's, in both APIs, and the ids are registered (with
    PettingZoo 1.27's registry: earlier versions have none)."""
    import pettingzoo

    game = env_spec(env)
    aec, par = _aec(game, kwargs), game.module().parallel_env(**kwargs)
    declared = [a for agents in game.agents(aec.unwrapped.config).values() for a in agents]
    assert sorted(declared) == sorted(aec.possible_agents) == sorted(par.possible_agents)
    if hasattr(pettingzoo, "register"):
        assert game.id in pettingzoo.aec_registry and game.id in pettingzoo.parallel_registry


# -- PettingZoo's utilities, which know nothing of masks ----------------------------------------------------


def check_average_total_reward(
    env: Any, kwargs: Mapping[str, Any], seeds: Iterable[int] = range(12), episodes: int = 2, steps: int = 200
) -> None:
    """PettingZoo's ``average_total_reward`` plays ``episodes`` of each seed's stream to the end: it reads no
    observation (so no mask) and samples every action from the action space, which a game must take (an action
    its mask forbids included: PettingZoo classic's convention, or the game's own). Python's ``random``, which
    it draws from, is seeded per seed and restored afterwards."""
    import contextlib
    import io
    import random

    from pettingzoo.utils import average_total_reward

    game, state = env_spec(env), random.getstate()
    try:
        for seed in seeds:
            e = _aec(game, kwargs)
            random.seed(seed)
            e.reset(seed=seed)
            for agent in e.possible_agents:
                e.action_space(agent).seed(seed)
            with contextlib.redirect_stdout(io.StringIO()):  # (it prints its average)
                mean = average_total_reward(e, max_episodes=episodes, max_steps=steps)
            assert np.isfinite(mean), (game.name, seed, mean)
    finally:
        random.setstate(state)


def check_state(env: Any, kwargs: Mapping[str, Any], seeds: Iterable[int] = range(12), num_cycles: int = 10) -> None:
    """PettingZoo's ``state_test`` on each seed: ``state_space`` is a space, and ``state()`` lies in it after
    every step of mask-unaware play (AEC, actions sampled from the whole space, seeded) and after a parallel
    reset. (``state_test`` itself plays seed 0 only: its three parts are called here seed by seed.)"""
    import importlib

    _pettingzoo_test()
    pz = importlib.import_module("pettingzoo.test.state_test")  # (the module: the package's name is the function)
    game = env_spec(env)
    aec, par = _aec(game, kwargs), game.module().parallel_env(**kwargs)
    pz.test_state_space(aec)
    for seed in seeds:
        for agent in aec.possible_agents:
            aec.action_space(agent).seed(seed)
        pz.test_state(aec, num_cycles, seed=seed)
        pz.test_parallel_env(par, seed=seed)


CHECKS: tuple[Callable[[Any, Mapping[str, Any]], None], ...] = (
    check_api,
    check_parallel_api,
    check_seeds,
    check_copies,
    check_render,
    check_bad_actions,
    check_episode_jump,
    check_agents,
    check_average_total_reward,
    check_state,
)


# -- the API fuzz -------------------------------------------------------------------------------------
#
# Malformed calls of every kind on a game's PettingZoo API (AEC through its ``env()``, parallel through its
# ``parallel_env()``), each judged against what the API promises: a call that is valid works; a call that is
# not is refused with a clear error (a ValueError, or a RuntimeError for a call out of order) whose message
# names what was wrong (the agent, the option, the seed, the expected form, or "reset"); a refused call leaves
# the environment as it was. Anything else is a problem: a raw exception (KeyError, TypeError, AssertionError,
# AttributeError... or a clear type that names nothing), a silent acceptance, or a refused call that changed
# the environment.

VALID, INVALID, EITHER = "valid", "invalid", "either"  # what a call is, by the API's promises
_NOT_CLEAR = (RecursionError, NotImplementedError)  # (RuntimeErrors, but never an environment's refusal)


@dataclass
class FuzzReport:
    """What :func:`fuzz_api` saw: how many calls of each outcome, and a line for each problem.

    Attributes:
        calls: calls made; worked / refused: calls that returned / raised a clear error.
        raw: calls that raised anything else, or a clear type whose message names nothing of the call.
        silent: invalid calls that returned (accepted without a word).
        corrupted: refused calls after which the environment was not as before.
        valid_refused: valid calls refused (clearly): stricter than the API says.
    """

    game: str
    calls: int = 0
    worked: int = 0
    refused: int = 0
    raw: list[str] = field(default_factory=list)
    silent: list[str] = field(default_factory=list)
    corrupted: list[str] = field(default_factory=list)
    valid_refused: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return [*self.raw, *self.silent, *self.corrupted, *self.valid_refused]

    def summary(self) -> str:
        return (
            f"{self.game}: {self.calls} calls, {self.worked} worked, {self.refused} refused clearly; "
            f"{len(self.raw)} raw, {len(self.silent)} silent, {len(self.corrupted)} corrupted, "
            f"{len(self.valid_refused)} valid refused"
        )


@dataclass(frozen=True)
class _Call:
    """One call: what it does to an environment (returning what the call returns), what it is, and the words
    (any one, case-insensitive) that a refusal must name."""

    text: str
    run: Callable[[Any], Any]
    verdict: str
    names: tuple[str, ...] = ()
    reads: bool = False  # (a call that works changes nothing: the environment is used again as it is)


def _short(value: Any) -> str:
    import reprlib

    r = reprlib.Repr()
    r.maxstring, r.maxother, r.maxlist = 40, 40, 4
    return r.repr(value)


def _is_clear(err: BaseException, names: Sequence[str]) -> bool:
    if not isinstance(err, (ValueError, RuntimeError)) or isinstance(err, _NOT_CLEAR):
        return False
    message = str(err).lower()
    return bool(message) and (not names or any(n.lower() in message for n in names if n))


# -- what is in a space -------------------------------------------------------------------------------


def _int_like(x: Any) -> int | None:
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, np.ndarray) and x.shape == () and x.dtype.kind in "iu":
        return int(x)
    return None


def action_verdict(space: spaces.Space[Any], x: Any, mask: Any = None) -> str:
    """Whether ``x`` is a ``VALID`` action of ``space`` (legal by ``mask`` too), an ``INVALID`` one (not of
    the space: every environment must refuse it), or ``EITHER`` (a bool for an integer, another dtype, an
    illegal action of the space: the game decides)."""
    if isinstance(space, spaces.Discrete):
        if isinstance(x, (bool, np.bool_)):
            return EITHER
        v = _int_like(x)
        if v is None and isinstance(x, np.ndarray) and x.shape == (1,) and x.dtype.kind in "iu":
            v = int(x[0])  # (an RL library's batch of one: a game may take it)
        if v is None:
            return INVALID
        if not space.start <= v < space.start + space.n:
            return INVALID
        if isinstance(x, np.ndarray) or (mask is not None and not np.asarray(mask)[v - space.start]):
            return EITHER
        return VALID
    if isinstance(space, (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)):
        try:
            arr = np.asarray(x)
        except Exception:  # (ragged lists and such: not an array at all)
            return INVALID
        if arr.dtype.kind == "b":
            return EITHER
        allowed = "iuf" if isinstance(space, spaces.Box) else "iu"
        if arr.dtype.kind not in allowed or arr.shape != space.shape:
            return INVALID
        if not np.isfinite(arr.astype(float)).all():
            return INVALID
        if isinstance(space, spaces.Box):
            inside = bool(np.all(arr >= space.low) and np.all(arr <= space.high))
        elif isinstance(space, spaces.MultiDiscrete):
            inside = bool(np.all(arr >= space.start) and np.all(arr < space.start + space.nvec))
        else:
            inside = bool(np.all((arr == 0) | (arr == 1)))
        if not inside:
            return INVALID
        return VALID if space.contains(x) else EITHER
    if isinstance(space, spaces.Dict):
        if not isinstance(x, Mapping) or set(x) != set(space.spaces):
            return INVALID
        return _combined(action_verdict(s, x[k]) for k, s in space.spaces.items())
    if isinstance(space, spaces.Tuple):
        if not isinstance(x, (tuple, list)) or len(x) != len(space.spaces):
            return INVALID
        return _combined(action_verdict(s, v) for s, v in zip(space.spaces, x, strict=True))
    if isinstance(space, spaces.Text):
        if not isinstance(x, str):
            return INVALID
        return VALID if space.contains(x) else EITHER
    return VALID if space.contains(x) else EITHER


def _combined(verdicts: Iterable[str]) -> str:
    seen = set(verdicts)
    return INVALID if INVALID in seen else EITHER if EITHER in seen else VALID


def _mask_of(obs: Any) -> Any:
    return obs.get("action_mask") if isinstance(obs, Mapping) else None


def _idle(obs: Any) -> bool:
    """The observation says its agent has nothing to decide (``"idle"``, or an action mask of zeros)."""
    if not isinstance(obs, Mapping):
        return False
    mask = obs.get("action_mask")
    return bool(obs.get("idle", 0)) or (mask is not None and not np.asarray(mask).any())


class _Junk:
    """Malformed values of every kind, for actions, agents, seeds and options."""

    COMMON: tuple[Any, ...] = (
        None,
        "0",
        "pass",
        "",
        b"\x00",
        0.5,
        1.0,
        -1,
        float("nan"),
        float("inf"),
        -float("inf"),
        2**64,
        10**100,
        -(2**63),
        True,
        [0],
        [[0]],
        [[0.5, 0.5]],
        (0,),
        {},
        {"a": 1},
        set(),
        np.array([]),
        np.zeros((2, 2)),
        np.array(["a"]),
        np.array([0.5, np.nan]),
        np.float32(0.0),
        np.int64(-1),
        complex(1, 1),
        [0.5, 0.5],
        np.array([0.5, 0.5], dtype=object),
        [[1, 2], [3]],
        "\x00" * 3,
        "ｐａｓｓ",
    )

    def __init__(self, rng: Any) -> None:
        self.rng = rng

    def pick(self, values: Sequence[Any]) -> Any:
        return values[self.rng.randrange(len(values))]

    def action(self, space: spaces.Space[Any], valid: Any) -> Any:
        """A value for an action of ``space``: junk of any kind, the edges of the space, or ``valid`` broken."""
        kind = self.rng.randrange(4)
        if kind == 0:
            return self.pick(self.COMMON)
        if isinstance(space, spaces.Discrete):
            lo, hi = int(space.start), int(space.start + space.n)
            return self.pick(
                [
                    hi,
                    lo - 1,
                    np.int64(hi),
                    np.array(hi),
                    np.array([lo]),
                    float(lo),
                    np.uint64(2**64 - 1),
                    np.int8(-1),
                    str(lo),
                    lo,
                    np.int64(lo),
                    np.array(lo),
                    [lo],
                ]
            )
        if isinstance(space, (spaces.Box, spaces.MultiDiscrete)):
            base = np.asarray(valid)
            broken = base.astype(float)
            if broken.size:
                broken.flat[self.rng.randrange(broken.size)] = self.pick([np.nan, np.inf, -1e9, 1e9, -1.0, 2.5])
            high = space.high if isinstance(space, spaces.Box) else space.nvec
            return self.pick(
                [
                    broken,
                    base.tolist(),
                    np.append(base, 0),
                    base.reshape(-1, 1),
                    base.astype(str),
                    base[:0],
                    np.asarray(high) + 1,
                    [*base.tolist(), 0],
                    base.astype(np.float64),
                ]
            )
        if isinstance(space, spaces.Dict) and isinstance(valid, Mapping):
            keys = list(space.spaces)
            key = keys[self.rng.randrange(len(keys))]
            out = dict(valid)
            choice = self.rng.randrange(4)
            if choice == 0:
                del out[key]
            elif choice == 1:
                out[self.pick(["extra", "Action", key.upper(), 0])] = out[key]
            else:
                out[key] = self.action(space.spaces[key], valid[key])
            return out
        return self.pick(self.COMMON)

    def agents(self, possible: Sequence[str]) -> list[Any]:
        first = possible[0]
        return [
            f"{first}x",
            first.upper(),
            "",
            " " + first,
            None,
            0,
            -1,
            3.5,
            float("nan"),
            ["a"],
            {"a": 1},
            (first,),
            b"x",
            np.str_("nobody"),
            "agent_99",
            f"{first}\x00",
        ]

    SEEDS_BAD: tuple[Any, ...] = (
        -1,
        -(2**70),
        1.5,
        3.0,
        "3",
        b"3",
        True,
        False,
        np.bool_(True),
        float("nan"),
        float("inf"),
        [1],
        (1,),
        {},
        np.float64(2.0),
        np.array([1, 2]),
        complex(1, 0),
        "",
        np.int64(-3),
    )
    SEEDS_EITHER: tuple[Any, ...] = (2**70, np.uint64(2**64 - 1), np.int8(3), np.array(3), 2**31, 10**30)
    SEEDS_VALID: tuple[Any, ...] = (0, 7, 12345, np.int64(5), None)
    OPTIONS_NOT_DICT: tuple[Any, ...] = ("x", [1], 1, ("episode", 1), True, b"", [("episode", 1)], 0.5)
    EPISODES_BAD: tuple[Any, ...] = (-1, 1.5, "2", True, None, float("nan"), [1], 2.0, -(2**70), b"1", np.float32(1))
    EPISODES_EITHER: tuple[Any, ...] = (2**70, np.uint64(2**64 - 1), np.array(2), 10**30)


def _fingerprint(env: Any, api: str) -> bytes:
    """What a refused call must leave as it was: the agents, whose turn, observations, rewards and the state
    (each read as it can be: an error reading one is part of the fingerprint), pickled: equal bytes, equal
    values."""

    def read(what: Callable[[], Any]) -> Any:
        try:
            return what()
        except Exception as err:  # (before reset, say: the error itself is what must not change)
            return f"{type(err).__name__}: {err}"

    out = [read(lambda: list(env.agents))]
    if api == "aec":
        out.append(read(lambda: env.agent_selection))
        out.append(read(lambda: [env.observe(a) for a in env.agents]))
        out.append(read(lambda: [dict(env.rewards), dict(env.terminations), dict(env.truncations)]))
    out.append(read(env.state))
    return pickle.dumps(out)


@dataclass
class _Snapshot:
    """An environment in one phase (``new``: never reset; ``live``: an agent to act; ``dead``: the agent to
    step is done and owes ``step(None)``; ``over``: every agent is done), pickled; the live copy the calls
    use while it stays in that phase; and the first observations of the episode a plain ``reset()`` of the
    snapshot plays."""

    api: str
    phase: str
    blob: bytes
    live: tuple[Any, Any] | None = None
    pristine: bool = True  # (the live copy is the snapshot's state: no call has changed it)
    next_episode: bytes | None = None


class _Fuzzer:
    """The calls of :func:`fuzz_api`: environments in every phase, malformed calls for each, the verdicts."""

    def __init__(self, game: EnvSpec, kwargs: Mapping[str, Any], seed: int) -> None:
        import random

        self.game, self.kwargs = game, dict(kwargs)
        self.rng = random.Random(seed)
        self.junk = _Junk(self.rng)
        self.report = FuzzReport(game.name)
        self.snapshots: list[_Snapshot] = []
        self.next_episode_checks = 0.3  # the share of refused resets after which the next episode is compared
        probe = self.make("aec")
        self.fields = list(type(probe.unwrapped.config).field_names())
        self.possible = list(probe.possible_agents)

    def make(self, api: str) -> Any:
        module = self.game.module()
        return module.env(**self.kwargs) if api == "aec" else module.parallel_env(**self.kwargs)

    # -- environments in every phase ------------------------------------------------------------------
    def _sample(self, env: Any, agent: str, obs: Any) -> Any:
        space = env.action_space(agent)
        mask = _mask_of(obs)
        if isinstance(space, spaces.Discrete) and mask is not None:
            return space.sample(np.asarray(mask, np.int8))
        return space.sample()

    @staticmethod
    def _aec_phase(env: Any) -> str:
        if not getattr(env, "_has_reset", True):
            return "new"
        if not env.agents:
            return "over"
        agent = env.agent_selection
        return "dead" if env.terminations[agent] or env.truncations[agent] else "live"

    def prepare(self) -> None:
        """Environments in every phase, for both APIs: fresh; reset and 0, 1, 2, 5 random legal steps into an
        episode; played to the end (an agent dead, then every agent out)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for api in ("aec", "parallel"):
                self._keep(api, "new", self.make(api), None)
                for steps in (0, 1, 2, 5, 10**6):
                    self._prepare(api, steps, steps)

    def _keep(self, api: str, phase: str, env: Any, obs: Any) -> None:
        self.snapshots.append(_Snapshot(api, phase, pickle.dumps((env, obs))))

    def _prepare(self, api: str, seed: int, steps: int) -> None:
        env = self.make(api)
        for a in env.possible_agents:
            env.action_space(a).seed(seed)
        if api == "aec":
            env.reset(seed=seed)
            for _ in range(steps):
                if self._aec_phase(env) != "live":
                    break
                agent = env.agent_selection
                env.step(self._sample(env, agent, env.observe(agent)))
            phase = self._aec_phase(env)
            self._keep(api, phase, env, None)
            if phase == "dead":  # play it out: every agent's step(None)
                while env.agents:
                    agent = env.agent_selection
                    dead = env.terminations[agent] or env.truncations[agent]
                    env.step(None if dead else self._sample(env, agent, env.observe(agent)))
                self._keep(api, "over", env, None)
            return
        obs, _ = env.reset(seed=seed)
        for _ in range(steps):
            if not env.agents:
                break
            obs, *_ = env.step({a: self._sample(env, a, obs[a]) for a in env.agents})
        self._keep(api, "live" if env.agents else "over", env, obs)

    # -- the calls, by kind: each draws its values and says what the call is -----------------------------
    def _bad_agent(self) -> Any:
        return self.junk.pick(self.junk.agents(self.possible))

    def space_of_unknown_agent(self, env: Any, obs: Any) -> _Call:
        bad, which = self._bad_agent(), self.junk.pick(("observation_space", "action_space"))
        return _Call(f"{which}({_short(bad)})", lambda e: getattr(e, which)(bad), INVALID, (_short(bad),), True)

    def space_of_an_agent(self, env: Any, obs: Any) -> _Call:
        good, which = self.junk.pick(self.possible), self.junk.pick(("observation_space", "action_space"))
        return _Call(f"{which}({good!r})", lambda e: getattr(e, which)(good), VALID, (), True)

    def render(self, env: Any, obs: Any) -> _Call:
        return _Call("render()", lambda e: e.render(), EITHER, (), True)

    def reset_bad_seed(self, env: Any, obs: Any) -> _Call:
        seed = self.junk.pick(self.junk.SEEDS_BAD)
        return _Call(f"reset(seed={_short(seed)})", lambda e: e.reset(seed=seed), INVALID, ("seed",))

    def reset_odd_seed(self, env: Any, obs: Any) -> _Call:
        seed = self.junk.pick((*self.junk.SEEDS_EITHER, *self.junk.SEEDS_VALID))
        verdict = VALID if seed in self.junk.SEEDS_VALID and not isinstance(seed, np.ndarray) else EITHER
        return _Call(f"reset(seed={_short(seed)})", lambda e: e.reset(seed=seed), verdict, ("seed",))

    def reset_options_not_a_dict(self, env: Any, obs: Any) -> _Call:
        options = self.junk.pick(self.junk.OPTIONS_NOT_DICT)
        return _Call(
            f"reset(options={_short(options)})", lambda e: e.reset(seed=0, options=options), INVALID, ("options",)
        )

    def reset_unknown_option(self, env: Any, obs: Any) -> _Call:
        key = self.junk.pick([*self.fields, "bogus", "Episode", "episode ", 1, None, "seed", "agents"])
        value = self.junk.pick([9, 0, 1.5, "x", None])
        return _Call(
            f"reset(options={{{key!r}: {value!r}}})",
            lambda e: e.reset(seed=0, options={key: value}),
            INVALID,
            (repr(key),),
        )

    def reset_bad_episode(self, env: Any, obs: Any) -> _Call:
        episode = self.junk.pick(self.junk.EPISODES_BAD)
        return _Call(
            f"reset(options={{'episode': {_short(episode)}}})",
            lambda e: e.reset(seed=0, options={"episode": episode}),
            INVALID,
            ("episode",),
        )

    def reset_odd_episode(self, env: Any, obs: Any) -> _Call:
        episode = self.junk.pick((*self.junk.EPISODES_EITHER, 0, 1, 4, np.int64(2)))
        verdict = EITHER if episode in self.junk.EPISODES_EITHER else VALID
        options = self.junk.pick(({"episode": episode}, {"episode": episode, "options": 1}))
        return _Call(
            f"reset(seed=3, options={_short(options)})",
            lambda e: e.reset(seed=3, options=options),
            verdict,
            ("episode",),
        )

    def reset_plain(self, env: Any, obs: Any) -> _Call:
        options = self.junk.pick((None, {}))
        return _Call(f"reset(seed=0, options={options!r})", lambda e: e.reset(seed=0, options=options), VALID)

    COMMON = (
        "space_of_unknown_agent",
        "space_of_unknown_agent",
        "space_of_an_agent",
        "render",
        "reset_bad_seed",
        "reset_bad_seed",
        "reset_odd_seed",
        "reset_options_not_a_dict",
        "reset_unknown_option",
        "reset_unknown_option",
        "reset_bad_episode",
        "reset_bad_episode",
        "reset_odd_episode",
        "reset_plain",
    )

    # the AEC API
    def observe_unknown_agent(self, env: Any, obs: Any) -> _Call:
        bad = self._bad_agent()
        return _Call(f"observe({_short(bad)})", lambda e: e.observe(bad), INVALID, (_short(bad), "reset"), True)

    def before_reset(self, env: Any, obs: Any) -> _Call:
        good, value = self.junk.pick(self.possible), self.junk.pick([0, None, *self.junk.COMMON])
        text, run = self.junk.pick(
            [
                (f"observe({good!r})", lambda e: e.observe(good)),
                ("last()", lambda e: e.last()),
                ("state()", lambda e: e.state()),
                (f"step({_short(value)})", lambda e: e.step(value)),
                ("agent_iter()", lambda e: next(iter(e.agent_iter()))),
            ]
        )
        return _Call(f"{text} before reset", run, INVALID, ("reset",))

    def reads(self, env: Any, obs: Any, verdict: str = VALID) -> _Call:
        good = self.junk.pick(self.possible)
        text, run = self.junk.pick(
            [
                (f"observe({good!r})", lambda e: e.observe(good)),
                ("last()", lambda e: e.last()),
                ("state()", lambda e: e.state()),
            ]
        )
        return _Call(text, run, verdict, ("reset", "over"), True)

    def reads_after_the_end(self, env: Any, obs: Any) -> _Call:
        return self.reads(env, obs, EITHER)

    def step_after_the_end(self, env: Any, obs: Any) -> _Call:
        value = self.junk.pick([0, None, *self.junk.COMMON])  # (PettingZoo's wrapper warns)
        return _Call(f"step({_short(value)}) after the end", lambda e: e.step(value), EITHER, ("reset",))

    def step_dead(self, env: Any, obs: Any) -> _Call:
        agent = env.agent_selection
        value = self.junk.pick([None, None, 0, *self.junk.COMMON[1:]])
        return _Call(
            f"step({_short(value)}) for the done {agent}",
            lambda e: e.step(value),
            VALID if value is None else INVALID,
            (agent, "None"),
        )

    def step_live(self, env: Any, obs: Any) -> _Call:
        agent = env.agent_selection
        seen = env.observe(agent)
        space, mask = env.action_space(agent), _mask_of(seen)
        valid = self._sample(env, agent, seen)
        value = self.junk.pick((valid, self.junk.action(space, valid), self.junk.action(space, valid)))
        verdict = EITHER if _idle(seen) else action_verdict(space, value, mask)
        return _Call(f"step({_short(value)}) for {agent}", lambda e: e.step(value), verdict, (agent,))

    AEC: ClassVar[dict[str, tuple[str, ...]]] = {
        "new": (*COMMON, "observe_unknown_agent", "before_reset", "before_reset", "before_reset"),
        "live": (*COMMON, "observe_unknown_agent", "reads", "step_live", "step_live", "step_live", "step_live"),
        "dead": (*COMMON, "observe_unknown_agent", "reads", "step_dead", "step_dead"),
        "over": (*COMMON, "observe_unknown_agent", "reads_after_the_end", "step_after_the_end"),
    }

    # the parallel API
    def parallel_out_of_episode(self, env: Any, obs: Any) -> _Call:
        actions = {a: 0 for a in self.possible}
        return _Call("step({...})", lambda e: e.step(actions), INVALID, ("reset",))

    def parallel_state(self, env: Any, obs: Any) -> _Call:
        return _Call(
            "state()", lambda e: e.state(), INVALID if env.agents == [] and obs is None else EITHER, ("reset",), True
        )

    def _acting(self, env: Any, obs: Any) -> tuple[list[str], set[str], bool]:
        """The agents in play, those that are idle, and whether that says who acts: the environment's own
        ``idle(agent)`` where it has one (an idle agent's one legal no-op does not tell it from an acting agent
        with one legal action), else what the observations say."""
        agents = list(env.agents)
        told = getattr(env, "idle", None)
        if callable(told):
            return agents, {a for a in agents if told(a)}, True
        idle = {a for a in agents if _idle(obs[a])}
        return agents, idle, bool(idle)

    def parallel_valid(self, env: Any, obs: Any) -> _Call:
        valid = {a: self._sample(env, a, obs[a]) for a in env.agents}
        return _Call("step(valid actions)", lambda e: e.step(valid), VALID)

    def parallel_not_a_dict(self, env: Any, obs: Any) -> _Call:
        agents = list(env.agents)
        valid = [self._sample(env, a, obs[a]) for a in agents]
        form = self.junk.pick(
            [
                valid,
                [[0.5, 0.5]] * len(agents),
                [np.zeros(2)] * len(agents),
                "x",
                None,
                5,
                list(zip(agents, valid, strict=True)),
                tuple(valid),
            ]
        )
        return _Call(f"step({_short(form)})", lambda e: e.step(form), INVALID, ("dict", "mapping"))

    def parallel_unknown_agent(self, env: Any, obs: Any) -> _Call:
        valid = {a: self._sample(env, a, obs[a]) for a in env.agents}
        key = self.junk.pick(
            [k for k in self.junk.agents(self.possible) if isinstance(k, (str, int, float, bytes)) or k is None]
        )
        actions = {**valid, key: self.junk.pick(["junk", 0, None, valid[env.agents[0]]])}
        return _Call(f"step({{...valid, {_short(key)}: ...}})", lambda e: e.step(actions), INVALID, (_short(key),))

    def parallel_one_broken(self, env: Any, obs: Any) -> _Call:
        agents, idle, known = self._acting(env, obs)
        valid = {a: self._sample(env, a, obs[a]) for a in agents}
        agent = self.junk.pick(agents)
        space = env.action_space(agent)
        value = self.junk.action(space, valid[agent])
        verdict = EITHER if agent in idle or not known else action_verdict(space, value, _mask_of(obs[agent]))
        actions = {**valid, agent: value}
        return _Call(f"step({{{agent}: {_short(value)}, ...valid}})", lambda e: e.step(actions), verdict, (agent,))

    def parallel_one_missing(self, env: Any, obs: Any) -> _Call:
        agents, idle, known = self._acting(env, obs)
        agent = self.junk.pick(agents)
        actions = {a: self._sample(env, a, obs[a]) for a in agents if a != agent}
        return _Call(
            f"step(valid actions without {agent})",
            lambda e: e.step(actions),
            EITHER if agent in idle or not known else INVALID,
            (agent,),
        )

    def parallel_all_broken(self, env: Any, obs: Any) -> _Call:
        agents, idle, _ = self._acting(env, obs)
        acting = [a for a in agents if a not in idle]
        value = self.junk.action(env.action_space(agents[0]), self._sample(env, agents[0], obs[agents[0]]))
        verdicts = [action_verdict(env.action_space(a), value, _mask_of(obs[a])) for a in acting]
        actions = dict.fromkeys(agents, value)
        invalid = bool(verdicts) and all(v == INVALID for v in verdicts)
        return _Call(
            f"step(every agent: {_short(value)})",
            lambda e: e.step(actions),
            INVALID if invalid else EITHER,
            tuple(acting),
        )

    def parallel_empty(self, env: Any, obs: Any) -> _Call:
        agents, idle, _ = self._acting(env, obs)
        acting = tuple(a for a in agents if a not in idle)
        return _Call("step({})", lambda e: e.step({}), INVALID if acting else EITHER, acting)

    PARALLEL: ClassVar[dict[str, tuple[str, ...]]] = {
        "new": (*COMMON, "parallel_out_of_episode", "parallel_state"),
        "live": (
            *COMMON,
            "parallel_valid",
            "parallel_not_a_dict",
            "parallel_unknown_agent",
            "parallel_one_broken",
            "parallel_one_broken",
            "parallel_one_missing",
            "parallel_all_broken",
            "parallel_empty",
        ),
        "over": (*COMMON, "parallel_out_of_episode", "parallel_state"),
    }

    # -- one call ---------------------------------------------------------------------------------------
    @staticmethod
    def _phase(api: str, env: Any, obs: Any) -> str:
        if api == "aec":
            return _Fuzzer._aec_phase(env)
        return "new" if obs is None else "live" if env.agents else "over"

    def one(self) -> None:
        """One call on one of the environments: the one the last calls left, while it is still in the phase of
        its snapshot (a valid step in a live episode leaves one live), else the snapshot again."""
        snapshot = self.snapshots[self.rng.randrange(len(self.snapshots))]
        if snapshot.live is not None and self._phase(snapshot.api, *snapshot.live) != snapshot.phase:
            snapshot.live = None
        if snapshot.live is None:
            snapshot.live, snapshot.pristine = pickle.loads(snapshot.blob), True
        env, obs = snapshot.live
        kinds = (self.AEC if snapshot.api == "aec" else self.PARALLEL)[snapshot.phase]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call = getattr(self, kinds[self.rng.randrange(len(kinds))])(env, obs)
            self.judge(snapshot, env, obs, call)

    def judge(self, snapshot: _Snapshot, env: Any, obs: Any, call: _Call) -> None:
        """Make the call, judge it, and keep the environment it leaves (and, in the parallel API, the
        observations it returned) for the next calls."""
        where = f"{self.game.name} {snapshot.api}/{snapshot.phase}: {call.text}"
        report = self.report
        report.calls += 1
        before = None if call.reads and call.verdict == VALID else _fingerprint(env, snapshot.api)
        check_next = (
            snapshot.phase != "new" and call.text.startswith("reset(") and self.rng.random() < self.next_episode_checks
        )
        twin = pickle.dumps(env) if check_next and not snapshot.pristine else None
        try:
            result = call.run(env)
        except Exception as err:  # (the point: every exception is judged)
            error: Exception | None = err
        else:
            error = None
        if error is None:
            report.worked += 1
            if call.verdict == INVALID:
                report.silent.append(where)
            if not call.reads:
                snapshot.pristine = False
                if snapshot.api == "parallel" and isinstance(result, tuple) and len(result) in (2, 5):
                    obs = result[0]  # (a step's or a reset's observations)
                snapshot.live = (env, obs)
            return
        if not _is_clear(error, call.names):
            report.raw.append(f"{where} -> {type(error).__name__}: {_short(str(error))}")
            snapshot.live = None  # (in whatever state the error left it: start again from the snapshot)
            return
        report.refused += 1
        if call.verdict == VALID:
            report.valid_refused.append(f"{where} -> {type(error).__name__}: {_short(str(error))}")
        same = before is None or before == _fingerprint(env, snapshot.api)
        if same and check_next:  # a refused reset must not have moved the seed or the episode either
            if twin is not None:
                expected = self._next_episode(pickle.loads(twin), snapshot.api)[0]
            else:
                if snapshot.next_episode is None:
                    snapshot.next_episode = self._next_episode(pickle.loads(snapshot.blob)[0], snapshot.api)[0]
                expected = snapshot.next_episode
            seen, obs = self._next_episode(env, snapshot.api)
            same = seen == expected
            snapshot.live, snapshot.pristine = (env, obs), False
        if not same:
            report.corrupted.append(f"{where} -> refused ({_short(str(error))}) but the environment changed")
            snapshot.live = None

    @staticmethod
    def _next_episode(env: Any, api: str) -> tuple[bytes, Any]:
        """The first observations of the episode a plain ``reset()`` plays (pickled), and the parallel API's."""
        if api == "aec":
            env.reset()
            return pickle.dumps([env.observe(a) for a in env.agents]), None
        obs = env.reset()[0]
        return pickle.dumps(obs), obs


def fuzz_api(env: Any, kwargs: Mapping[str, Any] | None = None, *, calls: int = 300, seed: int = 0) -> FuzzReport:
    """``calls`` malformed (and a few valid) calls on the game's AEC ``env()`` and its ``parallel_env()``, drawn
    with ``seed``: unknown agents (wrong names, None, numbers, unhashables) in ``observation_space``,
    ``action_space`` and ``observe``; every call before ``reset`` and after the end; actions of every wrong
    type and shape (NaN, huge ints, nested lists, strings, None, broken dicts, the space's edges); bad seeds
    and options (not a dict, unknown keys, game parameters, bad episodes); the parallel ``step`` given a list,
    an unknown agent, a missing or broken entry. Each is judged as the class comments above say; the report
    counts the outcomes and lists every problem. The same ``seed`` makes the same calls."""
    fuzzer = _Fuzzer(env_spec(env), kwargs or {}, seed)
    fuzzer.prepare()
    for _ in range(calls):
        fuzzer.one()
    return fuzzer.report


# -- Gymnasium and SB3 conventions ----------------------------------------------------------------------
#
# What the libraries around the environments take for granted: every render mode, frames of
# one shape, an unknown keyword refused as Python refuses one (TypeError), pickling, Gymnasium's and SB3's own
# wrappers and vectorisation on the single-agent views. CONVENTION_CHECKS take a game and a configuration, as
# CHECKS do; VIEW_CHECKS take a registered Gymnasium id (``eq_env.GYM_IDS``) and keywords for ``gymnasium.make``.


def _play_aec(env: Any, seed: int, on_step: Callable[[], None] | None = None) -> None:
    """One episode of random legal play (``on_step`` after every step)."""
    env.reset(seed=seed)
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else env.action_space(agent).sample(_mask_of(obs)))
        if on_step is not None:
            on_step()


def _frame(result: Any, where: str) -> tuple[int, ...]:
    assert isinstance(result, np.ndarray) and result.ndim == 3 and result.shape[2] == 3, (where, type(result))
    assert result.dtype == np.uint8, (where, result.dtype)
    return tuple(result.shape)


def check_render_modes(env: Any, kwargs: Mapping[str, Any]) -> None:
    """``"ansi"``, ``"human"`` and ``"rgb_array"`` are in the metadata and pass PettingZoo's ``render_test``; human
    mode prints and returns None; ``rgb_array`` frames have one shape all through episodes, in both APIs."""
    import contextlib
    import functools
    import io

    game = env_spec(env)
    module = game.module()
    modes = module.env(**kwargs).metadata.get("render_modes", [])
    assert {"ansi", "human", "rgb_array"} <= set(modes), f"{game.name}: render_modes {modes}"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        _pettingzoo_test().render_test(functools.partial(module.env, **kwargs))
        human = module.env(**{**kwargs, "render_mode": "human"})
        human.reset(seed=0)
        assert human.render() is None, f"{game.name}: render() in human mode returned something"
    assert printed.getvalue().strip(), f"{game.name}: render() in human mode printed nothing"
    aec = module.env(**{**kwargs, "render_mode": "rgb_array"})
    aec.reset(seed=0)
    shapes = {_frame(aec.render(), "after reset")}
    for seed in (0, 1):
        _play_aec(aec, seed, lambda: shapes.add(_frame(aec.render(), "after a step")))
    par = module.parallel_env(**{**kwargs, "render_mode": "rgb_array"})
    obs, _ = par.reset(seed=0)
    shapes.add(_frame(par.render(), "parallel, after reset"))
    while par.agents:
        actions = {a: par.action_space(a).sample(_mask_of(obs[a])) for a in par.agents}
        obs, *_ = par.step(actions)
        shapes.add(_frame(par.render(), "parallel, after a step"))
    assert len(shapes) == 1, f"{game.name}: rgb_array frames of several shapes {sorted(shapes)}"


def check_unknown_keyword(env: Any, kwargs: Mapping[str, Any]) -> None:
    """An unknown keyword is a ``TypeError`` (Python's convention) in both APIs; a bad value a ``ValueError``."""
    module = env_spec(env).module()
    for make in (module.env, module.parallel_env):
        try:
            make(**kwargs, frameskip=1)
        except TypeError as err:
            assert "frameskip" in str(err), err
        else:
            raise AssertionError(f"{make.__module__}.{make.__name__}(frameskip=1) was accepted")
        try:
            make(**{**kwargs, "render_mode": "bogus"})
        except TypeError as err:
            raise AssertionError(f"a bad render_mode raised a TypeError ({err}), not a ValueError") from None
        except ValueError:
            pass
        else:
            raise AssertionError(f"{make.__name__}(render_mode='bogus') was accepted")


def check_parallel_pickle(env: Any, kwargs: Mapping[str, Any]) -> None:
    """The parallel environment pickles mid-episode and the copy plays on as the original."""
    par = env_spec(env).module().parallel_env(**kwargs)
    obs, _ = par.reset(seed=5)
    for agent in par.possible_agents:
        par.action_space(agent).seed(1)
    first = {a: par.action_space(a).sample(_mask_of(obs[a])) for a in par.agents}
    twin = pickle.loads(pickle.dumps(par))
    assert data_equivalence(par.step(first), twin.step(first))


CONVENTION_CHECKS: tuple[Callable[[Any, Mapping[str, Any]], None], ...] = (
    check_render_modes,
    check_unknown_keyword,
    check_parallel_pickle,
)


def _view_actions(env: Any, steps: int, seed: int = 0) -> list[Any]:
    """A fixed list of actions of the view's space (legal by its mask where it has one, at each step)."""
    env.action_space.seed(seed)
    return [env.action_space.sample() for _ in range(steps)]


def _masked(env: Any, action: Any) -> Any:
    """``action``, or a legal one when the view masks it out (the Einstein view plays an illegal one as a lost
    turn, which these checks need not play)."""
    masks = getattr(env.unwrapped, "action_masks", None)
    if masks is None or not isinstance(env.action_space, spaces.Discrete):
        return action
    mask = np.asarray(masks(), dtype=np.int8)
    return action if mask[int(action)] else env.action_space.sample(mask)


def _view_trace(env: Any, seed: int, steps: int) -> list[Any]:
    """Observations, rewards, ends and infos of ``steps`` steps from ``reset(seed=seed)`` (resetting at the ends)."""
    import gymnasium

    env.action_space.seed(seed)
    obs, info = env.reset(seed=seed)
    trace: list[Any] = [(obs, info)]
    for _ in range(steps):
        out = env.step(_masked(env, env.action_space.sample()))
        trace.append(out)
        if out[2] or out[3]:
            trace.append(env.reset())
    assert isinstance(env, gymnasium.Env)
    return trace


def check_view_episode_statistics(view: str, kwargs: Mapping[str, Any] | None = None, steps: int = 40) -> None:
    """``"episode"`` is left to Gymnasium's ``RecordEpisodeStatistics`` (and SB3's ``Monitor``): the view's infos
    never hold it, and the wrapper records each finished episode's return and length."""
    import gymnasium

    env = gymnasium.wrappers.RecordEpisodeStatistics(gymnasium.make(view, **(kwargs or {})))
    env.reset(seed=0)
    env.action_space.seed(0)
    ended = 0
    for _ in range(steps):
        _, _, term, trunc, info = env.step(_masked(env, env.action_space.sample()))
        if term or trunc:
            ended += 1
            assert set(info["episode"]) == {"r", "l", "t"}, info["episode"]
            env.reset()
        else:
            assert "episode" not in info, f"{view}: the view's own info holds 'episode': {info}"
    raw = gymnasium.make(view, **(kwargs or {}))
    raw.reset(seed=0)
    for _ in range(steps):
        *_, term, trunc, info = raw.step(_masked(raw, raw.action_space.sample()))
        assert "episode" not in info, (
            f"{view}: info['episode'] is {info['episode']!r}; the game's index is 'episode_index'"
        )
        if term or trunc:
            raw.reset()
    assert ended, f"{view}: no episode ended in {steps} steps"


def check_view_render(view: str, kwargs: Mapping[str, Any] | None = None, steps: int = 12) -> None:
    """The view lists and plays ``"ansi"``, ``"human"`` (printing, returning None) and ``"rgb_array"`` (frames of one
    shape, as ``RecordVideo`` needs)."""
    import contextlib
    import io

    import gymnasium

    kwargs = dict(kwargs or {})
    env = gymnasium.make(view, **kwargs, render_mode="rgb_array")
    modes = env.metadata.get("render_modes", [])
    assert {"ansi", "human", "rgb_array"} <= set(modes), f"{view}: render_modes {modes}"
    env.reset(seed=0)
    shapes = {_frame(env.render(), "after reset")}
    for action in _view_actions(env, steps):
        *_, term, trunc, _ = env.step(_masked(env, action))
        shapes.add(_frame(env.render(), "after a step"))
        if term or trunc:
            env.reset()
            shapes.add(_frame(env.render(), "after reset"))
    assert len(shapes) == 1, f"{view}: rgb_array frames of several shapes {sorted(shapes)}"
    text = gymnasium.make(view, **kwargs, render_mode="ansi")
    text.reset(seed=0)
    assert isinstance(text.render(), str) and text.render()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        human = gymnasium.make(view, **kwargs, render_mode="human")
        human.reset(seed=0)
        assert human.render() is None, f"{view}: render() in human mode returned something"
    assert printed.getvalue().strip(), f"{view}: render() in human mode printed nothing"


def check_view_record_video(view: str, folder: Any, kwargs: Mapping[str, Any] | None = None, steps: int = 6) -> None:
    """``gymnasium.wrappers.RecordVideo`` records the view's frames into ``folder`` (it needs moviepy)."""
    import os

    import gymnasium

    env = gymnasium.wrappers.RecordVideo(
        gymnasium.make(view, **(kwargs or {}), render_mode="rgb_array"),
        str(folder),
        episode_trigger=lambda _: True,
        disable_logger=True,
    )
    env.reset(seed=0)
    for action in _view_actions(env, steps):
        *_, term, trunc, _ = env.step(_masked(env, action))
        if term or trunc:
            env.reset()
    env.close()
    videos = [name for name in os.listdir(folder) if name.endswith(".mp4")]
    assert videos, f"{view}: RecordVideo wrote no video into {folder}"


def check_view_unknown_keyword(view: str, kwargs: Mapping[str, Any] | None = None) -> None:
    """``gymnasium.make(view, frameskip=1)`` is a ``TypeError`` (TorchRL's ``GymEnv`` relies on it); a bad value of
    a known keyword stays a ``ValueError``."""
    import gymnasium

    try:
        gymnasium.make(view, **(kwargs or {}), frameskip=1)
    except TypeError as err:
        assert "frameskip" in str(err), err
    else:
        raise AssertionError(f"gymnasium.make({view!r}, frameskip=1) was accepted")
    try:
        gymnasium.make(view, **(kwargs or {}), render_mode="bogus")
    except TypeError as err:
        raise AssertionError(f"a bad render_mode raised a TypeError ({err}), not a ValueError") from None
    except ValueError:
        pass
    else:
        raise AssertionError(f"gymnasium.make({view!r}, render_mode='bogus') was accepted")


def check_view_misuse(view: str, kwargs: Mapping[str, Any] | None = None, steps: int = 1000) -> None:
    """A step the view cannot play says why, in the words every view uses: ``step() before reset()`` (the view
    itself, without Gymnasium's order wrapper), an action that is none of the space's a ``ValueError`` quoting it
    (``"bad"``, None: not ``int()``'s own error), and a step after the episode ended ``the episode is over: call
    reset()``."""
    import gymnasium

    env = gymnasium.make(view, **(kwargs or {}))
    try:
        env.unwrapped.step(env.action_space.sample())
    except RuntimeError as err:
        wanted = "step() before reset()"
        assert str(err) == wanted, f"{view}: step() before any reset() says {str(err)!r}, not {wanted!r}"
    else:
        raise AssertionError(f"{view}: step() before reset() was played")
    env.reset(seed=0)
    for action in ("bad", None):
        try:
            env.step(action)
        except ValueError as err:
            said = str(err)  # (int()'s own error quotes "bad" too, but names no action and no space)
            assert "action" in said and repr(action) in said, f"{view}: step({action!r}) is refused as {said!r}"
        else:
            raise AssertionError(f"{view}: step({action!r}) was played")
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(_masked(env, env.action_space.sample()))
        if terminated or truncated:
            break
    else:
        raise AssertionError(f"{view}: no episode end in {steps} steps")
    try:
        env.step(_masked(env, env.action_space.sample()))
    except RuntimeError as err:
        wanted = "the episode is over: call reset()"
        assert str(err) == wanted, f"{view}: step() after the episode's end says {str(err)!r}, not {wanted!r}"
    else:
        raise AssertionError(f"{view}: a step after the episode's end was played")
    env.close()


def check_view_pickle(view: str, kwargs: Mapping[str, Any] | None = None, steps: int = 20) -> None:
    """The view pickles, fresh and mid-run, and the copy plays on exactly as the original."""
    import gymnasium

    env = gymnasium.make(view, **(kwargs or {}))
    pickle.loads(pickle.dumps(env))
    env.reset(seed=3)
    env.step(_masked(env, env.action_space.sample()))
    twin = pickle.loads(pickle.dumps(env))
    a, b = _view_trace(env, 4, steps), _view_trace(twin, 4, steps)
    assert data_equivalence(a, b), f"{view}: a pickled copy plays otherwise"


def check_view_vector_wrappers(view: str, kwargs: Mapping[str, Any] | None = None, steps: int = 10) -> None:
    """Gymnasium's vector ``NormalizeObservation``, ``FlattenObservation`` and ``RecordEpisodeStatistics`` take the
    view in ``SyncVectorEnv`` (Gymnasium's default next-step autoreset)."""
    import functools

    import gymnasium
    from gymnasium.wrappers import vector as wrappers

    make = functools.partial(gymnasium.make, view, **(kwargs or {}))
    envs = wrappers.RecordEpisodeStatistics(
        wrappers.FlattenObservation(wrappers.NormalizeObservation(gymnasium.vector.SyncVectorEnv([make, make])))
    )
    obs, _ = envs.reset(seed=0)
    envs.action_space.seed(0)
    for _ in range(steps):
        obs, *_ = envs.step(envs.action_space.sample())
        assert obs.shape[0] == 2 and np.isfinite(obs).all()
    envs.close()


def check_view_async_spawn(view: str, kwargs: Mapping[str, Any] | None = None, steps: int = 4) -> None:
    """``gymnasium.vector.AsyncVectorEnv`` with the ``"spawn"`` context runs the view, step for step as
    ``SyncVectorEnv`` does. (A spawned worker starts without the parent's registrations: it is given the view's
    ``EnvSpec``, whose entry point imports the package; ``gymnasium.make("eq_env:<id>")`` does the same.)"""
    import functools

    import gymnasium

    make = functools.partial(gymnasium.make, gymnasium.spec(view), **(kwargs or {}))
    traces = []
    for vector in (
        gymnasium.vector.SyncVectorEnv([make, make]),
        gymnasium.vector.AsyncVectorEnv([make, make], context="spawn"),
    ):
        obs, _ = vector.reset(seed=0)
        trace = [obs]
        vector.action_space.seed(1)
        for _ in range(steps):
            obs, reward, *_ = vector.step(vector.action_space.sample())
            trace += [obs, reward]
        vector.close()
        traces.append(trace)
    assert data_equivalence(traces[0], traces[1]), f"{view}: AsyncVectorEnv (spawn) plays otherwise"


def check_view_make_vec_env(view: str, kwargs: Mapping[str, Any] | None = None, steps: int = 4) -> None:
    """SB3's ``make_vec_env(view, n_envs=2)`` builds and steps the view (SB3 asks for ``render_mode="rgb_array"``
    first: a picture, :mod:`eq_env.core.render`)."""
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env(view, n_envs=2, seed=0, env_kwargs=dict(kwargs or {}))
    venv.reset()
    for _ in range(steps):
        venv.step(np.stack([venv.action_space.sample() for _ in range(2)]))
    frames = venv.get_images()
    assert all(f is not None and _frame(f, "get_images") for f in frames)
    venv.close()


VIEW_CHECKS: tuple[Callable[..., None], ...] = (
    check_view_episode_statistics,
    check_view_render,
    check_view_unknown_keyword,
    check_view_misuse,
    check_view_pickle,
    check_view_vector_wrappers,
    check_view_make_vec_env,
)

__all__ += [  # (this section's)
    "CONVENTION_CHECKS",
    "VIEW_CHECKS",
    "check_parallel_pickle",
    "check_render_modes",
    "check_unknown_keyword",
    "check_view_async_spawn",
    "check_view_episode_statistics",
    "check_view_make_vec_env",
    "check_view_misuse",
    "check_view_pickle",
    "check_view_record_video",
    "check_view_render",
    "check_view_unknown_keyword",
    "check_view_vector_wrappers",
]
