"""Streamable HTTP: the SDK client against the real app on a loopback port (tools, resources, errors,
rate limits, timeouts). The HTTP guards (Host/Origin, bearer keys, body cap, non-JSON bodies) are
proved once, on every bind address, in tests/security/test_transport.py."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from mcp_server.server.build import create_server
from tests.mcp_harness import TOOL_NAMES, ThreadedServer, http_client, make_settings, payload, wait_forever

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def open_server() -> Any:
    with ThreadedServer(make_settings()) as server:
        yield server


async def test_sdk_client_lists_tools_calls_a_tool_and_reads_resources(open_server: ThreadedServer) -> None:
    async with http_client(open_server.mcp_url) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("detect_language", {"text": "Ceci est une phrase en français, bien sûr."})
        formats = await client.read_resource("rag://supported-formats")
        described = await client.read_resource("rag://tool-descriptions")
    assert len(tools) == len(TOOL_NAMES)
    assert payload(result)["language_code"] == "fr"
    assert "pdf" in formats.contents[0].text  # type: ignore[union-attr]
    assert "retrieve_chunks" in described.contents[0].text  # type: ignore[union-attr]


async def test_an_unknown_resource_is_not_found_and_an_unknown_prompt_is_invalid_params_over_http(
    open_server: ThreadedServer,
) -> None:
    async with http_client(open_server.mcp_url) as client:
        with pytest.raises(MCPError) as resource:
            await client.read_resource("rag://nope")
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("no_such_prompt")
        known = await client.read_resource("rag://supported-formats")
    assert (resource.value.error.code, resource.value.error.data) == (-32002, {"uri": "rag://nope"})
    assert "rag://nope" in resource.value.error.message
    assert (prompt.value.error.code, prompt.value.error.message) == (-32602, "Unknown prompt: no_such_prompt")
    assert "pdf" in known.contents[0].text  # type: ignore[union-attr]


async def test_bad_arguments_over_http_are_validation_errors(open_server: ThreadedServer) -> None:
    async with http_client(open_server.mcp_url) as client:
        result = await client.call_tool("detect_language", {"text": ["not", "a", "string"]})
    assert result.is_error and payload(result)["code"] == "VALIDATION_ERROR"


def test_health_and_info_answer_json(open_server: ThreadedServer) -> None:
    health = httpx.get(f"{open_server.base}/health")
    info = httpx.get(f"{open_server.base}/info")
    assert health.status_code == 200 and health.json()["ready"] is True
    body = info.json()
    assert body["name"] == "RAG Document Server" and len(body["tools"]) == len(TOOL_NAMES)
    assert any(f["doc_type"] == "pdf" for f in body["supported_formats"])


async def test_rate_limits_count_per_key_over_http() -> None:
    with ThreadedServer(make_settings(api_keys=["a", "b"], rate_limit_rpm=2)) as server:
        codes: dict[str, list[Any]] = {}
        for key in ("a", "b"):
            async with http_client(server.mcp_url, headers={"Authorization": f"Bearer {key}"}) as client:
                calls = [await client.call_tool("detect_language", {"text": "some english words"}) for _ in range(3)]
                codes[key] = [payload(call).get("code") for call in calls]
    assert codes == {"a": [None, None, "RATE_LIMITED"], "b": [None, None, "RATE_LIMITED"]}


async def test_a_slow_tool_times_out_over_http() -> None:
    server = create_server(make_settings(request_timeout=0.3))
    server.add_guarded_tool(wait_forever)

    with ThreadedServer(server.rag_settings, server) as running:
        async with http_client(running.mcp_url) as client:
            result = await client.call_tool("wait_forever", {})
    assert payload(result)["code"] == "TIMEOUT"
