"""Research tools: search_documents (one search over many documents) and get_passage."""

from __future__ import annotations

from mcp.server.fastmcp import Context

from mcp_server.core.errors import ValidationError
from mcp_server.middleware.http import client_identity
from mcp_server.research import MAX_DOCUMENTS, DocumentOutcome, PageRanges, Research
from mcp_server.tools.common import app_of, fit_budget, progress_of, require_budget, require_text, tool
from mcp_server.tools.schemas import (
    DocumentError,
    DocumentStatus,
    PassageChunk,
    PassageResult,
    SearchItem,
    SearchResult,
    capped,
    chunk_item,
    retrieve_item,
)

__all__ = ["get_passage", "search_documents"]

MAX_QUERIES = 5  # extra phrasings; each one is a full ranking of the pool
DEADLINE_SHARE = 0.9  # of the tool's timeout, for the documents; the rest ranks and answers


def _status(outcome: DocumentOutcome, results: int) -> DocumentStatus:
    if outcome.error is not None:
        return DocumentStatus(url=outcome.url, status="error",
                              error=DocumentError(code=outcome.error.code, error=outcome.error.message))
    return DocumentStatus(url=outcome.url, status="ok", document_type=outcome.doc_type, chunks=outcome.chunks,
                          cached=outcome.cached, results=results)


@tool("document", title="Search documents", open_world=True)
async def search_documents(
    document_urls: list[str], query: str, ctx: Context, queries: list[str] | None = None, top_k: int = 10,
    per_document: int | None = None, pages: str | None = None, max_tokens: int | None = None,
) -> SearchResult:
    """Search several documents at once (1-20 URLs): the top_k best passages across all of them,
    best first, with scores that compare across documents.

    queries adds other phrasings of the question (their rankings are fused); per_document keeps at
    most that many results from each document (for comparisons); pages ("3-7,12") keeps only
    passages on those pages (PDF) or slides (PPTX); max_tokens keeps the best results whose texts
    fit that many tokens. A document that fails is reported in documents[] while the others answer.
    Each result names its document_url, location and passage_id (for get_passage).
    """
    app = app_of(ctx)
    settings = app.settings
    urls = list(dict.fromkeys(u.strip() for u in document_urls))  # a URL given twice is searched once
    if not 1 <= len(urls) <= MAX_DOCUMENTS:
        raise ValidationError(f"argument 'document_urls' must hold 1 to {MAX_DOCUMENTS} URLs, not {len(urls)}",
                              argument="document_urls")
    phrasings = [require_text(query, "query", settings.max_text_length)]
    for extra in queries or []:
        phrasings.append(require_text(extra, "queries", settings.max_text_length))
    if len(phrasings) - 1 > MAX_QUERIES:
        raise ValidationError(f"argument 'queries' holds at most {MAX_QUERIES} phrasings", argument="queries")
    if per_document is not None and per_document < 1:
        raise ValidationError(f"argument 'per_document' must be at least 1, not {per_document}",
                              argument="per_document")
    page_filter = PageRanges.parse(pages) if pages is not None else None
    budget = require_budget(max_tokens)
    if len(urls) > 1:  # the guard took one request's token; every further document costs one more
        await app.limiter.check(client_identity(ctx.request_context.request, settings), cost=len(urls) - 1)
    # a document still indexing when the tool's time is nearly up is reported, not fatal to the others
    deadline = settings.timeout_for("document") * DEADLINE_SHARE
    # top_k is clamped where it is used (search_pool), once
    found = await Research(app.service).search(urls, phrasings, top_k=top_k, per_document=per_document,
                                               pages=page_filter, progress=progress_of(ctx), deadline=deadline)
    items = [SearchItem(**retrieve_item(f.hit).model_dump(), document_url=f.url, ranks=list(f.ranks))
             for f in found.found]
    items, tokens, omitted = await fit_budget(items, app, budget)
    counts = {url: sum(item.document_url == url for item in items) for url in urls}
    return SearchResult(results=items, documents=[_status(o, counts[o.url]) for o in found.documents],
                        tokens=tokens, omitted=omitted, timings_ms=found.timings_ms)


@tool("utility", title="Get passage")
async def get_passage(passage_id: str, ctx: Context, before: int = 0, after: int = 0) -> PassageResult:
    """Return the passage a passage_id names (from retrieve_chunks or search_documents) with up to
    5 neighbouring chunks before and after it (clamped to 0..5), with their locations, to quote
    or read around a hit. Served from the server's index, never downloaded again; an id whose
    index is gone (evicted or cleared) is an error that says to search again."""
    app = app_of(ctx)
    require_text(passage_id, "passage_id", 200)
    window = await Research(app.service).passage(passage_id, before=before, after=after)
    text, _, truncated = capped(window.text, app.settings.max_content_chars)
    chunks = [PassageChunk(**chunk_item(chunk).model_dump(), passage_id=pid, target=i == window.target)
              for i, (pid, chunk) in enumerate(window.chunks)]
    return PassageResult(passage_id=window.chunks[window.target][0], text=text, truncated=truncated,
                         location=window.location.to_dict(), document_type=window.doc_type,
                         total_chunks=window.total_chunks, chunks=chunks)
