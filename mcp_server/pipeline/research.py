"""Research across documents: one search over many URLs, passages found again by id, token budgets.

``Research`` sits on ``DocumentService``: every document of a search goes through the same
pipeline as ``retrieve_chunks`` (``DocumentService.index``: download cache, parser pool,
coalesced index builds under MCP_MODEL_CONCURRENCY), all documents at once; a document that fails is
reported with its error while the others answer; a big one not yet indexed answers from a partial
index for the question (its complete index builds in the background, ``IndexManager.opening``).
The pooled candidates are then ranked once with global scores (``retrieval/pool.py``). A passage
id leads back to its index in memory or on disk (``passages.py``), never to a download.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio
import numpy as np
from anyio.streams.memory import MemoryObjectReceiveStream

from mcp_server.chunking import TokenCounter
from mcp_server.citations.neighbours import merge_texts
from mcp_server.citations.passages import passage_id
from mcp_server.core.bounds import clamp
from mcp_server.core.concurrency import Progress
from mcp_server.core.errors import MCPServerError, ToolTimeoutError, ValidationError
from mcp_server.core.logging import request_id_var
from mcp_server.core.models import Chunk, ChunkLocation, SearchHit
from mcp_server.detectors.scores import ChunkScores
from mcp_server.fetch import validate_url
from mcp_server.pipeline.passages import find_passage, window_location
from mcp_server.pipeline.service import DocumentService, Source, View
from mcp_server.retrieval.index import DocumentIndex, stored_scores
from mcp_server.retrieval.pool import PoolSource, search_pool

__all__ = [
    "MAX_PASSAGE_NEIGHBORS", "Budgeted", "DocumentOutcome", "Found", "MultiSearch", "PageRanges",
    "PassageWindow", "Research", "pack_texts",
]

log = logging.getLogger(__name__)

MAX_PASSAGE_NEIGHBORS = 5


# --- values ------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, slots=True)
class DocumentOutcome:
    url: str
    error: MCPServerError | None = None  # None: the document was searched
    doc_type: str | None = None
    chunks: int | None = None
    cached: bool | None = None
    source: Source | None = None  # which bytes were searched, fetched when
    complete: bool | None = None  # False: a partial index answered (the complete one builds in the background)


@dataclass(frozen=True, kw_only=True, slots=True)
class Found:
    url: str
    hit: SearchHit
    ranks: tuple[int | None, ...]  # 1-based rank in each phrasing's ranking
    scored: ChunkScores | None = None  # its chunk's instruction scores stored with the index (pipeline/flags.py)


@dataclass(frozen=True, kw_only=True, slots=True)
class MultiSearch:
    found: list[Found]
    documents: list[DocumentOutcome]
    timings_ms: dict[str, float]


@dataclass(frozen=True, kw_only=True, slots=True)
class PassageWindow:
    target: int  # position of the asked-for chunk in ``chunks``
    chunks: list[tuple[str, Chunk]]  # (passage id, chunk), in document order
    text: str  # the window's text, shared characters of adjacent chunks kept once
    location: ChunkLocation  # the window's span
    total_chunks: int
    doc_type: str
    scored: list[ChunkScores | None] = field(default_factory=list)  # each chunk's stored instruction scores


@dataclass(frozen=True, slots=True)
class PageRanges:
    """A pages filter such as "3-7,12": inclusive 1-based ranges, sorted and merged."""

    ranges: tuple[tuple[int, int], ...]
    _starts: tuple[int, ...] = field(default=(), repr=False, compare=False)

    _PART = re.compile(r"^\s*([1-9][0-9]{0,6})\s*(?:-\s*([1-9][0-9]{0,6})\s*)?$")

    @classmethod
    def parse(cls, text: str, argument: str = "pages") -> PageRanges:
        parts = text.split(",")
        spans: list[tuple[int, int]] = []
        for part in parts:
            match = cls._PART.match(part)
            if match is None:
                raise ValidationError(
                    f"argument '{argument}' must list pages and ranges like \"3-7,12\" (numbers from 1); "
                    f"{part.strip()!r} is not one", argument=argument)
            lo, hi = int(match[1]), int(match[2] or match[1])
            if hi < lo:
                raise ValidationError(f"argument '{argument}': the range {lo}-{hi} runs backwards", argument=argument)
            spans.append((lo, hi))
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(spans):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        return cls(tuple(merged), tuple(lo for lo, _ in merged))

    def __contains__(self, page: object) -> bool:
        if not isinstance(page, int):
            return False
        i = bisect.bisect_right(self._starts, page) - 1
        return i >= 0 and page <= self.ranges[i][1]

    def allows(self, chunk: Chunk) -> bool:
        """PDF pages, or the slide of a PPTX chunk; chunks without either never match."""
        loc = chunk.location
        return any(p in self for p in loc.pages) or (loc.slide is not None and loc.slide in self)

    def positions(self, index: DocumentIndex) -> np.ndarray:
        return np.asarray([i for i, c in enumerate(index.chunks) if self.allows(c)], dtype=np.int64)


# --- the pipeline ----------------------------------------------------------------------------------
class _DocumentProgress:
    """Per-document progress folded into one monotonic value: each document counts 1 when searched.

    A document's own steps (download, parse, chunks, embedding batches) move its share forward;
    every notification names the document."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress = progress
        self.closed = False  # the call answered: documents still loading report to nobody (MCP: the request ended)
        self.total = total
        self.shares = [0.0] * total
        self.sent = 0.0
        self.lock = anyio.Lock()

    def for_document(self, i: int, url: str) -> Progress | None:
        if self.progress is None:
            return None

        async def report(done: float, total: float | None, message: str) -> None:
            # The service counts steps 1..3 without a total, then embedding with one.
            share = min(done, 3.0) * 0.05 if total is None else 0.15 + 0.8 * (done / total if total else 1.0)
            await self.advance(i, share, f"[{i + 1}/{self.total}] {url}: {message}")

        return report

    async def advance(self, i: int, share: float, message: str) -> None:
        if self.progress is None or self.closed:
            return
        async with self.lock:  # concurrent documents: values must reach the client increasing
            self.shares[i] = max(self.shares[i], min(share, 1.0))
            value = round(sum(self.shares), 4)
            if value < self.sent:
                return
            self.sent = value
            await self.progress(value, float(self.total), message)


