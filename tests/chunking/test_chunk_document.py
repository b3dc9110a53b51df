"""chunk_document's edges: blank input, a window wider than the model, over-long words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_server.chunking import ChunkParams, HFTokenCounter, chunk_document, chunk_params_for
from mcp_server.chunking._params import TEXT_SEPARATORS
from mcp_server.core.models import ProcessedDocument


@pytest.mark.parametrize("content", ["", "   ", "\n\n\t \n"])
def test_a_blank_document_gives_no_chunks(content: str, counter: HFTokenCounter) -> None:
    params = chunk_params_for("txt", len(content), counter.max_tokens)
    assert chunk_document(ProcessedDocument(content=content, doc_type="txt"), params, counter) == []


def test_the_empty_corpus_file_gives_no_chunks(corpus_dir: Path, counter: HFTokenCounter) -> None:
    content = (corpus_dir / "docs/txt/empty.txt").read_text(encoding="utf-8")
    params = chunk_params_for("txt", len(content), counter.max_tokens)
    assert chunk_document(ProcessedDocument(content=content, doc_type="txt"), params, counter) == []


def test_parameters_wider_than_the_model_window_are_refused(counter: HFTokenCounter) -> None:
    params = chunk_params_for("txt", 10_000, 512)
    with pytest.raises(ValueError):
        chunk_document(ProcessedDocument(content="some text", doc_type="txt"), params, counter)


def test_a_word_longer_than_a_chunk_is_hard_split_into_pieces_that_fit(counter: HFTokenCounter) -> None:
    blob = "a.b" * 400  # one "word" of 1,200 characters, about 1,200 tokens
    content = f"before the blob {blob} after the blob"
    params = ChunkParams(chunk_size=500, chunk_overlap=50, separators=TEXT_SEPARATORS, max_tokens=64)
    chunks = chunk_document(ProcessedDocument(content=content, doc_type="txt"), params, counter)
    assert all(c.token_count <= 64 for c in chunks)
    start = content.index(blob)
    pieces = [c for c in chunks if start <= c.location.start_char < start + len(blob)]
    assert len(pieces) > 1
    assert "".join(c.text for c in pieces).startswith(blob)  # consecutive, no overlap inside a word
    assert chunks[0].text == "before the blob"  # the blob does not share a chunk it cannot fit in
    assert chunks[-1].text.endswith("after the blob")


def test_chunking_is_deterministic(corpus_dir: Path, counter: HFTokenCounter) -> None:
    content = (corpus_dir / "docs/txt/norwich-city.txt").read_text(encoding="utf-8")
    doc = ProcessedDocument(content=content, doc_type="txt")
    params = chunk_params_for("txt", len(content), counter.max_tokens)
    assert chunk_document(doc, params, counter) == chunk_document(doc, params, counter)


def test_prose_chunks_end_at_paragraph_breaks_and_overlap_only_inside_a_split_paragraph(
    corpus_dir: Path, counter: HFTokenCounter
) -> None:
    content = (corpus_dir / "qa/squad-v2-small/docs/Normans.txt").read_text(encoding="utf-8")
    params = chunk_params_for("txt", len(content), counter.max_tokens)
    chunks = chunk_document(ProcessedDocument(content=content, doc_type="txt"), params, counter)
    paragraphs = [m for m in re.finditer(r"\S+(?:[ \t]*\n?[ \t]*\S+)*", content)]
    fits = {(m.start(), m.end()) for m in paragraphs
            if counter.count_tokens([m.group()])[0] <= params.max_tokens
            and m.end() - m.start() <= params.chunk_size}
    assert len(fits) > 20
    for start, end in fits:  # a paragraph that fits a chunk lies whole inside one
        assert any(c.location.start_char <= start and end <= c.location.end_char for c in chunks)
    overlaps = []
    for before, after in zip(chunks, chunks[1:], strict=False):
        overlap = before.location.end_char - after.location.start_char
        if content[before.location.end_char:after.location.start_char] == "\n\n":
            continue  # ends at a paragraph break: the next chunk starts the next paragraph
        assert "\n\n" not in content[after.location.start_char:before.location.end_char]
        overlaps.append(overlap)
    assert overlaps and all(params.chunk_overlap - 40 <= o <= params.chunk_overlap for o in overlaps)