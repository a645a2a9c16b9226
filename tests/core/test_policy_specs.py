"""Policy specs naming a class by its import path (``module:Class,key=value``) beside registered names, in
every ``--<role>`` flag and sweep, with one-line errors for each way they can be wrong."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

import eq_env  # noqa: F401 - registers the games
from eq_env.core.cli import main
from eq_env.core.experiments import canonical_spec
from eq_env.core.policy import format_policy_spec, make_policy, parse_policy_spec

MODULE = "eq_user_policies"  # a module of the user's, importable from a directory on the path
SOURCE = '''
from __future__ import annotations  # (string annotations: the parameters' types are read all the same)

from typing import Literal, Optional

from eq_env.core.policy import BasePolicy


class Stamp(BasePolicy):
    """Approves every ambiguous submission, or none when strict."""

    role = "validator"

    def __init__(self, strict: bool = False) -> None:
        super().__init__()
        self.strict = strict

    def act(self, observation):
        return 0 if self.strict else 1


class Passer(BasePolicy):
    """Passes in whichever seat it is given."""

    def __init__(self, role: str) -> None:
        super().__init__()
        self.role = role

    def act(self, observation):
        return len(observation["action_mask"]) - 1


class Roleless(BasePolicy):
    def act(self, observation):
        return 0


class NotAPolicy:
    pass


def faulty(level: int = 1):
    raise RuntimeError(f"cannot start at level {level}")


def not_a_policy():
    return object()


class Typed(BasePolicy):
    role = "validator"

    def __init__(self, strict: bool = False, k: int = 1, name: str = "x", q: float = 0.5,
                 cap: Optional[int] = None, mode: Literal["a", "b"] = "a", depth=2, anything=None) -> None:
        super().__init__()
        self.given = dict(strict=strict, k=k, name=name, q=q, cap=cap, mode=mode, depth=depth, anything=anything)

    def act(self, observation):
        return 1


class ExplodingAct(BasePolicy):
    role = "validator"

    def act(self, observation):
        raise RuntimeError("boom")


NUMBER = 3
'''


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / f"{MODULE}.py").write_text(textwrap.dedent(SOURCE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    return MODULE


def test_a_colon_then_key_value_is_parameters_and_a_colon_then_a_name_an_import_path() -> None:
    assert parse_policy_spec("planner:guess=true") == ("planner", {"guess": True})
    assert parse_policy_spec("verified:base=noisy:base=planner,k=4") == (
        "verified",
        {"base": "noisy:base=planner", "k": 4},
    )
    assert parse_policy_spec("pkg.mod:Name") == ("pkg.mod:Name", {})
    assert parse_policy_spec(" mod:Outer.Inner , strict=true,k=2") == ("mod:Outer.Inner", {"strict": True, "k": 2})
    assert parse_policy_spec('mod:Name,url="a:b,c=d"') == ("mod:Name", {"url": "a:b,c=d"})
    for name, kwargs in (("mod:Name", {"strict": True, "url": "a,b"}), ("mod:Name", {}), ("planner", {"guess": 1})):
        assert parse_policy_spec(format_policy_spec(name, kwargs)) == (name, kwargs)
    assert format_policy_spec("mod:Name", {"k": 1}) == "mod:Name,k=1"


def test_a_class_by_its_import_path_plays_with_parameters(user_module: str) -> None:
    stamp = make_policy(f"{user_module}:Stamp", "validator")
    assert type(stamp).__name__ == "Stamp" and stamp.strict is False
    assert make_policy(f"{user_module}:Stamp,strict=true", "validator").strict is True  # type: ignore[attr-defined]
    # a class taking a role is told which: one class for both seats
    for seat in ("player_0", "player_1"):
        assert make_policy(f"{user_module}:Passer", seat, "einstein-puzzle").role == seat
    # equal policies key alike (a sweep refuses the same one twice), different ones differently
    assert canonical_spec(f"{user_module}:Stamp", "validator") == canonical_spec(
        f"{user_module}:Stamp,strict=false", "validator"
    )
    assert canonical_spec(f"{user_module}:Stamp", "validator") != canonical_spec(
        f"{user_module}:Stamp,strict=true", "validator"
    )


@pytest.mark.parametrize(
    "spec, role, message",
    [
        ("eq_no_such_module:Stamp", "validator", "no module named 'eq_no_such_module' (a module:Class spec imports"),
        ("eq_no_such_pkg.sub:Stamp", "validator", "no module named 'eq_no_such_pkg'"),
        ("{m}:Missing", "validator", "module '{m}' has no attribute 'Missing'"),
        ("{m}:NotAPolicy", "validator", "NotAPolicy is not a policy class: it has no act(observation)"),
        ("{m}:NUMBER", "validator", "NUMBER is not a class or factory of policies (it is of type int"),
        ("{m}:not_a_policy", "validator", "made object <object object"),
        ("{m}:Roleless", "validator", "has no role"),
        ("{m}:Stamp", "proposer", "policy '{m}:Stamp' plays the validator, not the proposer"),
        ("{m}:Stamp,strictly=true", "validator", "has no parameter(s) ['strictly']; its parameters: strict=False"),
        ("{m}:Stamp,strict", "validator", "expected key=value, got 'strict'"),
        ("{m}:faulty,level=3", "validator", "'{m}:faulty,level=3': RuntimeError: cannot start at level 3"),
        ("{m}:Stamp", "player_0", "plays 'validator', which einstein-puzzle has not"),
        # a registered name followed by a bare word is still a forgotten "=", as before
        ("honest:words", "proposer", "expected key=value, got 'words'"),
        ("planner:guess", "player_0", "expected key=value, got 'guess'"),
    ],
)
def test_each_wrong_import_path_says_what_is_wrong(user_module: str, spec: str, role: str, message: str) -> None:
    env = "einstein-puzzle" if role.startswith("player") else None
    with pytest.raises(ValueError, match=re.escape(message.format(m=user_module))) as err:
        make_policy(spec.format(m=user_module), role, env)
    assert "\n" not in str(err.value)


def test_play_and_sweep_take_import_paths_in_role_flags(
    user_module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["play", "--q", "0", "--episodes", "20", "--json"]
    assert main([*args, "--validator", f"{user_module}:Stamp"]) == 0
    lenient = json.loads(capsys.readouterr().out)
    assert main([*args, "--validator", f"{user_module}:Stamp,strict=true"]) == 0
    strict = json.loads(capsys.readouterr().out)
    assert lenient["metrics"]["approval_rate"]["mean"] > 0 == strict["metrics"]["approval_rate"]["mean"]
    out = tmp_path / "sweep"
    assert (
        main(
            [
                "sweep",
                "--out",
                str(out),
                "--validator",
                f"{user_module}:Stamp,strict=true",
                "--validator",
                "rule",
                "--episodes",
                "20",
                "--jobs",
                "1",
            ]
        )
        == 0
    )
    assert f"| {user_module}:Stamp,strict=true |" in (out / "summary.md").read_text()
    spec_file = tmp_path / "sweep.toml"  # a sweep spec file's policies too
    spec_file.write_text(f'episodes = 10\nseeds = 1\nvalidators = ["{user_module}:Stamp,strict=true", "rule"]\n')
    assert main(["sweep", "--config", str(spec_file), "--out", str(tmp_path / "from_file"), "--jobs", "1"]) == 0
    assert f"| {user_module}:Stamp,strict=true |" in (tmp_path / "from_file" / "summary.md").read_text()
    capsys.readouterr()
    assert main(["play", "--validator", "eq_no_such_module:Stamp", "--episodes", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "eq-env play: error: policy 'eq_no_such_module:Stamp': no module named 'eq_no_such_module' (a "
        "module:Class spec imports it: install it, put its directory on PYTHONPATH, or run from that directory)"
    ]


def test_the_eq_env_script_finds_a_module_in_the_current_directory(tmp_path: Path) -> None:
    """``eq-env`` is a console script, so the directory it runs in is not on its path: a user's
    ``my_policies.py`` beside them is looked for there last (as ``uvicorn main:app`` does)."""
    import shutil
    import subprocess

    script = shutil.which("eq-env", path=str(Path(sys.executable).parent))
    assert script is not None, "the eq-env console script is not installed beside this interpreter"
    (tmp_path / f"{MODULE}_here.py").write_text(textwrap.dedent(SOURCE))
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    args = [script, "play", "--validator", f"{MODULE}_here:Stamp,strict=true", "--episodes", "20"]
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "approval_rate" in done.stdout or "approval" in done.stdout, done.stdout
    # strict: it approves nothing, so no bad approval either
    assert re.search(r"bad_approval_rate\D+0\.0", done.stdout), done.stdout


@pytest.mark.parametrize(
    "given, expected",
    [
        ("strict=true", {"strict": True}),
        ("strict=FALSE", {"strict": False}),
        ("k=3", {"k": 3}),
        ("name=1", {"name": "1"}),  # a str parameter gets the text as written
        ("name=007", {"name": "007"}),
        ("name=none", {"name": "none"}),
        ("q=1", {"q": 1.0}),
        ("cap=none", {"cap": None}),
        ("cap=4", {"cap": 4}),
        ("mode=b", {"mode": "b"}),
        ("depth=5", {"depth": 5}),  # unannotated: by its default's type
        ("anything=abc,depth=3", {"anything": "abc", "depth": 3}),  # unannotated, default None: as read
        ("anything=1", {"anything": 1}),
    ],
)
def test_an_import_paths_parameters_are_converted_by_its_signature(
    user_module: str, given: str, expected: dict[str, object]
) -> None:
    given_to = make_policy(f"{user_module}:Typed,{given}", "validator").given  # type: ignore[attr-defined]
    assert {k: given_to[k] for k in expected} == expected
    assert all(type(given_to[k]) is type(v) for k, v in expected.items())  # (1.0, not 1; "1", not 1)


@pytest.mark.parametrize(
    "given, message",
    [
        ("strict=maybe", "strict must be true or false (strict: bool), got 'maybe'"),
        ("strict=flase", "strict must be true or false (strict: bool), got 'flase'"),
        ("strict=0", "strict must be true or false (strict: bool), got '0'"),
        ('strict="true"', "strict must be true or false (strict: bool), got the quoted string 'true'"),
        ("k=abc", "k must be an integer (k: int), got 'abc'"),
        ("k=1.5", "k must be an integer (k: int), got '1.5'"),
        ("q=x", "q must be a number (q: float), got 'x'"),
        ("cap=x", "cap must be an integer or none (cap: Optional[int]), got 'x'"),
        ("mode=c", "mode must be one of 'a', 'b' (mode: Literal['a', 'b']), got 'c'"),
        ("depth=2.5", "depth must be an integer (as its default 2 is), got '2.5'"),
    ],
)
def test_a_parameter_that_does_not_convert_is_one_line_naming_it(user_module: str, given: str, message: str) -> None:
    spec = f"{user_module}:Typed,{given}"
    with pytest.raises(ValueError, match=re.escape(f"policy {spec!r}: {message}")) as err:
        make_policy(spec, "validator")
    assert "\n" not in str(err.value)


def test_an_error_in_a_users_act_is_one_line_naming_the_spec_and_episode(
    user_module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["play", "--validator", f"{user_module}:ExplodingAct", "--episodes", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.fullmatch(
        rf"eq-env play: error: policy '{user_module}:ExplodingAct' raised RuntimeError: boom in act "
        r"\(episode \d+, seed 0\)",
        err[0],
    ), err


def test_a_registered_or_given_policys_error_keeps_its_own_type() -> None:
    """Only a user's (import-path) policy is wrapped: an object given as is, or ours, raises as it did."""
    from eq_env.core.policy import BasePolicy
    from eq_env.core.runner import play
    from eq_env.exchange_audit import ExchangeAuditConfig

    class Broken(BasePolicy):
        role = "validator"

        def act(self, observation: object) -> int:
            raise KeyError("our bug")

    with pytest.raises(KeyError, match="our bug"):
        play(None, ExchangeAuditConfig(q=0.5), {"proposer": "honest", "validator": Broken()}, episodes=5, seed=0)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("sys:exit", "policy 'sys:exit': its factory raised SystemExit instead of returning a policy"),
        ("os:getcwd", "policy 'os:getcwd' made str "),  # a factory of something else: refused
    ],
)
def test_a_factory_that_exits_or_makes_no_policy_is_one_line(
    spec: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["play", "--validator", spec, "--episodes", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"eq-env play: error: {message}"), err


def test_a_resumed_sweep_plays_an_edited_class_again_and_resumes_an_unchanged_one(
    user_module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run key holds a fingerprint of the module's source: results of an older version are not reused."""
    import importlib

    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # (no stale .pyc for an edit within the second)
    out = tmp_path / "mine-vs-rule"
    line = f"sweep --grid q=0.1,0.5 --validator {user_module}:Stamp --validator rule --baseline validator=rule"
    args = [*line.split(), "--seeds", "2", "--episodes", "20", "--jobs", "1", "--out", str(out)]

    def sweep() -> tuple[list[str], str]:
        sys.modules.pop(user_module, None)  # (as a new eq-env process would import it)
        importlib.invalidate_caches()
        assert main(args) == 0
        return (out / "results.jsonl").read_text().splitlines(), (out / "summary.md").read_text()

    first, table = sweep()
    assert sweep() == (first, table)  # unchanged: every run resumed, nothing played again
    source = tmp_path / f"{user_module}.py"
    source.write_text(source.read_text().replace("return 0 if self.strict else 1", "return 0  # approves nothing"))
    edited, edited_table = sweep()
    assert len(edited) == len(first) + 4  # the user's class on 2 q x 2 seeds, played again
    assert edited_table != table
    # a registered policy's key holds no fingerprint: its results stay where they were
    rule_keys = {json.loads(line)["key"] for line in first if json.loads(line)["policies"]["validator"] == "rule"}
    assert rule_keys <= {json.loads(line)["key"] for line in edited}
