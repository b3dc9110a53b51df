"""Research tools: search_documents (one search over many documents) and get_passage."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from mcp_server.core.errors import ValidationError
from mcp_server.core.settings import SEARCH_DOCUMENTS_CEILING
from mcp_server.middleware.http import client_identity
from mcp_server.pipeline.flags import chunk_piece
from mcp_server.pipeline.research import MAX_PASSAGE_NEIGHBORS, DocumentOutcome, PageRanges, Research
from mcp_server.tools.common import MaxTokens, PageView, Query, app_of, fit_budget, progress_of, require_text, tool
from mcp_server.tools.schemas import (
    DocumentError,
    DocumentStatus,
    PassageChunk,
    PassageResult,
    SearchItem,
    SearchResult,
    capped,
    chunk_item,
    flag_items,
    retrieve_item,
    source_info,
)

__all__ = ["PassageId", "get_passage", "search_documents"]

MAX_QUERIES = 5  # extra phrasings; each one is a full ranking of the pool
DEADLINE_SHARE = 0.9  # of the tool's timeout, for the documents; the rest ranks and answers

PassageId = Annotated[str, Field(min_length=1, max_length=200,
                                 description="A passage_id from retrieve_chunks, search_documents or verify_quote.")]


def _status(outcome: DocumentOutcome, results: int) -> DocumentStatus:
    if outcome.error is not None:
        return DocumentStatus(url=outcome.url, status="error",
                              error=DocumentError(code=outcome.error.code, error=outcome.error.message))
    return DocumentStatus(url=outcome.url, status="ok", document_type=outcome.doc_type, chunks=outcome.chunks,
                          cached=outcome.cached, results=results, source=source_info(outcome.source),
                          index=None if outcome.complete is None else "complete" if outcome.complete else "partial")


@tool("document", title="Search documents", open_world=True,
      max_items=(("document_urls", "search_max_documents"),),
      summary="one question (and up to 5 more phrasings) over up to 50 documents "
              "(`MCP_SEARCH_MAX_DOCUMENTS`), ranked together",
      returns="`{results[{document_url, text, truncated, passage_id, chunk_index, location, score, "
              "scores{dense, bm25, rerank}, ranks[]}], documents[{url, status: ok|error, error{code, "
              "error}, document_type, chunks, cached, results, index: complete|partial}], tokens, "
              "omitted, timings_ms}`")
async def search_documents(
    document_urls: Annotated[list[str], Field(
        min_length=1, max_length=SEARCH_DOCUMENTS_CEILING,
        description="http(s) URLs of the documents to search together (at most maxItems, the server's "
                    "search_max_documents, 50 by default; a URL given twice is searched once).")],
    query: Query,
    ctx: Context,
    queries: Annotated[list[str] | None, Field(
        max_length=MAX_QUERIES,
        description=f"Up to {MAX_QUERIES} other phrasings of the question; their rankings are fused with the "
                    "query's.")] = None,
    top_k: Annotated[int, Field(description="How many passages to return across all documents; clamped to "
                                            "1..50.")] = 10,
    per_document: Annotated[int | None, Field(
        ge=1, description="At most this many results from each document (for comparisons); omit for no cap.")] = None,
    pages: Annotated[str | None, Field(
        description='Only passages on these pages (PDF) or slides (PPTX), e.g. "3-7,12"; omit for all.')] = None,
    max_tokens: MaxTokens = None,
    view: PageView = None,
) -> SearchResult:
    """Search several documents at once (up to 50 URLs by default): the top_k best passages across all of them,
    best first, with scores that compare across documents.

    queries adds other phrasings of the question (their rankings are fused); per_document keeps at
    most that many results from each document (for comparisons); pages ("3-7,12") keeps only
    passages on those pages (PDF) or slides (PPTX); max_tokens keeps the best results whose texts
    fit that many tokens. A document that fails is reported in documents[] while the others answer.
    Each result names its document_url, location and passage_id (for get_passage).
    """
    app = app_of(ctx)
    settings = app.settings
    if len(document_urls) > settings.search_max_documents:
        raise ValidationError(f"argument 'document_urls' should have at most {settings.search_max_documents} items "
                              f"(search_max_documents), not {len(document_urls)}", argument="document_urls")
    urls = list(dict.fromkeys(u.strip() for u in document_urls))  # a URL given twice is searched once
    phrasings = [require_text(query, "query", settings.max_text_length)]
    for extra in queries or []:
        phrasings.append(require_text(extra, "queries", settings.max_text_length))
    page_filter = PageRanges.parse(pages) if pages is not None else None
    if len(urls) > 1:  # the guard took one request's token; every further document costs one more
        await app.limiter.check(client_identity(ctx.request_context.request, settings), cost=len(urls) - 1)
    # a document still indexing when the tool's time is nearly up is reported, not fatal to the others
    deadline = settings.timeout_for("document") * DEADLINE_SHARE
    # top_k is clamped where it is used (search_pool), once
    found = await Research(app.service).search(urls, phrasings, top_k=top_k, per_document=per_document,
                                               pages=page_filter, progress=progress_of(ctx), deadline=deadline,
                                               view=view)
    flags = await app.service.flagger.flags([chunk_piece(f.hit.chunk, f.hit.text, f.scored) for f in found.found])
    items = [SearchItem(**retrieve_item(f.hit, flags=flagged).model_dump(), document_url=f.url, ranks=list(f.ranks))
             for f, flagged in zip(found.found, flags, strict=True)]
    items, tokens, omitted = await fit_budget(items, app, max_tokens)
    counts = {url: sum(item.document_url == url for item in items) for url in urls}
    return SearchResult(results=items, documents=[_status(o, counts[o.url]) for o in found.documents],
                        tokens=tokens, omitted=omitted, timings_ms=found.timings_ms)


@tool("utility", title="Get passage",
      summary="a passage by the `passage_id` a search returned, with up to 5 neighbours each way",
      returns="`{passage_id, text, truncated, location, document_type, total_chunks, "
              "chunks[{...chunk_document's fields, passage_id, target}]}`")
async def get_passage(
    passage_id: PassageId, ctx: Context,
    before: Annotated[int, Field(description=f"Chunks to add before the passage; clamped to "
                                             f"0..{MAX_PASSAGE_NEIGHBORS}.")] = 0,
    after: Annotated[int, Field(description=f"Chunks to add after the passage; clamped to "
                                            f"0..{MAX_PASSAGE_NEIGHBORS}.")] = 0,
) -> PassageResult:
    """Return the passage a passage_id names (from retrieve_chunks or search_documents) with up to
    5 neighbouring chunks before and after it (clamped to 0..5), with their locations, to quote
    or read around a hit. Served from the server's index, never downloaded again; an id whose
    index is gone (evicted or cleared) is an error that says to search again."""
    app = app_of(ctx)
    require_text(passage_id, "passage_id")
    window = await Research(app.service).passage(passage_id, before=before, after=after)
    text, _, truncated = capped(window.text, app.settings.max_content_chars)
    scored = window.scored or [None] * len(window.chunks)
    flags = await app.service.flagger.flags([chunk_piece(chunk, scored=s)
                                             for (_, chunk), s in zip(window.chunks, scored, strict=True)])
    chunks = [PassageChunk(**chunk_item(chunk, flags=flagged).model_dump(), passage_id=pid, target=i == window.target)
              for i, ((pid, chunk), flagged) in enumerate(zip(window.chunks, flags, strict=True))]
    every = sorted({f for flagged in flags for f in flagged}, key=lambda f: (f.start, f.end))
    return PassageResult(passage_id=window.chunks[window.target][0], text=text, truncated=truncated,
                         location=window.location.to_dict(), document_type=window.doc_type,
                         total_chunks=window.total_chunks, chunks=chunks, flags=flag_items(every))
