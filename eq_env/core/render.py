"""Rendering for every game and view: the text rendering (``"ansi"``) shown (``"human"``) or drawn as a picture
(``"rgb_array"``).

A game renders its state as text once, and :func:`rendered` gives what each render mode asks for:

* ``"ansi"``: the text;
* ``"human"``: the text printed to standard output, and None (what Gymnasium and PettingZoo expect of it);
* ``"rgb_array"``: the text drawn in a fixed bitmap font (:func:`text_frame`), a ``uint8`` array of shape
  ``(height, width, 3)``, dark on light. Its shape depends only on the grid of ``rows`` × ``cols`` characters
  the environment asks for, never on the text, so every frame of a configuration has the same shape, as
  ``gymnasium.wrappers.RecordVideo`` needs. Lines longer than ``cols`` wrap; text beyond ``rows`` is cut, and
  the last row says how many lines were left out. Both sides are even numbers of pixels, as video encoders
  (H.264, what ``RecordVideo`` writes through moviepy) want.

The font is 6 × 10 pixels a character, the printable ASCII characters of DejaVu Sans Mono at 10 px (drawn
once with Pillow, without anti-aliasing, and kept below as bits); other characters are drawn as their closest
ASCII letters (``é`` as ``e``) or ``?``. Nothing is imported beyond numpy, and the same text gives the same
frame, bit for bit.
"""

from __future__ import annotations

import textwrap
import unicodedata

import numpy as np

__all__ = ["CELL", "RENDER_MODES", "check_render_mode", "frame_shape", "rendered", "text_frame"]

RENDER_MODES = ("ansi", "human", "rgb_array")
CELL = (12, 6)  # pixels per character: a 10-pixel glyph and 2 pixels between lines; 6 wide
MARGIN = 4  # pixels around the text
INK, PAPER = 24, 250  # grey levels of the text and the background

# The glyphs of characters 32 to 126, ten rows of six bits each (the left pixel in the highest bit), as hex.
_FONT = (
    "0000000000000000000000040404040400040000000a0a0a000000000000000a0a1f143e1414000000040f141c07051e04000038283a0c"
    "1705070000000e080c1513120d000000040404000000000000040808080808080804000808040404040408080000150e0e150000000000"
    "000004041f04040000000000000000000008080800000000000e000000000000000000000008000000010202040408081000000e111115"
    "11110e0000001c04040404041f0000000e11010306081f0000000e11010e01110e00000002060a1a1f02020000001e101e0101011e0000"
    "000f18101e11110e0000001f0302020404080000000e11110e11110e0000000e11110f01031e0000000000080000000800000000000800"
    "00000808080000010e100e010000000000003e003e000000000000100e010e10000000001e0204080800080000000e0917151515170806"
    "0004040a0a0e11110000001e11111e11111e0000000f19101010190f0000001e13111111131e0000001f10101f10101f0000001f10101f"
    "1010100000000e19101311190f0000001111111f1111110000001f04040404041f0000000e02020202120c000000111214181412110000"
    "001010101010101f000000111b1b15111111000000111919151313110000000e11111111110e0000001e11111e1010100000000e111111"
    "11110e0300001e11111e1311100000000e11100e01110e0000001f0404040404040000001111111111110e00000011110a0a0a04040000"
    "00212d2d1e121212000000110a0a040a0a11000000110a0a040404040000001f02020408081f00000c080808080808080c000010080804"
    "04020201000c040404040404040c00000814220000000000000000000000000000003f100800000000000000000000001e010f111f0000"
    "1010101e1111111e00000000000e1010100e00000101010f1111110f00000000000e111f100f00000608081e0808080800000000000f11"
    "11110f010e101010161911111100000400000c0404041f00000400001c04040404041810101012141c1211000038080808080808060000"
    "0000001f151515150000000000161911111100000000000e1111110e00000000001e1111111e10100000000f1111110f01010000000f09"
    "08080800000000000f100f011e00000008081e0808080e0000000000111111110f0000000000110a0a0a04000000000011150a0a0a0000"
    "0000001b0a040a1b0000000000110a0a040404180000001f0204081f000006040404180404040600040404040404040404040c04040403"
    "0404040c00000000001c0300000000"
)
_GLYPHS = (
    (np.frombuffer(bytes.fromhex(_FONT), np.uint8).reshape(95, 10, 1) >> np.arange(5, -1, -1, dtype=np.uint8)) & 1
).astype(bool)


