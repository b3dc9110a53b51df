"""A failed parse is remembered in Redis: the other worker answers it without parsing again."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import pytest

from mcp_server.caches.registry import CacheRegistry
from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import FetchedDocument
from mcp_server.embedding import ModelRegistry
from mcp_server.indexes import IndexManager
from mcp_server.pipeline.service import DocumentService
from mcp_server.redis.backends import open_redis_backends
from tests.mcp_harness import make_settings
from tests.multiworker.conftest import RedisServer

pytestmark = pytest.mark.anyio

PDF = b"%PDF-1.7\n" + b"0" * 2000


class SameBytes:
    """A fetcher that always returns the same PDF bytes."""

    async def fetch(self, url: str, *, cached: FetchedDocument | None = None) -> FetchedDocument:
        return FetchedDocument(data=PDF, url=url, final_url=url, filename="report.pdf")


class HangingParser:
    """A parser pool whose every parse times out, as a 2-minute parse of a huge filing does."""

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, fn: Any, *args: Any, timeout: float | None = None, size: int = 0) -> Any:
        self.runs += 1
        raise ProcessingError("parsing took longer than 120 s", limit=120.0)


async def test_a_parse_timeout_in_one_worker_is_answered_from_redis_by_the_other(redis_server: RedisServer) -> None:
    settings = make_settings(redis_url=redis_server.url, failure_ttl=300)
    parsers = [HangingParser(), HangingParser()]
    errors = []
    async with AsyncExitStack() as stack:
        workers = []
        for pool in parsers:
            shared = await open_redis_backends(settings, stack)
            models = ModelRegistry.fake()
            caches = CacheRegistry(settings)
            for layer in (shared.downloads, shared.documents, shared.failures):
                caches.swap(layer)
            workers.append(DocumentService(
                settings, fetcher=SameBytes(), parsers=pool, models=models,  # type: ignore[arg-type]
                indexes=IndexManager(settings, models), caches=caches,
            ))
        for worker, url in zip(workers, ["http://a.example/r.pdf", "http://b.example/other-name.pdf"], strict=True):
            with pytest.raises(ProcessingError) as caught:
                await worker.process(url)
            errors.append(caught.value)
    assert [pool.runs for pool in parsers] == [1, 0]
    assert errors[0].message == "parsing took longer than 120 s"
    assert errors[1].message.startswith(errors[0].message) and "cached failure" in errors[1].message
    assert errors[1].code == "PROCESSING_ERROR" and errors[1].details["cached_failure"] is True
