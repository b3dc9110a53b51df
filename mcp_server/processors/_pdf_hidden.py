"""PDF words a reader does not see: invisible (render mode 3, transparent), tiny, or coloured like what is behind them.

Found from the page's own text page at a small cost: MuPDF's HTML rendering of the page (C string
building, ~10 % of the word extraction) names each span's colour and size, and leaves the colour
out for text that is not painted; only a page where that shows a span that is unpainted, under
1 pt or near white is read span by span (``extractDICT``: paint flags, opacity, colour, size).
What is behind a span is the fill of the smallest filled shape under it, else white; a span over
an image is never judged by colour (the image may be dark). Unpainted text on a page that an image
covers mostly is a scan's OCR layer: legitimate where the scan shows text, so the page is rendered
once in grey at 72 dpi and a layer span that stands over blank paper (no ink under it; one with
a letter or a digit), or on a line of the layer already there (two lines of text in one place), is
flagged; the lines over ink are read against the scan's own words (``_pdf_layer``: Tesseract, within a
budget per document), which also clears a span over blank paper that the reading shows (light print).
Text drawn under a page-sized image (a scan over its text) is judged as such a layer.
Text outside the page or clipped out of view never reaches the words (MuPDF drops it).

Text covered by an opaque filled shape or an image drawn after it needs the drawing order, which the
words' text page does not keep. A second text page that collects vectors and keeps images
(``TEXT_COLLECT_VECTORS``, ``TEXT_PRESERVE_IMAGES``) lists text, filled shapes and images as blocks in
the order they were drawn; a word with a filled shape numbered
after its block over its centre is a candidate, and the candidates are confirmed by rendering the
shape's area at 144 dpi: a word whose box shows one flat tone is covered (a strike-through bar, a
highlight blended over the text or a half-transparent fill leaves the glyphs' ink visible, so it
is not flagged); under an image, a word whose box shows one flat tone or the image's own pixels (an
upright image, resampled to the box: a translucent or masked picture shows the glyphs). That second
pass costs about a page's word extraction, so it runs only on PDFs of at most
``ProcessOptions.pdf_cover_check_pages`` pages (the vector blocks cannot be had from the words' own
text page: they split blocks and change words on ~70 % of a 10-K's pages).
"""

from __future__ import annotations

import re
from typing import Any

import pymupdf
from PIL import Image, ImageChops

from mcp_server.core.visibility import hidden
from mcp_server.processors._pdf_layer import LayerCheck, not_read_in_scan

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
SAME_PIXELS = 12.0  # mean grey-level difference: a word's box that shows the image over it, not the word
_ALNUM = re.compile(r"[^\W_]")
_PAINTED = 16 | 32  # MuPDF char_flags: filled, stroked
# A span that is not painted (no colour), near white, or under 1 pt, in MuPDF's HTML of the page.
_SUSPECT = re.compile(r'font-size:(?:0\.\d|[\d.]+pt">)|color:#f[0-9a-f]f[0-9a-f]f[0-9a-f]')

RGB = tuple[int, int, int]
Box = tuple[float, float, float, float]


def _rgb(value: int) -> RGB:
    return (value >> 16) & 255, (value >> 8) & 255, value & 255


def _same(a: RGB, b: RGB) -> bool:
    return all(abs(x - y) <= COLOUR_TOLERANCE for x, y in zip(a, b, strict=True))


def mark_hidden_words(page: pymupdf.Page, textpage: Any, words: list[Any], *, covered: bool = False,
                      layer: LayerCheck | None = None) -> list[Any]:
    """``words`` (``extractWORDS`` tuples of ``textpage``) with the hidden ones' text marked;
    ``covered``: also look for words under an opaque shape or image drawn after them (a second pass);
    ``layer``: read a scan's OCR layer against the scan (``_pdf_layer``), within its budget."""
    if not words:
        return words
    spans: list[tuple[Box, str]] = []
    judged: list[pymupdf.Rect] = []  # the invisible OCR layer's spans, judged by _hidden_spans
    try:
        if _SUSPECT.search(textpage.extractHTML()):
            spans = _hidden_spans(page, textpage, layer, judged)
        if covered:
            spans += _covered_spans(page, layer, judged)
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


