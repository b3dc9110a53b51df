"""PPTX: corpus vectors, slide sections and locations, notes, tables, charts, broken shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server.core.models import ProcessedDocument
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.pptx import PptxProcessor

# (file, must_include, must_not_include)
VECTORS = [
    ("powerpoint_sample.pptx", ["--- Slide 1 ---", "# Test Table Slide",
                                "| R1 | True | False |", "A merged with B | A merged with B",
                                "Notes: Some notes on the second slide.", "- Let’s introduce a list"], []),
    ("testPPT_various2.pptx", ["# Slide2Header", "- FirstBullet", "Notes: NotesForSlide2",
                               "tika_hyperlink (http://tika.apache.org/)", "Chart: SLIDE3ChartTitle",
                               "Series: Series 1, Series 2, Series 3"], []),
    ("testPPT_various.pptx", ["Here is a text box", "| Row 1 Col 1 | Row 1 Col 2 | Row 1 Col 3 |",
                              "This is a hyperlink (http://tika.apache.org/)"], []),
    ("fake-power-point-table.pptx", ["# A Slide with a Table", "| Column 1 | Column 2 | Column 3 |",
                                     "| Tangerine | Pink | Aqua |"], []),
    ("sample-presentation.pptx", ["# This is the first content slide", "  - With a sub-bullet",
                                  "    - This one is a sub-sub-bullet", "| 1 | A1 | B1 | C1 |"], []),
    ("eng_spa_mult.pptx", ["# Testing multiple languages", "Todos los seres humanos nacen libres"], []),
    ("test.pptx", ["# A table to test parsing:", "| ColA | ColB |", "Categories: 2000, 2001, 2002, 2003",
                   "This is a nested shape with content in 2 shapes",
                   "[Image: This phrase of the caption is Human-written.]"], []),
    ("pptx_chart.pptx", ["Chart: Wild Duck Observations by Year",
                         "Series: Freshwater Ducks, Saltwater Ducks"], []),
    ("fake-power-point-malformed.pptx", ["# Test Slide", "Problem Date Placeholder"], []),
]


def _process(corpus_dir: Path, name: str) -> ProcessedDocument:
    data = (corpus_dir / "docs" / "pptx" / name).read_bytes()
    return PptxProcessor().process(DocumentInput(data=data, doc_type="pptx"), ProcessOptions())


@pytest.mark.parametrize(("name", "must_include", "must_not_include"), VECTORS, ids=[v[0] for v in VECTORS])
def test_pptx_corpus_files_give_their_expected_text(
    corpus_dir: Path, name: str, must_include: list[str], must_not_include: list[str]
) -> None:
    doc = _process(corpus_dir, name)
    for fragment in must_include:
        assert fragment in doc.content, fragment
    for fragment in must_not_include:
        assert fragment not in doc.content, fragment


def test_each_slide_has_one_location_spanning_its_section(corpus_dir: Path) -> None:
    doc = _process(corpus_dir, "testPPT_various2.pptx")
    assert [loc.slide for loc in doc.locations] == list(range(1, 11))
    for loc in doc.locations:
        assert doc.content[loc.start : loc.end].startswith(f"--- Slide {loc.slide} ---")
    assert doc.locations[-1].end == len(doc.content)


def test_run_hyperlinks_are_collected_with_their_slide(corpus_dir: Path) -> None:
    doc = _process(corpus_dir, "testPPT_various2.pptx")
    link = {"slide": 2, "text": "tika_hyperlink", "url": "http://tika.apache.org/"}
    assert link in doc.metadata["hyperlinks"]


def test_tables_are_returned_with_their_slide(corpus_dir: Path) -> None:
    doc = _process(corpus_dir, "sample-presentation.pptx")
    assert [t.location for t in doc.tables] == ["slide 4"]


def test_a_malformed_placeholder_does_not_lose_the_slide(corpus_dir: Path) -> None:
    doc = _process(corpus_dir, "fake-power-point-malformed.pptx")
    assert doc.content.index("# Test Slide") < doc.content.index("Problem Date Placeholder")
    assert doc.metadata["slide_count"] == 1
