"""search_documents over a real MCP client (streamable HTTP), with the real bundled MiniLM embedder."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_server.core.settings import Settings
from mcp_server.retrieval.index import RRF_K
from tests.conftest import FileServer, serve_copies
from tests.fetch.servers import LoopbackServer, respond
from tests.mcp_harness import ThreadedServer, call, http_client, make_settings, payload

pytestmark = pytest.mark.anyio

PDF, DOCX, PPTX = "multi_page.pdf", "testWORD.docx", "powerpoint_sample.pptx"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("served")
    for name in ("alpha", "beta", "gamma"):
        (root / f"{name}.txt").write_text(f"The {name} memo is about {name} things.\n" * 5)
    with serve_copies(root, f"pdf/{PDF}", f"docx/{DOCX}", f"pptx/{PPTX}") as server:
        yield server


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    settings = make_settings(index_dir=tmp_path_factory.mktemp("indexes"), rate_limit_rpm=100_000)
    with ThreadedServer(settings) as server:
        yield server


async def search(server: ThreadedServer, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    async with http_client(server.mcp_url) as client:
        result = await client.call_tool("search_documents", arguments)
    return result.is_error, payload(result)


def three(files: FileServer) -> list[str]:
    return [files.url(PDF), files.url(DOCX), files.url(PPTX)]


async def test_three_documents_answer_in_one_call_with_results_from_each(mcp: ThreadedServer,
                                                                         files: FileServer) -> None:
    urls = three(files)
    failed, body = await search(mcp, document_urls=urls, query="word processing documents and slides", top_k=12)
    assert not failed, body
    assert [d["url"] for d in body["documents"]] == urls
    assert all(d["status"] == "ok" and d["chunks"] > 0 for d in body["documents"])
    assert {r["document_url"] for r in body["results"]} == set(urls)
    assert {d["document_type"] for d in body["documents"]} == {"pdf", "docx", "pptx"}
    assert [r["score"] for r in body["results"]] == sorted((r["score"] for r in body["results"]), reverse=True)
    for document in body["documents"]:
        assert document["results"] == sum(r["document_url"] == document["url"] for r in body["results"])
    best = body["results"][0]
    assert best["passage_id"].startswith("p1.") and best["location"]["end_char"] > best["location"]["start_char"]
    assert best["scores"]["dense"] is not None and best["ranks"] == [1]


@pytest.mark.parametrize("per_document", [1, 2])
async def test_per_document_caps_the_results_of_each_document(mcp: ThreadedServer, files: FileServer,
                                                              per_document: int) -> None:
    failed, body = await search(mcp, document_urls=three(files), query="word documents", top_k=10,
                                per_document=per_document)
    assert not failed, body
    counts = [sum(r["document_url"] == url for r in body["results"]) for url in three(files)]
    assert counts == [per_document] * 3  # every document has that many chunks, none more


async def test_a_missing_document_is_reported_while_the_others_answer(mcp: ThreadedServer, files: FileServer) -> None:
    missing = files.url("no-such-file.pdf")
    urls = [files.url(PDF), missing, files.url(DOCX)]
    failed, body = await search(mcp, document_urls=urls, query="artificial intelligence", top_k=5)
    assert not failed, body
    status = {d["url"]: d for d in body["documents"]}
    assert status[missing]["status"] == "error" and status[missing]["error"]["code"] == "DOWNLOAD_ERROR"
    assert "404" in status[missing]["error"]["error"]
    assert status[files.url(PDF)]["status"] == status[files.url(DOCX)]["status"] == "ok"
    assert body["results"] and missing not in {r["document_url"] for r in body["results"]}


async def test_when_every_document_fails_the_call_fails_naming_each(mcp: ThreadedServer, files: FileServer) -> None:
    urls = [files.url("gone-1.pdf"), files.url("gone-2.pdf")]
    failed, body = await search(mcp, document_urls=urls, query="anything")
    assert failed and body["code"] == "DOWNLOAD_ERROR"
    assert all(url in body["error"] for url in urls)
    assert [d["url"] for d in body["documents"]] == urls


async def test_extra_phrasings_are_fused_by_reciprocal_rank_fusion(mcp: ThreadedServer, files: FileServer) -> None:
    urls = three(files)
    first, second = "artificial intelligence in word processors", "slides of a presentation"
    # top_k above the chunk count of the three documents: every ranking is complete
    _, alone_a = await search(mcp, document_urls=urls, query=first, top_k=50)
    _, alone_b = await search(mcp, document_urls=urls, query=second, top_k=50)
    failed, fused = await search(mcp, document_urls=urls, query=first, queries=[second], top_k=50)
    assert not failed, fused
    rank_a = {r["passage_id"]: i for i, r in enumerate(alone_a["results"], start=1)}
    rank_b = {r["passage_id"]: i for i, r in enumerate(alone_b["results"], start=1)}

    def rrf(pid: str) -> float:
        return sum(1 / (RRF_K + ranks[pid]) for ranks in (rank_a, rank_b) if pid in ranks)

    expected = sorted(rank_a.keys() | rank_b.keys(),
                      key=lambda pid: (-rrf(pid), rank_a.get(pid, 10**6), rank_b.get(pid, 10**6)))
    assert [r["passage_id"] for r in fused["results"]] == expected
    assert [r["score"] for r in fused["results"]] == [pytest.approx(rrf(pid), abs=1e-6) for pid in expected]
    assert [r["ranks"] for r in fused["results"]] == [[rank_a.get(pid), rank_b.get(pid)] for pid in expected]
    assert expected != list(rank_a)  # the second phrasing changed the order


async def test_the_pages_filter_keeps_only_passages_on_those_pages(mcp: ThreadedServer, files: FileServer) -> None:
    urls = [files.url(PDF), files.url(PPTX)]
    _, everything = await search(mcp, document_urls=urls, query="word processors", top_k=50)
    failed, body = await search(mcp, document_urls=urls, query="word processors", top_k=50, pages="2-3")
    assert not failed, body

    def on_pages(result: dict[str, Any]) -> bool:
        where = result["location"]
        return bool({2, 3} & set(where.get("pages", []))) or where.get("slide") in (2, 3)

    assert body["results"] and all(on_pages(r) for r in body["results"])
    assert len(body["results"]) < len(everything["results"])  # the filter left something out
    assert {r["passage_id"] for r in body["results"]} == {r["passage_id"] for r in everything["results"] if on_pages(r)}


@pytest.mark.parametrize(
    ("arguments", "argument"),
    [
        ({"pages": "3-"}, "pages"), ({"pages": "7-3"}, "pages"), ({"pages": "two"}, "pages"),
        ({"document_urls": []}, "document_urls"), ({"per_document": 0}, "per_document"),
        ({"max_tokens": 0}, "max_tokens"), ({"query": " "}, "query"), ({"queries": [""]}, "queries"),
    ],
)
async def test_bad_search_arguments_are_validation_errors_naming_the_argument(
    mcp: ThreadedServer, files: FileServer, arguments: dict[str, Any], argument: str,
) -> None:
    failed, body = await search(mcp, **{"document_urls": [files.url(PDF)], "query": "x", **arguments})
    assert failed and body["code"] == "VALIDATION_ERROR", body
    assert f"'{argument}'" in body["error"]


async def test_more_documents_than_the_setting_allows_are_refused(mcp: ThreadedServer, files: FileServer) -> None:
    urls = [files.url(f"doc-{n}.txt") for n in range(Settings.model_fields["search_max_documents"].default + 1)]
    failed, body = await search(mcp, document_urls=urls, query="x")
    assert failed and body["code"] == "VALIDATION_ERROR" and "'document_urls'" in body["error"]


async def test_the_document_limit_is_a_setting_the_tool_schema_shows(files: FileServer, tmp_path: Path) -> None:
    urls = [files.url(f"{name}.txt") for name in ("alpha", "beta", "gamma")]
    with ThreadedServer(make_settings(index_dir=tmp_path, search_max_documents=2)) as server:
        async with http_client(server.mcp_url) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        refused, body = await search(server, document_urls=urls, query="memo")
        failed, two = await search(server, document_urls=urls[:2], query="memo")
    assert listed["search_documents"].input_schema["properties"]["document_urls"]["maxItems"] == 2
    assert refused and body["code"] == "VALIDATION_ERROR" and body["argument"] == "document_urls", body
    assert "at most 2 items" in body["error"] and "search_max_documents" in body["error"]
    assert not failed and [d["status"] for d in two["documents"]] == ["ok", "ok"]


async def test_each_document_counts_against_the_rate_limit(files: FileServer, tmp_path: Path) -> None:
    urls = [files.url(f"{name}.txt") for name in ("alpha", "beta", "gamma")]
    with ThreadedServer(make_settings(index_dir=tmp_path, rate_limit_rpm=4)) as server:
        failed, _ = await search(server, document_urls=urls, query="memo")
        assert not failed
        refused, body = await search(server, document_urls=urls, query="memo")  # needs 3, 1 left
    assert refused and body["code"] == "RATE_LIMITED" and body["retry_after"] > 0


async def test_progress_notifications_name_every_document(files: FileServer, tmp_path: Path) -> None:
    seen: list[tuple[float, float | None, str]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message or ""))

    urls = [files.url(f"{name}.txt") for name in ("alpha", "beta", "gamma")]
    with ThreadedServer(make_settings(index_dir=tmp_path)) as server:
        async with http_client(server.mcp_url) as client:
            result = await client.call_tool("search_documents", {"document_urls": urls, "query": "memo"},
                                            progress_callback=on_progress)
    assert not result.is_error
    for url in urls:
        assert any(url in message and "ready" in message for _, _, message in seen), url
    values = [value for value, _, _ in seen]
    assert values == sorted(values) and values[-1] == len(urls) and {total for _, total, _ in seen} == {len(urls)}


async def test_a_document_still_loading_near_the_timeout_is_reported_while_the_others_answer(
    files: FileServer, tmp_path: Path,
) -> None:
    release = threading.Event()

    def stall(handler: Any) -> None:
        release.wait(60)  # holds the download until the test is over (bounded)
        respond(handler, 200, b"too late", {"Content-Type": "text/plain"})

    slow = LoopbackServer.start("127.0.0.1")
    try:
        stalled = slow.route("/stalled.txt", stall)
        with ThreadedServer(make_settings(index_dir=tmp_path, timeout_document=30)) as server:
            warm, _ = await search(server, document_urls=[files.url("alpha.txt")], query="memo")
            failed, body = await search(server, document_urls=[files.url("alpha.txt"), stalled], query="memo")
        assert not warm
    finally:
        release.set()
        slow.close()
    assert not failed, body
    late = body["documents"][1]
    assert late["status"] == "error" and late["error"]["code"] == "TIMEOUT" and "not ready" in late["error"]["error"]
    assert body["documents"][0]["status"] == "ok" and body["results"]


async def test_a_cold_shelf_answers_from_its_ready_documents_and_the_others_go_on_loading_for_the_next_call(
    files: FileServer, tmp_path: Path,
) -> None:
    release, served = threading.Event(), threading.Event()

    def stall(handler: Any) -> None:
        release.wait(60)  # the download is held until the first answer is in (bounded)
        respond(handler, 200, b"The delta memo is about delta things.\n" * 5, {"Content-Type": "text/plain"})
        served.set()

    slow = LoopbackServer.start("127.0.0.1")
    try:
        stalled = slow.route("/delta.txt", stall)
        urls = [files.url("alpha.txt"), stalled]
        with ThreadedServer(make_settings(index_dir=tmp_path, search_cold_wait=0.5, timeout_document=120)) as server:
            with anyio.fail_after(60):  # far under the tool's deadline (108 s): the cold wait answered
                failed, first = await search(server, document_urls=urls, query="memo")
            answered_while_held = not served.is_set()
            release.set()
            assert served.wait(30)
            with anyio.fail_after(60):  # its loading went on after the call: its index reaches the disk
                while (await call(server, "manage_cache", action="stats"))[1]["layers"]["index"]["disk"]["count"] < 2:
                    await anyio.sleep(0.1)
            again_failed, again = await search(server, document_urls=urls, query="delta memo")
    finally:
        release.set()
        slow.close()
    assert answered_while_held and not failed and not again_failed, (first, again)
    late = first["documents"][1]
    assert late["status"] == "error" and late["error"]["code"] == "TIMEOUT" and "goes on" in late["error"]["error"]
    assert first["documents"][0]["status"] == "ok" and {r["document_url"] for r in first["results"]} == {urls[0]}
    assert [d["status"] for d in again["documents"]] == ["ok", "ok"] and again["documents"][1]["cached"] is True
    assert again["results"][0]["document_url"] == stalled
    assert slow.hits == 1  # downloaded once: the second call found its index


async def test_a_name_the_first_page_and_one_file_name_both_write_routes_to_that_document(
    mcp: ThreadedServer, tmp_path: Path,
) -> None:
    # one PDF under two file names: the same content, so only the file name can tell them apart
    with serve_copies(tmp_path, f"pdf/{PDF}") as server:
        (tmp_path / "history.pdf").write_bytes((tmp_path / PDF).read_bytes())
        (tmp_path / "sholes-notes.pdf").write_bytes((tmp_path / PDF).read_bytes())
        urls = [server.url("history.pdf"), server.url("sholes-notes.pdf")]
        # "Sholes" is on the first page of both; only the second one's file name writes it
        failed, body = await search(mcp, document_urls=urls, query="When did Sholes patent the typewriter?", top_k=3)
    assert not failed, body
    assert body["results"] and {r["document_url"] for r in body["results"]} == {urls[1]}, body["results"]


TOPICS = {
    "bees": "Honey bees forage for nectar and pollen. A colony keeps one queen, who lays the eggs in the hive.",
    "rail": "The night train left the station at ten. Its sleeping cars crossed the mountains before dawn.",
    "bread": "Sourdough bread rises slowly. The starter ferments flour and water for a sour, chewy loaf.",
    "tides": "Tides rise and fall twice a day. The pull of the moon on the oceans drives the tides.",
    "chess": "The chess opening fights for the centre. A knight on f3 guards the king's side early.",
    "glaciers": "Glaciers carve valleys as they move. The ice grinds rock into fine silt on its way down.",
    "violins": "A violin's body is carved from spruce and maple. Its varnish shapes the instrument's tone.",
    "comets": "A comet's tail points away from the sun. Its icy core sheds gas and dust near perihelion.",
}


async def test_a_shelf_larger_than_the_route_searches_fully_only_its_best_documents_and_answers_as_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp_server.retrieval.index import DocumentIndex

    root = tmp_path / "served"
    root.mkdir()
    for name, text in TOPICS.items():
        (root / f"{name}.txt").write_text(f"{text}\n\n" * 4)
    searched: list[int] = []  # one entry per document searched fully
    candidates = DocumentIndex.candidates

    def counted(self: DocumentIndex, *args: Any, **kwargs: Any) -> Any:
        searched.append(len(self.chunks))
        return candidates(self, *args, **kwargs)

    monkeypatch.setattr(DocumentIndex, "candidates", counted)
    query = "Who lays the eggs in a hive of honey bees?"
    bodies = {}
    with serve_copies(root) as files:
        urls = [files.url(f"{name}.txt") for name in TOPICS]
        for route in (0, 2):
            with ThreadedServer(make_settings(index_dir=tmp_path / "indexes", search_route_documents=route)) as server:
                warm, _ = await search(server, document_urls=urls, query="warm up", top_k=1)
                assert not warm
                searched.clear()
                failed, bodies[route] = await search(server, document_urls=urls, query=query, top_k=3)
                assert not failed, bodies[route]
                assert len(searched) == (len(TOPICS) if route == 0 else 2)
    full, routed = bodies[0]["results"], bodies[2]["results"]
    assert full[0]["document_url"] == routed[0]["document_url"] == urls[0]
    assert full[0]["text"] == routed[0]["text"]
    assert all(d["status"] == "ok" for d in bodies[2]["documents"])  # a document left out is still reported ok
