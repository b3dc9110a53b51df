"""Every use of the MCP SDK's private parts, in one module.

FastMCP has no public way to: validate a tool's arguments once and then call the function with
them (``Tool.run`` parses again and flattens typed errors into ``ToolError`` text); answer
``tools/call`` for an unknown name with a JSON-RPC error instead of an ``isError`` result, and
``resources/read`` or ``prompts/get`` for an unknown URI or name with a chosen error code instead
of 0 (FastMCP raises ``ValueError`` there, which the low-level server answers with code 0); set
the version the server reports; list the registered tools synchronously; or serve the low-level
server on streams of our choosing (stdio with a claimed stdout). ``pyproject.toml`` pins ``mcp``
to one minor release; an upgrade re-checks this file (tests/test_server.py and tests/clients_js
cover each use through real clients).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.tools import Tool
from mcp.shared.message import SessionMessage
from mcp.types import CallToolRequest, GetPromptRequest, ReadResourceRequest, ServerResult

__all__ = [
    "BoundTool",
    "find_tool",
    "registered_tools",
    "reject_unknown_prompts",
    "reject_unknown_resources",
    "reject_unknown_tools",
    "serve_streams",
    "set_version",
]


@dataclass(frozen=True, slots=True)
class BoundTool:
    """A registered tool: its listing data, argument parsing and the call of its function."""

    tool: Tool

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def title(self) -> str | None:
        return self.tool.title

    @property
    def description(self) -> str:
        return self.tool.description or ""

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments."""
        return self.tool.parameters

    def parse(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments validated against the tool's signature (raises pydantic.ValidationError)."""
        metadata = self.tool.fn_metadata
        model = metadata.arg_model.model_validate(metadata.pre_parse_json(arguments))
        return model.model_dump_one_level()

    async def call(self, parsed: dict[str, Any], context: Context[Any, Any, Any]) -> Any:
        """The function called with ``parse``'s result; its return value converted to MCP content."""
        kwargs = dict(parsed)
        if self.tool.context_kwarg is not None:
            kwargs[self.tool.context_kwarg] = context
        result = self.tool.fn(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return self.tool.fn_metadata.convert_result(result)


def find_tool(server: FastMCP[Any], name: str) -> BoundTool | None:
    tool = server._tool_manager.get_tool(name)
    return BoundTool(tool) if tool is not None else None


def registered_tools(server: FastMCP[Any]) -> list[BoundTool]:
    return [BoundTool(tool) for tool in server._tool_manager.list_tools()]


def set_version(server: FastMCP[Any], version: str) -> None:
    server._mcp_server.version = version


def reject_unknown_tools(server: FastMCP[Any], error: Callable[[str], Exception]) -> None:
    """Answer tools/call for an unregistered name by raising ``error(name)`` (a JSON-RPC error).

    The low-level handler turns every exception a tool raises, McpError included, into an
    ``isError`` tool result, so the check wraps that handler instead of living in ``call_tool``."""
    handlers = server._mcp_server.request_handlers
    handle_call = handlers[CallToolRequest]

    async def checked(request: CallToolRequest) -> ServerResult:
        if server._tool_manager.get_tool(request.params.name) is None:
            raise error(request.params.name)
        return await handle_call(request)

    handlers[CallToolRequest] = checked


def reject_unknown_resources(server: FastMCP[Any], error: Callable[[str], Exception]) -> None:
    """Answer resources/read for a URI that is neither a resource nor matches a template by raising
    ``error(uri)``. The check only looks the URI up: a template's function runs on the read itself."""
    handlers = server._mcp_server.request_handlers
    handle_read = handlers[ReadResourceRequest]
    manager = server._resource_manager

    async def checked(request: ReadResourceRequest) -> ServerResult:
        uri = str(request.params.uri)
        known = any(str(resource.uri) == uri for resource in manager.list_resources())
        if not known and not any(template.matches(uri) for template in manager.list_templates()):
            raise error(uri)
        return await handle_read(request)

    handlers[ReadResourceRequest] = checked


def reject_unknown_prompts(server: FastMCP[Any], error: Callable[[str], Exception]) -> None:
    """Answer prompts/get for an unregistered name by raising ``error(name)``: FastMCP's own handler
    turns every exception, McpError included, into a ``ValueError`` (code 0)."""
    handlers = server._mcp_server.request_handlers
    handle_get = handlers[GetPromptRequest]

    async def checked(request: GetPromptRequest) -> ServerResult:
        if server._prompt_manager.get_prompt(request.params.name) is None:
            raise error(request.params.name)
        return await handle_get(request)

    handlers[GetPromptRequest] = checked


async def serve_streams(
    server: FastMCP[Any],
    read_stream: MemoryObjectReceiveStream[SessionMessage | Exception],
    write_stream: MemoryObjectSendStream[SessionMessage],
) -> None:
    """Run the MCP session on the given streams until the client closes them."""
    lowlevel = server._mcp_server
    await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
