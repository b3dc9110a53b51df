"""Cutting a layout into chunk spans: recursive-separator choice, token budget, word overlap.

Hand-written because langchain's RecursiveCharacterTextSplitter returns strings (offsets are
recovered with str.find), overlaps by whole splits rather than words, re-measures merged text
and cannot keep table rows whole or repeat their header; we need exact spans in model tokens.

For each chunk the splitter finds the *window*: the most atoms from the start that fit both
``chunk_size`` characters and the token budget. It ends the chunk at the strongest break in
the window's second half (the furthest one among equals) - the recursive splitter's "highest
separator that fits" without its tiny leftover chunks - and starts the next chunk about
``chunk_overlap`` characters earlier, at a word start.

Paragraphs (blocks between "\n\n" or any stronger separator) that fit a window are never cut:
when the window would end inside such a paragraph, the chunk ends at the paragraph break
before it instead, however little that leaves. A chunk that ends at a paragraph break has no
overlap; the overlap of a chunk that ends inside a paragraph too long for any window stays
within that paragraph. Retrieval pays for chunks that straddle a paragraph break (measured by
bench/squad.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mcp_server.chunking._layout import Layout
from mcp_server.chunking._params import ChunkParams

__all__ = ["Span", "Splitter"]

# A chunk ends at the strongest break in the last (1 - MIN_FILL) of its window, so no chunk
# is cut to a sliver because a paragraph happened to end just after it began.
MIN_FILL = 0.5
PARAGRAPH_SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class Span:
    """Atoms ``first..last`` (inclusive); ``table`` >= 0 when that table's header is prefixed."""

    first: int
    last: int
    table: int = -1


