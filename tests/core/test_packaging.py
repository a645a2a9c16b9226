"""The package as a user installs it: a wheel, not the source tree.

Tests import the source tree (``pip install -e``), which has every file; a wheel carries only what
``pyproject.toml`` declares. Here the wheel is built from the tracked files, installed into a
directory of its own, and used from there: every data file the source tree tracks must be in it, and
every prompt template must render from the installed copy.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The repository's folders and where a wheel installs them: one top-level import package.
INSTALLED_AS = {"eq_env": "eq_env", "agents": "eq_env/agents", "baselines": "eq_env/baselines"}

RENDER_EVERY_TEMPLATE = """
import sys
# an editable install of the source tree would serve any module the wheel lacks: take its finders away
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path_hooks[:] = [h for h in sys.path_hooks if "_Editable" not in repr(h)]
sys.path[:] = [p for p in sys.path if "__editable__" not in p]
sys.path_importer_cache.clear()
from pathlib import Path
import eq_env.agents, eq_env
from eq_env.agents.exchange_audit.policies import PROMPT_DIR, render_proposer_prompt, render_validator_prompt
from eq_env.baselines import HonestProposer
from eq_env import exchange_audit_v0
from eq_env.exchange_audit.spaces import decode_proposer_observation, encode_submission

target = Path(sys.argv[1]).resolve()
assert Path(eq_env.agents.__file__).resolve().is_relative_to(target), eq_env.agents.__file__  # the installed copy
assert Path(eq_env.__file__).resolve().is_relative_to(target), eq_env.__file__
env = exchange_audit_v0.env()
env.reset(seed=0)
view = decode_proposer_observation(env.observe("proposer_0"))
env.step(encode_submission(HonestProposer(request="always").submission(view)))
validator_view = env.unwrapped.game.validator_view
import eq_env.core.redact, eq_env.agents.client  # (modules the templates do not need, from the wheel too)
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
        if (ROOT / name).is_symlink():  # eq_env/agents -> ../agents: a link, as git keeps it
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(ROOT / name), src / name)
        elif (ROOT / name).is_file():
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
    top, data = INSTALLED_AS, []
    for f in tracked_files():
        folder, _, rest = f.partition("/")
        if folder in top and not f.endswith(".py") and "__pycache__" not in f and not (ROOT / f).is_symlink():
            data.append(f"{top[folder]}/{rest}")
    assert "eq_env/agents/exchange_audit/prompts/proposer_v1.txt" in data  # (the list is not empty by accident)
    with zipfile.ZipFile(wheel) as zf:
        shipped = set(zf.namelist())
    assert [f for f in sorted(data) if f not in shipped] == []


@pytest.mark.slow
def test_the_wheel_installs_one_top_level_package_and_every_module(wheel: Path) -> None:
    """``agents`` and ``baselines`` are other projects' import names (openai-agents, OpenAI Baselines):
    a wheel that installed them overwrote those projects, or was overwritten by them."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"eq_env"}
    for folder, installed in INSTALLED_AS.items():
        modules = {f"{installed}/{f.partition('/')[2]}" for f in tracked_files() if f.startswith(f"{folder}/")
                   and f.endswith(".py")}  # fmt: skip
        assert modules and modules <= set(names), sorted(modules - set(names))


@pytest.mark.slow
def test_the_wheel_declares_the_mit_licence_by_its_spdx_expression_and_carries_the_licence_file(wheel: Path) -> None:
    """PEP 639: ``License-Expression: MIT`` and the LICENSE file in ``.dist-info/licenses/`` (the table form
    ``license = {text = ...}`` gave only a free-text ``License:`` field, and no file)."""
    with zipfile.ZipFile(wheel) as zf:
        (metadata,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        headers = zf.read(metadata).decode().partition("\n\n")[0].splitlines()
        licences = [n for n in zf.namelist() if ".dist-info/licenses/" in n]
        shipped = {n.rpartition(".dist-info/licenses/")[2]: zf.read(n) for n in licences}
    assert "License-Expression: MIT" in headers
    assert "License-File: LICENSE" in headers
    assert not [h for h in headers if h.startswith("License:")]  # (the deprecated free-text field is gone)
    assert shipped == {"LICENSE": (ROOT / "LICENSE").read_bytes()}


def test_the_citation_file_cites_this_version_and_the_three_papers() -> None:
    """CITATION.cff (CFF 1.2.0) names the package's version and licence as pyproject.toml does, and the
    papers of the three games by their arXiv links (a new version that forgot the file would cite the old)."""
    import yaml

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    import eq_env

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert cff["cff-version"] == "1.2.0"
    assert {"authors", "message", "title"} <= set(cff)
    assert (cff["version"], cff["license"]) == (eq_env.__version__, project["license"]) == ("0.1.0", "MIT")
    assert project["license-files"] == ["LICENSE"]
    assert importlib.metadata.version("eq-env") == eq_env.__version__  # the one copy: eq_env/version.py
    papers = {r["url"] for r in cff["references"]}
    assert papers == {f"https://arxiv.org/abs/{n}" for n in ("2604.09917", "2510.25595", "2506.08292")}
    assert all({"authors", "title", "type", "year"} <= set(r) for r in cff["references"])


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


CO_INSTALLED = """
import runpy, sys
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path_hooks[:] = [h for h in sys.path_hooks if "_Editable" not in repr(h)]
sys.path[:] = [p for p in sys.path if "__editable__" not in p]
sys.path_importer_cache.clear()
import re
from pathlib import Path
readme = Path(sys.argv[1]).read_text()
readme = re.sub(r"<!-- needs:compat -->.*?<!-- /needs:compat -->", "", readme, flags=re.S)  # (tests/compat's)
blocks = re.findall(r"```python\\n(.*?)```", readme, re.S)
assert blocks
for i, block in enumerate(blocks):
    exec(compile(block, f"README.md python block {i}", "exec"), {})
