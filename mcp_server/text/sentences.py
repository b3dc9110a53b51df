"""Embedding units of chunks: what the dense index embeds (a chunk scores as its best unit).

Prose is cut into sentences; a sentence of a script without spaces between words and without a
full stop (Thai, Lao, Khmer, Myanmar) is cut further at its spaces, which end its phrases and
sentences, into units of about a sentence's length. A Markdown table is cut into groups of rows, each group under the
table's caption (its title lines and column header), because a lone row ("| Total assets |
46,455 | 47,072 |") says nothing a sentence encoder can match to a question, and one unit per
row made tables most of a filing's embedding work. Page marker lines are no content and are
left out.

Hand-written rather than a library splitter (nltk punkt, spaCy, pysbd): those need a model
download or cost far more per character than this regex, and a mis-split here only moves where
one embedding unit ends; it never loses text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import regex

from mcp_server.core.markup import title_line
from mcp_server.core.models import Chunk
from mcp_server.text.lexical import without_page_markers

__all__ = [
    "MAX_UNIT_CHARS", "MIN_SENTENCE_CHARS", "PHRASE_UNIT_CHARS", "ROW_GROUP_CHARS", "chunk_units", "sentence_spans",
    "sentence_units", "split_sentences",
]

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before whitespace and
# a capital letter of any cased script, a letter of a caseless one (Arabic, Devanagari, ...), a
# digit or an opening quote; after the full stops of scripts that need no space (CJK 。！？, the
# Devanagari danda, the Arabic question mark); a newline always ends one. The pattern matches the
# full stop itself and its group ends the sentence after it (the closers): a lookbehind for it was
# tried at every character, 3x slower for the same spans (tests/text/test_sentences.py compares).
_CLOSERS = "\"')\\]\u201d\u2019\u00bb\u300d\u300f\uff09"
_BOUNDARY = regex.compile(
    rf"[.!?]([{_CLOSERS}]*)\s+(?=[\"'(\[\u201c\u2018\u00ab]?[\p{{Lu}}\p{{Lt}}\p{{Lo}}0-9])"
    rf"|[\u3002\uff01\uff1f\u0964\u0965\u061f\u06d4]([{_CLOSERS}]*)\s*(?=\S)"
    r"|\s*\n\s*"
)
# Shorter fragments ("Mr.", "Fig. 3", a bare heading) are too thin to embed alone: they join the
# following sentence (the last one joins the previous).
MIN_SENTENCE_CHARS = 20
# Rows of one table go into units of about this many characters (plus the caption): a few rows
# of a statement fit the model window with their caption, and a table costs a few units.
ROW_GROUP_CHARS = 400
# About one MiniLM window of English prose (4 characters a token); longer units are cut.
MAX_UNIT_CHARS = 1000
# Scripts written without spaces between words (Unicode line-break class SA: Thai, Lao, Khmer,
# Myanmar, the Tai scripts) and without a full stop end a phrase or a sentence with a space, so
# the boundary pattern finds none: a paragraph would be one unit, cut only at the window. Such a
# "sentence" is cut at those spaces into units of about PHRASE_UNIT_CHARS (the other scripts'
# sentences are about as long), which the embedder reads as sharply as it reads sentences.
_PHRASE_BREAK = regex.compile(r"(?<=\p{Line_Break=SA})\s+(?=\p{Line_Break=SA})")
PHRASE_UNIT_CHARS = 250
# The caption: at most this many title lines right above the header row (``title_line``).
CAPTION_LINES = 6
_DELIMITER = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*(?::?-+:?[ \t]*)?\r?$")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` as slices of it; a text without a boundary is one sentence."""
    return [text[start:end] for start, end in sentence_spans(text)] or [text]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text``, whitespace around it left out; none in a blank text."""
    spans: list[list[int]] = []
    pos = 0
    for match in _BOUNDARY.finditer(text):
        closed = next((g for g in (1, 2) if match.group(g) is not None), None)
        end = match.end(closed) if closed is not None else match.start()  # the full stop and closers kept
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
    out = []
    for start, end in merged:
        piece = text[start:end]
        left = len(piece) - len(piece.lstrip())
        right = len(piece.rstrip())
        if right > left:
            out.append((start + left, start + right))
    return out


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _caption_lines(prose: list[str]) -> list[str]:
    """Pop the title lines of a table off the end of the prose lines above it."""
    caption: list[str] = []
    while prose and len(caption) < CAPTION_LINES:
        if not title_line(prose[-1]):
            break
        caption.insert(0, prose.pop().strip())
    return caption


def _table_units(rows: list[str], caption: list[str]) -> list[str]:
    """Row groups of one table, each under the caption and the column header."""
    if len(rows) > 1 and _DELIMITER.match(rows[1]):
        caption = [*caption, " ".join(cell for cell in _cells(rows[0]) if cell)]
        rows = rows[2:]
    head = "\n".join(line for line in caption if line)
    units: list[str] = []
    group: list[str] = []
    size = 0
    for row in rows:
        text = " ".join(cell for cell in _cells(row) if cell)
        if not text or _DELIMITER.match(row):
            continue
        if group and size + len(text) > ROW_GROUP_CHARS:
            units.append("\n".join([head, *group]).strip())
            group, size = [], 0
        group.append(text)
        size += len(text) + 1
    if group or (head and not units):
        units.append("\n".join([head, *group]).strip())
    return units


def chunk_units(text: str) -> list[str]:
    """The embedding units of one chunk's text (never empty: a blank text is its own unit)."""
    units: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        body = "\n".join(prose).strip()
        if body:
            units.extend(piece for sentence in split_sentences(body) for piece in _phrases(sentence))
        prose.clear()

    lines = without_page_markers(text).split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].lstrip().startswith("|"):
            prose.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].lstrip().startswith("|"):
            j += 1
        caption = _caption_lines(prose)
        flush()
        units.extend(_table_units(lines[i:j], caption))
        i = j
    flush()
    return [piece for unit in units if unit for piece in _fit(unit)] or [text]


