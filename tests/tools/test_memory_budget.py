"""The memory budget and the index folder bound as an operator sees them: get_system_health and
/metrics after a server met more documents than its budget holds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio.to_thread
import httpx
import pytest

from mcp_server.caches.budget import IdleTrim
from mcp_server.server.build import create_server
from tests.conftest import FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, http_client, make_settings, payload

pytestmark = pytest.mark.anyio
MB = 2**20
BUDGET_MB = 2  # one ~1 MB index of a document below fits, six do not


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("served")
    for i in range(6):  # distinct documents of ~80 kB each
        (root / f"doc{i}.txt").write_text("".join(f"Document {i} line {n} tells about subject {n % 97}.\n"
                                                  for n in range(1500)))
    with serve_copies(root) as server:
        yield server


@pytest.fixture(scope="module")
def mcp() -> Iterator[ThreadedServer]:
    settings = make_settings(load_models=False, memory_budget_mb=BUDGET_MB, rate_limit_rpm=100_000,
                             progressive_budget=1e6)
    with ThreadedServer(settings) as server:
        yield server


async def call(server: ThreadedServer, tool: str, **arguments: Any) -> dict[str, Any]:
    async with http_client(server.mcp_url) as client:
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, payload(result)
    return payload(result)


async def test_health_shows_the_caches_bytes_within_the_budget_and_what_was_evicted(
    mcp: ThreadedServer, files: FileServer,
) -> None:
    for i in range(6):
        body = await call(mcp, "retrieve_chunks", document_url=files.url(f"doc{i}.txt"), query="subject 42", top_k=2)
        assert body["results"]
    health = await call(mcp, "get_system_health")
    budget = health["cache"]["memory_budget"]
    assert budget["max_bytes"] == BUDGET_MB * MB
    assert 0 < budget["bytes"] <= BUDGET_MB * MB and budget["bytes"] == sum(budget["bytes_by_layer"].values())
    assert sum(budget["evictions"].values()) > 0 and budget["evicted_bytes"] > 0
    assert {"download", "document", "index", "embedding"} <= set(budget["bytes_by_layer"])
    metrics = httpx.get(f"{mcp.base}/metrics", timeout=10).text
    assert 'rag_cache_bytes{layer="index"}' in metrics
    assert 'rag_cache_evictions_total{backend="memory",layer=' in metrics
    # the index layer gave up older indexes and kept the latest
    entries = health["cache"]["index"]
    assert entries["evictions"] > 0 and entries["entries"] >= 1



async def test_an_idle_server_gives_half_its_cache_bytes_back_and_still_answers_from_disk(files: FileServer) -> None:
    # the server's own trim off (0): this test drives one trim, with the worker's clock moved on
    rag = create_server(make_settings(load_models=False, rate_limit_rpm=100_000, progressive_budget=1e6,
                                      idle_trim_seconds=0))
    with ThreadedServer(rag.rag_settings, rag) as server:
        for i in range(4):
            await call(server, "retrieve_chunks", document_url=files.url(f"doc{i}.txt"), query="subject 42", top_k=2)
        assert rag.shared_context is not None
        budget = rag.shared_context.service.budget
        before = budget.used()
        activity = budget.activity
        real = activity.clock
        activity.clock = lambda: real() + 3600  # an hour without a call
        try:
            freed = await anyio.to_thread.run_sync(IdleTrim(budget, after=60).run)
        finally:
            activity.clock = real
        assert freed > 0 and budget.used() <= before // 2
        health = (await call(server, "get_system_health"))["cache"]["memory_budget"]
        assert health["idle_trims"] == 1 and health["idle_trimmed_bytes"] == freed
        metrics = httpx.get(f"{server.base}/metrics", timeout=10).text
        assert "rag_cache_idle_trimmed_bytes_total{layer=" in metrics
        # the least recently used document left memory; its index is read back from the folder
        again = await call(server, "retrieve_chunks", document_url=files.url("doc0.txt"), query="subject 42", top_k=2)
        assert again["results"] and again["cached"] is True
