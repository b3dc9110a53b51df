"""Spreadsheet row search (query_spreadsheet) and the shared table analysis."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from mcp_server.core.errors import ValidationError
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.sheet_search import search_spreadsheet
from mcp_server.processors.tabular import RawSheet, analyse, search_sheets

OPTIONS = ProcessOptions()


def _input(corpus_dir: Path, relative: str, doc_type: str) -> DocumentInput:
    path = corpus_dir / "docs" / relative
    return DocumentInput(data=path.read_bytes(), doc_type=doc_type, filename=path.name)


def test_a_team_name_is_found_in_every_sheet_of_the_workbook(corpus_dir: Path) -> None:
    result = search_spreadsheet(_input(corpus_dir, "xlsx/stanley-cups.xlsx", "xlsx"), OPTIONS, "maple")
    assert result["match_count"] == 2
    assert result["sheets_searched"] == ["Stanley Cups", "Stanley Cups Since 67"]
    assert result["matches"][0] == {"sheet": "Stanley Cups", "row_number": 5, "Team": "Maple Leafs",
                                    "Location": "TOR", "Stanley Cups": 13}
    assert result["truncated"] is False
    json.dumps(result)


def test_a_csv_is_searched_with_its_detected_header(corpus_dir: Path) -> None:
    result = search_spreadsheet(_input(corpus_dir, "csv/stanley-cups.csv", "csv"), OPTIONS, "PHI")
    assert result["matches"] == [{"sheet": "stanley-cups.csv", "row_number": 4, "Team": "Flyers",
                                  "Location": "PHI", "Stanley Cups": "2"}]


def test_the_column_filter_is_case_insensitive_and_limits_the_search(corpus_dir: Path) -> None:
    inp = _input(corpus_dir, "csv/csv-comma.csv", "csv")
    assert search_spreadsheet(inp, OPTIONS, "Chile", column="country")["match_count"] == 1
    assert search_spreadsheet(inp, OPTIONS, "Chile", column="CITY")["match_count"] == 0


def test_an_unknown_column_lists_the_available_columns(corpus_dir: Path) -> None:
    inp = _input(corpus_dir, "xlsx/stanley-cups.xlsx", "xlsx")
    with pytest.raises(ValidationError, match="available columns: Team, Location, Stanley Cups"):
        search_spreadsheet(inp, OPTIONS, "x", column="Coach")


def test_matches_beyond_the_limit_are_counted_and_marked_truncated(corpus_dir: Path) -> None:
    inp = _input(corpus_dir, "xlsx/test.xlsx", "xlsx")
    result = search_spreadsheet(inp, OPTIONS, "1", max_matches=3)
    assert len(result["matches"]) == 3
    assert result["match_count"] > 3
    assert result["truncated"] is True


def test_a_non_spreadsheet_document_is_a_validation_error(corpus_dir: Path) -> None:
    inp = _input(corpus_dir, "pdf/multi_page.pdf", "pdf")
    with pytest.raises(ValidationError, match=r"query_spreadsheet needs an XLSX or CSV document \(got pdf\)"):
        search_spreadsheet(inp, OPTIONS, "anything")


def test_cells_come_back_json_safe() -> None:
    sheet = analyse(RawSheet(name="S", rows=[
        ["Name", "When", "Score"],
        ["alpha", dt.datetime(2024, 5, 1, 13, 30), float("nan")],
        ["beta", dt.date(2024, 5, 2), 1.5],
    ]))
    result = search_sheets([sheet], "ALPHA")
    assert result["matches"] == [{"sheet": "S", "row_number": 2, "Name": "alpha",
                                  "When": "2024-05-01 13:30:00", "Score": None}]
    json.dumps(result)


def test_header_scoring_prefers_the_header_over_a_title_and_over_text_data_rows() -> None:
    sheet = analyse(RawSheet(name="S", rows=[
        ["Quarterly report", None, None, None],
        [None, None, None, None],
        [None, "Region", "Owner", "Notes"],
        ["x", "North", "Ann", "fine"],
        ["y", "South", "Bob", "late"],
    ]))
    assert sheet.header_row == 3
    assert sheet.title_lines == ("Quarterly report",)
    assert sheet.headers == ("Column 1", "Region", "Owner", "Notes")
    assert [n for n, _ in sheet.rows] == [4, 5]


def test_column_types_follow_the_eighty_percent_rule() -> None:
    rows = [["num", "mixed", "when"]]
    rows += [[str(i), str(i) if i < 7 else "n/a", f"2024-01-0{i}"] for i in range(1, 10)]
    sheet = analyse(RawSheet(name="S", rows=rows))
    assert sheet.column_types == {"num": "numeric", "mixed": "text", "when": "datetime"}


def test_duplicate_and_missing_header_names_are_made_unique() -> None:
    sheet = analyse(RawSheet(name="S", rows=[["a", "A", None, "b"], ["1", "2", "3", "4"]]))
    assert sheet.headers == ("a", "A (2)", "Column 3", "b")
