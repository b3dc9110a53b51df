"""The processor registry: sniffed type -> the one processor of that format.

Adding a format is one module with a ``Processor`` class declaring its ``Format`` plus one
line in ``_PROCESSORS``. The sniffer, the chunking parameters, ``supported_formats()`` (and so
``rag://supported-formats``, the health report and the table in docs/formats.md) are generated from the
registered declarations, so nothing that lists formats can drift from what is actually parsed.

``process_document`` is synchronous and pure; the tool layer runs it in a parser worker::

    inp = document_input(fetched)                 # sniffs the type
    doc = await pool.run(process_document, inp, ProcessOptions.from_settings(settings))
"""

from __future__ import annotations

import dataclasses
import re

from mcp_server.core.errors import MCPServerError, ProcessingError, UnsupportedFormatError
from mcp_server.core.models import FetchedDocument, ProcessedDocument
from mcp_server.processors._soffice import converter_available
from mcp_server.processors._visibility import settle_document
from mcp_server.processors.archive import ZipProcessor
from mcp_server.processors.base import (
    DocumentInput,
    ProcessOptions,
    Processor,
    View,
    format_for,
    get_processor,
    register,
    registered,
    unregister,
)
from mcp_server.processors.csv import CsvProcessor
from mcp_server.processors.doc import DocProcessor
from mcp_server.processors.docx import DocxProcessor
from mcp_server.processors.eml import EmlProcessor
from mcp_server.processors.epub import EpubProcessor
from mcp_server.processors.formats import Format
from mcp_server.processors.html import HtmlProcessor
from mcp_server.processors.image import ImageProcessor
from mcp_server.processors.json import JsonProcessor
from mcp_server.processors.msg import MsgProcessor
from mcp_server.processors.odf import OdpProcessor, OdsProcessor, OdtProcessor
from mcp_server.processors.ooxml import OleProcessor
from mcp_server.processors.org import OrgProcessor
from mcp_server.processors.pdf import PdfProcessor
from mcp_server.processors.ppt import PptProcessor
from mcp_server.processors.pptx import PptxProcessor
from mcp_server.processors.rst import RstProcessor
from mcp_server.processors.rtf import RtfProcessor
from mcp_server.processors.sniff import TEXT_FALLBACK, detect_type, looks_like_text
from mcp_server.processors.text import TextProcessor
from mcp_server.processors.urls import extract_urls
from mcp_server.processors.xls import XlsProcessor
from mcp_server.processors.xlsx import XlsxProcessor
from mcp_server.processors.xml import XmlProcessor
from mcp_server.processors.yaml import YamlProcessor
from mcp_server.text.language import detect_language

__all__ = [
    "DocumentInput",
    "Format",
    "ProcessOptions",
    "Processor",
    "converter_available",
    "detect_type",
    "document_input",
    "empty_reason",
    "format_for",
    "get_processor",
    "process_document",
    "register",
    "supported_formats",
    "unregister",
    "View",
]

# One line per format; the order is the sniffer's order among equals (generic formats last).
_PROCESSORS: tuple[Processor, ...] = (
    PdfProcessor(),
    DocxProcessor(),
    PptxProcessor(),
    XlsxProcessor(),
    CsvProcessor(),
    DocProcessor(),
    XlsProcessor(),
    PptProcessor(),
    OdtProcessor(),
    OdsProcessor(),
    OdpProcessor(),
    RtfProcessor(),
    EmlProcessor(),
    MsgProcessor(),
    EpubProcessor(),
    ZipProcessor(),  # after every zip package format: it takes the zips they do not claim
    OleProcessor(),  # after every format that lives in an OLE container
    ImageProcessor(),
    JsonProcessor(),
    XmlProcessor(),
    YamlProcessor(),
    RstProcessor(),
    OrgProcessor(),
    HtmlProcessor(),
    TextProcessor(),
)
for _processor in _PROCESSORS:
    register(_processor)


