"""The package's own TorchRL learner (:mod:`eq_env.baselines.torchrl`) and its rows of ``eq-env baselines``.

MAPPO on a game's numeric mode must learn (Einstein self-play at n = 4 from scratch, far above random play),
train the same model bit for bit from the same seed, and its models must play as policies of the runner —
greedy or sampled with their own generator, through the ``torchrl:path=DIR`` spec — refusing what they were
not trained for in one line. The quick preset's TorchRL rows run through the command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from recipes import need

need("torchrl", "tensordict", "torch")

import torch  # noqa: E402

from eq_env.baselines.torchrl import TorchRLHyper, TorchRLPolicy, train  # noqa: E402
from eq_env.core.policy import make_policy  # noqa: E402
from eq_env.core.runner import evaluate  # noqa: E402
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig  # noqa: E402
from eq_env.einstein_puzzle.spec import ID as EINSTEIN  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.compat]

CONFIG = EinsteinPuzzleConfig(n=4, comm_mode="provide_and_seek", strict_mask=True)
SMALL = TorchRLHyper(frames_per_batch=500, minibatch=250)
EVAL = {"episodes": 20, "seeds": [1000]}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Einstein self-play, n = 4 (the strict mask), 6,000 frames (three batches of 2,000), seed 0."""
    out = tmp_path_factory.mktemp("torchrl") / "selfplay"
    train(EINSTEIN, out, config=CONFIG, frames=6000, seed=0, progress=False)
    return out


def test_mappo_self_play_learns_the_puzzle_far_above_random_play(trained: Path) -> None:
    played = {r: TorchRLPolicy(trained, r) for r in ("player_0", "player_1")}
    learned = evaluate(EINSTEIN, CONFIG, played, **EVAL).summary
    random = evaluate(EINSTEIN, CONFIG, {"player_0": "random", "player_1": "random"}, **EVAL).summary
    assert learned["illegal_actions"][0] == 0
    # (measured on these 20 games: 0.95 in 11.7 steps; random play, the strict mask's, 0.50 in 22.3)
    assert learned["success_rate"][0] >= 0.8 and random["success_rate"][0] <= 0.6, (learned, random)
    assert learned["steps"][0] < 0.75 * random["steps"][0], (learned, random)
    assert learned["shares"][0] > 0  # it talks: provide & seek's shares are in the learned play
    meta = json.loads((trained / "policy.json").read_text())
    assert meta["groups"] == {"player": ["player_0", "player_1"]} and meta["frames"] == 6000
    rows = (trained / "learning_curve.csv").read_text().splitlines()
    assert rows[0] == "batch,frames,return,episodes,seconds" and len(rows) == 1 + 3


def test_the_same_seed_trains_the_same_model_bit_for_bit(tmp_path: Path) -> None:
    weights = []
    for run in ("a", "b", "c"):
        seed = 1 if run == "c" else 0
        train(EINSTEIN, tmp_path / run, config=CONFIG, frames=1000, seed=seed, hyper=SMALL, progress=False)
        weights.append(torch.load(tmp_path / run / "actors.pt", weights_only=True)["player"])
    a, b, c = weights
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)  # (another seed: another model)


def test_a_model_plays_greedy_or_sampled_through_its_spec_and_sampling_replays_by_seed(trained: Path) -> None:
    greedy = make_policy(f"torchrl:path={trained}", "player_0", EINSTEIN)
    sampled = make_policy(f"torchrl:path={trained},deterministic=false", "player_1", EINSTEIN)
    assert repr(greedy).endswith("greedy)") and repr(sampled).endswith("sampled)")
    runs = [evaluate(EINSTEIN, CONFIG, {"player_0": greedy, "player_1": sampled}, **EVAL).summary for _ in range(2)]
    assert runs[0] == runs[1]  # (the runner seeds each policy's reset: the same draws)
    # with the planner, a partner it never trained with
    mixed = evaluate(EINSTEIN, CONFIG, {"player_0": greedy, "player_1": "planner"}, **EVAL).summary
    assert mixed["illegal_actions"][0] == 0 and mixed["success_rate"][0] > 0.2


