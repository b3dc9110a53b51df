"""A document handle: one processed document and what reading and quoting ask of it, written once
here so that ``reading.py`` does not reach into ``DocumentService``: where a span of its text is
(span -> location), the passage id of the chunk that holds a span, and the text work on it that
runs off the loop (reading windows counted with the embedder's tokenizer, quote indexes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from mcp_server.chunking._locations import LocationIndex
from mcp_server.citations.passages import passage_id
from mcp_server.core.concurrency import off_loop
from mcp_server.core.models import Chunk, ChunkLocation, Location, ProcessedDocument
from mcp_server.pipeline.read_windows import CHARS_PER_TOKEN_CAP, locations_of, read_window
from mcp_server.pipeline.service import DocumentService, Processed, View

__all__ = ["DocumentHandle"]

T = TypeVar("T")


class DocumentHandle:
    def __init__(self, service: DocumentService, processed: Processed, *, url: str, view: View | None) -> None:
        self.processed = processed
        self.url, self.view = url, view
        self._service = service
        self._locations: tuple[Location, ...] | None = None

    @classmethod
    async def open(cls, service: DocumentService, url: str, *, view: View | None = None) -> DocumentHandle:
        """The document downloaded and parsed (or taken from the caches)."""
        return cls(service, await service.process(url, view=view), url=url, view=view)

    @property
    def document(self) -> ProcessedDocument:
        return self.processed.document

    @property
    def locations(self) -> tuple[Location, ...]:
        """The document's page, slide, sheet and heading locations, read once."""
        if self._locations is None:
            self._locations = locations_of(self.document)
        return self._locations

    def locate(self, start: int, end: int) -> ChunkLocation:
        """Where a span of the document's text is: its pages, slide, sheet rows, heading path."""
        return LocationIndex(self.locations).locate(start, end)

    async def window(self, spans: Sequence[tuple[int, int]], at: int,
                     max_tokens: int) -> tuple[str, int, int, int | None]:
        """``read_window`` over ``spans`` from ``at``: (text, tokens, end, the next window's start or None)."""
        settings, counter = self._service.settings, self._service.models.token_counter
        max_chars = min(settings.max_content_chars, max_tokens * CHARS_PER_TOKEN_CAP + 64)
        return await off_loop(read_window, self.document.content, spans, at, max_tokens, counter, max_chars)

    async def passage_at(self, start: int, end: int, *, query: str) -> str | None:
        """The passage id retrieve_chunks gives the chunk holding the span. The index is looked up
        (memory, then disk) and only built when it is nowhere, as retrieve_chunks would build it for
        ``query`` (a big document: a partial index now, the complete one in the background)."""
        service = self._service
        key = service.index_key(self.processed.content_key)
        index = await service.indexes.find(key)
        if index is None:
            indexed = await service.index(self.url, query=query, view=self.view)
            index, key = indexed.view.index, indexed.view.key
        chunk = _holder(index.chunks, start, end)
        return None if chunk is None else passage_id(key, chunk.chunk_index, chunk.text)


def _holder(chunks: Sequence[Chunk], start: int, end: int) -> Chunk | None:
    """The chunk holding the span: the first that holds all of it, else the one that holds most."""
    best: Chunk | None = None
    best_overlap = 0
    for chunk in chunks:
        loc = chunk.location
        if loc.start_char <= start and end <= loc.end_char:
            return chunk
        overlap = min(end, loc.end_char) - max(start, loc.start_char)
        if overlap > best_overlap:
            best, best_overlap = chunk, overlap
    return best
