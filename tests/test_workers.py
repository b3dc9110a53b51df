"""--workers N: stateless streamable HTTP, so consecutive requests may reach any worker."""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import httpx
import psutil
import pytest

from mcp_server.processors import DocumentInput, ProcessOptions, process_document
from tests.conftest import FileServer
from tests.mcp_harness import http_client, payload, scratch_dir, server_process

pytestmark = pytest.mark.anyio


async def test_four_workers_answer_100_tool_calls_without_an_error() -> None:
    env = {"MCP_RATE_LIMIT_RPM": "100000", "MCP_LOAD_MODELS": "false"}
    with server_process(["--workers", "4"], env=env) as (_, base):
        errors: list[object] = []
        pids: set[int] = set()

        async def client_task(n: int) -> None:
            # A new TCP connection per request (no keep-alive): initialize and the call land on
            # whichever worker accepts them.
            async with http_client(f"{base}/mcp", keepalive=False) as client:
                for i in range(10):
                    tool = "get_system_health" if i % 2 else "detect_language"
                    args = {} if tool == "get_system_health" else {"text": f"request number {n}-{i} in English"}
                    result = await client.call_tool(tool, args)
                    body = payload(result)
                    if result.is_error:
                        errors.append(body)
                    elif tool == "get_system_health":
                        pids.add(body["worker"]["pid"])

        with anyio.fail_after(240):
            async with anyio.create_task_group() as group:
                for n in range(10):
                    group.start_soon(client_task, n)
    assert errors == []
    assert len(pids) >= 2, "requests never reached a second worker"


def _tree(root: int) -> list[psutil.Process]:
    parent = psutil.Process(root)
    return [parent, *parent.children(recursive=True)]


def _forked(process: psutil.Process) -> bool:
    """A multiprocessing forkserver or a process forked from one (a fork keeps its command line)."""
    with contextlib.suppress(psutil.Error):
        return "multiprocessing.forkserver" in " ".join(process.cmdline())
    return False


def _forkservers(processes: list[psutil.Process]) -> list[psutil.Process]:
    """The forkservers among ``processes`` (not the parsers forked from them)."""
    return [p for p in processes if _forked(p) and not (p.parent() is not None and _forked(p.parent()))]


async def test_two_workers_parse_with_one_shared_parser_pool_and_get_what_a_pool_of_their_own_gives(
    corpus_server: FileServer, corpus_dir: Path,
) -> None:
    env = {"MCP_RATE_LIMIT_RPM": "100000", "MCP_LOAD_MODELS": "false", "MCP_FETCH_ALLOWLIST": "127.0.0.1",
           "MCP_INDEX_DIR": str(scratch_dir("rag-workers-index-")), "MCP_PARSE_WORKERS": "2"}
    names = ["pdf/multi_page.pdf", "docx/word_tables.docx", "html/what_is_haystack.html", "txt/fake-text.txt",
             "xlsx/stanley-cups.xlsx", "pptx/powerpoint_sample.pptx"]
    with server_process(["--workers", "2"], env=env) as (proc, base):
        answers: dict[str, dict[str, object]] = {}
        refused: dict[str, object] = {}
        pids: set[int] = set()

        async def ask(name: str) -> None:
            async with http_client(f"{base}/mcp", keepalive=False) as client:
                result = await client.call_tool("process_document", {"document_url": corpus_server.url(f"docs/{name}")})
                (refused if result.is_error else answers)[name] = payload(result)
                health = payload(await client.call_tool("get_system_health", {}))
                pids.add(health["worker"]["pid"])

        with anyio.fail_after(240):
            async with anyio.create_task_group() as group:
                for name in [*names, "pdf/password.pdf"] * 2:  # twice: the second time from the document cache
                    group.start_soon(ask, name)
        tree = _tree(proc.pid)
        forkservers = _forkservers(tree)
        workers = [p for p in psutil.Process(proc.pid).children() if p not in forkservers]
        # one preloaded parser image for the whole server, started by the supervisor, not by a worker
        assert [p.ppid() for p in forkservers] == [proc.pid]
        assert len(workers) >= 2 and not any(_forkservers(w.children(recursive=True)) for w in workers)
        parsers = forkservers[0].children()
        assert 1 <= len(parsers) <= 2  # MCP_PARSE_WORKERS for the server, not per worker
        scraped = httpx.get(f"{base}/metrics", timeout=30).text
        assert "rag_parser_pool_workers 2.0" in scraped.splitlines()  # each worker reports its share
    assert len(pids) >= 2, "calls never reached a second worker"
    assert refused["pdf/password.pdf"]["code"] == "PROCESSING_ERROR"  # type: ignore[index]
    assert set(answers) == set(names)
    for name in names:  # the parse result crossed the supervisor unchanged
        path = corpus_dir / "docs" / name
        local = process_document(DocumentInput(data=path.read_bytes(), doc_type=path.suffix[1:], filename=path.name),
                                 ProcessOptions())
        assert answers[name]["content"] == local.content, name
