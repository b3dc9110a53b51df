"""DOCX -> Markdown with python-docx: headings, lists, tables, hyperlinks, headers and footers.

The body is walked in document order (paragraphs and tables interleaved). Headings become
``#``..``######`` (style "Title" is level 1, "Heading N" level N, styles based on them
included); list paragraphs become ``- item`` indented two spaces per level; tables become
Markdown tables where a merged cell's text is repeated in every grid position it covers (both
``gridSpan`` and ``vMerge``), nested tables are flattened into their cell. External hyperlinks
are written ``text (url)`` and listed in ``metadata["hyperlinks"]``. Section headers and footers
(deduplicated) come last, after a ``Headers and footers:`` line. A new ``Location`` starts
every time the heading path changes.

The reading itself is in ``_docx_read`` (python-docx), imported by the parser workers only: the
server processes, which import this module for the declaration, never load python-docx.
"""

from __future__ import annotations

import dataclasses
import io
import posixpath
import zipfile
from typing import ClassVar

from mcp_server.core.errors import MCPServerError, ProcessingError
from mcp_server.core.markup import HEADINGS
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._embedded import embedded_files
from mcp_server.processors._members import Parts, deeper, read_member
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.formats import Chunking, Format
from mcp_server.processors.ooxml import guard_ooxml

__all__ = ["DocxProcessor"]


class DocxProcessor:
    format: ClassVar[Format] = Format(
        doc_type="docx",
        description="Word documents (python-docx): headings, lists, tables, headers, links",
        extensions=(".docx", ".docm", ".dotx"),
        mime_types=(
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "application/vnd.ms-word.document.macroenabled.12",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.template",
        ),
        zip_member="word/",
        chunking=Chunking(size=1500, overlap=300, breaks=HEADINGS),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        guard_ooxml(doc.data, options, kind="DOCX")
        from mcp_server.processors import _docx_read  # python-docx: parser workers only

        try:
            read = _docx_read.read(doc.data)
        except MCPServerError:
            raise
        except Exception as exc:  # python-docx/lxml/KeyError on broken packages
            raise ProcessingError(f"the DOCX file could not be parsed: {type(exc).__name__}",
                                  reason="corrupt") from exc
        read = _with_embedded(read, doc.data, options)
        if read.content.strip():
            return read
        return dataclasses.replace(read, metadata={**read.metadata, "empty_reason": _why_empty(doc.data)})


# Pictures OCR'd in a document with no text of its own: a scan is a few pages; OCR takes ~1 s each.
_MAX_PICTURES = 20


def _with_embedded(read: ProcessedDocument, data: bytes, options: ProcessOptions) -> ProcessedDocument:
    """The document with the text of its embedded objects (a workbook, a PDF, another document)
    after its own, each under a ``## Embedded: name`` heading; objects with no text are left out.
    A document with no text of its own has its pictures read too (OCR, as an image download is):
    a scanned page pasted into Word."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:  # the guard has opened it already
        files = embedded_files(package, "word/embeddings/")
        if not read.content.strip():
            pictures = [info for info in package.infolist() if info.filename.startswith("word/media/")
                        and not info.is_dir()][:_MAX_PICTURES]
            files += [(posixpath.basename(info.filename), package.read(info)) for info in pictures]
        files = files[: options.archive_max_members]
    if not files or options.nesting >= options.archive_max_depth:
        return read
    inner = deeper(options, "embedded objects")
    parts = Parts()
    parts.add(read.content, (), read.locations)
    parts.tables.extend(read.tables)
    names = []
    for name, payload in files:
        member = read_member(payload, name, inner)
        if isinstance(member, ProcessedDocument) and member.content.strip():
            names.append(name)
            parts.add_member(f"Embedded: {name}", member, ())
    if not names:
        return read
    return dataclasses.replace(read, content=parts.content, locations=tuple(parts.locations),
                               tables=tuple(parts.tables), metadata={**read.metadata, "embedded_objects": names})


def _why_empty(data: bytes) -> str:
    """A document with no text of its own: its text may be in embedded objects (an OLE object, a
    PDF, a workbook) or its pages may be pictures; neither is read yet."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:  # the guard has opened it already
        names = package.namelist()
    if any(name.startswith("word/embeddings/") for name in names):
        return "embedded_only"
    if any(name.startswith("word/media/") for name in names):
        return "images_only"
    return "no_text"
