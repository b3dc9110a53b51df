"""What a processor is: one module per format, a ``Processor`` each, picked by the registry.

A processor is pure and synchronous: bytes in, ``ProcessedDocument`` out. It runs inside a
parser worker process (``processors/sandbox.py``), never on the event loop. It raises only
``ProcessingError`` (or ``UnsupportedFormatError``); library exceptions are translated inside.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

from mcp_server.core.models import ProcessedDocument
from mcp_server.core.settings import Settings
from mcp_server.processors.formats import Format

__all__ = ["DocumentInput", "ProcessOptions", "Processor"]


@dataclass(frozen=True, kw_only=True, slots=True)
class DocumentInput:
    """Bytes plus the hints the transport gave; ``doc_type`` is the sniffed type."""

    data: bytes
    doc_type: str
    filename: str = ""
    content_type: str = ""
    charset: str | None = None  # declared charset (HTTP header), may lie


@dataclass(frozen=True, kw_only=True, slots=True)
class ProcessOptions:
    """The settings a parser needs, in a small picklable value (workers do not read env)."""

    ocr_languages: str = "eng"
    ocr_timeout: float = 60.0
    max_pdf_pages: int = 2000
    max_image_pixels: int = 89_478_485
    zip_max_entries: int = 10_000
    zip_max_ratio: float = 100.0
    zip_max_uncompressed_bytes: int = 1024 * 1024 * 1024
    max_rows_per_sheet: int = 20
    detect_language: bool = True

    @classmethod
    def from_settings(cls, settings: Settings) -> ProcessOptions:
        return cls(
            ocr_languages=settings.ocr_languages,
            ocr_timeout=settings.ocr_timeout,
            max_pdf_pages=settings.max_pdf_pages,
            max_image_pixels=settings.max_image_pixels,
            zip_max_entries=settings.zip_max_entries,
            zip_max_ratio=settings.zip_max_ratio,
            zip_max_uncompressed_bytes=settings.zip_max_uncompressed_bytes,
            max_rows_per_sheet=settings.max_rows_per_sheet,
        )


class Processor(Protocol):
    """One format: its complete declaration (``processors/formats.py``) and how to parse it."""

    format: ClassVar[Format]

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument: ...
