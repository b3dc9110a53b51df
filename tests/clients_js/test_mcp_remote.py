"""mcp-remote, the stdio bridge Claude Desktop uses to reach HTTP servers, in front of the live server.

The Python SDK's stdio client drives the bridge (one session for every call), and each result is
checked by the TypeScript clients' rule: ``structuredContent``, whenever present, must match the
tool's output schema, error or not. The README's Claude Desktop entry runs the same bridge under
the Inspector (tests/clients_js/test_readme_configs.py).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent, Tool

from mcp_server.server.viewer import VIEWER_URI
from tests.clients_js._calls import BAD, GOOD, Call, error_body
from tests.clients_js._node import JS_DIR, find_node, node_env, package_bin
from tests.clients_js.conftest import API_KEY
from tests.conftest import FileServer
from tests.mcp_harness import TOOL_NAMES, ThreadedServer


@dataclass
class Bridged:
    tools: dict[str, Tool]
    resources: dict[str, str]  # uri -> text read through the bridge
    results: dict[str, CallToolResult]
    unknown_tool: MCPError | CallToolResult  # what calling a tool the server does not have gave


@contextlib.asynccontextmanager
async def bridge(url: str, home: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=str(find_node()),
        args=[str(package_bin("mcp-remote", "mcp-remote")), url, "--header", f"Authorization: Bearer {API_KEY}"],
        env=node_env(home), cwd=str(JS_DIR),
    )
    with open(home / "mcp-remote.log", "a", encoding="utf-8") as log:
        async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call_everything(url: str, home: Path, corpus: str) -> Bridged:
    with anyio.fail_after(600):
        async with bridge(url, home) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            resources = {}
            for resource in (await session.list_resources()).resources:
                content = (await session.read_resource(resource.uri)).contents[0]
                resources[str(resource.uri)] = getattr(content, "text", "")
            results = {call.id: await session.call_tool(call.tool, call.bound(corpus)) for call in GOOD + BAD}
            unknown: MCPError | CallToolResult
            try:
                unknown = await session.call_tool("no_such_tool", {})
            except MCPError as exc:
                unknown = exc
    return Bridged(tools, resources, results, unknown)


@pytest.fixture(scope="module")
def bridged(node: Path, node_home: Path, keyed_server: ThreadedServer, corpus_server: FileServer) -> Bridged:
    return anyio.run(call_everything, keyed_server.mcp_url, node_home, corpus_server.base)


def check_like_typescript(tool: Tool, result: CallToolResult) -> None:
    """The TypeScript SDK's client check (Inspector, hosts behind mcp-remote): present structured
    content must match the output schema even on errors; only errors may leave it out."""
    if result.structured_content is not None:
        jsonschema.validate(result.structured_content, tool.output_schema or {})
    else:
        assert result.is_error, f"{tool.name} declares an output schema but returned no structured content"


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.content[0].text


def test_mcp_remote_bridges_the_tool_list_and_the_three_resources(bridged: Bridged) -> None:
    assert set(bridged.tools) == TOOL_NAMES
    assert set(bridged.resources) == {"rag://supported-formats", "rag://tool-descriptions", VIEWER_URI}
    assert "globalThis.McpExtApps" in bridged.resources[VIEWER_URI]  # the citation viewer, whole
    described = json.loads(bridged.resources["rag://tool-descriptions"])["tools"]
    assert {tool["name"] for tool in described} == TOOL_NAMES


@pytest.mark.parametrize("call", GOOD, ids=lambda call: call.id)
def test_every_tool_answers_good_input_through_mcp_remote(call: Call, bridged: Bridged) -> None:
    result = bridged.results[call.id]
    assert not result.is_error, text_of(result)
    check_like_typescript(bridged.tools[call.tool], result)
    structured: Any = result.structured_content
    assert call.expect in json.dumps(structured, ensure_ascii=False)


@pytest.mark.parametrize("call", BAD, ids=lambda call: call.id)
def test_every_tool_error_crosses_mcp_remote_readable_by_typescript_clients(call: Call, bridged: Bridged) -> None:
    result = bridged.results[call.id]
    assert result.is_error
    check_like_typescript(bridged.tools[call.tool], result)
    body = error_body(text_of(result))
    assert body["code"] == call.code and call.expect in body["error"]


def test_an_unknown_tool_crosses_mcp_remote_as_a_json_rpc_invalid_params_error(bridged: Bridged) -> None:
    assert isinstance(bridged.unknown_tool, MCPError), bridged.unknown_tool
    error = bridged.unknown_tool.error
    assert error.code == INVALID_PARAMS and "Unknown tool: no_such_tool" in error.message
