"""Everything that touches PyMuPDF: open, metadata, a page's words, its rules, OCR of scans.

Imported only inside parser workers (``PdfProcessor.process`` imports it lazily): PyMuPDF 2
loads onnxruntime for its layout model, ~165 MB in every process that imports it, and the
server process never parses a PDF itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pymupdf
from PIL import Image

from mcp_server.core.errors import ProcessingError
from mcp_server.processors._pdf_hidden import mark_hidden_words
from mcp_server.processors._pdf_layer import LayerCheck
from mcp_server.processors._pdf_layout import PageWords
from mcp_server.processors.base import ProcessOptions
from mcp_server.processors.ocr import ocr_available, ocr_image

__all__ = ["LayerCheck", "PageRead", "horizontal_rules", "open_pdf", "pdf_metadata", "read_page"]

_OCR_DPI = (150, 300)  # rendering range; within it, the scan's own resolution
_OCR_MAX_PIXELS = 40_000_000  # a huge page renders at a lower resolution instead
_RULE_THICKNESS = 1.5  # points; a thicker filled shape is shading, not a rule
_RULE_JOIN = 2.0  # rule pieces closer than this are one rule (spanner rules stand ~3 pt apart)


@dataclass
class PageRead:
    """A page's words (``None`` when only plain text could be had), or its OCR'd text."""

    words: PageWords | None = None
    text: str = ""
    ocr: tuple[float, int] | None = None  # (confidence, words) when OCR'd


def open_pdf(data: bytes) -> pymupdf.Document:
    # A BOM or junk before "%PDF-" is tolerated by MuPDF's repair; start at the header anyway.
    start = data.find(b"%PDF-", 0, 1024)
    if start > 0:
        data = data[start:]
    try:
        pdf = pymupdf.open(stream=data, filetype="pdf")
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise ProcessingError("the PDF is damaged or not a PDF") from exc
    # An empty user password (copy protection only) is tried by MuPDF itself on open.
    if pdf.needs_pass and not pdf.authenticate(""):
        pdf.close()
        raise ProcessingError("password required: the PDF is encrypted", reason="encrypted", encrypted=True)
    try:
        pages = pdf.page_count
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:  # a page tree MuPDF cannot repair
        pdf.close()
        raise ProcessingError("the PDF is damaged (its page tree cannot be read)") from exc
    if pages == 0:
        pdf.close()
        raise ProcessingError("the PDF has no pages")
    return pdf


def pdf_metadata(pdf: pymupdf.Document) -> dict[str, Any]:
    info = pdf.metadata or {}
    out: dict[str, Any] = {"page_count": pdf.page_count, "encrypted": bool(pdf.is_encrypted)}
    for key in ("title", "author", "subject", "creator", "producer"):
        value = (info.get(key) or "").strip()
        if value:
            out[key] = value
    return out


def read_page(page: pymupdf.Page, options: ProcessOptions, layer: LayerCheck | None = None) -> PageRead | None:
    """The page's words; plain text when word extraction fails; OCR when it has no text layer;
    ``layer``: the document's budget for reading a scan against its OCR layer."""
    try:
        textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_WORDS)
        covered = page.parent.page_count <= options.pdf_cover_check_pages
        words = mark_hidden_words(page, textpage, textpage.extractWORDS(), covered=covered, layer=layer)
        result = PageRead(words=PageWords(words, page.rect.width, page.rect.height))
        empty = not result.words.words  # type: ignore[union-attr]
    except Exception:  # MuPDF raises plain RuntimeError/ValueError subclasses for broken content
        try:
            result = PageRead(text=str(page.get_text()).strip())
        except Exception:
            return None
        empty = not result.text
    if empty and _has_images(page) and ocr_available():
        return _ocr_page(page, options)
    return result


def horizontal_rules(page: pymupdf.Page) -> list[tuple[float, float, float]]:
    """Thin horizontal strokes and fills as ``(x0, x1, y)``, touching pieces joined."""
    pieces = []
    try:
        drawings = page.get_cdrawings()
    except Exception:  # rules are a hint; a page whose drawings fail simply has none
        return []
    for path in drawings:
        x0, y0, x1, y1 = path["rect"]
        if y1 - y0 <= _RULE_THICKNESS and x1 - x0 > 2:
            pieces.append((round((y0 + y1) / 2), x0, x1))
    pieces.sort()
    rules: list[tuple[float, float, float]] = []
    for y, x0, x1 in pieces:
        if rules and rules[-1][2] == y and x0 <= rules[-1][1] + _RULE_JOIN:
            rules[-1] = (rules[-1][0], max(rules[-1][1], x1), y)
        else:
            rules.append((x0, x1, y))
    return rules


def _scan_dpi(page: pymupdf.Page) -> float:
    """The largest image's own resolution: rendering finer only adds OCR time."""
    low, high = _OCR_DPI
    best = 0.0
    try:
        for info in page.get_image_info():
            width_pt = pymupdf.Rect(info["bbox"]).width
            if width_pt > 0:
                best = max(best, info["width"] / width_pt * 72)
    except Exception:
        return high
    return min(max(best, low), high) if best else high


def _has_images(page: pymupdf.Page) -> bool:
    try:
        return bool(page.get_images(full=False))
    except Exception:
        return False


def _ocr_page(page: pymupdf.Page, options: ProcessOptions) -> PageRead:
    zoom = _scan_dpi(page) / 72
    rect = page.rect
    pixels = rect.width * zoom * rect.height * zoom
    if pixels > _OCR_MAX_PIXELS:
        zoom *= (_OCR_MAX_PIXELS / pixels) ** 0.5
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, alpha=False)
    image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    result = ocr_image(image, languages=options.ocr_languages, timeout=options.ocr_timeout)
    return PageRead(text=result.text, ocr=(result.confidence, result.word_count))
