"""Questions with known numeric answers: a seeded generator of arithmetic word problems, and a GSM8K loader.

A :class:`Question` carries its text, its exact answer, a difficulty in [0, 1]
and the number of reasoning steps it takes. Everything the simulated answerer
needs of a question (its trap, its plausible wrong answers) is derived from the
question itself (:attr:`Question.key`), so every executor faces the same
question the same way and errors are correlated across executors.

**Generated questions.** :func:`generate_question` draws, from one ``numpy``
generator, a person (name and pronoun), a countable object and a start count,
then ``steps`` operations on that count, one sentence each: add (buys, finds,
is given), subtract (gives away, loses, sells), multiply by 2 … 9 (``k`` times
as many) or divide by 2 … 9 (equal piles, keeping one). Each operation is drawn
uniformly among those that keep the count a positive integer ≤ 10^6 (division
only when exact), so every intermediate count and the answer are in
[1, 10^6]. The text is printable ASCII, sentences joined by single spaces,
ending with "How many <objects> does <name> have ...?". A question of ``s``
steps has difficulty ``(s - 1) / (MAX_STEPS - 1)``.

:func:`generated_question` is episode ``index`` of ``seed``: its generator is
:func:`question_rng` (stream :data:`QUESTION_STREAM` of ``seed``), so an index
always gives the same question, whatever other indices are drawn. The number
of steps comes from :func:`steps_for`: difficulty ``None`` mixes 1 …
:data:`MAX_STEPS` uniformly; a difficulty ``d`` in [0, 1] centres on
``1 + round(d · (MAX_STEPS - 1))`` steps, jittered by at most one step.

**Question files.** :func:`load_jsonl` reads the GSM8K layout: one JSON object
per line, ``{"question": "...", "answer": "...\\n#### 72"}``; the answer's last
line is ``#### N`` (commas, ``$``, a sign and decimals are fine), or the answer
is a plain JSON number. The steps are the solution's non-empty lines before
``#### N`` (clipped to 1 … :data:`MAX_STEPS`; a plain number counts one step),
and an optional ``"difficulty"`` in [0, 1] overrides the difficulty (and, for a
plain-number answer, sets the steps too). Blank lines are skipped; any other
malformed line raises ``ValueError`` naming the file and the line.
:func:`read_questions` reads the file once, as a stream, and stops at the
questions asked for: a pipe (``<(zcat q.jsonl.gz)``) or a FIFO works, a huge
file costs only the lines read, and the lines after those are never read (nor
checked). A line longer than :data:`MAX_LINE_BYTES` is refused (``/dev/zero``
has no line end at all).

**Answers.** :func:`parse_number` reads a final-answer string ("1,234", "$5",
"-3.5", "12."); :func:`final_number` finds the answer a model's reply commits
to (after the last ``####``, else in the last ``\\boxed{...}``, else the last
number). Both read ASCII digits only and give ``None`` rather than an
infinite or absurdly long number.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "BASELINE_SAMPLING",
    "BENCH_V1_QUESTIONS",
    "MAX_LINE_BYTES",
    "MAX_STEPS",
    "MAX_VALUE",
    "QUESTION_STREAM",
    "Question",
    "QuestionFile",
    "final_number",
    "generate_question",
    "generated_question",
    "load_jsonl",
    "parse_number",
    "question_rng",
    "read_generated",
    "read_questions",
    "steps_for",
]

# The generated questions eq-env bench's belief-coordination task asks in battery bench-v1: (seeds, questions
# per seed) of the quick and the full battery. A fixed set, like the Einstein puzzle's frozen suite: the
# bench's scripted models answer from it, so it lives with the game rather than with the bench.
BENCH_V1_QUESTIONS = {"quick": ((0, 1, 2), 8), "full": ((0, 1, 2, 3, 4), 100)}
BASELINE_SAMPLING = (0.7, 1.1)  # the fixed baselines' (T, p) of eq-env reproduce and bench: a common chat default

MAX_STEPS = 8  # reasoning steps of the hardest question (difficulty 1)
MAX_VALUE = 10**6  # bound of every count in a generated question
QUESTION_STREAM = 7  # the SeedSequence stream of generated questions (other uses of a seed take other streams)
MAX_LINE_BYTES = 1 << 20  # a question file's longest line (GSM8K's longest is about 1.3 KB)


@dataclass(frozen=True)
class Question:
    """One question.

    Attributes:
        qid: a stable identifier (``gen-<seed>-<index>``, or ``<file name>:<line>``).
        text: the word problem as an answerer reads it.
        answer: the exact answer (an integer for generated questions; GSM8K answers may be decimals).
        steps: the reasoning steps it takes (1 … :data:`MAX_STEPS`).
        difficulty: in [0, 1]; ``(steps - 1) / (MAX_STEPS - 1)`` unless a file says otherwise.
    """

    qid: str
    text: str
    answer: float
    steps: int
    difficulty: float

    @property
    def key(self) -> int:
        """A 64-bit number fixed by the question's text and answer: the seed of its simulated traits."""
        digest = hashlib.blake2b(f"{self.text}\x00{self.answer!r}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little")


