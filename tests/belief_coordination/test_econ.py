"""ECON done right: the architecture (per-executor belief networks, attention encoder, monotone QMIX mixer), the
policy in the environment, its files, deterministic training, and (slow) whether learning the beliefs helps —
against the same network frozen at its random initialisation and against every fixed (T, p) — and does nothing
on the null instrument."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from eq_env import belief_coordination_v0
from eq_env.baselines.belief_coordination.econ import (
    ECON,
    META_FILE,
    WEIGHTS_FILE,
    ECONHyper,
    ECONNetwork,
    econ,
    train_econ,
)
from eq_env.belief_coordination import batch as engine
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.env import COORDINATOR

GRID = BeliefCoordinationConfig(action_space="grid")
TINY = ECONHyper(steps=20, batch_size=64, pool=256, eval_every=10, eval_episodes=100)


def features(b: int = 32, n: int = 3, seed: int = 0) -> np.ndarray:
    """Executor features as the engine builds them in round 0 (only the difficulty varies)."""
    batch = engine.episodes_batch(GRID.replace(n_executors=n), seed, range(b))
    return engine.executor_features(batch, GRID.replace(n_executors=n), 0, None)


# -- architecture ----------------------------------------------------------------
def test_network_shapes() -> None:
    net = ECONNetwork(n_executors=3, n_actions=18)
    x = torch.rand(7, 3, 5)
    beliefs, q, group = net(x)
    assert beliefs.shape == (7, 3, 16) and q.shape == (7, 3, 18) and group.shape == (7, 16)
    assert net.mix(q[..., 0], group).shape == (7,)
    w1, b1, w2, b2 = net.mixer_weights(group)
    assert w1.shape == (7, 3, 32) and b1.shape == (7, 32) and w2.shape == (7, 32) and b2.shape == (7,)
    actions = ECON.untrained(GRID).act_batch(features(9))
    assert actions.shape == (9, 3) and actions.dtype == np.int64 and ((actions >= 0) & (actions < GRID.grid_size)).all()


def test_network_configurable_and_hyper_checked() -> None:
    net = ECONNetwork(5, 6, ECONHyper(belief_dim=8, hidden=12, heads=2, mixer_hidden=4))
    beliefs, q, group = net(torch.rand(2, 5, 5))
    assert beliefs.shape == (2, 5, 8) and q.shape == (2, 5, 6) and net.mix(q[..., 1], group).shape == (2,)
    with pytest.raises(ValueError, match="heads"):
        ECONHyper(belief_dim=16, heads=3)
    with pytest.raises(ValueError, match="lr"):
        ECONHyper(lr=0.0)
    assert ECONHyper().epsilon(0) == 1.0 and ECONHyper().epsilon(900) == pytest.approx(0.05)
    assert ECONHyper().epsilon(1499) == pytest.approx(0.05) and 0.05 < ECONHyper().epsilon(450) < 1.0


def test_mixer_monotone_in_every_q() -> None:
    torch.manual_seed(1)
    net = ECONNetwork(4, 18)
    with torch.no_grad():  # hypernetworks far from their init: abs must still make every weight non-negative
        for p in net.parameters():
            p.normal_(0, 2)
        group = torch.randn(500, 16) * 3
        w1, _, w2, _ = net.mixer_weights(group)
        assert (w1 >= 0).all() and (w2 >= 0).all()
        q = torch.randn(500, 4) * 3
        base = net.mix(q, group)
        for i in range(4):
            for delta in (1e-3, 0.5, 10.0):
                up = q.clone()
                up[:, i] += delta
                assert (net.mix(up, group) >= base - 1e-5).all()


def test_executors_have_their_own_networks() -> None:
    net = ECONNetwork(3, 18)
    assert len(net.beliefs) == 3
    params = [list(b.parameters()) for b in net.beliefs]
    pointers = [{p.data_ptr() for p in ps} for ps in params]
    assert not (pointers[0] & pointers[1]) and not (pointers[1] & pointers[2]) and not (pointers[0] & pointers[2])
    assert not torch.equal(params[0][0], params[1][0])  # separately initialised
    # executor 0's value depends on network 0 alone
    _, q, _ = net(torch.rand(8, 3, 5))
    q[:, 0].sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in params[0] if p.requires_grad)
    assert all(p.grad is None or not p.grad.any() for ps in params[1:] for p in ps)


# -- the policy in the environment -------------------------------------------------
def executor_observations(env: Any) -> dict[str, Any]:
    observations, _ = env.reset(seed=3)
    return {a: o for a, o in observations.items() if a != COORDINATOR}


def test_act_joint_grid_env_legal_and_equals_act_batch() -> None:
    policy = ECON.untrained(GRID, seed=4)
    env = belief_coordination_v0.parallel_env(action_space="grid")
    for seed in range(5):
        observations, _ = env.reset(seed=seed)
        executors = {a: o for a, o in observations.items() if a != COORDINATOR}
        shuffled = dict(reversed(list(executors.items())))  # the order of the dict does not matter
        actions = policy.act_joint(shuffled)
        assert set(actions) == set(executors)
        for agent, action in actions.items():
            assert isinstance(action, int) and env.action_space(agent).contains(action)
        stacked = np.stack([executors[f"executor_{i}"]["observation"] for i in range(3)])[None]
        assert [actions[f"executor_{i}"] for i in range(3)] == policy.act_batch(stacked)[0].tolist()
        observations, *_ = env.step(actions)
        env.step({COORDINATOR: int(np.argmax(observations[COORDINATOR]["observation"][1::3]))})
        t, p = GRID.grid_point(policy.act_batch(stacked)[0])
        assert env.temperatures[0] == pytest.approx(t.tolist()) and env.penalties[0] == pytest.approx(p.tolist())


def test_act_joint_box_env_gives_the_chosen_point() -> None:
    policy = ECON.untrained(GRID, seed=2)
    env = belief_coordination_v0.parallel_env()  # Box actions
    executors = executor_observations(env)
    actions = policy.act_joint(executors)
    env.step(actions)
    stacked = np.stack([executors[f"executor_{i}"]["observation"] for i in range(3)])[None]
    t, p = GRID.grid_point(policy.act_batch(stacked)[0])
    assert env.temperatures[0] == pytest.approx(t.tolist(), abs=1e-5)
    assert env.penalties[0] == pytest.approx(p.tolist(), abs=1e-5)


def test_chooser_plays_like_the_environment() -> None:
    policy = ECON.untrained(GRID, seed=5)
    batch = engine.episodes_batch(GRID, 8, range(6))
    outcome = engine.play(batch, GRID, policy.chooser())
    env = belief_coordination_v0.parallel_env(action_space="grid")
    for i in range(6):
        observations, _ = env.reset(seed=8, options={"episode": i})
        observations, *_ = env.step(policy.act_joint({a: o for a, o in observations.items() if a != COORDINATOR}))
        _, rewards, *_ = env.step({COORDINATOR: int(outcome.committed[i])})
        assert rewards[COORDINATOR] == pytest.approx(outcome.reward[i])


def test_grid_mismatch_refused() -> None:
    policy = ECON.untrained(GRID)
    env = belief_coordination_v0.parallel_env(action_space="grid", grid_temperatures=5)
    with pytest.raises(ValueError, match="grid"):
        policy.act_joint(executor_observations(env))
    narrow = belief_coordination_v0.parallel_env(temperature_max=1.0)  # Box whose range cuts ECON's grid
    with pytest.raises(ValueError, match="ranges"):
        policy.act_joint(executor_observations(narrow))


def test_team_size_mismatch_refused() -> None:
    policy = ECON.untrained(GRID)
    env = belief_coordination_v0.parallel_env(action_space="grid", n_executors=5)
    with pytest.raises(ValueError, match=r"team of 3 executors; this team has 5"):
        policy.act_joint(executor_observations(env))
    with pytest.raises(ValueError, match=r"\(B, 3, 5\)"):
        policy.act_batch(np.zeros((2, 5, 5), np.float32))


def test_rounds_other_than_one_refused() -> None:
    debate = BeliefCoordinationConfig(rounds=3, action_space="grid")
    with pytest.raises(ValueError, match="rounds=1, got rounds=3"):
        train_econ(debate, TINY, progress=False)
    with pytest.raises(ValueError, match="rounds"):
        ECON.untrained(debate)


# -- files -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[ECON, Path]:
    policy = ECON.untrained(GRID, seed=6)
    policy.curve = [{"step": 0, "reward": 0.5, "accuracy": 0.4, "tokens": 1000.0, "epsilon": 1.0, "loss": None}]
    return policy, policy.save(tmp_path_factory.mktemp("econ") / "model")


def test_save_load_round_trip(saved: tuple[ECON, Path]) -> None:
    policy, path = saved
    loaded = econ(str(path))
    x = features(64, seed=9)
    assert np.array_equal(loaded.act_batch(x), policy.act_batch(x))
    assert all(torch.equal(a, b) for a, b in zip(policy.network.state_dict().values(),
                                                  loaded.network.state_dict().values(), strict=True))  # fmt: skip
    assert (loaded.config, loaded.hyper, loaded.seed, loaded.curve) == (GRID, ECONHyper(), 6, policy.curve)
    meta = json.loads((path / META_FILE).read_text())
    assert meta["n_executors"] == 3 and len(meta["grid"]) == 30 and meta["version"]


def copy_saved(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for name in (META_FILE, WEIGHTS_FILE):
        (dst / name).write_bytes((src / name).read_bytes())
    return dst


def edit_json(path: Path, edit: Any) -> None:
    meta = json.loads((path / META_FILE).read_text())
    edit(meta)
    (path / META_FILE).write_text(json.dumps(meta))


def damage(kind: str, path: Path) -> str:
    """Damage the saved ECON at ``path``; the file the error must name."""
    pt, js = path / WEIGHTS_FILE, path / META_FILE
    if kind == "no directory":
        for f in (pt, js):
            f.unlink()
        path.rmdir()
        return str(path)
    if kind == "no json":
        js.unlink()
        return str(js)
    if kind == "no pt":
        pt.unlink()
        return str(pt)
    if kind == "corrupt json":
        js.write_text(js.read_text()[:50])
    elif kind == "json not econ":
        js.write_text("[1, 2, 3]")
    elif kind == "json missing field":
        edit_json(path, lambda m: m.pop("hyper"))
    elif kind == "json bad config":
        edit_json(path, lambda m: m["config"].update(n_executors=99))
    elif kind == "json bad hyper":
        edit_json(path, lambda m: m["hyper"].update(heads=5))
    elif kind == "json grid mismatch":
        edit_json(path, lambda m: m["grid"][0].__setitem__(0, 0.3))
    elif kind == "json team mismatch":
        edit_json(path, lambda m: m.update(n_executors=4))
    elif kind == "json bad training":
        edit_json(path, lambda m: m["training"].update(curve="none"))
    elif kind == "json debate":
        edit_json(path, lambda m: m["config"].update(rounds=2))
    elif kind == "truncated pt":
        pt.write_bytes(pt.read_bytes()[: pt.stat().st_size // 2])
    elif kind == "garbage pt":
        pt.write_bytes(b"this is not a torch file")
    elif kind == "pt not a state dict":
        torch.save([torch.zeros(2)], pt)
    elif kind == "pt missing key":
        state = torch.load(pt, weights_only=True)
        state.pop(next(iter(state)))
        torch.save(state, pt)
    elif kind == "pt wrong shapes":
        edit_json(path, lambda m: m["hyper"].update(hidden=32))  # the weights are for hidden=64
    else:  # pragma: no cover
        raise AssertionError(kind)
    return str(pt) if kind.endswith(("pt", "state dict", "key", "shapes")) else str(js)


DAMAGES = ("no directory", "no json", "no pt", "corrupt json", "json not econ", "json missing field",
           "json bad config", "json bad hyper", "json grid mismatch", "json team mismatch", "json debate",
           "json bad training", "truncated pt", "garbage pt", "pt not a state dict", "pt missing key",
           "pt wrong shapes")  # fmt: skip


@pytest.mark.parametrize("kind", DAMAGES)
def test_damaged_files_refused_naming_the_file(kind: str, saved: tuple[ECON, Path], tmp_path: Path) -> None:
    path = copy_saved(saved[1], tmp_path / "model")
    named = damage(kind, path)
    with pytest.raises(ValueError) as error:
        ECON.load(path)
    message = str(error.value)
    assert named in message and "\n" not in message, message


# -- training ----------------------------------------------------------------------
def state(policy: ECON) -> dict[str, torch.Tensor]:
    return policy.network.state_dict()


def same_weights(a: ECON, b: ECON) -> bool:
    return state(a).keys() == state(b).keys() and all(torch.equal(state(a)[k], state(b)[k]) for k in state(a))


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_training_is_deterministic() -> None:
    before = torch.get_rng_state()
    rows: list[dict[str, Any]] = []
    first, curve = train_econ(GRID, TINY, seed=3, progress=False, on_eval=rows.append)
    second, curve_again = train_econ(GRID, TINY, seed=3, progress=False)
    assert torch.equal(torch.get_rng_state(), before)  # the caller's torch random state is left alone
    assert same_weights(first, second) and curve == curve_again and rows == curve
    assert [r["step"] for r in curve] == [0, 10, 20]
    assert set(curve[-1]) == {"step", "reward", "accuracy", "tokens", "epsilon", "loss"}
    assert curve[0]["loss"] is None and all(math.isfinite(r["loss"]) for r in curve[1:])
    assert not same_weights(first, ECON.untrained(GRID, TINY, seed=3))  # it did learn something
    other, _ = train_econ(GRID, TINY, seed=4, progress=False)
    assert not same_weights(first, other)


@pytest.mark.slow  # (over a second here, torch included: the fast run stays under a minute)
def test_untrained_is_where_training_starts() -> None:
    start, curve = train_econ(GRID, ECONHyper(steps=0, pool=16, eval_episodes=50), seed=7, progress=False)
    untrained = ECON.untrained(GRID, ECONHyper(steps=0, pool=16, eval_episodes=50), seed=7)
    assert same_weights(start, untrained) and [r["step"] for r in curve] == [0]
    assert not same_weights(untrained, ECON.untrained(GRID, seed=8))


# -- slow: does learning the beliefs help? -------------------------------------------
HELD_OUT_SEED = 20_000  # neither the training pool nor train_econ's evaluation episodes (seed 10 000)
HELD_OUT = 4000


def paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Mean of the paired difference a − b and its 95% CI half-width."""
    d = np.asarray(a, float) - np.asarray(b, float)
    return float(d.mean()), float(1.96 * d.std(ddof=1) / math.sqrt(len(d)))


