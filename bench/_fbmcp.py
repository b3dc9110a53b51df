"""``retrieve_chunks`` over MCP streamable HTTP for ``bench/financebench.py --mcp``.

A real server process (``python -m mcp_server``, ``bench/servers.py``) with a fresh index folder,
the PDFs served from a loopback HTTP server, one MCP client session. Each document's first
call is its cold time (download, parse, chunk, embed, index, search); every later question on
it is a warm call. The questions are asked at once, so on a big document they are answered from
a partial index while the complete one builds. With ``settled``, the bench then waits until the
document's index is complete and asks every question again: the answers of an agent's later
calls on the same document.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import Client

from bench.servers import FileServer, mcp_session, payload, server_env, server_process

__all__ = ["mcp_results"]

DEFAULT_TOOL_TIMEOUT = 300.0  # Settings.timeout_document
SETTLE_POLL_S = 3.0
SETTLE_LIMIT_S = 900.0  # the slowest complete build measured (Pfizer 10-K, loaded machine) took ~190 s


def _server_env(index_dir: str, parse_timeout: float | None) -> dict[str, str]:
    env = server_env(MCP_INDEX_DIR=index_dir)
    if parse_timeout is not None:
        env["MCP_PARSE_TIMEOUT"] = str(parse_timeout)
        # the tool's own timeout must leave room for the parse, chunking and embedding after it
        env["MCP_TIMEOUT_DOCUMENT"] = str(max(DEFAULT_TOOL_TIMEOUT, parse_timeout + 300))
    return env


def _results(body: dict[str, Any]) -> list[tuple[str, tuple[int, ...]]]:
    return [(item["text"], tuple(item["location"].get("pages") or ())) for item in body["results"]]


def _complete(body: dict[str, Any]) -> bool:
    return bool((body.get("index") or {}).get("status", "complete") == "complete")


async def _settle(client: Client, url: str, query: str, k: int) -> float:
    """Seconds until ``url``'s index answers as complete (polling retrieve_chunks)."""
    started = time.perf_counter()
    while time.perf_counter() - started < SETTLE_LIMIT_S:
        result = await client.call_tool("retrieve_chunks", {"document_url": url, "query": query, "top_k": k})
        if result.is_error or _complete(payload(result)):
            return time.perf_counter() - started
        await asyncio.sleep(SETTLE_POLL_S)
    raise TimeoutError(f"{url} did not complete its index within {SETTLE_LIMIT_S:.0f} s")


async def mcp_results(
    docs_dir: Path, grouped: dict[str, list[dict[str, Any]]], k: int, *, parse_timeout: float | None,
    log: Callable[[str], None], settled: bool = False, deep: int | None = None,
) -> dict[str, Any]:
    """Per question: ``results`` [(text, pages)] or ``error``; per document ``cold_s`` and ``partial``
    (answers that came from a partial index, the complete one still building); warm latencies.
    With ``settled``, also ``settled`` per question: the results once the index is complete. With
    ``deep``, also ``deep`` per question: the results of a second call at top_k=deep, once all the
    document's questions were asked (recall: is the right page found at all)."""
    out: dict[str, Any] = {"questions": {}, "cold_s": {}, "errors": {}, "warm_ms": [], "partial": {},
                           "settled": {}, "deep": {}}
    files = FileServer(docs_dir)
    read_timeout = max(DEFAULT_TOOL_TIMEOUT, (parse_timeout or 0) + 300) + 60
    try:
        with tempfile.TemporaryDirectory(prefix="fb-mcp-index-") as index_dir, \
                server_process(env=_server_env(index_dir, parse_timeout)) as server:
            log(f"MCP server ready at {server.base}")
            # a raised parse timeout needs a longer read than the session's default
            async with mcp_session(server.mcp_url, read_timeout=read_timeout) as client:
                for name, questions in grouped.items():
                    url = files.url(Path(questions[0]["doc"]).name)
                    for n, q in enumerate(questions):
                        started = time.perf_counter()
                        result = await client.call_tool(
                            "retrieve_chunks", {"document_url": url, "query": q["question"], "top_k": k})
                        seconds = time.perf_counter() - started
                        body = payload(result)
                        if n == 0:
                            out["cold_s"][name] = seconds
                            log(f"  {name}: first call {seconds:.1f}s "
                                f"{'error: ' + str(body.get('message', body))[:160] if result.is_error else ''}")
                        elif name not in out["errors"] and not result.is_error:  # a failed document is never warm
                            out["warm_ms"].append(seconds * 1000)
                        if result.is_error:
                            out["errors"][name] = str(body.get("message", body))[:300]
                            out["questions"][q["id"]] = []
                            continue
                        out["questions"][q["id"]] = _results(body)
                        if not _complete(body):
                            out["partial"][name] = out["partial"].get(name, 0) + 1
                    if deep and name not in out["errors"]:
                        for q in questions:
                            result = await client.call_tool(
                                "retrieve_chunks", {"document_url": url, "query": q["question"], "top_k": deep})
                            out["deep"][q["id"]] = [] if result.is_error else _results(payload(result))
                    if settled and name not in out["errors"]:
                        waited = await _settle(client, url, questions[0]["question"], k)
                        log(f"  {name}: index complete after {waited:.0f}s more")
                        for q in questions:
                            result = await client.call_tool(
                                "retrieve_chunks", {"document_url": url, "query": q["question"], "top_k": k})
                            body = payload(result)
                            out["settled"][q["id"]] = [] if result.is_error else _results(body)
    finally:
        files.close()
    return out
