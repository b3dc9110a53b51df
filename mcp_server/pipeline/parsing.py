"""The parse stage: a processed document from the document cache, else parsed once in a parser
worker, with failed parses remembered per content key for ``failure_ttl`` seconds (the same bytes
fail the same way: a timeout or crash is not re-run on every call); before it, the download's type
sniffed once per bytes and address (``Sniffing``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from cachetools import LRUCache

from mcp_server import metrics
from mcp_server.caches.layers import CacheLayer, cache_get, cache_put
from mcp_server.core.concurrency import KeyedLock, off_loop
from mcp_server.core.errors import ProcessingError
from mcp_server.core.failures import FailedParse
from mcp_server.core.models import FetchedDocument, ProcessedDocument
from mcp_server.processors import DocumentInput, ProcessOptions, document_input, process_document
from mcp_server.processors.sandbox import ParserPool

__all__ = ["Parsing", "Sniffing"]

logger = logging.getLogger(__name__)

SNIFFED_ENTRIES = 4096
# Errors about the pool itself (shutdown), not about the document: never cached.
_POOL_ERRORS = ("the parser pool",)


class Parsing:
    """Parses in the caller's parser pool (``DocumentService.parsers``, which tests may replace)."""

    def __init__(self, documents: CacheLayer[ProcessedDocument], failures: CacheLayer[FailedParse],
                 failure_ttl: float) -> None:
        self.documents = documents
        self.failures = failures
        self.failure_ttl = failure_ttl
        self._locks = KeyedLock()
        self.runs = 0  # documents actually parsed (tests use it to prove coalescing)

    async def parse(
        self, parsers: ParserPool, key: str, inp: DocumentInput, options: ProcessOptions,
        prepare: Callable[[DocumentInput], Awaitable[DocumentInput]] | None = None,
    ) -> tuple[ProcessedDocument, bool]:
        """(the document, whether it came from the cache); ``prepare`` completes the input before a
        parse (a web page's linked style sheets), never on a cache hit."""
        document = await cache_get(self.documents, key)
        if document is not None:
            return document, True
        async with self._locks.hold(key):  # ten identical requests parse once
            document = await cache_get(self.documents, key)
            if document is not None:
                return document, True
            await self._raise_if_failed(key)
            self.runs += 1
            if prepare is not None:
                inp = await prepare(inp)
            try:
                document = await parsers.run(process_document, inp, options, size=len(inp.data))
                metrics.document_parsed(inp.doc_type)
                for kind in {flag.kind for flag in document.flags}:
                    metrics.flags_found(kind, sum(flag.kind == kind for flag in document.flags))
            except ProcessingError as exc:
                await self._remember_failure(key, exc)
                raise
            await cache_put(self.documents, key, document)
            return document, False

    async def _raise_if_failed(self, key: str) -> None:
        if self.failure_ttl <= 0:
            return
        failed = await cache_get(self.failures, key)
        if failed is not None and failed.retry_at > time.time():
            raise failed.error()

    async def _remember_failure(self, key: str, error: ProcessingError) -> None:
        if self.failure_ttl <= 0 or error.message.startswith(_POOL_ERRORS):
            return
        await cache_put(self.failures, key, FailedParse.of(error, self.failure_ttl))
        logger.info("parse.failure_cached", extra={"content_key": key[:16], "error": error.message,
                                                   "ttl": self.failure_ttl})


class Sniffing:
    """A download's type, sniffed once for the same bytes, headers and address."""

    def __init__(self, entries: int = SNIFFED_ENTRIES) -> None:
        self._known: LRUCache[tuple[str, str, str, str], str] = LRUCache(maxsize=entries)

    async def sniff(self, fetched: FetchedDocument) -> DocumentInput:
        """The download wrapped with its sniffed type (sniffing reads bytes: off the loop)."""
        key = (fetched.sha256, fetched.content_type, fetched.filename, fetched.final_url)
        known = self._known.get(key)
        if known is not None:
            return document_input(fetched, doc_type=known)
        inp = await off_loop(document_input, fetched)
        self._known[key] = inp.doc_type
        return inp
