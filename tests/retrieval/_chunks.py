"""Chunk factories for retrieval tests: exact character spans, optional overlap."""

from __future__ import annotations

from collections.abc import Sequence

from mcp_server.core.models import Chunk, ChunkLocation


def make_chunks(texts: Sequence[str], *, importance: Sequence[float] | None = None,
                sep: str = "\n\n", doc_type: str = "txt", language: str | Sequence[str] = "") -> list[Chunk]:
    """Chunks laid end to end (``sep`` between them) with exact character spans; ``language``: of
    every chunk, or one per chunk."""
    languages = [language] * len(texts) if isinstance(language, str) else list(language)
    chunks, pos = [], 0
    for i, text in enumerate(texts):
        chunks.append(Chunk(
            text=text, chunk_index=i, total_chunks=len(texts), token_count=len(text.split()) + 2,
            importance_score=importance[i] if importance else 0.5, content_type="text", doc_type=doc_type,
            location=ChunkLocation(start_char=pos, end_char=pos + len(text)), language=languages[i],
        ))
        pos += len(text) + len(sep)
    return chunks


def overlapping_chunks(content: str, size: int, overlap: int) -> list[Chunk]:
    """Fixed-size windows over ``content`` that share ``overlap`` characters."""
    spans, start = [], 0
    while start < len(content):
        end = min(start + size, len(content))
        spans.append((start, end))
        if end == len(content):
            break
        start = end - overlap
    return [
        Chunk(text=content[s:e], chunk_index=i, total_chunks=len(spans), token_count=(e - s) // 4,
              importance_score=0.5, content_type="text", doc_type="txt",
              location=ChunkLocation(start_char=s, end_char=e, pages=(i // 2 + 1,)))
        for i, (s, e) in enumerate(spans)
    ]
