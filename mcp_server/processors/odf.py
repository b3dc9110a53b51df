"""OpenDocument text, spreadsheets and presentations (.odt/.ods/.odp) -> OOXML by LibreOffice.

One family, one module: each type is converted to its OOXML twin (DOCX, XLSX, PPTX) by
``_soffice`` and read by that processor, so headings, lists, tables, sheets and slides come with
the same locations as in Office files. The package first passes the OOXML zip guard (entry
count, ratio, total size, no DOCTYPE/ENTITY in any XML part); an encrypted package (its manifest
holds ``encryption-data``) is refused. Recognised by the ``mimetype`` member an OpenDocument zip
stores first and uncompressed (its name at offset 30, its value right after).
"""

from __future__ import annotations

import io
import zipfile
from typing import ClassVar

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._soffice import read_converted
from mcp_server.processors.base import DocumentInput, ProcessOptions, Processor
from mcp_server.processors.docx import DocxProcessor
from mcp_server.processors.formats import Format, Magic
from mcp_server.processors.ooxml import ENCRYPTED_MESSAGE, guard_ooxml
from mcp_server.processors.pptx import PptxProcessor
from mcp_server.processors.xlsx import XlsxProcessor

__all__ = ["OdpProcessor", "OdsProcessor", "OdtProcessor", "check_package"]

_MIME = "application/vnd.oasis.opendocument."


def _magic(kind: str) -> Magic:
    return Magic(parts=((0, b"PK\x03\x04"), (30, f"mimetype{_MIME}{kind}".encode())))


def check_package(data: bytes, options: ProcessOptions, *, doc_type: str) -> None:
    """The zip limits, then the manifest: an encrypted package is refused before LibreOffice sees it."""
    guard_ooxml(data, options, kind=doc_type.upper())
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        try:
            manifest = package.read("META-INF/manifest.xml")
        except KeyError:
            manifest = b""
    if b"encryption-data" in manifest:
        raise ProcessingError(ENCRYPTED_MESSAGE, reason="encrypted")


def _read(doc: DocumentInput, options: ProcessOptions, *, doc_type: str, reader: Processor) -> ProcessedDocument:
    check_package(doc.data, options, doc_type=doc_type)
    return read_converted(doc, options, doc_type=doc_type, suffix=f".{doc_type}", reader=reader)


class OdtProcessor:
    format: ClassVar[Format] = Format(
        doc_type="odt",
        description="OpenDocument text: converted to DOCX by LibreOffice, then read as DOCX",
        extensions=(".odt", ".ott"),
        mime_types=(f"{_MIME}text", f"{_MIME}text-template"),
        magic=(_magic("text"),),
        chunking=DocxProcessor.format.chunking,
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        return _read(doc, options, doc_type="odt", reader=DocxProcessor())


class OdsProcessor:
    format: ClassVar[Format] = Format(
        doc_type="ods",
        description="OpenDocument spreadsheets: converted to XLSX by LibreOffice, then read as XLSX",
        extensions=(".ods", ".ots"),
        mime_types=(f"{_MIME}spreadsheet", f"{_MIME}spreadsheet-template"),
        magic=(_magic("spreadsheet"),),
        chunking=XlsxProcessor.format.chunking,
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        return _read(doc, options, doc_type="ods", reader=XlsxProcessor())


class OdpProcessor:
    format: ClassVar[Format] = Format(
        doc_type="odp",
        description="OpenDocument presentations: converted to PPTX by LibreOffice, then read as PPTX",
        extensions=(".odp", ".otp"),
        mime_types=(f"{_MIME}presentation", f"{_MIME}presentation-template"),
        magic=(_magic("presentation"),),
        chunking=PptxProcessor.format.chunking,
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        return _read(doc, options, doc_type="odp", reader=PptxProcessor())
