"""Structured data as ``path: value`` lines, one per scalar, located by their leading path.

JSON and YAML values (and XML elements, ``xml.py``) keep their keys: ``$.orders[2].total: 12.5``.
A location starts wherever the first two path steps change, its heading path those steps
(``("$.orders", "$.orders[2]")``), so a hit names where in the data it is. Output stops with a
clear error past ``MAX_LINES`` lines: YAML aliases can make a small file a huge tree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import Location

__all__ = ["MAX_LINES", "key_step", "lines_document", "walk"]

MAX_LINES = 500_000
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


def key_step(key: object) -> str:
    text = str(key)
    return f".{text}" if _IDENTIFIER.match(text) else f"[{text!r}]"


def walk(value: Any, path: tuple[str, ...] = ("$",)) -> Iterator[tuple[tuple[str, ...], str]]:
    """``(path steps, scalar text)`` of every scalar, depth first, without recursion."""
    stack: list[tuple[tuple[str, ...], Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, dict):
            if not item:
                yield where, "{}"
            stack.extend((where + (key_step(k),), v) for k, v in reversed(list(item.items())))
        elif isinstance(item, list | tuple):
            if not item:
                yield where, "[]"
            stack.extend((where + (f"[{i}]",), v) for i, v in reversed(list(enumerate(item))))
        else:
            yield where, "null" if item is None else str(item).lower() if isinstance(item, bool) else str(item)


def lines_document(pairs: Iterator[tuple[tuple[str, ...], str]]) -> tuple[str, tuple[Location, ...], int]:
    """The ``path: value`` text, its locations (by the first two steps) and the line count."""
    lines: list[str] = []
    locations: list[Location] = []
    length, current, start = 0, None, 0  # type: int, tuple[str, ...] | None, int
    for steps, text in pairs:
        if len(lines) >= MAX_LINES:
            raise ProcessingError(f"the data has more than {MAX_LINES} values (expanded)", limit="values")
        head = tuple("".join(steps[: n + 1]) for n in range(1, min(len(steps), 3)))
        if head != current:
            if current is not None and length > start:
                locations.append(Location(start=start, end=length - 1, heading_path=current))
            current, start = head, length
        line = f"{''.join(steps)}: {text}"
        lines.append(line)
        length += len(line) + 1
    if current is not None and length > start:
        locations.append(Location(start=start, end=length - 1, heading_path=current))
    return "\n".join(lines), tuple(locations), len(lines)
