"""Word runs a reader does not see: hidden (``w:vanish``), coloured like what is behind them, 1 pt or less.

Read from the run's direct formatting (its ``w:rPr``), as python-docx's reader sees the run; what
is behind the text is the nearest shading or highlight of the run, its paragraph or its table
cell, else the page's background colour, else white: white text on a dark cell is visible.
Formatting that comes only from a style is not read (a limit, in SECURITY.md).
"""

from __future__ import annotations

from typing import Any

from docx.oxml.ns import qn

from mcp_server.core.visibility import hidden

__all__ = ["mark_run"]

RGB = tuple[int, int, int]
TINY_HALF_POINTS = 2  # w:sz counts half-points: 1 pt
COLOUR_TOLERANCE = 24
_OFF = ("0", "false", "off")
_HIGHLIGHTS: dict[str, RGB] = {
    "black": (0, 0, 0), "blue": (0, 0, 255), "cyan": (0, 255, 255), "darkBlue": (0, 0, 128),
    "darkCyan": (0, 128, 128), "darkGray": (128, 128, 128), "darkGreen": (0, 128, 0), "darkMagenta": (128, 0, 128),
    "darkRed": (128, 0, 0), "darkYellow": (128, 128, 0), "green": (0, 255, 0), "lightGray": (192, 192, 192),
    "magenta": (255, 0, 255), "red": (255, 0, 0), "white": (255, 255, 255), "yellow": (255, 255, 0),
}
_VAL, _FILL, _COLOR = qn("w:val"), qn("w:fill"), qn("w:color")
_RPR, _PPR, _TCPR, _SHD = qn("w:rPr"), qn("w:pPr"), qn("w:tcPr"), qn("w:shd")
_P, _TC, _BACKGROUND = qn("w:p"), qn("w:tc"), qn("w:background")


def _hex(value: str | None) -> RGB | None:
    if not value or len(value) != 6:
        return None
    try:
        return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
    except ValueError:
        return None


def _shading(props: Any) -> RGB | None:
    shd = props.find(_SHD) if props is not None else None
    return _hex(shd.get(_FILL)) if shd is not None else None


def _behind(run: Any, rpr: Any) -> RGB:
    """The colour behind the run's text."""
    if rpr is not None:
        highlight = rpr.find(qn("w:highlight"))
        if highlight is not None and highlight.get(_VAL) in _HIGHLIGHTS:
            return _HIGHLIGHTS[highlight.get(_VAL)]
        if (found := _shading(rpr)) is not None:
            return found
    node = run.getparent()
    while node is not None:
        if node.tag == _P and (found := _shading(node.find(_PPR))) is not None:
            return found
        if node.tag == _TC and (found := _shading(node.find(_TCPR))) is not None:
            return found
        node = node.getparent()
    background = run.getroottree().getroot().find(_BACKGROUND)
    return (_hex(background.get(_COLOR)) if background is not None else None) or (255, 255, 255)


def reason(run: Any) -> str | None:
    """Why a ``w:r``'s text is hidden from a reader, or None."""
    rpr = run.find(_RPR)
    if rpr is None:
        return None
    vanish = rpr.find(qn("w:vanish"))
    if vanish is not None and vanish.get(_VAL) not in _OFF:
        return "hidden run (w:vanish)"
    size = rpr.find(qn("w:sz"))
    if size is not None:
        try:
            if int(size.get(_VAL) or 99) <= TINY_HALF_POINTS:
                return "tiny text (1 pt or less)"
        except ValueError:
            pass
    colour = rpr.find(_COLOR)
    text_colour = _hex(colour.get(_VAL)) if colour is not None else None
    if text_colour is not None:
        behind = _behind(run, rpr)
        if all(abs(a - b) <= COLOUR_TOLERANCE for a, b in zip(text_colour, behind, strict=True)):
            return "text coloured like its background"
    return None


def mark_run(run: Any, text: str) -> str:
    """The run's text, marked when a reader does not see it."""
    if not text.strip():
        return text
    why = reason(run)
    return hidden(text, why) if why is not None else text
