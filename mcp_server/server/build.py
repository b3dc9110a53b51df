"""The MCP server: the SDK's ``MCPServer`` with every tool call routed through the guard.

``create_server(settings)`` builds a ``RagMCP`` and registers the tools (``tools.TOOLS``, marked
with ``tools.common.tool``) and the resources. Its long-lived resources (``AppContext``) are made
once: by the HTTP app's lifespan, or, for stdio and in-memory clients, by the MCP lifespan itself.

Only the SDK's public surface is used. The tool registry is ours (``mcp.server.mcpserver.tools.Tool``,
built with ``Tool.from_function``); ``MCPServer``'s tools/call, tools/list, resources/read and
prompts/get handlers delegate to its public ``call_tool``, ``list_tools``, ``read_resource`` and
``get_prompt``, which ``RagMCP`` overrides: a call goes through ``ToolGuard`` (request id, rate limit,
argument validation, timeout, error shape, metrics), and an unknown tool, resource or prompt is the
JSON-RPC error the MCP specification asks for, not the SDK's (``-32602`` for a name, ``-32002`` for a
resource URI).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.caching import CacheHint
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, GetPromptResult, InputRequiredResult
from mcp.types import Tool as MCPTool
from pydantic import AnyUrl

from mcp_server import SERVER_NAME, __version__
from mcp_server.core.settings import Settings, TimeoutClass
from mcp_server.middleware.guard import unknown_tool_error
from mcp_server.server.lifespan import open_app_context
from mcp_server.server.resources import register_resources, unknown_resource_error
from mcp_server.server.tool_calls import OUTPUT_SCHEMA_DIALECT, call_parsed, client_of, parse_arguments
from mcp_server.server.viewer import citation_viewer, viewer_meta
from mcp_server.tools import TOOLS
from mcp_server.tools.common import spec_of
from mcp_server.tools.context import AppContext

__all__ = ["LIST_CACHE_HINT", "RagMCP", "create_server"]

INSTRUCTIONS = """\
Deterministic document tools (no LLM inside). Point them at a document URL.
- Questions about a document: retrieve_chunks(document_url, query) -> the best passages with their
  page/slide/sheet/heading location; cite those locations.
- Questions across several documents (compare, find which one): search_documents(document_urls, query)
  -> one ranking over all of them (scores compare across documents); per_document=N for comparisons,
  pages="3-7" to narrow, queries=[...] for other phrasings, max_tokens to bound the answer's size.
- Every result has a passage_id: get_passage(passage_id, before, after) returns it and up to 5
  neighbouring chunks each way, to quote or read around a hit, without downloading again.
- Reading a whole document page by page: read_document(document_url, pages="3-7", max_tokens=4000)
  -> text cut at paragraph ends, its location and next_cursor (pass it back as cursor to read on).
- Before citing a sentence: verify_quote(document_url, quote) -> exact / close (with the document's
  own wording) / none, and the passage_id and page where it stands.
- To look at a page or slide (tables, charts): get_page_image(document_url, page, passage_id=None) -> PNG.
- Row lookups in spreadsheets (XLSX/CSV): query_spreadsheet(document_url, search_value).
- Whole-document text for summaries: process_document; chunk lists: chunk_document.
- Raw per-format extraction: extract_pdf_text, extract_docx_text, extract_pptx_text,
  extract_xlsx_tables, extract_csv_tables, extract_image_text (OCR).
