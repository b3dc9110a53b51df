"""GET /metrics on the main port: counts after a scripted mix of calls, labels, access, off switch.

The server runs in this process (``ThreadedServer``), where the instruments are process-wide, so
every test compares a scrape after its calls with one before them.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from mcp_server import metrics
from tests.conftest import FileServer
from tests.mcp_harness import ThreadedServer, make_settings
from tests.metrics._helpers import call, codes, delta, parse, scrape, value

pytestmark = pytest.mark.anyio

KEYS = [f"key-{n}" for n in range(12)]
TEXT = "docs/txt/norwich-city.txt"


@pytest.fixture
def server() -> Any:
    # One token per key and minute: a second call with the same key is RATE_LIMITED, every other
    # call uses a key of its own. Extraction tools time out at once (TIMEOUT).
    settings = make_settings(load_models=False, api_keys=KEYS, rate_limit_rpm=1, global_rate_multiplier=1000,
                             timeout_extraction=0.0001)
    with ThreadedServer(settings) as running:
        yield running


async def test_a_scripted_mix_of_calls_shows_up_in_metrics_with_the_expected_counts(
    server: ThreadedServer, corpus_server: FileServer, corpus_dir: Any,
) -> None:
    base, key = server.base, KEYS[0]
    text_url = corpus_server.url(TEXT)
    before = scrape(base, key)
    results = [
        ("retrieve_chunks", await call(base, "retrieve_chunks", {"document_url": text_url, "query": "founded"},
                                       KEYS[1])),
        ("retrieve_chunks", await call(base, "retrieve_chunks", {"document_url": text_url, "query": "stadium"},
                                       KEYS[2])),
        ("retrieve_chunks", await call(base, "retrieve_chunks", {"document_url": text_url},
                                       KEYS[3])),
        ("process_document", await call(base, "process_document",
                                        {"document_url": corpus_server.url("docs/txt/missing.txt")}, KEYS[4])),
        ("process_document", await call(base, "process_document",
                                        {"document_url": corpus_server.url("docs/pdf/password.pdf")}, KEYS[5])),
        ("detect_language", await call(base, "detect_language", {"text": "a sentence in English"}, KEYS[6])),
        ("detect_language", await call(base, "detect_language", {"text": "a sentence in English"}, KEYS[6])),
        ("extract_pdf_text", await call(base, "extract_pdf_text",
                                        {"document_url": corpus_server.url("docs/pdf/multi_page.pdf")}, KEYS[7])),
    ]
    after = scrape(base, key)

    made = codes(results)
    assert made == {
        ("retrieve_chunks", "OK"): 2, ("retrieve_chunks", "VALIDATION_ERROR"): 1,
        ("process_document", "DOWNLOAD_ERROR"): 1, ("process_document", "PROCESSING_ERROR"): 1,
        ("detect_language", "OK"): 1, ("detect_language", "RATE_LIMITED"): 1, ("extract_pdf_text", "TIMEOUT"): 1,
    }
    for (tool, code), count in made.items():
        assert delta(after, before, "rag_tool_calls_total", tool=tool, code=code) == count, (tool, code)
    for tool in {tool for tool, _ in made}:
        calls = sum(count for (name, _), count in made.items() if name == tool)
        assert delta(after, before, "rag_tool_duration_seconds_count", tool=tool) == calls
        assert delta(after, before, "rag_tool_duration_seconds_bucket", tool=tool, le="+Inf") == calls
    cold, warm = results[0][1][1], results[1][1][1]
    assert (cold["cached"], warm["cached"]) == (False, True)

    # cold vs warm, the one build and what it embedded
    assert delta(after, before, "rag_retrievals_total", doc_type="txt", index="cold") == 1
    assert delta(after, before, "rag_retrievals_total", doc_type="txt", index="warm") == 1
    assert delta(after, before, "rag_index_builds_total", event="started") == 1
    assert delta(after, before, "rag_index_builds_total", event="failed") == 0
    assert delta(after, before, "rag_chunks_embedded_total") == cold["total_chunks_indexed"]
    assert delta(after, before, "rag_documents_parsed_total", doc_type="txt") == 1

    # stages: one chunking, embedding and build; a query embedding and a search per answer; two parses
    # (the text, the encrypted PDF); the timed-out call never got as far as parsing
    for stage, count in {"chunk": 1, "embed": 1, "index_build": 1, "query_embed": 2, "search": 2, "parse": 2}.items():
        assert delta(after, before, "rag_stage_duration_seconds_count", stage=stage) == count, stage
    assert delta(after, before, "rag_stage_duration_seconds_count", stage="download") >= 3

    # caches: the warm call goes from its known URL to the in-memory index (pipeline/downloads.py
    # `Known`): it looks at neither the download nor the document layer (a document with an index is
    # neither downloaded nor parsed again)
    assert delta(after, before, "rag_cache_lookups_total", layer="download", backend="memory", result="hit") == 0
    assert delta(after, before, "rag_cache_lookups_total", layer="download", backend="memory", result="miss") >= 3
    assert delta(after, before, "rag_cache_lookups_total", layer="document", backend="memory", result="hit") == 0
    # two misses per parse: the lookup, then the one under the per-key lock (manage_cache counts the same)
    assert delta(after, before, "rag_cache_lookups_total", layer="document", backend="memory", result="miss") == 4
    assert delta(after, before, "rag_cache_lookups_total", layer="index", backend="memory", result="hit") == 1
    assert delta(after, before, "rag_cache_lookups_total", layer="index", backend="memory", result="miss") == 1
    assert delta(after, before, "rag_cache_lookups_total", layer="index", backend="disk", result="miss") == 1

    # bytes: the text and the encrypted PDF, each downloaded once
    sizes = sum((corpus_dir / "docs" / name).stat().st_size for name in ("txt/norwich-city.txt", "pdf/password.pdf"))
    assert delta(after, before, "rag_download_bytes_total") == sizes
    assert delta(after, before, "rag_rate_limit_rejections_total", scope="client") == 1
    assert delta(after, before, "rag_rate_limit_rejections_total", scope="global") == 0

    # nothing left running or queued
    assert value(after, "rag_parser_pool_tasks") == 0
    assert value(after, "rag_index_builds_in_flight") == 0
    assert value(after, "rag_parser_pool_workers") == 2


async def test_no_label_carries_a_url_a_query_or_a_client_key(
    server: ThreadedServer, corpus_server: FileServer,
) -> None:
    probe = uuid.uuid4().hex
    found = corpus_server.url(f"{TEXT}?probe={probe}u")  # the file server ignores the query string
    missing = corpus_server.url(f"docs/{probe}m/missing.txt")
    assert (await call(server.base, "retrieve_chunks", {"document_url": found, "query": f"what is {probe}q"},
                       KEYS[8]))[0]
    assert not (await call(server.base, "process_document", {"document_url": missing}, KEYS[9]))[0]
    assert not (await call(server.base, "retrieve_chunks", {"document_url": missing, "query": f"{probe}e"},
                           KEYS[10]))[0]
    text = httpx.get(f"{server.base}/metrics", headers={"Authorization": f"Bearer {KEYS[0]}"}).text
    assert "rag_tool_calls_total" in text
    for secret in (probe, "127.0.0.1", "missing.txt", "norwich", *KEYS):
        assert secret not in text


async def test_metrics_need_the_bearer_key_when_keys_are_set(server: ThreadedServer) -> None:
    assert httpx.get(f"{server.base}/metrics").status_code == 401
    assert httpx.get(f"{server.base}/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(f"{server.base}/metrics?key={KEYS[0]}").status_code == 401
    good = httpx.get(f"{server.base}/metrics", headers={"Authorization": f"Bearer {KEYS[0]}"})
    assert good.status_code == 200 and good.headers["content-type"].startswith("text/plain")


async def test_without_keys_metrics_are_open_like_health() -> None:
    with ThreadedServer(make_settings(load_models=False)) as server:
        response = httpx.get(f"{server.base}/metrics")
    assert response.status_code == 200 and "# TYPE rag_tool_calls_total counter" in response.text


async def test_the_off_switch_answers_404_and_records_nothing() -> None:
    with ThreadedServer(make_settings(load_models=False, metrics_enabled=False)) as server:
        before = parse(metrics.render()[0].decode())
        assert httpx.get(f"{server.base}/metrics").status_code == 404
        assert (await call(server.base, "detect_language", {"text": "counted nowhere"}))[0]
        after = parse(metrics.render()[0].decode())
    assert delta(after, before, "rag_tool_calls_total", tool="detect_language") == 0


async def test_an_openmetrics_scraper_gets_openmetrics() -> None:
    with ThreadedServer(make_settings(load_models=False)) as server:
        accept = {"Accept": "application/openmetrics-text; version=1.0.0"}
        response = httpx.get(f"{server.base}/metrics", headers=accept)
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.rstrip().endswith("# EOF")


@pytest.mark.parametrize(("host", "status"), [("10.1.2.3:9464", 200), ("evil.example:9464", 421), ("localhost", 200)])
async def test_the_scrape_port_checks_host_against_its_own_bind_address_and_the_keys(host: str, status: int) -> None:
    from mcp_server.server.metrics_http import create_metrics_app

    app = create_metrics_app(make_settings(api_keys=["k"], metrics_port=9464, metrics_host="10.1.2.3"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://10.1.2.3:9464") as client:
        keyed = await client.get("/metrics", headers={"Host": host, "Authorization": "Bearer k"})
        unkeyed = await client.get("/metrics", headers={"Host": host})
    assert keyed.status_code == status
    assert unkeyed.status_code == (401 if status == 200 else status)
