"""PDF words a reader does not see: invisible (render mode 3, transparent), tiny, or coloured like what is behind them.

Found from the page's own text page at a small cost: MuPDF's HTML rendering of the page (C string
building, ~10 % of the word extraction) names each span's colour and size, and leaves the colour
out for text that is not painted; only a page where that shows a span that is unpainted, under
1 pt or near white is read span by span (``extractDICT``: paint flags, opacity, colour, size).
What is behind a span is the fill of the smallest filled shape under it, else white; a span over
an image is never judged by colour (the image may be dark). Unpainted text on a page that an image
covers mostly is a scan's OCR layer: legitimate where the scan shows text, so the page is rendered
once in grey at 72 dpi and a layer line that stands over blank paper (no ink under it),
or on a line of the layer already there (two lines of text in one place), is flagged. The layer's
words are not read against the scan's words (OCR per page costs seconds: a limit, in SECURITY.md).
Text outside the page or clipped out of view never reaches the words (MuPDF drops it).

Text covered by an opaque filled shape drawn after it needs the drawing order, which the words'
text page does not keep. A second text page that collects vectors (``TEXT_COLLECT_VECTORS``) lists
text and filled shapes as blocks in the order they were drawn; a word with a filled shape numbered
after its block over its centre is a candidate, and the candidates are confirmed by rendering the
shape's area at 144 dpi: a word whose box shows one flat tone is covered (a strike-through bar, a
highlight blended over the text or a half-transparent fill leaves the glyphs' ink visible, so it
is not flagged). That second pass costs about a page's word extraction, so it runs only on PDFs of
at most ``ProcessOptions.pdf_cover_check_pages`` pages (the vector blocks cannot be had from the
words' own text page: they split blocks and change words on ~70 % of a 10-K's pages).
"""

from __future__ import annotations

import re
from typing import Any

import pymupdf

from mcp_server.core.visibility import hidden

__all__ = ["mark_hidden_words"]

TINY_PT = 1.0
NEAR_WHITE = 0xF0  # every channel at least this: white to a reader
COLOUR_TOLERANCE = 24
COVER_ZOOM = 2.0  # 144 dpi: a covered word's box is checked for any ink at this resolution
_BAND = 20  # points: filled shapes are looked up by the band of height a word starts in
FLAT = 12  # grey levels: a box whose darkest and lightest pixels differ by at most this shows no text
SCAN_COVER = 0.5  # an image over this share of the page: a scan, its unpainted text an OCR layer
LAYER_ZOOM = 1.0  # 72 dpi: a stroke of a 6 pt line is still a pixel of ink
INK = 176  # a grey level darker than this is ink
STACKED = 0.5  # two layer lines overlapping over this share of the smaller: one is not the scan's
_PAINTED = 16 | 32  # MuPDF char_flags: filled, stroked
# A span that is not painted (no colour), near white, or under 1 pt, in MuPDF's HTML of the page.
_SUSPECT = re.compile(r'font-size:(?:0\.\d|[\d.]+pt">)|color:#f[0-9a-f]f[0-9a-f]f[0-9a-f]')

RGB = tuple[int, int, int]
Box = tuple[float, float, float, float]


def _rgb(value: int) -> RGB:
    return (value >> 16) & 255, (value >> 8) & 255, value & 255


def _same(a: RGB, b: RGB) -> bool:
    return all(abs(x - y) <= COLOUR_TOLERANCE for x, y in zip(a, b, strict=True))