from eq_env.cli import main
assert main(["play", "--proposer", "llm", "--dry-run"]) == 0
import eq_env
assert eq_env.__file__.startswith(sys.argv[2]), eq_env.__file__
print("imported:", sorted(m for m in sys.modules if m.split(".")[0] in ("agents", "baselines")))
"""


@pytest.mark.slow
@pytest.mark.parametrize("beside", ["openai-agents", "a user package named agents"])
def test_the_readme_examples_run_from_a_wheel_beside_another_agents_package(
    wheel: Path, tmp_path: Path, beside: str
) -> None:
    """A project of the user's with its own ``agents/``, or OpenAI's Agents SDK (import name ``agents``)
    installed beside: eq_env's code reached the wrong ``agents`` (ModuleNotFoundError), or pip overwrote
    eq_env's."""
    target, work = tmp_path / "site", tmp_path / "project"
    work.mkdir()
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target)]
    if beside == "openai-agents":
        sdk = sorted(Path(os.environ.get("EQ_ENV_WHEELHOUSE", "/nonexistent")).glob("openai_agents-*.whl"))
        got = subprocess.run([*pip, *(map(str, sdk[-1:]) if sdk else ["openai-agents"])], capture_output=True,
                             text=True)  # fmt: skip
        if got.returncode != 0:  # (a machine that reaches no package registry; CI sets EQ_ENV_REQUIRE_REGISTRY=1)
            why = f"openai-agents cannot be installed here (no registry?): {got.stderr.strip()[-200:]}"
            if os.environ.get("EQ_ENV_REQUIRE_REGISTRY") == "1":
                pytest.fail(why)
            pytest.skip(why)
    else:  # the user's own package, first on the path (the working directory)
        (work / "agents").mkdir()
        (work / "agents" / "__init__.py").write_text("raise ImportError('the user project agents package')\n")
    subprocess.run([*pip, str(wheel)], check=True, capture_output=True)
    assert (target / "agents").exists() == (beside == "openai-agents")  # eq_env installed no agents/ of its own
    env = {**os.environ, "PYTHONPATH": str(target), "EQ_ENV_MODEL": "fake"}
    out = subprocess.run([sys.executable, "-c", CO_INSTALLED, str(ROOT / "README.md"), str(target)], cwd=work,
                         env=env, capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert "imported: []" in out.stdout, out.stdout[-500:]


DOTTED_NAME = re.compile(r"[a-z_]+(\.[a-z_0-9]+)+(:\w+)?")  # a module path, maybe with an attribute
FILE_SUFFIXES = ("csv", "md", "png", "json", "jsonl", "txt", "html")  # "baselines.csv": a file's name, not a module


def test_no_code_imports_agents_or_baselines_by_its_folder_name() -> None:
    """Imported as ``agents.x``, the code finds whichever ``agents`` comes first on the path (a user's, the
    Agents SDK's), or eq_env's twice under two names: everything imports ``eq_env.agents`` (function
    bodies and strings given to importlib included)."""
    import ast

    found = []
    for name in tracked_files():
        if not name.endswith(".py") or (ROOT / name).is_symlink():
            continue
        tree = ast.parse((ROOT / name).read_text(), name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                dotted = DOTTED_NAME.fullmatch(node.value) and node.value.rsplit(".", 1)[1] not in FILE_SUFFIXES
                modules = [node.value] if dotted else []
            else:
                continue
            found += [f"{name}:{node.lineno}: {m}" for m in modules if m.split(".")[0] in ("agents", "baselines")]
    assert found == [], found
