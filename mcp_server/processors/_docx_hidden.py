"""Word runs a reader does not see: hidden (``w:vanish``, ``w:specVanish``), coloured like what is behind
them (an RGB colour, or the theme's background or text colour), 1 pt or less.

Read from the run's formatting as Word applies it: the run's direct formatting (its ``w:rPr``),
else its character style, else its paragraph's style (each following ``w:basedOn``), else the
document defaults (``styles.xml``). What is behind the text is the nearest shading or highlight
of the run, its paragraph or its table cell, else the page's background colour, else white: white
text on a dark cell is visible. Table styles' formatting is not read (a limit, in SECURITY.md).
"""

from __future__ import annotations

from typing import Any

from docx.oxml.ns import qn

from mcp_server.core.visibility import hidden

__all__ = ["RunStyles", "mark_run"]

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
_VANISH, _SZ, _STYLE_ID, _BASED_ON = qn("w:vanish"), qn("w:sz"), qn("w:styleId"), qn("w:basedOn")
_RSTYLE, _PSTYLE = qn("w:rStyle"), qn("w:pStyle")
_SPEC_VANISH, _THEME_COLOR = qn("w:specVanish"), qn("w:themeColor")
_THEMES: dict[str, RGB] = {"background1": (255, 255, 255), "light1": (255, 255, 255),
                           "text1": (0, 0, 0), "dark1": (0, 0, 0)}
_MAX_DEPTH = 20
Props = dict[str, Any]  # "vanish": bool, "size": half-points, "colour": RGB (only those set)


def _own(rpr: Any) -> Props:
    """The hiding properties a ``w:rPr`` sets itself."""
    out: Props = {}
    if rpr is None:
        return out
    vanish = rpr.find(_VANISH)
    if vanish is not None:
        out["vanish"] = vanish.get(_VAL) not in _OFF
    special = rpr.find(_SPEC_VANISH)
    if special is not None:
        out["spec_vanish"] = special.get(_VAL) not in _OFF
    size = rpr.find(_SZ)
    if size is not None and (size.get(_VAL) or "").isdigit():
        out["size"] = int(size.get(_VAL))
    colour = rpr.find(_COLOR)
    if colour is not None and (found := _run_colour(colour)) is not None:
        out["colour"] = found
    return out


def _run_colour(colour: Any) -> RGB | None:
    """A ``w:color``'s colour: a theme colour wins over ``w:val`` (Word draws the theme's); only the
    page-background and text colours of the theme (white and black in every built-in theme), untinted,
    are known."""
    theme = colour.get(_THEME_COLOR)
    if theme is None:
        return _hex(colour.get(_VAL))
    if colour.get(qn("w:themeTint")) is not None or colour.get(qn("w:themeShade")) is not None:
        return None
    return _THEMES.get(theme)


def _hides(props: Props, shaded: bool) -> bool:
    """Whether ``props`` could hide a run's text (a colour only when near white or the document shades)."""
    colour = props.get("colour")
    return bool(props.get("vanish") or props.get("spec_vanish") or props.get("size", 99) <= TINY_HALF_POINTS or (
        colour is not None and (shaded or min(colour) >= 255 - COLOUR_TOLERANCE)))


class RunStyles:
    """The hiding properties each style gives its runs (following ``basedOn``), read once per document."""

    def __init__(self, styles: Any, *, shaded: bool = True) -> None:
        """``shaded``: whether the document paints any background (shading, highlight, page colour);
        without one, only a near-white colour from a style can hide text."""
        self.relevant = False  # whether any style or the defaults set what can hide text
        self._by_id: dict[str, Any] = {}
        self._resolved: dict[str, Props] = {}
        self._pairs: dict[tuple[str | None, str | None], Props] = {}
        self.defaults: Props = {}
        self._paragraph_default: str | None = None  # the style of a paragraph that names none ("Normal")
        if styles is None:
            return
        for style in styles.iterchildren(qn("w:style")):
            if style.get(_STYLE_ID):
                self._by_id[style.get(_STYLE_ID)] = style
                if style.get(qn("w:type")) == "paragraph" and style.get(qn("w:default")) in ("1", "true", "on"):
                    self._paragraph_default = style.get(_STYLE_ID)
        defaults = styles.find(qn("w:docDefaults"))
        if defaults is not None:
            self.defaults = _own(defaults.find(f"{qn('w:rPrDefault')}/{_RPR}"))
        self.relevant = any(_hides(props, shaded) for props in (
            self.defaults, *(_own(style.find(_RPR)) for style in self._by_id.values())))

    def of(self, style_id: str | None, depth: int = 0) -> Props:
        """What the style ``style_id`` sets, its own properties over those of the style it is based on."""
        if not style_id or depth > _MAX_DEPTH:
            return {}
        if style_id in self._resolved:
            return self._resolved[style_id]
        style = self._by_id.get(style_id)
        props: Props = {}
        if style is not None:
            based = style.find(_BASED_ON)
            props = {**self.of(based.get(_VAL) if based is not None else None, depth + 1), **_own(style.find(_RPR))}
        self._resolved[style_id] = props
        return props

    def inherited(self, run: Any, rpr: Any) -> Props:
        """What the run's character style, its paragraph's style and the defaults set, in that order."""
        paragraph = run.getparent()
        while paragraph is not None and paragraph.tag != _P:
            paragraph = paragraph.getparent()
        ppr = paragraph.find(_PPR) if paragraph is not None else None
        pstyle = ppr.find(_PSTYLE) if ppr is not None else None
        rstyle = rpr.find(_RSTYLE) if rpr is not None else None
        key = (pstyle.get(_VAL) if pstyle is not None else self._paragraph_default,
               rstyle.get(_VAL) if rstyle is not None else None)
        if key not in self._pairs:
            self._pairs[key] = {**self.defaults, **self.of(key[0]), **self.of(key[1])}
        return self._pairs[key]


NO_STYLES = RunStyles(None)


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


def reason(run: Any, styles: RunStyles = NO_STYLES) -> str | None:
    """Why a ``w:r``'s text is hidden from a reader, or None."""
    rpr = run.find(_RPR)
    props = _own(rpr)
    if styles.relevant and (inherited := styles.inherited(run, rpr)):
        props = {**inherited, **props}
    if not props:
        return None
    if props.get("vanish"):
        return "hidden run (w:vanish)"
    if props.get("spec_vanish"):
        return "hidden run (w:specVanish)"
    if props.get("size", 99) <= TINY_HALF_POINTS:
        return "tiny text (1 pt or less)"
    text_colour = props.get("colour")
    if text_colour is not None:
        behind = _behind(run, rpr)
        if all(abs(a - b) <= COLOUR_TOLERANCE for a, b in zip(text_colour, behind, strict=True)):
            return "text coloured like its background"
    return None


def mark_run(run: Any, text: str, styles: RunStyles = NO_STYLES) -> str:
    """The run's text, marked when a reader does not see it."""
    if not text.strip():
        return text
    why = reason(run, styles)
    return hidden(text, why) if why is not None else text
