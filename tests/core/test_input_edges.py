"""The core's input edges: files nested past any parser's stack, integers longer than
``int()`` reads, numbers in other scripts' digits, and the user's free text on a terminal. Each bad input
gets one line naming the file (and line, or key) or the flag, and what was expected — never a traceback."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from eq_env.cli import main
from eq_env.core.cli import (
    MAX_EPISODES,
    MAX_INTEGER,
    MAX_SEED,
    build_parser,
    count,
    int_in,
    number_type,
    positive_float,
    ray_address_arg,
)
from eq_env.core.policy import parse_scalar
from eq_env.core.records import MAX_DEPTH, too_deep
from eq_env.core.report import printable
from eq_env.core.spec import env_spec
from eq_env.core.sweep import LongNumber, load_spec_file

DEEP = 100_000  # what the hostile run sent
LONG = "9" * 5000  # past int()'s 4300 digits


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    """Run ``eq-env argv`` in process: exit status 2 and one line on stderr holding every needle."""
    try:
        status = main(argv)
    except SystemExit as stop:  # (argparse's refusals exit)
        status = int(stop.code or 0)
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def _sweep(path: Path, capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    return _refused(["sweep", "--out", str(path.parent / "out"), "--config", str(path)], capsys, str(path), *needles)


# ---------------------------------------------------------------------------
# Nesting
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, text",
    [
        ("flow.json", '{"grid": ' + "[" * DEEP + "]" * DEEP + "}"),
        ("objects.json", '{"set": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}"),
        ("flow.toml", "grid = " + "[" * DEEP + "]" * DEEP + "\n"),
        ("tables.toml", "grid = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n"),
        ("block.yaml", "grid:\n  q:\n    " + "- " * DEEP + "x\n"),
    ],
)
def test_a_spec_nested_100000_deep_is_refused_in_one_line(
    name: str, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_text(text)
    _sweep(path, capsys, f"nested deeper than {MAX_DEPTH} levels")


@pytest.mark.slow  # (PyYAML's scanner looks up to 1,024 characters ahead of each '[': 0.7 s to say so)
def test_a_yaml_spec_nested_100000_deep_in_brackets_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text("grid: " + "[" * DEEP + "]" * DEEP + "\n")
    _sweep(path, capsys, f"{path}:1: nested deeper than {MAX_DEPTH} levels")


@pytest.mark.parametrize("suffix", ["json", "yaml", "toml"])
def test_the_depth_bound_is_exact_and_names_the_line(suffix: str, tmp_path: Path) -> None:
    # the grid's q nests the rest: the top level, grid, q's list and its lists
    def spec(depth: int) -> str:
        inner = "[" * (depth - 2) + "1" + "]" * (depth - 2)
        return {"json": f'{{"seeds": 2,\n"grid": {{"q": {inner}}}}}', "yaml": f"seeds: 2\ngrid: {{q: {inner}}}\n",
                "toml": f"seeds = 2\ngrid = {{q = {inner}}}\n"}[suffix]  # fmt: skip

    path = tmp_path / f"s.{suffix}"
    path.write_text(spec(MAX_DEPTH))
    assert load_spec_file(path)["seeds"] == 2  # (the grid's check refuses such a value later, for what it is)
    path.write_text(spec(MAX_DEPTH + 1))
    with pytest.raises(ValueError, match=rf"s\.{suffix}:2: nested deeper than {MAX_DEPTH} levels"):
        load_spec_file(path)


def test_brackets_in_strings_and_comments_are_no_nesting(tmp_path: Path) -> None:
    many = "[" * 100 + "{" * 100
    assert too_deep(json.dumps({"a": many, "b": '\\"' + many})) is None
    path = tmp_path / "s.toml"
    path.write_text(f'preset = "default"  # {many}\n[set]\nchatter = \'{many}\'\n"x{many}" = """\n{many}\n"""\n')
    assert load_spec_file(path)["set"]["chatter"] == many  # (the unknown key is refused later, by name)
    assert too_deep('"unclosed \\' + many) is None and too_deep('"a"' + "[" * 40) == 1  # no string hides them


def test_a_toml_dotted_key_of_100000_parts_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    # (tomllib reads one in a time quadratic in its length: the command hung for minutes)
    path = tmp_path / "dotted.toml"
    path.write_text("seeds = 2\n[set]\n" + ".".join(["a"] * DEEP) + " = 1\n")
    _sweep(path, capsys, f"{path}:3: a dotted key of more than {MAX_DEPTH} parts")
    qs = [i / 10 for i in range(50)]  # (the dots of floats make no dotted run)
    path.write_text(f"[grid]\nq = [{', '.join(map(str, qs))}]\n")
    assert load_spec_file(path)["grid"]["q"] == qs
    path.write_text("[set]\n" + ".".join(["a"] * MAX_DEPTH) + " = 1\n")  # (not too long: too deep, in all)
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH} levels .its tables and dotted keys"):
        load_spec_file(path)


@pytest.mark.parametrize(
    "text", ["grid:\n  q: &a [*a]\n", "a0: &a0 [1]\n" + "".join(f"a{i + 1}: &a{i + 1} [*a{i}]\n" for i in range(40))]
)
def test_yaml_aliases_nest_no_deeper_than_the_text(text: str, tmp_path: Path) -> None:
    path = tmp_path / "aliases.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"aliases.yaml: nested deeper than {MAX_DEPTH} levels .through its aliases"):
        load_spec_file(path)


def test_a_card_nested_100000_deep_is_refused_under_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "card.json").write_text('{"card": 1, "tasks": ' + "[" * DEEP + "]" * DEEP + "}")
    _refused(["bench", "--compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "board")],
             capsys, f"{tmp_path / 'a' / 'card.json'}:1: nested deeper than {MAX_DEPTH} levels")  # fmt: skip


def test_a_results_line_nested_100000_deep_is_named_by_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "results.jsonl"
    path.write_text('{"key": "a/0"}\n{"key": "a/1", "x": ' + "[" * DEEP + "]" * DEEP + "}\n")
    _refused(["rerun", str(path), "a/0"], capsys, "results.jsonl:2 is not a run record")


# ---------------------------------------------------------------------------
# Integers longer than int() reads
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, text, needles",
    [
        ("e.json", f'{{"episodes": {LONG}}}', [f"episodes must be an integer in [1, {MAX_EPISODES}]"]),
        ("e.yaml", f"episodes: {LONG}\n", [f"episodes must be an integer in [1, {MAX_EPISODES}]"]),
        ("e.toml", f"episodes = {LONG}\n", [f"episodes must be an integer in [1, {MAX_EPISODES}]"]),
        ("f.toml", f"first_seed = -{LONG}\n", [f"first_seed must be an integer in [0, {MAX_SEED}]"]),
        ("s.yaml", f"seeds: [0, 1_{LONG}]\n", [f"seeds must be integers in [0, {MAX_SEED}]", "5001 digits"]),
        ("n.json", f'{{"seeds": {LONG}}}', ["seeds must be a count in [1, 100000]"]),
        ("q.json", f'{{"set": {{"q": {LONG}}}}}', ["q must be a number in [0, 1]"]),
        ("q.toml", f"[grid]\nq = [0, {LONG}]\n", ["q must be a number in [0, 1]"]),
        ("x.yaml", f"episodes: 0x{'f' * 5000}\n", ["episodes must be an integer in [1,", "6021 digits"]),
    ],
)
def test_an_integer_of_5000_digits_names_the_file_the_key_and_the_range(
    name: str, text: str, needles: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_text(text)
    line = _sweep(path, capsys, *needles, "got an integer of")
    assert "sys.set_int_max_str_digits" not in line


def test_long_numbers_elsewhere_are_left_as_they_are(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"  # a long float, a long string of digits, a long bare key: no integers
    path.write_text(f'preset = "{LONG}"\n[set]\nq = {LONG}.5\n{LONG} = 1\n')
    data = load_spec_file(path)
    assert data["preset"] == LONG and data["set"]["q"] == float("inf") and data["set"][LONG] == 1
    path = tmp_path / "s.json"
    path.write_text(f'{{"seeds": [{"9" * 4300}]}}')  # at the limit: still a number
    (seed,) = load_spec_file(path)["seeds"]
    assert isinstance(seed, int) and seed == int("9" * 4300)
    assert repr(LongNumber(5000)) == "an integer of 5000 digits"


# ---------------------------------------------------------------------------
# Number flags: ASCII digits only, integers bounded
# ---------------------------------------------------------------------------
OTHER_DIGITS = ["٤", "４", "४", "٠.٣", "1٤", "𝟒"]  # Arabic-Indic, fullwidth, Devanagari, mathematical bold


@pytest.mark.parametrize("text", OTHER_DIGITS)
def test_number_flags_take_ascii_digits_only(text: str) -> None:
    for kind in (int_in(0, 10), count, positive_float, number_type(float, "a rate", lambda v: 0 <= v <= 1)):
        with pytest.raises(argparse.ArgumentTypeError, match="in ASCII digits, got"):
            kind(text)
    assert parse_scalar(text) == text  # (a spec's value or a --grid value stays text: its range check says so)
    assert int_in(0, 10)("4") == 4 and positive_float("0.3") == 0.3  # the ASCII forms still read


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["play", "--episodes", "٤"], "argument --episodes: expected an integer in [1, 10000000] in ASCII digits"),
        (["play", "--env", "relay", "--target", "١٠"], "argument --target: target must be an integer in [3, 50] in "
                                                       "ASCII digits"),
        (["play", "--env", "relay", "--bonus", "٠.٥"], "bonus must be a number in [0, 10] in ASCII digits"),
        (["sweep", "--env", "relay", "--out", "OUT", "--grid", "bonus=٠.٥"], "--grid bonus: bonus must be a number"),
        (["sweep", "--out", "OUT", "--backend", "ray", "--ray-address", "host:٦٣٧٩"], "argument --ray-address"),
    ],
)  # fmt: skip
def test_commands_refuse_other_digits_in_one_line(
    argv: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _refused([str(tmp_path / "o") if a == "OUT" else a for a in argv], capsys, needle)
    assert ray_address_arg("host:6379") == "host:6379"


def test_an_integer_flag_with_no_upper_bound_stops_at_int64() -> None:
    huge = "9" * 400  # (a typo of a value that would run for ever)
    with pytest.raises(argparse.ArgumentTypeError, match=f"expected a non-negative integer up to {MAX_INTEGER}"):
        count(huge)
    with pytest.raises(argparse.ArgumentTypeError, match=rf"up to {MAX_INTEGER}, got '{MAX_INTEGER + 1}'"):
        number_type(int, "a count", lambda v: v >= 0)(str(MAX_INTEGER + 1))
    assert count(str(MAX_INTEGER)) == MAX_INTEGER
    with pytest.raises(argparse.ArgumentTypeError, match=r"expected an integer in \[1, 5\], got '999999999999'"):
        int_in(1, 5)(huge)  # (a bounded one says its own range)


# ---------------------------------------------------------------------------
# The user's free text on a terminal
# ---------------------------------------------------------------------------
HOSTILE = "\x1b[31mred\nsecond line\r\u202eevil\udcff"


def test_printable_escapes_what_a_terminal_would_act_on() -> None:
    assert printable(HOSTILE) == "\\x1b[31mred\\nsecond line\\r\\u202eevil\\udcff"
    assert printable("gpt-4.1 é ✓ C:\\dir") == "gpt-4.1 é ✓ C:\\dir"  # printable text unchanged
    assert printable("a\tb\nc\x1b", lines=True) == "a\tb\nc\\x1b"


def test_bench_dry_run_prints_a_hostile_model_name_escaped_and_sends_it_as_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eq_env.core.bench import Battery, BenchModel
    from eq_env.core.policy import parse_policy_spec
    from eq_env.studies.bench import _print_plan

    model = BenchModel(HOSTILE, None, {})
    _print_plan(Battery("test-v1", (_relay_task(),), quick=True), model, tmp_path / ("out\x1b[0m"), (0.0, 0.0))
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    assert "for \\x1b[31mred\\nsecond line\\r\\u202eevil\\udcff into " in out and "out\\x1b[0m" in out
    assert parse_policy_spec(model.spec("llm"))[1]["model"] == HOSTILE  # what the endpoint is sent: as given


def test_errors_quote_the_users_text_escaped_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    line = _refused(["play", "\x1b[31mred\nx"], capsys, "unrecognized arguments: \\x1b[31mred\\nx")
    assert "\x1b" not in line
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"key": "k\x1b[2J/0"}) + "\n")
    line = _refused(["rerun", str(path), "missing"], capsys, "keys look like: k\\x1b[2J/0")
    assert "\x1b" not in line


def test_a_card_renders_a_control_character_in_a_name_inert(tmp_path: Path) -> None:
    from eq_env.core.card import render_card_html, render_card_markdown

    card = {"card": 1, "battery": "t", "quick": True, "eq_env": "0", "model": HOSTILE, "endpoint": None,
            "params": {}, "prices": [0.0, 0.0], "tasks": []}  # fmt: skip
    for text in (render_card_markdown(card), render_card_html(card, tmp_path)):
        assert "\x1b" not in text and "\u202e" not in text and "x1b" in text and "u202eevil" in text


# ---------------------------------------------------------------------------
def _relay_task() -> Any:
    """A bench task on the suite's toy game, for what needs a battery but no model."""
    from toy_game import RelayConfig

    from eq_env.core.bench import BenchTask, Cell, Estimate, Metric, TaskReport
    from eq_env.core.experiments import Condition

    metric = Metric("success_rate", "success")
    return BenchTask(
        name="relay/test", title="relay", env="relay", main=metric, prompts=(),
        conditions=lambda model, quick: [Condition(RelayConfig(), {"leader": "random", "runner": "random"}, 2)],
        seeds=lambda quick: (0, 1), estimate=lambda c: Estimate(1.0, 10.0, 1.0),
        report=lambda conds, records: TaskReport((metric,), (), Cell.of([])),
    )  # fmt: skip


