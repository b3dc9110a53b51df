"""MCP calls of `make image-test` (scripts/image-test.sh), with the official Python SDK only, so the same
file runs on the host (the project's venv) and inside the server image (`exec -i NAME python - ...`).

    image_check.py http URL DOC_URL QUERY        retrieve_chunks over streamable HTTP (URL ends in /mcp)
    image_check.py stdio DOC_URL QUERY [READ_URL...] -- CMD...
                                                 the server started by CMD (e.g. `podman run -i ...`) over stdio;
                                                 then process_document on each READ_URL (other formats),
                                                 and get_page_image of page 1 of the word-processing ones and decks
    image_check.py stats URL                     /health and the build counters of /metrics of one server

Each prints one JSON line and exits non-zero when the server did not answer as it should.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from typing import Any

import httpx
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult


def _payload(result: CallToolResult) -> dict[str, Any]:
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]


async def _retrieve(session: Client, doc_url: str, query: str) -> dict[str, Any]:
    tools = {tool.name for tool in (await session.list_tools()).tools}
    result = await session.call_tool("retrieve_chunks", {"document_url": doc_url, "query": query, "top_k": 3})
    body = _payload(result)
    if result.is_error or not body.get("results"):
        raise SystemExit(f"retrieve_chunks failed: {json.dumps(body)[:1000]}")
    best = body["results"][0]
    return {"tools": len(tools), "results": len(body["results"]), "document_type": body["document_type"],
            "index": body.get("index"), "best": {"location": best["location"], "text": best["text"][:160]}}


async def over_http(url: str, doc_url: str, query: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=300)) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        return await _retrieve(client, doc_url, query)


_PAGED = (".doc", ".docx", ".odt", ".rtf", ".ppt", ".pptx", ".odp")  # get_page_image renders them (LibreOffice)


async def _read(session: Client, doc_url: str) -> list[Any]:
    """[type, characters], and for a word-processing document or a deck [width, height] of page 1's image."""
    result = await session.call_tool("process_document", {"document_url": doc_url})
    body = _payload(result)
    if result.is_error or not body.get("content", "").strip():
        raise SystemExit(f"process_document failed on {doc_url}: {json.dumps(body)[:1000]}")
    answer = [body["document_type"], body["content_length"]]
    if doc_url.endswith(_PAGED):
        shown = await session.call_tool("get_page_image", {"document_url": doc_url, "page": 1})
        page = _payload(shown)
        if shown.is_error or not page.get("bytes"):
            raise SystemExit(f"get_page_image failed on {doc_url}: {json.dumps(page)[:1000]}")
        answer.append([page["width"], page["height"]])
    return answer


async def over_stdio(command: list[str], doc_url: str, query: str, reads: list[str]) -> dict[str, Any]:
    # the whole environment: the container engine may need its own variables (CONTAINERS_CONF)
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    # the server's log lines (stderr) go to IMAGE_CHECK_STDERR, not between this script's results
    with open(os.environ.get("IMAGE_CHECK_STDERR", os.devnull), "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            answer = await _retrieve(client, doc_url, query)
            read = {url.rsplit("/", 1)[-1]: await _read(client, url) for url in reads}
            return {"server": client.server_info.name if client.server_info else None, **answer,
                    **({"read": read} if read else {})}


def _sum(metrics: str, name: str, labels: str = "") -> float:
    pattern = re.compile(rf"^{name}(\{{[^}}]*\}})? (\S+)$", re.M)
    return sum(float(value) for found, value in pattern.findall(metrics) if labels in (found or ""))


def stats(url: str) -> dict[str, Any]:
    health = httpx.get(f"{url}/health", timeout=10).json()
    metrics = httpx.get(f"{url}/metrics", timeout=10).text
    return {
        "health": health["status"], "shared_store": health.get("shared_store"),
        "retrievals": _sum(metrics, "rag_retrievals_total"),
        "builds_started": _sum(metrics, "rag_index_builds_total", 'event="started"'),
        "builds_in_flight": _sum(metrics, "rag_index_builds_in_flight"),
        "chunks_embedded": _sum(metrics, "rag_chunks_embedded_total"),
    }


def main(argv: list[str]) -> None:
    if argv[:1] == ["http"] and len(argv) == 4:
        answer = asyncio.run(over_http(argv[1], argv[2], argv[3]))
    elif argv[:1] == ["stdio"] and "--" in argv:
        split = argv.index("--")
        doc_url, query, *reads = argv[1:split]
        answer = asyncio.run(over_stdio(argv[split + 1:], doc_url, query, reads))
    elif argv[:1] == ["stats"] and len(argv) == 2:
        answer = stats(argv[1])
    else:
        raise SystemExit(__doc__)
    print(json.dumps(answer, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
