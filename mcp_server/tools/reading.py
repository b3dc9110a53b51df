"""Read and cite: read_document (token-budgeted windows with cursors), verify_quote, get_page_image."""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ImageContent, TextContent
from pydantic import BaseModel, Field

from mcp_server.citations.quotes import CLOSE_SIMILARITY
from mcp_server.fetch import validate_url
from mcp_server.pipeline.reading import (
    DPI_RANGE,
    MAX_READ_TOKENS,
    MIN_READ_TOKENS,
    PAGE_IMAGE_MAX_BYTES,
    Reading,
)
from mcp_server.pipeline.research import PageRanges
from mcp_server.tools.common import DocumentUrl, PageView, app_of, require_text, tool
from mcp_server.tools.research import PassageId
from mcp_server.tools.schemas import FLAGS_DESCRIPTION, FlagItem, flag_items

__all__ = ["get_page_image", "read_document", "verify_quote"]

MAX_QUOTE_CHARS = 5000
DEFAULT_DPI = 110


class ReadResult(BaseModel):
    text: str = Field(description="The next stretch of the document's text in reading order, cut at a paragraph "
                                  "(else line) end, within max_tokens.")
    tokens: int = Field(description="Tokens of text (the embedding tokenizer, as max_tokens counts everywhere).")
    location: dict[str, Any] = Field(description="start_char/end_char of this stretch, its pages, slide, sheet and "
                                                 "heading_path where known.")
    pages: list[int] = Field(description="Pages (PDF), slides (PPTX), sheets (XLSX/CSV) or chapters (EPUB; numbered "
                                         "in order) the text comes from.")
    next_cursor: str | None = Field(description="Pass it as cursor to read on; null at the end. Tied to these "
                                                "bytes: a changed document makes it stale.")
    total_chars: int = Field(description="Length of the document's whole text.")
    document_type: str
    cached: bool = Field(description="The document came from the cache (not parsed for this call).")
    flags: list[FlagItem] = Field(default_factory=list, description=FLAGS_DESCRIPTION)


class Difference(BaseModel):
    quote: str = Field(description="The quote's words here (empty: the document has words the quote lacks).")
    document: str = Field(description="The document's words here (empty: the quote added words).")


class VerifyResult(BaseModel):
    found: bool = Field(description="True for exact and close matches.")
    match: Literal["exact", "close", "none"] = Field(
        description="exact: equal after normalising whitespace, line-end hyphenation, typographic quotes and "
                    f"dashes. close: similarity >= {CLOSE_SIMILARITY}, most words and all numbers the same. "
                    "none: neither.")
    similarity: float = Field(ge=0.0, le=1.0, description="Normalised similarity of the quote to the document's "
                                                          "wording (1.0 for exact).")
    threshold: float = Field(description="The similarity a close match needs.")
    passage_id: str | None = Field(description="The passage (as retrieve_chunks issues it) holding the quote or the "
                                               "nearest wording; get_passage reads around it.")
    location: dict[str, Any] | None = Field(description="Where the matched words stand: start_char/end_char, pages, "
                                                        "slide, sheet, heading_path.")
    document_text: str | None = Field(description="The document's own wording there (whitespace collapsed).")
    differences: list[Difference] = Field(description="For close (or none that differs in numbers): what differs.")
    occurrences: int = Field(description="exact: how many places hold the quote.")
    reason: str | None = Field(None, description="Why the match is none.")
    document_type: str


class PageImageResult(BaseModel):
    mime_type: Literal["image/png"] = "image/png"
    document_type: str
    page: int
    page_count: int
    width: int = Field(description="Pixels.")
    height: int = Field(description="Pixels.")
    dpi: float = Field(description="Resolution used (lower than asked when a size cap applied; 0 for images).")
    bytes: int = Field(description=f"PNG size; at most {PAGE_IMAGE_MAX_BYTES}.")
    cropped: bool = Field(description="True when cropped to the passage's region.")
    clip: list[float] | None = Field(description="The crop in PDF points (x0, y0, x1, y1).")
    passage_id: str | None
    cached: bool


def _reading(ctx: Context) -> Reading:
    return app_of(ctx).reading


@tool("document", title="Read document", open_world=True,
      summary="the text in reading order, page by page or by cursor, within `max_tokens`",
      returns="`{text, tokens, location, pages[], next_cursor, total_chars, document_type, cached}`")
