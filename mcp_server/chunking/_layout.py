"""The map the splitter walks: words with their token counts and the breaks between them.

A document becomes an array of *atoms* (maximal runs of non-whitespace, so a chunk can only
start and end at whitespace) and, for the gap after each atom, a break *level*: the index of
the strongest separator found in that gap (0 = strongest). Table rows, marker lines and
heading lines forbid breaks inside them. Every distinct word is tokenised once, in one batch:
for tokenizers that split on whitespace (WordPiece, as in MiniLM and BGE) the tokens of a
span are then exactly the sum over its words, so the splitter never re-tokenises text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mcp_server.chunking._locations import HEADING_LINE, MARKER_LINE
from mcp_server.chunking._params import ChunkParams
from mcp_server.chunking._tokens import TokenCounter, special_tokens
from mcp_server.core.markup import title_line

__all__ = ["Layout", "Table", "build_layout"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# Where words may be cut: Python's whitespace, except the separators \x1c-\x1f, which Rust and
# WordPiece treat as control characters and delete (so "a\x1fb" is one word to the model).
_WHITESPACE = np.array([c for c in range(0x3001) if chr(c).isspace() and not 0x1C <= c <= 0x1F],
                       dtype=np.uint32)
_SEPARATORS = ("\x1c", "\x1d", "\x1e", "\x1f")
_TABLE_ROW = re.compile(r"^[ \t]*\|[^\n]*$", re.MULTILINE)
_TABLE_DELIMITER = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*(?::?-+:?[ \t]*)?\r?$")
# A table's title: at most this many lines right above its header (``core.markup.title_line`` says
# which lines may belong to it).
TITLE_LINES = 6


@dataclass(frozen=True, slots=True)
class Table:
    """A Markdown table: its title lines, header row plus delimiter row, then body rows up to ``end``.

    The title is the run of short text lines right above the header row (no blank line
    between): what the processors write there is the table's caption ("Consolidated Balance
    Sheet", "(Dollars in millions)"). ``title_start == header_start`` when there is none.
    """

    title_start: int
    header_start: int
    header_end: int  # end of the delimiter row
    body_start: int
    end: int
    header_tokens: int  # model tokens of the title and the two header rows, without special tokens


@dataclass(frozen=True, slots=True)
class Layout:
    starts: IntArray  # atom start offsets into content
    ends: IntArray
    cum_tokens: IntArray  # cum_tokens[k] = tokens of atoms before k (length n + 1)
    level: IntArray  # break level of the gap after atom k
    can_start: BoolArray  # atom may open a chunk that overlaps the previous one
    table: IntArray  # index into ``tables`` when the atom lies in a table body, else -1
    past_marker: IntArray  # the first atom after the page marker line this atom opens, else itself
    tables: tuple[Table, ...]
    word_level: int  # a plain whitespace gap no separator matched
    piece_level: int  # between the pieces of one over-long word (a forced mid-word cut)
    forbidden: int  # inside a table row, marker or heading line: only as a last resort
    hard_levels: frozenset[int]  # chunks ending here do not overlap into the next
    specials: int  # special tokens the model adds to every text

    @property
    def size(self) -> int:
        return len(self.starts)

    def tokens(self, first: int, last: int) -> int:
        """Tokens of atoms first..last inclusive, without special tokens."""
        return int(self.cum_tokens[last + 1] - self.cum_tokens[first])


def build_layout(content: str, params: ChunkParams, counter: TokenCounter) -> Layout:
    """Atoms, token counts and break levels for ``content`` (assumed not blank)."""
    specials = special_tokens(counter)
    budget = params.max_tokens - specials
    if budget < 4:
        raise ValueError(f"max_tokens {params.max_tokens} leaves no room beside {specials} special tokens")

    starts, ends = _atoms(content)
    words = _words(content, starts, ends)
    unique = list(dict.fromkeys(words))
    counted = dict(zip(unique, counter.count_tokens(unique), strict=True))
    tokens = np.maximum(np.fromiter(map(counted.__getitem__, words), dtype=np.int64, count=len(words)) - specials, 0)

    n_seps = len(params.separators)
    word_level, piece_level, forbidden = n_seps, n_seps + 1, n_seps + 2
    level = np.full(len(starts), word_level, dtype=np.int64)
    pieces = np.zeros(len(starts), dtype=np.bool_)
    oversized = np.nonzero((ends - starts > params.chunk_size) | (tokens > budget))[0]
    if len(oversized):
        starts, ends, tokens, level, pieces = _split_oversized(
            content, starts, ends, tokens, oversized, params.chunk_size, budget, counter, specials,
            word_level, piece_level,
        )
    _mark_separators(content, params.separators, starts, ends, level)
    can_start = ~pieces
    tables = _mark_tables(content, starts, ends, tokens, level, can_start, forbidden)
    table_of = _table_index(starts, tables)
    _mark_sticky_lines(content, starts, ends, level, can_start, forbidden)
    past_marker = _past_page_markers(content, starts)

    return Layout(
        starts=starts,
        ends=ends,
        cum_tokens=np.concatenate(([0], np.cumsum(tokens))).astype(np.int64),
        level=level,
        can_start=can_start,
        table=table_of,
        past_marker=past_marker,
        tables=tables,
        word_level=word_level,
        piece_level=piece_level,
        forbidden=forbidden,
        hard_levels=frozenset(params.separators.index(s) for s in params.hard_separators),
        specials=specials,
    )


def _atoms(content: str) -> tuple[IntArray, IntArray]:
    """Start and end offsets of the non-whitespace runs (5x faster than re.finditer(r"\\S+"))."""
    codes = np.frombuffer(content.encode("utf-32-le"), dtype=np.uint32)
    space = np.isin(codes, _WHITESPACE)
    edges = np.diff(np.concatenate(([True], space, [True])).astype(np.int8))
    return np.nonzero(edges == -1)[0].astype(np.int64), np.nonzero(edges == 1)[0].astype(np.int64)


def _words(content: str, starts: IntArray, ends: IntArray) -> list[str]:
    """The atoms' text. ``str.split`` cuts at the same whitespace, and at U+001C-U+001F too:
    without those it gives the atoms in a C loop (a slice per atom took 0.1-0.2 s of a book)."""
    if not any(separator in content for separator in _SEPARATORS):
        words = content.split()
        if len(words) == len(starts):
            return words
    return [content[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]


def _gap_of(ends: IntArray, positions: IntArray, n_atoms: int) -> IntArray:
    """For whitespace positions, the atom the gap follows (-1 if before the first/after the last)."""
    gaps = np.searchsorted(ends, positions, side="right") - 1
    return np.where((gaps >= 0) & (gaps < n_atoms - 1), gaps, -1)


def _mark_separators(content: str, separators: tuple[str, ...], starts: IntArray, ends: IntArray,
                     level: IntArray) -> None:
    """Give each gap the index of the strongest separator with a whitespace char inside it."""
    n = len(starts)
    codes: npt.NDArray[np.uint32] | None = None
    for index in range(len(separators) - 1, -1, -1):  # weakest first, strongest overwrites
        separator = separators[index]
        offset = next(i for i, char in enumerate(separator) if char.isspace())
        if len(separator) == 1:
            if codes is None:
                codes = np.frombuffer(content.encode("utf-32-le"), dtype=np.uint32)
            positions = np.nonzero(codes == ord(separator))[0]
        else:
            found = [m.start() + offset for m in re.finditer(re.escape(separator), content)]
            positions = np.array(found, dtype=np.int64)
        gaps = _gap_of(ends, positions, n)
        level[gaps[gaps >= 0]] = index


def _split_oversized(
    content: str, starts: IntArray, ends: IntArray, tokens: IntArray, oversized: IntArray,
    chunk_size: int, budget: int, counter: TokenCounter, specials: int, word_level: int,
    piece_level: int,
) -> tuple[IntArray, IntArray, IntArray, IntArray, npt.NDArray[np.bool_]]:
    """Hard-split every "word" longer than a chunk into the longest pieces that fit.

    This is the only place a chunk boundary falls inside a word: a run without whitespace
    (a URL, a base64 blob, "a.b.c..." that tokenises per character) bigger than the window.
    """
    new_starts, new_ends, new_tokens, new_pieces = [], [], [], []
    previous = 0
    for atom in oversized.tolist():
        new_starts.append(starts[previous:atom])
        new_ends.append(ends[previous:atom])
        new_tokens.append(tokens[previous:atom])
        new_pieces.append(np.zeros(atom - previous, dtype=np.bool_))
        bounds = _piece_bounds(content, int(starts[atom]), int(ends[atom]), chunk_size, budget,
                               counter, specials)
        new_starts.append(np.array([a for a, _, _ in bounds], dtype=np.int64))
        new_ends.append(np.array([b for _, b, _ in bounds], dtype=np.int64))
        new_tokens.append(np.array([t for _, _, t in bounds], dtype=np.int64))
        new_pieces.append(np.array([i > 0 for i in range(len(bounds))], dtype=np.bool_))
        previous = atom + 1
    new_starts.append(starts[previous:])
    new_ends.append(ends[previous:])
    new_tokens.append(tokens[previous:])
    new_pieces.append(np.zeros(len(starts) - previous, dtype=np.bool_))
    out_starts = np.concatenate(new_starts)
    pieces = np.concatenate(new_pieces)
    out_level = np.full(len(out_starts), word_level, dtype=np.int64)
    # The gap before each non-first piece is zero-width: mark it as a forced cut.
    out_level[np.nonzero(pieces)[0] - 1] = piece_level
    return out_starts, np.concatenate(new_ends), np.concatenate(new_tokens), out_level, pieces


def _piece_bounds(content: str, start: int, end: int, chunk_size: int, budget: int,
                  counter: TokenCounter, specials: int) -> list[tuple[int, int, int]]:
    """(start, end, tokens) of consecutive maximal pieces of content[start:end]."""
    out = []
    while start < end:
        length = min(chunk_size, end - start)
        tokens = counter.count_tokens([content[start:start + length]])[0] - specials
        if tokens > budget:  # binary search for the longest prefix within the token budget
            low, high = 1, length - 1
            tokens = counter.count_tokens([content[start:start + 1]])[0] - specials
            length = 1
            while low <= high:
                middle = (low + high) // 2
                count = counter.count_tokens([content[start:start + middle]])[0] - specials
                if count <= budget:
                    length, tokens, low = middle, count, middle + 1
                else:
                    high = middle - 1
        out.append((start, start + length, max(tokens, 0)))
        start += length
    return out


def _atom_range(starts: IntArray, begin: int, end: int) -> tuple[int, int]:
    """Indices [first, stop) of the atoms starting in content[begin:end]."""
    return (int(np.searchsorted(starts, begin, side="left")), int(np.searchsorted(starts, end, side="left")))


def _mark_tables(content: str, starts: IntArray, ends: IntArray, tokens: IntArray, level: IntArray,
                 can_start: BoolArray, forbidden: int) -> tuple[Table, ...]:
    """Find Markdown tables; allow breaks only between body rows, and only there start chunks."""
    rows = [(m.start(), m.end()) for m in _TABLE_ROW.finditer(content)]
    blocks: list[list[tuple[int, int]]] = []
    for row in rows:
        if blocks and content[blocks[-1][-1][1]:row[0]].strip("\r") == "\n":
            blocks[-1].append(row)
        else:
            blocks.append([row])

    tables = []
    for block in blocks:
        if len(block) < 3 or not _TABLE_DELIMITER.match(content[block[1][0]:block[1][1]]):
            continue
        for index, (row_start, row_end) in enumerate(block):
            first, stop = _atom_range(starts, row_start, row_end)
            if stop <= first:
                continue
            if index < 2:  # header and delimiter rows stay with the first body row
                level[first:stop] = forbidden
                can_start[first + (index == 0):stop] = False
            else:
                level[first:stop - 1] = forbidden
                can_start[first + 1:stop] = False
        title_start = _title_start(content, block[0][0])
        title_first, header_first = _atom_range(starts, title_start, block[0][0])
        if header_first > title_first:  # the title sticks to the header: no cut, no start inside
            level[title_first:header_first] = forbidden
            can_start[title_first + 1:header_first + 1] = False
        first, stop = _atom_range(starts, title_start, block[1][1])
        tables.append(Table(title_start=int(starts[first]), header_start=int(starts[header_first]),
                            header_end=int(ends[stop - 1]), body_start=block[2][0], end=block[-1][1],
                            header_tokens=int(tokens[first:stop].sum())))
    return tuple(tables)


def _title_start(content: str, header_start: int) -> int:
    """Start of the title lines right above a table's header row (``header_start`` if none)."""
    start = header_start
    for _ in range(TITLE_LINES):
        if start == 0 or content[start - 1] != "\n":
            break
        above = content.rfind("\n", 0, start - 1) + 1
        if not title_line(content[above:start - 1]):
            break
        start = above
    # the title's own leading indentation is not part of it: chunks start at a word
    while start < header_start and content[start] in " \t":
        start += 1
    return start


