"""Generate the game, command and API pages of the docs from the package itself, at every build.

* ``games/<name>.md``: a game's manual, the docstring of its versioned module (``spec.module().__doc__``,
  Markdown in the PettingZoo style), for every game of ``eq_env.core.spec.registered_envs()``.
* ``commands/<name>.md``: an ``eq-env`` command's manual (its module's docstring, or the function's for the
  generic commands) and its ``--help``, for every subcommand of ``eq_env.cli.build_parser()``.
* ``api/<module>.rst``: the autodoc page of the package root, every ``eq_env.core`` module and each game's
  env/config/views modules.

The pages go to ``docs/games``, ``docs/commands`` and ``docs/api`` (not tracked: see ``docs/.gitignore``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path
from typing import Any

GENERATED = ("games", "commands", "api")


TRACKER = [  # the issue tracker's labels in the docstrings' version histories: not for a reader of the docs
    (re.compile(r" \(issue \d+(?:, item \d+)?\)"), ""),
    (re.compile(r", issue \d+:"), ":"),
    (re.compile(r"issue \d+'s\s+"), ""),
]


def untracked(text: str) -> str:
    for pattern, replacement in TRACKER:
        text = pattern.sub(replacement, text)
    return text


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:  # (an unchanged page keeps its time: no rebuild)
        path.write_text(text)


def _clean(directory: Path, keep: set[str]) -> None:
    for page in directory.glob("*"):
        if page.name not in keep and page.name != "index.md":
            page.unlink()


def game_pages(root: Path) -> list[str]:
    from eq_env.core.spec import registered_envs

    names = []
    for spec in registered_envs():
        doc = untracked(inspect.cleandoc(spec.module().__doc__ or ""))
        if not doc.lstrip().startswith("# "):
            doc = f"# {spec.name}\n\n{doc}"
        _write(root / "games" / f"{spec.name}.md", f"{doc}\n")
        names.append(spec.name)
    _clean(root / "games", {f"{n}.md" for n in names})
    return names


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _runs() -> dict[str, Any]:
    """Command name -> the function that runs it."""
    from eq_env.core import cli as core_cli
    from eq_env.core.spec import registered_envs

    runs: dict[str, Any] = dict(core_cli.GENERIC)
    for spec in registered_envs():
        for command in spec.commands():
            runs.setdefault(command.name, command.run)
    for name, command in core_cli._COMMANDS.items():
        runs.setdefault(name, command.run)
    return runs


def command_pages(root: Path) -> list[str]:
    from eq_env.cli import build_parser

    runs = _runs()
    names = []
    for name, sub in _subcommands(build_parser()).items():
        run = runs.get(name)
        module = importlib.import_module(run.__module__) if run is not None else None
        if module is None or module.__name__ == "eq_env.core.cli":  # a generic command: the core CLI's manual
            manual = inspect.getdoc(run) or "" if run is not None else ""
            source = "eq_env.core.cli"
            intro = "A generic command (every game has it): its manual is that of {py:mod}`eq_env.core.cli`."
        else:
            manual, source = inspect.getdoc(module) or "", module.__name__
            intro = f"Manual from `{source}`:"
        manual = untracked(manual)
        helptext = sub.format_help()
        current = module.__name__ if module is not None else "eq_env"  # (its local names are looked up there)
        page = (
            f"# eq-env {name}\n\n"
            f"{sub.description or ''}\n\n"
            f"{intro}\n\n"
            f"```{{eval-rst}}\n.. currentmodule:: {current}\n\n{manual}\n```\n\n"
            f"## Flags\n\nThe output of `eq-env {name} --help`:\n\n"
            f"```text\n{helptext}```\n"
        )
        _write(root / "commands" / f"{name}.md", page)
        names.append(name)
    _clean(root / "commands", {f"{n}.md" for n in names})
    return names


def api_modules() -> list[str]:
    import eq_env.core
    from eq_env.core.spec import registered_envs

    modules = ["eq_env"]
    modules += sorted(f"eq_env.core.{m.name}" for m in pkgutil.iter_modules(eq_env.core.__path__))
    for spec in registered_envs():
        package = spec.config.__module__.rsplit(".", 1)[0]
        for leaf in ("env", "config", "views"):
            name = f"{package}.{leaf}"
            if name not in modules and importlib.util.find_spec(name) is not None:
                modules.append(name)
    return modules


def api_pages(root: Path) -> list[str]:
    modules = api_modules()
    for name in modules:
        title = f"``{name}``"
        # the root re-exports the games' classes documented in their own modules: named there, not twice
        options = "   :no-members:\n" if name == "eq_env" else ""
        body = f"{title}\n{'=' * len(title)}\n\n.. automodule:: {name}\n{options}"
        _write(root / "api" / f"{name}.rst", body)
    _clean(root / "api", {f"{n}.rst" for n in modules})
    return modules


def markdown_manual(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A module whose docstring is a game's Markdown manual (``# Title`` first) is not RST: its API page links to
    the game's page, where the manual is rendered as Markdown."""
    lines[:] = untracked("\n".join(lines)).split("\n")
    if what != "module" or not lines or not lines[0].startswith("# "):
        return
    from eq_env.core.spec import registered_envs

    games = [s.name for s in registered_envs() if inspect.getdoc(s.module()) == inspect.getdoc(obj)]
    target = f":doc:`/games/{games[0]}`" if games else "the game's page"
    lines[:] = [f"The module's docstring is the game's manual (Markdown): {target}.", ""]


UNRESOLVED: list[str] = []


def _exists(dotted: str) -> bool:
    """Whether ``dotted`` names an importable module or an attribute of one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # (not a module: try a shorter prefix)
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False
        return True
    return False


def unresolved_as_code(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """A Python reference the docs have no page for shows as code, unlinked, if it names something that exists:
    a builtin or another library's name (no intersphinx offline), or a name of eq_env outside the API reference
    (a command module's helper, a private class, a module of another layer), looked up as written and relative
    to the module of the docstring. Everything so shown is listed in ``_build/unresolved.txt``. A reference to
    nothing that exists (a renamed or removed name) stays a warning, so -W fails the build."""
    if node.get("refdomain") != "py":
        return None
    target = str(node.get("reftarget", "")).lstrip("~.")
    module = node.get("py:module") or ""
    import builtins

    cls = node.get("py:class") or ""
    candidates = [target] + [f"{module.rsplit('.', k)[0]}.{target}" for k in range(module.count(".") + 1) if module]
    candidates += [f"{module}.{cls}.{target}"] if module and cls else []
    if hasattr(builtins, target) or target == "None" or any(_exists(c) for c in candidates):
        UNRESOLVED.append(f"{env.docname}: {node.get('reftype')} {target}")
        return contnode
    return None


def write_unresolved(app: Any, exception: Any) -> None:
    if exception is None:
        out = Path(app.outdir).parent / "unresolved.txt"
        out.write_text("".join(f"{line}\n" for line in sorted(set(UNRESOLVED))))


def generate(app: Any) -> None:
    root = Path(app.srcdir)
    game_pages(root)
    command_pages(root)
    api_pages(root)


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", generate)
    app.connect("autodoc-process-docstring", markdown_manual)
    app.connect("missing-reference", unresolved_as_code)
    app.connect("build-finished", write_unresolved)
    return {"parallel_read_safe": False, "version": "1"}


__all__ = ["api_modules", "command_pages", "game_pages", "generate", "setup"]
