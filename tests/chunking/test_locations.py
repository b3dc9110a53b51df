"""Locations: markers read from content, spans narrowed to a chunk, and chunks citing them."""

from __future__ import annotations

from mcp_server.chunking import ChunkParams, HFTokenCounter, chunk_document, infer_locations
from mcp_server.chunking._locations import LocationIndex
from mcp_server.chunking._params import TEXT_SEPARATORS
from mcp_server.core.models import Location, ProcessedDocument


def test_markers_and_headings_become_location_spans() -> None:
    content = "intro\n--- Page 1 ---\n# A\ntext\n## B\nmore\n--- Page 2 ---\n# C\nend"
    spans = infer_locations(content, "pdf")
    assert spans[0].start == content.index("--- Page 1")
    assert [(s.page, s.heading_path) for s in spans] == [
        (1, ()), (1, ("A",)), (1, ("A", "B")), (2, ("A", "B")), (2, ("C",)),
    ]
    assert all(a.end == b.start for a, b in zip(spans, spans[1:], strict=False))
    assert spans[-1].end == len(content)


def test_a_new_slide_or_sheet_starts_a_fresh_heading_path() -> None:
    content = "--- Slide 1 ---\n# Title\nx\n--- Slide 2 ---\ny"
    assert [(s.slide, s.heading_path) for s in infer_locations(content, "pptx")] == [
        (1, ()), (1, ("Title",)), (2, ()),
    ]
    assert [s.sheet for s in infer_locations("=== Sheet: Q1 ===\n# a\n=== Sheet: Q2 ===\nb", "xlsx")] == [
        "Q1", "Q2"]


def test_content_without_markers_has_no_spans() -> None:
    assert infer_locations("just text\n\nmore text", "txt") == ()


def test_a_chunk_gets_every_page_it_touches_and_the_rows_it_covers() -> None:
    index = LocationIndex([
        Location(start=0, end=10, page=1), Location(start=10, end=20, page=2),
        Location(start=30, end=40, sheet="S", row_start=2, row_end=2),
        Location(start=40, end=50, sheet="S", row_start=3, row_end=3),
        Location(start=50, end=60, sheet="S", row_start=4, row_end=4),
    ])
    assert index.locate(5, 15).pages == (1, 2)
    located = index.locate(35, 45)
    assert (located.sheet, located.row_start, located.row_end) == ("S", 2, 3)
    assert index.locate(22, 25).pages == (2,)  # between spans: inherits the last one


def test_processor_locations_win_over_markers(counter: HFTokenCounter) -> None:
    content = "alpha beta gamma"
    doc = ProcessedDocument(content=content, doc_type="pdf",
                            locations=(Location(start=0, end=len(content), page=7, heading_path=("H",)),))
    params = ChunkParams(chunk_size=500, chunk_overlap=50, separators=TEXT_SEPARATORS, max_tokens=64)
    [chunk] = chunk_document(doc, params, counter)
    assert (chunk.location.pages, chunk.location.heading_path) == ((7,), ("H",))


def test_no_chunk_spans_two_slides(counter: HFTokenCounter) -> None:
    content = "\n\n".join(f"--- Slide {n} ---\nshort slide {n} text" for n in range(1, 6))
    params = ChunkParams(chunk_size=500, chunk_overlap=100, separators=("\n--- Slide", *TEXT_SEPARATORS),
                         max_tokens=256, hard_separators=("\n--- Slide",))
    chunks = chunk_document(ProcessedDocument(content=content, doc_type="pptx"), params, counter)
    assert [c.location.slide for c in chunks] == [1, 2, 3, 4, 5]
    assert all(c.text.count("--- Slide") == 1 for c in chunks)
