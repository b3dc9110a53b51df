"""QuoteIndex: exact after normalising only whitespace, hyphenation, quotes and dashes; close with the
same numbers and most words; none otherwise. (Through MCP: tests/tools/test_reading.py.)"""

from __future__ import annotations

import pytest

from mcp_server.citations.quotes import CLOSE_SIMILARITY, QuoteIndex, normalise

TEXT = (
    "--- Page 1 ---\nRevenue for the year was $30,583 million, up 4 % from\n2021. The self-\n"
    "publishing market grew; “growth” was strong — very strong.\n\n| Net sales | $34,229 | $35,355 |\n"
    "Total net lease payments were small. The board met twice in\nSeptember to approve the dividend."
)


@pytest.fixture(scope="module")
def index() -> QuoteIndex:
    return QuoteIndex.build(TEXT)


@pytest.mark.parametrize("quote", [
    "Revenue for the year was $30,583 million, up 4 % from 2021.",
    "The selfpublishing market grew",  # a hyphen between letters reads the same with or without it
    "The self-publishing market grew",
    'market grew; "growth" was strong - very strong.',  # typographic quotes and dashes made plain
    "The board met twice in   September",
])
def test_copied_text_is_exact_and_points_at_its_place(index: QuoteIndex, quote: str) -> None:
    found = index.find(quote)
    assert found.match == "exact" and found.similarity == 1.0
    assert found.start is not None and found.end is not None
    assert normalise(TEXT[found.start : found.end]) == normalise(quote)


def test_a_number_is_never_cut_nor_changed(index: QuoteIndex) -> None:
    assert index.find("Revenue for the year was $30,58").match != "exact"
    changed = index.find("Revenue for the year was $30,538 million, up 4 % from 2021.")
    assert changed.match == "none" and "numbers" in changed.reason
    assert ("$30,538", "$30,583") in changed.differences


def test_one_word_changed_is_close_with_the_documents_wording(index: QuoteIndex) -> None:
    found = index.find("The board met three times in September to approve the dividend.")
    assert found.match == "close" and CLOSE_SIMILARITY <= found.similarity < 1.0
    assert found.wording == "The board met twice in September to approve the dividend."
    assert found.differences == (("three times", "twice"),)


def test_a_short_quote_with_one_word_of_three_changed_is_not_close(index: QuoteIndex) -> None:
    found = index.find("Total net sales")  # the characters are 0.87 alike "Total net lease"
    assert found.match == "none" and "words" in found.reason and found.wording == "Total net lease"


def test_case_is_not_normalised_for_exact(index: QuoteIndex) -> None:
    assert index.find("the board met twice in september").match == "close"


def test_an_invented_sentence_is_none_without_a_place(index: QuoteIndex) -> None:
    found = index.find("Elephants were sold to the moon colony at a premium.")
    assert found.match == "none" and found.start is None and found.similarity < CLOSE_SIMILARITY