def mark_hidden_words(page: pymupdf.Page, textpage: Any, words: list[Any], *, covered: bool = False) -> list[Any]:
    """``words`` (``extractWORDS`` tuples of ``textpage``) with the hidden ones' text marked;
    ``covered``: also look for words under an opaque shape drawn after them (a second pass)."""
    if not words:
        return words
    spans: list[tuple[Box, str]] = []
    try:
        if _SUSPECT.search(textpage.extractHTML()):
            spans = _hidden_spans(page, textpage)
        if covered:
            spans += _covered_spans(page)
    except Exception:  # a broken page keeps its words as they are: hidden text is a flag, not a parse
        return words
    if not spans:
        return words
    out = []
    for word in words:
        x, y = (word[0] + word[2]) / 2, (word[1] + word[3]) / 2
        why = next((reason for (x0, y0, x1, y1), reason in spans if x0 <= x <= x1 and y0 <= y <= y1), None)
        out.append((*word[:4], hidden(word[4], why), *word[5:]) if why else word)
    return out


def _box(rect: pymupdf.Rect) -> Box:
    return float(rect.x0), float(rect.y0), float(rect.x1), float(rect.y1)


def _hidden_spans(page: pymupdf.Page, textpage: Any) -> list[tuple[Box, str]]:
    area = abs(page.rect) or 1.0
    images = [pymupdf.Rect(info["bbox"]) for info in page.get_image_info()]
    scan = any(abs(rect & page.rect) / area > SCAN_COVER for rect in images)
    fills: list[tuple[float, pymupdf.Rect, RGB]] | None = None
    found: list[tuple[Box, str]] = []
    layer: list[pymupdf.Rect] = []
    for block in textpage.extractDICT()["blocks"]:
        for line in block.get("lines", ()):
            for span in line["spans"]:
                if not span["text"].strip():
                    continue
                bbox = pymupdf.Rect(span["bbox"])
                painted = span.get("char_flags", _PAINTED) & _PAINTED and span.get("alpha", 255) > 0
                if not painted:
                    if scan:
                        layer.append(bbox)
                    else:
                        found.append((_box(bbox), "invisible text (render mode 3)"))
                    continue
                if span["size"] < TINY_PT:
                    found.append((_box(bbox), "tiny text (1 pt or less)"))
                    continue
                colour = _rgb(span["color"])
                if min(colour) < NEAR_WHITE:
                    continue  # only near-white text is checked against what is behind it
                centre = (bbox.tl + bbox.br) / 2
                if any(centre in rect for rect in images):
                    continue
                if fills is None:
                    fills = _fills(page)
                behind = next((fill for _, rect, fill in fills if centre in rect), (255, 255, 255))
                if _same(colour, behind):
                    found.append((_box(bbox), "text coloured like its background"))
    if layer:
        found += [(_box(rect), "OCR layer the scan does not show") for rect in _not_in_scan(page, layer)]
    return found


_VECTOR = re.compile(r"<vector filled, color: #[0-9a-f]{6}, alpha: (\d+)")