def supported_formats() -> tuple[Format, ...]:
    """The registered formats, specific ones first, then the generic HTML and plain text."""
    return tuple(p.format for p in registered())


def document_input(fetched: FetchedDocument, *, doc_type: str | None = None) -> DocumentInput:
    """Sniff a download and wrap it for ``process_document``; ``doc_type``: already sniffed."""
    return DocumentInput(
        data=fetched.data,
        doc_type=doc_type or detect_type(fetched.data, fetched.content_type, fetched.filename or fetched.final_url),
        filename=fetched.filename,
        content_type=fetched.content_type,
        charset=fetched.charset,
    )


def process_document(inp: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
    """Parse with the processor of ``inp.doc_type``; settle what a reader cannot see (hidden-text
    marks and invisible code points out, flagged under ``options.hidden_text``); then fill in URLs
    and language.

    Raises ``UnsupportedFormatError`` for types without a processor (binary garbage, OLE
    containers when nothing handles them) and ``ProcessingError`` for documents that fail.
    """
    processor = get_processor(inp.doc_type)
    if processor is None:
        processor, inp = _fallback(inp)
    try:
        doc = processor.process(inp, options)
    except (MCPServerError, MemoryError):
        raise
    except RecursionError as exc:
        raise ProcessingError("the document is nested too deeply to parse", reason="too_deep",
                              doc_type=inp.doc_type) from exc
    except Exception as exc:
        # A library error the processor did not translate: still a clear, typed answer.
        raise ProcessingError(
            f"could not parse the {inp.doc_type} document ({type(exc).__name__})", doc_type=inp.doc_type
        ) from exc
    return _enrich(settle_document(doc, options.hidden_text), options)


def _fallback(inp: DocumentInput) -> tuple[Processor, DocumentInput]:
    if inp.doc_type == "ole":
        raise UnsupportedFormatError(
            "unsupported format: an OLE compound file (an Office file encrypted with a password, or "
            "contents of no known format)",
            doc_type="ole",
        )
    text = get_processor(TEXT_FALLBACK)
    if text is not None and looks_like_text(inp.data):
        return text, dataclasses.replace(inp, doc_type=TEXT_FALLBACK)
    names = ", ".join(f.doc_type for f in supported_formats())
    raise UnsupportedFormatError(
        f"unsupported format {inp.doc_type!r}: not one of the known formats ({names})",
        doc_type=inp.doc_type,
    )


# Lines that are structure, not text: a slide's or a sheet's marker, an empty heading.
_MARKERS = re.compile(r"^[ \t]*(-{3}[ \t]*Slide \d+[ \t]*-{3}|={3}[ \t]*Sheet:.*={3}|#+)[ \t]*$", re.MULTILINE)
_TEXT = re.compile(r"\w")


def empty_reason(doc: ProcessedDocument) -> str | None:
    """Why an answer holds no text (None when it holds some): the processor's own word
    (``metadata["empty_reason"]``: ``embedded_only``, ``images_only``...), else ``images_only`` when
    the document had pictures (OCR found nothing in them), else ``no_text``."""
    if _TEXT.search(_MARKERS.sub("", doc.content)):
        return None
    given = doc.metadata.get("empty_reason")
    return str(given) if given else "images_only" if doc.images else "no_text"


def _enrich(doc: ProcessedDocument, options: ProcessOptions) -> ProcessedDocument:
    changes: dict[str, object] = {}
    why = empty_reason(doc)
    if why is not None:
        changes["metadata"] = {**doc.metadata, "empty_reason": why}
    if not doc.extracted_urls and doc.content:
        changes["extracted_urls"] = extract_urls(doc.content)
    if options.detect_language and doc.detected_language == "en" and doc.content:
        changes["detected_language"] = detect_language(doc.content)
    return dataclasses.replace(doc, **changes) if changes else doc  # type: ignore[arg-type]
