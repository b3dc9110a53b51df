"""What a processor is: one module per format, a ``Processor`` each, picked by the registry.

A processor is pure and synchronous: bytes in, ``ProcessedDocument`` out. It runs inside a
parser worker process (``processors/sandbox.py``), never on the event loop. It raises only
``ProcessingError`` (or ``UnsupportedFormatError``); library exceptions are translated inside.
The registry of the processors (one per declared ``Format``) lives here, next to ``Processor``,
so ``formats.py`` holds declarations only and imports nothing of the processors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol

from mcp_server.core.models import ProcessedDocument
from mcp_server.core.settings import Settings
from mcp_server.core.visibility import HiddenPolicy
from mcp_server.processors.formats import Format

__all__ = [
    "DocumentInput", "ProcessOptions", "Processor", "View", "format_for", "get_processor", "register", "registered",
    "unregister",
]


# How a web page is read: its main content (the article) or the whole cleaned page.
View = Literal["main", "full"]


@dataclass(frozen=True, kw_only=True, slots=True)
class DocumentInput:
    """Bytes plus the hints the transport gave; ``doc_type`` is the sniffed type."""

    data: bytes
    doc_type: str
    filename: str = ""
    content_type: str = ""
    charset: str | None = None  # declared charset (HTTP header), may lie
    style_sheets: tuple[str, ...] = ()  # a web page's linked style sheets as fetched, in link order
    style_sheets_complete: bool = False  # every sheet the page links is among them


@dataclass(frozen=True, kw_only=True, slots=True)
class ProcessOptions:
    """The settings a parser needs, in a small picklable value (workers do not read env)."""

    ocr_languages: str = "eng"
    ocr_timeout: float = 60.0
    max_pdf_pages: int = 2000
    max_image_pixels: int = 89_478_485
    zip_max_entries: int = 10_000
    zip_max_ratio: float = 100.0
    zip_ratio_grace_bytes: int = 16 * 1024 * 1024
    zip_max_uncompressed_bytes: int = 1024 * 1024 * 1024
    max_rows_per_sheet: int = 20
    detect_language: bool = True
    office_command: str = "soffice"
    office_timeout: float = 60.0
    archive_max_depth: int = 3
    archive_max_members: int = 500
    nesting: int = 0  # how deep inside archives or messages this document is (0: the download)
    html_view: View = "main"  # a web page's main content, or the whole page
    max_html_bytes: int = 32 * 1024 * 1024
    hidden_text: HiddenPolicy = "flag"  # what becomes of text a reader cannot see (settle_document)
    pdf_cover_check_pages: int = 20  # PDFs up to this many pages are checked for text under a later shape
    pdf_layer_ocr_pages: int = 10  # scanned pages per PDF whose OCR layer is read against the scan (Tesseract)

    @classmethod
    def from_settings(cls, settings: Settings) -> ProcessOptions:
        return cls(
            ocr_languages=settings.ocr_languages,
            ocr_timeout=settings.ocr_timeout,
            max_pdf_pages=settings.max_pdf_pages,
            max_image_pixels=settings.max_image_pixels,
            zip_max_entries=settings.zip_max_entries,
            zip_max_ratio=settings.zip_max_ratio,
            zip_ratio_grace_bytes=settings.zip_ratio_grace_bytes,
            zip_max_uncompressed_bytes=settings.zip_max_uncompressed_bytes,
            max_rows_per_sheet=settings.max_rows_per_sheet,
            office_command=settings.office_command,
            office_timeout=settings.office_timeout,
            archive_max_depth=settings.archive_max_depth,
            archive_max_members=settings.archive_max_members,
            html_view=settings.html_view,
            max_html_bytes=settings.max_html_bytes,
            hidden_text=settings.hidden_text,
            pdf_cover_check_pages=settings.pdf_cover_check_pages,
            pdf_layer_ocr_pages=settings.pdf_layer_ocr_pages,
        )


class Processor(Protocol):
    """One format: its complete declaration (``processors/formats.py``) and how to parse it."""

    format: ClassVar[Format]

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument: ...


# Registration order is the order among equals; generic formats sort after specific ones.
_REGISTRY: dict[str, Processor] = {}


def register(processor: Processor) -> None:
    """Add a processor's format; raises ``ValueError`` if its type, an extension or a MIME
    type is already declared by another format (the sniffer needs one owner for each)."""
    declared = processor.format
    for other in _REGISTRY.values():
        theirs = other.format
        clash = (
            {declared.doc_type} & {theirs.doc_type}
            or set(declared.extensions) & set(theirs.extensions)
            or set(declared.mime_types) & set(theirs.mime_types)
        )
        if clash:
            raise ValueError(f"format {declared.doc_type!r} redeclares {sorted(clash)} of {theirs.doc_type!r}")
    _REGISTRY[declared.doc_type] = processor


def unregister(doc_type: str) -> None:
    _REGISTRY.pop(doc_type, None)


def registered() -> tuple[Processor, ...]:
    """The processors, specific formats first, then generic ones, each in registration order."""
    return tuple(sorted(_REGISTRY.values(), key=lambda p: p.format.generic))


def get_processor(doc_type: str) -> Processor | None:
    return _REGISTRY.get(doc_type.lower())


def format_for(doc_type: str) -> Format | None:
    processor = get_processor(doc_type)
    return processor.format if processor is not None else None
