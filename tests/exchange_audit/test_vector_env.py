"""The vectorised environments equal N single views seeded seed, seed + 1, ... episode by episode."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from eq_env.exchange_audit.sb3_vector import ProposerVecEnv, ValidatorVecEnv
from eq_env.exchange_audit.vector import ProposerVectorEnv, ValidatorVectorEnv
from eq_env.exchange_audit.views import ExchangeAuditProposerEnv, ExchangeAuditValidatorEnv

N = 5


def _actions(role: str, encoding: str, rng: np.random.Generator) -> np.ndarray:
    if role == "validator":
        return rng.integers(0, 2, size=N)
    if encoding == "discrete":
        return rng.integers(0, 648, size=N)
    a = np.stack([rng.integers(0, n, size=N) for n in (2, 2, 2, 3, 3, 3, 3)], axis=1)
    a[:, 0] = rng.random(N) < 0.85
    return a


def _views(role: str, other: Any, kwargs: dict[str, Any]) -> list[Any]:
    cls = ExchangeAuditProposerEnv if role == "proposer" else ExchangeAuditValidatorEnv
    return [cls(other, **kwargs) for _ in range(N)]


CASES = [
    ("proposer", "rule", {}),
    ("proposer", "rule", {"q": 0.6, "B": 2, "reward_mode": "welfare"}),
    ("proposer", "approve", {"action_encoding": "discrete", "V": 2.0, "L": 1.0}),
    ("proposer", "block", {"cost_model": "tokens", "max_words": 5}),
    ("validator", "honest", {}),
    ("validator", "strategic", {"skip_no_trade": False, "q": 0.2}),
    ("validator", "strategic:trigger=payoff", {"V": 2.0, "L": 1.0, "audit_intensities": [0.0, 0.3, 0.9]}),
    ("validator", "silent", {"skip_no_trade": False, "reward_mode": "welfare"}),
]


@pytest.mark.parametrize("role, other, kwargs", CASES)
def test_sb3_vec_env_equals_single_views(role: str, other: str, kwargs: dict[str, Any]) -> None:
    cls = ProposerVecEnv if role == "proposer" else ValidatorVecEnv
    venv = cls(N, other, **kwargs)
    views = _views(role, other, kwargs)
    venv.seed(11)
    obs = venv.reset()
    for i, view in enumerate(views):
        assert np.array_equal(obs[i], view.reset(seed=11 + i)[0])
    rng = np.random.default_rng(0)
    for t in range(40):
        masks = venv.env_method("action_masks")
        actions = _actions(role, kwargs.get("action_encoding", "multidiscrete"), rng)
        venv.step_async(actions)
        obs, rewards, dones, infos = venv.step_wait()
        assert dones.all() and rewards.dtype == np.float32
        for i, view in enumerate(views):
            assert np.array_equal(masks[i], view.action_masks())
            o, r, term, trunc, info = view.step(actions[i])
            got = dict(infos[i])
            assert np.array_equal(got.pop("terminal_observation"), o)
            assert got == info, (t, i)
            assert rewards[i] == np.float32(r) and term and not trunc
            assert np.array_equal(obs[i], view.reset()[0]), (t, i)
        if t == 20:  # seeding again starts every stream again
            venv.seed(3)
            obs = venv.reset()
            for i, view in enumerate(views):
                assert np.array_equal(obs[i], view.reset(seed=3 + i)[0])


@pytest.mark.parametrize("role, other, kwargs", [CASES[1], CASES[5]])
def test_gymnasium_vector_env_equals_single_views(role: str, other: str, kwargs: dict[str, Any]) -> None:
    cls = ProposerVectorEnv if role == "proposer" else ValidatorVectorEnv
    venv = cls(N, other, **kwargs)
    views = _views(role, other, kwargs)
    obs, _ = venv.reset(seed=4)
    for i, view in enumerate(views):
        assert np.array_equal(obs[i], view.reset(seed=4 + i)[0])
    rng = np.random.default_rng(1)
    for t in range(25):
        actions = _actions(role, "multidiscrete", rng)
        obs, rewards, term, trunc, infos = venv.step(actions)
        assert term.all() and not trunc.any() and infos["_final_obs"].all()
        for i, view in enumerate(views):
            o, r, *_, info = view.step(actions[i])
            assert np.array_equal(infos["final_obs"][i], o) and rewards[i] == r
            for key in ("episode_index", "welfare", "proposer_payoff", "validator_payoff", "decision", "words"):
                assert infos["final_info"][key][i] == info[key], (t, i, key)
            assert infos["final_info"]["audit"]["outcome"][i] == info["audit"]["outcome"]
            assert infos["final_info"]["state"]["true_risk"][i] == info["state"]["true_risk"]
            assert np.array_equal(obs[i], view.reset()[0])


def test_masks_reach_maskable_ppo() -> None:
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    venv = ValidatorVecEnv(N, "honest", skip_no_trade=False)
    venv.seed(0)
    venv.reset()
    assert is_masking_supported(venv)
    seen_block_only = False
    for _ in range(20):
        masks = get_action_masks(venv)
        assert masks.shape == (N, 2) and masks[:, 0].all()
        seen_block_only |= not masks[:, 1].all()
        venv.step(np.ones(N, dtype=np.int64))
    assert seen_block_only
    assert get_action_masks(ProposerVecEnv(N)).shape == (N, 18)


def test_vector_envs_refuse_what_they_cannot_play() -> None:
    with pytest.raises(ValueError, match="one audit intensity"):
        ProposerVecEnv(2, audit_intensities=[0.1, 0.5])
    with pytest.raises(TypeError, match="cannot act in bulk"):
        ProposerVecEnv(2, validator="llm:model=m,base_url=http://127.0.0.1:9/v1")
    venv = ProposerVecEnv(2)
    venv.reset()
    with pytest.raises(ValueError, match="outside"):
        venv.step(np.full((2, 7), 5))


@pytest.mark.parametrize("cls", [ProposerVecEnv, ValidatorVecEnv, ProposerVectorEnv, ValidatorVectorEnv])
def test_vector_envs_refuse_noisy_or_delayed_audits_naming_the_fields(cls: Any) -> None:
    """The batch arithmetic here plays exact, immediate audits only: the noisy and delayed audit options are
    refused, not played wrong (the single-agent views play them, through the AEC environment)."""
    with pytest.raises(ValueError, match=r"noisy or delayed audits \(set: miss_intent, audit_delayed\)"):
        cls(2, miss_intent=0.1, audit_delayed=True)
    with pytest.raises(ValueError, match=r"\(set: false_fail_confidence\)"):
        cls(2, preset="paper_scripted", false_fail_confidence=0.5)
    cls(2, miss_intent=0.0, audit_delayed=False)  # at their defaults: played as before


def test_training_takes_the_views_for_noisy_or_delayed_audits() -> None:
    from eq_env.baselines.exchange_audit.rl import make_vec
    from eq_env.exchange_audit.config import ExchangeAuditConfig

    plain = ExchangeAuditConfig()
    assert make_vec("proposer", "rule", plain, "individual") is not None
    for config in (plain.with_audit_noise(0.1, 0.0), plain.replace(audit_delayed=True)):
        assert make_vec("proposer", "rule", config, "individual") is None
        assert make_vec("validator", "strategic", config, "individual") is None


@pytest.mark.slow
def test_maskable_ppo_trains_on_the_vectorised_validator() -> None:
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    torch.set_num_threads(1)
    venv = VecMonitor(ValidatorVecEnv(8, "honest", skip_no_trade=False))  # as eq-env train wraps it
    model = MaskablePPO("MlpPolicy", venv, n_steps=16, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(256)
    assert model.num_timesteps == 256
