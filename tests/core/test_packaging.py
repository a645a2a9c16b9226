"""The package as a user installs it: a wheel, not the source tree.

Tests import the source tree (``pip install -e``), which has every file; a wheel carries only what
``pyproject.toml`` declares. Here the wheel is built from the tracked files, installed into a
directory of its own, and used from there: every data file the source tree tracks must be in it, and
every prompt template must render from the installed copy.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("eq_env", "agents", "baselines")

RENDER_EVERY_TEMPLATE = """
import sys
# an editable install of the source tree would serve any module the wheel lacks: take its finders away
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path_hooks[:] = [h for h in sys.path_hooks if "_Editable" not in repr(h)]
sys.path[:] = [p for p in sys.path if "__editable__" not in p]
sys.path_importer_cache.clear()
from pathlib import Path
import agents, eq_env
from agents.policies import PROMPT_DIR, render_proposer_prompt, render_validator_prompt
from baselines import HonestProposer
from eq_env import exchange_audit_v0
from eq_env.exchange_audit.spaces import decode_proposer_observation, encode_submission

target = Path(sys.argv[1]).resolve()
assert Path(agents.__file__).resolve().is_relative_to(target), agents.__file__  # the installed copy
assert Path(eq_env.__file__).resolve().is_relative_to(target), eq_env.__file__
env = exchange_audit_v0.env()
env.reset(seed=0)
view = decode_proposer_observation(env.observe("proposer_0"))
env.step(encode_submission(HonestProposer(request="always").submission(view)))
validator_view = env.unwrapped.game.validator_view
import eq_env.core.redact, agents.client  # (modules the templates do not need, from the wheel too)
assert Path(eq_env.core.redact.__file__).resolve().is_relative_to(target), eq_env.core.redact.__file__
templates = sorted(PROMPT_DIR.glob("*.txt"))
assert templates, f"no prompt template in {PROMPT_DIR}"
for path in templates:
    role, _, version = path.stem.partition("_")
    render = render_proposer_prompt if role == "proposer" else render_validator_prompt
    messages = render(view if role == "proposer" else validator_view, version)
    assert "<observation>" in messages[-1]["content"], path
    print(path.name)
"""


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [f for f in out.stdout.decode().split("\0") if f]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the tracked files (the source tree stays untouched)."""
    src = tmp_path_factory.mktemp("src")
    for name in tracked_files():
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    dist = tmp_path_factory.mktemp("dist")
    # without build isolation where setuptools is at hand: no download, a second instead of ten
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", *isolation, "-w", str(dist)],
                   check=True, capture_output=True)  # fmt: skip
    (built,) = dist.glob("*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_carries_every_tracked_data_file(wheel: Path) -> None:
    data = sorted(
        f for f in tracked_files()
        if f.split("/")[0] in PACKAGES and not f.endswith(".py") and "__pycache__" not in f
    )  # fmt: skip
    assert "agents/exchange_audit/prompts/proposer_v1.txt" in data  # (the list is not empty by accident)
    with zipfile.ZipFile(wheel) as zf:
        shipped = set(zf.namelist())
    assert [f for f in data if f not in shipped] == []


@pytest.mark.slow
def test_every_prompt_template_renders_from_an_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)  # fmt: skip
    # the wheel's copy first on the path; dependencies from this environment; run outside the source tree
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, "-c", RENDER_EVERY_TEMPLATE, str(target)], cwd=tmp_path, env=env,
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    rendered = out.stdout.split()
    assert rendered == sorted(p.name for p in (ROOT / "agents" / "exchange_audit" / "prompts").glob("*.txt"))
