"""JSON -> ``path: value`` lines (``_paths``): every value keeps its key path (``$.a.b[2]``), which
is also its location. Decoded by the shared text decoder; JSON Lines are not JSON and read as
text. Invalid JSON is a clear error naming the line and column."""

from __future__ import annotations

import json
from typing import ClassVar

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._paths import lines_document, walk
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.encoding import decode_bytes, decode_sample
from mcp_server.processors.formats import Chunking, Format, Likelihood

__all__ = ["JsonProcessor"]


def looks_like_json(data: bytes) -> Likelihood | None:
    """Opens with ``{"`` or ``[`` and ends with the matching bracket."""
    head = decode_sample(data[:512]).lstrip("\ufeff \t\r\n")
    tail = data[-64:].rstrip().decode("ascii", "ignore")
    if head.startswith("{") and head[1:].lstrip().startswith(('"', "}")) and tail.endswith("}"):
        return Likelihood.LIKELY
    if head.startswith("[") and head[1:].lstrip()[:1] in ('{', '[', '"', "]") and tail.endswith("]"):
        return Likelihood.LIKELY
    return None


class JsonProcessor:
    format: ClassVar[Format] = Format(
        doc_type="json",
        description="JSON: one `path: value` line per value, its key path as its location",
        extensions=(".json", ".geojson"),
        mime_types=("application/json", "text/json", "application/geo+json"),
        text=True,
        looks_like=looks_like_json,
        chunking=Chunking(size=1200, overlap=200, headings=False),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        text, encoding = decode_bytes(doc.data, doc.charset)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ProcessingError(f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
                                  reason="corrupt") from exc
        content, locations, count = lines_document(walk(value))
        return ProcessedDocument(content=content, doc_type="json", locations=locations,
                                 metadata={"encoding": encoding, "value_count": count})
