"""Both eras of the MCP protocol over streamable HTTP: the 2.x SDK client negotiates 2026-07-28 (per-request
envelope, cacheable lists), a handshake-era client (initialize at 2025-06-18, raw JSON-RPC) still lists and
calls tools, and both see the same errors."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.mcp_harness import TOOL_NAMES, ThreadedServer, http_client, make_settings, memory_client, payload

pytestmark = pytest.mark.anyio

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def open_server() -> Any:
    with ThreadedServer(make_settings(load_models=False)) as server:
        yield server


def rpc(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a response, whether the server answered JSON or one SSE event."""
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


async def test_a_2x_client_negotiates_2026_07_28_and_gets_list_results_it_may_cache(
    open_server: ThreadedServer,
) -> None:
    async with http_client(open_server.mcp_url) as client:
        tools = await client.list_tools()
        resources = await client.list_resources()
        result = await client.call_tool("detect_language", {"text": "Ceci est une phrase en français, bien sûr."})
        capabilities = client.server_capabilities
        version = client.protocol_version
    assert version == "2026-07-28"
    assert (tools.ttl_ms, tools.cache_scope) == (300_000, "public")
    assert (resources.ttl_ms, resources.cache_scope) == (300_000, "public")
    assert payload(result)["language_code"] == "fr"
    # no deprecated capability (logging, completions, experimental) and no list-changed promise
    assert capabilities.logging is None and capabilities.completions is None and not capabilities.experimental
    assert capabilities.tools is not None and not capabilities.tools.list_changed


async def test_a_2x_client_in_legacy_mode_negotiates_the_newest_handshake_version(open_server: ThreadedServer) -> None:
    async with http_client(open_server.mcp_url, mode="legacy") as client:
        version = client.protocol_version
        tools = (await client.list_tools()).tools
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool", {})
    assert version == "2025-11-25"
    assert len(tools) == len(TOOL_NAMES)
    assert unknown.value.error.code == -32602 and unknown.value.error.message == "Unknown tool: no_such_tool"


def test_a_raw_client_at_2025_06_18_initializes_lists_and_calls_tools(open_server: ThreadedServer) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}}
    with httpx.Client(base_url=open_server.base, headers=HEADERS, timeout=60) as http:
        initialized = rpc(http.post("/mcp", json=init))
        session = {"MCP-Protocol-Version": "2025-06-18"}
        notified = http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        listed = rpc(http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=session))
        called = rpc(http.post("/mcp", headers=session, json={
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "detect_language", "arguments": {"text": "Dies ist ein deutscher Satz, ganz sicher."}}}))
        bad = rpc(http.post("/mcp", headers=session, json={
            "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "detect_language", "arguments": {}}}))
    assert initialized["result"]["protocolVersion"] == "2025-06-18"
    assert initialized["result"]["serverInfo"]["name"] == "RAG Document Server"
    assert notified.status_code == 202
    assert len(listed["result"]["tools"]) == len(TOOL_NAMES)
    assert "ttlMs" not in listed["result"]  # a 2026-07-28 field, not on the 2025-06-18 wire
    assert called["result"]["structuredContent"]["language_code"] == "de"
    assert called["result"].get("isError") in (None, False)
    error = json.loads(bad["result"]["content"][0]["text"])
    assert bad["result"]["isError"] is True and error["code"] == "VALIDATION_ERROR" and error["request_id"]


async def test_the_in_memory_client_speaks_2026_07_28_and_the_handshake_era_alike() -> None:
    answers = {}
    for mode in ("auto", "legacy"):
        async with memory_client(mode=mode, load_models=False) as client:
            answers[mode] = (client.protocol_version, payload(await client.call_tool("detect_language", {"text": 7})))
    assert answers["auto"][0] == "2026-07-28" and answers["legacy"][0] == "2025-11-25"
    assert answers["auto"][1]["code"] == answers["legacy"][1]["code"] == "VALIDATION_ERROR"
