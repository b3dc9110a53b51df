"""Freshness across workers sharing Redis: the cached copy, its validators and the time it was last
confirmed are in the shared download layer, so a worker that never downloaded a document
revalidates the other's copy with a conditional GET, and a 304 there reuses it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.fetch.servers import LoopbackServer
from tests.mcp_harness import ThreadedServer, http_client, make_settings, payload
from tests.tools.test_freshness import FIRST, Document

from .conftest import RedisServer

pytestmark = pytest.mark.anyio


async def test_a_worker_revalidates_the_copy_another_worker_downloaded_and_a_304_reuses_it(
    redis_server: RedisServer, tmp_path: Path,
) -> None:
    origin = LoopbackServer.start("127.0.0.1")
    try:
        url = origin.route("/doc.txt", Document("etag"))
        common = {"load_models": False, "redis_url": redis_server.url, "rate_limit_rpm": 10_000,
                  "index_dir": tmp_path / "indexes", "upload_dir": tmp_path / "uploads"}
        patient = make_settings(revalidate_after_s=3600, **common)
        eager = make_settings(revalidate_after_s=0, **common)
        with ThreadedServer(patient) as one, ThreadedServer(eager) as two:
            async with http_client(one.mcp_url) as session:
                first = payload(await session.call_tool("process_document", {"document_url": url}))
            async with http_client(two.mcp_url) as session:
                second = payload(await session.call_tool("process_document", {"document_url": url}))
    finally:
        origin.close()
    assert [seen.headers.get("if-none-match") for seen in origin.requests] == [None, '"v1"']
    assert second["cached"] is True  # the processed document came from the shared layer: not parsed again
    assert second["source"]["content_sha256"] == first["source"]["content_sha256"] == hashlib.sha256(FIRST).hexdigest()
    assert second["source"]["fetched_at"] == first["source"]["fetched_at"]
