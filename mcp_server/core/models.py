"""The values the pipeline stages hand each other: frozen, keyword-only dataclasses.

fetch -> ``FetchedDocument`` -> processors -> ``ProcessedDocument`` -> chunking -> ``Chunk``
-> retrieval -> ``SearchHit``. Tools turn them into their JSON shape at the edge.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = [
    "Chunk",
    "ChunkLocation",
    "ExtractedImage",
    "ExtractedTable",
    "ExtractedURL",
    "FetchedDocument",
    "Location",
    "ProcessedDocument",
    "SearchHit",
    "TextFlag",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class FetchedDocument:
    """Bytes of one document and what the transport said about them."""

    data: bytes
    url: str  # as the caller gave it
    final_url: str  # after redirects
    content_type: str = ""  # the Content-Type header's media type, lower-case, no parameters
    charset: str | None = None  # the Content-Type header's charset parameter, if any
    filename: str = ""  # last path segment (or Content-Disposition filename)
    etag: str = ""  # the response's validators, sent back in a conditional GET when the copy is old
    last_modified: str = ""
    # bookkeeping, not identity (compare=False): the same bytes and headers are the same document
    fetched_at: float = field(default_factory=time.time, compare=False)  # epoch s: when these bytes came
    validated_at: float = field(default=0.0, compare=False)  # when the origin last confirmed them (a 304)
    sha256: str = field(init=False, repr=False)  # of ``data``; every cache and index key derives from it

    def __post_init__(self) -> None:
        # Hashed once here, not on every (warm) request that needs the content key.
        object.__setattr__(self, "sha256", hashlib.sha256(self.data).hexdigest())
        if not self.validated_at:
            object.__setattr__(self, "validated_at", self.fetched_at)

    def revalidated(self, *, at: float, etag: str = "", last_modified: str = "") -> FetchedDocument:
        """The same bytes, confirmed by the origin at ``at`` (a 304 may carry newer validators).
        Copied field by field: ``dataclasses.replace`` would hash the bytes again."""
        copy = object.__new__(FetchedDocument)
        for item in fields(self):
            object.__setattr__(copy, item.name, getattr(self, item.name))
        object.__setattr__(copy, "validated_at", at)
        object.__setattr__(copy, "etag", etag or self.etag)
        object.__setattr__(copy, "last_modified", last_modified or self.last_modified)
        return copy


@dataclass(frozen=True, kw_only=True, slots=True)
class Location:
    """Where the characters ``content[start:end]`` of a processed document come from.

    Processors emit one whenever page, slide, sheet, rows or heading path change; the spans are
    sorted by ``start`` and do not overlap.
    """

    start: int
    end: int
    page: int | None = None  # 1-based (PDF)
    slide: int | None = None  # 1-based (PPTX)
    sheet: str | None = None  # XLSX sheet name, or the CSV file name
    row_start: int | None = None  # 1-based spreadsheet rows as in the source file
    row_end: int | None = None
    heading_path: tuple[str, ...] = ()  # DOCX / HTML / Markdown headings, outermost first


@dataclass(frozen=True, kw_only=True, slots=True)
class TextFlag:
    """Something about ``content[start:end]`` a reader of the document would not see, or should know.

    ``kind``: ``hidden_text`` (on the page but invisible to a reader: a hidden run, white or tiny
    text, an off-page box), ``invisible_characters`` (code points no reader sees, removed: Unicode
    tag characters, zero-width characters inside words, bidi overrides; the span is the word they
    were removed from) or ``instructions_to_agent`` (a sentence addressed to the AI agent, with the
    detector's ``score``). Offsets are into ``ProcessedDocument.content``, the frame of
    ``ChunkLocation.start_char``; ``start == end`` where the flagged text was removed (``drop``).
    """

    kind: str
    reason: str
    start: int
    end: int
    score: float | None = None
    field: str = ""  # a metadata field (``subject``): the offsets are into its value, not the content

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "reason": self.reason, "start": self.start, "end": self.end}
        if self.score is not None:
            out["score"] = round(self.score, 4)
        if self.field:
            out["field"] = self.field
        return out

    def overlaps(self, start: int, end: int) -> bool:
        """Whether the flagged text lies (partly) in ``[start, end)``; removed text (``start == end``)
        where it stood."""
        if self.start == self.end:
            return start <= self.start < end
        return self.start < end and start < self.end


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractedTable:
    content: str  # Markdown
    table_type: str = "markdown"
    location: str = ""  # human-readable, e.g. "page 3", "sheet Sales"
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractedImage:
    ocr_text: str
    confidence: float = 0.0  # mean word confidence, 0..100
    source: str = ""  # e.g. "page 2" or the image file name
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractedURL:
    url: str
    context: str
    source_location: str = ""
    confidence: float = 0.9
    url_type: str = "general"  # api_endpoint | navigation | image | general


@dataclass(frozen=True, kw_only=True, slots=True)
class ProcessedDocument:
    content: str
    doc_type: str  # pdf | docx | pptx | xlsx | csv | html | txt | image
    metadata: dict[str, Any] = field(default_factory=dict)
    tables: tuple[ExtractedTable, ...] = ()
    images: tuple[ExtractedImage, ...] = ()
    extracted_urls: tuple[ExtractedURL, ...] = ()
    detected_language: str = "en"
    locations: tuple[Location, ...] = ()
    flags: tuple[TextFlag, ...] = ()  # sorted by start


@dataclass(frozen=True, kw_only=True, slots=True)
class ChunkLocation:
    start_char: int  # into ProcessedDocument.content
    end_char: int
    pages: tuple[int, ...] = ()
    slide: int | None = None
    sheet: str | None = None
    row_start: int | None = None
    row_end: int | None = None
    heading_path: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON shape: the character range always, the rest only where known."""
        out: dict[str, Any] = {"start_char": self.start_char, "end_char": self.end_char}
        if self.pages:
            out["pages"] = list(self.pages)
            out["page"] = self.pages[0]
        for name in ("slide", "sheet", "row_start", "row_end"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.heading_path:
            out["heading_path"] = list(self.heading_path)
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class Chunk:
    text: str
    chunk_index: int
    total_chunks: int
    token_count: int
    importance_score: float
    content_type: str  # table | list | heading | text
    doc_type: str
    location: ChunkLocation
    language: str = ""  # ISO 639-1 (text.language): the document's, or the passage's own in a mixed one
    flags: tuple[TextFlag, ...] = ()  # the document's flags on the chunk's span (document offsets)

    def document_text(self, text: str | None = None) -> str:
        """The document's characters of the chunk's span in ``text`` (default: the chunk's), which ends
        with them: a chunk continuing a table starts with the table's header rows, not in its span."""
        text = self.text if text is None else text
        span = self.location.end_char - self.location.start_char
        return text[len(text) - span:] if 0 < span <= len(text) else text


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchHit:
    chunk: Chunk
    score: float  # the final ranking score
    dense: float | None = None  # cosine similarity
    bm25: float | None = None
    rerank: float | None = None
    text: str | None = None  # expanded text when neighbours were merged in; else chunk.text
    passage_id: str = ""  # stable id of the chunk, naming its index's key (citations/passages.py); get_passage reads it
