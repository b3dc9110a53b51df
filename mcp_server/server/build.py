"""The MCP server: FastMCP with every tool call routed through the guard.

``create_server(settings)`` builds a ``RagMCP`` and registers the tools (``tools.TOOLS``, marked
with ``tools.common.tool``) and the resources. Its long-lived resources (``AppContext``) are made
once: by the HTTP app's lifespan (stateless streamable HTTP enters the MCP lifespan per request,
which must stay cheap) or, for stdio and in-memory clients, by the MCP lifespan itself. The SDK's
private parts are reached only through ``sdk_adapter``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.shared.exceptions import McpError
from mcp.types import INVALID_PARAMS, ErrorData

from mcp_server import SERVER_NAME, __version__
from mcp_server.core.settings import Settings, TimeoutClass
from mcp_server.middleware.guard import unknown_tool_error
from mcp_server.middleware.http import client_identity, transport_security_settings
from mcp_server.server.lifespan import open_app_context
from mcp_server.server.resources import register_resources, unknown_resource_error
from mcp_server.server.sdk_adapter import (
    declare_output_dialect,
    find_tool,
    registered_tools,
    reject_unknown_prompts,
    reject_unknown_resources,
    reject_unknown_tools,
    set_version,
)
from mcp_server.tools import TOOLS
from mcp_server.tools.common import spec_of
from mcp_server.tools.context import AppContext

__all__ = ["RagMCP", "create_server"]

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
- To look at a PDF page (tables, charts): get_page_image(document_url, page, passage_id=None) -> PNG.
- Row lookups in spreadsheets (XLSX/CSV): query_spreadsheet(document_url, search_value).
- Whole-document text for summaries: process_document; chunk lists: chunk_document.
- Raw per-format extraction: extract_pdf_text, extract_docx_text, extract_pptx_text,
  extract_xlsx_tables, extract_csv_tables, extract_image_text (OCR).
Errors come back as {"error", "code", "request_id"}; RATE_LIMITED carries retry_after seconds.
"""


def unknown_prompt_error(name: str) -> McpError:
    """The JSON-RPC error for prompts/get of a name the server does not have (it has no prompts)."""
    return McpError(ErrorData(code=INVALID_PARAMS, message=f"Unknown prompt: {name[:200]}", data={"name": name}))


class RagMCP(FastMCP[AppContext]):
    def __init__(self, settings: Settings, *, app_context_factory: Callable[[Settings], Any] | None = None):
        self.rag_settings = settings
        self.tool_kinds: dict[str, TimeoutClass] = {}
        self.shared_context: AppContext | None = None
        self._context_factory = app_context_factory or open_app_context
        super().__init__(
            name=SERVER_NAME,
            instructions=INSTRUCTIONS,
            lifespan=self._lifespan,
            host=settings.host,
            port=settings.port,
            streamable_http_path="/mcp",
            stateless_http=True,  # any worker can answer any request (--workers N)
            max_request_body_size=settings.max_request_body_bytes,
            transport_security=transport_security_settings(settings),
            log_level=settings.log_level,
        )
        set_version(self, __version__)
        # unknown names are the JSON-RPC errors the MCP specification asks for, not the SDK's code 0:
        # a tool or prompt name is invalid params (-32602), a resource URI is "not found" (-32002)
        reject_unknown_tools(self, unknown_tool_error)
        reject_unknown_resources(self, unknown_resource_error)
        reject_unknown_prompts(self, unknown_prompt_error)

    @asynccontextmanager
    async def _lifespan(self, _: FastMCP[AppContext]) -> AsyncIterator[AppContext]:
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

    def add_guarded_tool(self, fn: Callable[..., Any]) -> None:
        """Register a function marked with ``tools.common.tool``; its calls go through the guard."""
        spec = spec_of(fn)
        self.tool_kinds[fn.__name__] = spec.kind
        self.add_tool(fn, title=spec.title, annotations=spec.annotations(), structured_output=True)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        context = self.get_context()
        app: AppContext = context.request_context.lifespan_context
        client = client_identity(context.request_context.request, self.rag_settings)
        bound = find_tool(self, name)
        if bound is None:  # only when called directly: the protocol path is checked first
            raise unknown_tool_error(name)
        # parsed once (the guard turns a pydantic error into VALIDATION_ERROR), then called with the result
        return await app.guard.run(
            tool=name, kind=self.tool_kinds.get(name, "utility"), client=client,
            parse=lambda: bound.parse(arguments or {}), invoke=lambda parsed: bound.call(parsed, context),
        )

    def describe_tools(self) -> list[dict[str, Any]]:
        """Name, timeout class, description and parameters of every tool, from the registry."""
        described = []
        for tool in registered_tools(self):
            params = tool.parameters.get("properties", {})
            required = set(tool.parameters.get("required", []))
            described.append({
                "name": tool.name,
                "title": tool.title,
                "class": self.tool_kinds.get(tool.name, "utility"),
                "timeout_s": self.rag_settings.timeout_for(self.tool_kinds.get(tool.name, "utility")),
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
        server.add_guarded_tool(fn)
    declare_output_dialect(server)
    register_resources(server, server.describe_tools)
    return server
