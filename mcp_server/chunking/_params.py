"""Chunk parameters: adaptive sizes per document type and length, bounded by the model window.

Each format declares its base size, overlap and structure breaks (``Format.chunking``, in its
processor module); this module scales them by document length and the model window.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from mcp_server.core.errors import ValidationError
from mcp_server.processors.base import format_for
from mcp_server.processors.formats import Chunking

__all__ = ["CHUNKER_VERSION", "CHUNK_WINDOWS", "ChunkParams", "chunk_params_for"]

# Bump whenever the chunks for the same input could change: it is part of every index cache key.
CHUNKER_VERSION = "6"

# After a format's structure breaks (markers, headings: core/markup.py). Each separator must
# contain whitespace: chunks are cut only at whitespace, never inside a word.
TEXT_SEPARATORS = ("\n\n", "\n", ". ", " ")
_DEFAULT = Chunking()  # types without a registered format ("other": 1200/250)

LARGE_DOCUMENT = 100_000  # characters; larger documents get bigger chunks
SMALL_DOCUMENT = 5_000  # characters; smaller documents get smaller chunks
# English WordPiece averages a little over 4 characters per token; used only to keep the
# overlap's share of a token-bounded chunk the type's declared share, never to bound a chunk.
CHARS_PER_TOKEN = 4
# A chunk holds at most this many model windows of tokens. The dense index embeds a chunk's
# sentences (and table row groups), never the whole chunk (text/sentences.py), so a chunk
# need not fit one window; its characters are bounded by the type's declared sizes.
CHUNK_WINDOWS = 2
MIN_SIZE_OVERRIDE = 50
MAX_SIZE_OVERRIDE = 100_000


@dataclass(frozen=True, kw_only=True, slots=True)
class ChunkParams:
    """How to cut one document.

    ``chunk_size`` and ``chunk_overlap`` are characters; ``max_tokens`` is the embedding model's
    window in its own tokens, special tokens included, and wins over ``chunk_size``.
    ``separators`` are tried strongest first; ``hard_separators`` (a subset) end a chunk
    without overlap into the next one. Raises ``ValueError`` on inconsistent values.
    """

    chunk_size: int
    chunk_overlap: int
    separators: tuple[str, ...]
    max_tokens: int
    hard_separators: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {self.chunk_size}")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ValueError(f"chunk_overlap must be in [0, chunk_size), got {self.chunk_overlap}")
        if self.max_tokens < 8:
            raise ValueError(f"max_tokens must be at least 8, got {self.max_tokens}")
        for separator in self.separators:
            if not any(char.isspace() for char in separator):
                raise ValueError(f"separator {separator!r} contains no whitespace")
        if not set(self.hard_separators) <= set(self.separators):
            raise ValueError("hard_separators must be a subset of separators")

    def cache_key(self) -> str:
        """A stable string naming these parameters and the chunker version (for index caches).

        It does not name the tokenizer: callers add the embedding model's id themselves.
        """
        seps = json.dumps([list(self.separators), list(self.hard_separators)])
        digest = hashlib.sha256(seps.encode("utf-8")).hexdigest()[:12]
        return (
            f"chunker{CHUNKER_VERSION}-size{self.chunk_size}-overlap{self.chunk_overlap}"
            f"-tokens{self.max_tokens}-seps{digest}"
        )


def chunk_params_for(
    doc_type: str, content_length: int, max_tokens: int, *, size_override: int | None = None
) -> ChunkParams:
    """The adaptive parameters for a document, bounded by a ``max_tokens`` model window.

    The format's declared size and overlap (``Format.chunking``; 1200/250 for types without a
    registered format) are scaled by length: over 100,000 characters size x1.5 and overlap x1.3; under
    5,000 size / 2 (min 400) and overlap / 2 (min 50). ``size_override`` replaces the size (no
    length scaling) and keeps the type's overlap ratio. When the model window holds fewer
    characters than the size, the overlap shrinks by the same factor so that it stays the
    declared share of what a chunk really holds. Raises ``ValidationError`` for an override
    outside [50, 100000] and ``ValueError`` for a window under 8 tokens.
    """
    declared = format_for(doc_type.lower().lstrip("."))
    spec = declared.chunking if declared is not None else _DEFAULT
    base_size, base_overlap = spec.size, spec.overlap
    separators, hard = (*spec.breaks.separators, *TEXT_SEPARATORS), spec.breaks.hard

    if size_override is not None:
        if not MIN_SIZE_OVERRIDE <= size_override <= MAX_SIZE_OVERRIDE:
            raise ValidationError(
                f"chunk size must be between {MIN_SIZE_OVERRIDE} and {MAX_SIZE_OVERRIDE}",
                argument="size_override",
            )
        size = size_override
        overlap = round(size * base_overlap / base_size)
    elif content_length > LARGE_DOCUMENT:
        size, overlap = int(base_size * 1.5), int(base_overlap * 1.3)
    elif content_length < SMALL_DOCUMENT:
        size, overlap = max(base_size // 2, 400), max(base_overlap // 2, 50)
    else:
        size, overlap = base_size, base_overlap

    max_tokens *= CHUNK_WINDOWS
    window_chars = max(max_tokens - 2, 1) * CHARS_PER_TOKEN
    if size > window_chars:
        overlap = round(overlap * window_chars / size)
    overlap = min(overlap, size // 2)
    return ChunkParams(
        chunk_size=size,
        chunk_overlap=overlap,
        separators=separators,
        max_tokens=max_tokens,
        hard_separators=hard,
    )
