"""A jitted PPO training's directory plays in numpy (no JAX installed here): ``jax:path=DIR`` in the runner and
the batch engine alike, and a damaged or foreign directory is refused in one line."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from eq_env.baselines.jax_policy import JaxPPOPolicy, load, save
from eq_env.core.policy import make_policy
from eq_env.exchange_audit.batch import columns_equal, simulate
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.runner import play, records_to_columns
from eq_env.exchange_audit.spec import ID


def _net(rng: np.random.Generator, sizes: tuple[int, ...]) -> list[dict[str, np.ndarray]]:
    return [
        {"w": rng.normal(size=(a, b)).astype(np.float32), "b": rng.normal(size=b).astype(np.float32)}
        for a, b in itertools.pairwise(sizes)
    ]


def _training(path: Path, config: ExchangeAuditConfig, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    params = {
        "proposer_0": {"actor": _net(rng, (16, 8, 648)), "critic": _net(rng, (16, 8, 1))},
        "validator_0": {"actor": _net(rng, (20, 8, 2)), "critic": _net(rng, (20, 8, 1))},
    }
    meta = {"env": ID, "config": config.to_dict(), "agents": {"proposer_0": "proposer_0", "validator_0": "validator_0"}}
    return save(path, params, meta)


def test_plays_in_the_runner_as_in_the_batch_engine(tmp_path: Path) -> None:
    config = ExchangeAuditConfig(q=0.5)
    spec = f"jax:path={_training(tmp_path / 'run', config)}"
    records = play(config, spec, spec, episodes=400, seed=3)
    cols = simulate(config, make_policy(spec, "proposer"), make_policy(spec, "validator"), episodes=400, seed=3)
    assert columns_equal(records_to_columns(records), cols) == []
    assert 0 < cols["requested"].mean() and len(set(cols["reported_risk"].round(6))) > 10  # (random weights act)
    sampled = make_policy(f"{spec},deterministic=false", "proposer")
    assert repr(sampled).endswith("sampled)")
    a = play(config, f"{spec},deterministic=false", "rule", episodes=50, seed=1)
    b = play(config, f"{spec},deterministic=false", "rule", episodes=50, seed=1)
    assert [r.to_dict() for r in a] == [r.to_dict() for r in b]  # sampled, seeded by reset: the same games


def test_damaged_or_foreign_directories_are_refused(tmp_path: Path) -> None:
    config = ExchangeAuditConfig()
    path = _training(tmp_path / "run", config)
    assert load(path)[1]["env"] == ID
    with pytest.raises(ValueError, match="is not a JAX PPO training"):
        JaxPPOPolicy(tmp_path, "proposer")
    npz = (path / "params.npz").read_bytes()
    (path / "params.npz").write_bytes(npz[: len(npz) // 2])
    with pytest.raises(ValueError, match=r"params.npz is not a saved JAX PPO network \(.*\): train again"):
        JaxPPOPolicy(path, "proposer")
    path = _training(tmp_path / "run", config)
    meta = json.loads((path / "policy.json").read_text())
    (path / "policy.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"policy\.json is not valid JSON"):
        JaxPPOPolicy(path, "proposer")
    (path / "policy.json").write_text(json.dumps({**meta, "format": 99}))
    with pytest.raises(ValueError, match="has format 99, this version reads 1: train again"):
        JaxPPOPolicy(path, "proposer")
    (path / "policy.json").write_text(json.dumps({**meta, "agents": {"proposer_0": "proposer_0"}}))
    with pytest.raises(ValueError, match="no agent of role 'validator' learned in this training"):
        JaxPPOPolicy(path, "validator")
    (path / "policy.json").write_text(json.dumps({**meta, "config": {"q": 7}}))
    with pytest.raises(ValueError, match="its env or config is not a game's"):
        JaxPPOPolicy(path, "proposer")
    with pytest.raises(ValueError, match="deterministic must be true or false"):
        JaxPPOPolicy(path, "proposer", deterministic="yes")  # type: ignore[arg-type]
    rng = np.random.default_rng(0)
    bad = {"proposer_0": {"actor": _net(rng, (16, 648)), "critic": _net(rng, (16, 1))}}
    bad["proposer_0"]["actor"][0]["w"][0, 0] = np.nan
    save(path, bad, {**meta, "agents": {"proposer_0": "proposer_0"}})
    with pytest.raises(ValueError, match="weights that are not finite"):
        JaxPPOPolicy(path, "proposer")
    save(
        path,
        {"proposer_0": {"actor": _net(rng, (12, 648)), "critic": []}},
        {**meta, "agents": {"proposer_0": "proposer_0"}},
    )
    with pytest.raises(ValueError, match="reads 12 features, the game's proposer observes 16"):
        JaxPPOPolicy(path, "proposer")


def test_an_einstein_self_play_training_plays_both_seats(tmp_path: Path) -> None:
    """A self-play training (one network, ``shared``, in both seats) plays either seat as ``jax:path=``; a game of
    another size is refused in one line naming the configuration."""
    from eq_env.core.runner import evaluate
    from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
    from eq_env.einstein_puzzle.spaces import layout, n_actions
    from eq_env.einstein_puzzle.spec import ID as EINSTEIN

    config = EinsteinPuzzleConfig(n=5, strict_mask=True)
    rng = np.random.default_rng(1)
    size, acts = layout(5).size, n_actions(5)
    params = {"shared": {"actor": _net(rng, (size, 16, acts)), "critic": _net(rng, (size, 16, 1))}}
    meta = {"env": EINSTEIN, "config": config.to_dict(), "agents": {"player_0": "shared", "player_1": "shared"}}
    spec = f"jax:path={save(tmp_path / 'selfplay', params, meta)}"
    ev = evaluate("einstein-puzzle", config, {"player_0": spec, "player_1": spec}, episodes=5, seeds=[0])
    again = evaluate("einstein-puzzle", config, {"player_0": spec, "player_1": spec}, episodes=5, seeds=[0])
    assert [r.to_dict() for r in ev.records] == [r.to_dict() for r in again.records]  # (greedy: the same games)
    assert all(r.turns > 0 and len(r.actions) == r.turns for r in ev.records)
    seat = make_policy(spec, "player_1", env=EINSTEIN)
    assert repr(seat).endswith("greedy)")
    with pytest.raises(ValueError, match="trained on another configuration of the game"):
        evaluate(
            "einstein-puzzle",
            EinsteinPuzzleConfig(n=6),
            {"player_0": spec, "player_1": "planner"},
            episodes=1,
            seeds=[0],
        )
