"""Template passages of a document: text that repeats a form rather than saying something.

Two kinds, found from the document's own text (no list of phrases):

- near-duplicates: a chunk whose word 5-gram shingles overlap another chunk's by a Jaccard of
  DUPLICATE_JACCARD or more (certifications signed by two officers, a disclaimer on every
  section, a boilerplate paragraph repeated per segment). Numbers count as words, so two
  statement tables of different periods are not duplicates;
- index pages: a table of contents or an exhibit index, lines that each end with a page number
  (ascending down the page) or start with a dotted entry number (INDEX_LINES of them or more).

Ranking gives them a prior (``ranking.TEMPLATE_PRIOR``): they stop crowding the head of a
ranking, yet a question that asks for them ("who certified the report?") still finds them,
since their own match outranks the prior.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from mcp_server.core.markup import MARKER_LINE

__all__ = ["DUPLICATE_JACCARD", "INDEX_LINES", "SHINGLE", "template_mask"]

SHINGLE = 5  # words per shingle
DUPLICATE_JACCARD = 0.5
MIN_SHINGLES = 20  # shorter chunks (a heading, a lone row) are too short to call duplicates
INDEX_LINES = 0.6  # share of a chunk's lines that are index entries
MIN_INDEX_LINES = 5
_COMMON_SHINGLE = 50  # a shingle in more chunks than this is a phrase, not a copied passage

_WORDS = re.compile(r"\w+")
_NUMBER = re.compile(r"\d[\d,.]*")
MAX_ENTRY_CHARS = 150  # an index entry is one short line
# "Management's Discussion ....... 35", "Item 7. | Management's Discussion | 35": words, then a page number
_ENDS_WITH_PAGE = re.compile(r"[^\W\d_].*[\s|.](\d{1,3})$")
# "31.1 | Certification of ...", "10.2* Agreement ...": a dotted entry number, then words
_STARTS_WITH_ENTRY = re.compile(r"^\d{1,3}\.\d{1,3}[A-Za-z]?\W*\s+[^\W\d_]")


def template_mask(texts: Sequence[str]) -> np.ndarray:
    """Per text, whether it is a template passage (a near-duplicate of another, or an index page)."""
    mask = _near_duplicates(texts)
    for i, text in enumerate(texts):
        if not mask[i] and _index_page(text):
            mask[i] = True
    return mask


def _near_duplicates(texts: Sequence[str]) -> np.ndarray:
    shingles = [_shingles(t) for t in texts]
    postings: dict[int, list[int]] = {}
    for i, grams in enumerate(shingles):
        if len(grams) >= MIN_SHINGLES:
            for gram in grams:
                postings.setdefault(gram, []).append(i)
    shared: dict[tuple[int, int], int] = {}
    for holders in postings.values():
        if 1 < len(holders) <= _COMMON_SHINGLE:
            for a in range(len(holders)):
                for b in range(a + 1, len(holders)):
                    pair = (holders[a], holders[b])
                    shared[pair] = shared.get(pair, 0) + 1
    mask = np.zeros(len(texts), dtype=bool)
    for (a, b), common in shared.items():
        if common / (len(shingles[a]) + len(shingles[b]) - common) >= DUPLICATE_JACCARD:
            mask[a] = mask[b] = True
    return mask


def _shingles(text: str) -> set[int]:
    words = _WORDS.findall(MARKER_LINE.sub("", text).lower())
    return {hash(tuple(words[i : i + SHINGLE])) for i in range(len(words) - SHINGLE + 1)}


def _index_page(text: str) -> bool:
    """Lines that are index entries: words then a page number, the numbers ascending down the page
    (a table's figures do not), or a dotted entry number then words."""
    lines = [line.strip(" |*-") for line in MARKER_LINE.sub("", text).splitlines()]
    lines = [line for line in lines if _WORDS.search(line)]
    if len(lines) < MIN_INDEX_LINES:
        return False
    entries, page = 0, -1
    for line in lines:
        if len(line) > MAX_ENTRY_CHARS:
            continue
        ends = _ENDS_WITH_PAGE.search(line)
        if ends and len(_NUMBER.findall(line)) <= 2 and int(ends[1]) >= page:
            entries, page = entries + 1, int(ends[1])
        elif _STARTS_WITH_ENTRY.match(line):
            entries += 1
    return entries >= INDEX_LINES * len(lines)
