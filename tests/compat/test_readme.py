"""The docs' python blocks that need the compat extra, run as written: its ``<!-- needs:compat -->`` …
``<!-- /needs:compat -->`` regions (docs/tutorials/pettingzoo.md, "Using eq_env with SuperSuit/SB3,
TorchRL, Tianshou"), in order and in one
namespace, as a reader pastes them into one session. The main suite's docs runner
(``tests/docs/test_docs_blocks.py``) skips these regions.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from recipes import need

need("supersuit", "stable_baselines3", "torchrl", "tianshou", "torch")

pytestmark = [pytest.mark.slow, pytest.mark.compat]

README = (Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "pettingzoo.md").read_text()
REGIONS = re.findall(r"<!-- needs:compat -->(.*?)<!-- /needs:compat -->", README, re.S)
BLOCKS = [block for region in REGIONS for block in re.findall(r"```python\n(.*?)```", region, re.S)]


def test_the_readme_compat_blocks_run_in_order_in_one_namespace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(BLOCKS) >= 3, "the README's SuperSuit/SB3, TorchRL and Tianshou blocks are marked needs:compat"
    monkeypatch.chdir(tmp_path)  # (a library may write logs: not into the repository)
    namespace: dict[str, object] = {}
    for index, block in enumerate(BLOCKS):
        exec(compile(block, f"docs/tutorials/pettingzoo.md needs:compat python block {index}", "exec"), namespace)
        assert capsys.readouterr().out, f"needs:compat block {index} printed nothing"  # every example prints
