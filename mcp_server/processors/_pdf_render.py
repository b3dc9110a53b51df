"""A page's text in reading order, with each table as Markdown under its title.

Text blocks come in PyMuPDF's ``sort=True`` order (block bottom, then left), lines joined by
newlines, blocks by blank lines. A table takes the place of its first block; its title (the
short lines right above it that belong to no table) moves along with it and is separated from
it by a single newline, so a chunk that starts the table also holds what the table is.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_server.processors._pdf_layout import PageWords, Row
from mcp_server.processors._pdf_tables import Table

__all__ = ["render_page", "title_rows"]

_TITLE_ROWS = 6
_TITLE_GAP = 2.0  # line heights between a title line and what is below it
_TITLE_CHARS = 120
_SENTENCE_WORDS = 8  # a line ending a longer sentence is prose, not a title
_PARAGRAPH_GAP = 0.6  # line heights between two lines of one paragraph


def title_rows(page: PageWords, tables: Sequence[Table], dropped: set[int]) -> list[list[Row]]:
    """For each table, the rows just above it that caption it, top to bottom."""
    taken = {row.index for table in tables for row in table.rows}
    titles: list[list[Row]] = []
    for table in tables:
        found: list[Row] = []
        below = table.rows[0]
        for index in range(below.index - 1, -1, -1):
            row = page.rows[index]
            if index in dropped:
                continue
            if index in taken or len(found) >= _TITLE_ROWS or below.y0 - row.y1 > _TITLE_GAP * page.line_height:
                break
            if not _title_like(page, row):
                break
            found.insert(0, row)
            taken.add(index)
            below = row
        titles.append(found)
    return titles


def _title_like(page: PageWords, row: Row) -> bool:
    """Short, not the end of a sentence, and not the last line of a paragraph."""
    text = row.text
    if len(text) > _TITLE_CHARS or (text.endswith(".") and text.count(" ") >= _SENTENCE_WORDS):
        return False
    if row.index > 0:
        above = page.rows[row.index - 1]
        if len(above.text) > _TITLE_CHARS and row.y0 - above.y1 < _PARAGRAPH_GAP * page.line_height:
            return False
    return True


def render_page(page: PageWords, tables: Sequence[Table], titles: Sequence[list[Row]], dropped: set[int]) -> str:
    """Blocks in reading order; a table replaces its words where its first word would be."""
    owner: dict[tuple[int, int, int], int] = {}
    for number, (table, title) in enumerate(zip(tables, titles, strict=True)):
        for row in (*title, *table.rows):
            for word in row.words:
                owner[word[5], word[6], word[7]] = number
    for row in page.rows:
        if row.index in dropped:
            for word in row.words:
                owner[word[5], word[6], word[7]] = -1

    blocks: dict[int, list[tuple[float, float, float, float, str, int, int, int]]] = {}
    for word in page.words:
        blocks.setdefault(word[5], []).append(word)
    order = sorted(blocks.values(), key=lambda ws: (max(w[3] for w in ws), min(w[0] for w in ws)))

    parts: list[str] = []
    emitted: set[int] = set()
    for block in order:
        lines: list[str] = []
        current_line, texts = -1, []  # type: int, list[str]
        for word in block:
            if word[6] != current_line:
                if texts:
                    lines.append(" ".join(texts))
                current_line, texts = word[6], []
            owned = owner.get((word[5], word[6], word[7]))
            if owned is None:
                texts.append(word[4])
            elif owned >= 0 and owned not in emitted:
                emitted.add(owned)
                if texts:
                    lines.append(" ".join(texts))
                    texts = []
                if lines:
                    parts.append("\n".join(lines))
                    lines = []
                parts.append(_table_text(tables[owned], titles[owned]))
        if texts:
            lines.append(" ".join(texts))
        if lines:
            parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _table_text(table: Table, title: list[Row]) -> str:
    caption = "\n".join(row.text for row in title)
    return f"{caption}\n{table.markdown()}" if caption else table.markdown()
