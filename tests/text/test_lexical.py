"""What BM25 reads: numbers and years written one way, page markers left out."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mcp_server.core.markup import MARKER_LINE, without_markers
from mcp_server.retrieval.index import DocumentIndex
from mcp_server.text.lexical import _WORD, bm25_tokens, lexical_text, without_page_markers, word_runs
from tests.conftest import DOCS
from tests.retrieval._chunks import make_chunks


def test_thousands_separators_go_so_a_number_is_one_token() -> None:
    assert bm25_tokens(["Net cash from operations 30,583 and 1,234,567"])[0][-2:] == ["30583", "1234567"]
    assert lexical_text("(1,5) and 12,34") == "(1,5) and 12,34"  # only groups of three digits are thousands


def test_a_year_glued_to_a_short_prefix_also_stands_alone() -> None:
    assert "2022" in bm25_tokens(["What was the FY2022 capital expenditure?"])[0]
    assert "2023" in bm25_tokens(["Which region had the biggest drop in Q22023 revenues?"])[0]
    assert "2019" not in bm25_tokens(["Part number AB120193 was recalled"])[0]
    assert lexical_text("in 2022") == "in 2022"


def test_page_marker_lines_are_no_content() -> None:
    tokens = bm25_tokens(["--- Page 12 ---\nRevenue grew\n--- Page 13 ---"])[0]
    assert "page" not in tokens and "12" not in tokens and "13" not in tokens
    assert tokens == bm25_tokens(["Revenue grew"])[0]


def test_a_question_finds_the_chunk_holding_its_number_written_with_separators() -> None:
    chunks = make_chunks(["| Total revenue | 30,583 | 23,198 |", "| Total revenue | 583 | 30 |"])
    index = DocumentIndex.build(chunks, np.eye(2, 8, dtype=np.float32), model_id="fake")
    assert index.bm25_top("which line shows 30583?", 2) == [0]


def test_tokens_are_bm25s_tokens_to_the_token_on_real_documents() -> None:
    """bm25_tokens reads in one pass what bm25s.tokenize reads (its pattern, stopwords and stemmer)."""
    import bm25s
    import Stemmer

    texts = []
    for path in sorted((DOCS / "txt").glob("*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")[:200_000]
        texts += [text[at : at + 2_000] for at in range(0, len(text), 2_000)]
    texts += ["", "--- Page 3 ---", "FY2022 revenue was $30,583 million; Q22023 THE the a"]
    expected = bm25s.tokenize([lexical_text(t) for t in texts], stopwords="en_plus",
                              stemmer=Stemmer.Stemmer("english").stemWords, return_ids=False, show_progress=False)
    assert len(texts) > 100
    assert bm25_tokens(texts) == [list(t) for t in expected]


_MARKED = ["--- Page 3 ---", "--- Slide 2 ---", "=== Sheet: s ===", " --- Page 12 --- ", "--- Page x ---", "\n",
           "\r\n", "word", "12,345", "FY2022", "é", "_", "a", " ", "中文", "\u0301"]


@given(st.lists(st.sampled_from(_MARKED), max_size=20).map("".join) | st.text(max_size=60))
def test_words_and_marker_lines_are_found_as_the_full_patterns_find_them(text: str) -> None:
    assert _WORD.findall(text) == re.findall(r"(?u)\b\w\w+\b", text)  # bm25s' token pattern
    assert without_page_markers(text) == MARKER_LINE.sub(lambda m: "" if m["page"] is not None else m[0], text)
    assert without_markers(text) == MARKER_LINE.sub("", text)


@given(st.lists(st.lists(st.sampled_from(_MARKED), max_size=12).map("".join) | st.text(max_size=40), max_size=8))
def test_bm25_reads_the_template_search_words_on_the_way_without_changing_its_tokens(texts: list[str]) -> None:
    runs: list[list[str] | None] = []
    assert bm25_tokens(texts, runs) == bm25_tokens(texts)
    assert len(runs) == len(texts)
    assert all(read is None or read == word_runs(text) for text, read in zip(texts, runs, strict=True))
