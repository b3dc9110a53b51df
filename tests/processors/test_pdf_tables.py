"""PDF tables read from the text layer: header row, title above, values in their columns.

Statement pages come from the financebench-dev filings (corpus material, read as files); each
test parses one page copied out of its filing, so it runs in well under a second.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from mcp_server.core.models import ProcessedDocument
from mcp_server.processors import DocumentInput, ProcessOptions, process_document
from tests.conftest import qa_set
from tests.processors._corpus import process_file


@pytest.fixture(scope="module")
def filings() -> Path:
    return qa_set("financebench-dev") / "docs"  # not in the repository: skipped without the QA sets


def page_of(pdf: Path, number: int) -> ProcessedDocument:
    """One page of a PDF, copied into a PDF of its own, through the registry."""
    with pymupdf.open(pdf) as source, pymupdf.open() as single:
        single.insert_pdf(source, from_page=number - 1, to_page=number - 1)
        data = single.tobytes()
    return process_document(DocumentInput(data=data, doc_type="pdf"), ProcessOptions(detect_language=False))


def test_a_borderless_table_becomes_a_markdown_table_with_its_header_row_right_under_its_title(
    corpus_dir: Path,
) -> None:
    doc = process_file(corpus_dir / "docs", "pdf/SPARSE-2024-INV-1234_borderless_table.pdf")
    assert (
        "Prepared By: Sarah Martinez\n"
        "| Product Code | Location | Expected | Actual | Variance | Status |\n|---|---|---|---|---|---|\n"
        "| SKU-8847 | A-12 | 450 |  |  |  |\n"
        "|  | B-07 |  | 289 | -23 |  |\n"
    ) in doc.content
    assert "| SKU-4563 | D-22 |  | 156 |  | CRITICAL |" in doc.content
    assert (
        "Extended Inventory Review:\n"
        "| Product Code | Category | Unit Cost | Total Value | Last Audit | Notes |\n|---|---|---|---|---|---|\n"
        "| SKU-8847 | Electronics | $45.00 | $13,005.00 | 2024-10-15 |  |\n"
    ) in doc.content
    assert [table.metadata["page"] for table in doc.tables] == [1, 2]
    assert doc.tables[1].metadata["title"] == "Extended Inventory Review:"
    assert all(table.content in doc.content for table in doc.tables)


def test_a_statement_keeps_its_title_and_period_header_and_puts_each_number_in_its_column(filings: Path) -> None:
    doc = page_of(filings / "3M_2022_10K.pdf", 48)
    assert (
        "3M Company and Subsidiaries\nConsolidated Statement of Income\nYears ended December 31\n"
        "| (Millions, except per share amounts) | 2022 | 2021 | 2020 |\n|---|---|---|---|\n"
        "| Net sales | $34,229 | $35,355 | $32,184 |\n"
        "| Operating expenses |  |  |  |\n"
        "| Cost of sales | 19,232 | 18,795 | 16,605 |\n"
    ) in doc.content
    assert "| Gain on business divestitures | (2,724) | — | (389) |" in doc.content
    assert "| Net income attributable to 3M | $5,777 | $5,921 | $5,449 |" in doc.content


def test_a_caption_over_several_columns_is_repeated_in_the_header_of_each(filings: Path) -> None:
    segments = page_of(filings / "Pfizer_2023Q2_10Q.pdf", 38).content
    assert (
        "| (MILLIONS) | Three Months Ended July 2, 2023 | Three Months Ended July 3, 2022 "
        "| Three Months Ended % Change | Six Months Ended July 2, 2023 | Six Months Ended July 3, 2022 "
        "| Six Months Ended % Change |"
    ) in segments
    assert "| United States | $6,185 | $11,222 | (45) | $14,692 | $20,140 | (27) |" in segments
    # A caption drawn over its columns with a rule under it spans all of them, not only the
    # column it happens to overlap.
    income = page_of(filings / "ADOBE_2022_10K.pdf", 54).content
    assert (
        "CONSOLIDATED STATEMENTS OF INCOME\n(In millions, except per share data)\n"
        "|  | Years Ended December 2, 2022 | Years Ended December 3, 2021 | Years Ended November 27, 2020 |"
    ) in income
    assert "| Subscription | $16,388 | $14,573 | $11,626 |" in income


def test_a_label_wrapped_onto_a_second_line_is_one_cell_beside_its_numbers(filings: Path) -> None:
    content = page_of(filings / "MGMRESORTS_2022Q4_EARNINGS.pdf", 14).content
    assert (
        "| Income from unconsolidated affiliates related to real estate ventures "
        "| (2,704) | (41,651) | (61,866) | (166,658) |"
    ) in content


def test_section_labels_between_the_header_and_the_first_row_are_rows_of_the_table(filings: Path) -> None:
    content = page_of(filings / "AMCOR_2023_10K.pdf", 52).content
    assert (
        "| As of June 30, | 2023 | 2022 |\n|---|---|---|\n"
        "| Assets |  |  |\n| Current assets: |  |  |\n| Cash and cash equivalents | $689 | $775 |\n"
    ) in content


@pytest.mark.parametrize("relative", ["pdf/multi_page.pdf", "pdf/fr_olap.pdf", "pdf/copy-protected.pdf"])
def test_prose_documents_get_no_tables(corpus_dir: Path, relative: str) -> None:
    doc = process_file(corpus_dir / "docs", relative)
    assert doc.tables == ()
    assert "|---" not in doc.content


def test_a_two_column_paper_page_stays_prose(corpus_dir: Path) -> None:
    with pymupdf.open(corpus_dir / "docs" / "pdf" / "2206.01062_pg3.pdf") as pdf:
        assert pdf.authenticate("1234")  # the corpus README gives the password
        data = pdf.tobytes(encryption=pymupdf.PDF_ENCRYPT_NONE)
    doc = process_document(DocumentInput(data=data, doc_type="pdf"), ProcessOptions())
    assert doc.tables == ()
    assert "|" not in doc.content
    assert "Table 1 shows the overall frequency and distribution of the labels\namong the di" in doc.content


@pytest.mark.parametrize(("name", "page"), [("AMCOR_2023_10K.pdf", 5), ("BOEING_2022_10K.pdf", 8)])
def test_narrative_pages_and_bulleted_lists_of_a_filing_stay_prose(filings: Path, name: str, page: int) -> None:
    doc = page_of(filings / name, page)
    assert doc.tables == ()
    assert "|---" not in doc.content


def test_a_table_continued_below_a_line_of_text_keeps_the_columns_and_header_of_the_table_above(
    filings: Path,
) -> None:
    content = page_of(filings / "AMCOR_2023Q4_EARNINGS.pdf", 12).content
    header = (
        "| ($ million) | Twelve Months Ended June 30, 2022 EBITDA | Twelve Months Ended June 30, 2022 EBIT "
        "| Twelve Months Ended June 30, 2022 Net Income"
    )
    assert content.count(header) == 2
    assert "Reconciliation of adjusted growth to comparable constant currency growth\n" + header in content
    assert "| Adjusted EBITDA | 2,117 |  |  |  | 2,018 |  |  |  |" in content