def check_render_mode(render_mode: str | None, modes: tuple[str, ...] = RENDER_MODES) -> None:
    """Refuse a render mode that is not one of ``modes`` (None, no rendering, is always taken)."""
    if render_mode is not None and render_mode not in modes:
        raise ValueError(f"render_mode must be one of {modes} or None, got {render_mode!r}")


def frame_shape(rows: int, cols: int) -> tuple[int, int, int]:
    """The shape of :func:`text_frame`'s frames of ``rows`` × ``cols`` characters."""
    return (rows * CELL[0] + 2 * MARGIN, cols * CELL[1] + 2 * MARGIN, 3)


def _ascii(line: str) -> str:
    """``line`` in printable ASCII: accents dropped, anything else as ``?``."""
    if line.isascii() and line.isprintable():
        return line
    out = []
    for c in line:
        if " " <= c <= "~":
            out.append(c)
            continue
        base = unicodedata.normalize("NFKD", c).encode("ascii", "ignore").decode()
        out.append(base if base and base.isprintable() else " " if c == "\t" else "?")  # (a tab: one space)
    return "".join(out)


def _lines(text: str, rows: int, cols: int) -> list[str]:
    """The rows of text a frame shows: each line wrapped at ``cols``, cut at ``rows`` (saying so)."""
    lines: list[str] = []
    for line in text.rstrip("\n").split("\n") if text else []:
        lines += textwrap.wrap(_ascii(line), cols, replace_whitespace=False, drop_whitespace=False) or [""]
    if len(lines) > rows:
        cut = len(lines) - rows + 1
        lines = [*lines[: rows - 1], f"... ({cut} more line{'s' if cut > 1 else ''})"[:cols]]
    return lines


def text_frame(text: str, rows: int, cols: int) -> np.ndarray:
    """``text`` drawn on a grid of ``rows`` × ``cols`` characters: a ``uint8`` array of
    :func:`frame_shape` ``(rows, cols)`` (see the module docstring)."""
    if rows < 1 or cols < 1:
        raise ValueError(f"a frame needs at least one row and one column, got rows={rows}, cols={cols}")
    h, w = CELL
    ink = np.zeros(frame_shape(rows, cols)[:2], dtype=bool)
    for r, line in enumerate(_lines(text, rows, cols)):
        codes = np.frombuffer(line.encode("ascii"), np.uint8).astype(np.int64) - 32
        if not len(codes):
            continue
        # the line's glyphs side by side: (10, 6·len) pixels
        strip = _GLYPHS[codes].transpose(1, 0, 2).reshape(10, len(codes) * w)
        top = MARGIN + r * h + 1
        ink[top : top + 10, MARGIN : MARGIN + strip.shape[1]] = strip
    frame = np.where(ink, np.uint8(INK), np.uint8(PAPER))
    return np.repeat(frame[:, :, None], 3, axis=2)


def rendered(text: str, render_mode: str | None, rows: int, cols: int) -> str | np.ndarray | None:
    """What ``render()`` returns in ``render_mode`` for a state whose text rendering is ``text`` (a frame of
    ``rows`` × ``cols`` characters in ``"rgb_array"`` mode): see the module docstring."""
    if render_mode == "human":
        print(text, end="" if text.endswith("\n") else "\n")
        return None
    if render_mode == "rgb_array":
        return text_frame(text, rows, cols)
    if render_mode in (None, "ansi"):
        return text
    raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
