"""A scan's OCR layer read against the scan (``processors/_pdf_layer``), in process: the layer's lines that
the scan's words do not show are flagged, within a per-document page budget; without Tesseract, or when
it reads too little, nothing new is flagged and the page is listed as not read."""

from __future__ import annotations

import pymupdf
import pytest

from mcp_server.core.models import ProcessedDocument
from mcp_server.processors import DocumentInput, ProcessOptions, _pdf_layer, process_document
from tests.tools._hidden_documents import PAYLOAD, VISIBLE, scan_with_layer

OTHER = "OCR layer other than the scan's words"


def _two_pages(layer: list[str]) -> bytes:
    """The same scan twice, each page with ``layer``."""
    pdf = pymupdf.open("pdf", scan_with_layer(layer))
    pdf.insert_pdf(pymupdf.open("pdf", scan_with_layer(layer)))
    return bytes(pdf.tobytes())


def _read(data: bytes, **options: object) -> ProcessedDocument:
    return process_document(DocumentInput(data=data, doc_type="pdf", filename="scan.pdf"),
                            ProcessOptions(detect_language=False, **options))  # type: ignore[arg-type]


def _other(doc: ProcessedDocument) -> list[str]:
    return [doc.content[f.start:f.end] for f in doc.flags if f.reason == OTHER]


def test_the_budget_counts_pages_across_the_document_and_the_rest_is_listed() -> None:
    data = _two_pages([VISIBLE[0], PAYLOAD, VISIBLE[2]])
    both = _read(data)
    assert _other(both) == [PAYLOAD, PAYLOAD] and "ocr_layer_unchecked_pages" not in both.metadata
    first = _read(data, pdf_layer_ocr_pages=1)
    assert _other(first) == [PAYLOAD] and first.metadata["ocr_layer_unchecked_pages"] == [2]


def test_without_tesseract_nothing_new_is_flagged_and_the_page_is_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pdf_layer, "ocr_available", lambda: False)
    doc = _read(scan_with_layer([VISIBLE[0], PAYLOAD, VISIBLE[2]]))
    assert PAYLOAD in doc.content and doc.flags == () and doc.metadata["ocr_layer_unchecked_pages"] == [1]


def test_a_reading_that_finds_too_few_words_judges_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_pdf_layer, "ocr_words", lambda image, **_: [(0.0, 0.0, 9.0, 9.0, "orchard", 95.0)])
    doc = _read(scan_with_layer([VISIBLE[0], PAYLOAD, VISIBLE[2]]))
    assert doc.flags == () and doc.metadata["ocr_layer_unchecked_pages"] == [1]


def test_short_layer_lines_are_not_judged_and_cost_no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(image: object, **_: object) -> list[tuple[float, float, float, float, str, float]]:
        raise AssertionError("no OCR for lines too short to judge")

    monkeypatch.setattr(_pdf_layer, "ocr_words", never)
    doc = _read(scan_with_layer(["Page 12", "Fig. 3"]))  # over the scan's ink, saying other (short) things
    assert doc.flags == () and "ocr_layer_unchecked_pages" not in doc.metadata


def test_a_spent_reading_time_reads_no_more_pages() -> None:
    page = pymupdf.open("pdf", scan_with_layer([VISIBLE[0], PAYLOAD, VISIBLE[2]]))[0]
    lines = [(pymupdf.Rect(50, 70 + 20 * i, 500, 84 + 20 * i), text) for i, text in enumerate([VISIBLE[0], PAYLOAD])]
    spent = _pdf_layer.LayerCheck(seconds=0.5)
    assert _pdf_layer.not_read_in_scan(page, lines, spent) == ([], []) and spent.unchecked == [1]
    check = _pdf_layer.LayerCheck()
    [flagged], shown = _pdf_layer.not_read_in_scan(page, lines, check)
    assert flagged.y0 == 90 and shown == [] and check.pages == 9 and 0 < check.seconds < _pdf_layer.SECONDS
