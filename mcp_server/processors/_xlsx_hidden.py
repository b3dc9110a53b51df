"""Workbook cells a reader of the open workbook does not see: hidden and very hidden sheets, hidden rows and columns.

Read from the package's XML (``xl/workbook.xml`` names each sheet's state and part; a sheet part's
``<row hidden="1">`` and ``<col hidden="1">``): pandas' read-only openpyxl reading does not keep
row and column dimensions. A sheet part without the word ``hidden`` is not parsed further, so a
workbook with nothing hidden costs a substring search per sheet. Cells whose text is the colour of
their fill, 1 pt or less, or under a number format that shows nothing are found from the
stylesheet (``_xlsx_colours``).
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from collections.abc import Sequence
from typing import Any

from mcp_server.core.visibility import hidden
from mcp_server.processors._xlsx_colours import hidden_cells, hiding_formats
from mcp_server.processors.tabular import RawSheet

__all__ = ["mark_hidden_cells"]

_SHEET = re.compile(rb"<(?:\w+:)?sheet\b([^>]*)/?>")
_ATTR = re.compile(rb'([\w:]+)\s*=\s*"([^"]*)"')
_REL = re.compile(rb"<(?:\w+:)?Relationship\b([^>]*)/?>")
_ROW = re.compile(rb"<(?:\w+:)?row\b([^>]*)>")
_COL = re.compile(rb"<(?:\w+:)?col\b([^>]*)/?>")
_TRUE = (b"1", b"true")
_COLUMN_LIMIT = 16_384  # Excel's last column, XFD


def _attrs(raw: bytes) -> dict[bytes, bytes]:
    return {name.split(b":")[-1] if name != b"r:id" else name: value for name, value in _ATTR.findall(raw)}


def _sheet_parts(book: zipfile.ZipFile) -> dict[str, tuple[str, str]]:
    """sheet name -> (state, part path)."""
    workbook = book.read("xl/workbook.xml")
    rels = {a.get(b"Id", b""): a.get(b"Target", b"") for a in map(_attrs, _REL.findall(
        book.read("xl/_rels/workbook.xml.rels")))}
    out = {}
    for found in _SHEET.findall(workbook):
        attrs = _attrs(found)
        target = rels.get(attrs.get(b"r:id", b""), b"").decode("utf-8", "replace")
        path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join("xl", target))
        name = attrs.get(b"name", b"").decode("utf-8", "replace")
        out[_unescape(name)] = (attrs.get(b"state", b"visible").decode("ascii", "replace"), path)
    return out


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&apos;", "'").replace(
        "&amp;", "&")


def _hidden_rows_columns(part: bytes) -> tuple[set[int], set[int]]:
    if b"hidden" not in part:
        return set(), set()
    rows = set()
    for raw in _ROW.findall(part):
        attrs = _attrs(raw)
        if attrs.get(b"hidden") in _TRUE and attrs.get(b"r", b"").isdigit():
            rows.add(int(attrs[b"r"]))
    columns: set[int] = set()
    for raw in _COL.findall(part):
        attrs = _attrs(raw)
        if attrs.get(b"hidden") in _TRUE and attrs.get(b"min", b"").isdigit() and attrs.get(b"max", b"").isdigit():
            columns.update(range(int(attrs[b"min"]), min(int(attrs[b"max"]), _COLUMN_LIMIT) + 1))
    return rows, columns


def _mark(value: Any, reason: str) -> Any:
    if value is None or value != value:  # an empty cell (None, or pandas' NaN)
        return value
    text = str(value)
    return hidden(text, reason) if text.strip() else value


def mark_hidden_cells(data: bytes, sheets: Sequence[RawSheet]) -> list[RawSheet]:
    """``sheets`` with the cells of hidden sheets, rows and columns marked; unchanged when the package's
    XML cannot be read as expected (the cells were read already: what is hidden is a flag, not a parse)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as book:
            parts = _sheet_parts(book)
            names = set(book.namelist())
            formats = hiding_formats(book.read("xl/styles.xml")) if "xl/styles.xml" in names else {}
            out = []
            for sheet in sheets:
                state, path = parts.get(sheet.name, ("visible", ""))
                if state in ("hidden", "veryHidden"):
                    reason = "very hidden sheet" if state == "veryHidden" else "hidden sheet"
                    out.append(RawSheet(name=sheet.name, rows=[[_mark(v, reason) for v in row] for row in sheet.rows]))
                    continue
                part = book.read(path) if path in names else b""
                rows, columns = _hidden_rows_columns(part)
                formatted = hidden_cells(part, formats) if formats else {}
                if not rows and not columns and not formatted:
                    out.append(sheet)
                    continue
                out.append(RawSheet(name=sheet.name, rows=[
                    [_mark(v, "hidden row") if number in rows else _mark(v, "hidden column") if col in columns
                     else _mark(v, formatted[number, col]) if (number, col) in formatted else v
                     for col, v in enumerate(row, start=1)]
                    for number, row in enumerate(sheet.rows, start=1)
                ]))
            return out
    except (KeyError, zipfile.BadZipFile, ValueError):
        return list(sheets)
