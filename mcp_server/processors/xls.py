"""Excel 97-2003 (.xls, .xlt) -> XLSX by LibreOffice (``_soffice``), then read as XLSX.

Every sheet becomes a Markdown section with its header and column types, located by sheet and
rows, as for an .xlsx. A password-protected workbook is refused before conversion. Recognised by
its ``Workbook`` (or Excel 5 ``Book``) stream inside the OLE container.
"""

from __future__ import annotations

from typing import ClassVar

from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._soffice import read_converted, refuse_encrypted_ole
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.formats import Format
from mcp_server.processors.ooxml import ole_kind
from mcp_server.processors.xlsx import XlsxProcessor

__all__ = ["XlsProcessor"]


class XlsProcessor:
    format: ClassVar[Format] = Format(
        doc_type="xls",
        description="Excel 97-2003 workbooks: converted to XLSX by LibreOffice, then read as XLSX",
        extensions=(".xls", ".xlt"),
        mime_types=("application/vnd.ms-excel",),
        detect=lambda data: ole_kind(data) == "xls",
        chunking=XlsxProcessor.format.chunking,
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        refuse_encrypted_ole(doc.data)
        return read_converted(doc, options, doc_type="xls", suffix=".xls", reader=XlsxProcessor())
