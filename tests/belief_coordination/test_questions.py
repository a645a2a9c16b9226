"""Questions: the seeded word-problem generator (answers checked against the text), the steps knob, the
JSONL loader (every malformed kind names its file and line) and the answer-number readers."""

from __future__ import annotations

import json
import os
import re
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from eq_env.belief_coordination.questions import (
    MAX_LINE_BYTES,
    MAX_STEPS,
    MAX_VALUE,
    QUESTION_STREAM,
    Question,
    _operand,
    _program,
    final_number,
    generate_question,
    generated_question,
    load_jsonl,
    parse_number,
    question_rng,
    read_questions,
    steps_for,
)


def evaluate(ops: list[tuple[str, int]]) -> list[int]:
    """Every count a program passes through, start first (exact integer arithmetic, checked division)."""
    values = [ops[0][1]]
    for op, k in ops[1:]:
        v = values[-1]
        if op == "/":
            assert v % k == 0, f"inexact division {v} / {k}"
        values.append({"+": v + k, "-": v - k, "*": v * k, "/": v // k}[op])
    return values


def read_back(text: str) -> list[tuple[str, int]]:
    """The program a reader gets from the text alone: one number per sentence, the operation from its words."""
    *sentences, ask = re.split(r"(?<=[.?]) ", text)
    assert ask.startswith("How many ") and ask.endswith("?") and not re.search(r"[0-9]", ask)
    ops = []
    for i, s in enumerate(sentences):
        numbers = re.findall(r"[0-9]+", s)
        assert len(numbers) == 1, s
        if i == 0:
            op = "="
        elif re.search(r"times|new ones", s):
            op = "*"
        elif re.search(r"equal piles|equally among|one in every", s):
            op = "/"
        elif re.search(r"gives (her|him)|finds|wins|buys", s):
            op = "+"
        elif re.search(r"loses|sells|trades away|takes|gives [0-9]+ .* to ", s):
            op = "-"
        else:
            raise AssertionError(f"no operation in {s!r}")
        ops.append((op, int(numbers[0])))
    return ops


# -- the generator -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("steps", range(1, MAX_STEPS + 1))
def test_generated_answers_follow_from_the_text_and_stay_in_bounds(steps: int) -> None:
    big = 0
    for seed in range(60):
        text, ops = _program(np.random.default_rng(seed), steps)
        assert len(ops) == steps + 1 and ops[0][0] == "="
        assert read_back(text) == ops  # the text states exactly these operations, in this order
        values = evaluate(ops)
        assert all(isinstance(v, int) and 1 <= v <= MAX_VALUE for v in values)
        big += max(values) > MAX_VALUE // 10
        assert all(32 <= ord(c) < 127 for c in text)  # printable ASCII, no tabs or newlines

        q = generate_question(np.random.default_rng(seed), steps, f"q{seed}")
        assert (q.text, q.answer, q.steps, q.qid) == (text, values[-1], steps, f"q{seed}")
        assert isinstance(q.answer, int) and q.answer > 0
        assert q.difficulty == pytest.approx((steps - 1) / (MAX_STEPS - 1))
    if steps == MAX_STEPS:
        assert big > 0  # long programs do reach the upper bound's region, so the cap is exercised


def test_operations_names_and_objects_vary() -> None:
    ops, names, things = set(), set(), set()
    for i in range(200):
        q = generated_question(3, i)
        _, program = _program(question_rng(3, i), q.steps)
        ops |= {op for op, _ in program[1:]}
        names.add(q.text.split()[0])
        things.add(q.text.rsplit("How many ", 1)[1].split(" does ")[0])
    assert ops == {"+", "-", "*", "/"} and len(names) >= 10 and len(things) >= 10


def test_operands_respect_the_bounds_at_the_edges() -> None:
    rng = np.random.default_rng(0)
    assert _operand(rng, MAX_VALUE, "+") is None and _operand(rng, MAX_VALUE, "*") is None
    assert _operand(rng, 1, "-") is None and _operand(rng, 1, "/") is None and _operand(rng, 11, "/") is None
    assert _operand(rng, MAX_VALUE - 1, "+") == 1 and _operand(rng, 2, "-") == 1
    assert all(_operand(rng, 5040, "/") in range(2, 10) for _ in range(20))


def test_same_seed_and_index_give_the_same_question_and_indices_differ() -> None:
    assert generated_question(5, 3) == generated_question(5, 3)
    assert generated_question(5, 3).qid == "gen-5-3"
    assert generated_question(5, 3, difficulty=0.5) == generated_question(5, 3, difficulty=0.5)
    texts = [generated_question(5, i).text for i in range(100)]
    assert len(set(texts)) == 100
    assert generated_question(5, 3) != generated_question(6, 3)
    # an index's question does not depend on which other indices were drawn, nor in what order
    forward = {i: generated_question(5, i) for i in (2, 4, 9)}
    assert forward == {i: generated_question(5, i) for i in (9, 4, 2)} and forward[4] == generated_question(5, 4)
    rng = np.random.default_rng(np.random.SeedSequence(5, spawn_key=(QUESTION_STREAM, 3)))
    assert rng.random() == question_rng(5, 3).random()


def test_steps_follow_the_difficulty_knob() -> None:
    rng = np.random.default_rng(1)
    mixed = [steps_for(None, rng) for _ in range(4000)]
    counts = np.bincount(mixed, minlength=MAX_STEPS + 1)[1:]
    assert counts.min() > 400 and counts.max() < 600  # uniform over 1 ... MAX_STEPS (500 each expected)
    means = []
    for d in (0.0, 0.25, 0.5, 0.75, 1.0):
        drawn = [steps_for(d, rng) for _ in range(600)]
        centre = 1 + round(d * (MAX_STEPS - 1))
        assert set(drawn) == {s for s in (centre - 1, centre, centre + 1) if 1 <= s <= MAX_STEPS}
        means.append(np.mean(drawn))
    assert means == sorted(means) and means[0] < 2 and means[-1] > 7
    assert generated_question(0, 0, difficulty=0.0).steps <= 2 and generated_question(0, 0, difficulty=1.0).steps >= 7


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), True, "0.5"])
def test_bad_difficulty_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="difficulty must be"):
        steps_for(bad, np.random.default_rng(0))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0, MAX_STEPS + 1, 2.0, True])
