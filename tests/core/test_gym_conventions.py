"""Gymnasium and SB3 conventions: the conformance battery's convention checks over every registered
game and configuration, and its view checks over every registered Gymnasium view (``eq_env.GYM_IDS``), so that a
game, a configuration or a view is covered the day it is registered; then what the battery cannot say generically:
the renderer itself, the native vector environments' autoreset modes, SB3 training without ``Monitor``, and the
vector module without SB3."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import eq_env
from eq_env.core import conformance
from eq_env.core.render import frame_shape, rendered, text_frame
from eq_env.core.spec import registered_envs

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*is not a python integer.*"),
    pytest.mark.filterwarnings("ignore:.*render_mode.*"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

VIEWS = sorted(eq_env.GYM_IDS)


def _game_cases() -> list[Any]:
    # The fast run (-m "not slow") renders each game's first configuration in every mode and makes the cheap checks
    # on all of them; the render check of the others (whole episodes in three modes) runs in the full suite.
    return [
        pytest.param(
            spec.id,
            kwargs,
            check,
            id=f"{spec.name}-{name}-{check.__name__.removeprefix('check_')}",
            marks=[pytest.mark.slow] if i > 0 and check is conformance.check_render_modes else [],
        )
        for spec in registered_envs()
        for i, (name, kwargs) in enumerate(spec.conformance.items())
        for check in conformance.CONVENTION_CHECKS
    ]


@pytest.mark.parametrize("env_id, kwargs, check", _game_cases())
def test_game_conventions(env_id: str, kwargs: dict[str, Any], check: Any) -> None:
    check(env_id, kwargs)


# the cheap view checks in the fast run; make_vec_env builds SB3's machinery (a second each)
@pytest.mark.parametrize(
    "check",
    [
        pytest.param(c, marks=[pytest.mark.slow] if c is conformance.check_view_make_vec_env else [])
        for c in conformance.VIEW_CHECKS
    ],
    ids=lambda c: c.__name__.removeprefix("check_view_"),
)
@pytest.mark.parametrize("view", VIEWS)
def test_view_conventions(view: str, check: Any) -> None:
    check(view)


@pytest.mark.slow
@pytest.mark.parametrize("view", VIEWS)
def test_view_async_vector_env_with_spawn(view: str) -> None:
    conformance.check_view_async_spawn(view)


class _Clip:
    """moviepy's ``ImageSequenceClip`` as ``RecordVideo`` uses it: frames of one shape and dtype, written to a file."""

    def __init__(self, frames: list[np.ndarray], fps: int) -> None:
        assert len({(f.shape, f.dtype) for f in frames}) == 1, "moviepy takes frames of one shape"
        assert frames[0].dtype == np.uint8 and frames[0].ndim == 3 and fps > 0
        self.frames = frames

    def write_videofile(self, path: str, logger: Any = None) -> None:
        Path(path).write_bytes(np.stack(self.frames).tobytes())