class Research:
    def __init__(self, service: DocumentService) -> None:
        self.service = service

    async def search(
        self, urls: Sequence[str], queries: Sequence[str], *, top_k: int, per_document: int | None = None,
        pages: PageRanges | None = None, progress: Progress | None = None, deadline: float | None = None,
        view: View | None = None,
    ) -> MultiSearch:
        """Index every document concurrently, then rank all their candidates together. Documents
        not ready within ``deadline`` seconds, or within MCP_SEARCH_COLD_WAIT once another is ready, are
        reported as TIMEOUT and the others answer; with a lifespan, those go on loading in the background."""
        started = time.perf_counter()
        tracker = _DocumentProgress(progress, len(urls))
        background = self.service.background
        late = ToolTimeoutError(
            f"not ready within {min(deadline or math.inf, self.service.settings.search_cold_wait):g} s of this "
            "call (still downloading or indexing, which goes on); search it again later, alone or with the others"
            if background.active else f"not ready within {deadline or 0:g} s of this call (still downloading "
            "or indexing); search it again later, alone or with the others", timeout=deadline)
        outcomes: list[DocumentOutcome] = [DocumentOutcome(url=u, error=late) for u in urls]
        indexes: list[DocumentIndex | None] = [None] * len(urls)
        send, receive = anyio.create_memory_object_stream[int](len(urls))

        async def one(i: int, url: str) -> None:
            try:
                await load(i, url)
            finally:
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    send.send_nowait(i)  # the call may have answered already

        async def load(i: int, url: str) -> None:
            try:
                checked = validate_url(url, self.service.settings)
                # with the question, a big cold document answers from a partial index as retrieve_chunks does
                indexed = await self.service.index(checked, query=queries[0], progress=tracker.for_document(i, url),
                                                   view=view)
            except MCPServerError as exc:
                outcomes[i] = DocumentOutcome(url=url, error=exc)
                await tracker.advance(i, 1.0, f"[{i + 1}/{len(urls)}] {url}: failed ({exc.code})")
                return
            except Exception:  # one document's bug must not fail the others; the log has the traceback
                rid = request_id_var.get()
                log.exception("research.document_failed", extra={"url": url})
                outcomes[i] = DocumentOutcome(url=url, error=MCPServerError(
                    f"Internal error; quote request id {rid} when reporting it"))
                return
            index = indexes[i] = indexed.view.index
            outcomes[i] = DocumentOutcome(url=url, doc_type=indexed.doc_type, chunks=len(index.chunks),
                                          cached=indexed.view.cached, source=indexed.source,
                                          complete=indexed.view.complete)
            await tracker.advance(i, 1.0, f"[{i + 1}/{len(urls)}] {url}: ready ({len(index.chunks)} chunks)")

        with send, receive:
            if background.active:  # the documents load in the process's background: a call may answer first
                for i, url in enumerate(urls):
                    background.spawn(one, i, url)
                await _until_answerable(receive, len(urls), indexes, deadline, self.service.settings.search_cold_wait)
            else:
                with anyio.move_on_after(deadline if deadline is not None else math.inf):
                    async with anyio.create_task_group() as group:
                        for i, url in enumerate(urls):
                            group.start_soon(one, i, url)
        tracker.closed = True
        outcomes, indexes = list(outcomes), list(indexes)  # what this answer reports: documents ending later do not
        timings = {"index": round((time.perf_counter() - started) * 1000, 2)}

        ready = [i for i, index in enumerate(indexes) if index is not None]
        if not ready:
            raise _none_searched(outcomes)
        sources = []
        for i in ready:
            index = indexes[i]
            assert index is not None
            # each searched under its URL: the file name's words that name it route (naming.py)
            sources.append(PoolSource(index=index.named(urls[i]),
                                      allowed=pages.positions(index) if pages is not None else None))
        models = self.service.models

        def embed(model_id: str, text: str) -> np.ndarray:
            return models.embedder_by_id(model_id).embed_query(text)

        started = time.perf_counter()
        hits = await self.service.runner.run(
            lambda: search_pool(sources, queries, embed, top_k=top_k, per_document=per_document,
                                reranker=models.reranker, ranker=self.service.indexes.searcher.ranker,
                                route=self.service.settings.search_route_documents))
        timings["search"] = round((time.perf_counter() - started) * 1000, 2)
        found = [Found(url=urls[ready[h.source]], hit=h.hit, ranks=h.ranks,
                       scored=stored_scores(sources[h.source].index, h.hit.chunk)) for h in hits]
        return MultiSearch(found=found, documents=outcomes, timings_ms=timings)

    async def passage(self, pid: str, *, before: int = 0, after: int = 0) -> PassageWindow:
        """The chunk a passage id names and up to MAX_PASSAGE_NEIGHBORS neighbours each way."""
        ref, index = await find_passage(self.service, pid)
        before, after = clamp(before, 0, MAX_PASSAGE_NEIGHBORS), clamp(after, 0, MAX_PASSAGE_NEIGHBORS)
        lo, hi = max(0, ref.position - before), min(len(index.chunks) - 1, ref.position + after)
        window = index.chunks[lo : hi + 1]
        span = window_location(index.chunks[ref.position], window)
        return PassageWindow(
            target=ref.position - lo, chunks=[(passage_id(index.key, lo + i, c.text), c) for i, c in enumerate(window)],
            text=merge_texts(window), location=span, total_chunks=len(index.chunks),
            doc_type=window[0].doc_type, scored=[stored_scores(index, c) for c in window],
        )


