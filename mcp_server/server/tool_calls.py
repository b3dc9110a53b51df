"""One tool call, on the SDK's public tool API: arguments validated once, then the function called.

``Tool.run`` validates the arguments itself and flattens every exception into ``ToolError`` text;
the guard needs the two steps apart (a pydantic error becomes VALIDATION_ERROR, a typed error
keeps its code), so the public halves of ``Tool.run`` are used: ``FuncMetadata.validate_arguments``,
``call_fn`` and ``convert_result``.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, InputRequiredResult
from starlette.requests import HTTPConnection

from mcp_server.core.settings import Settings
from mcp_server.middleware.http import client_identity

__all__ = ["OUTPUT_SCHEMA_DIALECT", "call_parsed", "client_of", "parse_arguments"]

# The dialect the output schemas declare. Clients check a schema against its dialect's metaschema
# (the Python SDK's client compiles a validator per schema): draft-07's is an order of magnitude
# quicker than the default 2020-12 one, whose $dynamicRef resolution is slow. Our schemas (pydantic's)
# use no keyword whose meaning differs between the two (tests check it), so they validate the same
# instances; draft-07 is also the dialect every Ajv build knows (the TypeScript SDK's validator), and
# the MCP specification lets a schema name its dialect.
OUTPUT_SCHEMA_DIALECT = "http://json-schema.org/draft-07/schema#"


def parse_arguments(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments validated against the tool's signature (raises pydantic.ValidationError)."""
    return tool.fn_metadata.validate_arguments(arguments)


async def call_parsed(tool: Tool, parsed: dict[str, Any], context: Context[Any, Any]) -> CallToolResult:
    """The function called with ``parse_arguments``' result, its return value converted to MCP content
    (text and, for a tool with an output schema, the structured content the schema describes)."""
    direct = {tool.context_kwarg: context} if tool.context_kwarg is not None else None
    result = await tool.fn_metadata.call_fn(tool.fn, tool.is_async, parsed, direct)
    converted = tool.fn_metadata.convert_result(result)
    if isinstance(converted, InputRequiredResult):  # no tool of ours asks the client for input
        raise TypeError(f"tool {tool.name!r} returned an InputRequiredResult")
    return converted


def client_of(context: Context[Any, Any], settings: Settings) -> str:
    """Who a call counts against for rate limits (``client_identity``): the HTTP request, if any."""
    request = context.request_context.request
    return client_identity(request if isinstance(request, HTTPConnection) else None, settings)
