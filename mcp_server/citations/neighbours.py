"""A hit with the chunks beside it: neighbour blocks, their location and their text joined once.

``DocumentIndex.search`` grows each hit by up to ``MAX_NEIGHBORS`` chunks each side;
``pipeline/research.py`` joins a window of chunks with the same ``merge_texts``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from mcp_server.core.models import Chunk, ChunkLocation, SearchHit

__all__ = ["expand_hits", "merge_texts", "span_location"]


def expand_hits(
    chunks: Sequence[Chunk], hits: list[SearchHit], positions: list[int], neighbors: int,
) -> list[SearchHit]:
    """Each hit (at the chunk position of the same index in ``positions``) grows by ``neighbors``
    chunks each side; blocks that touch or overlap merge into the block of the better-ranked hit,
    which keeps that hit's place."""
    last = len(chunks) - 1
    blocks: list[list[int]] = []  # [lo, hi] per output hit, in rank order
    owners: list[int] = []  # index into hits
    for i, pos in enumerate(positions):
        lo, hi = max(0, pos - neighbors), min(last, pos + neighbors)
        for block in blocks:
            if lo <= block[1] + 1 and hi >= block[0] - 1:
                block[0], block[1] = min(block[0], lo), max(block[1], hi)
                break
        else:
            blocks.append([lo, hi])
            owners.append(i)
    merged = True
    while merged:  # a grown block may now touch another one
        merged = False
        for a in range(len(blocks)):
            for b in range(a + 1, len(blocks)):
                if blocks[b][0] <= blocks[a][1] + 1 and blocks[b][1] >= blocks[a][0] - 1:
                    blocks[a] = [min(blocks[a][0], blocks[b][0]), max(blocks[a][1], blocks[b][1])]
                    del blocks[b], owners[b]
                    merged = True
                    break
            if merged:
                break
    out = []
    for (lo, hi), owner in zip(blocks, owners, strict=True):
        hit = hits[owner]
        span = chunks[lo : hi + 1]
        location = span_location(hit.chunk.location, [c.location for c in span])
        flags = tuple(sorted({f for c in span for f in c.flags}, key=lambda f: (f.start, f.end)))
        out.append(dataclasses.replace(
            hit, chunk=dataclasses.replace(hit.chunk, location=location, flags=flags), text=merge_texts(span)
        ))
    return out


def span_location(anchor: ChunkLocation, parts: Sequence[ChunkLocation]) -> ChunkLocation:
    """``anchor`` widened to the characters and pages of all ``parts`` (its own pages when they have none)."""
    pages = tuple(sorted({p for loc in parts for p in loc.pages}))
    return dataclasses.replace(
        anchor, start_char=min(p.start_char for p in parts), end_char=max(p.end_char for p in parts),
        pages=pages or anchor.pages,
    )


def merge_texts(chunks: Sequence[Chunk]) -> str:
    """Adjacent chunks joined once: the characters two chunks share are kept only once.

    Offsets decide when a chunk's text is exactly its span; otherwise the longest suffix of the
    text so far that is a prefix of the next chunk is dropped.
    """
    if not chunks:
        return ""
    text = chunks[0].text
    end = chunks[0].location.end_char
    exact = all(len(c.text) == c.location.end_char - c.location.start_char for c in chunks)
    for chunk in chunks[1:]:
        loc = chunk.location
        if exact:
            if loc.start_char >= end:
                text += ("\n" if loc.start_char > end else "") + chunk.text
            elif loc.end_char > end:
                text += chunk.text[end - loc.start_char :]
        else:
            shared = _suffix_prefix(text, chunk.text)
            sep = "" if shared else "\n"
            text += sep + chunk.text[shared:]
        end = max(end, loc.end_char)
    return text


def _suffix_prefix(a: str, b: str) -> int:
    """Length of the longest suffix of ``a`` that is a prefix of ``b`` (KMP failure function)."""
    limit = min(len(a), len(b))
    s = b[:limit] + "\0" + a[-limit:] if limit else ""
    fail = [0] * len(s)
    for i in range(1, len(s)):
        k = fail[i - 1]
        while k and s[i] != s[k]:
            k = fail[k - 1]
        if s[i] == s[k]:
            k += 1
        fail[i] = k
    return fail[-1] if s else 0
