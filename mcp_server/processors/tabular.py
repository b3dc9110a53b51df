"""Shared table analysis for XLSX and CSV: header detection, column typing, Markdown, row search.

A reader (``xlsx.py``, ``csv.py``) turns bytes into ``RawSheet``s: plain Python cell values,
``None`` for empty, row ``i`` being source row ``i + 1``. ``analyse`` finds the header row
among the first 10 non-empty rows, scoring each ``uniqueness x 0.5 + text_ratio x 0.3 +
coverage x 0.2`` (the earliest row within ``_HEADER_SLACK`` of the best wins, so a header whose
coverage is a little lower still beats an all-text data row). Rows above the header are kept
as the sheet's title lines. Columns are typed numeric (> 80 % of non-empty values are numbers),
datetime (> 80 % dates/times) or text, with a density (non-empty ratio).

``build_document`` renders every sheet as ``=== Sheet: NAME ===`` + a summary + a Markdown
table of the first ``max_rows`` rows; ``search_sheets`` is the row lookup of query_spreadsheet.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_server.core.errors import ValidationError
from mcp_server.core.markup import sheet_marker
from mcp_server.core.models import ExtractedTable, Location, ProcessedDocument

__all__ = ["RawSheet", "Sheet", "analyse", "build_document", "json_value", "search_sheets"]

_HEADER_SCAN_ROWS = 10
_HEADER_SLACK = 0.05
_TYPE_THRESHOLD = 0.8
_NUMBER = re.compile(r"^[-+(]?[$€£¥]?\s?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][-+]?\d+)?\)?\s?%?$")
_DATE = re.compile(
    r"^(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?"
    r"|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}( \d{1,2}:\d{2}(:\d{2})?)?"
    r"|\d{1,2}[A-Za-z]{3}\d{2,4}(:\d{2}:\d{2}:\d{2})?"
    r"|\d{1,2}:\d{2}(:\d{2})?)$"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class RawSheet:
    name: str
    rows: list[list[Any]]  # rows[i] is source row i + 1; None marks an empty cell


@dataclass(frozen=True, kw_only=True, slots=True)
class Sheet:
    name: str
    headers: tuple[str, ...]
    header_row: int | None  # 1-based source row, None when no rows at all
    title_lines: tuple[str, ...]  # non-empty rows above the header, cells joined
    rows: tuple[tuple[int, tuple[Any, ...]], ...]  # (source row, values aligned with headers)
    column_types: dict[str, str]
    density: dict[str, float]


def analyse(raw: RawSheet) -> Sheet:
    """Find the header, drop empty rows and columns, type the columns."""
    numbered = [(i + 1, [_clean(v) for v in row]) for i, row in enumerate(raw.rows)]
    numbered = [(n, row) for n, row in numbered if any(v is not None for v in row)]
    width = max((len(row) for _, row in numbered), default=0)
    keep = [c for c in range(width) if any(c < len(row) and row[c] is not None for _, row in numbered)]
    grid = [(n, tuple(row[c] if c < len(row) else None for c in keep)) for n, row in numbered]
    if not grid:
        return Sheet(name=raw.name, headers=(), header_row=None, title_lines=(), rows=(),
                     column_types={}, density={})
    h = _header_index([row for _, row in grid[:_HEADER_SCAN_ROWS]])
    headers = _header_names(grid[h][1])
    titles = tuple(" | ".join(_text(v) for v in row if v is not None) for _, row in grid[:h])
    data = tuple(grid[h + 1 :])
    types: dict[str, str] = {}
    density: dict[str, float] = {}
    for c, name in enumerate(headers):
        values = [row[c] for _, row in data if row[c] is not None]
        types[name] = _column_type(values)
        density[name] = round(len(values) / len(data), 3) if data else 0.0
    return Sheet(name=raw.name, headers=headers, header_row=grid[h][0], title_lines=titles,
                 rows=data, column_types=types, density=density)


def build_document(sheets: Sequence[Sheet], *, doc_type: str, max_rows: int,
                   metadata: dict[str, Any] | None = None) -> ProcessedDocument:
    parts: list[str] = []
    locations: list[Location] = []
    tables: list[ExtractedTable] = []
    offset = 0
    for sheet in sheets:
        text, table = _render(sheet, max_rows)
        if parts:
            offset += 2
        shown = sheet.rows[:max_rows]
        locations.append(Location(
            start=offset, end=offset + len(text), sheet=sheet.name,
            row_start=shown[0][0] if shown else sheet.header_row,
            row_end=shown[-1][0] if shown else sheet.header_row,
        ))
        offset += len(text)
        parts.append(text)
        tables.append(ExtractedTable(
            content=table, table_type="spreadsheet", location=f"sheet {sheet.name}",
            metadata={"sheet": sheet.name, "rows": len(sheet.rows), "columns": len(sheet.headers),
                      "header_row": sheet.header_row, "headers": list(sheet.headers),
                      "column_types": sheet.column_types, "density": sheet.density},
        ))
    meta: dict[str, Any] = {
        "sheet_count": len(sheets),
        "sheets": [{"name": s.name, "rows": len(s.rows), "columns": len(s.headers),
                    "header_row": s.header_row} for s in sheets],
        "shared_columns": shared_columns(sheets),
        **(metadata or {}),
    }
    return ProcessedDocument(content="\n\n".join(parts), doc_type=doc_type, metadata=meta,
                             tables=tuple(tables), locations=tuple(locations))


def shared_columns(sheets: Sequence[Sheet]) -> dict[str, list[str]]:
    """Header names (case-insensitive) found in two or more sheets -> those sheets."""
    seen: dict[str, tuple[str, list[str]]] = {}
    for sheet in sheets:
        for name in dict.fromkeys(sheet.headers):
            if name.startswith("Column "):
                continue  # placeholder names relate nothing
            display, names = seen.setdefault(name.casefold(), (name, []))
            if sheet.name not in names:
                names.append(sheet.name)
    return {display: names for display, names in seen.values() if len(names) > 1}


def search_sheets(sheets: Sequence[Sheet], search_value: str, *, column: str | None = None,
                  max_matches: int = 100) -> dict[str, Any]:
    """Rows where a cell contains ``search_value`` (case-insensitive), as {header: value}."""
    needle = search_value.casefold().strip()
    if not needle:
        raise ValidationError("search_value must not be empty", argument="search_value")
    wanted = column.casefold().strip() if column is not None else None
    if wanted is not None:
        available = list(dict.fromkeys(h for s in sheets for h in s.headers))
        if not any(h.casefold() == wanted for h in available):
            raise ValidationError(
                f"unknown column {column!r}; available columns: {', '.join(available)}",
                argument="column", available_columns=available,
            )
    matches: list[dict[str, Any]] = []
    total = 0
    for sheet in sheets:
        targets = [i for i, h in enumerate(sheet.headers) if wanted is None or h.casefold() == wanted]
        for number, row in sheet.rows:
            if any(row[i] is not None and needle in _text(row[i]).casefold() for i in targets):
                total += 1
                if len(matches) < max_matches:
                    record = {"sheet": sheet.name, "row_number": number}
                    record.update({h: json_value(v) for h, v in zip(sheet.headers, row, strict=True)})
                    matches.append(record)
    return {"matches": matches, "match_count": total,
            "sheets_searched": [s.name for s in sheets], "truncated": total > len(matches)}


def json_value(value: Any) -> Any:
    """A cell as JSON: NaN/inf -> None, dates ISO 8601, anything unknown as text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return _text(value)
    return str(value)


