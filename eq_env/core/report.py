"""Small helpers to write tables (CSV and Markdown) and plots of experiment results."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "cell",
    "fmt_number",
    "from_json_number",
    "json_number",
    "label",
    "markdown_table",
    "mean_std",
    "no_negative_zeros",
    "plot_lines",
    "printable",
    "write_csv",
]


def printable(text: Any, *, lines: bool = False) -> str:
    """Text from outside (a model's name, a path, a policy spec, an endpoint's error) as a terminal may be
    shown it: each character Python would not print as is — a control character (the escape that starts
    ``\x1b[31m``, a newline, a carriage return), a bidirectional override, a lone surrogate — written as its
    escape (``\x1b``, ``\n``, ``\u202e``), the rest unchanged. With ``lines``, newlines and tabs are kept:
    a document of several lines. Only what is shown changes: what is sent or recorded stays as given."""
    text = str(text)
    if text.isprintable():
        return text
    keep = "\n\t" if lines else ""
    return "".join(ch if ch.isprintable() or ch in keep else repr(ch)[1:-1] for ch in text)


def json_number(x: Any) -> Any:
    """NaN (an undefined metric) as JSON null; anything else as is."""
    return None if isinstance(x, float) and math.isnan(x) else x


def from_json_number(x: Any) -> float:
    """JSON null back to NaN."""
    return math.nan if x is None else float(x)


def fmt_number(x: float, spec: str) -> str:
    """``format(x, spec)``, except that a number that rounds to zero never shows a minus sign.

    ``-0.001`` with ``".2f"`` is ``"0.00"`` (``"+0.00"`` with ``"+.2f"``), not ``"-0.00"``: a table
    reader takes the sign for a real, if small, loss.
    """
    text = format(x, spec)
    if text.startswith("-") and len(text) > 1 and set(text[1:].replace(".", "")) <= {"0"}:
        return ("+" if "+" in spec else "") + text[1:]
    return text


def no_negative_zeros(text: str) -> str:
    """A table already formatted as text, with every ``-0.000`` (a tiny negative number rounded) shown as
    `` 0.000`` (same width, so columns stay aligned); ``-0.0001`` and ``-1.000`` are left alone."""
    return re.sub(r"(?<![\w.])-(0\.0+)(?![\w.])", r" \1", text)


def mean_std(mean: float, std: float, digits: int = 2) -> str:
    """``"1.64 ± 0.01"``; ``"—"`` for an undefined value."""
    if mean is None or math.isnan(mean):
        return "—"
    if std is None or math.isnan(std):
        return fmt_number(mean, f".{digits}f")
    return f"{fmt_number(mean, f'.{digits}f')} ± {fmt_number(std, f'.{digits}f')}"


def cell(value: Any, digits: int = 3) -> str:
    """A value for a Markdown table: floats rounded, NaN and None as ``—``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float):
        return fmt_number(value, f".{digits}f")
    return str(value)


def label(value: Any) -> str:
    """A parameter value for a table: numbers compactly (``0.3``, ``2``), others as text."""
    if isinstance(value, float) and not isinstance(value, bool):
        return fmt_number(value, "g")
    return str(value)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def _csv_value(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return round(value, 9) + 0.0  # drop float dust (std 3e-16 of equal values); + 0.0 turns -0.0 into 0.0
    return value


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
    """Rows as CSV with exactly ``columns``; floats to 9 decimals; NaN and None become empty cells."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_value(v) for k, v in row.items()})


def plot_lines(
    path: Path,
    panels: Sequence[Mapping[str, Any]],
    *,
    xlabel: str,
    title: str | None = None,
    xticklabels: Sequence[str] | None = None,
) -> None:
    """Panels (two per row), each ``{"ylabel", "series": [{"label", "x", "y", "yerr", "style"}]}`` and,
    optionally, a ``"title"`` of its own.

    A series' ``style`` is passed to matplotlib's ``errorbar`` (e.g. ``{"fmt": "o", "color": "k"}``);
    a series with ``"hline"`` draws a dashed horizontal reference line instead. ``xticklabels``
    names the x positions 0, 1, 2... (a categorical axis). When several panels show the same
    labelled series, one legend below the panels names them (a legend per panel repeats itself
    and hides points); otherwise each panel has its own. A series labelled ``""`` is not named.
    """
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, safe in workers

    cols = min(len(panels), 2)
    rows = math.ceil(len(panels) / cols)
    fig = Figure(figsize=(5.6 * cols, 4.0 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    names = [[s["label"] for s in panel["series"] if s.get("label")] for panel in panels]
    shared = len(panels) > 1 and bool(names[0]) and all(n == names[0] for n in names)
    for ax, panel, named in zip(axes, panels, names, strict=False):
        for s in panel["series"]:
            name = s["label"] or "_unnamed"  # matplotlib leaves "_..." labels out of legends
            if "hline" in s:
                ax.axhline(s["hline"], linestyle="--", linewidth=1, label=name, **s.get("style", {}))
                continue
            style = {"fmt": "-o", "capsize": 3, "markersize": 4, **s.get("style", {})}
            ax.errorbar(s["x"], s["y"], yerr=s.get("yerr"), label=name, **style)
        ax.set_xlabel(xlabel)
        if xticklabels is not None:
            ax.set_xticks(range(len(xticklabels)), list(xticklabels), rotation=20, ha="right")
        ax.set_ylabel(panel["ylabel"])
        if panel.get("title"):
            ax.set_title(panel["title"], fontsize=9)
        ax.grid(alpha=0.3)
        if named and not shared:
            ax.legend(fontsize=8)
    if shared:
        handles, labels = axes[0].get_legend_handles_labels()
        # as many columns as fit the figure's width (about 15 characters an inch at this size), so that
        # long labels wrap onto more rows instead of running off the edges
        fits = int(5.6 * cols * 15 // (max(len(label) for label in labels) + 6))
        fig.legend(handles, labels, loc="outside lower center", ncols=max(1, min(len(labels), 4, fits)), fontsize=8)
    if title:
        fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