def _hidden_spans(page: pymupdf.Page, textpage: Any, check: LayerCheck | None,
                  judged: list[pymupdf.Rect]) -> list[tuple[Box, str]]:
    area = abs(page.rect) or 1.0
    images = [pymupdf.Rect(info["bbox"]) for info in page.get_image_info()]
    scan = any(abs(rect & page.rect) / area > SCAN_COVER for rect in images)
    fills: list[tuple[float, pymupdf.Rect, RGB]] | None = None
    found: list[tuple[Box, str]] = []
    layer: list[tuple[pymupdf.Rect, str, int]] = []  # a layer span, its text, its line's number
    line_number = 0
    for block in textpage.extractDICT()["blocks"]:
        for line in block.get("lines", ()):
            line_number += 1
            for span in line["spans"]:
                if not span["text"].strip():
                    continue
                bbox = pymupdf.Rect(span["bbox"])
                painted = span.get("char_flags", _PAINTED) & _PAINTED and span.get("alpha", 255) > 0
                if not painted:
                    if scan:
                        layer.append((bbox, span["text"], line_number))
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
    judged += [rect for rect, _, _ in layer]
    return found + _layer_spans(page, layer, check)


def _layer_spans(page: pymupdf.Page, layer: list[tuple[pymupdf.Rect, str, int]], check: LayerCheck | None
                 ) -> list[tuple[Box, str]]:
    """A scan's text layer judged: over blank paper or stacked, else (with ``check``) read against the scan."""
    if not layer:
        return []
    blank = _not_in_scan(page, [rect for rect, _, _ in layer])
    spans = {_box(rect): text for rect, text, _ in layer}
    # a mark with no letter or digit over no ink ("-", "|": thin print at 72 dpi) says nothing to flag
    blank = [rect for rect in blank if _ALNUM.search(spans.get(_box(rect), ""))]
    other: list[pymupdf.Rect] = []
    if check is not None:  # the scan's reading also clears the spans over light or thin print it shows
        other, shown = not_read_in_scan(page, _lines(layer, blank), check,
                                        [(rect, spans.get(_box(rect), "")) for rect in blank])
        blank = [rect for rect in blank if _box(rect) not in {_box(r) for r in shown}]
    return ([(_box(rect), "OCR layer the scan does not show") for rect in blank]
            + [(_box(rect), "OCR layer other than the scan's words") for rect in other])


def _lines(layer: list[tuple[pymupdf.Rect, str, int]], blank: list[pymupdf.Rect]) -> list[tuple[pymupdf.Rect, str]]:
    """The layer's spans over ink joined by line: (their box, their text)."""
    out: dict[int, tuple[pymupdf.Rect, str]] = {}
    left = {_box(rect) for rect in blank}
    for rect, text, line in layer:
        if _box(rect) in left:
            continue
        if line in out:
            box, words = out[line]
            out[line] = (box | rect, f"{words} {text}")
        else:
            out[line] = (pymupdf.Rect(rect), text)
    return list(out.values())


_VECTOR = re.compile(r"<vector filled, color: #[0-9a-f]{6}, alpha: (\d+)")
_COVERS = pymupdf.TEXTFLAGS_WORDS | pymupdf.TEXT_COLLECT_VECTORS | pymupdf.TEXT_PRESERVE_IMAGES


