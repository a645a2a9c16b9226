"""``eq-env finetune demos``: every LLM role of every game gets demonstrations in the chat format TRL reads, the
same file for the same flags, and a demonstration file that is not one is refused with its line named.
(Needs no training library: the finetune extra's tests are in tests/finetune.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eq_env.cli import main
from eq_env.core.policy import available_policies
from eq_env.finetune.data import prompt_completion, read_demos, verified

# each game's LLM roles, as the demonstrations name them (the executors' model is belief coordination's answerer)
ROLES = {
    "einstein-puzzle": ("agent", {"player_0", "player_1"}),
    "exchange-audit": ("role", {"proposer", "validator"}),
    "belief-coordination": ("role", {"answerer", "coordinator"}),
}


@pytest.mark.parametrize("game", sorted(ROLES))
def test_every_llm_role_gets_demonstrations(game: str, tmp_path: Path) -> None:
    out = tmp_path / "d.jsonl"
    extra = ["--n", "4", "--comm-mode", "provide_and_seek"] if game == "einstein-puzzle" else []
    assert main(["finetune", "demos", "--env", game, "--out", str(out), "--episodes", "3", *extra]) == 0
    lines = list(read_demos(out))
    key, roles = ROLES[game]
    assert {line["meta"][key] for line in lines} == roles
    llm_roles = {e.role for e in available_policies(None, game) if e.name == "llm"}
    assert len(llm_roles) == 2  # (each game's two LLM roles, covered above)
    for line in lines:
        pc = prompt_completion(line)
        assert pc["completion"][0]["role"] == "assistant" and pc["prompt"][-1]["role"] == "user"
        assert isinstance(verified(line), bool)
    again = tmp_path / "again.jsonl"
    assert main(["finetune", "demos", "--env", game, "--out", str(again), "--episodes", "3", *extra]) == 0
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("not json\n", "line 2: not JSON"),
        ('{"messages": []}\n', "needs a prompt"),
        ('{"messages": [{"role": "user", "content": "q"}, {"role": "user", "content": "a"}]}\n', "assistant's reply"),
        ('{"messages": [{"role": "tool", "content": "q"}, {"role": "assistant", "content": "a"}]}\n', "message 0"),
    ],
)
def test_a_bad_demonstration_file_names_its_line(text: str, said: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        json.dumps({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})
        + "\n"
        + text
    )
    with pytest.raises(ValueError, match=said.replace("(", r"\(")) as err:
        list(read_demos(path))
    assert str(path) in str(err.value) and ("line 2" in str(err.value))


def test_einstein_only_flags_are_refused_elsewhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["finetune", "demos", "--env", "exchange-audit", "--out", str(tmp_path / "x"), "--n", "4"]) == 2
    assert "Einstein" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "said"),
    [
        ("sft", {"batch_size": 0}),
        ("sft", {"learning_rate": 0.0}),
        ("sft", {"seed": True}),
        ("sft", {"max_steps": 0, "epochs": 0}),
        ("grpo", {"num_generations": 1, "batch_size": 2}),
        ("grpo", {"batch_size": 3, "num_generations": 2}),
        ("grpo", {"max_reasks": 21}),
        ("grpo", {"temperature": 0}),
        ("tiny", {"hidden_size": 100, "heads": 3}),
        ("tiny", {"vocab_size": 10}),
    ],
)
def test_training_settings_out_of_range_are_one_line(make: str, said: dict) -> None:
    # (the Python API's checks; the command line's flags are range-checked by argparse before these)
    from eq_env.finetune.grpo import GRPOHyper
    from eq_env.finetune.sft import SFTHyper
    from eq_env.finetune.tiny import TinySpec

    kind = {"sft": SFTHyper, "grpo": GRPOHyper, "tiny": TinySpec}[make]
    with pytest.raises(ValueError) as err:
        kind(**said)
    line = str(err.value)
    assert "\n" not in line and any(name in line for name in said), line