def test_what_a_model_was_not_trained_for_is_refused_in_one_line(trained: Path, tmp_path: Path) -> None:
    bigger = EinsteinPuzzleConfig(n=6)
    policy = TorchRLPolicy(trained, "player_0")
    with pytest.raises(ValueError, match=r"trained on another configuration .*\(194,\)"):
        evaluate(EINSTEIN, bigger, {"player_0": policy, "player_1": "planner"}, episodes=1, seeds=[1000])
    with pytest.raises(ValueError, match="has no role 'proposer'"):
        TorchRLPolicy(trained, "proposer")
    with pytest.raises(ValueError, match="is not a TorchRL training"):
        TorchRLPolicy(tmp_path, "player_0")
    (tmp_path / "policy.json").write_text("{not json")
    with pytest.raises(ValueError, match="is not valid JSON"):
        TorchRLPolicy(tmp_path, "player_0")
    broken = tmp_path / "broken"
    broken.mkdir()
    meta = json.loads((trained / "policy.json").read_text())
    (broken / "policy.json").write_text(json.dumps({**meta, "hyper": {**meta["hyper"], "width": 32}}))
    (broken / "actors.pt").write_bytes((trained / "actors.pt").read_bytes())
    with pytest.raises(ValueError, match=r"does not fit its policy\.json"):
        TorchRLPolicy(broken, "player_0")
    (broken / "actors.pt").write_bytes((trained / "actors.pt").read_bytes()[:100])  # (killed mid-write)
    with pytest.raises(ValueError, match=r"actors\.pt is not a torch weights file"):
        TorchRLPolicy(broken, "player_0")
    weights = torch.load(trained / "actors.pt", weights_only=True)
    weights["player"] = {k: torch.full_like(v, float("nan")) for k, v in weights["player"].items()}
    torch.save(weights, broken / "actors.pt")
    (broken / "policy.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="weights that are not finite"):
        TorchRLPolicy(broken, "player_0")
    for edited, match in (
        ({k: v for k, v in meta.items() if k != "env"}, "'env' must be a str"),
        ({**meta, "groups": {"player": 5}}, "'groups' must map each group to a list"),
        ({**meta, "groups": {"player": ["player_0"]}}, "its groups hold"),
        ({**meta, "config": {**meta["config"], "n": -3}}, "its env or config is not a game's"),
        (
            {**meta, "hyper": {**meta["hyper"], "width": 10**9}},
            r"TorchRLHyper\.width must be an integer in \[1, 4096\]",
        ),
    ):
        (broken / "policy.json").write_text(json.dumps(edited))
        with pytest.raises(ValueError, match=match):
            TorchRLPolicy(broken, "player_0")
    with pytest.raises(ValueError, match="deterministic must be true or false"):
        TorchRLPolicy(trained, "player_0", deterministic="yes")  # type: ignore[arg-type]


def test_training_refuses_bad_settings_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="held-out evaluation seeds"):
        train(EINSTEIN, tmp_path, config=CONFIG, frames=500, seed=1000, progress=False)
    with pytest.raises(ValueError, match="frames must be a positive integer"):
        train(EINSTEIN, tmp_path, config=CONFIG, frames=0, progress=False)
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*63\)"):
        train(EINSTEIN, tmp_path, config=CONFIG, frames=500, seed=2**64, progress=False)
    with pytest.raises(ValueError, match=r"TorchRLHyper\.gamma must be at most 1"):
        TorchRLHyper(gamma=1.5)
    with pytest.raises(ValueError, match=r"minibatch \(600\) must not exceed frames_per_batch \(500\)"):
        TorchRLHyper(frames_per_batch=500, minibatch=600)
    with pytest.raises(ValueError, match=r"TorchRLHyper\.lr must be a finite number"):
        TorchRLHyper(lr=float("nan"))
    assert not any(tmp_path.iterdir())  # (refused before anything was written)


def test_the_quick_presets_torchrl_rows_run_through_the_command(tmp_path: Path) -> None:
    only = ["--only", "einstein-puzzle/self-play-torchrl", "--only", "exchange-audit/both-torchrl"]
    only += ["--only", "belief-coordination/team-torchrl"]
    argv = [sys.executable, "-m", "eq_env.cli", "baselines", "--out", str(tmp_path), "--preset", "quick", *only]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    runs = [r for r in records if r["kind"] == "run"]
    assert sorted({r["baseline"] for r in runs}) == [
        "belief-coordination/team-torchrl",
        "einstein-puzzle/self-play-torchrl/n4/provide_and_seek",
        "exchange-audit/both-torchrl/V2-L1",
    ]
    assert len(runs) == 6 and all(r["greedy"] and r["sampled"] and r["curve"] for r in runs)
    assert any(r["kind"] == "cross" for r in records)  # (self-play: run 0's seat with run 1's)
    table = (tmp_path / "baselines.md").read_text()
    assert "TorchRL MAPPO" in table and "cross_play" in table and "not run" not in done.stdout