def _covered_spans(page: pymupdf.Page, check: LayerCheck | None, judged: list[pymupdf.Rect]
                   ) -> list[tuple[Box, str]]:
    """Boxes of words drawn before an opaque filled shape or an image that holds them and that show no
    ink of their own. An image over half the page is a scan: the words under it are its text layer,
    judged as an invisible one is (``_layer_spans``), unless ``judged`` already holds them."""
    textpage = page.get_textpage(flags=_COVERS)
    rows: dict[int, list[tuple[int, float, float, float, float]]] = {}  # covers by 20 pt band of height
    images: set[int] = set()  # the covers that are images
    scans: list[tuple[int, pymupdf.Rect]] = []  # images over half the page, by drawing-order number
    texts = []  # the drawing-order number of each text block (a word's block number counts text blocks only)
    area = abs(page.rect) or 1.0
    for x0, y0, x1, y1, text, number, kind in textpage.extractBLOCKS():
        if kind == 0:
            texts.append(number)
        if kind == 1:
            if (x1 - x0) * (y1 - y0) / area > SCAN_COVER:
                scans.append((number, pymupdf.Rect(x0, y0, x1, y1)))
                continue
            images.add(number)
        elif kind != 3 or not (found := _VECTOR.match(text.strip())) or int(found.group(1)) == 0:
            continue
        if x1 - x0 > 1 and y1 - y0 > 1:
            for band in range(int(y0) // _BAND, int(y1) // _BAND + 1):
                rows.setdefault(band, []).append((number, x0, y0, x1, y1))
    if scans and texts and min(texts) < max(number for number, _ in scans):  # a page-sized image after text
        scans = _opaque(page, scans)  # one with transparency (a stamp, a watermark) lets the text show
    if not rows and not scans:
        return []
    under: list[pymupdf.Rect] = []
    layer: list[tuple[pymupdf.Rect, str, int]] = []  # words under a scan drawn after them, by line
    by_image: list[tuple[pymupdf.Rect, Box]] = []  # a word under an image, and the image's box
    for x0, y0, x1, y1, word, block, line, *_ in textpage.extractWORDS():
        drawn = texts[block] if block < len(texts) else -1
        centre = pymupdf.Point((x0 + x1) / 2, (y0 + y1) / 2)
        if any(number > drawn and centre in rect for number, rect in scans) and not any(centre in r for r in judged):
            layer.append((pymupdf.Rect(x0, y0, x1, y1), word, block * 10_000 + line))
            continue
        x0, y0, x1, y1 = x0 + 1, y0 + 1, x1 - 1, y1 - 1  # anti-aliased edges aside
        if x0 >= x1 or y0 >= y1:
            continue
        cover = next((item for item in rows.get(int(y0) // _BAND, ())
                      if item[0] > drawn and item[1] <= x0 and item[2] <= y0 and x1 <= item[3] and y1 <= item[4]), None)
        if cover is None:
            continue
        (by_image.append((pymupdf.Rect(x0, y0, x1, y1), cover[1:])) if cover[0] in images
         else under.append(pymupdf.Rect(x0, y0, x1, y1)))
    out = [(_box(rect), "covered by a shape") for rect in _flat(page, under)] if under else []
    out += _layer_spans(page, layer, check)
    if by_image:
        out += [(_box(rect), "under an image") for rect in _under_images(page, by_image)]
    return out


def _opaque(page: pymupdf.Page, scans: list[tuple[int, pymupdf.Rect]]) -> list[tuple[int, pymupdf.Rect]]:
    """The page-sized images that have no soft mask or colour-key mask."""
    masked = [pymupdf.Rect(info["bbox"]) for info in page.get_image_info() if info.get("has-mask")]
    return [(number, rect) for number, rect in scans
            if not any(abs(rect.x0 - m.x0) < 1 and abs(rect.y0 - m.y0) < 1 and abs(rect.x1 - m.x1) < 1
                       and abs(rect.y1 - m.y1) < 1 for m in masked)]


def _under_images(page: pymupdf.Page, words: list[tuple[pymupdf.Rect, Box]]) -> list[pymupdf.Rect]:
    """The words whose rendered box shows one flat tone or the image's own pixels: no glyph of theirs."""
    flat = {_box(rect) for rect in _flat(page, [rect for rect, _ in words])}
    infos = page.get_image_info(xrefs=True)
    pictures: dict[int, Any] = {}
    out = []
    for rect, cover in words:
        if _box(rect) in flat:
            out.append(rect)
            continue
        info = next((i for i in infos if all(abs(a - b) < 1 for a, b in zip(i["bbox"], cover, strict=True))), None)
        if info is not None and _shows_image(page, rect, info, pictures):
            out.append(rect)
    return out


def _shows_image(page: pymupdf.Page, rect: pymupdf.Rect, info: dict[str, Any], pictures: dict[int, Any]) -> bool:
    """Whether the page, rendered in ``rect``, shows the image's own pixels there (an upright image only)."""
    a, b, c, d, e, f = info["transform"]
    xref = info.get("xref", 0)
    if b or c or a <= 0 or d <= 0 or xref <= 0:
        return False  # rotated, flipped, or inline: not compared
    if xref not in pictures:
        pix = pymupdf.Pixmap(page.parent, xref)
        if pix.alpha or pix.n != 1:
            pix = pymupdf.Pixmap(pymupdf.csGRAY, pix)
        pictures[xref] = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    picture = pictures[xref]
    shown = page.get_pixmap(matrix=pymupdf.Matrix(COVER_ZOOM, COVER_ZOOM), clip=rect, colorspace=pymupdf.csGRAY,
                            alpha=False)
    if shown.width < 2 or shown.height < 2:
        return False
    scale_x, scale_y = picture.width / a, picture.height / d
    part = picture.resize((shown.width, shown.height), Image.Resampling.BILINEAR,
                          box=((rect.x0 - e) * scale_x, (rect.y0 - f) * scale_y,
                               (rect.x1 - e) * scale_x, (rect.y1 - f) * scale_y))
    drawn = Image.frombytes("L", (shown.width, shown.height), shown.samples)
    difference = ImageChops.difference(part, drawn).histogram()
    mean = sum(level * count for level, count in enumerate(difference)) / max(sum(difference), 1)
    return mean <= SAME_PIXELS


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
