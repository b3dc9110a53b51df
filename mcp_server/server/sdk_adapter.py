"""Every use of the MCP SDK's private parts, in one module.

FastMCP has no public way to: validate a tool's arguments once and then call the function with
them (``Tool.run`` parses again and flattens typed errors into ``ToolError`` text); answer
``tools/call`` for an unknown name with a JSON-RPC error instead of an ``isError`` result, and
``resources/read`` or ``prompts/get`` for an unknown URI or name with a chosen error code instead
of 0 (FastMCP raises ``ValueError`` there, which the low-level server answers with code 0); set
the version the server reports; list the registered tools synchronously; serve the low-level
server on streams of our choosing (stdio with a claimed stdout); or answer a structured result
without the low-level handler's per-call ``jsonschema.validate`` (see ``BoundTool.call``); or name
the output schemas' dialect. ``pyproject.toml`` pins ``mcp`` to one minor release; an upgrade
re-checks this file (tests/test_server.py and tests/clients_js cover each use through real clients).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.tools import Tool
from mcp.shared.message import SessionMessage
from mcp.types import (
    CallToolRequest,
    CallToolResult,
    ContentBlock,
    GetPromptRequest,
    ReadResourceRequest,
    ServerResult,
)

__all__ = [
    "OUTPUT_SCHEMA_DIALECT",
    "BoundTool",
    "declare_output_dialect",
    "find_tool",
    "registered_tools",
    "reject_unknown_prompts",
    "reject_unknown_resources",
    "reject_unknown_tools",
    "serve_streams",
    "set_version",
]


_Request = TypeVar("_Request", CallToolRequest, ReadResourceRequest, GetPromptRequest)

# The dialect the output schemas declare. Clients check a schema against its dialect's metaschema
# on every call (the Python SDK's client does, through ``jsonschema.validate``): draft-07's is
# an order of magnitude quicker than the default 2020-12 one, whose $dynamicRef resolution is slow. Our
# schemas (pydantic's) use no keyword whose meaning differs between the two (tests check it), so
# they validate the same instances; draft-07 is also the dialect every Ajv build knows (the
# TypeScript SDK's validator), and the MCP specification lets a schema name its dialect.
OUTPUT_SCHEMA_DIALECT = "http://json-schema.org/draft-07/schema#"


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
        """The function called with ``parse``'s result; its return value converted to MCP content.

        A tool with an output schema answers a finished ``CallToolResult``, the same text and
        structured content the SDK builds: its handler passes those through without checking
        them against the schema again. That check (``jsonschema.validate``, which also checks the
        schema against its metaschema) is a large share of a warm ``retrieve_chunks`` and repeats
        what is already guaranteed: the structured content is the dump of the output model that
        ``convert_result`` validated and the schema was generated from; the SDK's client checks
        it again on arrival (every tool test calls through it)."""
        kwargs = dict(parsed)
        if self.tool.context_kwarg is not None:
            kwargs[self.tool.context_kwarg] = context
        result = self.tool.fn(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        converted = self.tool.fn_metadata.convert_result(result)
        if self.tool.output_schema is None or not isinstance(converted, tuple):
            return converted
        content, structured = converted
        blocks: list[ContentBlock] = list(content)
        return CallToolResult(content=blocks, structuredContent=structured, isError=False)


def find_tool(server: FastMCP[Any], name: str) -> BoundTool | None:
    tool = server._tool_manager.get_tool(name)
    return BoundTool(tool) if tool is not None else None


def registered_tools(server: FastMCP[Any]) -> list[BoundTool]:
    return [BoundTool(tool) for tool in server._tool_manager.list_tools()]


def declare_output_dialect(server: FastMCP[Any], dialect: str = OUTPUT_SCHEMA_DIALECT) -> None:
    """Name ``dialect`` as the ``$schema`` of every registered tool's output schema."""
    for tool in server._tool_manager.list_tools():
        schema = tool.fn_metadata.output_schema
        if schema is not None and schema.get("$schema") != dialect:
            tool.fn_metadata.output_schema = {"$schema": dialect, **schema}


def set_version(server: FastMCP[Any], version: str) -> None:
    server._mcp_server.version = version


def reject_unknown_tools(server: FastMCP[Any], error: Callable[[str], Exception]) -> None:
    """Answer tools/call for an unregistered name by raising ``error(name)`` (a JSON-RPC error).

    The low-level handler turns every exception a tool raises, McpError included, into an
    ``isError`` tool result, so the check wraps that handler instead of living in ``call_tool``."""

    def unknown(request: CallToolRequest) -> str | None:
        name = request.params.name
        return name if server._tool_manager.get_tool(name) is None else None

    _guard(server, CallToolRequest, unknown, error)


def reject_unknown_resources(server: FastMCP[Any], error: Callable[[str], Exception]) -> None:
    """Answer resources/read for a URI that is neither a resource nor matches a template by raising
    ``error(uri)``. The check only looks the URI up: a template's function runs on the read itself."""
    manager = server._resource_manager

    def unknown(request: ReadResourceRequest) -> str | None:
        uri = str(request.params.uri)
        if any(str(resource.uri) == uri for resource in manager.list_resources()):
            return None
        return None if any(template.matches(uri) for template in manager.list_templates()) else uri

    _guard(server, ReadResourceRequest, unknown, error)


def reject_unknown_prompts(server: FastMCP[Any], error: Callable[[str], Exception]) -> None:
    """Answer prompts/get for an unregistered name by raising ``error(name)``: FastMCP's own handler
    turns every exception, McpError included, into a ``ValueError`` (code 0)."""

    def unknown(request: GetPromptRequest) -> str | None:
        name = request.params.name
        return name if server._prompt_manager.get_prompt(name) is None else None

    _guard(server, GetPromptRequest, unknown, error)


def _guard(
    server: FastMCP[Any], request_type: type[_Request], unknown: Callable[[_Request], str | None],
    error: Callable[[str], Exception],
) -> None:
    """Wrap the SDK's handler of ``request_type``: a request that names something unregistered
    (``unknown`` returns the name) is answered by raising ``error(name)``, the rest by the SDK's own handler."""
    handlers = server._mcp_server.request_handlers
    handle = handlers[request_type]

    async def checked(request: _Request) -> ServerResult:
        name = unknown(request)
        if name is not None:
            raise error(name)
        return await handle(request)

    handlers[request_type] = checked


async def serve_streams(
    server: FastMCP[Any],
    read_stream: MemoryObjectReceiveStream[SessionMessage | Exception],
    write_stream: MemoryObjectSendStream[SessionMessage],
) -> None:
    """Run the MCP session on the given streams until the client closes them."""
    lowlevel = server._mcp_server
    await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
