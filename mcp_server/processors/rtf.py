"""RTF -> DOCX by LibreOffice (``_soffice``), then read as DOCX: text, headings and tables, no
control words. Recognised by ``{\\rtf`` at the start, whatever the name or Content-Type
(RTF is ASCII, so without this it would pass for plain text)."""

from __future__ import annotations

from typing import ClassVar

from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._soffice import read_converted
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.docx import DocxProcessor
from mcp_server.processors.formats import Format, Magic

__all__ = ["RtfProcessor"]


class RtfProcessor:
    format: ClassVar[Format] = Format(
        doc_type="rtf",
        description="Rich Text Format: converted to DOCX by LibreOffice, then read as DOCX",
        extensions=(".rtf",),
        mime_types=("application/rtf", "text/rtf"),
        magic=(Magic.prefix(b"{\\rtf"),),
        chunking=DocxProcessor.format.chunking,
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        return read_converted(doc, options, doc_type="rtf", suffix=".rtf", reader=DocxProcessor())