# --- analysis -----------------------------------------------------------------------------
def _clean(value: Any) -> Any:
    """Normalise a reader's cell: empty strings, NaN, NaT and pandas NA become None."""
    if value is None:
        return None
    if isinstance(value, str):
        value = value.strip()
        return value or None
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ in ("NaTType", "NAType"):
        return None
    if hasattr(value, "to_pydatetime"):  # pandas Timestamp -> datetime
        return value.to_pydatetime()
    if hasattr(value, "item") and callable(value.item):  # numpy scalars -> Python
        return value.item()
    return value


def _header_index(rows: Sequence[tuple[Any, ...]]) -> int:
    width = max((len(r) for r in rows), default=1) or 1
    scores = []
    for row in rows:
        filled = [v for v in row if v is not None]
        if not filled:
            scores.append(0.0)
            continue
        uniqueness = len({_text(v).casefold() for v in filled}) / len(filled)
        text_ratio = sum(_is_text(v) for v in filled) / len(filled)
        coverage = len(filled) / width
        scores.append(uniqueness * 0.5 + text_ratio * 0.3 + coverage * 0.2)
    best = max(scores)
    return next(i for i, s in enumerate(scores) if s >= best - _HEADER_SLACK)


def _header_names(row: tuple[Any, ...]) -> tuple[str, ...]:
    names: list[str] = []
    used: set[str] = set()
    for i, value in enumerate(row):
        base = " ".join(_text(value).split()) if value is not None else f"Column {i + 1}"
        name, n = base, 2
        while name.casefold() in used:
            name, n = f"{base} ({n})", n + 1
        used.add(name.casefold())
        names.append(name)
    return tuple(names)


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and not _NUMBER.match(value) and not _DATE.match(value)


def _column_type(values: list[Any]) -> str:
    if not values:
        return "empty"
    numbers = sum(
        (isinstance(v, int | float) and not isinstance(v, bool))
        or (isinstance(v, str) and bool(_NUMBER.match(v)) and any(ch.isdigit() for ch in v))
        for v in values
    )
    if numbers / len(values) > _TYPE_THRESHOLD:
        return "numeric"
    dates = sum(isinstance(v, dt.date | dt.time) or (isinstance(v, str) and bool(_DATE.match(v)))
                for v in values)
    if dates / len(values) > _TYPE_THRESHOLD:
        return "datetime"
    return "text"


# --- rendering ----------------------------------------------------------------------------
def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else format(value, ".15g")
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)


def _render(sheet: Sheet, max_rows: int) -> tuple[str, str]:
    """The sheet's content section and its Markdown table."""
    lines = [sheet_marker(sheet.name)]
    lines.extend(sheet.title_lines)
    if not sheet.headers:
        lines.append("(empty sheet)")
        return "\n".join(lines), ""
    lines.append(f"Rows: {len(sheet.rows)} | Columns: {len(sheet.headers)} | Header row: {sheet.header_row}")
    lines.append("Columns: " + ", ".join(
        f"{h} ({sheet.column_types[h]}, {sheet.density[h]:.0%} filled)" for h in sheet.headers
    ))
    shown = sheet.rows[:max_rows]
    table = "\n".join([
        "| " + " | ".join(_cell(h) for h in sheet.headers) + " |",
        "|" + "---|" * len(sheet.headers),
        *("| " + " | ".join(_cell(_text(v)) for v in row) + " |" for _, row in shown),
    ])
    lines.append("")
    lines.append(table)
    lines.append(f"(showing {len(shown)} of {len(sheet.rows)} rows)")
    return "\n".join(lines), table


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())
