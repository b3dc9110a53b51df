"""PDF with PyMuPDF: layout-ordered text per page, tables as Markdown, OCR for scanned pages.

Each page reads ``--- Page N ---`` then its text; pages that fail are skipped and listed in
``metadata["skipped_pages"]``. Text inside a detected table is replaced by the table's
Markdown at the table's place. A page without a text layer but with images is OCR'd.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import pymupdf
from PIL import Image

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ExtractedImage, ExtractedTable, Location, ProcessedDocument
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.ocr import ocr_available, ocr_image

__all__ = ["PdfProcessor"]

_OCR_DPI = (150, 300)  # rendering range; within it, the scan's own resolution
_OCR_MAX_PIXELS = 40_000_000  # a huge page renders at a lower resolution instead
_MIN_TEXT_CHARS = 1  # pages with less text than this count as scanned
_MIN_DRAWINGS = 2
_IN_TABLE = 0.6  # a block whose area is at least this share inside a table belongs to it


@dataclass
class _Page:
    text: str = ""
    tables: list[str] = field(default_factory=list)
    ocr: tuple[float, int] | None = None  # (confidence, words) when OCR'd


class PdfProcessor:
    doc_type: ClassVar[str] = "pdf"
    extensions: ClassVar[tuple[str, ...]] = (".pdf",)
    mime_types: ClassVar[tuple[str, ...]] = ("application/pdf", "application/x-pdf")
    description: ClassVar[str] = "PDF: layout-ordered text with page markers, tables, OCR of scanned pages"

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        pdf = _open(doc.data)
        with pdf:
            if pdf.page_count > options.max_pdf_pages:
                raise ProcessingError(
                    f"the PDF has {pdf.page_count} pages, more than the limit of {options.max_pdf_pages}",
                    limit=options.max_pdf_pages,
                )
            pieces: list[str] = []
            locations: list[Location] = []
            tables: list[ExtractedTable] = []
            images: list[ExtractedImage] = []
            skipped: list[int] = []
            ocr_pages: list[int] = []
            offset = 0
            for number in range(1, pdf.page_count + 1):
                page = _read_page(pdf, number, options)
                if page is None:
                    skipped.append(number)
                    continue
                block = f"--- Page {number} ---\n{page.text}".rstrip()
                if pieces:
                    offset += 2  # the "\n\n" joining pages
                locations.append(Location(start=offset, end=offset + len(block), page=number))
                pieces.append(block)
                offset += len(block)
                tables.extend(
                    ExtractedTable(content=md, location=f"page {number}", metadata={"page": number})
                    for md in page.tables
                )
                if page.ocr is not None:
                    ocr_pages.append(number)
                    images.append(
                        ExtractedImage(
                            ocr_text=page.text, confidence=page.ocr[0], source=f"page {number}",
                            metadata={"page": number, "word_count": page.ocr[1]},
                        )
                    )
            metadata = _metadata(pdf)
        metadata.update(ocr_pages=ocr_pages, skipped_pages=skipped, table_count=len(tables))
        if skipped and not pieces:
            raise ProcessingError("no page of the PDF could be read", skipped_pages=skipped)
        return ProcessedDocument(
            content="\n\n".join(pieces),
            doc_type="pdf",
            metadata=metadata,
            tables=tuple(tables),
            images=tuple(images),
            locations=tuple(locations),
        )


def _open(data: bytes) -> pymupdf.Document:
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
        raise ProcessingError("password required: the PDF is encrypted", encrypted=True)
    try:
        pages = pdf.page_count
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:  # a page tree MuPDF cannot repair
        pdf.close()
        raise ProcessingError("the PDF is damaged (its page tree cannot be read)") from exc
    if pages == 0:
        pdf.close()
        raise ProcessingError("the PDF has no pages")
    return pdf


def _metadata(pdf: pymupdf.Document) -> dict[str, Any]:
    info = pdf.metadata or {}
    out: dict[str, Any] = {"page_count": pdf.page_count, "encrypted": bool(pdf.is_encrypted)}
    for key in ("title", "author", "subject", "creator", "producer"):
        value = (info.get(key) or "").strip()
        if value:
            out[key] = value
    return out


def _read_page(pdf: pymupdf.Document, number: int, options: ProcessOptions) -> _Page | None:
    """The page's text, or None when the page cannot be read at all."""
    try:
        page = pdf.load_page(number - 1)
    except Exception:  # MuPDF raises plain RuntimeError/ValueError subclasses for broken pages
        return None
    try:
        result = _layout_text(page)
    except Exception:
        try:
            result = _Page(text=str(page.get_text()).strip())
        except Exception:
            return None
    if len(result.text.strip()) < _MIN_TEXT_CHARS and _has_images(page) and ocr_available():
        result = _ocr_page(page, options)
    return result


def _layout_text(page: pymupdf.Page) -> _Page:
    """Blocks in reading order; blocks inside a table give way to its Markdown."""
    tables = _find_tables(page)
    pending = sorted(tables, key=lambda t: (t[0].y0, t[0].x0))
    parts: list[str] = []
    for block in page.get_text("dict", sort=True)["blocks"]:
        if block.get("type") != 0:
            continue
        rect = pymupdf.Rect(block["bbox"])
        while pending and pending[0][0].y0 <= rect.y0:
            parts.append(pending.pop(0)[1])
        if any(_inside(rect, table_rect) for table_rect, _ in tables):
            continue
        lines = ("".join(span["text"] for span in line["spans"]).rstrip() for line in block["lines"])
        text = "\n".join(line for line in lines if line.strip())
        if text:
            parts.append(text)
    parts.extend(markdown for _, markdown in pending)
    return _Page(text="\n\n".join(parts), tables=[markdown for _, markdown in tables])


def _find_tables(page: pymupdf.Page) -> list[tuple[pymupdf.Rect, str]]:
    try:
        # The line strategy builds cells from vector lines: a page without any has no table,
        # and skipping it saves find_tables' costly character pass.
        if len(page.get_cdrawings()) < _MIN_DRAWINGS:
            return []
        # use_layout=False: the pymupdf_layout ONNX model costs ~1 s a page and adds no tables here.
        found = page.find_tables(use_layout=False)
    except Exception:  # table detection is a bonus; the text is still read
        return []
    tables = []
    for table in found.tables:
        try:
            markdown = table.to_markdown(clean=False).strip()
        except Exception:
            continue
        if markdown and table.row_count >= 2 and table.col_count >= 2:
            tables.append((pymupdf.Rect(table.bbox), markdown))
    return tables


def _inside(block: pymupdf.Rect, table: pymupdf.Rect) -> bool:
    area = block.get_area()
    return area > 0 and (block & table).get_area() >= _IN_TABLE * area


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


def _ocr_page(page: pymupdf.Page, options: ProcessOptions) -> _Page:
    zoom = _scan_dpi(page) / 72
    rect = page.rect
    pixels = rect.width * zoom * rect.height * zoom
    if pixels > _OCR_MAX_PIXELS:
        zoom *= (_OCR_MAX_PIXELS / pixels) ** 0.5
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY, alpha=False)
    image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    result = ocr_image(image, languages=options.ocr_languages, timeout=options.ocr_timeout)
    return _Page(text=result.text, ocr=(result.confidence, result.word_count))
