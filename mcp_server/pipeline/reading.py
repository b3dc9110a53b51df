"""Read and cite: a document read in token-budgeted windows, quotes verified, pages rendered.

``Reading`` sits on ``DocumentService`` like ``research.Research``: every document goes through
the same download cache, parser pool and document cache; what it adds is kept in three more cache
layers of the worker's registry (``quote_index``: one ``QuoteIndex`` per content key; ``page_image``: PNGs;
``page_pdf``: an office document's PDF export, which its pages are rendered from).

Read cursors are stateless (``read_windows.Cursor``), so any worker (or host) continues a read
another one started.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp_server.caches.layers import MemoryLayer, cache_get, cache_put
from mcp_server.citations.passages import text_checksum
from mcp_server.citations.quotes import QuoteIndex, QuoteMatch
from mcp_server.core.concurrency import KeyedLock, off_loop
from mcp_server.core.errors import ValidationError
from mcp_server.core.models import ChunkLocation, Location, ProcessedDocument, TextFlag
from mcp_server.pipeline.documents import DocumentHandle
from mcp_server.pipeline.flags import Piece
from mcp_server.pipeline.passages import find_passage
from mcp_server.pipeline.read_windows import (
    CHAPTER_TYPES,
    SHEET_TYPES,
    Cursor,
    canonical_pages,
    selection,
    skip_space,
    unit_spans,
)
from mcp_server.pipeline.research import PageRanges
from mcp_server.pipeline.service import DocumentService, View
from mcp_server.processors import DocumentInput
from mcp_server.processors.page_image import OFFICE_PAGED, RenderedPage, office_pdf, render_page

__all__ = [
    "DPI_RANGE", "MAX_READ_TOKENS", "MIN_READ_TOKENS", "PAGE_IMAGE_MAX_BYTES", "PAGE_IMAGE_MAX_PIXELS", "PageImage",
    "ReadWindow", "Reading", "Verified",
]

MIN_READ_TOKENS = 50  # fewer leaves no room for a line of text beside the special tokens
MAX_READ_TOKENS = 100_000
PAGE_IMAGE_MAX_PIXELS = 4_000_000  # about 2000 x 2000
PAGE_IMAGE_MAX_BYTES = 2_000_000  # of PNG
DPI_RANGE = (36, 300)
RENDERABLE = ("pdf", "image", *OFFICE_PAGED)


# --- values ---------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, slots=True)
class ReadWindow:
    text: str
    tokens: int
    start: int  # the window's span in the document's text
    end: int
    location: ChunkLocation
    next_cursor: str | None
    doc_type: str
    total_chars: int
    units: tuple[int, ...]  # pages, slides, sheets or chapters (1-based) the window touches
    cached: bool
    flags: tuple[TextFlag, ...] = ()  # on the text read (document offsets)


@dataclass(frozen=True, kw_only=True, slots=True)
class Verified:
    found: QuoteMatch
    passage_id: str | None
    location: ChunkLocation | None
    doc_type: str
    units: tuple[int, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class PageImage:
    rendered: RenderedPage
    doc_type: str
    page: int
    passage_id: str | None
    cached: bool


def _units_of(location: ChunkLocation, doc_type: str) -> tuple[int, ...]:
    if location.pages:
        return location.pages
    if location.slide is not None:
        return (location.slide,)
    return ()


# --- the service ----------------------------------------------------------------------------------
class Reading:
    def __init__(self, service: DocumentService) -> None:
        self.service = service
        self.quote_indexes: MemoryLayer[QuoteIndex] = service.caches.memory("quote_index")
        self.images: MemoryLayer[RenderedPage] = service.caches.memory("page_image")
        self.pdfs: MemoryLayer[bytes] = service.caches.memory("page_pdf")
        self._builds = KeyedLock()

    async def read(self, url: str, *, pages: PageRanges | None, cursor: str | None, max_tokens: int,
                   view: View | None = None) -> ReadWindow:
        given = Cursor.decode(cursor) if cursor is not None else None  # a malformed one fails before any download
        handle = await DocumentHandle.open(self.service, url, view=view)
        processed = handle.processed
        doc, key = processed.document, processed.content_key[:32]
        if given is not None:
            if given.key != key:
                raise ValidationError(
                    "argument 'cursor': stale cursor: it was issued for other bytes (the document at this URL "
                    "changed, or the cursor belongs to another document); read again without a cursor",
                    argument="cursor")
            if pages is not None and canonical_pages(pages) != given.pages:
                raise ValidationError("argument 'pages' must be left out with a cursor, or be the same as in the "
                                      "call that issued it", argument="pages")
            pages = PageRanges.parse(given.pages) if given.pages else None
        locations = handle.locations
        spans = selection(doc, locations, pages)
        if given is not None:
            at = given.offset
            if not any(start <= at < end for start, end in spans):
                raise ValidationError("argument 'cursor': not a cursor of read_document (its offset is outside "
                                      "the text read); read again without a cursor", argument="cursor")
        else:
            first = skip_space(doc.content, spans, 0)
            at = first if first is not None else (spans[0][0] if spans else 0)
        if not spans:
            text, tokens, end, following = "", 0, 0, None
        else:
            text, tokens, end, following = await handle.window(spans, at, max_tokens)
        location = handle.locate(at, max(end, at))
        flags = await self._flags(doc, spans, at, end)
        next_cursor = None
        if following is not None:
            next_cursor = Cursor(key=key, offset=following, pages=canonical_pages(pages) if pages else "").encode()
        return ReadWindow(text=text, tokens=tokens, start=at, end=end, location=location, next_cursor=next_cursor,
                          doc_type=processed.doc_type, total_chars=len(doc.content),
                          units=_units_of(location, doc.doc_type) or self._numbered_units(doc, locations, at, end),
                          cached=processed.cached, flags=flags)

    async def _flags(self, doc: ProcessedDocument, spans: Sequence[tuple[int, int]], at: int,
                     end: int) -> tuple[TextFlag, ...]:
        """The flags on the text read: ``[at, end)`` within the spans the pages filter selected."""
        if end <= at:
            return ()
        own = tuple(f for f in doc.flags if not f.field and f.overlaps(at, end))
        [flags] = await self.service.flagger.flags([Piece(start=at, text=doc.content[at:end], flags=own)])
        return tuple(f for f in flags if any(f.overlaps(a, b) for a, b in spans))

    @staticmethod
    def _numbered_units(doc: ProcessedDocument, locations: Sequence[Location], start: int,
                        end: int) -> tuple[int, ...]:
        """The sheets or chapters a window touches, numbered in order (their locations carry names)."""
        if doc.doc_type not in (*SHEET_TYPES, *CHAPTER_TYPES):
            return ()
        units = unit_spans(doc, locations)
        return tuple(sorted(u for u, spans in units.items() if any(s < end and start < e for s, e in spans)))

    async def verify(self, url: str, quote: str, *, view: View | None = None) -> Verified:
        handle = await DocumentHandle.open(self.service, url, view=view)
        index = await self._quote_index(handle)
        found = await off_loop(index.find, quote)
        doc_type = handle.processed.doc_type
        if found.start is None or found.end is None:
            return Verified(found=found, passage_id=None, location=None, doc_type=doc_type, units=())
        location = handle.locate(found.start, found.end)
        pid = await handle.passage_at(found.start, found.end, query=quote)
        return Verified(found=found, passage_id=pid, location=location, doc_type=doc_type,
                        units=_units_of(location, handle.document.doc_type))

    async def _quote_index(self, handle: DocumentHandle) -> QuoteIndex:
        key = handle.processed.content_key
        index = await cache_get(self.quote_indexes, key)
        if index is not None:
            return index
        async with self._builds.hold(key):  # ten first quotes on one document build its index once
            index = await cache_get(self.quote_indexes, key)
            if index is None:
                index = await off_loop(QuoteIndex.build, handle.document.content)
                await cache_put(self.quote_indexes, key, index)
        return index

    async def page_image(self, url: str, page: int, *, pid: str | None, dpi: int) -> PageImage:
        fetched = await self.service.fetch(url)
        inp = await self.service.sniffing.sniff(fetched)
        if inp.doc_type in SHEET_TYPES:
            raise ValidationError(
                f"argument 'document_url': a {inp.doc_type.upper()} spreadsheet has sheets, not pages, and no page "
                "images; read a sheet with read_document(pages=N)", argument="document_url",
                document_type=inp.doc_type, reason="no_pages")
        if inp.doc_type not in RENDERABLE:
            raise ValidationError(
                f"argument 'document_url': get_page_image needs a document with pages (PDF, an image, a Word, "
                f"OpenDocument or RTF document, a deck), but {url} is "
                f"{inp.doc_type.upper() if inp.doc_type != 'unknown' else 'of an unknown type'}, which has no "
                "pages to render; read its text with read_document", argument="document_url",
                document_type=inp.doc_type, reason="no_pages")
        content_key = self.service.content_key(fetched)
        passage_text = await self._passage_text(pid, content_key, page) if pid is not None else None
        cache_key = f"{content_key}|{page}|{dpi}|{text_checksum(passage_text) if passage_text else '-'}"
        rendered = await cache_get(self.images, cache_key)
        cached = rendered is not None
        if rendered is None:
            pages = inp
            if inp.doc_type in OFFICE_PAGED:
                pages = DocumentInput(data=await self._pdf_of(content_key, inp), doc_type="pdf")
            rendered = await self.service.parsers.run(render_page, pages, page, dpi, passage_text,
                                                      PAGE_IMAGE_MAX_PIXELS, PAGE_IMAGE_MAX_BYTES,
                                                      self.service.settings.max_image_pixels)
            await cache_put(self.images, cache_key, rendered)
        return PageImage(rendered=rendered, doc_type=inp.doc_type, page=page, passage_id=pid, cached=cached)

    async def _pdf_of(self, content_key: str, inp: DocumentInput) -> bytes:
        """The office document as PDF: exported once (LibreOffice, in a parser worker), then cached."""
        async with self._builds.hold(f"pdf|{content_key}"):
            pdf = await cache_get(self.pdfs, content_key)
            if pdf is None:
                pdf = await self.service.parsers.run(office_pdf, inp, self.service.options)
                await cache_put(self.pdfs, content_key, pdf)
        return pdf

    async def _passage_text(self, pid: str, content_key: str, page: int) -> str:
        ref, index = await find_passage(self.service, pid, content_key=content_key)
        chunk = index.chunks[ref.position]
        if chunk.location.slide is not None and page != chunk.location.slide:
            raise ValidationError(f"argument 'page': the passage is on slide {chunk.location.slide}, not {page}",
                                  argument="page", pages=[chunk.location.slide])
        if chunk.location.pages and page not in chunk.location.pages:
            shown = ", ".join(str(p) for p in chunk.location.pages)
            raise ValidationError(f"argument 'page': the passage is on page {shown}, not {page}", argument="page",
                                  pages=list(chunk.location.pages))
        return chunk.text
