"""A web page's text that a reader of the rendered page does not see, marked in the parsed tree.

Read from the markup itself, before either view is extracted: the ``hidden`` attribute, inline
styles and the page's own ``<style>`` sheets (``_html_css``: class, id and other selectors, in
cascade order): ``display:none``, ``visibility:hidden``, ``font-size:0`` (and 1 px or 1 pt or
less), ``opacity`` 0.05 or less, a text colour equal to the background it stands on, a box moved
far off the screen, clipped to nothing (``clip: rect()`` with no area, ``clip-path`` inset by half
or more or a circle of radius 0), scaled to nothing (``transform: scale(0)``), or at most 1 px high
with ``overflow: hidden`` and no padding (a box of height 0 that lets its text overflow shows it). Each text node under
such an element is wrapped with ``core.visibility.hidden``, so whatever the extractor keeps of it
stays marked (trafilatura drops some hidden elements and keeps others). The background is the
nearest background colour declared (inline, ``bgcolor`` or by a ``<style>`` rule) on the element or
an ancestor, white when none is; on a page that links a style sheet not read or paints a
background with an image, a background not declared is unknown and colour decides nothing: white
text on a dark background is visible and never marked.
Linked style sheets are read when the pipeline fetched them (``DocumentInput.style_sheets``: same
origin, small, in link order, before the page's own ``<style>`` sheets); ``style_sheet_links``
names them. Not read: rules behind a media condition or a pseudo-class, ``@import``, and scripts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bs4 import BeautifulSoup, NavigableString, Tag

from mcp_server.core.visibility import hidden
from mcp_server.processors._html_css import Declared, Sheet, sheet_of

__all__ = ["mark_hidden_lxml", "mark_hidden_soup", "style_sheet_links"]

RGB = tuple[int, int, int]
WHITE: RGB = (255, 255, 255)
OFF_SCREEN_PX = 1000  # left/top/text-indent this far negative: moved out of sight
COLOUR_TOLERANCE = 24  # per channel: #fefefe on #ffffff is the same colour to a reader
_NAMED = {"white": WHITE, "black": (0, 0, 0), "red": (255, 0, 0), "green": (0, 128, 0), "blue": (0, 0, 255),
          "yellow": (255, 255, 0), "gray": (128, 128, 128), "grey": (128, 128, 128), "silver": (192, 192, 192),
          "navy": (0, 0, 128), "whitesmoke": (245, 245, 245), "snow": (255, 250, 250), "ivory": (255, 255, 240)}
_DECLARATION = re.compile(r"([a-zA-Z-]+)\s*:\s*([^;]+)")
_HEX = re.compile(r"#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\b")
_RGB = re.compile(r"rgba?\(\s*(\d+)\s*,?\s*(\d+)\s*,?\s*(\d+)\s*(?:[,/]\s*([\d.]+%?))?\s*\)")
_LENGTH = re.compile(r"^(-?[\d.]+)\s*(px|pt|em|rem|%|vw|vh)?")
TINY_FONT = 1.0  # px or pt: a font this small reads as a line, not as text
FAINT_OPACITY = 0.05  # at most this opaque: nothing a reader makes out
_NUMBER = r"\s*(-?[\d.]+)(?:px|pt|em|rem)?\s*"
_RECT = re.compile(r"rect\(" + r",?".join([_NUMBER] * 4) + r"\)")
_INSET = re.compile(r"inset\(\s*([\d.]+)\s*(%|px)?")
_EMPTY_SHAPE = re.compile(r"(?:circle|ellipse)\(\s*0(?:px|%)?\s*(?:0(?:px|%)?\s*)?(?:\)|at\b)")
_SCALE_ZERO = re.compile(r"scale[xy3d]*\(\s*0(?:\.0*)?\s*[,)]|scale\(\s*[\d.]+\s*,\s*0(?:\.0*)?\s*\)")
_LINK = re.compile(rb"<link\b[^>]*>", re.IGNORECASE)
_REL = re.compile(rb"""\brel\s*=\s*["']?([^"'>]*)""", re.IGNORECASE)
_HREF = re.compile(rb"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_SKIP = frozenset({"script", "style", "template", "noscript", "head", "title", "meta"})


@dataclass(frozen=True, slots=True)
class _State:
    background: RGB = WHITE
    reason: str | None = None  # why this element's text is hidden (an ancestor's reason wins)
    known: bool = True  # the background was declared inline, or the page has no style sheet to set it


def colour(value: str) -> RGB | None:
    """An sRGB colour from a CSS value; None for none that can be read (or a transparent one)."""
    value = value.strip().lower()
    if (m := _HEX.search(value)) is not None:
        digits = m.group(1)
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    if (m := _RGB.search(value)) is not None:
        return int(m.group(1)), int(m.group(2)), int(m.group(3))
    for word in value.split():
        if word in _NAMED:
            return _NAMED[word]
    return None


def _transparent(value: str) -> bool:
    value = value.strip().lower()
    if value == "transparent":
        return True
    m = _RGB.search(value)
    if m is None or m.group(4) is None:
        return False
    alpha = m.group(4)
    return _number(alpha.rstrip("%") or "1") == 0


def _number(text: str) -> float | None:
    """``text`` as a number; None for what a browser ignores ("1.2.3", "."), never an error."""
    try:
        return float(text)
    except ValueError:
        return None


def _length(value: str) -> float | None:
    m = _LENGTH.match(value.strip())
    return _number(m.group(1)) if m else None


def _opacity(value: str) -> float | None:
    number = _length(value)
    return number / 100 if number is not None and value.strip().endswith("%") else number


def _clipped(style: dict[str, str]) -> bool:
    """A ``clip: rect()`` with no area, or a ``clip-path`` that cuts the whole box away."""
    if "clip" in style and (m := _RECT.search(style["clip"])) is not None:
        top, right, bottom, left = (_number(v) for v in m.groups())
        if top is not None and right is not None and bottom is not None and left is not None \
                and (bottom <= top or right <= left):
            return True
    path = style.get("clip-path", "")
    if path.startswith("inset(") and (m := _INSET.match(path)) is not None:
        inset = _number(m.group(1))
        return inset is not None and inset >= 50 and m.group(2) == "%"
    return bool(_EMPTY_SHAPE.match(path))


def _collapsed(style: dict[str, str]) -> bool:
    """A box at most 1 px high that clips what overflows it, with no padding to give it room."""
    if not any(style.get(key, "").startswith(("hidden", "clip")) for key in ("overflow", "overflow-y", "overflow-x")):
        return False
    for key in ("height", "max-height"):
        value = style.get(key, "")
        size = _length(value) if value else None
        if size is not None and size <= 1 and (size == 0 or value.rstrip().endswith("px")):
            break
    else:
        return False
    return not any(_length(value) not in (None, 0.0) for value in _vertical_padding(style))


def _vertical_padding(style: dict[str, str]) -> list[str]:
    """The top and bottom padding a box's style sets (the shorthand's first and third values, or its first)."""
    out = [style.get("padding-top", ""), style.get("padding-bottom", "")]
    if values := style.get("padding", "").split():
        out += [values[0], values[2] if len(values) >= 3 else values[0]]
    return [value for value in out if value]


def _same(a: RGB, b: RGB) -> bool:
    return all(abs(x - y) <= COLOUR_TOLERANCE for x, y in zip(a, b, strict=True))


_NO_SHEET: Declared = ({}, {})


def _state(name: str, attrs: Mapping[str, Any], parent: _State, sheet: Declared = _NO_SHEET) -> _State:
    """This element's background and why its text is hidden (inherited from ``parent``)."""
    inline = {k.lower(): v.strip().lower() for k, v in _DECLARATION.findall(str(attrs.get("style") or ""))}
    style = {**sheet[0], **inline, **sheet[1]} if sheet is not _NO_SHEET else inline
    background, known = parent.background, parent.known
    for key in ("background-color", "background"):
        if key not in style:
            continue
        if (found := colour(style[key])) is not None and "url(" not in style[key] and "gradient" not in style[key]:
            background, known = found, True
        elif not _transparent(style[key]) and style[key] not in ("none", "inherit", "initial", "unset"):
            known = False  # an image or a colour not read: what is behind the text is not known
        break
    else:
        if attrs.get("bgcolor") and (found := colour(str(attrs["bgcolor"]))) is not None:
            background, known = found, True
    if parent.reason is not None:
        return _State(background, parent.reason, known)
    return _State(background, _reason(name, attrs, style, background if known else None), known)


def _reason(name: str, attrs: Mapping[str, Any], style: dict[str, str], background: RGB | None) -> str | None:
    """Why the element's text is not seen; colour is judged only against a known ``background``."""
    if "hidden" in attrs:
        return "hidden attribute"
    if not style and name != "font":
        return None
    if style.get("display", "").startswith("none"):
        return "display:none"
    if style.get("visibility", "").startswith(("hidden", "collapse")):
        return "visibility:hidden"
    size = _length(style["font-size"]) if "font-size" in style else None
    if size is not None and size <= 0:
        return "font size 0"
    if size is not None and size <= TINY_FONT and style["font-size"].rstrip().endswith(("px", "pt")):
        return "tiny text (1 pt or less)"
    opacity = _opacity(style["opacity"]) if "opacity" in style else None
    if opacity is not None and opacity <= FAINT_OPACITY:
        return "opacity 0"
    for key in ("left", "top", "text-indent", "margin-left", "margin-top"):
        offset = _length(style[key]) if key in style else None
        if offset is not None and offset <= -OFF_SCREEN_PX and style.get(key, "").rstrip().endswith(("px", "pt")):
            return "positioned off-screen"
    if _clipped(style):
        return "clipped out of view"
    if "transform" in style and _SCALE_ZERO.search(style["transform"]):
        return "scaled to nothing"
    if _collapsed(style):
        return "box collapsed with overflow hidden"
    text_colour = style.get("color") or (str(attrs.get("color")) if name == "font" and attrs.get("color") else "")
    if text_colour:
        if _transparent(text_colour):
            return "text coloured like its background"
        found = colour(text_colour)
        if found is not None and background is not None and _same(found, background):
            return "text coloured like its background"
    return None


def _wrap(text: str, reason: str) -> str | None:
    """The text node marked (its surrounding whitespace outside the mark); None for blank text."""
    core = text.strip()
    if not core:
        return None
    start = text.index(core[0])
    return text[:start] + hidden(core, reason) + text[start + len(core):]


def _mark(nodes: Iterable[tuple[Any, str, Mapping[str, Any], Any]], texts: Callable[[Any, str], None],
          linked: bool, sheet: Sheet, declared: Callable[[Any], Declared | None]) -> int:
    states: dict[int, tuple[Any, _State]] = {}  # the element kept with its state: its id stays its own
    root = _State(known=not linked and sheet.backgrounds_known)  # a sheet not read may paint any box dark
    marked = 0
    for element, name, attrs, parent in nodes:
        from_sheet = (declared(element) or _NO_SHEET) if sheet else _NO_SHEET
        state = _state(name, attrs, states[id(parent)][1] if id(parent) in states else root, from_sheet)
        states[id(element)] = (element, state)
        if state.reason is not None:
            texts(element, state.reason)
            marked += 1
    return marked


def style_sheet_links(data: bytes) -> list[str]:
    """The ``href`` of every ``<link rel=stylesheet>`` of a page, in order (read from the bytes: no parse)."""
    out = []
    for tag in _LINK.finditer(data):
        rel = _REL.search(tag.group())
        href = _HREF.search(tag.group())
        if rel and b"stylesheet" in rel.group(1).lower().split() and href:
            out.append(next(g for g in href.groups() if g is not None).decode("latin-1").strip())
    return out


def _linked(has_links: bool, complete: bool) -> bool:
    """Whether a linked sheet the marking did not read may set what it cannot see."""
    return has_links and not complete


def mark_hidden_lxml(tree: Any, sheets: tuple[str, ...] = (), complete: bool = False) -> int:
    """Mark the hidden text of an lxml tree in place; returns how many elements were hidden.
    ``sheets``: the page's linked style sheets as fetched; ``complete``: all of them."""

    def nodes() -> Iterable[tuple[Any, str, Mapping[str, Any], Any]]:
        for element in tree.iter():
            name = element.tag if isinstance(element.tag, str) else ""
            if not name or name.lower() in _SKIP:
                continue
            yield element, name.lower(), element.attrib, element.getparent()

    def texts(element: Any, reason: str) -> None:
        if element.text and (new := _wrap(element.text, reason)) is not None:
            element.text = new
        for child in element:  # the children's own text is theirs; their tails stand in this element
            if child.tail and (new := _wrap(child.tail, reason)) is not None:
                child.tail = new

    links = bool(tree.xpath("//link[contains(translate(@rel, 'STYLESHEET', 'stylesheet'), 'stylesheet')]"))
    linked = _linked(links, complete)
    sheet = sheet_of("\n".join([*sheets, *(style.text or "" for style in tree.iter("style"))]))

    def view(element: Any) -> tuple[str, str | None, tuple[str, ...], Any]:
        tag = element.tag.lower() if isinstance(element.tag, str) else ""
        return tag, element.get("id"), tuple((element.get("class") or "").split()), element.getparent()

    def attr(element: Any, name: str) -> str | None:
        return element.get(name)

    return _mark(nodes(), texts, linked, sheet, sheet.matcher(view, attr))


def mark_hidden_soup(soup: BeautifulSoup, sheets: tuple[str, ...] = (), complete: bool = False) -> int:
    """Mark the hidden text of a BeautifulSoup tree in place; returns how many elements were hidden."""

    def nodes() -> Iterable[tuple[Any, str, Mapping[str, Any], Any]]:
        for element in soup.find_all(True):
            if element.name.lower() in _SKIP:
                continue
            yield element, element.name.lower(), element.attrs, element.parent

    def texts(element: Tag, reason: str) -> None:
        for child in list(element.children):
            if type(child) is NavigableString and (new := _wrap(str(child), reason)) is not None:
                child.replace_with(NavigableString(new))

    links = any("stylesheet" in " ".join(link.get("rel") or []).lower() for link in soup.find_all("link"))
    linked = _linked(links, complete)
    sheet = sheet_of("\n".join([*sheets, *(style.get_text() for style in soup.find_all("style"))]))

    def view(element: Any) -> tuple[str, str | None, tuple[str, ...], Any]:
        classes = element.get("class") or ()
        parent = element.parent
        names = tuple(classes.split() if isinstance(classes, str) else classes)
        parent = parent if parent is not None and parent.name != "[document]" else None
        return element.name.lower(), element.get("id"), names, parent

    def attr(element: Any, name: str) -> str | None:
        value = element.get(name)
        return " ".join(value) if isinstance(value, list) else value

    return _mark(nodes(), texts, linked, sheet, sheet.matcher(view, attr))
