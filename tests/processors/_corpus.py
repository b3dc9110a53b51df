"""Run one corpus file through the registry, as the tool layer does (minus the worker)."""

from __future__ import annotations

from pathlib import Path

from mcp_server.core.models import ProcessedDocument
from mcp_server.processors import DocumentInput, ProcessOptions, detect_type, process_document


def process_file(docs: Path, relative: str, **options: object) -> ProcessedDocument:
    path = docs / relative
    data = path.read_bytes()
    inp = DocumentInput(data=data, doc_type=detect_type(data, "", path.name), filename=path.name)
    return process_document(inp, ProcessOptions(**options))  # type: ignore[arg-type]