def _table_index(starts: IntArray, tables: tuple[Table, ...]) -> IntArray:
    table_of = np.full(len(starts), -1, dtype=np.int64)
    for index, table in enumerate(tables):
        first, stop = _atom_range(starts, table.body_start, table.end)
        table_of[first:stop] = index
    return table_of


def _past_page_markers(content: str, starts: IntArray) -> IntArray:
    """For the first atom of each page marker line, the atom after the line (identity elsewhere):
    a chunk that would open with "--- Page N ---" opens after it instead, since the marker is
    no content and ``location.pages`` already names the page."""
    past = np.arange(len(starts) + 1, dtype=np.int64)
    pages = [match for match in MARKER_LINE.finditer(content) if match["page"] is not None]
    for match in reversed(pages):  # last first, so a run of empty pages is skipped at once
        first, stop = _atom_range(starts, match.start(), match.end())
        if stop > first:
            past[first] = past[stop]
    return past[:-1]


def _mark_sticky_lines(content: str, starts: IntArray, ends: IntArray, level: IntArray,
                       can_start: BoolArray, forbidden: int) -> None:
    """A marker or heading line is never cut, nor left dangling at the end of a chunk."""
    for pattern in (MARKER_LINE, HEADING_LINE):
        for match in pattern.finditer(content):
            first, stop = _atom_range(starts, match.start(), match.end())
            if stop > first:
                level[first:stop] = forbidden
                can_start[first + 1:stop] = False
