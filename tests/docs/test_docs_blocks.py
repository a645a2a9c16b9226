"""Every code block of the docs runs here, as written.

* ``python`` blocks: each page's blocks in order, in one namespace (as a reader pastes them into one session),
  from a fresh directory; the blocks of the games' manuals (the docstrings the game pages are generated from)
  likewise. The ``<!-- needs:compat -->`` … ``<!-- /needs:compat -->`` regions need the compat extra's
  libraries and run in ``tests/compat/test_readme.py`` (``.ci/compat``) instead.
* ``bash`` / ``console`` blocks: every ``eq-env`` command line is parsed by the real parser of the game its
  ``--env`` names (a flag that no longer exists fails here), every ``python -m MODULE`` names a module that
  exists. The commands are run in full, with their printed numbers compared, by the tests named beside each
  page: ``tests/core/test_readme_tasks.py`` (tasks, training), ``tests/exchange_audit/test_cli_and_docs.py``
  (Table 1, sweeps), ``tests/core/test_bench_cli.py`` (bench).
* A block preceded by ``<!-- not-run: REASON -->`` is not run; the reason is shown beside it in the page's
  source and must be given.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import re
import shlex
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GENERATED = ("games", "commands", "api")  # written by docs/_ext/eq_env_pages.py at build time: not tracked
BLOCK = re.compile(r"(?:<!-- not-run: (?P<why>[^>]*?) -->\n)?```(?P<lang>[a-z]*)\n(?P<body>.*?)```", re.S)


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] not in (*GENERATED, "_build"))


def blocks(text: str, *langs: str) -> list[tuple[str, str | None]]:
    """(body, not-run reason) of the blocks of the given languages, the needs:compat regions left out."""
    text = re.sub(r"<!-- needs:compat -->.*?<!-- /needs:compat -->", "", text, flags=re.S)
    return [(m["body"], m["why"]) for m in BLOCK.finditer(text) if m["lang"] in langs]


def manuals() -> dict[str, str]:
    import eq_env  # noqa: F401  (registers the games)
    from eq_env.core.spec import registered_envs

    return {f"manual of {s.name}": inspect.getdoc(s.module()) or "" for s in registered_envs()}


def sources() -> dict[str, str]:
    return {**{str(p.relative_to(ROOT)): p.read_text() for p in pages()}, **manuals()}


SLOW = {"docs/guide/exchange-audit.md"}  # (about 4 s: a best response)


def _python_cases() -> list[object]:
    cases: list[object] = []
    for name, text in sources().items():
        if blocks(text, "python"):
            marks = [pytest.mark.slow] if name in SLOW else []
            cases.append(pytest.param(name, marks=marks, id=name))
    return cases


def test_the_docs_have_pages_and_blocks() -> None:
    names = {str(p.relative_to(DOCS)) for p in pages()}
    assert {"index.md", "tutorials/pettingzoo.md", "tutorials/policies.md", "tutorials/bench.md"} <= names
    assert sum(len(blocks(t, "python")) for t in sources().values()) >= 10


def test_every_not_run_block_says_why() -> None:
    for name, text in sources().items():
        for body, why in blocks(text, "python", "bash", "console"):
            assert why is None or why.strip(), f"{name}: a not-run block without a reason:\n{body}"


@pytest.mark.parametrize("name", _python_cases())
def test_python_blocks_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)  # a block may write (an LLM cache, a run directory): not into the repository
    namespace: dict[str, object] = {}
    started = time.perf_counter()
    for index, (body, why) in enumerate(blocks(sources()[name], "python")):
        if why is None:
            exec(compile(body, f"{name} python block {index}", "exec"), namespace)
    if name.startswith("docs/"):  # (a page's example shows what it gives; a manual's shows a loop)
        assert capsys.readouterr().out, f"{name}: its python blocks print nothing"
    if name not in SLOW:  # (the fast suite stays fast: a page whose blocks take seconds is in SLOW)
        assert time.perf_counter() - started < 5, f"{name}'s blocks take seconds: add the page to SLOW"


def _command_lines(text: str) -> list[str]:
    lines = []
    for body, why in blocks(text, "bash", "console"):
        if why is not None:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if line and not line.startswith("#"):
                lines.extend(part.strip() for part in re.split(r"&&|;|\|", line) if part.strip())
    return lines


def _parse(line: str) -> None:
    from eq_env.cli import build_parser

    placeholders = {"URL": "http://127.0.0.1:8000/v1"}  # (a page's stand-in for the reader's own value)
    argv = [placeholders.get(a, a) for a in shlex.split(line.split(" #", 1)[0].rstrip("& "))[1:]]
    game = argv[argv.index("--env") + 1] if "--env" in argv else None
    parser = build_parser(game)
    parser.exit_on_error = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.exit_on_error = False
    try:
        parser.parse_args(argv)
    except (
        SystemExit,
        argparse.ArgumentError,
    ) as err:  # (argparse exits on some errors even so: a missing required flag)
        raise AssertionError(f"eq-env refuses the docs' command: {line}") from err


@pytest.mark.parametrize("name", [n for n, t in sources().items() if _command_lines(t)])
def test_shell_commands_parse(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    for line in _command_lines(sources()[name]):
        if line.startswith("eq-env "):
            if re.search(r"\s--help\b|\s-h\b", line):
                continue
            _parse(line)
        elif m := re.match(r"python3? -m ([\w.]+)", line):
            assert importlib.util.find_spec(m[1]) is not None, f"{name}: no module {m[1]}: {line}"


def _anchors(markdown: str) -> set[str]:
    """GitHub's (and MyST's) anchors of a page's headings."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    heads = re.findall(r"^#{1,6} (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md"])
def test_the_front_pages_links_into_the_repository_resolve(name: str) -> None:
    """README.md and CONTRIBUTING.md link into docs/ by relative paths (GitHub renders them): each names a file
    that is tracked here, and an anchor names one of its headings."""
    text = (ROOT / name).read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", re.sub(r"```.*?```", "", text, flags=re.S))
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert local, f"{name} links into the docs"
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path if path else ROOT / name
        assert target.is_file(), f"{name}: {link} (no file)"
        if anchor:
            assert anchor in _anchors(target.read_text()), f"{name}: {link} (no heading)"
