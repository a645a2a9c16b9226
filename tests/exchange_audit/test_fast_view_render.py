"""The exchange-audit views render on their fast path: under ``"ansi"`` and ``"rgb_array"`` they keep working
their episodes out in bulk and build the picture only when ``render()`` is called, by replaying the current
episode in an AEC environment of their own. Its frames and text equal those of the AEC path (the same view
against a partner the fast path does not know) at every point an episode can be rendered."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest

import eq_env
from eq_env.core.policy import make_policy
from eq_env.exchange_audit.views import ExchangeAuditProposerEnv, ExchangeAuditValidatorEnv

VIEW_IDS = [i for i in eq_env.GYM_IDS if "ExchangeAudit" in i and "Repeated" not in i]  # (the repeated: AEC only)


def _aec_partner(spec: str, role: str) -> Any:
    """``spec``'s policy under a class of its own: the view then plays it through the AEC environment."""
    policy = make_policy(spec, role)  # type: ignore[arg-type]
    policy.__class__ = type(f"Own{type(policy).__name__}", (type(policy),), {})
    return policy


def _same(a: Any, b: Any, where: str) -> None:
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b), where
    else:
        assert isinstance(a, str) and a == b, f"{where}: {a!r} != {b!r}"


def _proposer_action(rng: np.random.Generator) -> np.ndarray:
    a = np.array([rng.integers(n) for n in (2, 2, 2, 3, 3, 3, 3)])
    a[0] = 1 if rng.random() < 0.8 else 0  # mostly requests: the audit and the decision show
    return a


def _play(fast: Any, aec: Any, seed: int, episodes: int, action: Any) -> None:
    """Both views side by side; render both before the first reset, after resets and after steps (not every
    one: a render after a step whose reset was not rendered replays the whole episode), a reseed half way."""
    assert fast.fast and not aec.fast
    rng = np.random.default_rng(seed)
    _same(fast.render(), aec.render(), "before reset")
    fast.reset(seed=seed), aec.reset(seed=seed)
    for t in range(episodes):
        if t % 3:
            _same(fast.render(), aec.render(), f"episode {t} after reset")
        a = action(rng)
        fast.step(a), aec.step(a)
        if t % 4 != 1:
            _same(fast.render(), aec.render(), f"episode {t} after step")
            _same(fast.render(), aec.render(), f"episode {t} rendered again")
        if t == episodes // 2:
            fast.reset(seed=seed + 7), aec.reset(seed=seed + 7)
        else:
            fast.reset(), aec.reset()


PROPOSER_CASES = [
    ("rule", {}),
    ("rule", {"audit_intensities": [0.0, 0.5, 1.0], "B": 2}),
    ("approve", {"q": 0.6, "action_encoding": "discrete"}),
    ("block", {"preset": "paper_main_script", "regime": "action_only"}),
]
VALIDATOR_CASES = [
    ("honest", {}),
    ("strategic", {"skip_no_trade": False, "audit_intensities": [0.1, 0.5, 0.9]}),
    ("strategic:trigger=payoff", {"q": 0.3, "B": 1}),
    ("silent", {"skip_no_trade": False}),
]


def _modes(cases: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any], str]]:
    """Every case as text, the first two as pictures too (a frame is its text drawn: the cost is the drawing)."""
    return [(*case, "ansi") for case in cases] + [(*case, "rgb_array") for case in cases[:2]]


@pytest.mark.parametrize("validator, kwargs, render_mode", _modes(PROPOSER_CASES))
def test_the_proposer_view_renders_its_fast_path_as_the_aec_path(
    validator: str, kwargs: dict[str, Any], render_mode: str
) -> None:
    fast = ExchangeAuditProposerEnv(validator, render_mode=render_mode, **kwargs)
    aec = ExchangeAuditProposerEnv(_aec_partner(validator, "validator"), render_mode=render_mode, **kwargs)
    episodes = 40 if render_mode == "ansi" else 20  # (20: past the first block of 16 too)
    if kwargs.get("action_encoding") == "discrete":
        _play(fast, aec, 3, episodes, lambda rng: int(rng.integers(648)))
    else:
        _play(fast, aec, 3, episodes, _proposer_action)


