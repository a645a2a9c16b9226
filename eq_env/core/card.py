"""The model card of a benchmark run, and the leaderboard of several, as markdown and self-contained HTML.

Both are rendered from ``card.json`` (:func:`eq_env.core.bench.make_card`) alone, so a card can be written
again, or compared, without the runs. The HTML embeds its figures as ``data:`` URIs and its style inline:
one file, no script, nothing fetched — it opens offline in any browser.
"""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eq_env.core.report import fmt_number, from_json_number, markdown_table, no_negative_zeros

__all__ = [
    "compare_cards",
    "load_card",
    "render_card_html",
    "render_card_markdown",
    "render_leaderboard",
    "write_card",
]

_STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.6em 0 1.2em}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f3f3f3}td.best{font-weight:bold}
table.meta td{text-align:left}.note{color:#555;font-size:.92em}img{max-width:100%;border:1px solid #eee}
code{background:#f6f6f6;padding:0 .2em}
h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}"""


_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`[]<>|"})


def _md(text: Any) -> str:
    """Free text (a model's name, an endpoint, a directory) for a markdown table or heading: on one line, with
    what markdown reads as markup (``|`` ending a cell, HTML, links, code) escaped."""
    return " ".join(str(text).splitlines()).translate(_MD_SPECIAL)


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
    return {True: " ↑", False: " ↓"}.get(higher_is_better, "")  # type: ignore[arg-type]


def _int(x: Any) -> str:
    v = from_json_number(x)
    return "—" if math.isnan(v) else f"{round(v):,}"


def _usd(x: Any) -> str:
    v = from_json_number(x)
    return "—" if math.isnan(v) else f"{v:.4f}"


def _header(card: Mapping[str, Any]) -> list[tuple[str, str]]:
    quick = " (the quick battery)" if card["quick"] else ""
    prompts = sorted({p for t in card["tasks"] for p in t["prompts"]})
    params = ", ".join(f"{k}={v}" for k, v in card["params"].items()) or "the LLM policies' defaults"
    return [
        ("model", card["model"]),
        ("endpoint", card["endpoint"] or "$OPENAI_BASE_URL, else OpenAI's"),
        ("battery", f"{card['battery']}{quick}"),
        ("eq_env", card["eq_env"]),
        ("prompts", "; ".join(prompts)),
        ("sampling", params),
        ("prices ($ per million tokens)", f"prompt {card['prices'][0]:g}, completion {card['prices'][1]:g}"),
    ]


def _summary_rows(card: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for t in card["tasks"]:
        main, llm = t["main"], t["llm"]
        rows.append([
            t["name"], main["title"] + _arrow(main["higher_is_better"]), cell_text(main["cell"], main["digits"]),
            str(len(t["seeds"])), f"{_int(llm['failed_episodes'])} / {_int(llm['episodes'])}",
            _int(llm["prompt_tokens"]), _int(llm["completion_tokens"]), _usd(llm["cost_usd"]),
        ])  # fmt: skip
    return rows


_SUMMARY_HEADERS = ("task", "main metric", "model [95% CI]", "seeds", "failed episodes", "prompt tokens",
                    "completion tokens", "cost ($)")  # fmt: skip


_SUMMARY_NOTE = (
    "Each task's main metric: mean over seeds and its 95% Student-t interval; ↑ higher is better, ↓ lower is "
    "better. Tokens and cost count an answer each time a condition used it — one that two conditions share (the "
    "same reply with and without its artifacts, a prompt met again) counts in both — so they exceed what a run "
    "from an empty answer cache is billed (`eq-env bench` prints that bill)."
)


def _task_table(t: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    metrics = t["metrics"]
    headers = ["condition", *(m["title"] + _arrow(m["higher_is_better"]) for m in metrics)]
    rows = [[r["label"], *(cell_text(r["cells"][m["key"]], m["digits"]) if m["key"] in r["cells"] else ""
                          for m in metrics)] for r in t["rows"]]  # fmt: skip
    return headers, rows


def _reference_table(t: Mapping[str, Any]) -> tuple[list[str], list[list[str]]] | None:
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
    return headers, rows


def _llm_line(t: Mapping[str, Any]) -> str:
    llm = t["llm"]
    return (f"LLM: {_int(llm['calls'])} calls, {_int(llm['reasks'])} re-asks, {_int(llm['fallbacks'])} fallbacks "
            f"(no valid reply: the policy's fallback acted), {_int(llm['failed_episodes'])} of "
            f"{_int(llm['episodes'])} episodes failed (left out of the metrics), "
            f"{_int(llm['prompt_tokens'])} prompt + {_int(llm['completion_tokens'])} completion tokens"
            + (f" ({_int(llm['usage_estimated'])} calls' usage estimated)" if from_json_number(llm["usage_estimated"])
               else "")
            + f", ${_usd(llm['cost_usd'])}.")  # fmt: skip


def render_card_markdown(card: Mapping[str, Any]) -> str:
    """The card as markdown (figures linked by their relative paths)."""
    out = [f"# Model card: {_md(card['model'])} on {_md(card['battery'])}", ""]
    out += [markdown_table(["", ""], [[k, _md(v)] for k, v in _header(card)]), ""]
    out += ["## Summary", "", _SUMMARY_NOTE, "", markdown_table(_SUMMARY_HEADERS, _summary_rows(card)), ""]
    for t in card["tasks"]:
        out += [f"## {t['title']} (`{t['name']}`)", ""]
        headers, rows = _task_table(t)
        out += [markdown_table(headers, rows), ""]
        ref = _reference_table(t)
        if ref:
            out += [f"Reference numbers beside the model's ({t['reference_source'] or 'see the task'}):", "",
                    markdown_table(*ref), ""]  # fmt: skip
        out += [f"- {note}" for note in t["notes"]] + ([""] if t["notes"] else [])
        if t["figure"]:
            out += [f"![{t['name']}]({t['figure']})", ""]
        out += [_llm_line(t), ""]
    out += [
        "Seeds per task: " + ", ".join(f"{t['name']} {t['seeds']}" for t in card["tasks"]) + ". Written by eq_env "
        f"{card['eq_env']} from card.json; `eq-env bench --compare` puts several cards side by side.",
        "",
    ]
    return "\n".join(out)


def _html_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    best: Mapping[tuple[int, int], bool] | None = None,
    css: str = "",
) -> str:
    best = best or {}
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td{' class=best' if best.get((i, j)) else ''}>{html.escape(str(c))}</td>"
                         for j, c in enumerate(row)) + "</tr>"
        for i, row in enumerate(rows)
    )  # fmt: skip
    return f"<table{f' class={css}' if css else ''}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<p><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></p>'


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{_STYLE}</style></head><body>\n{body}\n</body></html>\n")  # fmt: skip


def render_card_html(card: Mapping[str, Any], root: Path) -> str:
    """The card as one self-contained HTML page; figures read from ``root`` and embedded."""
    parts = [f"<h1>Model card: <code>{html.escape(card['model'])}</code> on {html.escape(card['battery'])}</h1>",
             _html_table(["", ""], _header(card), css="meta"), "<h2>Summary</h2>",
             f"<p class=note>{html.escape(_SUMMARY_NOTE)}</p>",
             _html_table(_SUMMARY_HEADERS, _summary_rows(card))]  # fmt: skip
    for t in card["tasks"]:
        parts.append(f"<h2>{html.escape(t['title'])} (<code>{html.escape(t['name'])}</code>)</h2>")
        parts.append(_html_table(*_task_table(t)))
        ref = _reference_table(t)
        if ref:
            source = html.escape(t["reference_source"] or "see the task")
            parts.append(f"<p>Reference numbers beside the model's ({source}):</p>")
            parts.append(_html_table(*ref))
        if t["notes"]:
            parts.append("<ul class=note>" + "".join(f"<li>{html.escape(n)}</li>" for n in t["notes"]) + "</ul>")
        if t["figure"]:
            parts.append(_img(root / t["figure"], t["name"]))
        parts.append(f"<p class=note>{html.escape(_llm_line(t))}</p>")
    parts.append(f"<p class=note>Written by eq_env {html.escape(card['eq_env'])} from card.json.</p>")
    return _page(f"{card['model']} on {card['battery']}", "\n".join(parts))


def write_card(card: Mapping[str, Any], out: Path) -> list[str]:
    """``card.json``, ``card.md`` and ``card.html`` in ``out``; the file names."""
    out = Path(out)
    (out / "card.json").write_text(json.dumps(card, indent=1, sort_keys=True, allow_nan=False) + "\n")
    (out / "card.md").write_text(render_card_markdown(card))
    (out / "card.html").write_text(render_card_html(card, out))
    return ["card.json", "card.md", "card.html"]


def load_card(directory: Path) -> dict[str, Any]:
    """A benchmark directory's ``card.json``, or one line saying what is wrong with it."""
    path = Path(directory) / "card.json"
    if not path.is_file():
        raise ValueError(f"{directory}: no card.json (a finished `eq-env bench` run writes one)")
    try:
        card = json.loads(path.read_text())
    except ValueError as err:
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
            raise ValueError(f"--compare: {name} ran {card['battery']} and {names[0]} {first['battery']}: scores "
                             "of different batteries are not comparable")  # fmt: skip
        if [t["name"] for t in card["tasks"]] != [t["name"] for t in first["tasks"]]:
            raise ValueError(f"--compare: {name} and {names[0]} have different tasks")


def _best(cards: Sequence[Mapping[str, Any]], task: int) -> set[int]:
    main = cards[0]["tasks"][task]["main"]
    if main["higher_is_better"] is None:
        return set()
    values = [from_json_number(c["tasks"][task]["main"]["cell"]["mean"]) for c in cards]
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return set()
    top = max(finite) if main["higher_is_better"] else min(finite)
    return {i for i, v in enumerate(values) if v == top}


def render_leaderboard(cards: Sequence[Mapping[str, Any]], names: Sequence[str], out: Path) -> list[str]:
    """``leaderboard.md``, ``leaderboard.html`` and ``leaderboard.png`` in ``out``: each model's main metric
    per task (the best in bold), its failures and its cost; the file names."""
    from eq_env.core.report import plot_lines

    compare_cards(cards, names)
    tasks = cards[0]["tasks"]
    headers = ["model", *(f"{t['name']}: {t['main']['title']}{_arrow(t['main']['higher_is_better'])}" for t in tasks),
               "failed episodes", "cost ($)"]  # fmt: skip
    best = {(i, j + 1): True for j in range(len(tasks)) for i in _best(cards, j)}
    rows: list[list[str]] = []
    for card in cards:
        failed = sum(from_json_number(t["llm"]["failed_episodes"]) for t in card["tasks"])
        episodes = sum(from_json_number(t["llm"]["episodes"]) for t in card["tasks"])
        cost = math.fsum(from_json_number(t["llm"]["cost_usd"]) for t in card["tasks"])
        rows.append([card["model"], *(cell_text(t["main"]["cell"], t["main"]["digits"]) for t in card["tasks"]),
                     f"{_int(failed)} / {_int(episodes)}", _usd(cost)])  # fmt: skip
    md_rows = [[_md(row[0]), *(f"**{c}**" if best.get((i, j)) else c for j, c in enumerate(row) if j)]
               for i, row in enumerate(rows)]  # fmt: skip
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    versions = sorted({c["eq_env"] for c in cards})
    intro = (f"{len(cards)} models on {cards[0]['battery']} (eq_env {', '.join(versions)}): each task's main metric, "
             "mean over seeds [95% interval]; the best in bold.")  # fmt: skip
    sources = [f"- {c['model']}: {n}" for c, n in zip(cards, names, strict=True)]
    md_sources = [f"- {_md(c['model'])}: {_md(n)}" for c, n in zip(cards, names, strict=True)]
    (out / "leaderboard.md").write_text("\n".join(["# Leaderboard", "", intro, "", markdown_table(headers, md_rows),
                                                   "", "Cards:", *md_sources, ""]))  # fmt: skip
    panels = []
    for j, t in enumerate(tasks):
        cells = [c["tasks"][j]["main"]["cell"] for c in cards]
        ys = [from_json_number(c["mean"]) for c in cells]
        # the interval as it is (cut to the metric's range, so not always symmetric); none with one seed
        below = [y - from_json_number(c["low"]) for y, c in zip(ys, cells, strict=True)]
        above = [from_json_number(c["high"]) - y for y, c in zip(ys, cells, strict=True)]
        # (none below zero: a hand-edited card's mean outside its interval must not stop the plot)
        yerr = [[0.0 if math.isnan(e) else max(e, 0.0) for e in below], [0.0 if math.isnan(e) else max(e, 0.0)
                                                                        for e in above]]  # fmt: skip
        panels.append({"ylabel": f"{t['main']['title']}{_arrow(t['main']['higher_is_better'])}", "series": [
            {"label": t["name"], "x": list(range(len(cards))), "y": ys, "yerr": yerr,
             "style": {"fmt": "o"}}]})  # fmt: skip
    labels = [c["model"].replace("$", r"\$") for c in cards]  # a name's "$...$" is no formula for matplotlib
    plot_lines(out / "leaderboard.png", panels, xlabel="model", xticklabels=labels)
    body = "\n".join([
        "<h1>Leaderboard</h1>", f"<p>{html.escape(intro)}</p>", _html_table(headers, rows, best),
        _img(out / "leaderboard.png", "main metric per task and model"),
        "<p class=note>Cards: " + html.escape("; ".join(s[2:] for s in sources)) + "</p>",
    ])  # fmt: skip
    (out / "leaderboard.html").write_text(_page("Leaderboard", body))
    return ["leaderboard.md", "leaderboard.html", "leaderboard.png"]