# -- the generator -------------------------------------------------------------------------------------------
_PEOPLE = (
    ("Mia", "she"),
    ("Leo", "he"),
    ("Ava", "she"),
    ("Noah", "he"),
    ("Zoe", "she"),
    ("Omar", "he"),
    ("Priya", "she"),
    ("Kenji", "he"),
    ("Lena", "she"),
    ("Tom", "he"),
    ("Sofia", "she"),
    ("Diego", "he"),
    ("Amara", "she"),
    ("Ivan", "he"),
    ("Grace", "she"),
    ("Sam", "he"),
)
_PRONOUNS = {"she": ("she", "her", "her", "herself"), "he": ("he", "him", "his", "himself")}
_OBJECTS = (
    ("marble", "marbles"),
    ("sticker", "stickers"),
    ("coin", "coins"),
    ("stamp", "stamps"),
    ("shell", "shells"),
    ("bead", "beads"),
    ("card", "cards"),
    ("pencil", "pencils"),
    ("apple", "apples"),
    ("book", "books"),
    ("cookie", "cookies"),
    ("balloon", "balloons"),
    ("button", "buttons"),
    ("feather", "feathers"),
    ("toy car", "toy cars"),
    ("seashell", "seashells"),
)
_RELATIVES = ("brother", "sister", "cousin", "friend", "neighbour", "aunt", "uncle", "grandmother", "teacher")
_PLACES = ("in the park", "under the sofa", "in an old box", "at school", "on the way home", "in the attic")

# One sentence per operation; {k} is the operand, {n} is "{k} <object or objects>". Every template states its
# operand once, and no other number, so the text alone fixes the arithmetic (the tests read it back).
_START = ("{Name} has {n}.", "{Name} starts the week with {n}.", "{Name} owns {n}.", "{Name} collects {n}.")
_TEMPLATES: dict[str, tuple[str, ...]] = {
    "+": (
        "{P} buys {k} more {t}.",
        "{P} finds {n} {place}.",
        "{Other} gives {obj} {n}.",
        "{P} wins {n} in a game.",
        "{Poss} {rel} gives {obj} {k} more {t}.",
    ),
    "-": (
        "{P} gives {n} to {poss} {rel}.",
        "{P} loses {n}.",
        "{P} sells {n} to {Other}.",
        "{P} trades away {n}.",
        "{Other} takes {k} of {poss} {ts}.",
    ),
    "*": (
        "{P} buys more until {p} has {k} times as many {ts} as before.",
        "{Poss} collection of {ts} grows to {k} times its size.",
        "{P} trades each of {poss} {ts} for {k} new ones.",
    ),
    "/": (
        "{P} splits {poss} {ts} into {k} equal piles and keeps only one pile.",
        "{P} shares {poss} {ts} equally among {k} people, {self} included, and keeps {poss} share.",
        "{P} keeps one in every {k} {ts} and gives away the rest.",
    ),
}
_ASKS = (
    "How many {ts} does {Name} have now?",
    "How many {ts} does {Name} end up with?",
    "How many {ts} does {Name} have at the end?",
)