@pytest.mark.parametrize("proposer, kwargs, render_mode", _modes(VALIDATOR_CASES))
def test_the_validator_view_renders_its_fast_path_as_the_aec_path(
    proposer: str, kwargs: dict[str, Any], render_mode: str
) -> None:
    # 40 episodes cross the first blocks (16, then 16 more): the proposer is replayed from within a block
    fast = ExchangeAuditValidatorEnv(proposer, render_mode=render_mode, **kwargs)
    aec = ExchangeAuditValidatorEnv(_aec_partner(proposer, "proposer"), render_mode=render_mode, **kwargs)
    _play(fast, aec, 5, 40 if render_mode == "ansi" else 20, lambda rng: int(rng.integers(2)))


@pytest.mark.parametrize(
    "cls, partner, role, action",
    [
        (ExchangeAuditProposerEnv, "rule", "validator", np.array([1, 0, 0, 1, 1, 1, 2])),
        (ExchangeAuditValidatorEnv, "honest", "proposer", 1),
    ],
)
def test_an_unseeded_run_renders_the_episodes_it_plays(cls: Any, partner: str, role: str, action: Any) -> None:
    """An unseeded run's stream drew its entropy once: its frames are those of a run seeded with it."""
    fast = cls(partner, render_mode="ansi")
    fast.reset()
    entropy = (fast._sources[0].draws if cls is ExchangeAuditProposerEnv else fast._episodes.streams[0]).entropy
    aec = cls(_aec_partner(partner, role), render_mode="ansi")
    aec.reset(seed=entropy)
    for t in range(20):
        _same(fast.render(), aec.render(), f"episode {t} after reset")
        fast.step(action), aec.step(action)
        _same(fast.render(), aec.render(), f"episode {t} after step")
        fast.reset(), aec.reset()


@pytest.mark.parametrize("view_id", VIEW_IDS)
@pytest.mark.parametrize("render_mode", ["rgb_array", "ansi"])
def test_a_rendering_view_takes_the_fast_path_and_builds_no_aec_environment_until_render(
    view_id: str, render_mode: str
) -> None:
    view = gymnasium.make(view_id, render_mode=render_mode)
    inner = view.unwrapped
    assert inner.fast  # type: ignore[attr-defined]
    view.reset(seed=0)
    for _ in range(5):
        view.step(view.action_space.sample())
        view.reset()
    assert inner._aec is None  # type: ignore[attr-defined]  # (the episodes were worked out in bulk)
    assert view.render() is not None and inner._aec is not None  # type: ignore[attr-defined]


def test_human_plays_through_the_aec_environment() -> None:
    """``"human"`` prints every step (the AEC environment's own render), so it drives the AEC environment."""
    assert not ExchangeAuditProposerEnv("rule", render_mode="human").fast
    assert not ExchangeAuditValidatorEnv("honest", render_mode="human").fast


@pytest.mark.slow  # (SB3's import: torch)
@pytest.mark.parametrize("view_id", VIEW_IDS)
def test_make_vec_env_takes_the_fast_path(view_id: str) -> None:
    """SB3's ``make_vec_env(id)`` asks for ``"rgb_array"``: its views keep the fast path and still render."""
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env(view_id, n_envs=2, seed=0)
    assert all(venv.get_attr("fast")) and venv.get_attr("render_mode") == ["rgb_array"] * 2
    venv.reset()
    venv.step(np.stack([venv.action_space.sample() for _ in range(2)]))
    assert venv.get_attr("_aec") == [None, None]
    assert all(isinstance(f, np.ndarray) and f.ndim == 3 for f in venv.get_images())
    venv.close()
