"""Document tools: process_document, chunk_document, retrieve_chunks, query_spreadsheet."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from mcp.server.fastmcp import Context

from mcp_server.core.concurrency import run_sync
from mcp_server.core.errors import ValidationError
from mcp_server.fetch import validate_url
from mcp_server.processors.language import language_name
from mcp_server.research import pack_texts
from mcp_server.service import Progress
from mcp_server.tools.schemas import (
    ChunkResult,
    DocumentResult,
    IndexStatus,
    RetrieveItem,
    RetrieveResult,
    SpreadsheetResult,
    chunk_item,
    document_result,
    retrieve_item,
)

if TYPE_CHECKING:
    from mcp_server.context import AppContext
    from mcp_server.server import RagMCP

__all__ = ["register"]

MAX_TOP_K = 20
MAX_NEIGHBORS = 2


def app_of(ctx: Context) -> AppContext:
    return ctx.request_context.lifespan_context


def progress_of(ctx: Context) -> Progress:
    async def report(done: float, total: float | None, message: str) -> None:
        await ctx.report_progress(done, total, message)

    return report


def require_text(value: str, name: str, limit: int) -> str:
    if not value.strip():
        raise ValidationError(f"argument '{name}' must not be empty", argument=name)
    if len(value) > limit:
        raise ValidationError(f"argument '{name}' is {len(value)} characters; the limit is {limit}", argument=name)
    return value


def require_budget(max_tokens: int | None) -> int | None:
    if max_tokens is not None and max_tokens < 1:
        raise ValidationError(f"argument 'max_tokens' must be at least 1, not {max_tokens}", argument="max_tokens")
    return max_tokens


Item = TypeVar("Item", bound=RetrieveItem)


async def fit_budget(items: list[Item], app: AppContext, budget: int | None) -> tuple[list[Item], int | None, int]:
    """(the best items whose texts fit ``budget`` tokens, tokens used, items left out); unchanged without one."""
    if budget is None:
        return items, None, 0
    packed = await run_sync(pack_texts, [item.text for item in items], app.models.token_counter, budget)
    kept = items[: len(packed.texts)]
    if packed.truncated:
        kept[0] = kept[0].model_copy(update={"text": packed.texts[0], "truncated": True})
    return kept, packed.tokens, packed.omitted


def register(server: RagMCP) -> None:
    settings = server.rag_settings

    @server.guarded_tool("document", title="Process document", open_world=True)
    async def process_document(document_url: str, ctx: Context) -> DocumentResult:
        """Download a document (PDF, DOCX, PPTX, XLSX, CSV, HTML, TXT or image) and extract its text,
        tables, OCR text, URLs and language.

        Content is Markdown with page/slide/sheet markers, capped at 50,000 characters
        (content_length and truncated say when more exists).
        """
        url = validate_url(document_url, settings)
        processed = await app_of(ctx).service.process(url, progress=progress_of(ctx))
        assert processed.document is not None
        doc = processed.document
        return document_result(doc, max_content=settings.max_content_chars, max_table=settings.max_table_chars,
                               cached=processed.cached, language_name=language_name(doc.detected_language))

    @server.guarded_tool("document", title="Chunk document", open_world=True)
    async def chunk_document(document_url: str, ctx: Context) -> ChunkResult:
        """Split a document into retrieval chunks that fit the embedding model, each with its
        importance score, content type and location (pages, slide, sheet/rows, heading path)."""
        url = validate_url(document_url, settings)
        processed, chunks = await app_of(ctx).service.chunks(url)
        return ChunkResult(chunks=[chunk_item(c) for c in chunks], chunk_count=len(chunks),
                           document_type=processed.doc_type)

    @server.guarded_tool("document", title="Retrieve chunks", open_world=True)
    async def retrieve_chunks(
        document_url: str, query: str, ctx: Context, top_k: int = 5, neighbors: int = 0,
        max_tokens: int | None = None,
    ) -> RetrieveResult:
        """Answer a question about a document: the top_k most relevant passages, best first.

        Hybrid search (embeddings + BM25, fused), reranked by a cross-encoder when available.
        top_k is clamped to 1..20; neighbors (0..2, clamped) widens each hit with adjacent
        chunks. Each result's location says where to cite it from, and its passage_id finds it
        again (get_passage). max_tokens keeps the best results whose texts fit that many tokens.
        A big document answers its first calls within seconds from a partial index (index.status
        "partial") while the complete one builds in the background.
        """
        url = validate_url(document_url, settings)
        require_text(query, "query", settings.max_text_length)
        budget = require_budget(max_tokens)
        top_k = max(1, min(top_k, MAX_TOP_K))
        neighbors = max(0, min(neighbors, MAX_NEIGHBORS))
        app = app_of(ctx)
        found = await app.service.retrieve(url, query, top_k=top_k, neighbors=neighbors, progress=progress_of(ctx))
        items, tokens, omitted = await fit_budget([retrieve_item(h) for h in found.hits], app, budget)
        index = IndexStatus(status="complete" if found.complete else "partial", dense_coverage=found.dense_coverage)
        return RetrieveResult(results=items, total_chunks_indexed=found.total_chunks, document_type=found.doc_type,
                              cached=found.cached, timings_ms=found.timings_ms, index=index, tokens=tokens,
                              omitted=omitted)

    @server.guarded_tool("document", title="Query spreadsheet", open_world=True)
    async def query_spreadsheet(
        document_url: str, search_value: str, ctx: Context, column: str | None = None,
    ) -> SpreadsheetResult:
        """Find spreadsheet rows (XLSX or CSV, every sheet) whose cells contain search_value
        (case-insensitive substring); optionally only in one column. Use it for row lookups."""
        url = validate_url(document_url, settings)
        require_text(search_value, "search_value", settings.max_text_length)
        found = await app_of(ctx).service.query_spreadsheet(url, search_value, column)
        return SpreadsheetResult(**found)
