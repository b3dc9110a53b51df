"""PDF: page markers, tables, OCR of scans, encryption, broken pages, the page cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors import DocumentInput, ProcessOptions, process_document
from tests.processors._corpus import process_file

# (file, must_include, must_not_include)
PDF_VECTORS = [
    ("pdf/multi_page.pdf", ["--- Page 1 ---", "--- Page 5 ---", "The Evolution of the Word Processor"], []),
    ("pdf/copy-protected.pdf", ["LayoutParser", "--- Page 2 ---"], []),  # empty user password
    ("pdf/testPDF_bom.pdf", ["Hello World"], []),
    ("pdf/testPDF_bad_page_303226.pdf", ["1309.61", "Drug Enforcement Administration"], []),
    ("pdf/ocr_test.pdf", ["Docling bundles PDF document conversion to", "self contained"], []),
    ("pdf/fr_olap.pdf", ["Résumés et interrogations de logs de requêtes OLAP"], []),
    ("pdf/right_to_left_01.pdf", ["Python"], []),
    ("pdf/korean-text-with-tables.pdf", ["빅포인트"], []),
    ("pdf/REPAIR-2022-INV-001_multipage.pdf", ["ZAVA AUTO REPAIR", "--- Page 3 ---"], []),
    ("pdf/2305.03393v1-pg9.pdf", ["Optimized Table Tokenization"], []),
]


@pytest.fixture(scope="module")
def parsed(corpus_dir: Path) -> dict[str, ProcessedDocument]:
    return {relative: process_file(corpus_dir / "docs", relative) for relative, _, _ in PDF_VECTORS}


@pytest.mark.parametrize(("relative", "must_include", "must_not_include"), PDF_VECTORS)
def test_pdfs_extract_the_expected_text(
    parsed: dict[str, ProcessedDocument], relative: str, must_include: list[str], must_not_include: list[str]
) -> None:
    doc = parsed[relative]
    assert doc.doc_type == "pdf"
    for text in must_include:
        assert text in doc.content
    for text in must_not_include:
        assert text not in doc.content


def test_each_page_has_one_location_span_starting_at_its_marker(parsed: dict[str, ProcessedDocument]) -> None:
    doc = parsed["pdf/multi_page.pdf"]
    assert [loc.page for loc in doc.locations] == [1, 2, 3, 4, 5]
    for loc in doc.locations:
        assert doc.content[loc.start :].startswith(f"--- Page {loc.page} ---")
    assert all(a.end <= b.start for a, b in zip(doc.locations, doc.locations[1:], strict=False))
    assert doc.locations[-1].end == len(doc.content)


def test_metadata_reports_pages_and_ocr(parsed: dict[str, ProcessedDocument]) -> None:
    assert parsed["pdf/multi_page.pdf"].metadata["page_count"] == 5
    assert parsed["pdf/multi_page.pdf"].metadata["ocr_pages"] == []
    scanned = parsed["pdf/ocr_test.pdf"]
    assert scanned.metadata["ocr_pages"] == [1]
    assert scanned.images and scanned.images[0].source == "page 1"
    assert parsed["pdf/testPDF_bad_page_303226.pdf"].metadata["page_count"] == 19


def test_tables_are_markdown_in_content_and_in_tables(parsed: dict[str, ProcessedDocument]) -> None:
    doc = parsed["pdf/REPAIR-2022-INV-001_multipage.pdf"]
    assert doc.tables
    for table in doc.tables:
        assert table.location.startswith("page ")
        assert table.content.startswith("|")
        assert table.content in doc.content


@pytest.mark.parametrize("relative", ["pdf/password.pdf", "pdf/2206.01062_pg3.pdf"])
def test_a_pdf_with_a_real_password_asks_for_it(corpus_dir: Path, relative: str) -> None:
    with pytest.raises(ProcessingError, match="password required") as info:
        process_file(corpus_dir / "docs", relative)
    assert info.value.code == "PROCESSING_ERROR"


@pytest.mark.parametrize(
    "data", [b"%PDF-1.7\n garbage that is not a pdf", b"%PDF-", b"%PDF-1.4\n" + bytes(range(256)) * 10]
)
def test_a_broken_pdf_is_a_processing_error(data: bytes) -> None:
    with pytest.raises(ProcessingError):
        process_document(DocumentInput(data=data, doc_type="pdf"), ProcessOptions())


def test_a_pdf_over_the_page_cap_is_refused(corpus_dir: Path) -> None:
    with pytest.raises(ProcessingError, match="more than the limit of 2"):
        process_file(corpus_dir / "docs", "pdf/multi_page.pdf", max_pdf_pages=2)


@pytest.mark.slow
def test_a_scanned_multi_page_report_is_read_by_ocr(corpus_dir: Path) -> None:
    doc = process_file(corpus_dir / "docs", "pdf/MEDRPT-2024-PAT-3847_medical_report_scan.pdf")
    assert "SEATTLE GENERAL HOSPITAL" in doc.content
    assert doc.metadata["ocr_pages"] == [1, 2, 3]
