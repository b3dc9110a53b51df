"""A scan's invisible OCR layer read against the scan: layer lines the scan's own words do not show.

A PDF scan made searchable carries the OCR engine's words as invisible text (render mode 3) over the
page's picture; legitimate where it says what the picture shows. ``_pdf_hidden`` already flags a
layer line over blank paper or stacked on another; a line over ink that says something else needs
the picture read: the layer's area of the page is rendered once (at the scan's own resolution, 150-
200 dpi) and OCR'd with Tesseract (the server's OCR, its languages and timeout), and each layer line
whose text matches neither the OCR's words on its own line nor, anywhere, the page's reading, even
approximately (``rapidfuzz`` under ``MATCH``: OCR errors on either side pass), is flagged, where the
OCR reads that line with confidence (``CONFIDENT``: an inverted header, a script Tesseract is not set
up for, a picture read as garbage, is not judged). Nothing is flagged when Tesseract is
missing, fails or times out, when it reads less than ``READABLE`` of the layer's words (a script or
language it is not set up for, a picture with no text: it cannot judge), or once the document's
budget is spent (``ProcessOptions.pdf_layer_ocr_pages`` pages, ``SECONDS`` of reading): those pages are listed in
``metadata["ocr_layer_unchecked_pages"]``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import pymupdf
from PIL import Image
from rapidfuzz import fuzz

from mcp_server.processors.ocr import OcrWord, ocr_available, ocr_words

__all__ = ["LayerCheck", "not_read_in_scan"]

MATCH = 60.0  # rapidfuzz (0-100): a layer line that aligns this well with the scan's words is the scan's
READABLE = 0.3  # the OCR must read at least this share of the layer's words for its reading to judge the layer
CONFIDENT = 80.0  # the reading's mean word confidence (0-100) on a layer line's place needed to judge that line
MIN_CHARS = 8  # a layer line with fewer letters and digits is too short to judge (a page number, a label)
MIN_WORDS = 4  # nor one of fewer words holding a letter (an OCR engine's garbled name or label: "BandjuPeysivisier:")
SECONDS = 20.0  # a document's reading time at most (a parse has MCP_PARSE_TIMEOUT, 120 s by default)
_DPI = (150.0, 200.0)
_MARGIN = 6.0  # points around the layer's lines
_MAX_PIXELS = 12_000_000
_NOT_WORD = re.compile(r"[\W_]+")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass
class LayerCheck:
    """A document's budget for reading its scans against their OCR layers, and the pages it did not read."""

    languages: str = "eng"
    timeout: float = 60.0
    pages: int = 10  # pages left to read
    seconds: float = SECONDS  # reading time left
    unchecked: list[int] = field(default_factory=list)  # pages with a layer over ink that were not read


def _plain(text: str) -> str:
    return _NOT_WORD.sub(" ", text.lower()).strip()


def not_read_in_scan(page: pymupdf.Page, lines: list[tuple[pymupdf.Rect, str]], check: LayerCheck,
                     blank: Sequence[tuple[pymupdf.Rect, str]] = ()) -> tuple[list[pymupdf.Rect], list[pymupdf.Rect]]:
    """The boxes of the layer ``lines`` (box, text) that the page's picture does not show, and those of the
    ``blank`` spans (found over no ink at 72 dpi: light or thin print) that its reading does show."""
    judged = [(rect, _plain(text)) for rect, text in lines]
    judged = [(rect, text) for rect, text in judged if len(text.replace(" ", "")) >= MIN_CHARS
              and sum(1 for word in text.split() if _LETTER.search(word)) >= MIN_WORDS]
    faint = [(rect, _plain(text)) for rect, text in blank]
    if not judged and not faint:
        return [], []
    if check.pages <= 0 or check.seconds <= 1 or not ocr_available():
        check.unchecked.append(page.number + 1)
        return [], []
    check.pages -= 1
    started = time.monotonic()
    clip = pymupdf.Rect((judged or faint)[0][0])
    for rect, _ in [*judged, *faint]:
        clip |= rect
    clip = (clip + (-_MARGIN, -_MARGIN, _MARGIN, _MARGIN)) & page.rect
    zoom = _zoom(page, clip)
    try:
        pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=clip, colorspace=pymupdf.csGRAY, alpha=False)
        image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
        read = ocr_words(image, languages=check.languages, timeout=min(check.timeout, check.seconds))
    except Exception:  # Tesseract missing, failing or too slow: the layer is not judged
        check.unchecked.append(page.number + 1)
        return [], []
    finally:
        check.seconds -= time.monotonic() - started
    seen = _plain(" ".join(word[4] for word in read))
    layer_words = sum(len(text.split()) for _, text in [*judged, *faint])
    if len(seen.split()) < READABLE * layer_words:
        check.unchecked.append(page.number + 1)
        return [], []
    # the reading's words in page points
    scale = clip.width / image.width if image.width else 1.0
    placed = [(clip.x0 + x0 * scale, clip.y0 + y0 * scale, clip.x0 + x1 * scale, clip.y0 + y1 * scale, word, conf)
              for x0, y0, x1, y1, word, conf in read]
    shown = [rect for rect, text in faint if fuzz.partial_ratio(text, seen) >= MATCH]
    return [rect for rect, text in judged if _other(rect, text, placed, seen)], shown


def _other(rect: pymupdf.Rect, text: str, placed: list[OcrWord], seen: str) -> bool:
    """Whether the layer line ``text`` over ``rect`` says other words than the scan: the reading's words on
    its line (read with confidence: a region the OCR reads badly, an inverted or a foreign script, is not
    judged) match it neither where they stand nor anywhere on the page."""
    pad = rect.height / 2
    near = [word for word in placed if rect.y0 - pad <= (word[1] + word[3]) / 2 <= rect.y1 + pad
            and word[2] >= rect.x0 - rect.height and word[0] <= rect.x1 + rect.height]
    if not near or sum(word[5] for word in near) / len(near) < CONFIDENT:
        return False
    return max(fuzz.ratio(text, _plain(" ".join(word[4] for word in near))), fuzz.partial_ratio(text, seen)) < MATCH


def _zoom(page: pymupdf.Page, clip: pymupdf.Rect) -> float:
    """The scan's own resolution, within 150-300 dpi, and fewer than ``_MAX_PIXELS`` in the clip."""
    low, high = _DPI
    best = 0.0
    for info in page.get_image_info():
        width = pymupdf.Rect(info["bbox"]).width
        if width > 0:
            best = max(best, info["width"] / width * 72)
    zoom = min(max(best, low), high) / 72 if best else low / 72
    pixels = abs(clip) * zoom * zoom
    return zoom * (_MAX_PIXELS / pixels) ** 0.5 if pixels > _MAX_PIXELS else zoom