@pytest.mark.parametrize("view", VIEWS)
def test_record_video_takes_every_view(view: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """RecordVideo's whole path, to the clip moviepy would encode. moviepy is not a dependency (Gymnasium's
    ``other`` extra): a stand-in with its one class takes the frames and checks what moviepy needs of them."""
    movie = types.ModuleType("moviepy")
    clip = types.ModuleType("moviepy.video.io.ImageSequenceClip")
    clip.ImageSequenceClip = _Clip  # type: ignore[attr-defined]
    for name, module in {
        "moviepy": movie,
        "moviepy.video": types.ModuleType("moviepy.video"),
        "moviepy.video.io": types.ModuleType("moviepy.video.io"),
        "moviepy.video.io.ImageSequenceClip": clip,
    }.items():
        monkeypatch.setitem(sys.modules, name, module)
    conformance.check_view_record_video(view, tmp_path / "videos", steps=3)


@pytest.mark.slow
@pytest.mark.parametrize("view", VIEWS)
def test_sb3_ppo_trains_on_a_view_without_monitor(view: str) -> None:
    """PPO on a ``DummyVecEnv`` of the bare view: SB3 reads ``info["episode"]`` as Monitor's record (it raised
    ``TypeError: object of type 'int' has no len()`` in ``dump_logs`` while the views put the game's index there)."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(1)
    venv = DummyVecEnv([lambda: gymnasium.make(view)])
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=32, n_epochs=1, seed=0, verbose=1, device="cpu")
    model.learn(total_timesteps=128)  # (dump_logs runs after each rollout)
    assert model.num_timesteps == 128


# -- the renderer -------------------------------------------------------------------------------------------


def test_frames_have_the_grid_shape_whatever_the_text() -> None:
    texts = ["", "one line", "x" * 500, "\n".join(f"line {i}" for i in range(50)), "tab\there, é, ≤, 漢"]
    frames = [text_frame(t, 6, 30) for t in texts]
    assert {f.shape for f in frames} == {frame_shape(6, 30)} and all(f.dtype == np.uint8 for f in frames)
    assert len({f.tobytes() for f in frames}) == len(texts)  # (each text its own picture)
    assert not (frames[0] < 250).any() and (frames[1] < 250).any()  # (blank paper; ink where there is text)
    assert np.array_equal(text_frame("é", 1, 2), text_frame("e", 1, 2))  # (accents dropped, not the letter)


def test_a_cut_text_says_so_on_its_last_row() -> None:
    many = "\n".join("a" for _ in range(9))
    said = text_frame("a\na\na\n... (6 more lines)", 4, 30)
    assert np.array_equal(text_frame(many, 4, 30), said)


def test_rendered_gives_each_mode_what_it_asks(capsys: pytest.CaptureFixture[str]) -> None:
    assert rendered("board\n", "ansi", 2, 10) == "board\n"
    assert rendered("board\n", "human", 2, 10) is None and capsys.readouterr().out == "board\n"
    assert rendered("board", "rgb_array", 2, 10).shape == frame_shape(2, 10)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"render_mode must be one of \('ansi', 'human', 'rgb_array'\)"):
        rendered("board", "rgb", 2, 10)


def test_belief_coordination_human_mode_prints_and_returns_none(capsys: pytest.CaptureFixture[str]) -> None:
    env = eq_env.belief_coordination_v0.parallel_env(render_mode="human")
    env.reset(seed=0)
    assert env.render() is None
    assert capsys.readouterr().out.startswith("question ")


# -- the native vector environments: Gymnasium's autoreset modes -------------------------------------------


def _vector(role: str, n: int, **kwargs: Any) -> Any:
    from eq_env.exchange_audit.vector import ProposerVectorEnv, ValidatorVectorEnv

    return (ProposerVectorEnv if role == "proposer" else ValidatorVectorEnv)(n, **kwargs)


@pytest.mark.parametrize(
    "role, view", [("proposer", "eq_env/ExchangeAuditProposer-v0"), ("validator", "eq_env/ExchangeAuditValidator-v0")]
)
def test_next_step_autoreset_equals_gymnasiums_own_vectorisation_of_the_views(role: str, view: str) -> None:
    """``autoreset_mode=NEXT_STEP`` plays what ``SyncVectorEnv`` of the views plays in Gymnasium's default mode, step
    for step (the reset steps included), through a reset without a seed after an episode's end and a seeded one."""
    native = _vector(role, 3, autoreset_mode=AutoresetMode.NEXT_STEP)
    assert native.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    sync = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make(view) for _ in range(3)])
    assert sync.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    traces: list[list[Any]] = [[], []]
    for k, env in enumerate((native, sync)):
        env.action_space.seed(1)
        traces[k].append(env.reset(seed=7))
        for t in range(9):
            traces[k].append(env.step(env.action_space.sample()))
            if t == 4:
                traces[k].append(env.reset())  # (after an episode's end: the next episode, as a view's reset())
        traces[k].append(env.reset(seed=[2, None, 5]))
        traces[k].append(env.step(env.action_space.sample()))
    for i, (a, b) in enumerate(zip(*traces, strict=True)):
        assert gymnasium.utils.env_checker.data_equivalence(a, b), i


def test_gymnasiums_vector_wrappers_take_the_native_vector_envs_in_next_step_mode() -> None:
    from gymnasium.wrappers import vector as wrappers

    for role in ("proposer", "validator"):
        envs = wrappers.FlattenObservation(wrappers.NormalizeObservation(_vector(role, 2, autoreset_mode="NextStep")))
        envs.reset(seed=0)
        envs.action_space.seed(0)
        for _ in range(6):
            obs, *_ = envs.step(envs.action_space.sample())
            assert obs.shape[0] == 2 and np.isfinite(obs).all()
    with pytest.raises(ValueError, match="autoreset_mode must be one of SameStep, NextStep"):
        _vector("proposer", 2, autoreset_mode=AutoresetMode.DISABLED)


def test_same_step_stays_the_native_default() -> None:
    env = _vector("proposer", 2)
    assert env.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    env.reset(seed=0)
    _, _, term, _, info = env.step(env.action_space.sample())
    assert term.all() and "episode_index" in info["final_info"] and "episode" not in info["final_info"]


@pytest.mark.slow  # (a fresh interpreter)
def test_the_gymnasium_vector_envs_import_without_sb3() -> None:
    """``eq_env.exchange_audit.vector`` needs SB3 (the ``rl`` extra) only for its SB3 forms."""
    code = (
        "import sys; sys.modules['stable_baselines3'] = None\n"
        "from eq_env.exchange_audit.vector import ProposerVectorEnv\n"
        "env = ProposerVectorEnv(2); env.reset(seed=0); env.step(env.action_space.sample())\n"
        "try:\n    from eq_env.exchange_audit.sb3_vector import ProposerVecEnv\n"
        "except ImportError:\n    print('no sb3')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "no sb3", out.stderr
