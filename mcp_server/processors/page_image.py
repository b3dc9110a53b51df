"""A page of a document as a PNG, optionally cropped to where a passage's words stand on it.

Runs in a parser worker (``ParserPool.run(render_page, ...)``), like every parse: the bytes are
untrusted, MuPDF is imported only there, and the worker's time and memory limits apply. PDF pages
render with PyMuPDF; an image document is its own single page. Word-processing documents and decks
(DOCX, DOC, ODT, RTF; PPTX, PPT, ODP) are first exported to PDF by LibreOffice (``office_pdf``, with
the converter's time limit, after the same encryption and zip checks as their parse; the caller
caches the PDF), whose pages are then rendered the same way: a deck's page N is its slide N, a text
document's pages are LibreOffice's layout of it.

Caps: the image never exceeds ``max_pixels`` (the scale is lowered to fit) nor ``max_bytes`` of PNG
(rendered again smaller, a few times, then refused).
"""

from __future__ import annotations

import difflib
import io
import re
from dataclasses import dataclass

from mcp_server.core.errors import ProcessingError, ValidationError
from mcp_server.processors._soffice import PDF_FILTERS, convert, refuse_encrypted_ole
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.odf import check_package
from mcp_server.processors.ooxml import guard_ooxml

__all__ = ["OFFICE_PAGED", "RenderedPage", "office_pdf", "render_page"]

# the types whose pages LibreOffice lays out: type -> (its extension, "writer" or "impress")
OFFICE_PAGED = {"docx": (".docx", "writer"), "doc": (".doc", "writer"), "odt": (".odt", "writer"),
                "rtf": (".rtf", "writer"), "pptx": (".pptx", "impress"), "ppt": (".ppt", "impress"),
                "odp": (".odp", "impress")}

_TERM = re.compile(r"\w+")
_MARGIN = 12.0  # points around a passage's words in a crop
_MIN_RUN = 2  # matched words in a row that place a passage (a lone common word places nothing)
_SHRINK_TRIES = 4


@dataclass(frozen=True, kw_only=True, slots=True)
class RenderedPage:
    png: bytes
    width: int
    height: int
    page_count: int
    dpi: float  # the resolution used (lower than asked when a cap applied)
    clip: tuple[float, float, float, float] | None  # the crop in PDF points (x0, y0, x1, y1); None: whole page


def render_page(inp: DocumentInput, page: int, dpi: int, passage_text: str | None, max_pixels: int,
                max_bytes: int, max_image_pixels: int) -> RenderedPage:
    """``max_pixels``/``max_bytes`` cap the PNG; ``max_image_pixels`` is Pillow's decompression-bomb
    cap of an image document (the same check as OCR's)."""
    if inp.doc_type == "image":
        return _render_image(inp, page, max_pixels, max_bytes, max_image_pixels)
    from mcp_server.processors import _pdf_read  # PyMuPDF: parser workers only

    pdf = _pdf_read.open_pdf(inp.data)
    with pdf:
        count = pdf.page_count
        if not 1 <= page <= count:
            raise ValidationError(f"argument 'page': the document has pages 1-{count}, not {page}", argument="page",
                                  page_count=count)
        try:
            loaded = pdf.load_page(page - 1)
        except Exception as exc:  # MuPDF raises plain RuntimeError/ValueError subclasses for broken pages
            raise ProcessingError(f"page {page} of the PDF cannot be read") from exc
        clip = _passage_box(loaded, passage_text) if passage_text else None
        return _render_pdf_page(loaded, count, dpi, clip, max_pixels, max_bytes)


def office_pdf(inp: DocumentInput, options: ProcessOptions) -> bytes:
    """A word-processing document or a deck as PDF, by LibreOffice. Refused first as its parse
    would refuse it: an OOXML or OpenDocument zip past the zip limits, an encrypted file."""
    suffix, family = OFFICE_PAGED[inp.doc_type]
    if inp.doc_type in ("docx", "pptx"):
        guard_ooxml(inp.data, options, kind=inp.doc_type.upper())
    elif inp.doc_type in ("odt", "odp"):
        check_package(inp.data, options, doc_type=inp.doc_type)
    elif inp.doc_type in ("doc", "ppt"):
        refuse_encrypted_ole(inp.data)
    return convert(inp.data, suffix=suffix, target="pdf", command=options.office_command,
                   timeout=options.office_timeout, output_filter=PDF_FILTERS[family])


