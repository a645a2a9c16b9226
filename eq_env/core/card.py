"""The model card of a benchmark run, and the leaderboard of several, as markdown and self-contained HTML.

Both are rendered from ``card.json`` (:func:`eq_env.core.bench.make_card`) alone, so a card can be written
again, or compared, without the runs. One list of blocks (headings, tables, paragraphs, figures) is built
per page and rendered twice, so the two formats cannot say different things. The HTML embeds its figures
as ``data:`` URIs and its style inline: one file, no script, nothing fetched — it opens offline in any
browser. Text that comes from outside (a model's name, an endpoint) is escaped in both formats.

**Scores that do not rank a model.** A task's score is marked (†) when too many of the model's decisions
were fallbacks (invalid replies made the policy's scripted fallback act: NO_TRADE, BLOCK, a pass — which can
score well by itself) or too many episodes failed (left out of the metrics);
:func:`eq_env.core.bench.score_caveats` says when. A marked score is never the leaderboard's best.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eq_env.core.records import MAX_DEPTH, too_deep
from eq_env.core.report import fmt_number, from_json_number, no_negative_zeros, printable

__all__ = [
    "compare_cards",
    "load_card",
    "render_card_html",
    "render_card_markdown",
    "render_leaderboard",
    "write_card",
]

_STYLE = """body{font-family:system-ui,sans-serif;max-width:1500px;margin:2em auto;padding:0 1em;color:#222}
.wide{overflow-x:auto}table{border-collapse:collapse;margin:.6em 0 1.2em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}td{white-space:nowrap}
th:first-child,td:first-child{text-align:left;white-space:normal}th{background:#f3f3f3}td.best{font-weight:bold}
table.meta td{text-align:left;white-space:normal}.note{color:#555;font-size:.92em}.warn{color:#a40000}
img{max-width:100%;border:1px solid #eee}code{background:#f6f6f6;padding:0 .2em}
h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}"""
DAGGER = "†"


class Outside(str):
    """Text from outside the package (a model's name, an endpoint, a directory): rendered inert — escaped in
    HTML, its markdown markup (``|``, HTML, links, code) backslash-escaped, its control characters written as
    escapes (``\x1b``: the markdown is printed to terminals) — and never read as our markup."""


_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`[]<>|"})

Block = tuple[Any, ...]  # ("h1"|"h2"|"p"|"note"|"warn", text) · ("ul", items) · ("table", headers, rows, extra)
# · ("img", path, alt); a table's extra: {"best": {(row, col)}, "meta": bool}


# ---------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------
def _num(x: Any, digits: int) -> str:
    v = from_json_number(x)
    return "—" if math.isnan(v) else no_negative_zeros(fmt_number(v, f".{digits}f"))


def cell_text(cell: Mapping[str, Any], digits: int, *, interval: bool = True) -> str:
    """``0.523 [0.501, 0.545]``; the mean alone with one seed; ``—`` with none."""
    mean = _num(cell["mean"], digits)
    if not interval or mean == "—" or math.isnan(from_json_number(cell["low"])):
        return mean
    return f"{mean} [{_num(cell['low'], digits)}, {_num(cell['high'], digits)}]"


def _arrow(higher_is_better: bool | None) -> str:
    return " ↑" if higher_is_better is True else " ↓" if higher_is_better is False else ""


def _int(x: Any) -> str:
    v = from_json_number(x)
    return "—" if math.isnan(v) else f"{round(v):,}"


def _priced(card: Mapping[str, Any]) -> bool:
    return any(from_json_number(p) > 0 for p in card["prices"])


def _usd(card: Mapping[str, Any], x: Any) -> str:
    """Dollars, or ``—`` when the run was given no prices (0.0000 would read as free)."""
    v = from_json_number(x)
    return "—" if math.isnan(v) or not _priced(card) else f"{v:.4f}"


def _caveats(t: Mapping[str, Any]) -> list[str]:
    from eq_env.core.bench import score_caveats

    return score_caveats(t["llm"])


# ---------------------------------------------------------------------------
# The card
# ---------------------------------------------------------------------------
def _header(card: Mapping[str, Any]) -> list[list[Any]]:
    quick = " (the quick battery)" if card["quick"] else ""
    prompts = sorted({p for t in card["tasks"] for p in t["prompts"]})
    given = ", ".join(f"{k}={v}" for k, v in card["params"].items())
    sampling = "every other parameter the policy's default (each task lists its policies in full)"
    prices = (
        f"prompt {card['prices'][0]:g}, completion {card['prices'][1]:g}"
        if _priced(card)
        else "not given: costs shown as —"
    )
    part = []
    if "part_of" in card:  # (eq-env bench --tasks: never to be read as the battery's score)
        names = ", ".join(t["name"] for t in card["tasks"])
        part = [["tasks", (Outside(names), f" only: {len(card['tasks'])} of the battery's {_int(card['part_of'])}")]]
    return [
        ["model", Outside(card["model"])],
        ["endpoint", Outside(card["endpoint"]) if card["endpoint"] else "$OPENAI_BASE_URL, else OpenAI's"],
        ["battery", (Outside(card["battery"]), quick)],
        *part,
        ["eq_env", Outside(card["eq_env"])],
        ["prompts", "; ".join(prompts)],
        ["sampling", (Outside(given + "; ") if given else "", sampling)],
        ["prices ($ per million tokens)", prices],
    ]


_SUMMARY_HEADERS = [
    "task",
    "main metric",
    "model [95% CI]",
    "seeds",
    "fallbacks / calls",
    "failed episodes",
    "prompt tokens",
    "completion tokens",
    "cost as drawn ($)",
]


def _summary(card: Mapping[str, Any]) -> list[Block]:
    rows, warnings = [], []
    for t in card["tasks"]:
        main, llm = t["main"], t["llm"]
        caveats = _caveats(t)
        value = cell_text(main["cell"], main["digits"]) + (f" {DAGGER}" if caveats else "")
        warnings += [f"{DAGGER} {t['name']}: {c}." for c in caveats]
        rows.append(
            [
                t["name"],
                main["title"] + _arrow(main["higher_is_better"]),
                value,
                str(len(t["seeds"])),
                f"{_int(llm['fallbacks'])} / {_int(llm['calls'])}",
                f"{_int(llm['failed_episodes'])} / {_int(llm['episodes'])}",
                _int(llm["prompt_tokens"]),
                _int(llm["completion_tokens"]),
                _usd(card, llm["cost_usd"]),
            ]
        )
    return [
        ("h2", "Summary"),
        (
            "note",
            "Each task's main metric: mean over seeds and its 95% Student-t interval; ↑ higher is better, ↓ "
            "lower is better. Fallbacks: decisions the policy's scripted fallback made after the model's replies "
            "stayed invalid. Failed episodes (no answer after the retries) are left out of the metrics. Tokens "
            "and cost as drawn: what each condition's samples cost, answers shared between conditions counted in "
            "each (the bill of a fresh run is lower; a replay's is zero).",
        ),
        ("table", _SUMMARY_HEADERS, rows, {}),
        *(("warn", w) for w in warnings),
    ]


def _task_table(t: Mapping[str, Any]) -> Block:
    metrics = t["metrics"]
    headers = ["condition", *(m["title"] + _arrow(m["higher_is_better"]) for m in metrics)]
    rows = [
        [r["label"], *(cell_text(r["cells"][m["key"]], m["digits"]) if m["key"] in r["cells"] else "" for m in metrics)]
        for r in t["rows"]
    ]
    return ("table", headers, rows, {})


def _reference_table(t: Mapping[str, Any]) -> Block | None:
    if not t["reference"]:
        return None
    keys = [m for m in t["metrics"] if any(m["key"] in ref["values"] for ref in t["reference"])]
    model = {r["label"]: r["cells"] for r in t["rows"]}
    headers = ["condition"]
    for m in keys:
        headers += [f"{m['title']} (reference)", f"{m['title']} (model)"]
    rows = []
    for ref in t["reference"]:
        row = [ref["label"]]
        for m in keys:
            mine = model.get(ref["label"], {}).get(m["key"])
            row += [ref["values"].get(m["key"], ""), cell_text(mine, m["digits"], interval=False) if mine else ""]
        rows.append(row)
    return ("table", headers, rows, {})


def _llm_line(card: Mapping[str, Any], t: Mapping[str, Any]) -> str:
    llm = t["llm"]
    estimated = from_json_number(llm["usage_estimated"])
    return (
        f"LLM: {_int(llm['calls'])} calls; {_int(llm['reasks'])} invalid replies (each sent back with its "
        f"error, up to the policy's max_reasks); {_int(llm['fallbacks'])} fallbacks (no valid reply: the "
        f"policy's scripted fallback acted); {_int(llm['failed_episodes'])} of {_int(llm['episodes'])} episodes "
        f"failed (left out of the metrics); {_int(llm['prompt_tokens'])} prompt + {_int(llm['completion_tokens'])} "
        "completion tokens as drawn"
        + (f" ({_int(estimated)} calls' usage estimated)" if estimated else "")
        + (f", ${_usd(card, llm['cost_usd'])}" if _priced(card) else "")
        + "."
    )


def _part(card: Mapping[str, Any]) -> str:
    return f" ({len(card['tasks'])} of its tasks)" if "part_of" in card else ""


def card_blocks(card: Mapping[str, Any]) -> list[Block]:
    """The card's content, in order."""
    blocks: list[Block] = [
        ("h1", ("Model card: ", Outside(card["model"]), " on ", Outside(card["battery"]), _part(card))),
        ("table", ["", ""], _header(card), {"meta": True}),
        *_summary(card),
    ]
    for t in card["tasks"]:
        blocks += [("h2", f"{t['title']} (`{t['name']}`)"), _task_table(t)]
        ref = _reference_table(t)
        if ref:
            blocks += [("p", f"Reference numbers beside the model's ({t['reference_source'] or 'see the task'}):"), ref]
        if t["notes"]:
            blocks.append(("ul", list(t["notes"])))
        blocks += [("warn", f"{DAGGER} {c}.") for c in _caveats(t)]
        if t["figure"]:
            blocks.append(("img", t["figure"], t["name"]))
        blocks.append(("note", _llm_line(card, t)))
        policies = [(f"{role}: ", Outside(spec)) for role, specs in t.get("policies", {}).items() for spec in specs]
        if policies:
            blocks += [("note", "The model's policies, every parameter spelled out:"), ("ul", policies)]
    blocks.append(
        (
            "note",
            "Seeds per task: "
            + "; ".join(f"{t['name']} {t['seeds']}" for t in card["tasks"])
            + f". Written by eq_env {card['eq_env']} from card.json; `eq-env bench --compare` puts several "
            "cards side by side.",
        )
    )
    return blocks


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------
def _md_text(text: Any) -> str:
    """Text on one line for markdown: :class:`Outside` text (or parts of a tuple) escaped; our own text with
    any HTML tag made inert (a markdown viewer renders inline HTML; "< 0.01" stays as it is)."""
    if isinstance(text, tuple):
        return "".join(_md_text(part) for part in text)
    flat = re.sub(r"\s+", " ", str(text))  # (not strip: a part's edge space joins it to the next)
    if isinstance(text, Outside):
        return printable(flat).translate(_MD_SPECIAL)
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", flat)


def _md_cell(text: Any) -> str:
    return _md_text(text) if isinstance(text, (Outside, tuple)) else _md_text(text).replace("|", "\\|")


def to_markdown(blocks: Sequence[Block]) -> str:
    out: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind == "h1":
            out += [f"# {_md_text(block[1])}", ""]
        elif kind == "h2":
            out += [f"## {_md_text(block[1])}", ""]
        elif kind in ("p", "note", "warn"):
            out += [("**" + _md_text(block[1]) + "**") if kind == "warn" else _md_text(block[1]), ""]
        elif kind == "ul":
            out += [f"- {_md_text(item)}" for item in block[1]] + [""]
        elif kind == "img":
            out += [f"![{_md_text(block[2])}]({block[1]})", ""]
        elif kind == "table":
            headers, rows, extra = block[1], block[2], block[3]
            best = extra.get("best", set())
            out.append("| " + " | ".join(_md_cell(h) for h in headers) + " |")
            out.append("|" + "|".join("---" for _ in headers) + "|")
            for i, row in enumerate(rows):
                cells = [f"**{_md_cell(c)}**" if (i, j) in best else _md_cell(c) for j, c in enumerate(row)]
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out)


def _html_text(text: Any) -> str:
    """Escaped; in our own text, `code` spans as <code>."""
    if isinstance(text, tuple):
        return "".join(_html_text(part) for part in text)
    if isinstance(text, Outside):
        return html.escape(printable(text))
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(str(text)))


def to_html(blocks: Sequence[Block], root: Path, title: str) -> str:
    parts = []
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2"):
            parts.append(f"<{kind}>{_html_text(block[1])}</{kind}>")
        elif kind in ("p", "note", "warn"):
            parts.append(f"<p{'' if kind == 'p' else f' class={kind}'}>{_html_text(block[1])}</p>")
        elif kind == "ul":
            parts.append("<ul class=note>" + "".join(f"<li>{_html_text(i)}</li>" for i in block[1]) + "</ul>")
        elif kind == "img":
            data = base64.b64encode((root / block[1]).read_bytes()).decode("ascii")
            parts.append(f'<p><img alt="{html.escape(block[2])}" src="data:image/png;base64,{data}"></p>')
        elif kind == "table":
            headers, rows, extra = block[1], block[2], block[3]
            best = extra.get("best", set())
            head = (
                ""
                if extra.get("meta")
                else ("<thead><tr>" + "".join(f"<th>{_html_text(h)}</th>" for h in headers) + "</tr></thead>")
            )
            body = "".join(
                "<tr>"
                + "".join(
                    f"<td{' class=best' if (i, j) in best else ''}>{_html_text(c)}</td>" for j, c in enumerate(row)
                )
                + "</tr>"
                for i, row in enumerate(rows)
            )
            css = " class=meta" if extra.get("meta") else ""
            parts.append(f"<div class=wide><table{css}>{head}<tbody>{body}</tbody></table></div>")
    title = html.escape(printable(title))  # (a model's name: its control characters escaped too)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_STYLE}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n"
    )


def render_card_markdown(card: Mapping[str, Any]) -> str:
    """The card as markdown (figures linked by their relative paths)."""
    return to_markdown(card_blocks(card))


def render_card_html(card: Mapping[str, Any], root: Path) -> str:
    """The card as one self-contained HTML page; figures read from ``root`` and embedded."""
    return to_html(card_blocks(card), Path(root), f"{card['model']} on {card['battery']}")


def write_card(card: Mapping[str, Any], out: Path) -> list[str]:
    """``card.json``, ``card.md`` and ``card.html`` in ``out``; the file names."""
    out = Path(out)
    (out / "card.json").write_text(json.dumps(card, indent=1, sort_keys=True, allow_nan=False) + "\n")
    (out / "card.md").write_text(render_card_markdown(card))
    (out / "card.html").write_text(render_card_html(card, out))
    return ["card.json", "card.md", "card.html"]


# ---------------------------------------------------------------------------
# Cards side by side
# ---------------------------------------------------------------------------
def load_card(directory: Path) -> dict[str, Any]:
    """A benchmark directory's ``card.json``, or one line saying what is wrong with it."""
    path = Path(directory) / "card.json"
    if not path.is_file():
        found = Path(directory).glob("*/card.json") if Path(directory).is_dir() else ()
        inside = sorted(p.parent.name for p in found)
        hint = (
            f"; it holds the cards of {', '.join(inside)}: name those directories"
            if inside
            else " (a finished `eq-env bench` run writes one)"
        )
        raise ValueError(f"{directory}: no card.json{hint}")
    try:
        text = path.read_text()
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err})") from None
    line = too_deep(text)  # (before the parser, which recurses once per level)
    if line is not None:
        raise ValueError(f"{path}:{line}: nested deeper than {MAX_DEPTH} levels; not a model card (a card nests 7)")
    try:
        card = json.loads(text)
    except ValueError as err:  # (an integer of more than 4300 digits too: int() refuses it)
        raise ValueError(f"{path}: not JSON ({err})") from None
    if not isinstance(card, dict) or card.get("card") != 1 or not isinstance(card.get("tasks"), list):
        raise ValueError(f'{path}: not a model card of this version (expected "card": 1 and a task list)')
    try:  # a card that renders has every field the card and the leaderboard read, each of its type
        render_card_markdown(card)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        raise ValueError(
            f"{path}: not a model card eq_env can read ({type(err).__name__}: {err}); "
            "write it again with `eq-env bench` (the same command replays its runs)"
        ) from None
    return card


