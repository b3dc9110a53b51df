"""Word 97-2003 (.doc, .dot) -> DOCX by LibreOffice (``_soffice``), then read as DOCX.

The DOCX reader gives headings, lists, tables, headers and footers with heading-path locations,
as for a .docx. A password-protected file is refused before conversion. Recognised by its
``WordDocument`` stream inside the OLE container, whatever its name or Content-Type.
"""

from __future__ import annotations

from typing import ClassVar

from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._soffice import read_converted, refuse_encrypted_ole
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.docx import DocxProcessor
from mcp_server.processors.formats import Format
from mcp_server.processors.ooxml import ole_kind

__all__ = ["DocProcessor"]


class DocProcessor:
    format: ClassVar[Format] = Format(
        doc_type="doc",
        description="Word 97-2003 documents: converted to DOCX by LibreOffice, then read as DOCX",
        extensions=(".doc", ".dot"),
        mime_types=("application/msword",),
        detect=lambda data: ole_kind(data) == "doc",
        chunking=DocxProcessor.format.chunking,
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        refuse_encrypted_ole(doc.data)
        return read_converted(doc, options, doc_type="doc", suffix=".doc", reader=DocxProcessor())
