"""The one small interface every policy implements: scripted, LLM or RL — and their registry.

A policy plays one role of one game. It is given an agent's observation
exactly as ``env.last()`` returns it, and answers with an action in that
agent's action space::

    class FirstLegal(BasePolicy):
        role = "player"
        def act(self, observation):
            return int(observation["action_mask"].argmax())   # the first legal action

``reset(seed)`` is called once before a run of episodes; a policy that
randomises draws from ``self.rng`` so runs are reproducible. Nothing else is
required: the runner, experiments and sweeps know only this interface.

Optional methods: ``async aact(observation) -> (action, info)``, which the
concurrent runner awaits (LLM policies: ``info`` holds tokens, fallbacks,
transport, and ends up in the episode record); ``act_batch``, for a game's
batch engine; ``async check()``, awaited before a run's first episode. A
policy that cannot act in one episode raises :class:`PolicyError` (that
episode fails, the run goes on); one that cannot act at all in this run raises
:class:`PolicySetupError` (the run stops, nothing recorded). A *privileged*
policy (an oracle that plans with the hidden state) implements
``act_privileged(observation, env) -> (action, info)`` (or its coroutine
``aact_privileged``): the runner passes it the episode's raw environment, whose
state it may read. Such a policy is a baseline, never a
player under study.

A :class:`JointPolicy` acts for several agents at once (a centralised
controller, a QMIX-style coordinator): ``act_joint({agent: observation})``
returns ``{agent: action}``. The runner asks it when the first of its agents
must act, with the observations of all of them, and plays each answer when
its agent's turn comes.

Policies are also made from short specs, ``"name"`` or
``"name:key=value,key=value"`` (``"planner:depth=3,guess=true"``),
by :func:`make_policy`. The registry is keyed by (game, name, role), so
``random`` or ``llm`` can exist in several games. Every package's policies, this one's included, come
through the ``eq_env.policies`` entry point group: each entry point names a module that calls
:func:`register_policy` when imported, and all are imported on the first lookup (this package's, in its
``pyproject.toml``: ``eq_env.baselines.<game>`` and ``eq_env.agents.<game>``).

A spec may also name a class (or any factory) by its import path, as Gymnasium's entry points do:
``"module:Class"`` or ``"pkg.module:Class,key=value,..."`` (the parameters after a comma, since the
colon is taken). A colon followed by a name without ``=`` is an import path; followed by ``key=value``
it starts parameters, so ``planner:guess=true`` stays the registered ``planner``. The module must be
importable: installed, on ``PYTHONPATH``, or in the current directory (looked at last); the class is
called with the parameters, converted by its signature (:func:`spec_parameters`), and with ``role=`` the
role asked for when it takes a ``role`` parameter; what it makes must be a policy (``role``, ``reset``,
``act`` or another of the methods above) of that role. Whatever it raises when made (``SystemExit`` too) is
a ValueError of one line naming the spec; whatever it raises when it acts, a :class:`UserPolicyError`
naming the spec and the episode. A run's key holds :func:`source_fingerprint` of its module.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import inspect
import json
import os
import re
import sys
import types
import typing
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "REQUIRED",
    "BasePolicy",
    "JointPolicy",
    "Policy",
    "PolicyEntry",
    "PolicyError",
    "PolicySetupError",
    "Role",
    "UserPolicyError",
    "available_policies",
    "format_policy_spec",
    "imported_spec",
    "is_import_path",
    "join_spec",
    "make_policy",
    "new_run",
    "on_new_run",
    "parse_policy_spec",
    "parse_scalar",
    "policy_entry",
    "register_policy",
    "source_fingerprint",
    "spec_parameters",
]

Role = str  # a role of the game the policy plays, as its EnvSpec names it


class PolicyError(RuntimeError):
    """A policy could not produce an action at all (e.g. its model endpoint stayed down after all
    retries). The runners record the episode as failed, with this message, and go on.

    ``info`` holds what the failed attempt cost and saw (requests, retries, tokens billed, errors);
    the failed episode's record keeps it.
    """

    def __init__(self, message: str, info: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.info: dict[str, Any] = dict(info or {})


class PolicySetupError(ValueError):
    """A policy cannot act at all in this run (its endpoint is unreachable or rejects the key, its
    recording is missing...). Unlike :class:`PolicyError`, which fails one episode, this stops the run
    at once, before anything is recorded: no episode could succeed, and retrying each would only
    cost time."""


class UserPolicyError(PolicyError):
    """A policy made from a ``module:Class`` spec (a user's own code) raised while acting. Its message is one
    line naming the spec, the method, the episode and the exception: ``policy 'my_validators:Mine' raised
    RuntimeError: boom in act (episode 3, seed 0)``; the exception itself is its ``__cause__``. Like any
    :class:`PolicyError`, the concurrent runner records that episode as failed; the synchronous one stops.
    Registered policies' exceptions are left as they are (a bug of ours keeps its traceback)."""


@runtime_checkable
class Policy(Protocol):
    """What the runner needs of a policy."""

    role: Role

    def reset(self, seed: int | None = None) -> None:
        """Prepare for a run of episodes; seed the policy's own randomness."""

    def act(self, observation: Mapping[str, Any]) -> Any:
        """An action in the role's action space for this observation."""


@runtime_checkable
class JointPolicy(Protocol):
    """A policy for several agents at once (see the module docstring)."""

    role: Role

    def reset(self, seed: int | None = None) -> None:
        """Prepare for a run of episodes; seed the policy's own randomness."""

    def act_joint(self, observations: Mapping[str, Any]) -> Mapping[str, Any]:
        """An action for each agent whose observation is given."""


class BasePolicy:
    """Convenience base: a seeded ``self.rng`` and a readable ``name``."""

    role: ClassVar[Role]

    def __init__(self) -> None:
        self.rng = np.random.default_rng()

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Mapping[str, Any]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"{self.name}()"


_RUN_HOOKS: list[Callable[[], None]] = []
_run_depth = 0


def on_new_run(hook: Callable[[], None]) -> None:
    """Call ``hook`` whenever a new run starts (see :func:`new_run`); e.g. the LLM client forgets the
    failures of the previous run, so that a run started again asks for them again."""
    if hook not in _RUN_HOOKS:
        _RUN_HOOKS.append(hook)


@contextlib.contextmanager
def new_run() -> Iterator[None]:
    """The scope of one run. The runners (``evaluate``, ``play_concurrent``, ``run_all``...) enter it;
    only the outermost scope starts a run, so the conditions of one ``reproduce`` are one run, in which
    the two regimes of a state share their answers — and their failures."""
    global _run_depth
    if _run_depth == 0:
        for hook in _RUN_HOOKS:
            hook()
    _run_depth += 1
    try:
        yield
    finally:
        _run_depth -= 1


class _Required:
    """The "default" of a parameter a policy cannot do without (``sb3``'s ``path``)."""

    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class PolicyEntry:
    name: str
    role: Role
    factory: Callable[..., Any]
    summary: str
    env: str = ""  # the id of the game it plays

    def parameters(self) -> dict[str, Any]:
        """The factory's keyword parameters and their defaults (:data:`REQUIRED` for one without)."""
        sig = inspect.signature(self.factory)
        return {
            p.name: REQUIRED if p.default is p.empty else p.default
            for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }


# Keyed by (game id, name, role): one name may serve several roles (e.g. "llm") and several games.
_REGISTRY: dict[tuple[str, str, Role], PolicyEntry] = {}
_entry_points_loaded = False
ENTRY_POINTS = "eq_env.policies"


def register_policy(name: str, role: Role, factory: Callable[..., Any], summary: str = "", *, env: Any = None) -> None:
    """Make ``factory`` available to :func:`make_policy` and the CLI as ``name``, for ``role`` of the game
    ``env`` (an id, short name or spec; None: the default game)."""
    from eq_env.core.spec import env_spec

    spec = env_spec(env)
    if role not in spec.roles:
        raise ValueError(f"{spec.name} has no role {role!r}; its roles: {', '.join(spec.roles)}")
    doc = summary or _first_sentence(inspect.getdoc(factory) or "")
    _REGISTRY[(spec.id, name, role)] = PolicyEntry(name, role, factory, doc, spec.id)


def _first_sentence(doc: str) -> str:
    """A docstring's first sentence as plain text, for ``eq-env policies``: its lines joined (a line cut
    mid-sentence read as a truncated one) and reST roles and literals unwrapped."""
    paragraph = " ".join(re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0].split())
    plain = re.sub(
        r":[\w:]+:`(~?)([^`<]+?)(?:\s*<[^>]*>)?`", lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], paragraph
    ).replace("``", "")
    return re.split(r"(?<=\.)\s+(?=[A-Z(])", plain, maxsplit=1)[0]


