"""The cold path over a real MCP client: partial first answers on big documents, the complete
index after the background build, a restart without parsing, failed parses answered from cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_server.server.build import create_server
from tests.conftest import FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, call, make_settings

pytestmark = pytest.mark.anyio

BIG = "norwich-city.txt"  # 75 chunks: big enough for a partial index with 3 candidates
SLOW = "test.jpg"  # OCR: seconds to parse (2.5-5 s)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    with serve_copies(tmp_path_factory.mktemp("served"), "txt/norwich-city.txt", "pdf/redp5110_sampled.pdf",
                      "pptx/powerpoint_sample.pptx", "jpg/test.jpg") as server:
        yield server


async def test_a_big_document_answers_partially_first_and_completely_after_the_background_build(
    files: FileServer, tmp_path: Path,
) -> None:
    url = files.url(BIG)
    settings = make_settings(index_dir=tmp_path, progressive_budget=0, progressive_candidates=3)
    with ThreadedServer(settings) as server:
        failed, first = await call(server, "retrieve_chunks", document_url=url, query="Who owns the club?")
        assert not failed, first
        assert first["index"]["status"] == "partial" and 0 < first["index"]["dense_coverage"] < 1
        assert first["results"] and first["cached"] is False
        assert any(r["scores"]["dense"] is not None for r in first["results"])
        with anyio.fail_after(300):  # the complete index builds in the background, off this call
            while (await call(server, "manage_cache", action="stats"))[1]["layers"]["index"]["building"]:
                await anyio.sleep(0.2)
        _, later = await call(server, "retrieve_chunks", document_url=url, query="Who owns the club?")
        _, stats = await call(server, "manage_cache", action="stats")
    assert later["index"]["status"] == "complete" and later["index"]["dense_coverage"] == 1.0
    assert later["cached"] is True
    assert all(r["scores"]["dense"] is not None for r in later["results"])
    assert stats["layers"]["index"]["builds"] == 1 and stats["layers"]["index"]["disk"]["count"] == 1


async def test_a_small_document_is_complete_from_the_first_call(files: FileServer, tmp_path: Path) -> None:
    with ThreadedServer(make_settings(index_dir=tmp_path)) as server:
        _, body = await call(server, "retrieve_chunks", document_url=files.url("powerpoint_sample.pptx"),
                             query="notes")
    assert body["index"]["status"] == "complete" and body["index"]["dense_coverage"] == 1.0
    assert body["cached"] is False


async def test_a_restarted_server_finds_the_index_on_disk_without_parsing(files: FileServer, tmp_path: Path) -> None:
    url = files.url("redp5110_sampled.pdf")
    with ThreadedServer(make_settings(index_dir=tmp_path, progressive_budget=1e6)) as first:
        _, cold = await call(first, "retrieve_chunks", document_url=url, query="row access control")
    restarted = create_server(make_settings(index_dir=tmp_path))
    with ThreadedServer(restarted.rag_settings, restarted) as second:
        _, warm = await call(second, "retrieve_chunks", document_url=url, query="row access control")
        assert second_service(restarted).process_runs == 0  # bytes -> content key -> index: no parse
    assert cold["index"]["status"] == "complete" and warm["cached"] is True
    assert "process" not in warm["timings_ms"] and "chunk" not in warm["timings_ms"]
    assert [(r["chunk_index"], r["text"]) for r in warm["results"]] == [
        (r["chunk_index"], r["text"]) for r in cold["results"]]
    assert warm["total_chunks_indexed"] == cold["total_chunks_indexed"]
    assert warm["document_type"] == cold["document_type"] == "pdf"


def second_service(server: Any) -> Any:
    assert server.shared_context is not None
    return server.shared_context.service


async def test_a_parse_that_timed_out_is_answered_from_the_failure_cache(files: FileServer, tmp_path: Path) -> None:
    # OCR of this photo takes seconds; pebble checks its timeouts every 0.1 s,
    # so the limit must sit well below the parse time, not merely below it (an 18-page PDF in ~45 ms
    # against 10 ms sometimes finished before the check)
    server = create_server(make_settings(index_dir=tmp_path, parse_timeout=0.5, failure_ttl=300))
    url = files.url(SLOW)
    with ThreadedServer(server.rag_settings, server) as running:
        failed1, first = await call(running, "retrieve_chunks", document_url=url, query="security")
        with anyio.fail_after(10):  # no second parse: the answer comes from the cache
            failed2, second = await call(running, "process_document", document_url=url)
        runs = second_service(server).process_runs
        _, stats = await call(running, "manage_cache", action="stats")
    assert failed1 and failed2 and first["code"] == second["code"] == "PROCESSING_ERROR"
    assert "parsing took longer than 0.5 s" in first["error"]
    assert second["error"].startswith(first["error"]) and "cached failure" in second["error"]
    assert second["cached_failure"] is True and 0 < second["retry_after"] <= 300
    assert runs == 1 and stats["layers"]["failure"]["entries"] == 1


async def test_clearing_the_caches_forgets_a_cached_failure(files: FileServer, tmp_path: Path) -> None:
    server = create_server(make_settings(index_dir=tmp_path, parse_timeout=0.5))  # see above
    url = files.url(SLOW)
    with ThreadedServer(server.rag_settings, server) as running:
        await call(running, "process_document", document_url=url)
        await call(running, "manage_cache", action="clear")
        failed, again = await call(running, "process_document", document_url=url)
        runs = second_service(server).process_runs
    assert failed and "cached failure" not in again["error"] and runs == 2


async def test_a_shelf_answers_at_once_from_partial_indexes_and_completely_after_their_builds(
    files: FileServer, tmp_path: Path,
) -> None:
    big, small = files.url(BIG), files.url("powerpoint_sample.pptx")
    settings = make_settings(index_dir=tmp_path, progressive_budget=0, progressive_candidates=3)
    with ThreadedServer(settings) as server:
        failed, first = await call(server, "search_documents", document_urls=[big, small], query="Who owns the club?")
        assert not failed, first
        # a budget of 0: every document not yet indexed answers from its partial index
        assert [(d["index"], d["cached"]) for d in first["documents"]] == [("partial", False), ("partial", False)]
        assert first["results"][0]["document_url"] == big
        with anyio.fail_after(300):  # the complete indexes build in the background
            while (await call(server, "manage_cache", action="stats"))[1]["layers"]["index"]["building"]:
                await anyio.sleep(0.2)
        _, later = await call(server, "search_documents", document_urls=[big, small], query="Who owns the club?")
    assert [(d["index"], d["cached"]) for d in later["documents"]] == [("complete", True), ("complete", True)]
    assert later["results"][0]["document_url"] == big
