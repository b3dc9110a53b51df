"""PDF from its text layer: reading-ordered text per page, borderless tables as Markdown, OCR of scans.

Each page reads ``--- Page N ---`` then its text; pages that fail are skipped and listed in
``metadata["skipped_pages"]``. Tables are found in the words themselves (rows of numbers
aligned in columns, see ``_pdf_tables``), at the speed of text extraction; each becomes a
Markdown table with one merged header row, right after its title lines. Running headers and
footers and bare page numbers are left out of the text (``metadata["running_headers"]``,
``["running_footers"]``, ``["page_number_lines"]``); every page keeps its marker and Location.
A page without a text layer but with images is OCR'd.

PyMuPDF is imported inside ``process`` only: it runs in parser workers, and the server process,
which imports this module for the class attributes, never loads it (see ``_pdf_read``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from mcp_server.core.errors import ProcessingError
from mcp_server.core.markup import PAGES, page_marker
from mcp_server.core.models import ExtractedImage, ExtractedTable, Location, ProcessedDocument
from mcp_server.processors._pdf_furniture import Furniture, find_running_lines, page_number_rows
from mcp_server.processors._pdf_layout import Row
from mcp_server.processors._pdf_render import render_page, title_rows
from mcp_server.processors._pdf_tables import Rules, Table, detect_tables, inherit_header
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.formats import Chunking, Format

if TYPE_CHECKING:
    import pymupdf

    from mcp_server.processors._pdf_read import LayerCheck, PageRead

__all__ = ["PdfProcessor"]

_NEAR_ROWS = 3  # a headerless table this few rows below another one continues it


@dataclass
class _Page:
    number: int
    read: PageRead
    rules: Callable[[], Rules]
    numbers: set[int] = field(default_factory=set)  # rows holding a bare page number
    tables: list[Table] = field(default_factory=list)
    titles: list[list[Row]] = field(default_factory=list)


def is_pdf(data: bytes) -> bool:
    head = data[:1024]
    if head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"%PDF-"):
        return True
    # Readers also accept "%PDF-" after other junk in the first KiB; a text that merely
    # mentions it lacks the end-of-file marker.
    return b"%PDF-" in head and b"%%EOF" in data[-2048:]


class PdfProcessor:
    format: ClassVar[Format] = Format(
        doc_type="pdf",
        description="PDF: text with page markers, borderless tables as Markdown, OCR of scanned pages",
        extensions=(".pdf",),
        mime_types=("application/pdf", "application/x-pdf"),
        detect=is_pdf,  # "%PDF-" may follow a BOM or junk: no fixed offset
        chunking=Chunking(size=1500, overlap=300, breaks=PAGES),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        from mcp_server.processors import _pdf_read  # PyMuPDF: parser workers only

        pdf = _pdf_read.open_pdf(doc.data)
        with pdf:
            if pdf.page_count > options.max_pdf_pages:
                raise ProcessingError(
                    f"the PDF has {pdf.page_count} pages, more than the limit of {options.max_pdf_pages}",
                    limit=options.max_pdf_pages,
                )
            pages: list[_Page] = []
            skipped: list[int] = []
            layer = _pdf_read.LayerCheck(languages=options.ocr_languages, timeout=options.ocr_timeout,
                                         pages=options.pdf_layer_ocr_pages)
            for number in range(1, pdf.page_count + 1):
                page = _read(pdf, number, options, layer)
                if page is None:
                    skipped.append(number)
                else:
                    pages.append(page)
            if skipped and not pages:
                raise ProcessingError("no page of the PDF could be read", skipped_pages=skipped)
            furniture = _drop_furniture(pages)  # may read a page's rules again: the PDF stays open
            metadata = _pdf_read.pdf_metadata(pdf)
            if layer.unchecked:
                metadata["ocr_layer_unchecked_pages"] = layer.unchecked
            return _assemble(pages, furniture, skipped, metadata)


def _read(pdf: pymupdf.Document, number: int, options: ProcessOptions, layer: LayerCheck) -> _Page | None:
    """Words, page numbers, tables and their titles of one page; None when it cannot be read."""
    from mcp_server.processors import _pdf_read

    try:
        page = pdf.load_page(number - 1)
    except Exception:  # MuPDF raises plain RuntimeError/ValueError subclasses for broken pages
        return None
    read = _pdf_read.read_page(page, options, layer)
    if read is None:
        return None
    loaded = [page]  # held for the first reading only: 250 pages stay light
    result = _Page(number=number, read=read, rules=_rules_of(pdf, number, loaded))
    words = read.words
    if words is not None:
        result.numbers = page_number_rows(words)
        _find_tables(result, result.numbers)
    loaded.clear()
    return result


def _rules_of(pdf: pymupdf.Document, number: int, loaded: list[pymupdf.Page]) -> Callable[[], Rules]:
    """The page's rules, read once and only if a table header asks (drawings cost ~1-30 ms)."""
    from mcp_server.processors import _pdf_read

    found: list[Rules] = []

    def rules() -> Rules:
        if not found:
            page = loaded[0] if loaded else pdf.load_page(number - 1)
            found.append(_pdf_read.horizontal_rules(page))
        return found[0]

    return rules


