"""The MCP tools: module-level functions marked with ``tools.common.tool``.

``TOOLS`` lists them in the order clients see them; ``server.build.create_server`` registers each one
behind the guard. No tool module imports the server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_server.tools.extract import (
    extract_csv_tables,
    extract_docx_text,
    extract_image_text,
    extract_pdf_text,
    extract_pptx_text,
    extract_xlsx_tables,
)
from mcp_server.tools.query import chunk_document, process_document, query_spreadsheet, retrieve_chunks
from mcp_server.tools.reading import get_page_image, read_document, verify_quote
from mcp_server.tools.research import get_passage, search_documents
from mcp_server.tools.utility import detect_language, get_system_health, manage_cache

__all__ = ["TOOLS"]

TOOLS: tuple[Callable[..., Any], ...] = (
    process_document, chunk_document, retrieve_chunks, query_spreadsheet,
    search_documents, get_passage, read_document, verify_quote, get_page_image,
    extract_pdf_text, extract_docx_text, extract_pptx_text, extract_xlsx_tables, extract_csv_tables,
    extract_image_text,
    detect_language, get_system_health, manage_cache,
)
