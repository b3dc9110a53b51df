"""A passage id back to its chunk, and a window of chunks around it: written once for get_passage
(``research.py``) and get_page_image (``reading.py``). The id leads to the index in memory or on
disk (``IndexManager.find``), never to a download; a malformed, unknown or stale id is a
ValidationError naming the argument."""

from __future__ import annotations

import dataclasses

from mcp_server.citations.neighbours import span_location
from mcp_server.citations.passages import PassageRef, parse_passage_id, text_checksum
from mcp_server.core.errors import ValidationError
from mcp_server.core.models import Chunk, ChunkLocation
from mcp_server.pipeline.service import DocumentService
from mcp_server.retrieval.index import DocumentIndex

__all__ = ["find_passage", "window_location"]


async def find_passage(
    service: DocumentService, pid: str, *, content_key: str | None = None,
) -> tuple[PassageRef, DocumentIndex]:
    """The passage id parsed and the index holding its chunk; ``content_key``: the id must name
    that content's index."""
    own_key = service.index_key(content_key) if content_key is not None else None
    try:
        ref = parse_passage_id(pid)
    except ValueError as exc:
        raise ValidationError(f"argument 'passage_id': {exc}", argument="passage_id") from None
    if own_key is not None and ref.key != own_key:
        raise ValidationError("argument 'passage_id' names a passage of another document (or of other bytes "
                              "at this URL)", argument="passage_id")
    index = await service.indexes.find(ref.key)
    if index is None:
        raise ValidationError(
            "argument 'passage_id': unknown or expired passage id: its document's index is neither in "
            "memory nor on disk (evicted, cleared, or made by another configuration); search the "
            "document again for a fresh id", argument="passage_id")
    if ref.position >= len(index.chunks) or text_checksum(index.chunks[ref.position].text) != ref.checksum:
        raise ValidationError(
            "argument 'passage_id': stale passage id: its index no longer holds that passage; "
            "search the document again for a fresh id", argument="passage_id")
    return ref, index


def window_location(anchor: Chunk, window: list[Chunk]) -> ChunkLocation:
    """The location of a window of adjacent chunks around ``anchor``: its characters and pages,
    the anchor's slide, sheet and heading path, the rows from the first chunk's to the last's."""
    span = span_location(anchor.location, [c.location for c in window])
    return dataclasses.replace(span, row_start=window[0].location.row_start, row_end=window[-1].location.row_end)
