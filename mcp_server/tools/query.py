"""Document tools: process_document, chunk_document, retrieve_chunks, query_spreadsheet."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from mcp_server.fetch import validate_url
from mcp_server.pipeline.flags import chunk_piece, document_flags
from mcp_server.retrieval.index import stored_scores
from mcp_server.text.language import language_name
from mcp_server.tools.common import (
    DocumentUrl,
    MaxTokens,
    PageView,
    Query,
    app_of,
    fit_budget,
    progress_of,
    require_text,
    tool,
)
from mcp_server.tools.schemas import (
    ChunkResult,
    DocumentResult,
    RetrieveResult,
    SpreadsheetResult,
    chunk_item,
    document_result,
    index_status,
    retrieve_item,
    source_info,
)

__all__ = ["chunk_document", "process_document", "query_spreadsheet", "retrieve_chunks"]


@tool("document", title="Process document", open_world=True,
      summary="a document's text (up to 50k characters), tables, images, links, metadata, language",
      returns="`{content (<= 50k chars), content_length, truncated, document_type, metadata, tables[], "
              "images[], urls[], detected_language, detected_language_name, cached}`")
async def process_document(document_url: DocumentUrl, ctx: Context, view: PageView = None) -> DocumentResult:
    """Download a document (PDF, DOCX, PPTX, XLSX, CSV, HTML, TXT or image) and extract its text,
    tables, OCR text, URLs and language.

    Content is Markdown with page/slide/sheet markers, capped at 50,000 characters
    (content_length and truncated say when more exists). A web page gives its main content
    (view "main", the default) or the whole page (view "full"), and its title, authors, date,
    site name and canonical URL in metadata.
    """
    app = app_of(ctx)
    settings = app.settings
    processed = await app.service.process(validate_url(document_url, settings), progress=progress_of(ctx), view=view)
    doc = processed.document
    flags = await document_flags(app.service.flagger, doc)  # the metadata fields' too, with their name
    return document_result(doc, max_content=settings.max_content_chars, max_table=settings.max_table_chars,
                           cached=processed.cached, language_name=language_name(doc.detected_language),
                           source=source_info(processed.source), flags=flags)


@tool("document", title="Chunk document", open_world=True,
      summary="the document's chunks with token counts, content types and locations",
      returns="`{chunks[{text (<= 5k), text_length, truncated, chunk_index, total_chunks, token_count, "
              "importance_score, content_type, location, language}], chunk_count, document_type}`")
async def chunk_document(document_url: DocumentUrl, ctx: Context, view: PageView = None) -> ChunkResult:
    """Split a document into retrieval chunks that fit the embedding model, each with its
    importance score, content type and location (pages, slide, sheet/rows, heading path)."""
    app = app_of(ctx)
    processed, chunks = await app.service.chunks(validate_url(document_url, app.settings), view=view)
    flags = await app.service.flagger.flags([chunk_piece(c) for c in chunks])
    return ChunkResult(chunks=[chunk_item(c, flags=f) for c, f in zip(chunks, flags, strict=True)],
                       chunk_count=len(chunks),
                       document_type=processed.doc_type, source=source_info(processed.source))


@tool("document", title="Retrieve chunks", open_world=True,
      summary="the best passages for a query in one document, with neighbours and a token budget",
      returns="`{results[{text, truncated, passage_id, chunk_index, importance_score, content_type, "
              "location, score, scores{dense, bm25, rerank}}], total_chunks_indexed, document_type, "
              "cached, timings_ms, index{status: partial or complete, dense_coverage, model, languages},"
              " tokens, omitted}`")
async def retrieve_chunks(
    document_url: DocumentUrl, query: Query, ctx: Context,
    top_k: Annotated[int, Field(description="How many passages to return; clamped to 1..20.")] = 5,
    neighbors: Annotated[int, Field(description="Adjacent chunks added on each side of every hit (merged when "
                                                "they touch); clamped to 0..2.")] = 0,
    max_tokens: MaxTokens = None,
    view: PageView = None,
) -> RetrieveResult:
    """Answer a question about a document: the top_k most relevant passages, best first.

    Hybrid search (embeddings + BM25, fused), reranked by a cross-encoder when available.
    top_k is clamped to 1..20; neighbors (0..2, clamped) widens each hit with adjacent
    chunks. Each result's location says where to cite it from, and its passage_id finds it
    again (get_passage). max_tokens keeps the best results whose texts fit that many tokens.
    A big document answers its first calls within seconds from a partial index (index.status
    "partial") while the complete one builds in the background.
    """
    app = app_of(ctx)
    url = validate_url(document_url, app.settings)
    require_text(query, "query", app.settings.max_text_length)
    # top_k and neighbors are clamped where they are used (DocumentIndex.search), once
    found = await app.service.retrieve(url, query, top_k=top_k, neighbors=neighbors, progress=progress_of(ctx),
                                       view=view)
    index = found.indexed.view.index  # its chunks' stored instruction scores flag them without a model call
    flags = await app.service.flagger.flags([chunk_piece(h.chunk, h.text, stored_scores(index, h.chunk))
                                             for h in found.hits])
    items, tokens, omitted = await fit_budget(
        [retrieve_item(h, flags=f) for h, f in zip(found.hits, flags, strict=True)], app, max_tokens)
    indexed = found.indexed
    return RetrieveResult(results=items, total_chunks_indexed=len(indexed.view.index.chunks),
                          document_type=indexed.doc_type, cached=indexed.view.cached, timings_ms=found.timings_ms,
                          index=index_status(indexed.view), tokens=tokens, omitted=omitted,
                          source=source_info(indexed.source))


@tool("document", title="Query spreadsheet", open_world=True,
      summary="the rows of an XLSX or CSV that hold a value",
      returns="`{matches[{sheet, row_number, ...row}], match_count, sheets_searched, truncated}`")
async def query_spreadsheet(
    document_url: DocumentUrl,
    search_value: Annotated[str, Field(min_length=1, description="Text to find in cells (case-insensitive "
                                                                 "substring).")],
    ctx: Context,
    column: Annotated[str | None, Field(description="Only search this column (its header name); omit for "
                                                    "every column.")] = None,
) -> SpreadsheetResult:
    """Find spreadsheet rows (XLSX or CSV, every sheet) whose cells contain search_value
    (case-insensitive substring); optionally only in one column. Use it for row lookups."""
    app = app_of(ctx)
    url = validate_url(document_url, app.settings)
    require_text(search_value, "search_value", app.settings.max_text_length)
    found = await app.service.query_spreadsheet(url, search_value, column)
    return SpreadsheetResult(**found)
