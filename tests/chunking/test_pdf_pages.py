"""Real PDFs through the real PDF processor: every chunk names exactly the pages its text is on.

The chunker reshapes PDF text (a table's title and header repeated on its continuation chunks,
page marker lines never opening a chunk); an agent that cites ``location.pages`` must still
find every line of the chunk on those pages. Run over every readable corpus PDF and, marked
slow, over real filings (a 10-Q and two earnings releases full of tables).
"""

from __future__ import annotations

import bisect
from pathlib import Path

import pytest

from mcp_server.chunking import HFTokenCounter, chunk_document, chunk_params_for
from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import Chunk, ProcessedDocument
from tests.conftest import DOCS, qa_set
from tests.processors._corpus import process_file

PDFS = sorted(p.name for p in (DOCS / "pdf").glob("*.pdf"))
REPORTS = ["BESTBUY_2024Q2_10Q.pdf", "AMCOR_2023Q4_EARNINGS.pdf", "ULTABEAUTY_2023Q4_EARNINGS.pdf"]


def _chunks(folder: Path, name: str, counter: HFTokenCounter) -> tuple[ProcessedDocument, list[Chunk]]:
    try:
        doc = process_file(folder, name, detect_language=False)
    except ProcessingError as exc:  # the encrypted corpus files: nothing to chunk
        pytest.skip(f"{name}: {exc}")
    params = chunk_params_for(doc.doc_type, len(doc.content), counter.max_tokens)
    return doc, chunk_document(doc, params, counter)


def _assert_pages_exact(doc: ProcessedDocument, chunks: list[Chunk]) -> None:
    spans = sorted((loc for loc in doc.locations if loc.page is not None), key=lambda loc: loc.start)
    assert spans, "the PDF processor names the page of every span"
    starts = [loc.start for loc in spans]
    for chunk in chunks:
        start, end = chunk.location.start_char, chunk.location.end_char
        touched = [loc for loc in spans if loc.start < end and loc.end > start]
        assert list(chunk.location.pages) == sorted({loc.page for loc in touched}), chunk.location
        first = spans[bisect.bisect_right(starts, start) - 1]
        assert first.page == chunk.location.pages[0] and first.start <= start
        # every line of the text, a repeated table title and header included, is printed on
        # the pages the chunk names: nothing comes from another page
        on_pages = "\n".join(doc.content[loc.start:loc.end] for loc in spans if loc.page in chunk.location.pages)
        for line in chunk.text.splitlines():
            assert line.strip() in on_pages, (chunk.location.pages, line)
        assert not chunk.text.startswith("--- Page")  # a chunk opens with content, not a marker


@pytest.mark.parametrize("name", PDFS)
def test_every_chunk_of_a_corpus_pdf_is_found_on_the_pages_it_names(name: str, counter: HFTokenCounter) -> None:
    doc, chunks = _chunks(DOCS / "pdf", name, counter)
    _assert_pages_exact(doc, chunks)


@pytest.mark.slow
@pytest.mark.parametrize("name", REPORTS)
def test_every_chunk_of_a_real_filing_is_found_on_the_pages_it_names(name: str, counter: HFTokenCounter) -> None:
    doc, chunks = _chunks(qa_set("financebench-dev") / "docs", name, counter)  # skipped without the QA sets
    assert any(chunk.content_type == "table" for chunk in chunks)
    _assert_pages_exact(doc, chunks)
