"""``chunk_document``: a processed document in, cited chunks that fit the embedder out."""

from __future__ import annotations

import numpy as np

from mcp_server.chunking._layout import Layout, build_layout
from mcp_server.chunking._locations import LocationIndex, infer_locations, structure_cuts
from mcp_server.chunking._params import CHUNK_WINDOWS, ChunkParams
from mcp_server.chunking._scoring import content_type, importance_score
from mcp_server.chunking._splitter import Span, Splitter
from mcp_server.chunking._tokens import TokenCounter
from mcp_server.core.models import Chunk, ChunkLocation, ProcessedDocument, TextFlag
from mcp_server.text.language import dominant_script, passage_languages

__all__ = ["chunk_document"]

# Per-word sums may fall a token or two short of a SentencePiece count (``TokenCounter``): chunks
# estimated above this share of the budget are counted for real.
NEAR_BUDGET = 0.95


def chunk_document(doc: ProcessedDocument, params: ChunkParams, counter: TokenCounter) -> list[Chunk]:
    """Cut ``doc.content`` into chunks of at most ``params.max_tokens`` model tokens.

    Pure and deterministic. Every chunk's text is stripped and is exactly
    ``doc.content[start_char:end_char]`` - except a chunk that starts inside a Markdown table
    body: its text is the table's header and delimiter rows, a newline, then that slice, while
    ``start_char``/``end_char`` still give the span of the rows it covers. Chunks start and end
    at whitespace; only a single "word" longer than a whole chunk is cut inside (into the
    longest pieces that fit). A chunk never spans two slides or sheets. Locations come from
    ``doc.locations``, or from the content's markers when the processor gave none.

    Returns ``[]`` for blank content. Raises ``ValueError`` when ``params.max_tokens`` exceeds
    ``CHUNK_WINDOWS`` model windows (``counter.max_tokens``).
    """
    if params.max_tokens > counter.max_tokens * CHUNK_WINDOWS:
        raise ValueError(f"params.max_tokens {params.max_tokens} exceeds {CHUNK_WINDOWS} x the model's "
                         f"{counter.max_tokens}")
    content = doc.content
    if not content.strip():
        return []

    locations = tuple(sorted(doc.locations, key=lambda loc: loc.start)) or infer_locations(
        content, doc.doc_type
    )
    layout = build_layout(content, params, counter)
    segments = _segments(layout, structure_cuts(locations))

    splitter = Splitter(content, layout, params)
    spans = [span for first, stop in segments for span in splitter.split(first, stop)]
    texts = [splitter.text(span) for span in spans]
    if getattr(counter, "splits_on_whitespace", False):
        counts = [splitter.estimate(span) for span in spans]  # exact for WordPiece, within a token or two else
        near = [i for i, count in enumerate(counts) if count > params.max_tokens * NEAR_BUDGET]
        for i, count in zip(near, counter.count_tokens([texts[i] for i in near]), strict=True):
            counts[i] = count  # a chunk at the budget is counted for real: the check below needs it exact
    else:
        counts = counter.count_tokens(texts)
    if any(count > params.max_tokens for count in counts):
        # Only tokenizers that merge text across whitespace get here (never WordPiece):
        # redo the cut, checking each chunk with the real tokenizer as it is made.
        def measure(span: Span) -> int:
            return counter.count_tokens([splitter.text(span)])[0]

        checked = Splitter(content, layout, params, measure=measure)
        spans = [span for first, stop in segments for span in checked.split(first, stop)]
        texts = [splitter.text(span) for span in spans]
        counts = counter.count_tokens(texts)

    where = LocationIndex(locations)
    total = len(spans)
    languages = passage_languages(texts, doc.detected_language, dominant_script(content))
    chunk_locations = [where.locate(int(layout.starts[span.first]), int(layout.ends[span.last])) for span in spans]
    return [
        Chunk(
            text=text,
            chunk_index=index,
            total_chunks=total,
            token_count=count,
            importance_score=importance_score(text),
            content_type=content_type(text),
            doc_type=doc.doc_type,
            location=location,
            language=language,
            flags=_flags_on(doc.flags, location),
        )
        for index, (location, text, count, language) in enumerate(
            zip(chunk_locations, texts, counts, languages, strict=True))
    ]


def _flags_on(flags: tuple[TextFlag, ...], location: ChunkLocation) -> tuple[TextFlag, ...]:
    """The document's flags on the chunk's span (few per document: a scan is enough)."""
    if not flags:
        return ()
    return tuple(f for f in flags if not f.field and f.overlaps(location.start_char, location.end_char))


def _segments(layout: Layout, cuts: list[int]) -> list[tuple[int, int]]:
    """Atom ranges [first, stop) between the structure cuts (slide or sheet changes)."""
    bounds = np.searchsorted(layout.starts, np.array(cuts, dtype=np.int64), side="left").tolist()
    edges = sorted({0, layout.size, *bounds})
    return [(first, stop) for first, stop in zip(edges, edges[1:], strict=False) if stop > first]
