"""YAML -> ``path: value`` lines (``_paths``), as JSON: every value keeps its key path. Read with
PyYAML's ``safe_load_all`` (no Python objects; several documents become ``$[0]``, ``$[1]``...).
Aliases are expanded lazily by the path walk, which stops at ``MAX_LINES`` values, so a
billion-laughs file is a clear error, not a memory blow-up."""

from __future__ import annotations

from typing import Any, ClassVar

import yaml

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._paths import lines_document, walk
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.encoding import decode_bytes
from mcp_server.processors.formats import Chunking, Format

__all__ = ["YamlProcessor"]


class YamlProcessor:
    format: ClassVar[Format] = Format(
        doc_type="yaml",
        description="YAML: one `path: value` line per value, its key path as its location",
        extensions=(".yaml", ".yml"),
        mime_types=("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"),
        text=True,  # no looks_like: too much plain text is valid YAML; the name or type decides
        chunking=Chunking(size=1200, overlap=200, headings=False),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        text, encoding = decode_bytes(doc.data, doc.charset)
        try:
            documents: list[Any] = list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            raise ProcessingError(f"not valid YAML: {str(exc).splitlines()[0]}", reason="corrupt") from exc
        value = documents[0] if len(documents) == 1 else documents
        content, locations, count = lines_document(walk(value))
        return ProcessedDocument(content=content, doc_type="yaml", locations=locations,
                                 metadata={"encoding": encoding, "value_count": count,
                                           "document_count": len(documents)})
