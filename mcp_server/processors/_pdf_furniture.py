"""Page furniture: running headers and footers, and bare page numbers.

A running header is a line among the first rows of many pages that reads the same once digits
are masked ("Page 5 of 30" and "Page 6 of 30" are one line); a running footer the same among
the last rows. Lines right above a table are its title, never furniture, even when every
statement page repeats them. A bare page number ("12", "- 12 -", "A-7", "Page 3 of 9") at the
top or bottom of a page is furniture wherever it stands.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from mcp_server.processors._pdf_layout import PageWords, Row

__all__ = ["Furniture", "find_running_lines", "page_number_rows"]

_ZONE_ROWS = 3  # rows from the top and from the bottom that may be furniture
_MIN_PAGES = 4
_MIN_SHARE = 0.15  # of the pages
_NEAR_SHARE = 0.5  # of the pages, for a line standing right above a table
_MAX_CHARS = 80  # a longer repeated line is boilerplate content (a note), not furniture
_LARGER = 1.25  # a repeated line in type this much larger than usual is a title, not furniture
_PAGE_NUMBER = re.compile(
    r"^(?:page\s*)?[-–—(\[]?\s*(?:[a-z]{1,2}\s?[-–]\s?)?(?:\d{1,4}|[ivxlcdm]{1,7})\s*[-–—)\]]?"
    r"(?:\s*(?:of|/)\s*\d{1,4})?$",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")


@dataclass
class Furniture:
    rows: dict[int, set[int]] = field(default_factory=dict)  # page position -> row indices
    headers: list[str] = field(default_factory=list)
    footers: list[str] = field(default_factory=list)


def page_number_rows(page: PageWords) -> set[int]:
    """Rows at the top or bottom of the page that hold nothing but a page number."""
    rows = page.rows
    zone = rows[:2] + rows[-2:] if len(rows) > 4 else rows
    return {row.index for row in zone if len(row.cells) == 1 and _PAGE_NUMBER.match(row.text.strip())}


def find_running_lines(pages: Sequence[PageWords | None], protected: Sequence[set[int]],
                       near: Sequence[set[int]]) -> Furniture:
    """Rows repeated at the top (or bottom) of many pages. ``protected`` rows (table bodies) never
    are; ``near`` rows (table headers and titles) only when repeated on most pages, since the
    same caption may head the statements of several pages."""
    top: list[list[tuple[str, Row]]] = []
    bottom: list[list[tuple[str, Row]]] = []
    for page, keep in zip(pages, protected, strict=True):
        rows = [] if page is None else page.rows
        top.append([(_key(row), row) for row in rows[:_ZONE_ROWS] if row.index not in keep])
        tail = rows[-_ZONE_ROWS:] if len(rows) > _ZONE_ROWS else []
        bottom.append([(_key(row), row) for row in tail if row.index not in keep])
    counted = sum(1 for page in pages if page is not None)
    threshold = max(_MIN_PAGES, _MIN_SHARE * counted)
    furniture = Furniture()
    for zone, texts in ((top, furniture.headers), (bottom, furniture.footers)):
        heights: dict[str, list[float]] = {}
        for candidates in zone:
            for key, height in {key: row.height for key, row in candidates}.items():
                heights.setdefault(key, []).append(height)
        usual = {key: statistics.median(hs) for key, hs in heights.items() if key and len(hs) >= threshold}
        common = {key for key, hs in heights.items() if len(hs) >= _NEAR_SHARE * counted}
        seen: set[str] = set()
        for position, candidates in enumerate(zone):
            for key, row in candidates:
                if row.index in near[position] and key not in common:
                    continue
                # The same words in a larger type are content: a paper's title on its first
                # page, repeated as the running head of the others. (Not position: footers of
                # documents printed from HTML float up to where each page's text ends.)
                if key not in usual or row.height > _LARGER * usual[key]:
                    continue
                furniture.rows.setdefault(position, set()).add(row.index)
                if key not in seen:
                    seen.add(key)
                    texts.append(row.text)
    return furniture


def _key(row: Row) -> str:
    text = " ".join(row.text.lower().split())
    if len(text) > _MAX_CHARS:
        return ""
    return _DIGITS.sub("#", text) if any(ch.isalpha() for ch in text) or len(text) <= 4 else ""