def _covered_spans(page: pymupdf.Page) -> list[tuple[Box, str]]:
    """Boxes of words drawn before an opaque filled shape that holds them and that show no ink."""
    textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_WORDS | pymupdf.TEXT_COLLECT_VECTORS)
    rows: dict[int, list[tuple[int, float, float, float, float]]] = {}  # filled shapes by 20 pt band of height
    texts = []  # the drawing-order number of each text block (a word's block number counts text blocks only)
    for x0, y0, x1, y1, text, number, kind in textpage.extractBLOCKS():
        if kind == 0:
            texts.append(number)
        found = _VECTOR.match(text.strip()) if kind == 3 else None
        if found and int(found.group(1)) > 0 and x1 - x0 > 1 and y1 - y0 > 1:
            for band in range(int(y0) // _BAND, int(y1) // _BAND + 1):
                rows.setdefault(band, []).append((number, x0, y0, x1, y1))
    if not rows:
        return []
    under = []
    for x0, y0, x1, y1, _, block, *_ in textpage.extractWORDS():
        x0, y0, x1, y1 = x0 + 1, y0 + 1, x1 - 1, y1 - 1  # anti-aliased edges aside
        drawn = texts[block] if block < len(texts) else -1
        if x0 < x1 and y0 < y1 and any(number > drawn and a <= x0 and b <= y0 and x1 <= c and y1 <= d
                                       for number, a, b, c, d in rows.get(int(y0) // _BAND, ())):
            under.append(pymupdf.Rect(x0, y0, x1, y1))
    return [(_box(rect), "covered by a shape") for rect in _flat(page, under)] if under else []


def _flat(page: pymupdf.Page, boxes: list[pymupdf.Rect]) -> list[pymupdf.Rect]:
    """The ``boxes`` whose rendered pixels show one flat tone: no glyph visible (one render of their union)."""
    clip = pymupdf.Rect(boxes[0])
    for rect in boxes[1:]:
        clip |= rect
    clip &= page.rect
    if clip.is_empty:
        return []
    pix = page.get_pixmap(matrix=pymupdf.Matrix(COVER_ZOOM, COVER_ZOOM), clip=clip, colorspace=pymupdf.csGRAY,
                          alpha=False)
    samples, width, height = pix.samples, pix.width, pix.height
    out = []
    for rect in boxes:
        x0, x1 = max(int((rect.x0 - clip.x0) * COVER_ZOOM), 0), min(int((rect.x1 - clip.x0) * COVER_ZOOM), width)
        y0, y1 = max(int((rect.y0 - clip.y0) * COVER_ZOOM), 0), min(int((rect.y1 - clip.y0) * COVER_ZOOM), height)
        if x1 <= x0 or y1 <= y0:
            continue
        rows = [samples[y * width + x0:y * width + x1] for y in range(y0, y1)]
        if max(max(row) for row in rows) - min(min(row) for row in rows) <= FLAT:
            out.append(rect)
    return out


def _not_in_scan(page: pymupdf.Page, layer: list[pymupdf.Rect]) -> list[pymupdf.Rect]:
    """The OCR layer's spans with no ink under them, or stacked on an earlier span of the layer."""
    pix = page.get_pixmap(matrix=pymupdf.Matrix(LAYER_ZOOM, LAYER_ZOOM), colorspace=pymupdf.csGRAY, alpha=False)
    samples, width, height = pix.samples, pix.width, pix.height
    origin = page.rect.tl
    out = []
    for i, rect in enumerate(layer):
        stacked = any(abs(rect & other) > STACKED * min(abs(rect), abs(other)) for other in layer[:i])
        x0, y0 = max(int((rect.x0 - origin.x) * LAYER_ZOOM), 0), max(int((rect.y0 - origin.y) * LAYER_ZOOM), 0)
        x1 = min(int((rect.x1 - origin.x) * LAYER_ZOOM) + 1, width)
        y1 = min(int((rect.y1 - origin.y) * LAYER_ZOOM) + 1, height)
        inked = any(min(samples[y * width + x0:y * width + x1] or b"\xff") < INK for y in range(y0, y1))
        if stacked or not inked:
            out.append(rect)
    return out


def _fill_rgb(fill: Any) -> RGB:
    if len(fill) == 4:  # CMYK
        c, m, y, k = fill
        return round(255 * (1 - c) * (1 - k)), round(255 * (1 - m) * (1 - k)), round(255 * (1 - y) * (1 - k))
    if len(fill) == 3:
        return round(fill[0] * 255), round(fill[1] * 255), round(fill[2] * 255)
    grey = round(fill[0] * 255)
    return grey, grey, grey


def _fills(page: pymupdf.Page) -> list[tuple[float, pymupdf.Rect, RGB]]:
    """Filled shapes, smallest first (the nearest background of a span is the smallest under it)."""
    out = []
    for path in page.get_cdrawings():
        fill = path.get("fill")
        if fill is None or path.get("fill_opacity", 1) == 0:
            continue
        rect = pymupdf.Rect(path["rect"])
        out.append((abs(rect), rect, _fill_rgb(fill)))
    out.sort(key=lambda item: item[0])
    return out
