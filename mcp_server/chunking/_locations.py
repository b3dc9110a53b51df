"""Where a chunk comes from: pages, slide, sheet, rows and heading path of its span."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from typing import TypeVar

from mcp_server.core.markup import HEADING_LINE, MARKER_LINE
from mcp_server.core.models import ChunkLocation, Location
from mcp_server.processors.base import format_for

# HEADING_LINE and MARKER_LINE are core/markup's, re-exported for the layout's sticky lines.
__all__ = ["HEADING_LINE", "MARKER_LINE", "LocationIndex", "infer_locations", "structure_cuts"]

_T = TypeVar("_T")


def infer_locations(content: str, doc_type: str) -> tuple[Location, ...]:
    """Location spans read from the markers in ``content`` (for documents nobody annotated).

    A new span starts at every ``--- Page N ---``, ``--- Slide N ---``, ``=== Sheet: NAME ===``
    and Markdown heading line (unless the format declares ``headings=False``: in a spreadsheet
    a cell starting with "# " is data). A slide or sheet starts a fresh heading
    path. Text before the first marker has no span; no markers gives ``()``.
    """
    events: list[tuple[int, re.Match[str]]] = [(m.start(), m) for m in MARKER_LINE.finditer(content)]
    declared = format_for(doc_type)
    if declared is None or declared.chunking.headings:
        events += [(m.start(), m) for m in HEADING_LINE.finditer(content)]
    events.sort(key=lambda event: event[0])

    spans: list[Location] = []
    page: int | None = None
    slide: int | None = None
    sheet: str | None = None
    path: list[tuple[int, str]] = []  # (heading level, title), outermost first
    for index, (start, match) in enumerate(events):
        if match.re is MARKER_LINE:
            if match["page"] is not None:
                page = int(match["page"])
            elif match["slide"] is not None:
                slide, path = int(match["slide"]), []
            else:
                sheet, path = match["sheet"], []
        else:
            level = len(match["hashes"])
            path = [entry for entry in path if entry[0] < level] + [(level, match["title"])]
        end = events[index + 1][0] if index + 1 < len(events) else len(content)
        if end > start:
            spans.append(Location(start=start, end=end, page=page, slide=slide, sheet=sheet,
                                  heading_path=tuple(title for _, title in path)))
    return tuple(spans)


def structure_cuts(locations: Sequence[Location]) -> list[int]:
    """Offsets where the slide or sheet changes: no chunk may span one (a chunk has one of each)."""
    cuts: list[int] = []
    for before, after in zip(locations, locations[1:], strict=False):
        if (before.slide, before.sheet) != (after.slide, after.sheet):
            cuts.append(after.start)
    return cuts


class LocationIndex:
    """Answers "where is content[start:end]?" over sorted, non-overlapping location spans."""

    def __init__(self, locations: Sequence[Location]) -> None:
        self._spans = sorted(locations, key=lambda loc: loc.start)
        self._starts = [loc.start for loc in self._spans]
        self._ends = [loc.end for loc in self._spans]

    def locate(self, start: int, end: int) -> ChunkLocation:
        """The chunk's location: pages of every span it touches; the rest from where it starts.

        Slide, sheet and heading path come from the span holding ``start`` (or the last span
        before it when ``start`` falls between spans); rows are the smallest ``row_start`` and
        largest ``row_end`` among the touched spans of that sheet, so per-row spans narrow the
        range to the chunk's rows.
        """
        first = bisect.bisect_right(self._ends, start)  # first span ending after start
        stop = bisect.bisect_left(self._starts, end)  # spans starting before end
        touched = self._spans[first:stop]
        at = bisect.bisect_right(self._starts, start) - 1
        home = self._spans[at] if at >= 0 else (touched[0] if touched else None)
        if home is None:
            return ChunkLocation(start_char=start, end_char=end)

        pages = sorted({loc.page for loc in touched if loc.page is not None})
        if not pages and home.page is not None:
            pages = [home.page]
        slide = home.slide if home.slide is not None else _first(loc.slide for loc in touched)
        sheet = home.sheet if home.sheet is not None else _first(loc.sheet for loc in touched)
        rows = [loc for loc in touched if loc.sheet == sheet and loc.row_start is not None]
        row_start = min(loc.row_start for loc in rows if loc.row_start is not None) if rows else None
        row_end = max((loc.row_end for loc in rows if loc.row_end is not None), default=None)
        return ChunkLocation(
            start_char=start,
            end_char=end,
            pages=tuple(pages),
            slide=slide,
            sheet=sheet,
            row_start=row_start,
            row_end=row_end,
            heading_path=home.heading_path,
        )


def _first(values: Iterable[_T | None]) -> _T | None:
    return next((value for value in values if value is not None), None)
