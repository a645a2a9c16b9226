"""Training LLMs in the games, end to end on a tiny model made here: demonstrations -> ``finetune tiny`` ->
``finetune sft`` (TRL's SFTTrainer; resumes; refuses a changed run) -> the checkpoint playing through ``eq-env
play`` in-process (``hf:path=DIR``) and replaying with no request -> ``finetune grpo`` (TRL's GRPOTrainer), whose
reward function must receive, for each rollout, the game's own reward for the episode the model played.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ft_support import need

need("transformers", "trl", "datasets", "tokenizers", "torch")

from eq_env.cli import main  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.finetune]

SMALL = ["--layers", "2", "--hidden-size", "64", "--heads", "2", "--intermediate-size", "128", "--vocab-size", "600"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Exchange–audit demonstrations and a tiny model whose tokenizer is trained on them."""
    where = tmp_path_factory.mktemp("ea")
    assert (
        main(["finetune", "demos", "--env", "exchange-audit", "--out", str(where / "demos.jsonl"), "--episodes", "8"])
        == 0
    )
    assert main(["finetune", "tiny", "--data", str(where / "demos.jsonl"), "--out", str(where / "tiny"), *SMALL]) == 0
    return where


@pytest.fixture(scope="module")
def trained(tiny: Path) -> Path:
    args = ["finetune", "sft", "--data", str(tiny / "demos.jsonl"), "--model", str(tiny / "tiny"), "--out"]
    assert (
        main(
            [
                *args,
                str(tiny / "sft"),
                "--max-steps",
                "4",
                "--batch-size",
                "2",
                "--logging-steps",
                "1",
                "--save-steps",
                "2",
            ]
        )
        == 0
    )
    return tiny / "sft"


def test_sft_writes_model_curve_and_card(trained: Path, tiny: Path) -> None:
    card = json.loads((trained / "card.json").read_text())
    assert card["steps"] == 4 and card["kind"] == "sft"
    assert card["data_lines"]["kept"] == sum(1 for _ in (tiny / "demos.jsonl").open())
    rows = (trained / "curve.csv").read_text().splitlines()
    assert rows[0] == "step,epoch,loss,learning_rate" and len(rows) == 5  # a row per logged step
    assert (trained / "curve.png").stat().st_size > 0 and (trained / "model" / "config.json").is_file()
    # finished: the same command does nothing more; other settings in the same directory are refused
    args = [
        "finetune",
        "sft",
        "--data",
        str(tiny / "demos.jsonl"),
        "--model",
        str(tiny / "tiny"),
        "--out",
        str(trained),
    ]
    assert main([*args, "--max-steps", "4", "--batch-size", "2", "--logging-steps", "1", "--save-steps", "2"]) == 0
    assert json.loads((trained / "card.json").read_text()) == card
    assert main([*args, "--max-steps", "5", "--batch-size", "2"]) == 2


def test_sft_resumes_from_its_last_checkpoint(tiny: Path) -> None:
    out = tiny / "resumed"
    args = [
        "finetune",
        "sft",
        "--data",
        str(tiny / "demos.jsonl"),
        "--model",
        str(tiny / "tiny"),
        "--out",
        str(out),
        "--max-steps",
        "4",
        "--batch-size",
        "2",
        "--logging-steps",
        "1",
        "--save-steps",
        "2",
    ]
    assert main(args) == 0
    (out / "card.json").unlink()  # as if killed after the checkpoint of step 4 was written
    assert main(args) == 0
    assert json.loads((out / "card.json").read_text())["resumed_from"] == "checkpoint-4"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _without_transport(record: dict) -> dict:
    record = json.loads(json.dumps(record))
    for key in ("proposer_info", "validator_info"):
        if isinstance(record.get(key), dict):
            record[key].pop("transport", None)
    return record


