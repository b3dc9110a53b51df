"""retrieve_chunks and friends over a real MCP client, with the real bundled MiniLM embedder."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import DOCS, FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, call, http_client, make_settings

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("served")
    shutil.copy(DOCS / "pdf/multi_page.pdf", root / "same-bytes-other-name.pdf")
    (root / "changing.txt").write_text("The first version talks about apples and orchards.\n" * 20)
    with serve_copies(root, "pdf/multi_page.pdf", "pdf/redp5110_sampled.pdf", "pptx/powerpoint_sample.pptx",
                      "xlsx/stanley-cups.xlsx", "docx/testWORD.docx") as server:
        yield server


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("indexes")


# These tests are about complete indexes (tests/tools/test_cold_path.py covers partial ones): a
# budget no build misses keeps every first call complete whatever the machine's speed.
COMPLETE = {"progressive_budget": 1e6}


@pytest.fixture(scope="module")
def mcp(index_dir: Path) -> Iterator[ThreadedServer]:
    with ThreadedServer(make_settings(index_dir=index_dir, rate_limit_rpm=100_000, **COMPLETE)) as server:
        yield server


async def test_results_carry_text_scores_locations_and_timings(mcp: ThreadedServer, files: FileServer) -> None:
    failed, body = await call(mcp, "retrieve_chunks", document_url=files.url("redp5110_sampled.pdf"),
                              query="row and column access control", top_k=3)
    assert not failed, body
    assert body["document_type"] == "pdf" and body["total_chunks_indexed"] > 10
    assert len(body["results"]) == 3
    best = body["results"][0]
    assert "access" in best["text"].lower()
    assert best["location"]["pages"] and 1 <= best["location"]["page"] <= 18
    assert best["location"]["end_char"] > best["location"]["start_char"]
    assert best["scores"]["dense"] is not None and best["scores"]["bm25"] is not None
    assert [r["score"] for r in body["results"]] == sorted((r["score"] for r in body["results"]), reverse=True)
    assert {"download", "process", "index"} <= set(body["timings_ms"])
    assert body["index"] == {"status": "complete", "dense_coverage": 1.0, "languages": ["en"],
                             "model": "sentence-transformers/all-MiniLM-L6-v2"}


async def test_the_same_bytes_at_two_urls_are_embedded_once(mcp: ThreadedServer, files: FileServer) -> None:
    _, first = await call(mcp, "retrieve_chunks", document_url=files.url("multi_page.pdf"), query="pages")
    _, second = await call(mcp, "retrieve_chunks", document_url=files.url("same-bytes-other-name.pdf"),
                           query="pages")
    assert second["cached"] is True
    assert first["total_chunks_indexed"] == second["total_chunks_indexed"]


async def test_changed_bytes_at_the_same_url_are_never_served_stale(mcp: ThreadedServer, files: FileServer) -> None:
    url = files.url("changing.txt")
    _, before = await call(mcp, "retrieve_chunks", document_url=url, query="what fruit?", top_k=1)
    path = Path(files.httpd.RequestHandlerClass.keywords["directory"]) / "changing.txt"  # type: ignore[attr-defined]
    path.write_text("The second version is about submarines and the deep sea.\n" * 20)
    _, cleared = await call(mcp, "manage_cache", action="clear")  # drops the URL-keyed download cache
    _, after = await call(mcp, "retrieve_chunks", document_url=url, query="what vessel?", top_k=1)
    assert "apples" in before["results"][0]["text"]
    assert "submarines" in after["results"][0]["text"] and after["cached"] is False
    assert cleared["action"] == "clear"


async def settled_stats(server: ThreadedServer) -> dict[str, Any]:
    """Cache statistics once no complete index is still building in the background (an earlier
    test's partially answered document would otherwise add its build to the counts)."""
    with anyio.fail_after(240):
        while True:
            _, stats = await call(server, "manage_cache", action="stats")
            if not stats["layers"]["index"]["building"]:
                return stats
            await anyio.sleep(0.2)  # polling a condition, bounded by fail_after


async def test_ten_concurrent_identical_requests_build_the_index_once(mcp: ThreadedServer, files: FileServer) -> None:
    before = await settled_stats(mcp)
    bodies: list[dict[str, Any]] = []

    async def one() -> None:
        bodies.append((await call(mcp, "retrieve_chunks", document_url=files.url("testWORD.docx"),
                                  query="heading"))[1])

    async with anyio.create_task_group() as group:
        for _ in range(10):
            group.start_soon(one)
    after = await settled_stats(mcp)
    assert all("results" in body for body in bodies), bodies
    assert after["layers"]["index"]["builds"] - before["layers"]["index"]["builds"] == 1
    assert sum(not body["cached"] for body in bodies) == 1


async def test_a_restarted_server_answers_from_the_disk_index(index_dir: Path, files: FileServer) -> None:
    url = files.url("powerpoint_sample.pptx")
    with ThreadedServer(make_settings(index_dir=index_dir, **COMPLETE)) as first:
        _, cold = await call(first, "retrieve_chunks", document_url=url, query="notes")
    with ThreadedServer(make_settings(index_dir=index_dir, **COMPLETE)) as second:
        _, warm = await call(second, "retrieve_chunks", document_url=url, query="notes")
        _, stats = await call(second, "manage_cache", action="stats")
    assert warm["cached"] is True and stats["layers"]["index"]["builds"] == 0
    assert warm["results"][0]["location"].get("slide") is not None
    assert [r["chunk_index"] for r in warm["results"]] == [r["chunk_index"] for r in cold["results"]]


@pytest.mark.parametrize(("top_k", "expected"), [(0, 1), (-5, 1), (1000, 20)])
async def test_top_k_is_clamped_into_1_to_20(mcp: ThreadedServer, files: FileServer, top_k: int, expected: int) -> None:
    _, body = await call(mcp, "retrieve_chunks", document_url=files.url("redp5110_sampled.pdf"), query="IBM",
                         top_k=top_k)
    assert len(body["results"]) == min(expected, body["total_chunks_indexed"])


@pytest.mark.parametrize(
    ("arguments", "argument"),
    [({"query": "   "}, "query"), ({"query": "x", "top_k": "many"}, "top_k"), ({"query": "x", "document_url": ""},
                                                                                  "document_url")],
)
async def test_bad_retrieve_arguments_are_validation_errors(
    mcp: ThreadedServer, files: FileServer, arguments: dict[str, Any], argument: str
) -> None:
    failed, body = await call(mcp, "retrieve_chunks", **{"document_url": files.url("multi_page.pdf"), **arguments})
    assert failed and body["code"] == "VALIDATION_ERROR"
    assert argument in body["error"]


async def test_long_builds_send_progress_notifications(files: FileServer, tmp_path: Path) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with ThreadedServer(make_settings(index_dir=tmp_path, **COMPLETE)) as server:
        async with http_client(server.mcp_url) as client:
            result = await client.call_tool("retrieve_chunks", {"document_url": files.url("redp5110_sampled.pdf"),
                                                                "query": "security"}, progress_callback=on_progress)
    assert not result.is_error
    messages = " | ".join(m or "" for _, _, m in seen)
    assert "downloaded" in messages and "processed" in messages and "embedded" in messages


async def test_query_spreadsheet_finds_rows_with_sheet_and_row_number(mcp: ThreadedServer, files: FileServer) -> None:
    failed, body = await call(mcp, "query_spreadsheet", document_url=files.url("stanley-cups.xlsx"),
                              search_value="maple leafs")
    assert not failed, body
    assert body["match_count"] >= 1
    match = body["matches"][0]
    assert match["sheet"] in body["sheets_searched"] and match["row_number"] >= 1
    assert any("Maple Leafs" in str(value) for value in match.values())


async def test_an_extract_tool_given_another_format_names_what_it_got(mcp: ThreadedServer, files: FileServer) -> None:
    failed, body = await call(mcp, "extract_pdf_text", document_url=files.url("testWORD.docx"))
    assert failed and body["code"] == "VALIDATION_ERROR"
    assert "DOCX" in body["error"] and "process_document" in body["error"]


async def test_chunk_document_cites_slides_and_fits_the_model(mcp: ThreadedServer, files: FileServer) -> None:
    _, body = await call(mcp, "chunk_document", document_url=files.url("powerpoint_sample.pptx"))
    assert body["document_type"] == "pptx" and body["chunk_count"] == len(body["chunks"]) > 0
    assert all(chunk["token_count"] <= 256 for chunk in body["chunks"])
    assert all(chunk["location"].get("slide") for chunk in body["chunks"])


async def test_health_reports_the_weights_serving_each_role(mcp: ThreadedServer) -> None:
    _, health = await call(mcp, "get_system_health")
    roles = health["models"]["roles"]
    assert set(roles) >= {"fast", "accurate", "reranker"}
    assert health["features"]["OCR_AVAILABLE"] is True
    # make_settings configures MiniLM for both embedder roles and no reranker, on every machine
    assert roles["fast"]["loaded"] and roles["accurate"]["weights"] == "fast"
    assert health["features"]["RERANK_AVAILABLE"] is False and roles["reranker"]["fallback"] is None
    assert health["status"] == "healthy"
