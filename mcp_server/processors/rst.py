"""reStructuredText: the text as written, its section titles as heading-path locations.

A title is a line underlined (optionally also overlined) by one repeated punctuation character at
least as long as it; levels go by the order in which each adornment style first appears, as
docutils assigns them. Decoding is the shared text decoder's.
"""

from __future__ import annotations

import re
from typing import ClassVar

from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._locations import heading_locations
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.encoding import decode_bytes
from mcp_server.processors.formats import Format

__all__ = ["RstProcessor", "rst_headings"]

_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+:.<>_])\1{2,}\s*$")


def rst_headings(text: str) -> list[tuple[int, int, str]]:
    """``(offset, level, title)`` of every section title."""
    lines = text.split("\n")
    offsets, at = [], 0
    for line in lines:
        offsets.append(at)
        at += len(line) + 1
    styles: list[tuple[str, bool]] = []
    found = []
    for i in range(1, len(lines)):
        under = _ADORNMENT.match(lines[i])
        title = lines[i - 1].strip()
        if not under or not title or _ADORNMENT.match(lines[i - 1]) or len(lines[i].rstrip()) < len(title):
            continue
        over = i >= 2 and lines[i - 2].rstrip() == lines[i].rstrip()
        style = (under.group(1), over)
        if style not in styles:
            styles.append(style)
        found.append((offsets[i - 2] if over else offsets[i - 1], styles.index(style) + 1, title))
    return found


class RstProcessor:
    format: ClassVar[Format] = Format(
        doc_type="rst",
        description="reStructuredText: the text, its section titles as heading locations",
        extensions=(".rst", ".rest"),
        mime_types=("text/x-rst", "text/prs.fallenstein.rst"),
        text=True,  # no looks_like: the name or type decides
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        text, encoding = decode_bytes(doc.data, doc.charset)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        headings = rst_headings(text)
        return ProcessedDocument(content=text, doc_type="rst", locations=heading_locations(text, headings),
                                 metadata={"encoding": encoding, "heading_count": len(headings)})
