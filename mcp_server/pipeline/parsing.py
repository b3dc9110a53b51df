"""The parse stage: a processed document from the document cache, else parsed once in a parser
worker, with failed parses remembered per content key for ``failure_ttl`` seconds (the same bytes
fail the same way: a timeout or crash is not re-run on every call)."""

from __future__ import annotations

import logging
import time

from mcp_server import metrics
from mcp_server.caches.layers import CacheLayer, cache_get, cache_put
from mcp_server.core.concurrency import KeyedLock
from mcp_server.core.errors import ProcessingError
from mcp_server.core.failures import FailedParse
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors import DocumentInput, ProcessOptions, process_document
from mcp_server.processors.sandbox import ParserPool

__all__ = ["Parsing"]

logger = logging.getLogger(__name__)

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
    ) -> tuple[ProcessedDocument, bool]:
        """(the document, whether it came from the cache)."""
        document = await cache_get(self.documents, key)
        if document is not None:
            return document, True
        async with self._locks.hold(key):  # ten identical requests parse once
            document = await cache_get(self.documents, key)
            if document is not None:
                return document, True
            await self._raise_if_failed(key)
            self.runs += 1
            try:
                document = await parsers.run(process_document, inp, options)
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
