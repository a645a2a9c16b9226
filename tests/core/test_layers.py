"""The layers import only downward, and no files import each other in a loop.

Every module's imports are read from its syntax tree, those inside function bodies included (they run
as surely as the others, only later), as are ``importlib.import_module("...")`` calls with a literal
name. The layers, lowest first:

0. the core (``eq_env.core``, ``eq_env.version``): knows no game;
1. the games (``eq_env.<game>``, their ``eq_env.<game>_v0`` entries, and the package root, which
   registers them): rules, environments, views, engines, records, analysis of the rules;
2. who plays them (``eq_env.agents``, ``eq_env.baselines``): LLM, scripted and RL policies;
3. what is done with them (``eq_env.studies``, the ``eq-env`` command): commands, experiments, bench
   tasks and tools.

A module may import its own layer and those below it, and no modules import each other in a loop.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GAMES = ("exchange_audit", "einstein_puzzle", "belief_coordination")
CORE, GAME, PLAY, STUDIES = range(4)
NAMES = ("the core", "a game", "agents/baselines", "studies/CLI")


def _sources() -> Iterator[tuple[str, Path]]:
    """(module name, file) of every module of the package, agents and baselines included once."""
    for top, prefix in (("eq_env", "eq_env"), ("agents", "eq_env.agents"), ("baselines", "eq_env.baselines")):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT / top).with_suffix("").parts
            if top == "eq_env" and parts[0] in ("agents", "baselines"):
                continue  # the installed names of agents/ and baselines/ (symlinks), read there
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((prefix, *parts)), path


def _imports(module: str, path: Path, known: set[str]) -> Iterator[str]:
    """The package modules ``module`` imports (a name imported from a package counts as the submodule of
    that name when there is one, else as the package)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in known else origin for a in node.names]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            targets = [node.args[0].value]
        else:
            continue
        for target in targets:
            while target and target not in known:  # "eq_env.x.y" where y is a name, not a module
                target = target.rpartition(".")[0]
            if target.startswith("eq_env") and target != module:
                yield target


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return GAME  # the root registers the games
    head = parts[1]
    if head in ("core", "version"):
        return CORE
    if head in GAMES or head.removesuffix("_v0") in GAMES or head == "exchange_audit_repeated_v0":
        return GAME
    if head in ("agents", "baselines"):
        return PLAY
    return STUDIES


@functools.cache  # (three tests read it; the files do not change during a run)
def import_graph() -> dict[str, set[str]]:
    sources = dict(_sources())
    known = set(sources)
    return {module: set(_imports(module, path, known)) for module, path in sources.items()}


def upward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a, targets in graph.items() for b in targets if layer(b) > layer(a)}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_reads_every_module() -> None:
    graph = import_graph()
    assert {"eq_env.core.spec", "eq_env.exchange_audit.env", "eq_env.agents.client", "eq_env.cli"} <= set(graph)
    assert "eq_env.core.config" in graph["eq_env.core.spec"]  # a top-level import is seen...
    assert layer("eq_env.core.spec") < layer("eq_env.exchange_audit.env") < layer("eq_env.agents.llm")


def test_a_function_body_import_and_a_circle_are_seen(tmp_path: Path) -> None:
    """The reader sees what the layer rules are about: an import inside a function, a literal import_module."""
    module = tmp_path / "m.py"
    module.write_text(
        "def late():\n    from eq_env.agents import llm\n\n"
        "def later():\n    import importlib\n    importlib.import_module('eq_env.studies.bench')\n"
    )
    known = {"eq_env.core.spec", "eq_env.agents", "eq_env.agents.llm", "eq_env.studies.bench"}
    found = set(_imports("eq_env.core.spec", module, known))
    assert found == {"eq_env.agents.llm", "eq_env.studies.bench"}
    assert upward({"eq_env.core.spec": found}) == {("eq_env.core.spec", m) for m in found}
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_runs_up_the_layers() -> None:
    found = sorted(upward(import_graph()))
    assert not found, "imports from a lower layer into a higher one:\n" + "\n".join(
        f"  {a} ({NAMES[layer(a)]}) imports {b} ({NAMES[layer(b)]})" for a, b in found
    )


def test_no_files_import_each_other_in_a_loop() -> None:
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join("  " + " <-> ".join(c) for c in found)