async def read_document(
    document_url: DocumentUrl, ctx: Context,
    pages: Annotated[str | None, Field(
        description='Only these PDF pages, slides (PPTX, PPT, ODP), sheets (XLSX, XLS, ODS, CSV; numbered in '
                    'order) or chapters (EPUB, in reading order), e.g. "3-7,12"; leave it out when passing a '
                    'cursor.')] = None,
    cursor: Annotated[str | None, Field(
        min_length=1, max_length=400, description="next_cursor of the previous call, to read on.")] = None,
    max_tokens: Annotated[int, Field(
        ge=MIN_READ_TOKENS, le=MAX_READ_TOKENS, description="Tokens to read in this call.")] = 4000,
    view: PageView = None,
) -> ReadResult:
    """Read a document's text in reading order, max_tokens at a time (default 4000,
    50..100000), cut at a paragraph or line end, with where it comes from (location, pages).

    next_cursor continues where this call stopped (null at the end): following the cursors reads
    everything once, with no gap and nothing twice. pages ("3-7,12") limits the read to those PDF
    pages, slides, sheets or EPUB chapters (numbered in order); with a cursor leave pages out.
    A cursor is opaque, tied to the document's bytes (a changed document makes it stale) and
    works on any worker of the server.
    """
    app = app_of(ctx)
    url = validate_url(document_url, app.settings)
    page_filter = PageRanges.parse(pages) if pages is not None else None
    if cursor is not None:
        require_text(cursor, "cursor")
    window = await _reading(ctx).read(url, pages=page_filter, cursor=cursor, max_tokens=max_tokens, view=view)
    return ReadResult(text=window.text, tokens=window.tokens, location=window.location.to_dict(),
                      pages=list(window.units), next_cursor=window.next_cursor, total_chars=window.total_chars,
                      document_type=window.doc_type, cached=window.cached, flags=flag_items(window.flags))


@tool("document", title="Verify quote", open_world=True,
      summary="whether a quote is in the document: exact, close (with the differences) or none",
      returns="`{found, match: exact|close|none, similarity, threshold, passage_id, location, "
              "document_text, differences[{quote, document}], occurrences, reason, document_type}`")
async def verify_quote(
    document_url: DocumentUrl,
    quote: Annotated[str, Field(min_length=1, max_length=MAX_QUOTE_CHARS,
                                description="The words to find, as they will be cited.")],
    ctx: Context,
    view: PageView = None,
) -> VerifyResult:
    """Check that a quote is in a document, in those words: match "exact" (equal after normalising
    whitespace, line-end hyphenation, typographic quotes and dashes), "close" (similar, the same
    numbers; the answer shows the document's own wording and what differs) or "none", with the
    passage_id and location (page, slide, sheet) where it stands. Verify every quote you cite."""
    app = app_of(ctx)
    url = validate_url(document_url, app.settings)
    require_text(quote, "quote")
    verified = await _reading(ctx).verify(url, quote, view=view)
    found = verified.found
    return VerifyResult(
        found=found.match != "none", match=found.match, similarity=found.similarity, threshold=CLOSE_SIMILARITY,
        passage_id=verified.passage_id,
        location=verified.location.to_dict() if verified.location is not None else None,
        document_text=found.wording,
        differences=[Difference(quote=q, document=d) for q, d in found.differences],
        occurrences=found.occurrences, reason=found.reason or None, document_type=verified.doc_type,
    )


@tool("extraction", title="Get page image", open_world=True,
      summary="a page (PDF, Word, OpenDocument, RTF) or a slide as a PNG, optionally cropped to a "
              "passage",
      returns="a PNG image content block (<= 4 megapixels, <= 2 MB), plus `{mime_type, document_type, "
              "page, page_count, width, height, dpi, bytes, cropped, clip, passage_id, cached}`")
async def get_page_image(
    document_url: DocumentUrl,
    page: Annotated[int, Field(ge=1, description="1-based page number.")],
    ctx: Context,
    passage_id: Annotated[PassageId | None, Field(
        description="Crop the page to this passage's region (a passage_id on that page).")] = None,
    dpi: Annotated[int, Field(
        ge=DPI_RANGE[0], le=DPI_RANGE[1], description="Resolution; lowered when the image would exceed the size caps.",
    )] = DEFAULT_DPI,
) -> Annotated[CallToolResult, PageImageResult]:
    """A page as a PNG image (for a model that can see: tables, charts, layout), cropped to a
    passage's region when passage_id (from retrieve_chunks, search_documents or verify_quote) is
    given. PDF pages, an image, the pages of Word/OpenDocument/RTF documents and the slides of
    decks (page N = slide N). dpi 36..300 (default 110); images are capped at 4 megapixels and 2 MB
    (rendered smaller to fit). Spreadsheets and text formats have no pages to render and answer with
    an error."""
    app = app_of(ctx)
    url = validate_url(document_url, app.settings)
    if passage_id is not None:
        require_text(passage_id, "passage_id")
    shown = await _reading(ctx).page_image(url, page, pid=passage_id, dpi=dpi)
    rendered = shown.rendered
    result = PageImageResult(
        document_type=shown.doc_type, page=shown.page, page_count=rendered.page_count, width=rendered.width,
        height=rendered.height, dpi=rendered.dpi, bytes=len(rendered.png), cropped=rendered.clip is not None,
        clip=list(rendered.clip) if rendered.clip is not None else None, passage_id=shown.passage_id,
        cached=shown.cached,
    )
    structured = result.model_dump(mode="json")
    return CallToolResult(
        content=[ImageContent(type="image", data=base64.b64encode(rendered.png).decode("ascii"), mimeType="image/png"),
                 TextContent(type="text", text=json.dumps(structured))],
        structuredContent=structured,
    )

