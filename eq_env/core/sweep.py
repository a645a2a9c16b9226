"""``eq-env sweep``: any grid of a game's parameters and policies, resumable, in parallel.

A sweep is a :class:`SweepSpec`: a game (``env``, default: the default game),
a preset, fixed overrides (``set``), a grid of game parameters whose Cartesian
product is taken, a list of policy specs per role (also crossed), seeds and
episodes. The policies of a role are listed under the role's plural
(a role ``seller`` lists ``sellers``) or in a ``policies`` table. A sweep comes from
a TOML, YAML or JSON file, from flags, or both (flags win)::

    # sweep.toml, for a game with the roles seller and buyer and the parameters price and rounds
    env = "market"            # a registered game (default: the default game)
    preset = "default"
    seeds = 5                 # or a list: [0, 1, 2]
    episodes = 200
    sellers = ["greedy", "fair:margin=0.1"]
    buyers = ["random"]

    [set]
    rounds = 10

    [grid]
    price = [1.0, 2.0, 4.0]

    $ eq-env sweep --config sweep.toml --out runs/market --jobs 2
    $ eq-env sweep --env market --grid price=1,2 --seller greedy --seller fair --out runs/b

(The README shows sweeps of the exchange–audit game.)

Writes ``results.jsonl`` (one record per condition and seed, appended as runs
finish; run the same command again after a kill and it resumes),
``summary.csv`` and ``summary.md`` (mean ± std over seeds per condition),
``llm_costs.csv`` when an LLM policy took part (tokens, dollars, failures),
``paired.csv`` (each condition minus its reference, seed by seed, with 95%
intervals: every condition of a seed saw the same chance events), ``sweep.png``
and ``sweep.json`` (the resolved spec).

**The reference of the paired differences** is the first condition, unless a
*baseline* names one (``--baseline``, :func:`run_sweep`'s ``baseline``): one or
more ``DIMENSION=VALUE`` (a grid parameter or a role, and one of its values),
or a bare value of one dimension. Each condition is then compared with the
condition of its own cell that has the baseline's values: the one that differs
from it only in the named dimensions. So ``--validator mymod:Mine --validator
rule --grid q=0.1,0.5 --baseline validator=rule`` gives "Mine − rule" at each
q, in ``paired.csv`` and in a table in ``summary.md``::

    $ eq-env sweep --grid q=0.1,0.5 --validator mymod:Mine --validator rule \
          --baseline validator=rule --out runs/mine-vs-rule

A spec file names it as ``baseline = "validator=rule"`` (or a list of them); ``--baseline`` replaces the
file's. A baseline on a dimension with one value is refused: every condition has it, so it compares nothing.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from json.decoder import JSONObject  # type: ignore[attr-defined]  # (the pure-Python object parser)
from json.scanner import py_make_scanner  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

from eq_env.core.executors import Executor
from eq_env.core.experiments import (
    ENGINES,
    Condition,
    ResultsStore,
    aggregate,
    canonical_spec,
    check_runs,
    llm_columns,
    llm_report,
    paired_difference,
    run_all,
)
from eq_env.core.policy import parse_scalar
from eq_env.core.records import MAX_DEPTH, too_deep
from eq_env.core.report import label, markdown_table, mean_std, plot_lines, write_csv
from eq_env.core.spec import EnvSpec, env_spec

__all__ = [
    "LongNumber",
    "SweepSpec",
    "first_repeat",
    "load_spec_file",
    "parse_value",
    "references",
    "repeated_policy",
    "resolve_baseline",
    "run_sweep",
    "spec_table",
]

_SPEC_KEYS = {"env", "preset", "set", "grid", "policies", "seeds", "first_seed", "episodes", "engine", "baseline"}


def parse_value(text: str, config: type | None = None, name: str = "") -> Any:
    """A parameter's value written as text (a flag, a spec file's string): read as the parameter
    ``name`` of the configuration class ``config`` takes it — a choice as the string itself, a flag as
    true/false, a number as a number, and None where the parameter allows it, spelled as its own word
    (``all``) or ``none``. Without the parameter: a number, a boolean, ``none`` as None, or the string."""
    text = text.strip()
    field = next((f for f in getattr(config, "parameters", tuple)() if f.name == name), None)
    meta = field.metadata if field is not None else {}
    if "choices" in meta:
        return text
    rng = meta.get("range")
    if rng is not None and rng.none is not None and text.lower() in (rng.none, "none"):
        return None
    if field is None and text.lower() == "all":  # (a parameter unknown here: the check that follows names it)
        return None
    return parse_scalar(text)


@dataclass
class SweepSpec:
    """What a sweep runs; see the module docstring for the file format.

    ``policies`` maps each role of the game to its list of specs (default: the game's default policy);
    ``baseline`` names the reference of the paired differences (:func:`resolve_baseline`; default: the first
    condition).
    """

    env: str = ""  # the game's id; "" is the default game
    preset: str = ""  # "" is the game's default preset
    set: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    policies: dict[str, list[str]] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: list(range(5)))
    episodes: int = 200
    engine: str = "auto"
    baseline: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        spec = env_spec(self.env or None)
        self.env = spec.id
        self.preset = self.preset or spec.config.DEFAULT_PRESET
        # a role left out plays the game's default policy (if it names one); an empty list is refused
        given, defaults = self.policies, spec.default_policies
        self.policies = {
            role: list(given[role]) if role in given else [defaults[role]] if role in defaults else []
            for role in spec.roles
        }

    @property
    def game(self) -> EnvSpec:
        """The game this sweep plays (``env`` is its id)."""
        return env_spec(self.env)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str = "sweep spec") -> SweepSpec:
        """The spec ``data`` describes, validated; every error is a ValueError that starts with ``source``."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{source}: a sweep spec must be a mapping (table) at the top level, got {data!r}")
        try:
            spec = cls._from_checked_mapping(data)
            spec.validate()
        except ValueError as err:
            raise ValueError(f"{source}: {err}") from None
        return spec

    @classmethod
    def _from_checked_mapping(cls, data: Mapping[str, Any]) -> SweepSpec:
        env = data.get("env")
        if env is not None and not isinstance(env, str):
            raise ValueError(f"env must be a game's id or name, got {env!r}")
        game = env_spec(env)
        plurals = {f"{role}s": role for role in game.roles}
        unknown = set(data) - _SPEC_KEYS - set(plurals)
        if unknown:
            raise ValueError(f"unknown key(s) {sorted(unknown)}; allowed: {sorted(_SPEC_KEYS | set(plurals))}")
        seeds = data.get("seeds", 5)
        first = data.get("first_seed", 0)
        if not _is_int(first) or first < 0:
            raise ValueError(f"first_seed must be a non-negative integer, got {first!r}")
        if _is_int(seeds):
            if seeds < 1:
                raise ValueError(f"seeds must be at least 1, got {seeds}")
            seeds = list(range(first, first + seeds))
        elif "first_seed" in data:
            raise ValueError("first_seed goes with a count of seeds, not with a list of seeds")
        if not isinstance(seeds, list) or not all(_is_int(s) and s >= 0 for s in seeds):
            raise ValueError(f"seeds must be a count or a list of non-negative integers, got {seeds!r}")
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds repeat: {seeds}")
        episodes = data.get("episodes", 200)
        if not _is_int(episodes) or episodes < 1:
            raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
        presets = game.config.PRESETS
        preset = data.get("preset", game.config.DEFAULT_PRESET)
        if not isinstance(preset, str) or preset not in presets:  # (a list is no key of PRESETS: say so first)
            raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(presets)}")
        grid, fixed = spec_table(data, "grid"), spec_table(data, "set")
        table = data.get("policies", {})
        if not isinstance(table, Mapping) or set(table) - set(game.roles):
            raise ValueError(
                f"policies must be a table of role = [specs] over the roles {list(game.roles)}, got {table!r}"
            )
        policies = {role: _as_list(specs, f"policies.{role}") for role, specs in table.items()}
        for key, role in plurals.items():
            if key in data:
                if role in policies:
                    raise ValueError(f"{key} and policies.{role} both list the {role}s; use one")
                policies[role] = _as_list(data[key], key)
        return cls(
            env=game.id,
            preset=preset,
            set={k: _config_value(game.config, k, v) for k, v in fixed.items()},
            grid={
                k: [_config_value(game.config, k, x) for x in (v if isinstance(v, (list, tuple)) else [v])]
                for k, v in grid.items()
            },
            policies=policies,
            seeds=seeds,
            episodes=episodes,
            engine=data.get("engine", "auto"),
            baseline=_baseline_items(data["baseline"]) if "baseline" in data else [],
        )

    def validate(self) -> None:
        presets = self.game.config.PRESETS
        if self.preset not in presets:
            raise ValueError(f"unknown preset {self.preset!r}; choose one of {sorted(presets)}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if not self.seeds:
            raise ValueError("a sweep needs at least one seed")
        empty = [role for role, specs in self.policies.items() if not specs]
        if empty:
            raise ValueError(f"a sweep needs at least one {empty[0]} policy")
        for name, values in self.grid.items():
            if not values:
                raise ValueError(f"grid parameter {name!r} has no values")
            repeated = first_repeat(values)
            if repeated is not None:  # the same condition twice: one run, two rows, a paired difference of 0
                raise ValueError(f"grid parameter {name!r} repeats the value {repeated[1]!r}")
        for role, specs in self.policies.items():
            key = f"{role}s"
            same = repeated_policy(specs, role, self.game)
            if same is not None:
                first, second = specs[same[0]], specs[same[1]]
                raise ValueError(
                    f"{key} repeat {first!r}"
                    if first == second
                    else f"{key}: {second!r} is the same policy as {first!r}"
                )
        both = set(self.set) & set(self.grid)
        if both:
            raise ValueError(f"{sorted(both)} are both fixed (set) and swept (grid); choose one")
        self.conditions()  # validates every configuration and policy spec

    def conditions(self) -> list[Condition]:
        """The Cartesian product, in a fixed order: grid values (in the order given), then each role's
        policies, in the game's role order."""
        base = self.game.config.from_preset(self.preset, **self.set)
        names, roles = list(self.grid), list(self.policies)
        out = []
        for values in itertools.product(*(self.grid[n] for n in names)):
            point = dict(zip(names, values, strict=True))
            config = base.replace(**point)
            for specs in itertools.product(*(self.policies[r] for r in roles)):
                policies = dict(zip(roles, specs, strict=True))
                out.append(Condition(config, policies, self.episodes, (*point.items(), *policies.items())))
        return out

    def varying(self) -> list[str]:
        """The dimensions that take more than one value, in label order."""
        dims = [n for n, v in self.grid.items() if len(v) > 1]
        return dims + [role for role, specs in self.policies.items() if len(specs) > 1]


def first_repeat(values: Sequence[Any]) -> tuple[int, Any] | None:
    """(index, value) of the first value equal to an earlier one (``0`` and ``0.0`` are, ``0`` and ``False``
    are not), or None."""
    for i, value in enumerate(values):
        if any(value == e and isinstance(value, bool) == isinstance(e, bool) for e in values[:i]):
            return i, value
    return None


def repeated_policy(specs: Sequence[str], role: str, env: Any = None) -> tuple[int, int] | None:
    """Indices (first, second) of two specs of the same policy (a spec, and the same with a default value
    spelled out), or None.

    A spec that does not name a policy is compared as written: the spec check refuses it, with its reason.
    """
    seen: dict[str, int] = {}
    for i, spec in enumerate(specs):
        try:
            key = canonical_spec(spec, role, env)
        except ValueError:
            key = spec
        if key in seen:
            return seen[key], i
        seen[key] = i
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def spec_table(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The spec's ``grid`` or ``set`` table (empty if absent), checked to be a table of game parameters."""
    table = data.get(key, {})
    shape = "parameter = [values]" if key == "grid" else "parameter = value"
    if not isinstance(table, Mapping):
        raise ValueError(f"{key} must be a table of {shape}, got {table!r}")
    if "preset" in table:  # not a game parameter: the starting configuration the parameters change
        raise ValueError(
            f"{key}: 'preset' is not a game parameter; choose the starting configuration with --preset "
            "(or the spec's top-level preset key)"
        )
    return dict(table)


def _as_list(value: Any, key: str) -> list[str]:
    specs = [value] if isinstance(value, str) else value
    if not isinstance(specs, (list, tuple)) or not all(isinstance(v, str) for v in specs):
        raise ValueError(f"{key} must be a policy spec or a list of policy specs, got {value!r}")
    return list(specs)


def _config_value(config: type, name: str, value: Any) -> Any:
    """Strings in a spec file read like flags (TOML has no null: a parameter that allows None takes its word)."""
    return parse_value(value, config, name) if isinstance(value, str) else value


class LongNumber:
    """An integer in a spec file with more digits than Python converts (``sys.get_int_max_str_digits()``,
    4300), kept as its length. It is no number, so the check of its key refuses it, naming the key, its
    range, and this as what it got ("an integer of 5000 digits"): no key takes a number that long."""

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"an integer of {self.digits} digits"


def _max_digits() -> int:
    """The digits ``int()`` converts here (a Python 3.10 before 3.10.7 has no limit: the default's)."""
    return int(getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300)


def _integer_literal(text: str) -> int | LongNumber:
    """A JSON integer: an int, or a :class:`LongNumber` past ``int()``'s limit."""
    digits = len(text.lstrip("-"))
    return LongNumber(digits) if digits > _max_digits() else int(text)


class _UniqueKeyJSONDecoder(json.JSONDecoder):
    """JSON that refuses an object with a key given twice (``json`` silently keeps the last one).

    Objects are parsed by the pure-Python scanner, which lets us see each one's pairs and where it
    opens (spec files are small)."""

    def __init__(self) -> None:
        super().__init__(parse_int=_integer_literal)

        def parse_object(
            s_and_end: tuple[str, int], strict: bool, scan_once: Any, hook: Any, pairs_hook: Any, memo: Any = None
        ) -> tuple[dict[str, Any], int]:
            text, start = s_and_end
            pairs, end = JSONObject(s_and_end, strict, scan_once, None, list, memo)
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:  # (the position is the object's opening brace: the scanner knows no more)
                    raise json.JSONDecodeError(f"duplicate key {key!r} in the object opening here", text, start - 1)
                seen.add(key)
            return dict(pairs), end

        self.parse_object = parse_object
        self.scan_once = py_make_scanner(self)


@functools.cache
def _unique_key_yaml_loader() -> type:
    """A SafeLoader that refuses a mapping with a key given twice (PyYAML silently keeps the last one),
    naming the line of the second."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: list[Any] = []
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *base": its keys may be overridden
                    continue
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.append(key)
            return super().construct_mapping(node, deep=deep)

        def construct_long_int(self, node: Any) -> Any:  # (an integer past int()'s limit: see LongNumber)
            digits = str(self.construct_scalar(node)).replace("_", "").lstrip("+-")
            if digits.isdigit() and len(digits) > _max_digits():
                return LongNumber(len(digits))
            return self.construct_yaml_int(node)

    UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", UniqueKeyLoader.construct_long_int)
    return UniqueKeyLoader


# TOML's tokens, as far as the checks before parsing need them: strings and comments, skipped whole (an unclosed
# one runs to its line's end or the text's, so no match fails and none backtracks); brackets, dots, bare words
# (keys, numbers, dates) and line ends
_TOML_TOKENS = re.compile(
    r'"""(?:[^\\]|\\[\s\S])*?(?:"""|\Z)'
    r"|'''[\s\S]*?(?:'''|\Z)"
    r'|"(?:[^"\\\n]+|\\[^\n])*(?:"|\\?(?=\n|\Z))'
    r"|'[^'\n]*(?:'|(?=\n|\Z))"
    r"|#[^\n]*"
    r"|[\[\]{}.\n]"
    r"|[A-Za-z0-9_+\-:]+"
)
_KEY_OR_FLOAT = re.compile(r"[ \t]*[.=]")  # what follows a key or a float's integer part
_LONG_MARK = "\ue000"  # (a private-use character: how a long integer is written for tomllib, see _toml_text)


def _toml_text(text: str, path: Path) -> str:
    """TOML text with every integer longer than ``int()`` converts written as a string ``tomllib`` reads
    (``_LONG_MARK`` and its length, which :func:`_long_numbers` makes a :class:`LongNumber`), checked first
    for nesting past ``MAX_DEPTH``: arrays and tables in brackets, and dotted keys (``a.b.c = 1``), which
    ``tomllib`` reads in a time quadratic in their length."""
    depth, dots, pieces, start, before = 1, 0, [], 0, ""  # (the document is a table, in no brackets)
    for match in _TOML_TOKENS.finditer(text):
        token = match.group()
        if token.startswith("#"):
            continue
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                at = text.count("\n", 0, match.start()) + 1
                raise ValueError(f"{path}:{at}: nested deeper than {MAX_DEPTH} levels; a sweep spec needs 3")
        elif token in ("]", "}"):
            depth = max(depth - 1, 1)  # (malformed text: tomllib says how)
        if token == ".":
            dots += 1
            if dots > MAX_DEPTH:
                at = text.count("\n", 0, match.start()) + 1
                raise ValueError(f"{path}:{at}: a dotted key of more than {MAX_DEPTH} parts; a sweep spec needs 3")
        elif before != ".":
            dots = 0  # (a word or a string not after a dot starts a new dotted run)
        digits = token.lstrip("+-").replace("_", "")
        # an integer value: not a float's part (a dot before or after it), nor a key (an "=" after it)
        if (
            digits.isdigit()
            and len(digits) > _max_digits()
            and before != "."
            and not _KEY_OR_FLOAT.match(text, match.end())
        ):
            pieces += [text[start : match.start()], f'"{_LONG_MARK}{len(digits)}"']
            start = match.end()
        before = token
    return "".join([*pieces, text[start:]])


def _long_numbers(data: Any, path: Path, how: str) -> None:
    """In place: integers too long to write in decimal (TOML's marked ones; a hexadecimal one in YAML or
    TOML) made :class:`LongNumber`; and nesting past ``MAX_DEPTH`` that the text's brackets did not show
    refused, saying ``how`` it came (YAML's aliases, which may even refer to themselves; TOML's tables and
    dotted keys). Each container is visited at most once per depth."""
    too_long = 10 ** _max_digits()  # (the least integer str() refuses to write)
    deepest: dict[int, int] = {}
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (dict, list)) or deepest.get(id(node), 0) >= depth:
            continue
        if depth > MAX_DEPTH:
            raise ValueError(f"{path}: nested deeper than {MAX_DEPTH} levels ({how}); a sweep spec needs 3")
        deepest[id(node)] = depth
        slots: list[tuple[Any, Any]] = list(node.items() if isinstance(node, dict) else enumerate(node))
        for slot, value in slots:
            if isinstance(value, str) and value.startswith(_LONG_MARK) and value[1:].isdigit():
                node[slot] = LongNumber(int(value[1:]))
            elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= too_long:
                node[slot] = LongNumber(int(value.bit_length() * math.log10(2)) + 1)  # (its digits, about)
            else:
                stack.append((value, depth + 1))


def _check_yaml_nesting(text: str, path: Path) -> None:
    """Refuse YAML nested past ``MAX_DEPTH`` (flow ``[[[...]]]``, block ``- - - x``...) before PyYAML's
    composer, which recurses once per level, builds it: its events are read, with no recursion, up to the
    first one too deep."""
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=_unique_key_yaml_loader()):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise ValueError(
                    f"{path}:{event.start_mark.line + 1}: nested deeper than {MAX_DEPTH} levels; a sweep spec needs 3"
                )
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def load_spec_file(path: Path) -> dict[str, Any]:
    """A sweep spec file (TOML, YAML or JSON, by extension) as a mapping.

    Every error names the file, and the line where the format tells it. Nesting deeper than ``MAX_DEPTH``
    (32) levels is refused before parsing (the parsers recurse once per level); an integer too long for
    ``int()`` is read as a :class:`LongNumber`, which the check of its key refuses with the key's range.
    """
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".yaml", ".yml", ".json"):
        raise ValueError(f"{path}: unknown spec format {suffix!r}; use .toml, .yaml or .json")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a UTF-8 text file ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise ValueError(f"{path}: cannot read the sweep spec: {err.strerror or err}") from None
    data: Any
    if suffix == ".json" and (line := too_deep(text)) is not None:  # (TOML's and YAML's: as they are read)
        raise ValueError(f"{path}:{line}: nested deeper than {MAX_DEPTH} levels; a sweep spec needs 3")
    if suffix == ".toml":
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.10
            import tomli as tomllib
        try:
            data = tomllib.loads(_toml_text(text, path))
        except tomllib.TOMLDecodeError as err:
            # the message ends "(at line L, column C)": lead with file:line like the other formats
            at = re.search(r"\(at line (\d+), column \d+\)$", str(err))
            message = str(err)[: at.start()].strip() if at else str(err)
            raise ValueError(f"{path}{':' + at.group(1) if at else ''}: invalid TOML: {message}") from None
    elif suffix == ".json":
        try:
            data = _UniqueKeyJSONDecoder().decode(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{err.lineno}: invalid JSON: {err.msg} (column {err.colno})") from None
    else:
        import yaml

        try:
            _check_yaml_nesting(text, path)
            data = yaml.load(text, Loader=_unique_key_yaml_loader())  # a SafeLoader
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            where = f":{mark.line + 1}" if mark is not None else ""
            raise ValueError(f"{path}{where}: invalid YAML: {problem}") from None
    if not isinstance(data, Mapping):
        raise ValueError(
            f"{path}: a sweep spec must be a mapping (table) of keys at the top level, got {type(data).__name__}"
        )
    how = {".toml": "its tables and dotted keys count", ".json": "its brackets"}.get(suffix, "through its aliases")
    _long_numbers(data, path, how)
    return dict(data)


def _baseline_items(value: Any) -> list[str]:
    """A spec file's ``baseline``: one ``NAME=VALUE`` string or a list of them (checked against the sweep's
    conditions by :func:`resolve_baseline`)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(x, str) and x.strip() for x in items):
        raise ValueError(
            f"baseline must be a NAME=VALUE string or a list of them (e.g. 'validator=rule'), got {value!r}"
        )
    return list(items)


def _shown_value(value: Any) -> str:
    return str(label(_cell(value)))


def _baseline_value(spec: SweepSpec, dim: str, text: str) -> Any:
    """The value of ``dim`` among the sweep's that ``text`` names (a policy by what it plays: ``rule`` and
    the same spec with a default spelled out are one), or None."""
    if dim in spec.grid:
        try:
            value = parse_value(text, spec.game.config, dim)
        except ValueError:
            return None
        return next((v for v in spec.grid[dim] if first_repeat([value, v]) is not None), None)
    try:
        wanted = canonical_spec(text, dim, spec.game)
    except (ValueError, TypeError):
        return None
    specs = spec.policies[dim]
    return next((s for s in specs if canonical_spec(s, dim, spec.game) == wanted), None)


def resolve_baseline(spec: SweepSpec, baseline: Sequence[str], flag: str = "--baseline") -> dict[str, Any]:
    """Dimension → value: the sweep's values that a baseline's items name (``DIMENSION=VALUE``, or a bare value
    of one dimension; see the module docstring). An item that names no dimension or value of the sweep, or a
    dimension with one value (every condition has it: it compares nothing), is a ValueError of one line that
    starts with ``flag`` and lists the sweep's conditions (its dimensions and their values)."""
    dims = [*spec.grid, *spec.policies]
    values = {d: list(spec.grid[d]) if d in spec.grid else list(spec.policies[d]) for d in dims}
    listing = "; ".join(f"{d}=" + " | ".join(_shown_value(v) for v in values[d]) for d in dims)
    chosen: dict[str, Any] = {}
    for text in baseline:
        name, eq, rest = text.partition("=")
        if eq and name.strip() in values:
            dim, found = name.strip(), _baseline_value(spec, name.strip(), rest.strip())
        else:  # a bare value (a policy spec may hold "="): the dimension whose values hold it
            hits = [(d, v) for d in dims if (v := _baseline_value(spec, d, text.strip())) is not None]
            if len(hits) > 1:
                both = " and ".join(d for d, _ in hits)
                raise ValueError(f"{flag} {text}: a value of {both}; name one ({flag} {hits[0][0]}={text})")
            dim, found = hits[0] if hits else ("", None)
        if found is None:
            raise ValueError(f"{flag} {text} names no condition of this sweep; its conditions: {listing}")
        if len(values[dim]) == 1:
            why = f"every condition has {dim}={_shown_value(found)}, so it compares nothing"
            raise ValueError(f"{flag} {text}: {why}; name a dimension with several values (its conditions: {listing})")
        if dim in chosen:
            raise ValueError(f"{flag} names {dim} twice; give one value for it")
        chosen[dim] = found
    return chosen


def references(conds: Sequence[Condition], baseline: Mapping[str, Any]) -> list[int]:
    """For each condition of ``conds`` (:meth:`SweepSpec.conditions`), the index of the condition its paired
    differences are taken against: with no ``baseline`` (:func:`resolve_baseline`), the first; else the
    condition of the same cell with the baseline's values (equal labels but in the baseline's dimensions)."""
    if not baseline:
        return [0] * len(conds)
    index = {tuple(_cell(v) for v in dict(c.labels).values()): i for i, c in enumerate(conds)}
    return [index[tuple(_cell(v) for v in {**dict(c.labels), **baseline}.values())] for c in conds]


def run_sweep(
    spec: SweepSpec,
    out: Path | str,
    *,
    jobs: int = 1,
    progress: bool | None = None,
    plot_x: str | None = None,
    plot_metrics: Sequence[str] | None = None,
    concurrency: int = 8,
    executor: Executor | None = None,
    baseline: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Run (or resume) the sweep and write its outputs; returns the summary rows (each with its
    condition's ``failed_episodes``: episodes LLM policies could not play, left out of the metrics).
    ``plot_metrics`` (default: the game's) are tabulated in ``summary.md`` and plotted. Runs go to
    ``executor`` (default: a local pool of ``jobs`` processes; see :mod:`eq_env.core.executors`), and
    the outputs do not depend on which. ``baseline`` names the reference of the paired differences
    (default: the spec's ``baseline``, else the first condition; :func:`references`)."""
    game = spec.game
    metrics_all = list(game.metrics)
    plot_metrics = tuple(plot_metrics) if plot_metrics is not None else game.plot_metrics or tuple(metrics_all[:4])
    unknown = [m for m in plot_metrics if m not in game.metrics]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; metrics: {', '.join(metrics_all)}")
    if plot_x is not None and plot_x not in spec.grid:
        raise ValueError(f"plot x {plot_x!r} is not a grid parameter; grid: {list(spec.grid)}")
    # everything that can be refused is refused before --out is made or sweep.json written
    spec.validate()
    conds = spec.conditions()
    chosen = resolve_baseline(spec, baseline) if baseline else resolve_baseline(spec, spec.baseline, "baseline")
    refs = references(conds, chosen)
    check_runs(conds, spec.engine, jobs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(json.dumps(asdict(spec), indent=2) + "\n")
    records = run_all(
        conds,
        spec.seeds,
        ResultsStore(out / "results.jsonl"),
        engine=spec.engine,
        jobs=jobs,
        progress=progress,
        desc="sweep",
        concurrency=concurrency,
        executor=executor,
    )
    llm_rows = llm_report(conds, records)
    if llm_rows:
        write_csv(out / "llm_costs.csv", llm_rows, llm_columns(game))
    agg = aggregate(conds, records)
    dims = [*spec.grid, *game.roles]
    failed: dict[str, int] = {}
    for r in {r["key"]: r for r in records}.values():  # a run shared by equal conditions counts once
        failed[r["condition"]] = failed.get(r["condition"], 0) + len(r.get("failed", ()))

    rows: list[dict[str, Any]] = []
    for c, summary, _ in agg:
        row: dict[str, Any] = {d: _cell(c.label(d)) for d in dims}
        row["condition"] = c.key
        row["failed_episodes"] = failed.get(c.key, 0)
        for metric, (mean, std) in summary.items():
            row[f"{metric}_mean"], row[f"{metric}_std"] = mean, std
        rows.append(row)
    columns = [*dims, "condition", "failed_episodes"] + [f"{m}_{s}" for m in metrics_all for s in ("mean", "std")]
    write_csv(out / "summary.csv", rows, columns)

    paired_rows, paired_table = [], []
    for i, (c, _, per_seed) in enumerate(agg):
        if refs[i] == i:  # (a reference itself: its difference is 0 by construction)
            continue
        ref_seeds = agg[refs[i]][2]
        cells: dict[str, str] = {}
        for metric in metrics_all:
            mean, low, high, n = paired_difference(per_seed, ref_seeds, metric)
            cell = {d: _cell(c.label(d)) for d in dims}
            paired_rows.append(
                {**cell, "metric": metric, "difference": mean, "ci_low": low, "ci_high": high, "seeds": n}
            )
            cells[metric] = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
        paired_table.append([label(c.label(d)) for d in spec.varying() or dims] + [cells[m] for m in plot_metrics])
    write_csv(out / "paired.csv", paired_rows, [*dims, "metric", "difference", "ci_low", "ci_high", "seeds"])

    shown = spec.varying() or dims
    table = markdown_table(
        [*shown, *plot_metrics],
        [
            [label(c.label(d)) for d in shown] + [mean_std(*summary[m], 3) for m in plot_metrics]
            for c, summary, _ in agg
        ],
    )
    if chosen:
        against = "against the condition of the same cell with " + ", ".join(
            f"{d}={label(v)}" for d, v in chosen.items()
        )
    else:
        against = "against the first condition (" + ", ".join(f"{d}={agg[0][0].label(d)}" for d in shown) + ")"
    paired = f"Paired differences {against} are in `paired.csv`."
    paired_md = ""
    if not paired_table:  # (one condition, its own reference: a baseline needs a dimension with several values)
        paired = "Paired differences need two conditions; this sweep has one (`paired.csv` holds its header only)."
    else:
        heading = "## Paired differences (condition − reference, mean [95% CI] over seeds)"
        paired_md = f"\n{heading}\n\n" + markdown_table([*shown, *plot_metrics], paired_table)
    (out / "summary.md").write_text(
        f"# Sweep: {len(conds)} conditions x {len(spec.seeds)} seeds x {spec.episodes} episodes\n\n"
        f"Preset `{spec.preset}`, fixed {spec.set or '{}'}; mean ± std over seeds. {paired}\n\n"
        f"{table}{paired_md}\n![sweep](sweep.png)\n"
    )
    _plot(out / "sweep.png", spec, agg, plot_x, plot_metrics)
    return rows


def _cell(value: Any) -> Any:
    return "none" if value is None else value  # a parameter set to None (e.g. "all"), not a missing value


def _plot(
    path: Path,
    spec: SweepSpec,
    agg: list[tuple[Condition, dict[str, tuple[float, float]], dict[int, dict[str, float]]]],
    plot_x: str | None,
    metrics: Sequence[str],
) -> None:
    varying = spec.varying()
    numeric = [d for d in varying if d in spec.grid and all(isinstance(v, (int, float)) for v in spec.grid[d])]
    x = plot_x or (numeric[0] if numeric else None)
    others = [d for d in varying if d != x]
    categorical = x is None or not all(isinstance(v, (int, float)) for v in spec.grid[x])
    groups: dict[tuple[Any, ...], list[tuple[Any, dict[str, tuple[float, float]]]]] = {}
    for c, summary, _ in agg:
        where = label(c.label(x)) if x else ", ".join(label(c.label(d)) for d in varying) or "all"
        groups.setdefault(tuple(c.label(d) for d in others) if x else (), []).append(
            (where if categorical or x is None else c.label(x), summary)
        )
    panels = []
    for metric in metrics:
        series = []
        for key, points in groups.items():
            name = ", ".join(f"{d}={v}" for d, v in zip(others, key, strict=True)) if x else ""
            series.append(
                {
                    "label": name,
                    "x": [p[0] for p in points],  # unnamed when alone: the y label says it
                    "y": [p[1][metric][0] for p in points],
                    "yerr": [0.0 if math.isnan(p[1][metric][1]) else p[1][metric][1] for p in points],
                }
            )
        panels.append({"ylabel": metric, "series": series})
    plot_lines(path, panels, xlabel=x or "condition")
