"""Stable passage ids, get_passage and the max_tokens budget, over a real MCP client."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_server.chunking import TokenCounter
from mcp_server.server.build import RagMCP, create_server
from tests.conftest import DOCS, FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, call, make_settings

pytestmark = pytest.mark.anyio

PDF, COPY, PPTX, DOCX = "multi_page.pdf", "same-bytes-other-name.pdf", "powerpoint_sample.pptx", "testWORD.docx"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("served")
    shutil.copy(DOCS / "pdf" / PDF, root / COPY)
    with serve_copies(root, f"pdf/{PDF}", f"pptx/{PPTX}", f"docx/{DOCX}") as server:
        yield server


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("indexes")


@pytest.fixture(scope="module")
def rag(index_dir: Path) -> RagMCP:
    return create_server(make_settings(index_dir=index_dir, rate_limit_rpm=100_000))


@pytest.fixture(scope="module")
def mcp(rag: RagMCP) -> Iterator[ThreadedServer]:
    with ThreadedServer(rag.rag_settings, rag) as server:
        yield server


@pytest.fixture(scope="module")
def tokens(rag: RagMCP, mcp: ThreadedServer) -> TokenCounter:
    """The server's own counter: the embedder's tokenizer."""
    assert rag.shared_context is not None
    return rag.shared_context.models.token_counter


# --- passage ids ---------------------------------------------------------------------------------
async def test_a_passage_id_is_the_same_at_two_urls_and_after_a_restart(index_dir: Path, files: FileServer,
                                                                        mcp: ThreadedServer) -> None:
    query = {"query": "artificial intelligence", "top_k": 20}  # every chunk of the document
    _, here = await call(mcp, "retrieve_chunks", document_url=files.url(PDF), **query)
    _, there = await call(mcp, "retrieve_chunks", document_url=files.url(COPY), **query)
    _, searched = await call(mcp, "search_documents", document_urls=[files.url(COPY)], **query)
    ids = {r["chunk_index"]: r["passage_id"] for r in here["results"]}
    assert len(set(ids.values())) == len(ids) == here["total_chunks_indexed"]
    assert all(pid.startswith("p1.") for pid in ids.values())
    assert {r["chunk_index"]: r["passage_id"] for r in there["results"]} == ids
    assert {r["chunk_index"]: r["passage_id"] for r in searched["results"]} == ids
    best = here["results"][0]
    with ThreadedServer(make_settings(index_dir=index_dir)) as restarted:
        # straight from the disk index: no search (and no download) on this server first
        failed, passage = await call(restarted, "get_passage", passage_id=best["passage_id"])
        _, again = await call(restarted, "retrieve_chunks", document_url=files.url(PDF), **query)
    assert not failed, passage
    assert passage["chunks"][0]["text"] == best["text"]
    assert {r["chunk_index"]: r["passage_id"] for r in again["results"]} == ids


async def test_get_passage_neighbours_match_chunk_document(mcp: ThreadedServer, files: FileServer) -> None:
    _, chunked = await call(mcp, "chunk_document", document_url=files.url(PDF))
    _, found = await call(mcp, "retrieve_chunks", document_url=files.url(PDF), query="voice typing", top_k=9)
    assert chunked["chunk_count"] >= 7
    middle = next(r for r in found["results"] if 3 <= r["chunk_index"] <= chunked["chunk_count"] - 4)
    failed, window = await call(mcp, "get_passage", passage_id=middle["passage_id"], before=2, after=3)
    assert not failed, window
    i = middle["chunk_index"]
    expected = chunked["chunks"][i - 2 : i + 4]
    assert [c["chunk_index"] for c in window["chunks"]] == list(range(i - 2, i + 4))
    assert [c["text"] for c in window["chunks"]] == [c["text"] for c in expected]
    assert [c["location"] for c in window["chunks"]] == [c["location"] for c in expected]
    assert [c["target"] for c in window["chunks"]] == [False, False, True, False, False, False]
    assert window["chunks"][2]["passage_id"] == window["passage_id"] == middle["passage_id"]
    assert window["location"]["start_char"] == expected[0]["location"]["start_char"]
    assert window["location"]["end_char"] == expected[-1]["location"]["end_char"]
    assert all(c["text"].strip()[:40] in window["text"] for c in expected)


async def test_get_passage_stops_at_the_document_edges_and_at_five_neighbours(mcp: ThreadedServer,
                                                                             files: FileServer) -> None:
    _, chunked = await call(mcp, "chunk_document", document_url=files.url(PDF))
    _, found = await call(mcp, "retrieve_chunks", document_url=files.url(PDF), query="word processors", top_k=9)
    first = next(r for r in found["results"] if r["chunk_index"] == 0)
    _, window = await call(mcp, "get_passage", passage_id=first["passage_id"], before=3, after=50)
    assert [c["chunk_index"] for c in window["chunks"]] == list(range(0, min(6, chunked["chunk_count"])))
    assert window["total_chunks"] == chunked["chunk_count"]


@pytest.mark.parametrize(
    ("make_id", "fragment"),
    [
        (lambda pid: "not-an-id", "not a passage id"),
        (lambda pid: pid.replace("p1.", "p1.ffff", 1), "unknown or expired"),
        (lambda pid: pid[:-4] + ("0000" if not pid.endswith("0000") else "1111"), "stale"),
        (lambda pid: ".".join(pid.split(".")[:2] + ["999999", pid.split(".")[3]]), "stale"),
    ],
)
async def test_bad_unknown_and_stale_passage_ids_are_validation_errors(
    mcp: ThreadedServer, files: FileServer, make_id: Any, fragment: str,
) -> None:
    _, found = await call(mcp, "retrieve_chunks", document_url=files.url(PDF), query="word", top_k=1)
    failed, body = await call(mcp, "get_passage", passage_id=make_id(found["results"][0]["passage_id"]))
    assert failed and body["code"] == "VALIDATION_ERROR" and fragment in body["error"], body
    assert "'passage_id'" in body["error"]


async def test_a_cleared_index_makes_its_passage_ids_expire(files: FileServer, tmp_path: Path) -> None:
    with ThreadedServer(make_settings(index_dir=tmp_path)) as server:
        _, found = await call(server, "retrieve_chunks", document_url=files.url(DOCX), query="heading", top_k=1)
        pid = found["results"][0]["passage_id"]
        assert not (await call(server, "get_passage", passage_id=pid))[0]
        await call(server, "manage_cache", action="clear")
        failed, body = await call(server, "get_passage", passage_id=pid)
    assert failed and "unknown or expired" in body["error"]


# --- the token budget ----------------------------------------------------------------------------
def count(tokens: TokenCounter, results: list[dict[str, Any]]) -> int:
    return sum(tokens.count_tokens([r["text"] for r in results])) if results else 0


@pytest.mark.parametrize("budget", [60, 250, 700])
async def test_max_tokens_is_never_exceeded_by_retrieve_chunks(mcp: ThreadedServer, files: FileServer,
                                                               tokens: TokenCounter, budget: int) -> None:
    _, full = await call(mcp, "retrieve_chunks", document_url=files.url(PDF), query="word processors", top_k=8,
                         neighbors=1)
    failed, body = await call(mcp, "retrieve_chunks", document_url=files.url(PDF), query="word processors",
                              top_k=8, neighbors=1, max_tokens=budget)
    assert not failed, body
    used = count(tokens, body["results"])
    assert body["tokens"] == used <= budget
    assert len(body["results"]) + body["omitted"] == len(full["results"])
    assert body["results"], "the best result is cut to fit rather than dropped"
    kept = body["results"]
    assert [r["passage_id"] for r in kept] == [r["passage_id"] for r in full["results"]][: len(kept)]
    if body["omitted"]:  # the next result would not have fitted
        assert used + count(tokens, [full["results"][len(kept)]]) > budget or kept[0]["truncated"]


async def test_a_best_result_over_the_budget_is_cut_to_fit(mcp: ThreadedServer, files: FileServer,
                                                           tokens: TokenCounter) -> None:
    _, full = await call(mcp, "retrieve_chunks", document_url=files.url(PDF), query="word processors", top_k=2)
    failed, body = await call(mcp, "retrieve_chunks", document_url=files.url(PDF), query="word processors",
                              top_k=2, max_tokens=20)
    assert not failed, body
    [only] = body["results"]
    assert only["truncated"] is True and body["omitted"] == 1
    assert full["results"][0]["text"].startswith(only["text"]) and only["text"]
    assert count(tokens, [only]) == body["tokens"] <= 20


async def test_max_tokens_is_never_exceeded_by_search_documents(mcp: ThreadedServer, files: FileServer,
                                                                tokens: TokenCounter) -> None:
    urls = [files.url(PDF), files.url(PPTX), files.url(DOCX)]
    _, full = await call(mcp, "search_documents", document_urls=urls, query="word documents", top_k=12)
    failed, body = await call(mcp, "search_documents", document_urls=urls, query="word documents", top_k=12,
                              max_tokens=500)
    assert not failed, body
    assert body["tokens"] == count(tokens, body["results"]) <= 500
    assert len(body["results"]) + body["omitted"] == len(full["results"]) and body["omitted"] > 0
    assert sum(d["results"] for d in body["documents"]) == len(body["results"])


async def test_without_max_tokens_nothing_is_counted_or_left_out(mcp: ThreadedServer, files: FileServer) -> None:
    _, body = await call(mcp, "retrieve_chunks", document_url=files.url(PDF), query="word", top_k=3)
    assert body["tokens"] is None and body["omitted"] == 0 and len(body["results"]) == 3
