"""What a warm retrieve_chunks does not pay again, through a real MCP client: the bytes are not
sniffed again, and the in-memory cache layers are read without a worker thread."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_server.caches.layers as cache
import mcp_server.core.concurrency as concurrency
import mcp_server.pipeline.documents as documents
import mcp_server.pipeline.parsing as parsing
import mcp_server.pipeline.service as service
import mcp_server.processors as processors
from tests.conftest import FileServer, serve_copies
from tests.mcp_harness import memory_client, payload

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    with serve_copies(tmp_path_factory.mktemp("served"), "pdf/multi_page.pdf") as server:
        yield server


def counting(calls: list[str], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return fn(*args, **kwargs)

    return wrapper


async def test_a_warm_call_neither_sniffs_again_nor_hops_to_a_thread_in_the_service(
    files: FileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(processors, "detect_type", counting(calls, "sniff", processors.detect_type))
    real_off_loop = concurrency.off_loop

    async def off_loop(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        calls.append("thread")
        return await real_off_loop(fn, *args, **kwargs)

    # every thread hop the service and the cache layers make (the index manager keeps the real one)
    for module in (service, parsing, documents, cache):
        monkeypatch.setattr(module, "off_loop", off_loop)
    url = files.url("multi_page.pdf")
    async with memory_client(index_dir=tmp_path, progressive_budget=1e6) as client:
        cold = await client.call_tool("retrieve_chunks", {"document_url": url, "query": "first page"})
        assert not cold.is_error, payload(cold)
        assert calls.count("sniff") == 1 and "thread" in calls  # the counting sees the cold call's hops
        calls.clear()
        warm = await client.call_tool("retrieve_chunks", {"document_url": url, "query": "second page"})
    assert not warm.is_error and payload(warm)["cached"] is True
    assert calls == []
    assert payload(warm)["results"] and payload(warm)["document_type"] == "pdf"


async def test_the_sniffed_type_is_remembered_per_bytes_and_address(
    files: FileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(processors, "detect_type", counting(calls, "sniff", processors.detect_type))
    async with memory_client(index_dir=tmp_path, progressive_budget=1e6) as client:
        for url in (files.url("multi_page.pdf"), files.url("multi_page.pdf?copy=2")):
            result = await client.call_tool("retrieve_chunks", {"document_url": url, "query": "page"})
            assert not result.is_error, payload(result)
            assert payload(result)["document_type"] == "pdf"
    assert calls == ["sniff", "sniff"]  # another final URL: its name may sniff otherwise
