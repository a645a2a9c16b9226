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


def _sft(tiny: Path, out: Path, *flags: str) -> list[str]:
    """``eq-env finetune sft`` of the tiny model on its demonstrations into ``out`` (4 steps unless ``flags`` say)."""
    data, model = str(tiny / "demos.jsonl"), str(tiny / "tiny")
    return ["finetune", "sft", "--data", data, "--model", model, "--out", str(out), *(flags or FOUR_STEPS)]


FOUR_STEPS = ("--max-steps", "4", "--batch-size", "2", "--logging-steps", "1", "--save-steps", "2")


@pytest.fixture(scope="module")
def trained(tiny: Path) -> Path:
    assert main(_sft(tiny, tiny / "sft")) == 0
    return tiny / "sft"


def test_sft_writes_model_curve_and_card(trained: Path, tiny: Path) -> None:
    card = json.loads((trained / "card.json").read_text())
    assert card["steps"] == 4 and card["kind"] == "sft"
    assert card["data_lines"]["kept"] == sum(1 for _ in (tiny / "demos.jsonl").open())
    rows = (trained / "curve.csv").read_text().splitlines()
    assert rows[0] == "step,epoch,loss,learning_rate" and len(rows) == 5  # a row per logged step
    assert (trained / "curve.png").stat().st_size > 0 and (trained / "model" / "config.json").is_file()
    # finished: the same command does nothing more; other settings in the same directory are refused
    assert main(_sft(tiny, trained)) == 0
    assert json.loads((trained / "card.json").read_text()) == card
    assert main(_sft(tiny, trained, "--max-steps", "5", "--batch-size", "2")) == 2


def test_sft_resumes_from_its_last_checkpoint(tiny: Path) -> None:
    out = tiny / "resumed"
    assert main(_sft(tiny, out)) == 0
    (out / "card.json").unlink()  # as if killed after the checkpoint of step 4 was written
    assert main(_sft(tiny, out)) == 0
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
    # greedy has one answer: n of them at temperature 0 (the verified player's k samples) are that one, n times
    greedy = {"temperature": 0.0, "max_tokens": 24, "seed": None}
    one, three = (
        generate_chat(model, tokenizer, chat, **greedy, n=1),
        generate_chat(model, tokenizer, chat, **greedy, n=3),
    )
    assert three.texts == one.texts * 3 and three.completion_tokens == 3 * one.completion_tokens


def test_a_lora_adapter_trains_plays_and_is_keyed_by_its_base_model_too(
    tiny: Path, trained: Path, tmp_path: Path
) -> None:
    import shutil

    from eq_env.agents.hf import checkpoint_digest

    out = tmp_path / "lora"
    assert main(_sft(tiny, out, "--max-steps", "2", "--batch-size", "2", "--logging-steps", "1", "--lora")) == 0
    adapter = out / "model"
    assert (adapter / "adapter_config.json").is_file() and json.loads((out / "card.json").read_text())["hyper"]["lora"]
    play = ["play", "--proposer", f"hf:path={adapter},max_tokens=24,max_reasks=1", "--episodes", "1"]
    assert main([*play, "--records", str(tmp_path / "a.jsonl"), "--cache-dir", str(tmp_path / "cache")]) == 0
    (record,) = _records(tmp_path / "a.jsonl")
    assert record["proposer_info"]["transport"]["requests"] >= 1  # the adapter on its base answered
    # the same adapter on other base weights is another model: its answers are keyed apart
    config = json.loads((adapter / "adapter_config.json").read_text())
    moved = tmp_path / "adapter"
    shutil.copytree(adapter, moved)
    assert checkpoint_digest(moved) == checkpoint_digest(adapter)
    config["base_model_name_or_path"] = str(trained / "model")
    (moved / "adapter_config.json").write_text(json.dumps(config))
    other = checkpoint_digest(moved)
    config["base_model_name_or_path"] = str(tiny / "tiny")
    (moved / "adapter_config.json").write_text(json.dumps(config))
    assert checkpoint_digest(moved) != other


def test_penalties_are_applied_as_openai_defines_them(trained: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from eq_env.agents.hf import generate_chat

    model = AutoModelForCausalLM.from_pretrained(trained / "model").eval()
    tokenizer = AutoTokenizer.from_pretrained(trained / "model")
    chat = [{"role": "user", "content": "Reply with one JSON object."}]
    ask = {"temperature": 0.0, "max_tokens": 12, "seed": None, "n": 1}
    penalties = {"frequency_penalty": 1.5, "presence_penalty": 0.5}
    got = generate_chat(model, tokenizer, chat, **ask, extra=penalties)
    prompt = got.extra["prompt_ids"]
    ids, reply = list(prompt), []
    with torch.no_grad():  # greedy by hand: logit - count * frequency - (count > 0) * presence, counted in the reply
        for _ in range(12):
            logits = model(torch.tensor([ids])).logits[0, -1]
            for t in set(reply):
                logits[t] -= reply.count(t) * 1.5 + 0.5
            token = int(logits.argmax())
            reply.append(token)
            ids.append(token)
            if token == tokenizer.eos_token_id:
                break
    assert got.extra["completion_ids"] == [reply]
    plain = generate_chat(model, tokenizer, chat, **ask)
    assert plain.extra["prompt_ids"] == prompt and plain.extra["completion_ids"] != [reply]  # they did act
    with pytest.raises(ValueError, match="frequency_penalty must be a number in"):
        generate_chat(model, tokenizer, chat, **ask, extra={"frequency_penalty": 9})


def test_bench_scores_a_checkpoint_in_process_and_replays_it_exactly(
    trained: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import eq_env.agents.hf as hf

    bench = ["bench", "--quick", "--tasks", "exchange-audit/validator", "--model", "tiny"]
    bench += ["--base-url", f"hf:{trained / 'model'}", "--max-tokens", "24", "--max-reasks", "1"]
    assert main([*bench, "--out", str(tmp_path / "a")]) == 0
    card = json.loads((tmp_path / "a" / "card.json").read_text())
    (task,) = card["tasks"]
    assert card["part_of"] == 5 and task["name"] == "exchange-audit/validator" and task["llm"]["calls"] > 0
    assert task["llm"]["prompt_tokens"] > 0 and task["llm"]["failed_episodes"] == 0

    def asked(*args: object, **kwargs: object) -> None:
        raise AssertionError("a replay generated a reply")

    monkeypatch.setattr(hf, "generate_chat", asked)
    replay = [*bench, "--out", str(tmp_path / "b"), "--cache", "read", "--cache-dir", str(tmp_path / "a" / "llm_cache")]
    assert main(replay) == 0
    for name in ("card.json", "card.md", "card.html"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes(), name


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
