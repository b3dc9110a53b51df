"""Location spans shared by processors: heading paths over Markdown-like content."""

from __future__ import annotations

from collections.abc import Iterable

from mcp_server.core.models import Location

__all__ = ["heading_locations"]


def heading_locations(content: str, headings: Iterable[tuple[int, int, str]]) -> tuple[Location, ...]:
    """One span per section: from each heading to the next, carrying the outer headings' path.

    Text before the first heading gets a span with an empty path, so the spans cover the
    whole content, sorted and without overlap.
    """
    spans: list[Location] = []
    stack: list[tuple[int, str]] = []
    previous_start, previous_path = 0, ()  # type: tuple[int, tuple[str, ...]]
    for offset, level, title in sorted(headings):
        if offset > previous_start:
            spans.append(Location(start=previous_start, end=offset, heading_path=previous_path))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        previous_start, previous_path = offset, tuple(name for _, name in stack)
    if len(content) > previous_start:
        spans.append(Location(start=previous_start, end=len(content), heading_path=previous_path))
    return tuple(spans)
