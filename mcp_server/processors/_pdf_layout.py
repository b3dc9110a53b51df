"""A PDF page's words as visual rows of cells, the raw material of table detection.

Pure Python over PyMuPDF's ``get_text("words")`` tuples, so it runs at the speed of the text
layer: words sharing a baseline across the whole page form a *row*; inside a row, a wide gap
starts a new *cell*. A currency sign standing alone joins the number after it, a lone ``%``
or ``)`` the number before it, so "$ 1,234" and "(3.2) %" are one cell each. Each cell keeps
the x-extent of its number (``core``) apart from its currency prefix, because numbers are
right-aligned in their column while the prefix sits at the column's left edge.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections.abc import Sequence

__all__ = ["Cell", "PageWords", "Row", "Word", "build_rows", "is_numeric", "is_year"]

# PyMuPDF's word tuple: x0, y0, x1, y1, text, block, line, word number in the line.
Word = tuple[float, float, float, float, str, int, int, int]

_ROW_TOLERANCE = 0.45  # words whose centres differ by less than this share of the height share a row
_CELL_GAP = 0.9  # a gap wider than this share of the word height starts a cell ...
_SPREAD = 2.5  # ... when it is also this many times the line's narrowest space (justified text stays whole)
_WIDE_GAP = 1.5  # ... and always beyond this share
_LINE_GAP = 0.3  # where MuPDF itself split the line, a gap wider than this share starts a cell
_PROSE_WORDS = 4  # a cell of this many words is running text
_GUTTER_ROWS = 4  # rows with running text on both sides of one gap make a multi-column page
_GUTTER_SHARE = 0.15  # ... when they are also this share of the page's rows

_NUMBER = re.compile(
    r"^\(?[-+−–]?\(?(?:\d{1,3}(?:[,.' \u00a0\u202f]\d{3})+|\d+)(?:[.,]\d+)?\)?\s?[%x×]?\)?"
    r"(?:\s?(?:\([a-z0-9]{1,2}\)|\*{1,3}|[†‡]))?$"
)
_DASHES = re.compile(r"^[-–—−]{1,3}\s?%?$")  # "—" stands for zero or "not applicable"
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_LONGEST_NUMBER = 32  # characters; anything longer is words
_SUFFIXES = frozenset({"%", ")", "%)"})  # printed apart from their number


def _is_currency(text: str) -> bool:
    return bool(text) and all(unicodedata.category(ch) == "Sc" for ch in text)


def is_numeric(text: str) -> bool:
    """A number as tables print it: "1,234", "(56.7)", "-3 %", "$12", "—", "4.5x", "12 (a)"."""
    text = text.strip()
    if not text or len(text) > _LONGEST_NUMBER:
        return False
    start = 0
    while start < len(text) and (_is_currency(text[start]) or text[start] in " ("):
        start += 1
    body = text[start:]
    if _DASHES.match(body):  # "—" or "$—": zero, or not applicable
        return True
    if "(" in text[:start] and not body.startswith("("):
        body = "(" + body
    if not any(ch.isdigit() for ch in body[:4]):  # a number starts within its sign and parenthesis
        return False
    return bool(_NUMBER.match(body))


def is_year(text: str) -> bool:
    return bool(_YEAR.match(text.strip()))


class Cell:
    """Words of one row that sit together; ``core`` is the extent without a currency prefix."""

    __slots__ = ("core0", "core1", "numeric", "text", "x0", "x1", "year")

    def __init__(self, x0: float, x1: float, core0: float, core1: float, text: str) -> None:
        self.x0, self.x1, self.core0, self.core1, self.text = x0, x1, core0, core1, text
        self.numeric = is_numeric(text)
        self.year = self.numeric and is_year(text)

    @property
    def center(self) -> float:
        return (self.core0 + self.core1) / 2

    def __repr__(self) -> str:  # debugging aid only
        return f"Cell({self.x0:.0f}-{self.x1:.0f} {self.text!r})"


class Row:
    """One visual line across the page: its words (left to right) and cells."""

    __slots__ = ("cells", "height", "index", "words", "y0", "y1")

    def __init__(self, index: int, words: list[Word]) -> None:
        self.index = index
        self.words = words
        tops = [w[1] for w in words]
        bottoms = [w[3] for w in words]
        self.y0, self.y1 = min(tops), max(bottoms)
        heights = sorted([b - t for t, b in zip(tops, bottoms, strict=True)])
        self.height = heights[len(heights) // 2]
        self.cells = _cells(words, self.height)

    @property
    def x0(self) -> float:
        return self.words[0][0]

    @property
    def x1(self) -> float:
        return max(w[2] for w in self.words)

    @property
    def text(self) -> str:
        return " ".join(cell.text for cell in self.cells)

    def __repr__(self) -> str:  # debugging aid only
        return f"Row({self.y0:.0f} {self.cells})"


class PageWords:
    """A page's words (PyMuPDF order) and its rows, top to bottom."""

    __slots__ = ("height", "line_height", "rows", "width", "words")

    def __init__(self, words: Sequence[Word], width: float, height: float) -> None:
        self.words = [w for w in words if w[4].strip()]
        self.width, self.height = width, height
        rows = build_rows(self.words)
        heights = [row.height for row in rows]
        self.line_height = statistics.median(heights) if heights else 10.0
        gutters = _gutters(rows, self.line_height)
        self.rows = _by_column(rows, gutters) if gutters else rows


