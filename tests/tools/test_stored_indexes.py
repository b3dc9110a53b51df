"""Documents whose index is stored are searched without their bytes: a URL's last download is
remembered (its content key and validators), so once its bytes have left the download cache it
leads to its index in memory or on disk with no download and no parse while fresh, and with a
conditional request (a 304, no body) once stale. The origin counts every request."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_server.server.build import create_server
from tests.fetch.servers import Handler, LoopbackServer, respond
from tests.mcp_harness import ThreadedServer, call, make_settings

pytestmark = pytest.mark.anyio

TEXTS = {
    "/lighthouse.txt": b"The lighthouse keeper logs the weather at dawn. Storm warnings are raised in red.\n" * 3,
    "/harbour.txt": b"The harbour master records the tides every hour. Calm seas were reported all week.\n" * 3,
    "/orchard.txt": b"The orchard grows apples and pears. The harvest starts in September with the early apples.\n" * 3,
}
CHANGED = b"The lighthouse now runs on solar power. Its lamp was replaced by a light-emitting diode.\n" * 3


class Origin:
    """Serves TEXTS with an ETag; answers 304 to a matching If-None-Match."""

    def __init__(self) -> None:
        self.bodies = dict(TEXTS)

    def __call__(self, handler: Handler) -> None:
        body = self.bodies[handler.path]
        etag = f'"{hashlib.sha256(body).hexdigest()[:12]}"'
        if handler.headers.get("If-None-Match") == etag:
            respond(handler, 304, b"", {"ETag": etag})
        else:
            respond(handler, 200, body, {"Content-Type": "text/plain", "ETag": etag})


@pytest.fixture
def origin() -> Iterator[tuple[LoopbackServer, Origin]]:
    server, documents = LoopbackServer.start("127.0.0.1"), Origin()
    for path in TEXTS:
        server.route(path, documents)
    yield server, documents
    server.close()


def _server(tmp_path: Path, **overrides: Any) -> Any:
    # one download and one index kept in memory: the others' bytes are gone, their indexes on disk
    return create_server(make_settings(index_dir=tmp_path, load_models=False, rate_limit_rpm=100_000,
                                       cache_max_downloads=1, cache_max_indexes=1, **overrides))


async def _search(server: ThreadedServer, urls: list[str], query: str) -> dict[str, Any]:
    failed, body = await call(server, "search_documents", document_urls=urls, query=query)
    assert not failed, body
    assert all(d["status"] == "ok" for d in body["documents"]), body["documents"]
    return body


async def test_documents_whose_index_is_on_disk_are_searched_again_without_a_download_or_a_parse(
    origin: tuple[LoopbackServer, Origin], tmp_path: Path,
) -> None:
    files, _ = origin
    urls = [files.url(path) for path in TEXTS]
    server = _server(tmp_path, revalidate_after_s=3600)
    with ThreadedServer(server.rag_settings, server) as running:
        for url in urls:  # each downloaded, parsed and indexed once
            await _search(running, [url], "weather")
        again = [await _search(running, urls, query) for query in ("storm warnings", "apple harvest", "tides")]
        service = server.shared_context.service
        runs, stats = service.process_runs, service.indexes.stats()
    assert [files.calls(path) for path in TEXTS] == [1, 1, 1]
    assert runs == 3
    assert stats["disk_hits"] >= 6  # one index in memory at a time: the others came from disk
    assert all(d["cached"] for body in again for d in body["documents"])
    assert again[0]["results"][0]["document_url"] == urls[0] and again[1]["results"][0]["document_url"] == urls[2]
    sources = {d["url"]: d["source"]["content_sha256"] for d in again[0]["documents"]}
    assert sources == {files.url(path): hashlib.sha256(body).hexdigest() for path, body in TEXTS.items()}


async def test_a_stale_known_document_is_confirmed_by_a_conditional_request_without_its_body(
    origin: tuple[LoopbackServer, Origin], tmp_path: Path,
) -> None:
    files, _ = origin
    first, second = files.url("/lighthouse.txt"), files.url("/harbour.txt")
    server = _server(tmp_path, revalidate_after_s=0)
    with ThreadedServer(server.rag_settings, server) as running:
        await _search(running, [first], "storm")
        await _search(running, [second], "tides")  # the first one's bytes leave the download cache
        body = await _search(running, [first], "storm warnings")
        runs = server.shared_context.service.process_runs
    asked = [seen for seen in files.requests if seen.path == "/lighthouse.txt"]
    assert len(asked) == 2 and "if-none-match" not in asked[0].headers
    assert asked[1].headers["if-none-match"]  # answered 304: no body, no parse
    assert runs == 2
    assert body["documents"][0]["cached"] is True and "Storm warnings" in body["results"][0]["text"]


async def test_a_changed_document_at_a_known_url_is_downloaded_and_indexed_anew(
    origin: tuple[LoopbackServer, Origin], tmp_path: Path,
) -> None:
    files, documents = origin
    first, second = files.url("/lighthouse.txt"), files.url("/harbour.txt")
    server = _server(tmp_path, revalidate_after_s=0)
    with ThreadedServer(server.rag_settings, server) as running:
        await _search(running, [first], "storm")
        await _search(running, [second], "tides")
        documents.bodies["/lighthouse.txt"] = CHANGED
        body = await _search(running, [first], "solar power")
        runs = server.shared_context.service.process_runs
    assert files.calls("/lighthouse.txt") == 2  # the conditional request got the new bytes: no third
    assert runs == 3
    assert body["documents"][0]["cached"] is False
    assert body["documents"][0]["source"]["content_sha256"] == hashlib.sha256(CHANGED).hexdigest()
    assert "solar power" in body["results"][0]["text"]
