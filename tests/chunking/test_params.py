"""Adaptive parameters: the seed's table, length scaling, the override and the model window."""

from __future__ import annotations

import pytest

from mcp_server.chunking import CHUNK_WINDOWS, CHUNKER_VERSION, ChunkParams, chunk_params_for
from mcp_server.core.errors import ValidationError

WIDE = 4096  # a window wide enough that the seed's sizes stand as they are


@pytest.mark.parametrize(("doc_type", "size", "overlap"), [
    ("pdf", 1500, 300), ("pptx", 800, 150), ("xlsx", 1200, 200), ("csv", 1200, 200),
    ("docx", 1500, 300), ("html", 1500, 300), ("txt", 1200, 250), ("image", 1200, 250),
])
def test_each_document_type_gets_the_seed_size_and_overlap(doc_type: str, size: int, overlap: int) -> None:
    params = chunk_params_for(doc_type, 50_000, WIDE)
    assert (params.chunk_size, params.chunk_overlap) == (size, overlap)


def test_long_documents_get_bigger_chunks_and_short_ones_smaller() -> None:
    assert chunk_params_for("pdf", 200_000, WIDE).chunk_size == 2250
    assert chunk_params_for("pdf", 200_000, WIDE).chunk_overlap == 390
    small = chunk_params_for("pptx", 1000, WIDE)
    assert (small.chunk_size, small.chunk_overlap) == (400, 75)
    assert chunk_params_for("txt", 1000, WIDE).chunk_overlap == 125


def test_separators_put_slide_and_sheet_markers_before_paragraphs_lines_sentences_and_words() -> None:
    assert chunk_params_for("pptx", 9000, WIDE).separators == ("\n--- Slide", "\n\n", "\n", ". ", " ")
    assert chunk_params_for("xlsx", 9000, WIDE).separators[0] == "\n=== Sheet"
    assert chunk_params_for("txt", 9000, WIDE).separators == ("\n\n", "\n", ". ", " ")
    assert chunk_params_for("pptx", 9000, WIDE).hard_separators == ("\n--- Slide",)


def test_a_narrow_model_window_keeps_the_overlap_share_of_what_a_chunk_really_holds() -> None:
    params = chunk_params_for("pdf", 50_000, 128)
    assert params.max_tokens == 128 * CHUNK_WINDOWS  # units are embedded, not chunks: several windows fit
    assert params.chunk_size == 1500  # the token bound is enforced exactly when chunking
    assert params.chunk_overlap == round(300 * (128 * CHUNK_WINDOWS - 2) * 4 / 1500)


def test_a_size_override_replaces_the_size_and_keeps_the_overlap_ratio() -> None:
    params = chunk_params_for("pdf", 500_000, WIDE, size_override=700)
    assert (params.chunk_size, params.chunk_overlap) == (700, 140)


@pytest.mark.parametrize("size", [0, 49, 100_001])
def test_an_unreasonable_size_override_is_a_validation_error(size: int) -> None:
    with pytest.raises(ValidationError):
        chunk_params_for("txt", 1000, 256, size_override=size)


def test_the_cache_key_is_stable_and_changes_with_every_parameter() -> None:
    params = chunk_params_for("pdf", 50_000, 256)
    assert params.cache_key() == chunk_params_for("pdf", 50_000, 256).cache_key()
    assert CHUNKER_VERSION in params.cache_key()
    others = {chunk_params_for("pptx", 50_000, 256), chunk_params_for("pdf", 50_000, 128),
              chunk_params_for("pdf", 500_000, 256), chunk_params_for("pdf", 50_000, 256, size_override=900)}
    assert len({params.cache_key()} | {other.cache_key() for other in others}) == 5


@pytest.mark.parametrize("kwargs", [
    {"chunk_size": 0}, {"chunk_overlap": 500}, {"max_tokens": 4}, {"separators": ("--",)},
    {"hard_separators": ("\n---",)},
])
def test_inconsistent_parameters_are_refused(kwargs: dict[str, object]) -> None:
    values: dict[str, object] = {"chunk_size": 500, "chunk_overlap": 50, "separators": ("\n\n", " "),
                                 "max_tokens": 256, **kwargs}
    with pytest.raises(ValueError):
        ChunkParams(**values)  # type: ignore[arg-type]