async def _until_answerable(
    done: MemoryObjectReceiveStream[int], total: int, indexes: list[DocumentIndex | None], deadline: float | None,
    cold_wait: float,
) -> None:
    """Until every document has loaded (``done`` names each as it ends), or ``cold_wait`` seconds have passed
    with one of them ready (a cold shelf's first answer), or ``deadline`` seconds."""
    started = time.perf_counter()
    with anyio.move_on_after(deadline if deadline is not None else math.inf):
        for _ in range(total):
            ready = any(index is not None for index in indexes)
            with anyio.move_on_after(cold_wait - (time.perf_counter() - started) if ready else math.inf) as wait:
                await done.receive()
            if wait.cancelled_caught:
                return


def _none_searched(outcomes: list[DocumentOutcome]) -> MCPServerError:
    """Every document failed: the call fails with the first error's code, naming each failure."""
    errors = [o.error for o in outcomes if o.error is not None]
    first = errors[0]
    message = "no document could be searched: " + "; ".join(
        f"{o.url}: {o.error.message}" for o in outcomes if o.error is not None)
    documents = [{"url": o.url, "code": o.error.code} for o in outcomes if o.error is not None]
    return type(first)(message, **{**first.details, "documents": documents})


# --- token budget ----------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, slots=True)
class Budgeted:
    texts: list[str]  # the texts kept, best first; only the first can have been cut
    truncated: bool  # the first text was cut to fit
    tokens: int
    omitted: int


def pack_texts(texts: Sequence[str], counter: TokenCounter, budget: int) -> Budgeted:
    """Keep results in rank order while their texts fit ``budget`` tokens together (counted with the
    embedder's tokenizer, special tokens included, so the count never undercounts); stop at the first
    that does not fit, so the results stay the best ones. A best result that alone exceeds the budget
    is cut at a word boundary to fit, rather than answering nothing."""
    counts = counter.count_tokens(list(texts))
    kept: list[str] = []
    used = 0
    truncated = False
    for text, count in zip(texts, counts, strict=True):
        if used + count <= budget:
            kept.append(text)
            used += count
            continue
        if not kept:
            cut, cost = _cut_to_budget(text, counter, budget)
            if cut:
                kept, used, truncated = [cut], cost, True
        break
    return Budgeted(texts=kept, truncated=truncated, tokens=used, omitted=len(texts) - len(kept))


def _cut_to_budget(text: str, counter: TokenCounter, budget: int) -> tuple[str, int]:
    """The longest word-boundary prefix within ``budget`` tokens (counts grow with the prefix)."""
    ends = [m.end() for m in re.finditer(r"\S+", text)]
    best, cost = "", 0
    lo, hi = 0, len(ends) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        prefix = text[: ends[mid]]
        n = counter.count_tokens([prefix])[0]
        if n <= budget:
            best, cost, lo = prefix, n, mid + 1
        else:
            hi = mid - 1
    return best, cost
