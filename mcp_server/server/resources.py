"""MCP resources, generated from the registered tools and processors so they never drift."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

__all__ = ["RESOURCE_NOT_FOUND", "register_resources", "unknown_resource_error"]

# The MCP specification's code for resources/read of a URI the server does not have (the SDK names
# no constant for it).
RESOURCE_NOT_FOUND = -32002


def supported_formats() -> list[dict[str, object]]:
    from mcp_server.processors import supported_formats as registered_formats

    return [entry.describe() for entry in registered_formats()]


def unknown_resource_error(uri: str) -> MCPError:
    """The JSON-RPC error for resources/read of a URI the server does not have; ``data`` carries the
    URI as asked, the message a readable prefix of it."""
    return MCPError(code=RESOURCE_NOT_FOUND, message=f"Resource not found: {uri[:200]}", data={"uri": uri})


def register_resources(server: MCPServer[Any], describe_tools: Callable[[], list[dict[str, Any]]]) -> None:
    """``describe_tools`` lists the registered tools (``RagMCP.describe_tools``)."""

    @server.resource(
        "rag://supported-formats",
        name="supported-formats",
        description="Document formats the server processes, with extensions and MIME types.",
        mime_type="application/json",
    )
    def supported_formats_resource() -> str:
        return json.dumps({"formats": supported_formats()}, indent=2)

    @server.resource(
        "rag://tool-descriptions",
        name="tool-descriptions",
        description="Every tool with its parameters, timeout class and purpose.",
        mime_type="application/json",
    )
    def tool_descriptions_resource() -> str:
        tools = describe_tools()
        return json.dumps({"tool_count": len(tools), "tools": tools}, indent=2)
