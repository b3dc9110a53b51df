"""Org mode: the text as written, its ``*`` outline headings as heading-path locations (the
number of stars is the level; TODO keywords and tags stay in the title as written)."""

from __future__ import annotations

import re
from typing import ClassVar

from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._locations import heading_locations
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.encoding import decode_bytes
from mcp_server.processors.formats import Format

__all__ = ["OrgProcessor"]

_HEADLINE = re.compile(r"^(\*+)[ \t]+(.+?)[ \t]*$", re.MULTILINE)


class OrgProcessor:
    format: ClassVar[Format] = Format(
        doc_type="org",
        description="Org mode: the text, its outline headings as heading locations",
        extensions=(".org",),
        mime_types=("text/org", "text/x-org"),
        text=True,  # no looks_like: the name or type decides
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        text, encoding = decode_bytes(doc.data, doc.charset)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        headings = [(m.start(), len(m.group(1)), m.group(2)) for m in _HEADLINE.finditer(text)]
        return ProcessedDocument(content=text, doc_type="org", locations=heading_locations(text, headings),
                                 metadata={"encoding": encoding, "heading_count": len(headings)})