class Splitter:
    """Cuts one document's layout; ``measure`` (exact token count of a span) enables checking."""

    def __init__(self, content: str, layout: Layout, params: ChunkParams,
                 measure: Callable[[Span], int] | None = None) -> None:
        self.content = content
        self.layout = layout
        self.chunk_size = params.chunk_size
        self.overlap = params.chunk_overlap
        self.max_tokens = params.max_tokens
        self.budget = params.max_tokens - layout.specials
        self.measure = measure
        self.hard = np.array(sorted(layout.hard_levels | {layout.piece_level}), dtype=np.int64)
        # Breaks at this level or stronger end a paragraph (-1: the separators name none).
        seps = params.separators
        self.paragraph_level = seps.index(PARAGRAPH_SEPARATOR) if PARAGRAPH_SEPARATOR in seps else -1
        # next_start[m]: the first atom at or after m that may open an overlapping chunk.
        n = layout.size
        candidates = np.where(layout.can_start, np.arange(n), n)
        self.next_start = np.append(np.minimum.accumulate(candidates[::-1])[::-1], n)

    def text(self, span: Span) -> str:
        """The chunk text: the span, verbatim, after its table's title and header rows when it has one."""
        body = self.content[self.layout.starts[span.first]:self.layout.ends[span.last]]
        if span.table < 0:
            return body
        table = self.layout.tables[span.table]
        return f"{self.content[table.title_start:table.header_end]}\n{body}"

    def estimate(self, span: Span) -> int:
        """Model tokens of the span's text with special tokens, as the sum over its words."""
        header = self._prefix_cost(span.table)[1]
        return self.layout.specials + self.layout.tokens(span.first, span.last) + header

    def split(self, first: int, stop: int) -> list[Span]:
        """Spans covering atoms ``first..stop-1`` in order, each starting after the previous."""
        spans: list[Span] = []
        start, min_last = self._past_marker(first, stop), first
        while True:
            span = self._next_span(start, min_last, stop)
            spans.append(span)
            if span.last >= stop - 1:
                return spans
            min_last = span.last + 1
            start = self._past_marker(self._next_start(span, stop), stop)

    def _past_marker(self, start: int, stop: int) -> int:
        """``start``, or the atom after the page marker line it opens if the segment goes on."""
        after = int(self.layout.past_marker[start])
        return after if after < stop else start

    # --- one chunk ----------------------------------------------------------------------

    def _prefix(self, atom: int) -> int:
        """The table whose header a chunk starting at ``atom`` repeats, if the header is small."""
        index = int(self.layout.table[atom])
        if index < 0:
            return -1
        table = self.layout.tables[index]
        small = (table.header_tokens <= self.budget // 2
                 and table.header_end - table.title_start < self.chunk_size // 2)
        return index if small else -1

    def _prefix_cost(self, table: int) -> tuple[int, int]:
        if table < 0:
            return 0, 0
        header = self.layout.tables[table]
        return header.header_end - header.title_start + 1, header.header_tokens

    def _window_end(self, start: int, table: int, stop: int, token_limit: int) -> int:
        """The last atom of the longest run from ``start`` within both budgets."""
        layout = self.layout
        chars, tokens = self._prefix_cost(table)
        char_limit = int(layout.starts[start]) + self.chunk_size - chars
        token_total = int(layout.cum_tokens[start]) + token_limit - tokens
        by_chars = int(np.searchsorted(layout.ends, char_limit, "right")) - 1
        by_tokens = int(np.searchsorted(layout.cum_tokens, token_total, "right")) - 2
        return min(by_chars, by_tokens, stop - 1)

    def _next_span(self, start: int, min_last: int, stop: int) -> Span:
        table = self._prefix(start)
        token_limit = self.budget
        while True:
            end = self._window_end(start, table, stop, token_limit)
            if end < max(start, min_last):
                if table >= 0:  # the header does not fit beside this row: go without it
                    table = -1
                    continue
                if start < min_last:  # cannot reach past the previous chunk: drop the overlap
                    start = min_last = self._past_marker(min_last, stop)
                    table, token_limit = self._prefix(start), self.budget
                    continue
                end = start  # a lone atom always fits: atoms were cut to fit the window
            span = Span(start, self._choose_end(start, end, min_last, stop), table)
            if self.measure is None:
                return span
            count = self.measure(span)
            if count <= self.max_tokens or (span.last == start and table < 0):
                return span
            # The tokenizer is not additive over words here: shrink the budget in proportion.
            estimate = self.layout.tokens(span.first, span.last) + self._prefix_cost(table)[1]
            excess = max(count - self.layout.specials, 1)
            token_limit = max(min(estimate - 1, estimate * self.budget // excess), 0)

    def _choose_end(self, start: int, end: int, min_last: int, stop: int) -> int:
        """The break to end on: strongest level in the window's second half, furthest of equals;
        but never inside a paragraph that would fit a chunk of its own."""
        if end == stop - 1:
            return end
        chosen = self._strongest_break(start, end, max(start, min_last))
        if self.layout.level[chosen] <= self.paragraph_level:
            return chosen
        lowest = max(start, min_last)
        breaks = np.nonzero(self.layout.level[lowest:end + 1] <= self.paragraph_level)[0]
        if len(breaks) and self._paragraph_fits(lowest + int(breaks[-1]) + 1, stop):
            return lowest + int(breaks[-1])
        return chosen

    def _strongest_break(self, start: int, end: int, lowest: int) -> int:
        layout = self.layout
        # An int threshold: a float would make numpy convert the whole array on every search.
        threshold = int(layout.starts[start] + MIN_FILL * (layout.ends[end] - layout.starts[start]))
        filled = int(np.searchsorted(layout.ends, threshold, "left"))
        for first in (max(filled, lowest), lowest):
            if first > end:
                continue
            levels = layout.level[first:end + 1]
            best = levels.min()
            if best < layout.forbidden:
                return first + len(levels) - 1 - int(np.argmin(levels[::-1]))
        return end  # only forbidden breaks (a huge table row or heading): cut at the window end

    def _paragraph_fits(self, first: int, stop: int) -> bool:
        """Whether the paragraph starting at atom ``first`` fits one chunk of its own."""
        window = self._window_end(first, self._prefix(first), stop, self.budget)
        if window >= stop - 1:
            return True
        return bool((self.layout.level[first:window + 1] <= self.paragraph_level).any())

    # --- the next chunk's start ---------------------------------------------------------

    def _next_start(self, span: Span, stop: int) -> int:
        """About ``chunk_overlap`` characters before the end, at a word (or table row) start.

        No overlap after a hard break (slide, sheet, heading), a paragraph break or a forced
        mid-word cut, nor back across such a break inside the chunk; at most half the chunk, so
        chunks advance.
        """
        layout, last = self.layout, span.last
        following = last + 1
        if layout.level[last] in self.hard or layout.level[last] <= self.paragraph_level:
            return following
        overlap = min(self.overlap, int(layout.ends[last] - layout.starts[span.first]) // 2)
        if overlap <= 0:
            return following
        candidate = int(np.searchsorted(layout.starts, int(layout.ends[last]) - overlap, "left"))
        candidate = max(candidate, span.first + 1)
        inside = layout.level[span.first:last]
        walls = np.nonzero(np.isin(inside, self.hard) | (inside <= self.paragraph_level))[0]
        if len(walls):
            candidate = max(candidate, span.first + int(walls[-1]) + 1)
        candidate = int(self.next_start[candidate])
        if candidate > last:
            return following
        if self._window_end(candidate, self._prefix(candidate), stop, self.budget) <= last:
            return following  # it could not reach past this chunk: it would only repeat it
        return candidate