def compare_cards(cards: Sequence[Mapping[str, Any]], names: Sequence[str]) -> None:
    """Refuse, in one line, cards that cannot stand side by side: different batteries or task sets."""
    if len(cards) < 2:
        raise ValueError("--compare: expected at least two benchmark directories")
    first = cards[0]
    for card, name in zip(cards[1:], names[1:], strict=True):
        if card["battery"] != first["battery"]:
            raise ValueError(
                f"--compare: {name} ran {card['battery']} and {names[0]} {first['battery']}: scores "
                "of different batteries are not comparable"
            )
        if [t["name"] for t in card["tasks"]] != [t["name"] for t in first["tasks"]]:
            raise ValueError(f"--compare: {name} and {names[0]} have different tasks")


def _best(cards: Sequence[Mapping[str, Any]], task: int) -> set[int]:
    """The models whose main metric is best on a task, among those whose score ranks (no caveat); none
    when the metric has no direction or every ranked model ties (bold everywhere says nothing)."""
    main = cards[0]["tasks"][task]["main"]
    if main["higher_is_better"] is None:
        return set()
    values = {
        i: from_json_number(c["tasks"][task]["main"]["cell"]["mean"])
        for i, c in enumerate(cards)
        if not _caveats(c["tasks"][task])
    }
    finite = {i: v for i, v in values.items() if not math.isnan(v)}
    if len(set(finite.values())) < 2:
        return set()
    top = max(finite.values()) if main["higher_is_better"] else min(finite.values())
    return {i for i, v in finite.items() if v == top}


