"""Sentence units of chunks: what the dense index embeds (a chunk scores as its best sentence).

Hand-written rather than a library splitter (nltk punkt, spaCy, pysbd): those need a model
download or cost far more per character than this regex, and a mis-split here only moves where
one embedding unit ends; it never loses text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from mcp_server.core.models import Chunk

__all__ = ["MIN_SENTENCE_CHARS", "sentence_units", "split_sentences"]

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before whitespace and
# a capital, digit or opening quote; a newline always ends one.
_BOUNDARY = re.compile(r"(?<=[.!?])([\"')\]\u201d\u2019]*)\s+(?=[\"'(\[\u201c\u2018]?[A-Z0-9])|\s*\n\s*")
# Shorter fragments ("Mr.", "Fig. 3", a bare heading) are too thin to embed alone: they join the
# following sentence (the last one joins the previous).
MIN_SENTENCE_CHARS = 20


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` as slices of it; a text without a boundary is one sentence.

    Sentences are substrings of the chunk, so each fits the model window the chunk fits.
    """
    spans: list[list[int]] = []
    pos = 0
    for match in _BOUNDARY.finditer(text):
        end = match.end(1) if match.group(1) is not None else match.start()  # keep closing quotes
        if end > pos:
            spans.append([pos, end])
        pos = match.end()
    if pos < len(text):
        spans.append([pos, len(text)])
    merged: list[list[int]] = []
    pending: int | None = None  # start of short fragments waiting for the next sentence
    for start, end in spans:
        if pending is not None:
            start, pending = pending, None
        if end - start < MIN_SENTENCE_CHARS:
            pending = start
        else:
            merged.append([start, end])
    if pending is not None:
        if merged:
            merged[-1][1] = spans[-1][1]
        else:
            merged.append([pending, spans[-1][1]])
    sentences = [text[start:end].strip() for start, end in merged]
    return [s for s in sentences if s] or [text]


def sentence_units(chunks: Sequence[Chunk]) -> tuple[list[str], np.ndarray]:
    """(sentence texts in chunk order, the owning chunk position of each): every chunk has at
    least one unit, and the owner array is non-decreasing."""
    texts: list[str] = []
    owners: list[int] = []
    for pos, chunk in enumerate(chunks):
        sentences = split_sentences(chunk.text)
        texts += sentences
        owners += [pos] * len(sentences)
    return texts, np.asarray(owners, dtype=np.int64)