def fixed_rewards(config: BeliefCoordinationConfig, batch: engine.Batch) -> np.ndarray:
    """(G, B): every fixed grid point's rewards on ``batch`` (common random numbers)."""
    points = [config.grid_point(g) for g in range(config.grid_size)]
    return np.stack([engine.play(batch, config, engine.fixed_chooser(float(t), float(p))).reward for t, p in points])


@pytest.fixture(scope="module")
def trained() -> ECON:
    policy, _ = train_econ(GRID, seed=0, progress=False)
    return policy


@pytest.mark.slow
def test_trained_beats_untrained_and_every_fixed_point(trained: ECON) -> None:
    batch = engine.episodes_batch(GRID, HELD_OUT_SEED, range(HELD_OUT))
    learned = engine.play(batch, GRID, trained.chooser())
    untrained = engine.play(batch, GRID, ECON.untrained(GRID, seed=0).chooser()).reward
    fixed = fixed_rewards(GRID, batch)
    best = int(fixed.mean(axis=1).argmax())
    bt, bp = (float(v) for v in GRID.grid_point(best))
    gain, ci = paired(learned.reward, untrained)
    over_best, ci_best = paired(learned.reward, fixed[best])
    t = learned.temperatures[:, 0, :]
    easy, hard = t[batch.difficulty <= 0.25].mean(), t[batch.difficulty >= 0.75].mean()
    print(f"\nECON trained {learned.reward.mean():.4f}, untrained {untrained.mean():.4f}: {gain:+.4f} ± {ci:.4f}; "
          f"best fixed (T={bt:g}, p={bp:g}) {fixed[best].mean():.4f}: {over_best:+.4f} ± {ci_best:.4f}; "
          f"mean T easy {easy:.3f}, hard {hard:.3f}")  # fmt: skip
    assert gain > ci  # (a) the learned beliefs, not the architecture, make the difference (falsifier F1)
    assert over_best > -0.01  # (b) at least as good as the best fixed (T, p) chosen in hindsight
    assert hard > easy  # hotter on hard questions, where the greedy path is the trap


@pytest.mark.slow
def test_null_instrument_nothing_to_learn(trained: ECON) -> None:
    null = BeliefCoordinationConfig(action_space="grid", sensitive=False)
    batch = engine.episodes_batch(null, HELD_OUT_SEED, range(HELD_OUT))
    on_null, _ = train_econ(null, ECONHyper(steps=300), seed=0, progress=False)
    sensitive_trained = ECON(trained.network, null, trained.hyper, seed=0)  # trained where (T, p) matter
    rewards = {
        "trained on null": engine.play(batch, null, on_null.chooser()).reward,
        "trained": engine.play(batch, null, sensitive_trained.chooser()).reward,
        "untrained": engine.play(batch, null, ECON.untrained(null, seed=0).chooser()).reward,
    }
    rewards.update({f"fixed {g}": r for g, r in enumerate(fixed_rewards(null, batch))})
    reference = rewards["untrained"]
    print(f"\nnull instrument: every method's mean reward {reference.mean():.4f}")
    for name, r in rewards.items():
        diff, ci = paired(r, reference)
        assert abs(diff) <= ci, name
        assert np.array_equal(r, reference), name  # the answerer ignores T and p: exactly the same answers