def _apply(value: int, op: str, k: int) -> int:
    if op == "+":
        return value + k
    if op == "-":
        return value - k
    if op == "*":
        return value * k
    return value // k  # "/": exact by construction


def _operand(rng: np.random.Generator, value: int, op: str) -> int | None:
    """An operand keeping ``op(value, k)`` a positive integer ≤ :data:`MAX_VALUE`, or ``None`` if none does."""
    if op == "+":
        hi = min(max(20, value), MAX_VALUE - value)  # amounts on the scale of the count, at least 1 … 20
        return int(rng.integers(1, hi + 1)) if hi >= 1 else None
    if op == "-":
        return int(rng.integers(1, value)) if value >= 2 else None
    if op == "*":
        hi = min(9, MAX_VALUE // value)
        return int(rng.integers(2, hi + 1)) if hi >= 2 else None
    divisors = [d for d in range(2, 10) if value % d == 0]
    return int(divisors[int(rng.integers(0, len(divisors)))]) if divisors else None


def _pick(rng: np.random.Generator, options: tuple[Any, ...] | list[Any]) -> Any:
    return options[int(rng.integers(0, len(options)))]


def _program(rng: np.random.Generator, steps: int) -> tuple[str, list[tuple[str, int]]]:
    """The text of a question of ``steps`` operations and its program: ``[("=", start), (op, k), ...]``."""
    name, gender = _pick(rng, _PEOPLE)
    p, obj, poss, self_ = _PRONOUNS[gender]
    other = _pick(rng, [n for n, _ in _PEOPLE if n != name])
    one, many = _pick(rng, _OBJECTS)
    words = {
        "Name": name,
        "P": p.capitalize(),
        "p": p,
        "obj": obj,
        "Poss": poss.capitalize(),
        "poss": poss,
        "self": self_,
        "Other": other,
        "ts": many,
    }

    def sentence(template: str, k: int) -> str:
        t = one if k == 1 else many
        return template.format(k=k, n=f"{k} {t}", t=t, rel=_pick(rng, _RELATIVES), place=_pick(rng, _PLACES), **words)

    # small starts mostly, sometimes a round larger one: the mix keeps division feasible now and then
    value = int(rng.integers(2, 61)) * int(_pick(rng, (1, 1, 2, 5, 10)))
    ops = [("=", value)]
    sentences = [sentence(_pick(rng, _START), value)]
    for _ in range(steps):
        choices = [(op, k) for op in "+-*/" if (k := _operand(rng, value, op)) is not None]
        op, k = choices[int(rng.integers(0, len(choices)))]
        value = _apply(value, op, k)
        ops.append((op, k))
        sentences.append(sentence(_pick(rng, _TEMPLATES[op]), k))
    sentences.append(_pick(rng, _ASKS).format(**words))
    return " ".join(sentences), ops


def generate_question(rng: np.random.Generator, steps: int, qid: str) -> Question:
    """A word problem of exactly ``steps`` arithmetic operations (1 … :data:`MAX_STEPS`) with an integer answer."""
    if isinstance(steps, bool) or not (isinstance(steps, (int, np.integer)) and 1 <= steps <= MAX_STEPS):
        raise ValueError(f"steps must be an integer in [1, {MAX_STEPS}], got {steps!r}")
    text, ops = _program(rng, int(steps))
    value = 0
    for op, k in ops:
        value = k if op == "=" else _apply(value, op, k)
    return Question(qid, text, value, int(steps), (int(steps) - 1) / (MAX_STEPS - 1))


def steps_for(difficulty: float | None, rng: np.random.Generator) -> int:
    """The steps of a question: uniform over 1 … :data:`MAX_STEPS` for ``None`` ("mixed"); for ``d`` in [0, 1],
    ``1 + round(d · (MAX_STEPS - 1))`` moved by -1, 0 or +1 at random (clipped to the range)."""
    if difficulty is None:
        return int(rng.integers(1, MAX_STEPS + 1))
    if isinstance(difficulty, bool) or not (isinstance(difficulty, (int, float)) and 0.0 <= difficulty <= 1.0):
        raise ValueError(f"difficulty must be None or a number in [0, 1], got {difficulty!r}")
    centre = 1 + round(float(difficulty) * (MAX_STEPS - 1))
    return min(max(centre + int(rng.integers(-1, 2)), 1), MAX_STEPS)


def question_rng(seed: int, index: int) -> np.random.Generator:
    """The generator of question ``index`` of ``seed`` (independent of every other index)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(QUESTION_STREAM, index)))


def generated_question(seed: int, index: int, difficulty: float | None = None) -> Question:
    """Question ``index`` of ``seed`` (qid ``gen-<seed>-<index>``); ``difficulty`` as in :func:`steps_for`."""
    rng = question_rng(seed, index)
    return generate_question(rng, steps_for(difficulty, rng), f"gen-{seed}-{index}")


def _template_pattern(template: str) -> re.Pattern[str]:
    """A template as a pattern of the sentences it makes: its operand (``{k}``, or ``{n}``: the operand and
    its objects) captured, its words (names, pronouns, objects, places) as runs of letters and spaces."""
    parts = []
    for literal, name, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if name == "k":
            parts.append(r"(?P<k>[0-9]+)")
        elif name == "n":
            parts.append(r"(?P<k>[0-9]+) [a-z ]+")
        elif name is not None:
            parts.append(r"[A-Za-z ]+?")
    return re.compile("".join(parts))


@functools.cache
def _sentence_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    ops = [("=", t) for t in _START] + [(op, t) for op, templates in _TEMPLATES.items() for t in templates]
    return tuple((op, _template_pattern(t)) for op, t in ops)


def read_generated(text: str) -> int | None:
    """The answer a generated question's text fixes (every template states its operand once, and no other
    number), read from the text alone as a careful solver would; None for a text the generator did not write
    (a question file's) or one whose reading is not exact (an inexact division, two readings of a sentence)."""
    if not isinstance(text, str) or len(text) > 10_000:
        return None
    *sentences, ask = re.split(r"(?<=[.?]) ", text.strip())
    if len(sentences) < 2 or not ask.startswith("How many ") or not ask.endswith("?"):  # (a start, a step at least)
        return None
    value = 0
    for i, sentence in enumerate(sentences):
        patterns = [(op, p) for op, p in _sentence_patterns() if (op == "=") == (i == 0)]
        readings = {(op, int(m.group("k"))) for op, p in patterns if (m := p.fullmatch(sentence))}
        if len(readings) != 1:
            return None
        ((op, k),) = readings
        if op == "/" and (k == 0 or value % k):
            return None
        value = k if op == "=" else _apply(value, op, k)
    return value


# -- numbers in answers ------------------------------------------------------------------------------------
# ASCII digits only ([0-9], not \d: float() would take Arabic-Indic digits too); thousands groups of three.
_DIGITS = r"(?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+"
_WHOLE = re.compile(rf"\s*(?P<s1>[-+])?\s*\$?\s*(?P<s2>[-+])?(?P<num>{_DIGITS})\.?\s*")
# in running text a sign counts only where a number can start: "3-5" is 3 and 5, "= -5" is -5
_IN_TEXT = re.compile(rf"(?<![0-9A-Za-z_])(?P<s1>[-+])?\$?(?P<num>{_DIGITS})")
_BOXED = re.compile(r"\\boxed\s*\{")
_MAX_CHARS = 64  # a longer digit string is no answer anyone means (and float() would round it or overflow)


def _number(sign: str | None, digits: str) -> float | None:
    digits = digits.replace(",", "")
    if len(digits) > _MAX_CHARS:
        return None
    value = -float(digits) if sign == "-" else float(digits)
    return value if math.isfinite(value) else None


def parse_number(text: str) -> float | None:
    """The number a final-answer string is ("1,234", "$5", "-3.5", "12."), or ``None`` if it is anything else."""
    m = _WHOLE.fullmatch(text)
    if m is None or (m["s1"] and m["s2"]):
        return None
    return _number(m["s1"] or m["s2"], m["num"])


def _first_number(text: str) -> float | None:
    m = _IN_TEXT.search(text)
    return None if m is None else _number(m["s1"], m["num"])


def _boxed(text: str) -> str | None:
    """The contents of the last ``\\boxed{...}`` (braces balanced; unclosed: to the end), or ``None``."""
    starts = list(_BOXED.finditer(text))
    if not starts:
        return None
    begin = end = starts[-1].end()
    depth = 1
    while end < len(text):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            break
        end += 1
    return text[begin:end]


def show_number(value: float) -> str:
    """A number as replies, prompts and the environment's ``answers`` write it, reading back exactly: an integer
    without a decimal point, anything else as ``repr``."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def final_number(text: str) -> float | None:
    """The answer a reply commits to: the first number on the line of the last ``####`` (None when that line
    has none: the reply's own final line decides, whatever numbers came before it), else the number in the
    last ``\\boxed{...}`` when it holds exactly one, else the last number in the text; ``None`` when there is
    none, or it is absurd or only part of a number (``1.5e3``, ``3/4``: read whole or not at all)."""
    marker = text.rfind("####")
    if marker >= 0:
        end = text.find("\n", marker)
        line = text[marker + 4 : end if end >= 0 else len(text)]
        m = _IN_TEXT.search(line)
        return None if m is None else _whole(line, m)
    inside = _boxed(text)
    if inside is not None and (found := list(_IN_TEXT.finditer(inside))):
        # one number in the box (\text{12 dollars}), or no answer we can read (\frac{1}{2}, 3/4)
        return _whole(inside, found[0]) if len(found) == 1 else None
    last = None
    for last in _IN_TEXT.finditer(text):  # noqa: B007 - only the last match is wanted
        pass
    return None if last is None else _whole(text, last)


def _whole(text: str, m: re.Match[str]) -> float | None:
    """The number ``m`` found, unless it is only the start of one (an exponent or a fraction follows)."""
    after = text[m.end() : m.end() + 2]
    follows = after[:1]
    if (follows in ("e", "E", "/") and after[1:2].isdigit()) or (follows in ("e", "E") and after[1:2] in ("+", "-")):
        return None
    return _number(m["s1"], m["num"])


# -- question files ----------------------------------------------------------------------------------------
def _show(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _question(obj: object, where: str, qid: str) -> Question:
    """One line's question; a ``ValueError`` starting with ``where`` if the line is malformed."""
    if not isinstance(obj, dict):
        raise ValueError(f'{where}: expected a JSON object with "question" and "answer", got {type(obj).__name__}')
    text = obj.get("question")
    if not isinstance(text, str) or not text.strip():
        got = "nothing" if "question" not in obj else _show(text)
        raise ValueError(f'{where}: "question" must be a non-empty string, got {got}')
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            f'{where}: "question" holds characters no UTF-8 text can (a lone surrogate such as "\\ud83d")'
        ) from None
    if "answer" not in obj:
        raise ValueError(f'{where}: missing "answer" (a string ending with a line "#### N", or a number)')
    raw = obj["answer"]
    lines = 0
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        try:
            answer: float | None = float(raw)
        except OverflowError:
            answer = None
        if answer is None or not math.isfinite(answer):
            raise ValueError(f'{where}: "answer" must be a finite number, got {_show(raw)}')
    elif isinstance(raw, str):
        # GSM8K's solution lines are "\n"-separated (str.splitlines would also split on U+2028, \x0b...)
        solution = [line.rstrip("\r") for line in raw.strip().split("\n")] or [""]
        last = solution[-1].strip()
        answer = parse_number(last[4:]) if last.startswith("####") else None
        if answer is None:
            raise ValueError(f'{where}: "answer" must end with a line "#### N" (a number), got {_show(last)}')
        lines = sum(1 for line in solution[:-1] if line.strip())
    else:
        raise ValueError(f'{where}: "answer" must be a string ending with "#### N" or a number, got {_show(raw)}')

    difficulty = obj.get("difficulty")
    if difficulty is not None and (
        isinstance(difficulty, bool)
        or not isinstance(difficulty, (int, float))
        or not 0.0 <= difficulty <= 1.0  # also refuses NaN
    ):
        raise ValueError(f'{where}: "difficulty" must be a number in [0, 1], got {_show(difficulty)}')
    if lines == 0 and difficulty is not None:  # no solution to count: the difficulty says how hard it is
        steps = 1 + round(float(difficulty) * (MAX_STEPS - 1))
    else:
        steps = min(max(lines, 1), MAX_STEPS)
    level = (steps - 1) / (MAX_STEPS - 1) if difficulty is None else float(difficulty)
    return Question(qid, text.strip(), answer, steps, level)