def _render_pdf_page(loaded: object, count: int, dpi: int, clip: tuple[float, float, float, float] | None,
                     max_pixels: int, max_bytes: int) -> RenderedPage:
    import pymupdf

    assert isinstance(loaded, pymupdf.Page)
    area = pymupdf.Rect(clip) if clip is not None else loaded.rect
    zoom = dpi / 72
    pixels = area.width * zoom * area.height * zoom
    if pixels > max_pixels:
        zoom *= (max_pixels / pixels) ** 0.5 * 0.99  # MuPDF rounds the pixel size up
    for _ in range(_SHRINK_TRIES):
        pix = loaded.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=area, alpha=False)
        png = pix.tobytes("png")
        if len(png) <= max_bytes:
            return RenderedPage(png=png, width=pix.width, height=pix.height, page_count=count,
                                dpi=round(zoom * 72, 1), clip=clip)
        zoom *= (max_bytes / len(png)) ** 0.5 * 0.9
    raise ProcessingError(f"the page does not fit in {max_bytes} bytes of PNG even at a low resolution",
                          limit=max_bytes)


def _passage_box(loaded: object, text: str) -> tuple[float, float, float, float] | None:
    """The box around the page's words that the passage's words match (in reading order), with a
    margin; None when too little of the passage is found on the page."""
    import pymupdf

    assert isinstance(loaded, pymupdf.Page)
    try:
        words = loaded.get_text("words", sort=True)
    except Exception:  # a crop is a nicety: the whole page still renders
        return None
    page_terms: list[str] = []
    owners: list[int] = []
    for i, word in enumerate(words):
        for term in _TERM.findall(str(word[4]).lower()):
            page_terms.append(term)
            owners.append(i)
    wanted = _TERM.findall(text.lower())
    if not wanted or not page_terms:
        return None
    matcher = difflib.SequenceMatcher(None, wanted, page_terms, autojunk=False)
    hits = {owners[j + k] for _, j, size in matcher.get_matching_blocks() if size >= _MIN_RUN for k in range(size)}
    if len(hits) < min(_MIN_RUN, len(wanted)):
        return None
    boxes = [words[i][:4] for i in hits]
    page_rect = loaded.rect
    x0 = max(min(b[0] for b in boxes) - _MARGIN, page_rect.x0)
    y0 = max(min(b[1] for b in boxes) - _MARGIN, page_rect.y0)
    x1 = min(max(b[2] for b in boxes) + _MARGIN, page_rect.x1)
    y1 = min(max(b[3] for b in boxes) + _MARGIN, page_rect.y1)
    # the full width reads better than a column-tight crop of a table or paragraph
    return (round(page_rect.x0, 2), round(y0, 2), round(page_rect.x1, 2), round(y1, 2)) if x1 > x0 else None


def _render_image(inp: DocumentInput, page: int, max_pixels: int, max_bytes: int,
                  max_image_pixels: int) -> RenderedPage:
    from mcp_server.processors.image import open_image

    if page != 1:
        raise ValidationError(f"argument 'page': an image has one page, not {page}", argument="page", page_count=1)
    opened, _, _ = open_image(inp.data, max_image_pixels)  # the formats and the pixel cap of every image parse
    image = opened.convert("RGBA" if opened.mode in ("RGBA", "LA", "P") else "RGB")
    scale = min(1.0, (max_pixels / max(image.width * image.height, 1)) ** 0.5)
    for _ in range(_SHRINK_TRIES):
        size = (max(int(image.width * scale), 1), max(int(image.height * scale), 1))
        shown = image if scale == 1.0 else image.resize(size)
        out = io.BytesIO()
        shown.save(out, format="PNG", optimize=True)
        if out.tell() <= max_bytes:
            return RenderedPage(png=out.getvalue(), width=shown.width, height=shown.height, page_count=1,
                                dpi=0.0, clip=None)
        scale *= (max_bytes / out.tell()) ** 0.5 * 0.9
    raise ProcessingError(f"the image does not fit in {max_bytes} bytes of PNG", limit=max_bytes)
