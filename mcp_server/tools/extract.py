"""Extraction tools: raw text or tables of one format each. A document of another format is a
VALIDATION_ERROR that names what it is (process_document takes every format)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from mcp_server.fetch import validate_url
from mcp_server.pipeline.flags import document_flags
from mcp_server.pipeline.service import Processed
from mcp_server.tools.common import DocumentUrl, app_of, tool
from mcp_server.tools.schemas import (
    MAX_DOCUMENT_FLAGS,
    OcrItem,
    OcrResult,
    TablesResult,
    TextResult,
    capped,
    flag_counts,
    flag_items,
    table_item,
)

__all__ = [
    "extract_csv_tables", "extract_docx_text", "extract_image_text", "extract_pdf_text", "extract_pptx_text",
    "extract_xlsx_tables",
]

# Encrypted Office files and legacy binary Office files are OLE containers: they pass the type
# check so the processor can say "password required" or "legacy format" precisely.
OLE = "ole"


async def _process(ctx: Context, url: str, expect: tuple[str, ...], tool_name: str,
                   argument: str = "document_url") -> Processed:
    app = app_of(ctx)
    return await app.service.process(validate_url(url, app.settings, argument=argument), expect=expect,
                                     tool=tool_name)


async def _text_of(ctx: Context, url: str, expect: tuple[str, ...], tool_name: str) -> TextResult:
    document = (await _process(ctx, url, expect, tool_name)).document
    text, length, truncated = capped(document.content, app_of(ctx).settings.max_content_chars)
    # the metadata's flags (text an agent reads too) and the returned text's: no sentence past the cap is scored
    flags = await document_flags(app_of(ctx).service.flagger, document, upto=len(text))
    return TextResult(text=text, char_count=length, truncated=truncated, metadata=dict(document.metadata),
                      flags=flag_items(flags[:MAX_DOCUMENT_FLAGS]), flag_counts=flag_counts(flags))


async def _tables_of(ctx: Context, url: str, expect: tuple[str, ...], tool_name: str) -> TablesResult:
    document = (await _process(ctx, url, expect, tool_name)).document
    limit = app_of(ctx).settings.max_table_chars
    tables = [table_item(t, limit) for t in document.tables]
    return TablesResult(tables=tables, table_count=len(tables))


# the text tools' and the table tools' rows in the tool tables (scripts/config_docs.py docs)
_TEXT_SUMMARY = "the plain text of one format"
_TEXT_RETURNS = "`{text (<= 50k), char_count, truncated, metadata, flags[], flag_counts}`"
_TABLES_SUMMARY = "the tables of a workbook or CSV"
_TABLES_RETURNS = ("`{tables[{content (<= 5k), content_length, truncated, table_type, location, metadata}], "
                   "table_count}`")


@tool("extraction", title="Extract PDF text", open_world=True,
      summary=_TEXT_SUMMARY, returns=_TEXT_RETURNS)
async def extract_pdf_text(document_url: DocumentUrl, ctx: Context) -> TextResult:
    """Text of a PDF with `--- Page N ---` markers and Markdown tables; scanned pages are OCR'd."""
    return await _text_of(ctx, document_url, ("pdf",), "extract_pdf_text")


@tool("extraction", title="Extract DOCX text", open_world=True,
      summary=_TEXT_SUMMARY, returns=_TEXT_RETURNS)
async def extract_docx_text(document_url: DocumentUrl, ctx: Context) -> TextResult:
    """Text of a Word document as Markdown: headings, lists, tables, headers/footers, links."""
    return await _text_of(ctx, document_url, ("docx", "doc", "odt", "rtf", OLE), "extract_docx_text")


@tool("extraction", title="Extract PPTX text", open_world=True,
      summary=_TEXT_SUMMARY, returns=_TEXT_RETURNS)
async def extract_pptx_text(document_url: DocumentUrl, ctx: Context) -> TextResult:
    """Text of a PowerPoint deck per `--- Slide N ---`: titles, bullets, tables, speaker notes."""
    return await _text_of(ctx, document_url, ("pptx", "ppt", "odp", OLE), "extract_pptx_text")


@tool("extraction", title="Extract XLSX tables", open_world=True,
      summary=_TABLES_SUMMARY, returns=_TABLES_RETURNS)
async def extract_xlsx_tables(document_url: DocumentUrl, ctx: Context) -> TablesResult:
    """Every sheet of an Excel workbook as a Markdown table (first 20 rows, total stated), with
    detected header row, column types and density."""
    return await _tables_of(ctx, document_url, ("xlsx", "xls", "ods", OLE), "extract_xlsx_tables")


@tool("extraction", title="Extract CSV tables", open_world=True,
      summary=_TABLES_SUMMARY, returns=_TABLES_RETURNS)
async def extract_csv_tables(document_url: DocumentUrl, ctx: Context) -> TablesResult:
    """A CSV file (any delimiter and encoding) as a Markdown table with column analysis."""
    return await _tables_of(ctx, document_url, ("csv",), "extract_csv_tables")


@tool("extraction", title="Extract image text (OCR)", open_world=True,
      summary="OCR of an image, with confidences",
      returns="`{ocr_results[{text, confidence, metadata}]}`")
async def extract_image_text(
    image_url: Annotated[str, Field(min_length=1, description="http(s) URL of the image; the server downloads it "
                                                              "(private and local network addresses are refused "
                                                              "unless allowlisted).")],
    ctx: Context,
) -> OcrResult:
    """OCR of an image (PNG, JPEG, TIFF, BMP, GIF, WebP) with Tesseract: text and confidence."""
    document = (await _process(ctx, image_url, ("image",), "extract_image_text", argument="image_url")).document
    return OcrResult(ocr_results=[OcrItem(text=image.ocr_text, confidence=image.confidence,
                                          metadata={"source": image.source, **image.metadata})
                                  for image in document.images])