def test_checkpoint_plays_in_process_and_replays_with_no_request(trained: Path, tmp_path: Path) -> None:
    model = trained / "model"
    play = [
        "play",
        "--proposer",
        f"hf:path={model},max_tokens=48",
        "--episodes",
        "2",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    assert main([*play, "--records", str(tmp_path / "a.jsonl")]) == 0
    assert main([*play, "--records", str(tmp_path / "b.jsonl"), "--cache", "read"]) == 0
    a, b = _records(tmp_path / "a.jsonl"), _records(tmp_path / "b.jsonl")
    asked = sum(r["proposer_info"]["transport"]["requests"] for r in a)
    assert asked >= 2  # one decision per episode at least, re-asks on top
    assert all(r["proposer_info"]["transport"]["requests"] == 0 for r in b)
    assert [_without_transport(r) for r in a] == [_without_transport(r) for r in b]


def test_another_checkpoint_in_the_same_directory_is_not_replayed(trained: Path, tiny: Path, tmp_path: Path) -> None:
    import shutil

    from eq_env.agents.hf import checkpoint_digest

    moved = tmp_path / "model"
    shutil.copytree(trained / "model", moved)
    before = checkpoint_digest(moved)
    shutil.copy(tiny / "tiny" / "model.safetensors", moved / "model.safetensors")  # other weights, same place
    assert checkpoint_digest(moved) != before
    shutil.copytree(trained / "model", tmp_path / "elsewhere")
    assert checkpoint_digest(tmp_path / "elsewhere") == before  # keyed by content, not by path


def test_a_bad_checkpoint_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "--proposer", f"hf:path={tmp_path / 'none'}", "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no checkpoint there" in err[0]


def test_sampling_is_a_function_of_the_request(trained: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from eq_env.agents.hf import generate_chat

    model = AutoModelForCausalLM.from_pretrained(trained / "model")
    tokenizer = AutoTokenizer.from_pretrained(trained / "model")
    chat = [{"role": "user", "content": "Reply with one JSON object."}]
    ask = {"temperature": 1.0, "max_tokens": 24, "seed": 3, "n": 2}
    first, again = generate_chat(model, tokenizer, chat, **ask), generate_chat(model, tokenizer, chat, **ask)
    assert first.texts == again.texts and len(first.texts) == 2
    other = generate_chat(model, tokenizer, chat, **ask, generator_seed=12345)
    assert other.extra["completion_ids"] != first.extra["completion_ids"]


def test_grpo_trainer_receives_each_episodes_own_game_reward(trained: Path, tmp_path: Path) -> None:
    from eq_env.core.spec import env_spec
    from eq_env.finetune.grpo import GRPOHyper, Rollout, grpo

    rollouts: list[list[Rollout]] = []
    seen: list[list[float]] = []
    hyper = GRPOHyper(max_steps=2, episodes=2, num_generations=2, batch_size=2, max_tokens=32, max_reasks=1)
    card = grpo(
        "exchange-audit",
        str(trained / "model"),
        tmp_path / "grpo",
        role="proposer",
        hyper=hyper,
        on_rollouts=rollouts.append,
        reward_seen=seen.append,
        progress=False,
    )
    assert card["steps"] == 2 and (tmp_path / "grpo" / "model" / "config.json").is_file()
    assert len(seen) == len(rollouts) == 2
    spec = env_spec("exchange-audit")
    config = spec.config()
    for batch, rewards in zip(rollouts, seen, strict=True):
        assert rewards == [r.reward for r in batch]  # in the order played: each rollout's own
        for r in batch:  # the game's reward for that episode: its actions replayed in a fresh environment
            env = spec.raw_env(config)
            env.reset(seed=r.seed, options={"episode": r.episode})
            total, actions = 0.0, iter(r.actions)
            for agent in env.agent_iter():
                _, reward, terminated, truncated, _ = env.last()
                if spec.agent_roles(config)[agent] == "proposer":
                    total += float(reward)
                if terminated or truncated:
                    env.step(None)
                    continue
                played_by, action = next(actions)
                assert played_by == agent
                env.step(action)
            assert next(actions, None) is None and total == r.reward
    log = [json.loads(line) for line in (tmp_path / "grpo" / "grpo_log.jsonl").read_text().splitlines()]
    assert len(log) == 2 and all(0.0 <= e["malformed_rate"] <= 1.0 for e in log)
    assert [e["reward_mean"] for e in log] == [sum(rs) / len(rs) for rs in seen]
