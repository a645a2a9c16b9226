"""What a user sees is what it was: every ``--help``, listing, registry and small run, against ``golden/``.

``golden/`` was captured with ``python tests/surface/capture.py tests/surface/golden --full`` before the
package's modules were moved into their layers; a move that changes a byte of it changes what users see.
After an intended change, capture again and review the diff.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"


def _capture(directory: Path, *flags: str) -> None:
    """Run the capture script in a fresh interpreter: the test session registers a toy game of its own."""
    subprocess.run([sys.executable, str(HERE / "capture.py"), str(directory), *flags], check=True)


def _files(directory: Path, part: str) -> dict[str, str]:
    root = directory / part
    return {str(p.relative_to(directory)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def _same(tmp: Path, part: str) -> None:
    want, got = _files(GOLDEN, part), _files(tmp, part)
    assert want, f"golden/{part} is empty"
    assert sorted(got) == sorted(want), (
        f"files differ: missing {sorted(set(want) - set(got))}, new {sorted(set(got) - set(want))}"
    )
    for name, text in want.items():
        if got[name] != text:
            diff = "".join(difflib.unified_diff(text.splitlines(True), got[name].splitlines(True), name, "now", n=1))
            pytest.fail(f"{name} changed:\n{diff[:4000]}")


@pytest.fixture(scope="module")
def fast_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("surface")
    _capture(directory)
    return directory


@pytest.mark.parametrize("part", ["help", "list"])
def test_every_help_and_listing_is_the_same(fast_capture: Path, part: str) -> None:
    _same(fast_capture, part)


def test_the_registries_are_the_same(fast_capture: Path) -> None:
    assert (fast_capture / "registries.json").read_text() == (GOLDEN / "registries.json").read_text()


@pytest.mark.slow
def test_the_small_runs_write_the_same_files(tmp_path: Path) -> None:
    _capture(tmp_path, "--full")
    _same(tmp_path, "runs")