def _find_tables(page: _Page, skip: set[int]) -> None:
    words = page.read.words
    assert words is not None
    try:
        page.tables = detect_tables(words, skip, page.rules)
    except Exception:  # tables are a bonus: the page's text is still read
        page.tables = []
    page.titles = title_rows(words, page.tables, skip)


def _drop_furniture(pages: list[_Page]) -> Furniture:
    """Running lines never come from a table's body; one that stood in a table's header or
    title (a running head right above a statement) leaves it, and the page is read again."""
    body = [{row.index for table in page.tables for row in table.body_rows} | page.numbers for page in pages]
    near = [{row.index for table in page.tables for row in table.header_rows}
            | {row.index for title in page.titles for row in title} for page in pages]
    furniture = find_running_lines([page.read.words for page in pages], body, near)
    for position, page in enumerate(pages):
        dropped = furniture.rows.get(position, set())
        if dropped & {row.index for table in page.tables for row in table.header_rows}:
            _find_tables(page, page.numbers | dropped)
    return furniture


def _assemble(pages: list[_Page], furniture: Furniture, skipped: list[int],
              metadata: dict[str, Any]) -> ProcessedDocument:
    pieces: list[str] = []
    locations: list[Location] = []
    tables: list[ExtractedTable] = []
    images: list[ExtractedImage] = []
    ocr_pages: list[int] = []
    offset = 0
    tail: Table | None = None  # the table that ends the previous page
    for position, page in enumerate(pages):
        words = page.read.words
        text = page.read.text
        if words is not None:
            dropped = page.numbers | furniture.rows.get(position, set())
            titles = title_rows(words, page.tables, dropped) if dropped != page.numbers else page.titles
            head = _opening_table(page, titles, dropped)
            if head is not None and tail is not None:
                inherit_header(tail, head, words.line_height)
            for before, table in zip(page.tables, page.tables[1:], strict=False):
                if table.rows[0].index - before.rows[-1].index <= _NEAR_ROWS:
                    inherit_header(before, table, words.line_height)
            text = render_page(words, page.tables, titles, dropped)
            tail = _closing_table(page, dropped)
            tables.extend(
                ExtractedTable(content=table.markdown(), location=f"page {page.number}",
                               metadata={"page": page.number, "title": "\n".join(r.text for r in title)})
                for table, title in zip(page.tables, titles, strict=True)
            )
        else:
            tail = None
        block = f"{page_marker(page.number)}\n{text}".rstrip()
        if pieces:
            offset += 2  # the "\n\n" joining pages
        locations.append(Location(start=offset, end=offset + len(block), page=page.number))
        pieces.append(block)
        offset += len(block)
        if page.read.ocr is not None:
            ocr_pages.append(page.number)
            images.append(ExtractedImage(
                ocr_text=text, confidence=page.read.ocr[0], source=f"page {page.number}",
                metadata={"page": page.number, "word_count": page.read.ocr[1]},
            ))
    metadata.update(
        ocr_pages=ocr_pages, skipped_pages=skipped, table_count=len(tables),
        running_headers=furniture.headers, running_footers=furniture.footers,
        page_number_lines=sum(len(page.numbers) for page in pages),
    )
    return ProcessedDocument(
        content="\n\n".join(pieces),
        doc_type="pdf",
        metadata=metadata,
        tables=tuple(tables),
        images=tuple(images),
        locations=tuple(locations),
    )


def _opening_table(page: _Page, titles: list[list[Row]], dropped: set[int]) -> Table | None:
    """The page's first table when nothing but furniture and its title stands above it."""
    if not page.tables:
        return None
    first = page.tables[0]
    before = set(range(first.rows[0].index)) - dropped - {row.index for row in titles[0]}
    return None if before else first


def _closing_table(page: _Page, dropped: set[int]) -> Table | None:
    """The page's last table when nothing but furniture follows it."""
    if not page.tables or page.read.words is None:
        return None
    last = page.tables[-1]
    after = set(range(last.rows[-1].index + 1, len(page.read.words.rows))) - dropped
    return None if after else last
