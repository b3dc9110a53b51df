"""PowerPoint 97-2003 (.ppt, .pps, .pot) -> PPTX by LibreOffice (``_soffice``), then read as PPTX.

Slides come out as ``--- Slide N ---`` sections with titles, bullets, tables and speaker notes,
located by slide, as for a .pptx. A password-protected deck is refused before conversion.
Recognised by its ``PowerPoint Document`` stream inside the OLE container.
"""

from __future__ import annotations

from typing import ClassVar

from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._soffice import read_converted, refuse_encrypted_ole
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.formats import Format
from mcp_server.processors.ooxml import ole_kind
from mcp_server.processors.pptx import PptxProcessor

__all__ = ["PptProcessor"]


class PptProcessor:
    format: ClassVar[Format] = Format(
        doc_type="ppt",
        description="PowerPoint 97-2003 decks: converted to PPTX by LibreOffice, then read as PPTX",
        extensions=(".ppt", ".pps", ".pot"),
        mime_types=("application/vnd.ms-powerpoint",),
        detect=lambda data: ole_kind(data) == "ppt",
        chunking=PptxProcessor.format.chunking,
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        refuse_encrypted_ole(doc.data)
        return read_converted(doc, options, doc_type="ppt", suffix=".ppt", reader=PptxProcessor())