def _load_providers(env_id: str) -> None:
    """Import the modules the ``eq_env.policies`` entry points name (every installed package's, this one's
    too), once."""
    global _entry_points_loaded
    if not _entry_points_loaded:
        _entry_points_loaded = True
        from eq_env.core.spec import load_entry_points

        load_entry_points(ENTRY_POINTS)


def available_policies(role: Role | None = None, env: Any = None) -> list[PolicyEntry]:
    """Registered policies of the game ``env`` (default: the default game), sorted by role, then name;
    only those of ``role`` if given."""
    from eq_env.core.spec import env_spec

    spec = env_spec(env)
    _load_providers(spec.id)
    order = {r: i for i, r in enumerate(spec.roles)}
    entries = [e for (game, _, _), e in _REGISTRY.items() if game == spec.id and role in (None, e.role)]
    return sorted(entries, key=lambda e: (order.get(e.role, len(order)), e.name))


def policy_entry(name: str, role: Role | None = None, env: Any = None) -> PolicyEntry:
    """The registered policy ``name`` (of ``role`` when the name serves several roles) of the game ``env``,
    or the class an import path ``module:Class`` names (see the module docstring)."""
    if ":" in name:
        return _imported_entry(name, role, env)
    matches = [e for e in available_policies(role, env) if e.name == name]
    if not matches:
        wrong_role = [e for e in available_policies(None, env) if e.name == name]
        if wrong_role:
            raise ValueError(f"policy {name!r} plays the {wrong_role[0].role}, not the {role}")
        choices = ", ".join(sorted({e.name for e in available_policies(role, env)}))
        raise ValueError(f"unknown policy {name!r}; available{f' {role}s' if role else ''}: {choices}")
    if len(matches) > 1:
        roles = " and ".join(e.role for e in matches)
        raise ValueError(f"policy {name!r} exists for the {roles}; say which (make_policy(spec, role=...))")
    return matches[0]


