"""Row lookup for the query_spreadsheet tool: read an XLSX or CSV, search every sheet's rows.

Kept apart from ``tabular`` because it needs both readers, and ``xlsx``/``csv`` import
``tabular`` themselves (no import cycle).
"""

from __future__ import annotations

from typing import Any

from mcp_server.core.errors import ValidationError
from mcp_server.core.visibility import clean_text, settle
from mcp_server.processors._xlsx_hidden import mark_hidden_cells
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.csv import read_csv
from mcp_server.processors.tabular import RawSheet, analyse, search_sheets
from mcp_server.processors.xlsx import read_xlsx

__all__ = ["search_spreadsheet"]


def search_spreadsheet(inp: DocumentInput, options: ProcessOptions, search_value: str,
                       column: str | None = None, max_matches: int = 100) -> dict[str, Any]:
    """Rows of ``inp`` (sniffed "xlsx" or "csv") whose cells contain ``search_value``.

    Returns ``{"matches": [{"sheet", "row_number", <header>: value, ...}], "match_count",
    "sheets_searched", "truncated"}``. Raises ``ValidationError`` for another document type or
    an unknown ``column``, ``ProcessingError`` when the file cannot be read.
    """
    if inp.doc_type == "xlsx":
        raws = mark_hidden_cells(inp.data, read_xlsx(inp.data, options))
    elif inp.doc_type == "csv":
        raws = [read_csv(inp)[0]]
    else:
        raise ValidationError(
            f"query_spreadsheet needs an XLSX or CSV document (got {inp.doc_type or 'unknown'})",
            argument="document_url",
        )
    # cells settled as process_document settles text: invisible code points out, hidden cells dropped under drop
    raws = [RawSheet(name=clean_text(raw.name), rows=[[settle(v, options.hidden_text).text if isinstance(v, str)
                                                       else v for v in row] for row in raw.rows]) for raw in raws]
    return search_sheets([analyse(raw) for raw in raws], search_value, column=column,
                         max_matches=max_matches)