def _gutters(rows: list[Row], lh: float) -> list[float]:
    """x of the gaps between columns of running text, read from rows holding prose on both
    sides of a gap (a table row has one such cell at most: its label)."""
    centres: list[float] = []
    for row in rows:
        prose = [cell for cell in row.cells if cell.text.count(" ") >= _PROSE_WORDS - 1]
        centres.extend((a.x1 + b.x0) / 2 for a, b in zip(prose, prose[1:], strict=False))
    if len(centres) < max(_GUTTER_ROWS, _GUTTER_SHARE * len(rows)):
        return []
    centres.sort()
    clusters: list[list[float]] = []
    for x in centres:
        if clusters and x - clusters[-1][-1] <= 2 * lh:
            clusters[-1].append(x)
        else:
            clusters.append([x])
    needed = max(_GUTTER_ROWS, _GUTTER_SHARE * len(rows))
    return [statistics.median(xs) for xs in clusters if len(xs) >= needed]


def _by_column(rows: list[Row], gutters: list[float]) -> list[Row]:
    """Rows re-cut at the gutters and ordered column by column within each band of the page
    between full-width lines (a heading, a figure caption spanning the columns)."""
    out: list[list[Word]] = []
    band: list[list[Word]] = [[] for _ in range(len(gutters) + 1)]

    def flush() -> None:
        for words in band:
            out.extend(row.words for row in build_rows(words))
            words.clear()

    for row in rows:
        if any(w[0] < g < w[2] for w in row.words for g in gutters):
            flush()
            out.append(row.words)
            continue
        for word in row.words:
            band[sum(1 for g in gutters if word[0] >= g)].append(word)
    flush()
    return [Row(index, words) for index, words in enumerate(out)]


def build_rows(words: Sequence[Word]) -> list[Row]:
    """Words grouped by vertical centre; a row is anchored on its first word (no chaining)."""
    ordered = sorted(words, key=lambda w: (w[1] + w[3]) / 2)
    groups: list[list[Word]] = []
    anchor = height = 0.0
    for word in ordered:
        centre = (word[1] + word[3]) / 2
        if groups and abs(centre - anchor) <= _ROW_TOLERANCE * max(height, word[3] - word[1]):
            groups[-1].append(word)
            continue
        groups.append([word])
        anchor, height = centre, max(word[3] - word[1], 1.0)
    rows: list[Row] = []
    for group in groups:
        group.sort(key=lambda w: w[0])
        rows.append(Row(len(rows), group))
    return rows


def _runs(words: list[Word], height: float) -> list[list[Word]]:
    """Words split where a gap is wide for its line."""
    line = (words[0][5], words[0][6])
    if all((w[5], w[6]) == line for w in words) and all(
            b[0] - a[2] <= _CELL_GAP * height for a, b in zip(words, words[1:], strict=False)):
        return [words]  # most rows: one line of running text
    # The usual space of each MuPDF line: justified text spreads all its words evenly, while
    # a line that runs across table columns has tight words and a few wide gaps.
    space: dict[tuple[int, int], float] = {}
    for left, right in zip(words, words[1:], strict=False):
        if (left[5], left[6]) == (right[5], right[6]):
            key = (left[5], left[6])
            space[key] = min(space.get(key, right[0] - left[2]), right[0] - left[2])
    runs: list[list[Word]] = []
    for word in words:
        if runs:
            last = runs[-1][-1]
            gap = word[0] - last[2]
            if (word[5], word[6]) == (last[5], last[6]):
                joined = gap <= _WIDE_GAP * height and (
                    gap <= _CELL_GAP * height or gap <= _SPREAD * space[word[5], word[6]])
            else:
                joined = gap <= _LINE_GAP * height
            if joined:
                runs[-1].append(word)
                continue
        runs.append([word])
    return runs


def _cells(words: list[Word], height: float) -> list[Cell]:
    runs = _runs(words, height)
    _move_trailing_currency(runs)
    cells: list[Cell] = []
    prefix: list[Word] = []
    for run in runs:
        lead = 0
        while lead < len(run) and _is_currency(run[lead][4]):
            lead += 1
        prefix.extend(run[:lead])  # "$" alone belongs to the number on its right
        body = run[lead:]
        if not body:
            continue
        text = " ".join(w[4] for w in body)
        if cells and not prefix and text in _SUFFIXES and cells[-1].numeric:
            number = cells[-1]
            cells[-1] = Cell(number.x0, body[-1][2], number.core0, body[-1][2], number.text + text)
            continue
        core0, core1 = body[0][0], body[-1][2]
        if prefix and is_numeric(text):
            cells.append(Cell(prefix[0][0], core1, core0, core1, "".join(w[4] for w in prefix) + text))
        elif prefix:  # "$ and shares in millions": a sign before words stays a word
            cells.append(Cell(prefix[0][0], core1, prefix[0][0], core1, " ".join(w[4] for w in prefix + body)))
        else:
            cells.append(Cell(core0, core1, core0, core1, text))
        prefix = []
    if prefix:  # a currency sign with nothing after it stays a cell of its own
        cells.append(Cell(prefix[0][0], prefix[-1][2], prefix[0][0], prefix[-1][2], " ".join(w[4] for w in prefix)))
    return cells


def _move_trailing_currency(runs: list[list[Word]]) -> None:
    """"35,355 $" then "32,184": a "$" ending a cell opens the number in the next one."""
    for index in range(len(runs) - 2, -1, -1):  # right to left: the next run is settled first
        run = runs[index]
        if len(run) > 1 and _is_currency(run[-1][4]) and is_numeric(" ".join(w[4] for w in runs[index + 1])):
            runs[index + 1].insert(0, run.pop())
