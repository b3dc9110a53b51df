"""The research pipeline's pure parts: the pages filter and the token budget."""

from __future__ import annotations

import pytest

from mcp_server.chunking import TokenCounter
from mcp_server.core.errors import ValidationError
from mcp_server.core.models import Chunk, ChunkLocation
from mcp_server.embedding import ModelRegistry
from mcp_server.pipeline.research import PageRanges, pack_texts


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return ModelRegistry.fake().token_counter


def chunk(pages: tuple[int, ...] = (), slide: int | None = None) -> Chunk:
    return Chunk(text="x", chunk_index=0, total_chunks=1, token_count=3, importance_score=0.5, content_type="text",
                 doc_type="pdf", location=ChunkLocation(start_char=0, end_char=1, pages=pages, slide=slide))


def test_pages_take_single_pages_and_ranges_in_any_order() -> None:
    pages = PageRanges.parse(" 12, 3-7 ,5-8,9")
    assert pages.ranges == ((3, 9), (12, 12))
    assert [p for p in range(1, 15) if p in pages] == [3, 4, 5, 6, 7, 8, 9, 12]


def test_a_chunk_matches_by_any_of_its_pages_or_its_slide() -> None:
    pages = PageRanges.parse("3-4")
    assert pages.allows(chunk((2, 3))) and pages.allows(chunk(slide=4))
    assert not pages.allows(chunk((1, 2))) and not pages.allows(chunk())


@pytest.mark.parametrize("bad", ["", "3-", "-3", "0", "7-3", "a", "1,,2", "1;2", "3-4-5", "99999999"])
def test_bad_page_filters_are_validation_errors_naming_the_argument(bad: str) -> None:
    with pytest.raises(ValidationError) as caught:
        PageRanges.parse(bad)
    assert caught.value.details["argument"] == "pages" and "'pages'" in caught.value.message


def test_a_budget_keeps_the_best_results_that_fit_and_counts_the_rest(counter: TokenCounter) -> None:
    texts = ["one two three", "four five six seven", "eight", "nine ten"]
    costs = counter.count_tokens(texts)
    packed = pack_texts(texts, counter, costs[0] + costs[1])
    assert packed.texts == texts[:2] and packed.tokens == costs[0] + costs[1] and packed.omitted == 2
    assert not packed.truncated


def test_a_budget_stops_at_the_first_result_that_does_not_fit(counter: TokenCounter) -> None:
    texts = ["one two three", "four five six seven eight nine ten eleven", "x"]
    costs = counter.count_tokens(texts)
    packed = pack_texts(texts, counter, costs[0] + costs[2])  # "x" would fit, but it ranks below
    assert packed.texts == texts[:1] and packed.omitted == 2


def test_a_best_result_over_the_budget_is_cut_at_a_word_to_fit(counter: TokenCounter) -> None:
    text = " ".join(f"word{i}" for i in range(50))
    packed = pack_texts([text, "next"], counter, 12)
    assert packed.truncated and packed.omitted == 1 and text.startswith(packed.texts[0])
    assert packed.tokens == counter.count_tokens(packed.texts)[0] <= 12
    kept = len(packed.texts[0].split())
    assert counter.count_tokens([" ".join(text.split()[: kept + 1])])[0] > 12  # as many words as fit


def test_a_budget_too_small_for_one_word_returns_nothing(counter: TokenCounter) -> None:
    packed = pack_texts(["alpha beta"], counter, 1)
    assert packed.texts == [] and packed.tokens == 0 and packed.omitted == 1
