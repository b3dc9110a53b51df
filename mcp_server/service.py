"""The document pipeline behind the tools: fetch -> process -> chunk -> index/search, with caches.

Three cache layers (as the original design): downloads by URL, processed documents by content
key, retrievers (indexes) by content key in memory then on disk (``retrieval.IndexManager``).
Keys of the last two hash the *bytes*, so one document at two URLs is processed and embedded
once, and new bytes at an old URL never meet stale results.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from mcp_server.chunking import CHUNKER_VERSION, ChunkParams, chunk_document, chunk_params_for
from mcp_server.core.cache import CacheLayer, MemoryLayer
from mcp_server.core.concurrency import run_sync
from mcp_server.core.errors import ValidationError
from mcp_server.core.models import Chunk, FetchedDocument, ProcessedDocument, SearchHit
from mcp_server.core.settings import Settings
from mcp_server.fetch import Fetcher
from mcp_server.processors import DocumentInput, ProcessOptions, document_input, process_document
from mcp_server.processors.sandbox import ParserPool
from mcp_server.processors.sheet_search import search_spreadsheet
from mcp_server.retrieval.index import DocumentIndex
from mcp_server.retrieval.manager import IndexManager
from mcp_server.retrieval.models import ModelRegistry
from mcp_server.retrieval.passages import passage_id

__all__ = ["DocumentService", "Indexed", "Processed", "Progress", "Retrieval"]

logger = logging.getLogger(__name__)

# (done, total, message), awaited: the tools forward it as MCP progress notifications.
Progress = Callable[[float, float | None, str], Awaitable[None]]

# Bump when processor output changes in a way cached documents and indexes must not survive.
PROCESSING_VERSION = "1"


@dataclass(frozen=True, kw_only=True, slots=True)
class Processed:
    fetched: FetchedDocument
    doc_type: str  # sniffed
    content_key: str  # hash of bytes + processing options: the document and index cache key
    document: ProcessedDocument | None  # None when the caller only needed the key (warm index)
    timings_ms: dict[str, float]
    cached: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class Indexed:
    index: DocumentIndex
    doc_type: str
    cached: bool  # True when nothing was embedded (memory or disk)
    timings_ms: dict[str, float]


@dataclass(frozen=True, kw_only=True, slots=True)
class Retrieval:
    hits: list[SearchHit]
    total_chunks: int
    doc_type: str
    cached: bool
    timings_ms: dict[str, float]


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


class DocumentService:
    def __init__(
        self,
        settings: Settings,
        *,
        fetcher: Fetcher,
        parsers: ParserPool,
        models: ModelRegistry,
        indexes: IndexManager,
        downloads: CacheLayer[FetchedDocument] | None = None,
        documents: CacheLayer[ProcessedDocument] | None = None,
    ) -> None:
        self.settings = settings
        self.fetcher = fetcher
        self.parsers = parsers
        self.models = models
        self.indexes = indexes
        self.options = ProcessOptions.from_settings(settings)
        self.downloads: CacheLayer[FetchedDocument] = downloads or MemoryLayer(
            "download", max_entries=settings.cache_max_downloads, ttl=settings.cache_ttl,
            max_bytes=settings.cache_max_download_bytes, size_of=lambda d: len(d.data),
        )
        self.documents: CacheLayer[ProcessedDocument] = documents or MemoryLayer(
            "document", max_entries=settings.cache_max_documents, ttl=settings.cache_ttl,
        )
        self._locks: dict[str, anyio.Lock] = {}
        self.process_runs = 0  # documents actually parsed (tests use it to prove coalescing)

    # --- stages -----------------------------------------------------------------------
    async def fetch(self, url: str) -> tuple[FetchedDocument, bool]:
        # Cache layers may be remote (Redis): their calls run in a worker thread, off the loop.
        cached = await run_sync(self.downloads.get, url)
        if cached is not None:
            return cached, True
        fetched = await self.fetcher.fetch(url)
        await run_sync(self.downloads.put, url, fetched)
        return fetched, False

    def _content_key(self, fetched: FetchedDocument) -> str:
        material = "\x1f".join((PROCESSING_VERSION, fetched.sha256, self.options.ocr_languages))
        return hashlib.sha256(material.encode()).hexdigest()

    async def process(
        self, url: str, *, expect: Sequence[str] = (), tool: str = "", need_document: bool = True,
        progress: Progress | None = None,
    ) -> Processed:
        """Download and (unless cached) parse in a worker process; ``expect`` limits the types."""
        started = time.perf_counter()
        fetched, download_cached = await self.fetch(url)
        timings = {"download": _ms(started)}
        inp = await run_sync(document_input, fetched)  # sniffing reads bytes: off the loop
        if expect and inp.doc_type not in expect:
            wanted = " or ".join(t.upper() for t in expect)
            raise ValidationError(
                f"{tool or 'this tool'} needs a {wanted} document, but {url} is "
                f"{inp.doc_type.upper() if inp.doc_type != 'unknown' else 'of an unknown type'}; "
                "process_document handles every format",
                argument="document_url", document_type=inp.doc_type,
            )
        key = self._content_key(fetched)
        if progress is not None:
            await progress(1, None, f"downloaded {len(fetched.data)} bytes")
        document: ProcessedDocument | None = None
        cached = download_cached
        if need_document:
            started = time.perf_counter()
            document, cached = await self._parse(key, inp)
            timings["process"] = _ms(started)
            if progress is not None:
                await progress(2, None, f"processed {len(document.content)} characters")
        return Processed(fetched=fetched, doc_type=inp.doc_type, content_key=key, document=document,
                         timings_ms=timings, cached=cached)

    async def _parse(self, key: str, inp: DocumentInput) -> tuple[ProcessedDocument, bool]:
        document = await run_sync(self.documents.get, key)
        if document is not None:
            return document, True
        lock = self._locks.setdefault(key, anyio.Lock())
        try:
            async with lock:  # ten identical requests parse once
                document = await run_sync(self.documents.get, key)
                if document is not None:
                    return document, True
                self.process_runs += 1
                document = await self.parsers.run(process_document, inp, self.options)
                await run_sync(self.documents.put, key, document)
                return document, False
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._locks.pop(key, None)

    def chunk_params(self, document: ProcessedDocument) -> ChunkParams:
        return chunk_params_for(document.doc_type, len(document.content), self.models.max_tokens)

    async def chunks(self, url: str) -> tuple[Processed, list[Chunk]]:
        processed = await self.process(url)
        assert processed.document is not None
        params = self.chunk_params(processed.document)
        chunks = await run_sync(chunk_document, processed.document, params, self.models.token_counter)
        return processed, chunks

    async def retrieve(
        self, url: str, query: str, *, top_k: int, neighbors: int = 0, progress: Progress | None = None,
    ) -> Retrieval:
        indexed = await self.index(url, progress=progress)
        index, timings = indexed.index, dict(indexed.timings_ms)
        hits, search_timings = await self.indexes.search(index, query, top_k, neighbors=neighbors)
        hits = [dataclasses.replace(h, passage_id=passage_id(index.key, h.chunk.chunk_index, h.chunk.text))
                for h in hits]
        timings.update({name.removesuffix("_ms"): value for name, value in search_timings.items()})
        return Retrieval(hits=hits, total_chunks=len(index.chunks), doc_type=indexed.doc_type,
                         cached=indexed.cached, timings_ms=timings)

    async def index(self, url: str, *, progress: Progress | None = None) -> Indexed:
        """The document's search index: from memory or disk when known, else built."""
        # The index key needs only the bytes' hash and the chunk parameters; parameters depend on
        # the content length, so a warm index is found through the processed-document cache or,
        # after a restart, by parsing once more (cheap next to embedding).
        processed = await self.process(url, progress=progress)
        assert processed.document is not None
        document = processed.document
        params = self.chunk_params(document)
        timings = dict(processed.timings_ms)

        async def make_chunks() -> Sequence[Chunk]:
            started = time.perf_counter()
            made = await run_sync(chunk_document, document, params, self.models.token_counter)
            timings["chunk"] = _ms(started)
            if progress is not None:
                await progress(3, None, f"chunked into {len(made)} chunks")
            return made

        async def embed_progress(done: int, total: int, message: str) -> None:
            if progress is not None:
                await progress(3 + done, 3 + total, message or f"embedded {done}/{total}")

        started = time.perf_counter()
        index, index_cached = await self.indexes.get_or_build(
            processed.content_key, CHUNKER_VERSION, params.cache_key(), make_chunks, progress=embed_progress,
        )
        timings["index"] = _ms(started)
        return Indexed(index=index, doc_type=document.doc_type, cached=index_cached, timings_ms=timings)

    async def query_spreadsheet(self, url: str, search_value: str, column: str | None) -> dict[str, Any]:
        fetched, _ = await self.fetch(url)
        inp = await run_sync(document_input, fetched)
        return await self.parsers.run(search_spreadsheet, inp, self.options, search_value, column)

    # --- housekeeping -------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        return {
            "download": self.downloads.stats(),
            "document": self.documents.stats(),
            "retriever": self.indexes.stats(),
        }

    async def clear(self) -> dict[str, Any]:
        return {
            "download": await run_sync(self.downloads.clear),
            "document": await run_sync(self.documents.clear),
            "retriever": await self.indexes.clear(),
        }