@dataclass(frozen=True)
class QuestionFile:
    """The questions :func:`read_questions` read from a file.

    Attributes:
        path: the file as given.
        questions: its questions, in file order (at most the ``limit`` asked for).
        digest: SHA-256 (hex) of the bytes read: what the questions were made from (a run key names it).
        lines: the lines read (blank ones included).
        complete: whether the file ended; False when reading stopped at ``limit`` questions.
    """

    path: str
    questions: tuple[Question, ...]
    digest: str
    lines: int
    complete: bool


def read_questions(path: str | os.PathLike[str], limit: int | None = None) -> QuestionFile:
    """The first ``limit`` questions (all, with None) of a JSONL file in the GSM8K layout (module docstring).

    The file is opened once and read line by line, each line at most :data:`MAX_LINE_BYTES`: a pipe or a
    FIFO is read as it comes, and reading stops at the ``limit``-th question, so neither a huge file nor an
    endless stream is read past what is needed. Raises ``ValueError`` for a missing or unreadable file, a
    file with no questions, a line too long and (naming the line) every malformed line read.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    name = Path(path).name
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory, expected a JSONL file of questions")
    try:
        fh = open(path, "rb")  # (closed by the with below, after the loop that may stop early)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file (expected a JSONL file of questions)") from None
    except OSError as e:
        raise ValueError(f"{path}: cannot read it ({e.strerror or e})") from None
    digest = hashlib.sha256()
    questions: list[Question] = []
    lineno = 0
    complete = False
    with fh:
        while limit is None or len(questions) < limit:
            try:
                raw = fh.readline(MAX_LINE_BYTES + 1)
            except OSError as e:
                raise ValueError(f"{path}: cannot read it ({e.strerror or e})") from None
            if not raw:
                complete = True
                break
            lineno += 1
            where = f"{path} line {lineno}"
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise ValueError(
                    f"{where}: longer than {MAX_LINE_BYTES} bytes (expected one JSON object per line: "
                    "is it a JSONL file?)"
                )
            digest.update(raw)
            question = _line_question(raw, where, f"{name}:{lineno}", first=lineno == 1)
            if question is not None:
                questions.append(question)
    if not questions:
        raise ValueError(f"{path}: no questions (the file is empty or blank)")
    return QuestionFile(str(path), tuple(questions), digest.hexdigest(), lineno, complete)


def _line_question(raw: bytes, where: str, qid: str, first: bool) -> Question | None:
    """One line's question (None for a blank line); a ``ValueError`` starting with ``where`` if malformed."""
    try:
        line = raw.decode("utf-8-sig" if first else "utf-8")  # tolerate a byte-order mark
    except UnicodeDecodeError as e:
        raise ValueError(f"{where}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from None
    except (ValueError, RecursionError) as e:  # e.g. an integer of too many digits, nesting too deep
        raise ValueError(f"{where}: invalid JSON ({_show(str(e) or type(e).__name__)})") from None
    return _question(obj, where, qid)


def load_jsonl(path: str | os.PathLike[str], limit: int | None = None) -> list[Question]:
    """The questions of a JSONL file in the GSM8K layout (see the module docstring), in file order: the first
    ``limit`` of them (all, with None), read as :func:`read_questions` does.

    Raises ``ValueError`` for a missing or unreadable file, a file with no questions, and (naming the line)
    every malformed line read.
    """
    return list(read_questions(path, limit).questions)