def render_leaderboard(cards: Sequence[Mapping[str, Any]], names: Sequence[str], out: Path) -> list[str]:
    """``leaderboard.md``, ``leaderboard.html`` and ``leaderboard.png`` in ``out``: each model's main metric
    per task (the best in bold; a score with a caveat marked † and never best), its fallbacks, failures and
    cost; the file names."""
    from eq_env.core.report import plot_lines

    compare_cards(cards, names)
    tasks = cards[0]["tasks"]
    models = [c["model"] for c in cards]
    labels = [Outside(m if models.count(m) == 1 else f"{m} ({n})") for m, n in zip(models, names, strict=True)]
    headers = [
        "model",
        *(f"{t['name']}: {t['main']['title']}{_arrow(t['main']['higher_is_better'])}" for t in tasks),
        "fallbacks / calls",
        "failed episodes",
        "cost as drawn ($)",
    ]
    best = {(i, j + 1) for j in range(len(tasks)) for i in _best(cards, j)}
    rows, warnings = [], []
    for label, card in zip(labels, cards, strict=True):
        total = {
            k: sum(from_json_number(t["llm"][k]) for t in card["tasks"])
            for k in ("fallbacks", "calls", "failed_episodes", "episodes", "cost_usd")
        }
        scores = []
        for t in card["tasks"]:
            caveats = _caveats(t)
            scores.append(cell_text(t["main"]["cell"], t["main"]["digits"]) + (f" {DAGGER}" if caveats else ""))
            warnings += [(f"{DAGGER} ", label, f", {t['name']}: {c}.") for c in caveats]
        rows.append(
            [
                label,
                *scores,
                f"{_int(total['fallbacks'])} / {_int(total['calls'])}",
                f"{_int(total['failed_episodes'])} / {_int(total['episodes'])}",
                _usd(card, total["cost_usd"]),
            ]
        )
    versions = sorted({c["eq_env"] for c in cards})
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    panels = []
    for j, t in enumerate(tasks):
        cells = [c["tasks"][j]["main"]["cell"] for c in cards]
        ys = [from_json_number(c["mean"]) for c in cells]
        # the interval as the cards have it (cut to the metric's range, so not always symmetric)
        below = [y - from_json_number(c["low"]) for y, c in zip(ys, cells, strict=True)]
        above = [from_json_number(c["high"]) - y for y, c in zip(ys, cells, strict=True)]
        # (none below zero: a hand-edited card's mean outside its interval must not stop the plot)
        yerr = [
            [0.0 if math.isnan(e) else max(e, 0.0) for e in below],
            [0.0 if math.isnan(e) else max(e, 0.0) for e in above],
        ]
        panels.append(
            {
                "ylabel": f"{t['main']['title']}{_arrow(t['main']['higher_is_better'])}",
                "series": [
                    {"label": t["name"], "x": list(range(len(cards))), "y": ys, "yerr": yerr, "style": {"fmt": "o"}}
                ],
            }
        )
    # (a name's "$...$" is no formula for matplotlib)
    plot_lines(out / "leaderboard.png", panels, xlabel="model", xticklabels=[lb.replace("$", r"\$") for lb in labels])
    blocks: list[Block] = [
        ("h1", "Leaderboard"),
        (
            "p",
            (
                f"{len(cards)} models on ",
                Outside(cards[0]["battery"]),
                _part(cards[0]),
                f" (eq_env {', '.join(versions)}): each "
                "task's main metric, mean over seeds [95% interval]; the best in bold, among the scores without a "
                "caveat (†).",
            ),
        ),
        ("table", headers, rows, {"best": best}),
        *(("warn", w) for w in warnings),
        ("img", "leaderboard.png", "main metric per task and model"),
        ("note", ("Cards: ", Outside("; ".join(f"{label}: {n}" for label, n in zip(labels, names, strict=True))))),
    ]
    (out / "leaderboard.md").write_text(to_markdown(blocks))
    (out / "leaderboard.html").write_text(to_html(blocks, out, "Leaderboard"))
    return ["leaderboard.md", "leaderboard.html", "leaderboard.png"]
