"""The MCP server: FastMCP with every tool call routed through the guard.

``create_server(settings)`` builds a ``RagMCP`` with all tools and resources registered. Its
long-lived resources (``AppContext``) are made once: by the HTTP app's lifespan (stateless
streamable HTTP enters the MCP lifespan per request, which must stay cheap) or, for stdio and
in-memory clients, by the MCP lifespan itself.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from mcp.server.fastmcp import FastMCP
from mcp.types import CallToolRequest, ServerResult, ToolAnnotations

from mcp_server import SERVER_NAME, __version__
from mcp_server.context import AppContext, open_app_context
from mcp_server.core.settings import Settings, TimeoutClass
from mcp_server.middleware.guard import unknown_tool_error
from mcp_server.middleware.http import client_identity, transport_security_settings

__all__ = ["RagMCP", "create_server"]

F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = """\
Deterministic document tools (no LLM inside). Point them at a document URL.
- Questions about a document: retrieve_chunks(document_url, query) -> the best passages with their
  page/slide/sheet/heading location; cite those locations.
- Questions across several documents (compare, find which one): search_documents(document_urls, query)
  -> one ranking over all of them (scores compare across documents); per_document=N for comparisons,
  pages="3-7" to narrow, queries=[...] for other phrasings, max_tokens to bound the answer's size.
- Every result has a passage_id: get_passage(passage_id, before, after) returns it and up to 5
  neighbouring chunks each way, to quote or read around a hit, without downloading again.
- Row lookups in spreadsheets (XLSX/CSV): query_spreadsheet(document_url, search_value).
- Whole-document text for summaries: process_document; chunk lists: chunk_document.
- Raw per-format extraction: extract_pdf_text, extract_docx_text, extract_pptx_text,
  extract_xlsx_tables, extract_csv_tables, extract_image_text (OCR).
Errors come back as {"error", "code", "request_id"}; RATE_LIMITED carries retry_after seconds.
"""


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
        self._mcp_server.version = __version__
        self._reject_unknown_tools()

    def _reject_unknown_tools(self) -> None:
        """Answer tools/call for an unregistered name with a JSON-RPC error (-32602), as the MCP
        specification asks. The low-level handler turns every exception, McpError included, into
        an ``isError`` tool result, so the check wraps it instead of living in ``call_tool``."""
        handle_call = self._mcp_server.request_handlers[CallToolRequest]

        async def checked(request: CallToolRequest) -> ServerResult:
            if self._tool_manager.get_tool(request.params.name) is None:
                raise unknown_tool_error(request.params.name)
            return await handle_call(request)

        self._mcp_server.request_handlers[CallToolRequest] = checked

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

    def guarded_tool(
        self,
        kind: TimeoutClass,
        *,
        title: str,
        read_only: bool = True,
        idempotent: bool = True,
        open_world: bool = False,
        destructive: bool = False,
    ) -> Callable[[F], F]:
        """Register a tool whose calls go through the guard, with its timeout class and annotations."""

        def decorator(fn: F) -> F:
            self.tool_kinds[fn.__name__] = kind
            annotations = ToolAnnotations(
                title=title,
                readOnlyHint=read_only,
                idempotentHint=idempotent,
                openWorldHint=open_world,
                destructiveHint=destructive if not read_only else None,
            )
            self.tool(title=title, annotations=annotations, structured_output=True)(fn)
            return fn

        return decorator

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        context = self.get_context()
        app: AppContext = context.request_context.lifespan_context
        request = context.request_context.request
        client = client_identity(request, self.rag_settings)
        tool = self._tool_manager.get_tool(name)
        if tool is None:  # only when called directly: the protocol path is checked first
            raise unknown_tool_error(name)
        metadata = tool.fn_metadata
        context_kwargs = {tool.context_kwarg: context} if tool.context_kwarg is not None else None

        def validate() -> None:
            metadata.arg_model.model_validate(metadata.pre_parse_json(arguments or {}))

        async def invoke() -> Any:
            # Called directly (not Tool.run) so typed errors are not flattened into ToolError text.
            result = await metadata.call_fn_with_arg_validation(
                tool.fn, tool.is_async, arguments or {}, context_kwargs
            )
            return metadata.convert_result(result)

        return await app.guard.run(
            tool=name, kind=self.tool_kinds.get(name, "utility"), client=client, validate=validate,
            invoke=invoke,
        )

    def describe_tools(self) -> list[dict[str, Any]]:
        """Name, timeout class, description and parameters of every tool, from the registry."""
        described = []
        for tool in self._tool_manager.list_tools():
            params = tool.parameters.get("properties", {})
            required = set(tool.parameters.get("required", []))
            described.append({
                "name": tool.name,
                "title": tool.title,
                "class": self.tool_kinds.get(tool.name, "utility"),
                "timeout_s": self.rag_settings.timeout_for(self.tool_kinds.get(tool.name, "utility")),
                "description": (tool.description or "").strip().split("\n\n")[0],
                "parameters": {
                    key: {"type": spec.get("type", "any"), "required": key in required,
                          **({"default": spec["default"]} if "default" in spec else {})}
                    for key, spec in params.items()
                },
            })
        return described


def create_server(settings: Settings | None = None, **kwargs: Any) -> RagMCP:
    from mcp_server.resources import register_resources
    from mcp_server.tools import register_tools

    server = RagMCP(settings or Settings(), **kwargs)
    register_tools(server)
    register_resources(server)
    return server


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