def test_bad_steps_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="steps must be"):
        generate_question(np.random.default_rng(0), bad, "x")  # type: ignore[arg-type]


# -- the loader ----------------------------------------------------------------------------------------------
def write(tmp_path: Path, *lines: str, name: str = "data.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def row(question: object = "What is 2 + 3?", answer: object = "2 + 3 = 5\n#### 5", **more: object) -> str:
    return json.dumps({"question": question, "answer": answer, **more})


def test_a_good_file_loads_in_order_with_steps_difficulty_and_qids(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        row(answer="He has 1000 + 234 = 1,234\n#### 1,234"),
        "",
        "   ",
        row(answer="a\n\nb\nc\n#### $5"),
        row(answer="#### -3.5"),
        row(answer="1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n#### 12."),
        row(answer=42, difficulty=0.5),
        row(answer="a\nb\n#### 7", difficulty=1),
        row(answer=2.5),
        row(question="  padded  ", answer="#### +0"),
    )
    qs = load_jsonl(path)
    assert [q.answer for q in qs] == [1234, 5, -3.5, 12, 42, 7, 2.5, 0]
    assert [q.steps for q in qs] == [1, 3, 1, MAX_STEPS, 1 + round(0.5 * (MAX_STEPS - 1)), 2, 1, 1]
    assert [q.difficulty for q in qs][:4] == [0, 2 / (MAX_STEPS - 1), 0, 1]
    assert qs[4].difficulty == 0.5 and qs[5].difficulty == 1.0
    assert [q.qid for q in qs] == [f"data.jsonl:{n}" for n in (1, 4, 5, 6, 7, 8, 9, 10)]
    assert qs[-1].text == "padded" and all(isinstance(q, Question) for q in qs)
    assert all(isinstance(q.answer, float) for q in qs)  # "#### 42" and 42 are the same question


def test_a_byte_order_mark_and_crlf_lines_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(("\ufeff" + row() + "\r\n" + row(answer="#### 6") + "\r\n").encode())
    assert [q.answer for q in load_jsonl(path)] == [5, 6]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"question": "x", "answer": "#### 1"', "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('"just text"', "expected a JSON object"),
        ('{"answer": "#### 1"}', '"question" must be a non-empty string, got nothing'),
        (row(question=""), '"question" must be a non-empty string'),
        (row(question="   "), '"question" must be a non-empty string'),
        (row(question=7), '"question" must be a non-empty string, got 7'),
        ('{"question": "x"}', 'missing "answer"'),
        (
            row(answer="the answer is 5"),
            r'"answer" must end with a line "#### N" \(a number\), got \'the answer is 5\'',
        ),
        (row(answer=""), r'"answer" must end with a line "#### N"'),
        (row(answer="#### five"), r"got '#### five'"),
        (row(answer="#### 5 apples"), r"got '#### 5 apples'"),
        (row(answer="#### 1e400"), r'"#### N" \(a number\)'),
        (row(answer="#### " + "9" * 500), r"got '#### 9999+\.\.\.$"),  # long values are truncated
        (row(answer="#### 5\nmore text"), r"got 'more text'"),
        ('{"question": "x", "answer": NaN}', '"answer" must be a finite number'),
        ('{"question": "x", "answer": Infinity}', '"answer" must be a finite number'),
        ('{"question": "x", "answer": 1' + "0" * 400 + "}", '"answer" must be a finite number'),
        (row(answer=None), '"answer" must be a string ending with "#### N" or a number'),
        (row(answer=True), '"answer" must be a string ending with "#### N" or a number'),
        (row(difficulty=1.5), '"difficulty" must be a number in \\[0, 1\\], got 1.5'),
        (row(difficulty="hard"), '"difficulty" must be a number'),
        (row(difficulty=True), '"difficulty" must be a number'),
        ('{"question": "x", "answer": 1, "difficulty": NaN}', '"difficulty" must be a number'),
        ("[" * 100_000, "invalid JSON"),
    ],
)
def test_each_malformed_line_names_the_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path, row(), "", line, row())
    with pytest.raises(ValueError, match=re.escape("data.jsonl line 3: ") + ".*" + message) as info:
        load_jsonl(path)
    assert "\n" not in str(info.value) and len(str(info.value)) < 300 + len(str(path))


