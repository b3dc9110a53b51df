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
_MIN_PAGES = 3
_MIN_SHARE = 0.1  # of the pages
_DRIFT = 0.06  # of the page height: how far a running line may stray from its usual place
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


def find_running_lines(pages: Sequence[PageWords | None], protected: Sequence[set[int]]) -> Furniture:
    """Rows repeated at the top (or bottom) of many pages; ``protected`` rows (tables, titles) never are."""
    top: list[list[tuple[str, Row]]] = []
    bottom: list[list[tuple[str, Row]]] = []
    for page, keep in zip(pages, protected, strict=True):
        rows = [] if page is None else [row for row in page.rows if row.index not in keep]
        top.append([(_key(row), row) for row in rows[:_ZONE_ROWS]])
        bottom.append([(_key(row), row) for row in rows[-_ZONE_ROWS:]] if len(rows) > _ZONE_ROWS else [])
    counted = sum(1 for page in pages if page is not None)
    threshold = max(_MIN_PAGES, _MIN_SHARE * counted)
    furniture = Furniture()
    for zone, texts in ((top, furniture.headers), (bottom, furniture.footers)):
        places: dict[str, list[float]] = {}
        for candidates in zone:
            for key, y in {key: row.y0 for key, row in candidates}.items():
                places.setdefault(key, []).append(y)
        usual = {key: statistics.median(ys) for key, ys in places.items() if key and len(ys) >= threshold}
        seen: set[str] = set()
        for position, candidates in enumerate(zone):
            page = pages[position]
            for key, row in candidates:
                # The same words far from where they usually stand are content: a paper's
                # title on its first page, repeated as the running head of the others.
                if key not in usual or page is None or abs(row.y0 - usual[key]) > _DRIFT * page.height:
                    continue
                furniture.rows.setdefault(position, set()).add(row.index)
                if key not in seen:
                    seen.add(key)
                    texts.append(row.text)
    return furniture


def _key(row: Row) -> str:
    text = " ".join(row.text.lower().split())
    return _DIGITS.sub("#", text) if any(ch.isalpha() for ch in text) or len(text) <= 4 else ""
