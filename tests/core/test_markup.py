"""The processor -> chunker text contract: what the writers write, the readers read back."""

from __future__ import annotations

import pytest

from mcp_server.chunking import chunk_params_for, infer_locations
from mcp_server.core.markup import (
    HEADING_LINE,
    HEADINGS,
    MARKER_LINE,
    PAGES,
    SHEETS,
    SLIDES,
    heading_line,
    markdown_headings,
    page_marker,
    sheet_marker,
    slide_marker,
)
from mcp_server.processors import DocumentInput, ProcessOptions, process_document


def test_every_marker_written_is_read_back_with_its_value() -> None:
    assert MARKER_LINE.fullmatch(page_marker(12))["page"] == "12"  # type: ignore[index]
    assert MARKER_LINE.fullmatch(slide_marker(3))["slide"] == "3"  # type: ignore[index]
    assert MARKER_LINE.fullmatch(sheet_marker("Q3 = final, draft"))["sheet"] == "Q3 = final, draft"  # type: ignore[index]


@pytest.mark.parametrize(("level", "expected"), [(1, 1), (3, 3), (6, 6), (9, 6)])
def test_every_heading_written_is_read_back_at_its_level(level: int, expected: int) -> None:
    match = HEADING_LINE.fullmatch(heading_line(level, "Net sales, 2022"))
    assert match is not None
    assert (len(match["hashes"]), match["title"]) == (expected, "Net sales, 2022")


def test_headings_follow_commonmark_atx() -> None:
    text = "# C#\n   ## Indented ##\n    # code, not a heading\n#hashtag\n###### Six\n####### Seven\n"
    assert [(level, title) for _, level, title in markdown_headings(text)] == [
        (1, "C#"), (2, "Indented"), (6, "Six"),
    ]


@pytest.mark.parametrize(
    ("breaks", "marker"), [(PAGES, page_marker(1)), (SLIDES, slide_marker(1)), (SHEETS, sheet_marker("S"))]
)
def test_each_structure_break_is_where_its_marker_line_starts(breaks: object, marker: str) -> None:
    assert any(("\n" + marker).startswith(sep) for sep in breaks.separators)  # type: ignore[attr-defined]
    assert set(breaks.hard) <= set(breaks.separators)  # type: ignore[attr-defined]


def test_heading_breaks_are_where_the_first_three_heading_levels_start() -> None:
    assert HEADINGS.separators == tuple("\n" + heading_line(level, "") for level in (1, 2, 3))


def test_the_chunker_finds_the_headings_the_text_processor_found() -> None:
    text = "intro\n# Guide\nabout\n  ## Install ##\nsteps\n# C#\nend\n"
    doc = process_document(DocumentInput(data=text.encode(), doc_type="txt"), ProcessOptions(detect_language=False))
    written = [(loc.start, loc.heading_path) for loc in doc.locations if loc.heading_path]
    read = [(loc.start, loc.heading_path) for loc in infer_locations(text, "txt")]
    assert written == read == [(6, ("Guide",)), (20, ("Guide", "Install")), (42, ("C#",))]


def test_spreadsheets_declare_that_a_hash_cell_is_not_a_heading() -> None:
    content = sheet_marker("S") + "\n# of units | 3\n"
    assert [loc.heading_path for loc in infer_locations(content, "csv")] == [()]
    assert [loc.heading_path for loc in infer_locations(content, "txt")] == [(), ("of units | 3",)]
    assert chunk_params_for("csv", 9000, 4096).hard_separators == SHEETS.hard
