"""Every shell block of the docs runs, as a reader runs it: each page's ``bash`` blocks in order, in one fresh
directory (so a block may use what an earlier one wrote: ``train`` then ``play``), by ``bash -euo pipefail``, with
no input (a human session ends at end of input), no API key and ``OPENAI_BASE_URL`` pointing at a closed port on
127.0.0.1 (nothing reaches a network). A command that exits non-zero fails the page, with its output.

The directives on the lines above a block (``test_docs_blocks.py`` lists them) say what is not run and why
(an API key, a paid model, an install), which block is a server started in another terminal, which ``python``
block is a file to save, and what CI shortens: ``<!-- ci: train --timesteps 3000 -->`` runs the block's
``eq-env train`` lines with ``--timesteps 3000`` appended. The numbers the pages print are checked by the tests
named in ``test_docs_blocks.py``; here, that each command runs.

This runs whole training runs and experiments (minutes), so it runs in the docs stage (``.ci/docs``, which sets
``EQ_ENV_REQUIRE_DOCS=1``); elsewhere it skips, saying so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs_blocks import ROOT, Block, blocks, ci_rules, script, sources

REQUIRED = os.environ.get("EQ_ENV_REQUIRE_DOCS") == "1"
CLOSED = "http://127.0.0.1:9/v1"  # (the discard port: an LLM call that slipped through fails fast, offline)
TIMEOUT = 900  # seconds a block may take before it counts as hung (the longest here takes about a minute)


def environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    bindir = str(Path(sys.executable).parent)  # (eq-env of the interpreter running the tests)
    env.update(OPENAI_BASE_URL=CLOSED, OMP_NUM_THREADS="1", HOME=str(tmp_path / "home"))
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


def _pages_with_shell() -> list[str]:
    return [name for name, text in sources().items() if name.startswith("docs/") and blocks(text, "bash")]


def parts(text: str) -> dict[str, list[Block]]:
    """A page's shell blocks by part (``<!-- part: NAME -->`` starts one; the blocks before the first: ``""``)."""
    out: dict[str, list[Block]] = {"": []}
    current = ""
    for block in blocks(text, "bash"):
        if "part" in block.directives:
            current = block.directives["part"].strip()
            assert current and current not in out, f"part {current!r} is empty or repeated"
            out[current] = []
        out[current].append(block)
    return {name: found for name, found in out.items() if found}


def _cases() -> list[object]:
    return [
        pytest.param(name, part, id=f"{name}:{part}" if part else name)
        for name in _pages_with_shell()
        for part in parts(sources()[name])
    ]


@pytest.mark.skipif(
    not REQUIRED, reason="runs every shell block of the docs in full (minutes): the docs stage, EQ_ENV_REQUIRE_DOCS=1"
)
@pytest.mark.parametrize(("name", "part"), _cases())
def test_shell_blocks_run(name: str, part: str, tmp_path: Path) -> None:
    text = sources()[name]
    mine = parts(text)[part]
    workdir = tmp_path / "reader"
    workdir.mkdir()
    (tmp_path / "home").mkdir()
    env = environment(tmp_path)
    for block in blocks(text, "python", "toml"):
        if "save-as" in block.directives:
            target = workdir / block.directives["save-as"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.body)
    servers: list[tuple[str, subprocess.Popen[str]]] = []
    ran = 0
    try:
        for block in mine:
            if block.why is not None:
                continue
            if "run-by" in block.directives:
                other = ROOT / block.directives["run-by"]
                assert other.is_file() and name in other.read_text(), f"{name}: run-by {other}, which names no {name}"
                continue
            body, used = script(block)
            assert used == len(ci_rules(block)), f"{name}: a ci rule matches no line of:\n{block.body}"
            if "serve" in block.directives:
                server = subprocess.Popen(
                    ["bash", "-c", f"exec {body.strip()}"], cwd=workdir, env=env, text=True,
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                )  # fmt: skip
                first = server.stdout.readline() if server.stdout else ""  # (the event: it printed its URL)
                why = "" if first.strip() or not server.stderr else server.stderr.read()
                assert first.strip(), f"{name}: the server printed nothing: {body}{why}"
                servers.append((body, server))
                continue
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", body], cwd=workdir, env=env, text=True,
                stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT,
            )  # fmt: skip
            expected = int(block.directives.get("exit", "0"))
            assert done.returncode == expected, (
                f"{name}: exit {done.returncode} (expected {expected}) from\n{body}\n"
                f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
            )
            ran += 1
    finally:
        for body, server in servers:
            server.send_signal(signal.SIGINT)
            err = server.communicate(timeout=60)[1]
            assert server.returncode == 0, f"{name}: {body.strip()} exited {server.returncode}: {err[-2000:]}"
    checked = [b for b in mine if b.why is None and "run-by" not in b.directives]
    assert ran == len(checked) - len(servers), f"{name}: {ran} of its shell blocks ran"


def test_the_runner_appends_ci_flags_to_the_lines_it_names() -> None:
    block = Block(
        "bash",
        "eq-env train --role proposer \\\n    --timesteps 60000   # long\neq-env play --proposer honest\n",
        {"ci": "train --timesteps 3000"},
    )
    body, used = script(block)
    train = "eq-env train --role proposer      --timesteps 60000 --timesteps 3000"  # (the continuation: spaces)
    assert body.splitlines() == [train, "eq-env play --proposer honest"]
    assert used == 1
    with pytest.raises(AssertionError, match="PREFIX FLAGS"):
        ci_rules(Block("bash", "", {"ci": "--timesteps 3"}))
