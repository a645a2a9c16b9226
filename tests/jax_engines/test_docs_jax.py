"""The docs' python blocks that need the jax extra, run as written: the ``<!-- needs:jax -->`` …
``<!-- /needs:jax -->`` regions of docs/tutorials/jax.md, in order and in one namespace, as a reader pastes them
into one session (the main suite's docs runner, ``tests/docs/test_docs_blocks.py``, skips these regions); and
what the page says they print. They run in a fresh interpreter with XLA's default floating-point code (this
directory's conftest turns fused multiply-add off for the equality tests, and the trained network depends on it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jax_need import need

need("jax", "jaxmarl", "optax")

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "jax.md").read_text()
REGIONS = re.findall(r"<!-- needs:jax -->(.*?)<!-- /needs:jax -->", PAGE, re.S)
BLOCKS = [block for region in REGIONS for block in re.findall(r"```python\n(.*?)```", region, re.S)]


@pytest.mark.slow
def test_the_jax_page_blocks_run_in_order_and_print_what_it_says(tmp_path: Path) -> None:
    assert len(BLOCKS) == 5
    marker = "----- block {} -----"
    source = "".join(f"print({marker.format(i)!r})\n{block}" for i, block in enumerate(BLOCKS))
    (tmp_path / "page.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    done = subprocess.run(
        [sys.executable, "page.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = re.split(r"----- block \d -----\n", done.stdout)[1:]
    assert len(printed) == 5 and all(printed), done.stdout  # every block prints
    assert printed[0].startswith("{'proposer_0': (16,), 'validator_0': (20,)}")
    assert printed[1].strip() == "-0.128"  # (the proposer's mean payoff: artifact 647, always approved)
    # the figure the page gives after the block
    shown = re.search(r"That prints `(\d+\.\d)% of the best response`", PAGE)
    assert shown, "the page gives the figure the training block prints"
    # the Einstein engine's block (the page's third), then the proposer's training, then self-play's
    assert printed[2].startswith("{'player_0': (282,), 'player_1': (282,)}\n1 "), printed[2]
    assert printed[3].startswith(f"{shown[1]}% of the best response"), printed[3]
    shown = re.search(r"That prints `(\d+\.\d)% success`", PAGE)
    assert shown, "the page gives the figure the self-play block prints"
    assert printed[4].startswith(f"{shown[1]}% success"), printed[4]