ACTING = ("act", "aact", "act_joint", "aact_joint", "act_privileged", "aact_privileged")  # a policy has one
_INTERFACE = "a policy has role, reset(seed) and act(observation): eq_env.core.policy.Policy"


def _import_user_module(module_name: str) -> Any:
    """``module_name`` imported, looked for in the current directory too when it is not installed: as
    ``uvicorn main:app`` does, since ``eq-env`` is a script and a user's ``my_policies.py`` sits beside
    them, not on the script's path. The directory goes last, so it never shadows an installed module."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        top = module_name.partition(".")[0]
        here = os.getcwd()
        if (
            err.name != top
            or here in sys.path
            or not (os.path.isfile(os.path.join(here, f"{top}.py")) or os.path.isdir(os.path.join(here, top)))
        ):
            raise
        sys.path.append(here)
        return importlib.import_module(module_name)


def _imported_entry(name: str, role: Role | None, env: Any) -> PolicyEntry:
    """The entry of the import path ``module:attribute``: its module imported, the attribute found and
    checked to make policies, each failure a ValueError naming the spec and what was expected."""
    from eq_env.core.spec import env_spec

    spec = env_spec(env)
    module_name, _, attribute = name.partition(":")
    if any(e.name == module_name for e in available_policies(None, spec)):
        raise ValueError(f"policy spec {name!r}: expected key=value, got {attribute!r}")  # "planner:guess"
    try:
        module = _import_user_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is not None and (module_name == err.name or module_name.startswith(err.name + ".")):
            raise ValueError(
                f"policy {name!r}: no module named {err.name!r} (a module:Class spec imports it: "
                "install it, put its directory on PYTHONPATH, or run from that directory)"
            ) from None
        raise ValueError(f"policy {name!r}: importing {module_name!r} failed: {err}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # (a user's module: its error, or its exit, said in one line, not as a traceback)
        raise ValueError(f"policy {name!r}: importing {module_name!r} failed: {type(err).__name__}: {err}") from None
    factory: Any = module
    for part in attribute.split("."):
        if not hasattr(factory, part):
            raise ValueError(f"policy {name!r}: module {module_name!r} has no attribute {attribute!r}")
        factory = getattr(factory, part)
    if not callable(factory):
        raise ValueError(
            f"policy {name!r}: {attribute} is not a class or factory of policies (it is of type "
            f"{type(factory).__name__}; {_INTERFACE})"
        )
    if isinstance(factory, type) and not any(callable(getattr(factory, m, None)) for m in ACTING):
        raise ValueError(
            f"policy {name!r}: {attribute} is not a policy class: it has no act(observation) ({_INTERFACE})"
        )
    declared = getattr(factory, "role", None) if isinstance(factory, type) else None
    if isinstance(declared, str):
        if declared not in spec.roles:
            raise ValueError(
                f"policy {name!r} plays {declared!r}, which {spec.name} has not; its roles: {', '.join(spec.roles)}"
            )
        if role is not None and declared != role:
            raise ValueError(f"policy {name!r} plays the {declared}, not the {role}")
    takes_role = "role" in _signature_names(factory)
    if takes_role and role is not None:  # one class for several roles (both seats): told which it plays
        factory = functools.partial(factory, role=role)
    summary = _first_sentence(inspect.getdoc(factory) or "") if isinstance(factory, type) else ""
    return PolicyEntry(name, role or (declared if isinstance(declared, str) else ""), factory, summary, spec.id)


def _signature_names(factory: Any) -> set[str]:
    try:
        return set(inspect.signature(factory).parameters)
    except (TypeError, ValueError):  # (a builtin without a signature)
        return set()


def _takes_any_keyword(factory: Any) -> bool:
    try:
        return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return False


def parse_scalar(text: str) -> Any:
    """``true``/``false`` as booleans, ``none`` as None, numbers (in ASCII digits: ``int("٤")`` would be 4)
    as int or float, anything else as is."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    if not text.isascii():
        return text
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _dotted(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def is_import_path(name: str) -> bool:
    """Whether a spec's name is ``module`` or ``module:attribute`` in dotted identifiers: the part before a
    colon that may name a module, or a whole import path."""
    module, colon, attribute = name.strip().partition(":")
    return _dotted(module) and (not colon or _dotted(attribute))


def parse_policy_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name:k=v,k=v"`` → ``("name", {"k": v})``, values read by :func:`parse_scalar`; an import path
    ``"module:Class,k=v"`` → ``("module:Class", {"k": v})`` (see the module docstring).

    A value in double quotes is a JSON string, kept as a string byte for byte: ``model="007"``,
    ``model="none"``, ``base_url="http://h/v1?a=1,b=2"``. Nothing inside quotes can add a parameter,
    and a parameter given twice is an error, so a value filled in by a flag cannot change another.
    """
    name, raw = _spec_items(spec)
    return name, {key: text if quoted else parse_scalar(text) for key, (text, quoted) in raw.items()}


def _spec_items(spec: str) -> tuple[str, dict[str, tuple[str, bool]]]:
    """A spec's name and each parameter's text as written (a quoted one decoded) and whether it was quoted:
    what :func:`parse_policy_spec` reads, before :func:`parse_scalar` guesses a type."""
    name, colon, rest = spec.strip().partition(":")
    if colon:
        first, _, after = rest.partition(",")
        if "=" not in first and is_import_path(name) and _dotted(first.strip()):
            name, rest = f"{name.strip()}:{first.strip()}", after  # "module:Class[,key=value...]"
    items: dict[str, tuple[str, bool]] = {}
    i, n = 0, len(rest)
    while i < n:
        if rest[i] in " \t,":
            i += 1
            continue
        eq = rest.find("=", i)
        comma = rest.find(",", i)
        if eq < 0 or (0 <= comma < eq):
            item = rest[i : comma if comma >= 0 else n].strip()
            raise ValueError(f"policy spec {spec!r}: expected key=value, got {item!r}")
        key = rest[i:eq].strip()
        if not key:
            raise ValueError(f"policy spec {spec!r}: a value without a key at {rest[i:].strip()!r}")
        j = eq + 1
        while j < n and rest[j] in " \t":
            j += 1
        if j < n and rest[j] == '"':
            try:
                value, j = _JSON.raw_decode(rest, j)
            except ValueError:
                raise ValueError(f"policy spec {spec!r}: unterminated or invalid quoted value for {key!r}") from None
            tail = rest[j:].lstrip(" \t")
            if tail and not tail.startswith(","):
                raise ValueError(f"policy spec {spec!r}: expected ',' after the quoted value of {key!r}")
            i = n - len(tail)
            item_value = (value, True)
        else:
            end = rest.find(",", j)
            end = n if end < 0 else end
            item_value, i = (rest[j:end].strip(), False), end
        if key in items:
            raise ValueError(f"policy spec {spec!r}: {key!r} is given twice")
        items[key] = item_value
    return name.strip(), items


_JSON = json.JSONDecoder()


# What a parameter of a module:Class spec may be converted to, and how the error says it.
_KINDS: dict[Any, str] = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    type(None): "none",
}


def spec_parameters(spec: str, entry: PolicyEntry) -> dict[str, Any]:
    """The parameters of ``spec`` as ``entry``'s factory is called with them.

    A registered policy's are as :func:`parse_policy_spec` reads them (the policy checks its own). An import
    path's (``module:Class,k=v``) are converted by the class's (or factory's) signature, each from its text
    as written:

    * by its annotation, when it is ``bool`` (``true``/``false`` in any case, as :func:`parse_scalar` reads
      them for registered policies), ``int``, ``float`` (an integer too), ``str`` (the text as is:
      ``name=007`` is ``"007"``), ``None`` (``none``), a ``Literal`` of such values, or an ``Optional`` /
      union of these (``none`` is None, a number the union's number type, anything else its ``str``);
    * else, when it is not annotated, by its default's type (bool, int, float or str);
    * else (no annotation and no such default, an annotation of another type such as ``Any`` or a class,
      or a parameter taken by ``**kwargs``): as today, read by :func:`parse_scalar` (``true``/``false``,
      ``none``, numbers, anything else a string).

    A quoted value (``name="007"``) is a string, so it suits only a ``str``. A value that does not convert
    is a ValueError of one line naming the spec, the parameter, the type expected and the value.
    """
    name, raw = _spec_items(spec)
    if ":" not in name:
        return {key: text if quoted else parse_scalar(text) for key, (text, quoted) in raw.items()}
    try:
        declared = inspect.signature(entry.factory).parameters
    except (TypeError, ValueError):  # (a builtin without a signature)
        declared = {}  # type: ignore[assignment]
    out: dict[str, Any] = {}
    for key, (text, quoted) in raw.items():
        read = text if quoted else parse_scalar(text)
        parameter = declared.get(key)
        accepted = _accepted_by(parameter, entry.factory) if parameter is not None else None
        if accepted is None:
            out[key] = read
            continue
        kinds, literals, said = accepted
        value = _converted(text, read, quoted, kinds, literals)
        if value is _REFUSED:
            expected = " or ".join(
                [_KINDS[k] for k in kinds] + ([f"one of {', '.join(map(repr, literals))}"] if literals else [])
            )
            got = f"the quoted string {text!r}" if quoted else repr(text)
            raise ValueError(f"policy {spec.strip()!r}: {key} must be {expected} ({said}), got {got}")
        out[key] = value
    return out


_REFUSED: Any = object()


def _accepted_by(parameter: inspect.Parameter, factory: Any) -> tuple[tuple[Any, ...], tuple[Any, ...], str] | None:
    """(the types in :data:`_KINDS`, the Literal values, how to say where they come from) that ``parameter``
    accepts, from its annotation or its default; None when neither says (the value stays as read)."""
    annotation = parameter.annotation
    if isinstance(annotation, str):  # (from __future__ import annotations): evaluated in the factory's module
        try:
            annotation = eval(annotation, _globals_of(factory))  # (the user's own annotation)
        except Exception:
            return None
    if annotation is parameter.empty:
        default = parameter.default
        if type(default) in (bool, int, float, str):
            return (type(default),), (), f"as its default {default!r} is"
        return None
    members = _union_members(annotation)
    kinds = tuple(m for m in members if m in _KINDS)
    literals = tuple(v for m in members if typing.get_origin(m) is typing.Literal for v in typing.get_args(m))
    if len(kinds) + sum(typing.get_origin(m) is typing.Literal for m in members) < len(members) or not members:
        return None  # an annotation of another type (Any, a class, list[int]...): not ours to judge
    return kinds, literals, f"{parameter.name}: {inspect.formatannotation(annotation)}"


def _union_members(annotation: Any) -> list[Any]:
    """``int | None`` → ``[int, NoneType]`` (nested unions flattened); anything else → ``[annotation]``."""
    if annotation is None:
        return [type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _union_members(arg)]
    return [annotation]


def _converted(text: str, read: Any, quoted: bool, kinds: tuple[Any, ...], literals: tuple[Any, ...]) -> Any:
    """``text`` (``read`` as :func:`parse_scalar` reads it) as the first of ``kinds``/``literals`` it suits,
    or :data:`_REFUSED`."""
    for literal in literals:  # (by type too: Literal[1] is not True)
        if (type(literal) is type(read) and literal == read) or (isinstance(literal, str) and literal == text):
            return literal
    if not quoted:
        if read is None and type(None) in kinds:
            return None
        if isinstance(read, bool):
            if bool in kinds:
                return read
        elif isinstance(read, int):
            if int in kinds:
                return read
            if float in kinds:
                return float(read)
        elif isinstance(read, float) and float in kinds:
            return read
    return text if str in kinds else _REFUSED


def _globals_of(factory: Any) -> dict[str, Any]:
    """The namespace a factory's string annotations are written in: its module's."""
    while isinstance(factory, functools.partial):
        factory = factory.func
    module = sys.modules.get(getattr(factory, "__module__", None) or "")
    return vars(module) if module is not None else {}


# The policies make_policy made from import paths (id → (a reference to it, its spec)): the runner names the
# spec when one raises. A reference that cannot be weak (a class with __slots__) is kept, a small leak.
_IMPORTED: dict[int, tuple[Any, str]] = {}


def _remember_import(policy: Any, spec: str) -> None:
    key = id(policy)
    try:
        ref: Any = weakref.ref(policy, lambda _: _IMPORTED.pop(key, None))
    except TypeError:
        ref = lambda policy=policy: policy  # noqa: E731
    _IMPORTED[key] = (ref, spec)


def imported_spec(policy: Any) -> str | None:
    """The ``module:Class`` spec :func:`make_policy` made ``policy`` from, or None (a registered policy, an
    object given as is)."""
    found = _IMPORTED.get(id(policy))
    return found[1] if found is not None and found[0]() is policy else None


def source_fingerprint(name: str) -> str:
    """A digest of the code an import path ``module:Class`` runs, so a result made by an older version of it
    is not taken for this one's: the sha256 of the bytes of the source file of ``module`` and, when the class
    is defined in another module (re-exported), of that module's file too — as they are on disk now.

    A change in any other module they import in turn is not seen (edit the named file, or write to a new
    results file); nor is a module edited after this process imported it (a fresh ``eq-env`` process reads
    both anew). A module without a source file (compiled, built in) is fingerprinted by its name alone.
    """
    module_name, _, attribute = name.partition(":")
    module = sys.modules.get(module_name) or _import_user_module(module_name)
    defined: Any = module
    for part in attribute.split("."):
        defined = getattr(defined, part, None)
    defined = getattr(defined, "func", defined)  # (a partial: the function it calls)
    modules = [module_name, getattr(defined, "__module__", None) or module_name]
    digest = hashlib.sha256()
    for mod in dict.fromkeys(modules):  # (once each, in order)
        path = None
        with contextlib.suppress(TypeError, OSError):
            path = inspect.getsourcefile(sys.modules[mod]) if mod in sys.modules else None
        digest.update(mod.encode() + b"\0")
        if path is not None and os.path.isfile(path):
            with open(path, "rb") as source:
                digest.update(source.read())
    return digest.hexdigest()[:16]


def format_policy_spec(name: str, kwargs: Mapping[str, Any]) -> str:
    """The spec string :func:`parse_policy_spec` reads back as ``(name, kwargs)``, exactly.

    Strings that would not read back as themselves (``"007"``, ``"none"``, anything with a comma,
    a quote or an ``=``) are written as JSON strings.
    """
    items = []
    for key, value in kwargs.items():
        if isinstance(value, str):
            plain = value == value.strip() and value and not any(c in value for c in ',="\\')
            text = value if plain and parse_scalar(value) == value else json.dumps(value)
        elif value is None or isinstance(value, bool):
            text = {None: "none", True: "true", False: "false"}[value]
        elif isinstance(value, (int, float)):
            text = repr(value)
        else:
            raise ValueError(f"policy spec parameter {key!r}: cannot write {value!r} in a spec")
        items.append(f"{key}={text}")
    return join_spec(name, items)


def join_spec(name: str, items: Sequence[str]) -> str:
    """``name`` and its ``key=value`` items as a spec: after a colon, or after a comma when the name is an
    import path (which has the colon)."""
    return name + (("," if ":" in name else ":") + ",".join(items) if items else "")


def make_policy(spec: str | Policy, role: Role | None = None, env: Any = None) -> Policy:
    """A policy from a spec string for ``role`` of the game ``env`` (default: the default game), or a
    policy object, returned as is after a role check."""
    if not isinstance(spec, str):
        if not any(callable(getattr(spec, m, None)) for m in ACTING):
            raise ValueError(f"a policy is a spec string or an object with role, reset and act; got {spec!r}")
        if role is not None and getattr(spec, "role", None) != role:
            raise ValueError(f"{spec!r} plays {getattr(spec, 'role', None)!r}, not {role!r}")
        return spec
    name, _ = parse_policy_spec(spec)
    entry = policy_entry(name, role, env)
    kwargs = spec_parameters(spec, entry)
    params = entry.parameters()
    unknown = sorted(set(kwargs) - set(params))
    if unknown and not (":" in name and _takes_any_keyword(entry.factory)):
        raise ValueError(
            f"policy {name!r} has no parameter(s) {unknown}; its parameters: "
            + (", ".join(f"{k}={v!r}" for k, v in params.items()) or "none")
        )
    missing = [k for k, v in params.items() if v is REQUIRED and k not in kwargs]
    if missing:  # say it in spec terms, not as the factory's TypeError
        example = ",".join(f"{k}={'DIR' if k == 'path' else k.upper()}" for k in missing)
        raise ValueError(
            f"policy {name!r} needs {', '.join(f'{k}=...' for k in missing)}: e.g. {join_spec(name, [example])}"
        )
    if ":" not in name:
        return entry.factory(**kwargs)  # type: ignore[no-any-return]
    try:  # a user's class: whatever it raises is said in one line, naming the spec
        policy = entry.factory(**kwargs)
    except KeyboardInterrupt:
        raise
    except Exception as err:
        raise ValueError(f"policy {spec.strip()!r}: {type(err).__name__}: {err}") from None
    except BaseException as err:  # (sys:exit is a callable too: its SystemExit must not end eq-env quietly)
        raise ValueError(
            f"policy {spec.strip()!r}: its factory raised {type(err).__name__}"
            f"{f' ({err})' if str(err) else ''} instead of returning a policy"
        ) from None
    if not any(callable(getattr(policy, m, None)) for m in ACTING) or not callable(getattr(policy, "reset", None)):
        raise ValueError(
            f"policy {name!r} made {type(policy).__name__} {policy!r}, which is not a policy ({_INTERFACE})"
        )
    played = getattr(policy, "role", None)
    if not isinstance(played, str):
        raise ValueError(
            f"policy {name!r} has no role ({_INTERFACE}): give the class role = {role or 'ROLE'!r}, or a role parameter"
        )
    if role is not None and played != role:
        raise ValueError(f"policy {name!r} plays the {played}, not the {role}")
    _remember_import(policy, spec.strip())
    return policy  # type: ignore[no-any-return]
