"""Every code block of the docs runs here, as written.

* ``python`` blocks: each page's blocks in order, in one namespace (as a reader pastes them into one session),
  from a fresh directory; the blocks of the games' manuals (the docstrings the game pages are generated from)
  likewise. The ``<!-- needs:compat -->`` … ``<!-- /needs:compat -->`` regions need the compat extra's
  libraries and run in ``tests/compat/test_readme.py`` (``.ci/compat``) instead; the ``<!-- needs:jax -->``
  regions need the jax extra and run in ``tests/jax_engines/test_docs_jax.py`` (``.ci/jax``).
* ``bash`` / ``console`` blocks: every ``eq-env`` command line is parsed by the real parser of the game its
  ``--env`` names (a flag that no longer exists fails here), every ``python -m MODULE`` names a module that
  exists. The commands are run in full, with their printed numbers compared, by the tests named beside each
  page: ``tests/core/test_readme_tasks.py`` (tasks, training), ``tests/exchange_audit/test_cli_and_docs.py``
  (Table 1, sweeps), ``tests/core/test_bench_cli.py`` (bench).
* ``bash`` blocks run in full, each page's in order in a fresh directory, in ``test_docs_commands.py``
  (``.ci/docs``); the directives that steer that run are comments on the lines just above a block, read
  here by :func:`blocks`:

  ``<!-- not-run: REASON -->``
      not run (here nor there); the reason must be given (an API key, a paid model, a package install).
  ``<!-- serve -->``
      a server the reader starts in another terminal: started in the background, waited for until it prints
      its first line, stopped (Ctrl-C, exit 0) when the page's blocks are done.
  ``<!-- save-as: FILE -->``
      (a ``python`` or ``toml`` block) the file the page tells the reader to save, written (under the page's
      directory) before its shell blocks run; a ``toml`` block must be saved or not run.
  ``<!-- run-by: TEST_FILE -->``
      run in full there, with what it prints checked (the runner does not run it twice; that file must exist
      and name the page).
  ``<!-- exit: STATUS -->``
      the exit status the block ends with, when it is not 0 (the page says why: failures reported by status).
  ``<!-- part: NAME -->``
      this block and the ones after it (to the next ``part``) run in a fresh directory of their own, as a test
      of their own (in parallel with the page's other parts): for independent commands of a long page.
  ``<!-- ci: PREFIX FLAGS | PREFIX FLAGS ... -->``
      what CI changes to keep the run short: each ``eq-env PREFIX`` line of the block runs with ``FLAGS``
      appended (a later flag wins: ``--timesteps 3000`` over the page's ``--timesteps 60000``).
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GENERATED = ("games", "commands", "api")  # written by docs/_ext/eq_env_pages.py at build time: not tracked
BLOCK = re.compile(r"(?P<directives>(?:<!-- [a-z-]+(?:: [^>]*?)? -->\n)*)```(?P<lang>[a-z]*)\n(?P<body>.*?)```", re.S)
DIRECTIVE = re.compile(r"<!-- (?P<key>[a-z-]+)(?:: (?P<arg>[^>]*?))? -->")
DIRECTIVES = ("not-run", "serve", "save-as", "ci", "run-by", "exit", "part")


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] not in (*GENERATED, "_build"))


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page and the directives on the lines above it."""

    lang: str
    body: str
    directives: dict[str, str]

    @property
    def why(self) -> str | None:
        """The reason it is not run, or None when it runs."""
        return self.directives.get("not-run")


def blocks(text: str, *langs: str) -> list[Block]:
    """The blocks of the given languages, the needs:compat and needs:jax regions left out."""
    text = re.sub(r"<!-- needs:compat -->.*?<!-- /needs:compat -->", "", text, flags=re.S)
    text = re.sub(r"<!-- needs:jax -->.*?<!-- /needs:jax -->", "", text, flags=re.S)
    found = []
    for m in BLOCK.finditer(text):
        if m["lang"] in langs:
            directives = {d["key"]: (d["arg"] or "") for d in DIRECTIVE.finditer(m["directives"])}
            found.append(Block(m["lang"], m["body"], directives))
    return found


def ci_rules(block: Block) -> list[tuple[list[str], list[str]]]:
    """``<!-- ci: PREFIX FLAGS | ... -->`` as (prefix words after ``eq-env``, flags to append)."""
    rules = []
    for part in filter(None, (p.strip() for p in block.directives.get("ci", "").split("|"))):
        words = shlex.split(part)
        cut = next((i for i, w in enumerate(words) if w.startswith("--")), len(words))
        assert 0 < cut < len(words), f"a ci rule is PREFIX FLAGS, got {part!r}"
        rules.append((words[:cut], words[cut:]))
    return rules


def script(block: Block) -> tuple[str, int]:
    """The block as run: continuation lines joined, each ``eq-env`` line given its ci flags; and how many
    ci rules matched a line (each must match one)."""
    rules = ci_rules(block)
    used: set[int] = set()
    lines = []
    for line in block.body.replace("\\\n", " ").splitlines():
        stripped = line.strip()
        if stripped.startswith("eq-env "):
            command = stripped.partition(" #")[0]  # (a trailing comment: the flags go before it)
            words = shlex.split(command)[1:]
            for index, (prefix, flags) in enumerate(rules):
                if words[: len(prefix)] == prefix:
                    command = f"{command.rstrip()} {shlex.join(flags)}"
                    used.add(index)
            line = command
        lines.append(line)
    return "\n".join(lines) + "\n", len(used)


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


def test_every_directive_is_known_and_not_run_says_why() -> None:
    for name, text in sources().items():
        for block in blocks(text, "python", "bash", "console"):
            unknown = set(block.directives) - set(DIRECTIVES)
            assert not unknown, f"{name}: unknown directive {unknown} (known: {DIRECTIVES}) above:\n{block.body}"
            assert block.why is None or block.why.strip(), f"{name}: a not-run block without a reason:\n{block.body}"
            saved_shell = "save-as" in block.directives and block.lang in ("bash", "console")
            assert not saved_shell, f"{name}: save-as on a shell block"
        for block in blocks(text, "toml", "json", "yaml", "ini"):  # (a file: saved for the commands, or not run)
            kept = block.directives.keys() & {"save-as", "not-run"}
            assert kept, f"{name}: a {block.lang} block neither saved nor not-run:\n{block.body}"


@pytest.mark.parametrize("name", _python_cases())
def test_python_blocks_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)  # a block may write (an LLM cache, a run directory): not into the repository
    namespace: dict[str, object] = {}
    started = time.perf_counter()
    for index, block in enumerate(blocks(sources()[name], "python")):
        if block.why is None:
            exec(compile(block.body, f"{name} python block {index}", "exec"), namespace)
    shown = [b for b in blocks(sources()[name], "python") if "save-as" not in b.directives]
    if name.startswith("docs/") and shown:  # (a page's example shows what it gives; a manual's shows a loop)
        assert capsys.readouterr().out, f"{name}: its python blocks print nothing"
    if name not in SLOW:  # (the fast suite stays fast: a page whose blocks take seconds is in SLOW)
        assert time.perf_counter() - started < 5, f"{name}'s blocks take seconds: add the page to SLOW"


def _command_lines(text: str) -> list[str]:
    lines = []
    for block in blocks(text, "bash", "console"):
        if block.why is not None:
            continue
        for line in script(block)[0].splitlines():  # (the lines as CI runs them: its flags parse too)
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
