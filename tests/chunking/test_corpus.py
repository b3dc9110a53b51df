"""Real corpus files: pages, slides, sheets and heading paths come out right."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_server.chunking import CHUNK_WINDOWS, HFTokenCounter, chunk_document, chunk_params_for
from mcp_server.core.models import Chunk, ProcessedDocument
from tests.chunking._documents import docx_document, pdf_document, pptx_document, xlsx_document

PAGE = re.compile(r"--- Page (\d+) ---")


def _chunk(doc: ProcessedDocument, counter: HFTokenCounter) -> list[Chunk]:
    params = chunk_params_for(doc.doc_type, len(doc.content), counter.max_tokens)
    chunks = chunk_document(doc, params, counter)
    assert chunks
    assert all(c.token_count <= params.max_tokens <= CHUNK_WINDOWS * counter.max_tokens for c in chunks)
    assert counter.count_tokens([c.text for c in chunks]) == [c.token_count for c in chunks]
    return chunks


def test_redbook_chunks_cite_the_pages_whose_markers_they_contain(
    corpus_dir: Path, counter: HFTokenCounter
) -> None:
    doc = pdf_document(corpus_dir / "docs/pdf/redp5110_sampled.pdf")
    chunks = _chunk(doc, counter)
    starts = [(m.start(), int(m[1])) for m in PAGE.finditer(doc.content)]
    assert [page for _, page in starts] == list(range(1, 19))
    for chunk in chunks:
        start, end = chunk.location.start_char, chunk.location.end_char
        inside = [page for offset, page in starts if start <= offset < end]
        before = [page for offset, page in starts if offset <= start]
        expected = sorted({*inside, *before[-1:]})
        assert list(chunk.location.pages) == expected
    assert {p for c in chunks for p in c.location.pages} == set(range(1, 19))


def test_pptx_chunks_name_their_slide(corpus_dir: Path, counter: HFTokenCounter) -> None:
    doc = pptx_document(corpus_dir / "docs/pptx/powerpoint_sample.pptx")
    chunks = _chunk(doc, counter)
    for chunk in chunks:
        assert chunk.location.slide is not None
        assert f"--- Slide {chunk.location.slide} ---" in doc.content[:chunk.location.start_char + 20]
        assert chunk.text.count("--- Slide") <= 1
    assert len({c.location.slide for c in chunks}) == doc.content.count("--- Slide")


def test_xlsx_chunks_name_their_sheet(corpus_dir: Path, counter: HFTokenCounter) -> None:
    doc = xlsx_document(corpus_dir / "docs/xlsx/basic_tables_two_sheets.xlsx")
    chunks = _chunk(doc, counter)
    names = re.findall(r"=== Sheet: (.*?) ===", doc.content)
    assert len(names) == 2
    assert [c.location.sheet for c in chunks if "=== Sheet" in c.text] == names
    for chunk in chunks:
        last_marker = doc.content.rfind("=== Sheet: ", 0, chunk.location.start_char + len("=== Sheet: "))
        assert doc.content[last_marker:].startswith(f"=== Sheet: {chunk.location.sheet} ===")
    assert {c.content_type for c in chunks} == {"table"}


@pytest.mark.slow
def test_the_872_page_handbook_chunks_with_heading_paths(corpus_dir: Path, counter: HFTokenCounter) -> None:
    doc = docx_document(corpus_dir / "docs/docx/handbook-872p.docx")
    assert len(doc.content) > 800_000
    chunks = _chunk(doc, counter)
    assert len(chunks) > 400  # 2 model windows a chunk (chunker 3 on): 434 chunks, 832 before
    with_path = [c for c in chunks if c.location.heading_path]
    assert len(with_path) > 0.95 * len(chunks)
    for chunk in with_path[::25]:  # the path names the last heading before the chunk
        line_end = doc.content.find("\n", chunk.location.start_char)
        heading = re.findall(r"^#+ (.*)$", doc.content[:line_end], re.MULTILINE)[-1]
        assert chunk.location.heading_path[-1] == heading
    starting_with_heading = [c for c in chunks if c.text.startswith("#")]
    assert len(starting_with_heading) > 100  # chunks prefer to start at a section