@pytest.mark.parametrize("value", ["nan", "-1", "1e9", "٤"])
def test_the_local_servers_latency_flag_takes_seconds_in_range_only(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from eq_env.agents.fake_server import main as serve

    with pytest.raises(SystemExit) as exit_:
        serve(["--latency", value])  # refused before any server starts
    assert exit_.value.code == 2
    assert "argument --latency: expected seconds in [0, 3600]" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "owners"),
    [
        (["train", "--role", "proposer", "--timesteps", "64"], "exchange-audit, einstein-puzzle, belief-coordination"),
        (["reproduce"], "exchange-audit, einstein-puzzle, belief-coordination"),
        (["einstein", "plan"], "einstein-puzzle"),
    ],
)
def test_a_command_the_game_given_lacks_is_refused_naming_the_games_that_have_it(
    argv: list[str], owners: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (it ran the command of another game, on that game: `train` trained the one-shot game's proposer)
    out = tmp_path / "run"
    assert main([*argv, "--env", "exchange-audit-repeated", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (f"eq-env {argv[0]}: error: argument --env: exchange-audit-repeated has no {argv[0]!r} command; "
                   f"the games that have it: {owners}\n")  # fmt: skip
    assert not out.exists()


def test_the_default_games_own_commands_take_env_naming_it(tmp_path: Path) -> None:
    # (main chooses the game by --env; the default game's reproduce then refused it: "unrecognized arguments")
    parser = build_parser(env_spec("exchange-audit"))
    args = parser.parse_args(["reproduce", "--env", "exchange-audit", "--out", str(tmp_path / "out")])
    assert (args.command, args.env) == ("reproduce", "exchange-audit")