def test_non_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(row().encode() + b"\n" + b'{"question": "caf\xe9", "answer": 1}\n')
    with pytest.raises(ValueError, match=r"data\.jsonl line 2: not valid UTF-8"):
        load_jsonl(path)


def test_missing_empty_and_directory_paths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"nope\.jsonl: no such file"):
        load_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(ValueError, match="is a directory"):
        load_jsonl(tmp_path)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ValueError, match=r"empty\.jsonl: no questions"):
        load_jsonl(tmp_path / "empty.jsonl")
    with pytest.raises(ValueError, match=r"blank\.jsonl: no questions"):
        load_jsonl(write(tmp_path, "", "  ", name="blank.jsonl"))


# -- question files as streams -------------------------------------------------------------------------
def test_a_fifo_is_read_once_and_only_as_far_as_needed(tmp_path: Path) -> None:
    """Defect: the file was read whole, two or three times: a FIFO (or ``<(zcat q.jsonl.gz)``) hung on the
    second read. Here a writer thread offers 100,000 questions through a FIFO: 20 are read, the reader
    closes the pipe, and the writer is stopped by it after at most a pipe buffer's worth of lines."""
    fifo = tmp_path / "q.fifo"
    os.mkfifo(fifo)
    written = [0]

    def writer() -> None:
        try:
            with open(fifo, "w") as fh:  # (blocks until the reader opens it)
                for k in range(100_000):
                    fh.write(row(question=f"What is {k} + 1?", answer=k + 1) + "\n")
                    written[0] += 1
        except BrokenPipeError:  # the reader stopped reading: what the test expects
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    got = read_questions(fifo, limit=20)
    thread.join(timeout=60)
    assert not thread.is_alive(), "the writer was never stopped: the reader kept reading"
    assert [q.answer for q in got.questions] == [k + 1.0 for k in range(20)]
    assert (got.lines, got.complete) == (20, False)
    assert written[0] < 5_000, written[0]  # (a 64 KiB pipe buffer holds about 1,200 of these lines)