def _phrases(sentence: str) -> list[str]:
    """``sentence`` cut at the spaces between words of a script without spaces between words
    (``_PHRASE_BREAK``) into pieces of at most ``PHRASE_UNIT_CHARS`` where the spaces allow (a
    longer phrase stays whole); a sentence of any other script is returned as it is."""
    if len(sentence) <= PHRASE_UNIT_CHARS:
        return [sentence]
    pieces: list[str] = []
    start, last = 0, None  # where the current piece starts; the last break seen after it
    for match in _PHRASE_BREAK.finditer(sentence):
        if last is not None and match.start() - start > PHRASE_UNIT_CHARS:
            pieces.append(sentence[start:last[0]])
            start = last[1]
        last = (match.start(), match.end())
    if last is not None and last[1] > start and len(sentence) - start > PHRASE_UNIT_CHARS:
        pieces.append(sentence[start:last[0]])
        start = last[1]
    return [*pieces, sentence[start:]]


def _fit(unit: str) -> list[str]:
    """``unit`` cut at whitespace into pieces of at most ``MAX_UNIT_CHARS`` (a chunk may hold
    more than one model window, and the model would drop what a piece holds past its window)."""
    pieces: list[str] = []
    while len(unit) > MAX_UNIT_CHARS:
        cut = unit.rfind(" ", MAX_UNIT_CHARS // 2, MAX_UNIT_CHARS + 1)
        cut = cut if cut > 0 else MAX_UNIT_CHARS
        pieces.append(unit[:cut].strip())
        unit = unit[cut:].strip()
    return [*pieces, unit] if unit else pieces


def sentence_units(chunks: Sequence[Chunk]) -> tuple[list[str], np.ndarray]:
    """(unit texts in chunk order, the owning chunk position of each): every chunk has at least
    one unit, and the owner array is non-decreasing."""
    texts: list[str] = []
    owners: list[int] = []
    for pos, chunk in enumerate(chunks):
        units = chunk_units(chunk.text)
        texts += units
        owners += [pos] * len(units)
    return texts, np.asarray(owners, dtype=np.int64)
