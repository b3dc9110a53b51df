"""Freshness over MCP: a cached download older than revalidate_after_s is revalidated with a
conditional GET against a loopback origin; a 304 keeps the download and its index, new bytes are
read and indexed anew; manage_cache "drop" forgets one URL."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fetch.servers import Handler, LoopbackServer, respond
from tests.mcp_harness import memory_client, payload

pytestmark = pytest.mark.anyio

FIRST = b"The lighthouse keeper logs the weather at dawn. Storm warnings are raised with red flags.\n" * 3
SECOND = b"The harbour master now records the tides every hour. Calm seas were reported all week.\n" * 3
LAST_MODIFIED = "Wed, 21 Oct 2026 07:28:00 GMT"


@pytest.fixture(scope="module")
def origin() -> Iterator[LoopbackServer]:
    server = LoopbackServer.start("127.0.0.1")
    yield server
    server.close()


class Document:
    """A document that changes on demand; answers 304 to a matching validator."""

    def __init__(self, validator: str) -> None:
        self.body, self.version, self.validator = FIRST, 1, validator

    def change(self, body: bytes) -> None:
        self.body, self.version = body, self.version + 1

    def __call__(self, handler: Handler) -> None:
        etag = f'"v{self.version}"'
        modified = LAST_MODIFIED if self.version == 1 else "Thu, 22 Oct 2026 07:28:00 GMT"
        if self.validator == "etag":
            headers = {"ETag": etag}
            unchanged = handler.headers.get("If-None-Match") == etag
        elif self.validator == "last-modified":
            headers = {"Last-Modified": modified}
            unchanged = handler.headers.get("If-Modified-Since") == modified
        else:
            headers, unchanged = {}, False
        if unchanged:
            respond(handler, 304, b"", headers)
        else:
            respond(handler, 200, self.body, {"Content-Type": "text/plain", **headers})


def _settings(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    return {"load_models": False, "index_dir": tmp_path / "indexes", "upload_dir": tmp_path / "uploads",
            "rate_limit_rpm": 10_000, **overrides}


async def _retrieve(session: Any, url: str, query: str) -> dict[str, Any]:
    result = await session.call_tool("retrieve_chunks", {"document_url": url, "query": query, "top_k": 1})
    assert not result.is_error, payload(result)
    return payload(result)


@pytest.mark.parametrize("validator", ["etag", "last-modified"])
async def test_an_unchanged_document_is_revalidated_with_a_304_and_its_download_and_index_reused(
    validator: str, origin: LoopbackServer, tmp_path: Path,
) -> None:
    origin.reset()
    url = origin.route("/doc.txt", Document(validator))
    async with memory_client(**_settings(tmp_path, revalidate_after_s=0)) as session:
        first = await _retrieve(session, url, "storm warnings")
        second = await _retrieve(session, url, "storm warnings")
    assert [seen.path for seen in origin.requests] == ["/doc.txt", "/doc.txt"]
    conditional = origin.requests[1].headers
    if validator == "etag":
        assert conditional.get("if-none-match") == '"v1"'
    else:
        assert conditional.get("if-modified-since") == LAST_MODIFIED
    assert "if-none-match" not in origin.requests[0].headers  # the first download is unconditional
    assert first["cached"] is False and second["cached"] is True  # the index was reused, nothing embedded
    assert second["source"]["content_sha256"] == first["source"]["content_sha256"] == hashlib.sha256(FIRST).hexdigest()
    assert second["source"]["fetched_at"] == first["source"]["fetched_at"]
    assert second["source"]["validated_at"] >= first["source"]["validated_at"]
    assert second["results"][0]["passage_id"] == first["results"][0]["passage_id"]


@pytest.mark.parametrize("validator", ["etag", "last-modified", "none"])
async def test_a_changed_document_is_read_anew_when_revalidate_after_is_zero(
    validator: str, origin: LoopbackServer, tmp_path: Path,
) -> None:
    origin.reset()
    document = Document(validator)
    url = origin.route("/doc.txt", document)
    async with memory_client(**_settings(tmp_path, revalidate_after_s=0)) as session:
        first = await _retrieve(session, url, "tides")
        document.change(SECOND)
        second = await _retrieve(session, url, "tides")
        processed = payload(await session.call_tool("process_document", {"document_url": url}))
    assert "lighthouse" in first["results"][0]["text"]
    assert "harbour master" in second["results"][0]["text"] and "lighthouse" not in second["results"][0]["text"]
    assert second["cached"] is False  # new bytes: a new content key, a new index
    assert second["source"]["content_sha256"] == hashlib.sha256(SECOND).hexdigest()
    assert second["source"]["fetched_at"] >= first["source"]["fetched_at"]
    assert "harbour master" in processed["content"]
    assert processed["source"]["content_sha256"] == hashlib.sha256(SECOND).hexdigest()


async def test_a_recent_download_is_used_without_asking_the_origin(origin: LoopbackServer, tmp_path: Path) -> None:
    origin.reset()
    document = Document("etag")
    url = origin.route("/doc.txt", document)
    async with memory_client(**_settings(tmp_path, revalidate_after_s=3600)) as session:
        await _retrieve(session, url, "storm")
        document.change(SECOND)
        second = await _retrieve(session, url, "storm")
    assert origin.calls("/doc.txt") == 1
    assert second["source"]["content_sha256"] == hashlib.sha256(FIRST).hexdigest()


async def test_manage_cache_drop_forgets_one_url_so_the_next_call_downloads_it_again(
    origin: LoopbackServer, tmp_path: Path,
) -> None:
    origin.reset()
    document = Document("etag")
    url = origin.route("/doc.txt", document)
    other = origin.route("/other.txt", Document("etag"))
    async with memory_client(**_settings(tmp_path, revalidate_after_s=3600)) as session:
        await _retrieve(session, url, "storm")
        await _retrieve(session, other, "storm")
        document.change(SECOND)
        dropped = payload(await session.call_tool("manage_cache", {"action": "drop", "document_url": url}))
        again = await _retrieve(session, url, "tides")
        await _retrieve(session, other, "storm")
        missing = await session.call_tool("manage_cache", {"action": "drop"})
    assert dropped["layers"]["download"] == 1 and dropped["document_url"] == url
    assert origin.calls("/doc.txt") == 2 and origin.calls("/other.txt") == 1  # only the dropped URL
    assert "if-none-match" not in origin.requests[-1].headers  # a plain download, not a revalidation
    assert again["source"]["content_sha256"] == hashlib.sha256(SECOND).hexdigest()
    assert missing.is_error and payload(missing)["code"] == "VALIDATION_ERROR"
