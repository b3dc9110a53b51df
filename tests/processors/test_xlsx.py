"""XLSX: every sheet, header detection, row caps, tables and locations, edge cases, fuzzing."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import openpyxl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.xlsx import XlsxProcessor

from ._office_helpers import rewrite_part

# (file, must_include, must_not_include)
VECTORS = [
    ("stanley-cups.xlsx", ["=== Sheet: Stanley Cups ===", "=== Sheet: Stanley Cups Since 67 ===",
                           "| Team | Location | Stanley Cups |", "| Maple Leafs | TOR | 13 |"], []),
    ("2023-half-year-analyses-by-segment.xlsx", ["=== Sheet: OS-Rev.and results 30 06 2023 ===",
                                                 "| Zone NA | 12553 |", "(showing 20 of 27 rows)"], []),
    ("eng_spa.xlsx", ["=== Sheet: English ===", "=== Sheet: Spanish ===", "Todos los seres humanos"], []),
    ("xlsx_01.xlsx", ["=== Sheet: Sheet1 ===", "=== Sheet: Sheet4 ===", "| first | second | third |"], []),
    ("xlsx_06_edge_cases_.xlsx", ["=== Sheet: missing_header_head ===", "=== Sheet: Attached_left ===",
                                  "=== Sheet: Diagonal ===", "| Attached left | Overview |"], []),
    ("basic_tables_two_sheets.xlsx", ["| col_a | col_b |", "| 1.5 | test |", "| col_c | col_d |"], ["nan"]),
    ("testEXCEL.xlsx", ["=== Sheet: Feuil1 ===", "Sample Excel Worksheet - Numbers and their Squares",
                        "| Number | Square |"], []),
    ("protectedSheets.xlsx", ["=== Sheet: Лист1 ===", "=== Sheet: Лист3 ===", "защищена формула"], []),
    ("test.xlsx", ["=== Sheet: 09060124-b5e7-4717-9d07-3c046eb ===", "affc7dad-52dc-4b98-9b5d-51e65d8a8ad0",
                   "(showing 20 of 23 rows)"], []),
]


def _process(data: bytes, options: ProcessOptions | None = None) -> ProcessedDocument:
    return XlsxProcessor().process(DocumentInput(data=data, doc_type="xlsx"), options or ProcessOptions())


def _corpus(corpus_dir: Path, name: str) -> ProcessedDocument:
    return _process((corpus_dir / "docs" / "xlsx" / name).read_bytes())


@pytest.mark.parametrize(("name", "must_include", "must_not_include"), VECTORS, ids=[v[0] for v in VECTORS])
def test_xlsx_corpus_files_give_their_expected_text(
    corpus_dir: Path, name: str, must_include: list[str], must_not_include: list[str]
) -> None:
    doc = _corpus(corpus_dir, name)
    assert doc.doc_type == "xlsx"
    for fragment in must_include:
        assert fragment in doc.content, fragment
    for fragment in must_not_include:
        assert fragment not in doc.content, fragment


def test_the_header_row_below_a_title_row_wins(corpus_dir: Path) -> None:
    doc = _corpus(corpus_dir, "stanley-cups.xlsx")
    table = doc.tables[0]
    assert table.metadata["header_row"] == 2
    assert table.metadata["column_types"] == {"Team": "text", "Location": "text", "Stanley Cups": "numeric"}
    assert table.metadata["density"]["Team"] == 1.0
    assert table.table_type == "spreadsheet" and table.location == "sheet Stanley Cups"


def test_columns_shared_across_sheets_are_reported(corpus_dir: Path) -> None:
    doc = _corpus(corpus_dir, "stanley-cups.xlsx")
    assert doc.metadata["shared_columns"]["Team"] == ["Stanley Cups", "Stanley Cups Since 67"]


def test_each_sheet_has_a_location_with_its_rendered_source_rows(corpus_dir: Path) -> None:
    doc = _corpus(corpus_dir, "stanley-cups.xlsx")
    first = doc.locations[0]
    assert (first.sheet, first.row_start, first.row_end) == ("Stanley Cups", 3, 5)
    assert doc.content[first.start : first.end].startswith("=== Sheet: Stanley Cups ===")


def test_rows_are_capped_per_sheet_and_the_total_is_stated() -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Data"
    sheet["C5"], sheet["D5"] = "Name", "Value"
    for i in range(50):
        sheet.cell(row=6 + i, column=3, value=f"item{i}")
        sheet.cell(row=6 + i, column=4, value=i)
    buf = io.BytesIO()
    book.save(buf)
    doc = _process(buf.getvalue(), ProcessOptions(max_rows_per_sheet=5))
    assert "(showing 5 of 50 rows)" in doc.content
    assert "item4" in doc.content and "item5 " not in doc.content
    loc = doc.locations[0]
    assert (loc.row_start, loc.row_end) == (6, 10)
    assert doc.tables[0].metadata["header_row"] == 5


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_xlsx_bytes_give_a_document_or_a_processing_error(
    corpus_dir: Path, data: st.DataObject
) -> None:
    buf = bytearray((corpus_dir / "docs" / "xlsx" / "basic_tables_two_sheets.xlsx").read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        buf = buf[: data.draw(st.integers(0, len(buf)))]
    with contextlib.suppress(ProcessingError):
        _process(bytes(buf))


def test_a_workbook_whose_stylesheet_openpyxl_cannot_read_is_read_with_plainer_styles(corpus_dir: Path) -> None:
    # As another office suite writes it: fonts inside markup-compatibility alternate content, and
    # the builtin "Normal" named style without a name (openpyxl: TypeError).
    source = (corpus_dir / "docs" / "xlsx" / "stanley-cups.xlsx").read_bytes()

    def odd(styles: bytes) -> bytes:
        fonts = styles[styles.index(b"<font>"):styles.index(b"</fonts>")]
        alternate = (b'<mc:AlternateContent><mc:Choice xmlns:hs="urn:example:suite" Requires="hs">' + fonts +
                     b"</mc:Choice><mc:Fallback>" + fonts + b"</mc:Fallback></mc:AlternateContent>")
        return styles.replace(fonts, alternate).replace(b' name="Normal"', b"")

    data = rewrite_part(source, "xl/styles.xml", odd)
    with pytest.raises(TypeError):
        openpyxl.load_workbook(io.BytesIO(data))
    doc = _process(data)
    assert doc.content == _corpus(corpus_dir, "stanley-cups.xlsx").content


def test_cell_formats_that_hide_their_text_are_read_from_the_styles_and_a_malformed_size_is_not_one() -> None:
    from mcp_server.processors._xlsx_colours import hiding_formats

    styles = (b'<styleSheet><numFmts count="1"><numFmt numFmtId="164" formatCode=";;;"/></numFmts>'
              b'<fonts count="3"><font><sz val="11"/></font><font><sz val="1"/></font><font><sz val="1.2.3"/></font>'
              b'</fonts><fills count="1"><fill><patternFill patternType="none"/></fill></fills>'
              b'<cellXfs count="4"><xf fontId="0" fillId="0" numFmtId="0"/><xf fontId="1" fillId="0" numFmtId="0"/>'
              b'<xf fontId="0" fillId="0" numFmtId="164"/><xf fontId="2" fillId="0" numFmtId="0"/></cellXfs>'
              b'</styleSheet>')
    assert hiding_formats(styles) == {1: "tiny text (1 pt or less)", 2: "number format shows nothing"}