Errors come back as {"error", "code", "request_id"}; RATE_LIMITED carries retry_after seconds.
"""

# The lists (tools, resources, their templates, prompts) and the two resources change only with a
# new release: a 2026-07-28 client may keep them five minutes, and share them across credentials
# (every caller sees the same ones). Handshake-era clients get no hint (their results have no field).
LIST_CACHE_HINT = CacheHint(ttl_ms=300_000, scope="public")
_CACHEABLE = ("tools/list", "resources/list", "resources/templates/list", "prompts/list", "resources/read",
              "server/discover")


def unknown_prompt_error(name: str) -> MCPError:
    """The JSON-RPC error for prompts/get of a name the server does not have (it has no prompts)."""
    return MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name[:200]}", data={"name": name})


class RagMCP(MCPServer[AppContext]):
    def __init__(self, settings: Settings, *, app_context_factory: Callable[[Settings], Any] | None = None):
        self.rag_settings = settings
        self.tool_kinds: dict[str, TimeoutClass] = {}
        self.tools: dict[str, Tool] = {}
        self.shared_context: AppContext | None = None
        self._context_factory = app_context_factory or open_app_context
        super().__init__(
            name=SERVER_NAME,
            version=__version__,
            instructions=INSTRUCTIONS,
            lifespan=self._lifespan,
            log_level=settings.log_level,
            cache_hints=dict.fromkeys(_CACHEABLE, LIST_CACHE_HINT),  # type: ignore[arg-type]
            subscriptions=False,  # the lists never change while the server runs: nothing to listen for
            extensions=[citation_viewer()],  # the MCP App beside retrieve_chunks, search_documents, get_passage
        )

    @asynccontextmanager
    async def _lifespan(self, _: MCPServer[AppContext]) -> AsyncIterator[AppContext]:
        if self.shared_context is not None:
            yield self.shared_context
            return
        async with self._context_factory(self.rag_settings) as context:
            yield context

    @asynccontextmanager
    async def app_context(self) -> AsyncIterator[AppContext]:
        """Open the long-lived resources once and share them with every request (HTTP mode)."""
        async with self._context_factory(self.rag_settings) as context:
            self.shared_context = context
            try:
                yield context
            finally:
                self.shared_context = None

    def add_guarded_tool(self, fn: Callable[..., Any], *, meta: dict[str, Any] | None = None) -> None:
        """Register a function marked with ``tools.common.tool``; its calls go through the guard."""
        spec = spec_of(fn)
        tool = Tool.from_function(fn, title=spec.title, annotations=spec.annotations(), meta=meta,
                                  structured_output=True)
        for parameter, setting in spec.max_items:  # the signature holds the ceiling; the schema the setting
            tool.parameters["properties"][parameter]["maxItems"] = getattr(self.rag_settings, setting)
        schema = tool.fn_metadata.output_schema
        if schema is not None and schema.get("$schema") != OUTPUT_SCHEMA_DIALECT:
            tool.fn_metadata.output_schema = {"$schema": OUTPUT_SCHEMA_DIALECT, **schema}
        self.tools[tool.name] = tool
        self.tool_kinds[tool.name] = spec.kind

    async def list_tools(self) -> list[MCPTool]:
        return [
            MCPTool(name=tool.name, title=tool.title, description=tool.description, input_schema=tool.parameters,
                    output_schema=tool.fn_metadata.output_schema, annotations=tool.annotations, icons=tool.icons,
                    _meta=tool.meta)
            for tool in self.tools.values()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[AppContext, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self.tools.get(name)
        if tool is None:
            raise unknown_tool_error(name)
        if context is None:  # the long-lived resources live in the request's lifespan context
            raise RuntimeError("RagMCP.call_tool runs inside a request: the SDK's handler passes its Context")
        app: AppContext = context.request_context.lifespan_context
        # parsed once (the guard turns a pydantic error into VALIDATION_ERROR), then called with the result
        result: CallToolResult = await app.guard.run(
            tool=name, kind=self.tool_kinds.get(name, "utility"), client=client_of(context, self.rag_settings),
            parse=lambda: parse_arguments(tool, arguments or {}),
            invoke=lambda parsed: call_parsed(tool, parsed, context),
        )
        return result

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[AppContext, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        try:
            return await super().read_resource(uri, context)
        except ResourceNotFoundError:
            raise unknown_resource_error(str(uri)) from None

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[AppContext, Any] | None = None
    ) -> GetPromptResult | InputRequiredResult:
        if all(prompt.name != name for prompt in await self.list_prompts()):
            raise unknown_prompt_error(name)
        return await super().get_prompt(name, arguments, context)

    def describe_tools(self) -> list[dict[str, Any]]:
        """Name, timeout class, description and parameters of every tool, from the registry."""
        described = []
        for tool in self.tools.values():
            params = tool.parameters.get("properties", {})
            required = set(tool.parameters.get("required", []))
            kind = self.tool_kinds.get(tool.name, "utility")
            described.append({
                "name": tool.name,
                "title": tool.title,
                "class": kind,
                "timeout_s": self.rag_settings.timeout_for(kind),
                "description": tool.description.strip().split("\n\n")[0],
                "parameters": {
                    key: {"type": spec.get("type", "any"), "required": key in required,
                          **({"default": spec["default"]} if "default" in spec else {})}
                    for key, spec in params.items()
                },
            })
        return described


def create_server(settings: Settings | None = None, **kwargs: Any) -> RagMCP:
    server = RagMCP(settings or Settings(), **kwargs)
    for fn in TOOLS:
        server.add_guarded_tool(fn, meta=viewer_meta(fn.__name__))
    register_resources(server, server.describe_tools)
    return server
