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

import math
import re
from collections.abc import Sequence

import numpy as np

from mcp_server.core.markup import without_markers
from mcp_server.text.lexical import word_runs

__all__ = ["DUPLICATE_JACCARD", "INDEX_LINES", "SHINGLE", "TEMPLATES_VERSION", "template_mask"]

# Bump when the mask of the same chunks changes: masks stored with an index (indexes/lexical.py) under
# another version are found again.
TEMPLATES_VERSION = 1

SHINGLE = 5  # words per shingle
DUPLICATE_JACCARD = 0.5
MIN_SHINGLES = 20  # shorter chunks (a heading, a lone row) are too short to call duplicates
INDEX_LINES = 0.6  # share of a chunk's lines that are index entries
MIN_INDEX_LINES = 5
_COMMON_SHINGLE = 50  # a shingle in more chunks than this is a phrase, not a copied passage
_PAIRS_PER_BATCH = 1 << 21  # pairs of chunks counted at once (16 MB of codes)
# odd 64-bit multipliers: a shingle's code is the sum of its word ids times these (mod 2**64)
_MULTIPLIERS = [np.uint64(m) for m in (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                                       0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD)]

_WORDS = re.compile(r"\w+")
_NUMBER = re.compile(r"\d[\d,.]*")
MAX_ENTRY_CHARS = 150  # an index entry is one short line
# "Management's Discussion ....... 35", "Item 7. | Management's Discussion | 35": words, then a page number
_ENDS_WITH_PAGE = re.compile(r"[\s|.](\d{1,3})$")  # after a letter (``_LETTER``): one pass, no backtracking
_LETTER = re.compile(r"[^\W\d_]")
# "31.1 | Certification of ...", "10.2* Agreement ...": a dotted entry number, then words
_STARTS_WITH_ENTRY = re.compile(r"^\d{1,3}\.\d{1,3}[A-Za-z]?\W*\s+[^\W\d_]")
# from a line's first digit to its end (str.splitlines' line ends): one per line holding a digit, as every entry
_DIGIT_LINE = re.compile("\\d[^\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]*")
_MIN_ENTRIES = math.ceil(INDEX_LINES * MIN_INDEX_LINES)


def template_mask(texts: Sequence[str], runs: Sequence[list[str] | None] | None = None) -> np.ndarray:
    """Per text, whether it is a template passage (a near-duplicate of another, or an index page).
    ``runs``: each text's ``lexical.word_runs`` where already read (None where not)."""
    mask = _near_duplicates(texts, runs)
    for i, text in enumerate(texts):
        if not mask[i] and _index_page(text):
            mask[i] = True
    return mask


def _near_duplicates(texts: Sequence[str], runs: Sequence[list[str] | None] | None = None) -> np.ndarray:
    """Chunks sharing a DUPLICATE_JACCARD of their shingles with another, counted with arrays: the
    pairs of chunks that share a shingle run into millions on a book (a loop over them took seconds)."""
    grams, owners = _shingles(texts, runs)
    sizes = np.bincount(owners, minlength=len(texts))
    kept = sizes[owners] >= MIN_SHINGLES  # shorter chunks hold no postings
    grams, owners = grams[kept], owners[kept]
    starts = np.flatnonzero(np.r_[True, grams[1:] != grams[:-1]]) if len(grams) else np.zeros(0, np.int64)
    holders = np.diff(np.r_[starts, len(grams)])
    counted: list[tuple[np.ndarray, np.ndarray]] = []
    for k in np.unique(holders[(holders > 1) & (holders <= _COMMON_SHINGLE)]).tolist():
        first, second = np.triu_indices(k, 1)
        groups, step = starts[holders == k], max(1, _PAIRS_PER_BATCH // len(first))
        for at in range(0, len(groups), step):
            rows = owners[groups[at:at + step, None] + np.arange(k)]
            pairs = rows[:, first].ravel() * len(texts) + rows[:, second].ravel()  # owners ascend per shingle
            counted.append(np.unique(pairs, return_counts=True))
    mask = np.zeros(len(texts), dtype=bool)
    if not counted:
        return mask
    pairs = np.concatenate([p for p, _ in counted])
    order = np.argsort(pairs, kind="stable")
    pairs, counts = pairs[order], np.concatenate([c for _, c in counted])[order]
    firsts = np.flatnonzero(np.r_[True, pairs[1:] != pairs[:-1]])
    pairs, common = pairs[firsts], np.add.reduceat(counts, firsts)
    a, b = pairs // len(texts), pairs % len(texts)
    similar = common / (sizes[a] + sizes[b] - common) >= DUPLICATE_JACCARD
    mask[a[similar]] = mask[b[similar]] = True
    return mask


def _shingles(texts: Sequence[str], runs: Sequence[list[str] | None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct (shingle, chunk) of the texts as two arrays sorted by shingle, then chunk: a
    shingle is a 64-bit code of its SHINGLE words' hashes."""
    found: list[str] = []
    ends = np.zeros(len(texts), dtype=np.int64)
    for i, text in enumerate(texts):
        read = runs[i] if runs is not None else None
        found += read if read is not None else word_runs(text)
        ends[i] = len(found)
    words = np.fromiter(map(hash, found), dtype=np.int64, count=len(found)).view(np.uint64)  # a word's code
    counts = np.diff(np.r_[0, ends])
    owner_of_word = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
    # a shingle starts at each word with SHINGLE - 1 more of its own chunk after it
    last_start = np.repeat(ends - SHINGLE, counts)
    valid = np.arange(len(words)) <= last_start
    grams = np.zeros(int(valid.sum()), dtype=np.uint64)
    positions = np.flatnonzero(valid)
    for offset, multiplier in enumerate(_MULTIPLIERS):
        grams += words[positions + offset] * multiplier  # wraps modulo 2**64, as a hash should
    owners = owner_of_word[positions]
    order = np.lexsort((owners, grams))
    grams, owners = grams[order], owners[order]
    distinct = np.r_[True, (grams[1:] != grams[:-1]) | (owners[1:] != owners[:-1])] if len(grams) else \
        np.zeros(0, dtype=bool)
    return grams[distinct], owners[distinct]


def _index_page(text: str) -> bool:
    """Lines that are index entries: words then a page number, the numbers ascending down the page
    (a table's figures do not), or a dotted entry number then words."""
    if len(_DIGIT_LINE.findall(text)) < _MIN_ENTRIES:  # too few lines with a digit: read no line (a book's prose)
        return False
    lines = [line.strip(" |*-") for line in without_markers(text).splitlines()]
    lines = [line for line in lines if _WORDS.search(line)]
    if len(lines) < MIN_INDEX_LINES:
        return False
    entries, page = 0, -1
    for line in lines:
        if len(line) > MAX_ENTRY_CHARS:
            continue
        ends = _ENDS_WITH_PAGE.search(line)
        if ends and _LETTER.search(line, 0, ends.start()) and len(_NUMBER.findall(line)) <= 2 \
                and int(ends[1]) >= page:
            entries, page = entries + 1, int(ends[1])
        elif _STARTS_WITH_ENTRY.match(line):
            entries += 1
    return entries >= INDEX_LINES * len(lines)
