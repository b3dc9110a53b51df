"""Plain text (and Markdown): decode with the right encoding, keep the text as it is.

Decoding is the shared decoder's (``processors/encoding.py``): a BOM, strict UTF-8, the
declared charset, then detection among legacy code pages. Bytes no encoding explains are
refused rather than returned as mojibake. Markdown headings become heading-path locations.
"""

from __future__ import annotations

from typing import ClassVar

from mcp_server.core.markup import markdown_headings
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._locations import heading_locations
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.encoding import decode_bytes
from mcp_server.processors.formats import Format

__all__ = ["TextProcessor"]


class TextProcessor:
    format: ClassVar[Format] = Format(
        doc_type="txt",
        description="Plain text and Markdown; encoding detected (BOMs, UTF-8, legacy code pages)",
        extensions=(".txt", ".text", ".md", ".markdown", ".log"),
        mime_types=("text/plain", "text/markdown"),
        text=True,  # no looks_like: text that no other text format claims is plain text
        generic=True,
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        text, encoding = decode_bytes(doc.data, doc.charset)
        # One newline convention, so character offsets mean the same everywhere downstream.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        return ProcessedDocument(
            content=text,
            doc_type="txt",
            metadata={"encoding": encoding, "char_count": len(text), "line_count": len(text.splitlines())},
            locations=heading_locations(text, markdown_headings(text)),
        )
