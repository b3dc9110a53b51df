"""Workbook cells whose format hides their text: the colour of the cell's fill (white on white, black
on black), a font of 1 pt or less, or a number format whose four sections are empty (``;;;``, which
shows nothing of any value).

Read from ``xl/styles.xml``: each cell format (``cellXfs``) names a font, a fill and a number format;
a format whose font colour equals its fill's colour (no fill: white) hides its text. Colours given as RGB, as the
first two theme colours (light 1 and dark 1, white and black in every built-in theme) or as the
legacy indexed white and black are compared; other theme and indexed colours and tints are not
known, so not judged. Only when some format hides text are the sheet parts searched for cells that
use it (``<c r="B2" s="7">``); conditional formats and table styles are not read (a limit).
"""

from __future__ import annotations

import re

__all__ = ["hiding_formats", "hidden_cells"]

RGB = tuple[int, int, int]
WHITE: RGB = (255, 255, 255)
BLACK: RGB = (0, 0, 0)
COLOUR_TOLERANCE = 24
_SECTION = {name: re.compile(rb"<(?:\w+:)?" + name + rb"\b[^>]*?(?:/>|>(.*?)</(?:\w+:)?" + name + rb">)", re.DOTALL)
            for name in (b"fonts", b"fills", b"cellXfs")}
_FONT = re.compile(rb"<(?:\w+:)?font\b[^>]*?(?:/>|>(.*?)</(?:\w+:)?font>)", re.DOTALL)
_FILL = re.compile(rb"<(?:\w+:)?fill\b[^>]*?(?:/>|>(.*?)</(?:\w+:)?fill>)", re.DOTALL)
_XF = re.compile(rb"<(?:\w+:)?xf\b([^>]*)")
_COLOUR = re.compile(rb"<(?:\w+:)?(color|fgColor)\b([^>]*)/?>")
_ATTR = re.compile(rb'(\w+)\s*=\s*"([^"]*)"')
_PATTERN = re.compile(rb'patternType\s*=\s*"(\w+)"')
_CELL = re.compile(rb'<(?:\w+:)?c\b[^>]*?\br="([A-Z]{1,3})(\d+)"[^>]*?\bs="(\d+)"')
TINY_POINTS = 1.0
_SIZE = re.compile(rb'<(?:\w+:)?sz\b[^>]*?\bval="(\d+(?:\.\d*)?|\.\d+)"')
_NUMBER_FORMAT = re.compile(rb'<(?:\w+:)?numFmt\b[^>]*?\bnumFmtId="(\d+)"[^>]*?\bformatCode="([^"]*)"')
_THEMES: dict[bytes, RGB] = {b"0": WHITE, b"1": BLACK}  # lt1, dk1
_INDEXED: dict[bytes, RGB] = {b"8": BLACK, b"9": WHITE, b"64": BLACK}  # 64: the system foreground


def _colour(attrs: dict[bytes, bytes]) -> RGB | None:
    if b"tint" in attrs and attrs[b"tint"] not in (b"0", b"0.0"):
        return None
    if b"rgb" in attrs and len(attrs[b"rgb"]) in (6, 8):
        value = attrs[b"rgb"][-6:]
        try:
            return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
        except ValueError:
            return None
    if b"theme" in attrs:
        return _THEMES.get(attrs[b"theme"])
    if b"indexed" in attrs:
        return _INDEXED.get(attrs[b"indexed"])
    return None


def _first_colour(body: bytes | None, tag: bytes) -> tuple[bool, RGB | None]:
    """(whether the element names a colour, that colour when it is known)."""
    for name, raw in _COLOUR.findall(body or b""):
        if name == tag:
            return True, _colour(dict(_ATTR.findall(raw)))
    return False, None


def _section(styles: bytes, name: bytes) -> bytes:
    found = _SECTION[name].search(styles)
    return (found.group(1) or b"") if found else b""


def _shows_nothing(code: bytes) -> bool:
    """Whether a number format's code has four sections (number, negative, zero, text), all empty."""
    sections = re.sub(rb'"[^"]*"', lambda m: b"" if m.group() == b'""' else b"x", code).split(b";")
    return len(sections) >= 4 and not any(part.strip() for part in sections)


def hiding_formats(styles: bytes) -> dict[int, str]:
    """The indexes of the cell formats that hide their text, with why."""
    fonts = []
    tiny = set()
    for index, body in enumerate(_FONT.findall(_section(styles, b"fonts"))):
        named, colour = _first_colour(body, b"color")
        fonts.append(colour if named else BLACK)  # no colour: automatic, black
        size = _SIZE.search(body or b"")
        if size is not None and float(size.group(1)) <= TINY_POINTS:
            tiny.add(index)
    blank = {int(number) for number, code in _NUMBER_FORMAT.findall(styles)
             if _shows_nothing(_unescape(code))}
    fills: list[RGB | None] = []
    for body in _FILL.findall(_section(styles, b"fills")):
        pattern = _PATTERN.search(body or b"")
        if pattern is None or pattern.group(1) == b"none":
            fills.append(WHITE)
        elif pattern.group(1) == b"solid":
            fills.append(_first_colour(body, b"fgColor")[1])
        else:
            fills.append(None)  # a pattern of two colours: not judged
    out = {}
    for index, raw in enumerate(_XF.findall(_section(styles, b"cellXfs"))):
        attrs = dict(_ATTR.findall(raw))
        font_id, fill_id = int(attrs.get(b"fontId", b"0") or 0), int(attrs.get(b"fillId", b"0") or 0)
        number = attrs.get(b"numFmtId", b"0")
        font = fonts[font_id] if font_id < len(fonts) else None
        fill = fills[fill_id] if fill_id < len(fills) else None
        if number.isdigit() and int(number) in blank:
            out[index] = "number format shows nothing"
        elif font_id in tiny:
            out[index] = "tiny text (1 pt or less)"
        elif font is not None and fill is not None and all(
                abs(a - b) <= COLOUR_TOLERANCE for a, b in zip(font, fill, strict=True)):
            out[index] = "text coloured like its background"
    return out


def _column(letters: bytes) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + letter - 64
    return number


def hidden_cells(part: bytes, formats: dict[int, str]) -> dict[tuple[int, int], str]:
    """(row, column) of the sheet's cells that use one of ``formats``, with the format's reason."""
    return {(int(row), _column(letters)): formats[int(style)]
            for letters, row, style in _CELL.findall(part) if int(style) in formats}


def _unescape(code: bytes) -> bytes:
    return code.replace(b"&quot;", b'"').replace(b"&amp;", b"&").replace(b"&lt;", b"<").replace(b"&gt;", b">")