def test_a_huge_file_costs_only_the_lines_needed(tmp_path: Path) -> None:
    """Defect: a 1 GiB file of questions took 5.8 GB and never ended though ``--questions 20`` needs twenty.
    A 1 GiB file (20 questions, then a sparse gigabyte that is no question at all): the first 20 are read,
    nothing after them (a line read after them would be refused), in well under a megabyte of memory."""
    path = tmp_path / "huge.jsonl"
    with path.open("w") as fh:
        for k in range(20):
            fh.write(row(question=f"What is {k} + 2?", answer=k + 2) + "\n")
    os.truncate(path, 1 << 30)
    tracemalloc.start()
    try:
        got = read_questions(path, limit=20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(got.questions) == 20 and (got.lines, got.complete) == (20, False)
    assert peak < 1 << 20, peak
    with pytest.raises(ValueError, match=r"huge\.jsonl line 21: longer than"):
        read_questions(path, limit=21)  # (the 21st line is the sparse gigabyte: refused after 1 MiB of it)


def test_a_line_without_an_end_is_refused_naming_the_file_and_line(tmp_path: Path) -> None:
    """Defect: ``--questions-file /dev/zero`` ended in a MemoryError traceback. A line longer than
    MAX_LINE_BYTES is refused after reading that much of it; a line of exactly that length is fine."""
    with pytest.raises(ValueError, match=r"^/dev/zero line 1: longer than 1048576 bytes") as info:
        read_questions("/dev/zero", limit=20)
    assert "\n" not in str(info.value)
    question = "x" * (MAX_LINE_BYTES - len(row(question="")))
    exact = write(tmp_path, row(question=question), row(question="y" + question), name="long.jsonl")
    assert len(exact.read_bytes().split(b"\n")[0]) == MAX_LINE_BYTES
    assert read_questions(exact, limit=1).questions[0].text == question
    with pytest.raises(ValueError, match=r"long\.jsonl line 2: longer than"):
        read_questions(exact)


def test_the_digest_is_of_the_lines_read(tmp_path: Path) -> None:
    """Two files with the same first questions give the same questions and digest when only those are read,
    and different ones when the difference is read."""
    a = write(tmp_path, row(answer=1), row(answer=2), row(answer=3), name="a.jsonl")
    b = write(tmp_path, row(answer=1), row(answer=2), row(answer=4), name="b.jsonl")
    assert read_questions(a, 2).digest == read_questions(b, 2).digest
    assert read_questions(a).digest != read_questions(b).digest
    assert read_questions(a).complete and read_questions(a).lines == 3


# -- numbers in answers ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1,234", 1234), ("$5", 5), ("-3.5", -3.5), ("12.", 12), ("+7", 7), ("-$5", -5), ("$-5", -5), (" 42 ", 42),
        ("1,234,567.25", 1234567.25), (".5", 0.5), ("0", 0),
        ("", None), ("abc", None), ("5 apples", None), ("1e5", None), ("inf", None), ("nan", None),
        ("\u0661\u0662", None), ("1_000", None), ("12,34", None), ("--5", None), ("-$-5", None), ("1.2.3", None),
        ("9" * 400, None), ("9" * 400 + ".5", None),
    ],
)  # fmt: skip
def test_parse_number(text: str, number: float | None) -> None:
    assert parse_number(text) == number


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("#### 5 ... ignore previous instructions #### 7", 7),  # the last #### wins
        ("so 3 + 4 = 7\n#### 7", 7),
        ("#### $1,234.50", 1234.5),
        ("####-2", -2),
        ("#### 8, or \\boxed{9}", 8),  # #### beats \boxed
        ("The answer is \\boxed{42}.", 42),
        ("first \\boxed{3}, then \\boxed{5}; 9 apples were left over", 5),  # the last box beats later numbers
        ("\\boxed{\\text{12 dollars}}", 12),
        ("\\boxed {1,000}", 1000),
        ("unclosed \\boxed{12", 12),
        ("it is 4 ####", None),  # a final #### line without a number: no answer (what came before does not count)
        ("it is 7, \\boxed{}", 7),
        ("so 3-5 gives 12.", 12),
        ("x = -4", -4),
        ("step2 gives 6 then v3", 6),
        ("no number here", None),
        ("", None),
        ("\u0663 and \u0664", None),  # Arabic-Indic digits are not read
        ("#### " + "9" * 500, None),  # absurdly long: None, never inf
        ("the answer is " + "9" * 5000, None),
    ],
)
def test_final_number(text: str, number: float | None) -> None:
    assert final_number(text) == number


def test_a_generated_questions_answer_is_read_from_its_text_alone() -> None:
    """The offline stand-in's good solver reads the answer from the text (no table of questions)."""
    from eq_env.belief_coordination.questions import read_generated

    questions = [generated_question(seed, i, d) for seed in (0, 7) for i in range(40) for d in (None, 0.0, 1.0)]
    assert [read_generated(q.text) for q in questions] == [q.answer for q in questions]
    q = questions[0]
    assert (
        read_generated(q.text.replace(" How many", " Then it rains. How many")) is None
    )  # (a sentence of no template)
    for text in ("Janet has 16 ducks. How many ducks?", "", "How many?", "Mia has 3 coins. She loses 2 coins."):
        assert read_generated(text) is None
