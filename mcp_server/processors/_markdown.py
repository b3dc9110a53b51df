"""Markdown table rendering shared by the processors (one row per line, so chunking can split
tables between rows and repeat the header)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["markdown_table"]


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return " ".join(text.replace("|", "\\|").split())  # a cell never breaks its row


def markdown_table(grid: Sequence[Sequence[object]]) -> str:
    """First row as the header; short rows padded; pipes escaped; newlines in cells folded."""
    if not grid:
        return ""
    width = max(len(row) for row in grid)
    if width == 0:
        return ""
    rows = [[_cell(value) for value in row] + [""] * (width - len(row)) for row in grid]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * width]
    lines.extend("| " + " | ".join(row) + " |" for row in rows[1:])
    return "\n".join(lines)
