"""Extraction tools: raw text or tables of one format each. A document of another format is a
VALIDATION_ERROR that names what it is (process_document takes every format)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.server.fastmcp import Context

from mcp_server.fetch import validate_url
from mcp_server.tools.query import app_of
from mcp_server.tools.schemas import OcrItem, OcrResult, TablesResult, TextResult, capped, table_item

if TYPE_CHECKING:
    from mcp_server.server import RagMCP

__all__ = ["register"]

# Encrypted Office files and legacy binary Office files are OLE containers: they pass the type
# check so the processor can say "password required" or "legacy format" precisely.
OLE = "ole"


def register(server: RagMCP) -> None:
    settings = server.rag_settings

    async def text_of(ctx: Context, url: str, expect: tuple[str, ...], tool: str) -> TextResult:
        processed = await app_of(ctx).service.process(validate_url(url, settings), expect=expect, tool=tool)
        assert processed.document is not None
        text, length, truncated = capped(processed.document.content, settings.max_content_chars)
        return TextResult(text=text, char_count=length, truncated=truncated,
                          metadata=dict(processed.document.metadata))

    async def tables_of(ctx: Context, url: str, expect: tuple[str, ...], tool: str) -> TablesResult:
        processed = await app_of(ctx).service.process(validate_url(url, settings), expect=expect, tool=tool)
        assert processed.document is not None
        tables = [table_item(t, settings.max_table_chars) for t in processed.document.tables]
        return TablesResult(tables=tables, table_count=len(tables))

    @server.guarded_tool("extraction", title="Extract PDF text", open_world=True)
    async def extract_pdf_text(document_url: str, ctx: Context) -> TextResult:
        """Text of a PDF with `--- Page N ---` markers and Markdown tables; scanned pages are OCR'd."""
        return await text_of(ctx, document_url, ("pdf",), "extract_pdf_text")

    @server.guarded_tool("extraction", title="Extract DOCX text", open_world=True)
    async def extract_docx_text(document_url: str, ctx: Context) -> TextResult:
        """Text of a Word document as Markdown: headings, lists, tables, headers/footers, links."""
        return await text_of(ctx, document_url, ("docx", OLE), "extract_docx_text")

    @server.guarded_tool("extraction", title="Extract PPTX text", open_world=True)
    async def extract_pptx_text(document_url: str, ctx: Context) -> TextResult:
        """Text of a PowerPoint deck per `--- Slide N ---`: titles, bullets, tables, speaker notes."""
        return await text_of(ctx, document_url, ("pptx", OLE), "extract_pptx_text")

    @server.guarded_tool("extraction", title="Extract XLSX tables", open_world=True)
    async def extract_xlsx_tables(document_url: str, ctx: Context) -> TablesResult:
        """Every sheet of an Excel workbook as a Markdown table (first 20 rows, total stated), with
        detected header row, column types and density."""
        return await tables_of(ctx, document_url, ("xlsx", OLE), "extract_xlsx_tables")

    @server.guarded_tool("extraction", title="Extract CSV tables", open_world=True)
    async def extract_csv_tables(document_url: str, ctx: Context) -> TablesResult:
        """A CSV file (any delimiter and encoding) as a Markdown table with column analysis."""
        return await tables_of(ctx, document_url, ("csv",), "extract_csv_tables")

    @server.guarded_tool("extraction", title="Extract image text (OCR)", open_world=True)
    async def extract_image_text(image_url: str, ctx: Context) -> OcrResult:
        """OCR of an image (PNG, JPEG, TIFF, BMP, GIF, WebP) with Tesseract: text and confidence."""
        processed = await app_of(ctx).service.process(validate_url(image_url, settings, argument="image_url"),
                                                      expect=("image",),
                                                      tool="extract_image_text")
        assert processed.document is not None
        return OcrResult(ocr_results=[OcrItem(text=image.ocr_text, confidence=image.confidence,
                                              metadata={"source": image.source, **image.metadata})
                                      for image in processed.document.images])
