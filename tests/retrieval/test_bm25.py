"""The lexical side of one document's index (retrieval/bm25.py)."""

from __future__ import annotations

from mcp_server.retrieval.bm25 import ChunkBM25, compound_parts
from tests.retrieval._chunks import make_chunks

TEXTS = [
    "Net cash provided by operating activities rose, and cash flows from investing activities fell.",
    "The stores sell coffee and tea; the tea business grew in Kenya.",
    "Flow of goods through the distribution centers slowed in the winter.",
]


def test_a_query_word_that_is_two_of_the_documents_words_written_together_finds_them() -> None:
    bm25 = ChunkBM25(make_chunks(TEXTS))
    assert bm25.query_tokens("operating cashflow") == ["oper", "cash", "flow"]
    scores, known = bm25.scores("operating cashflow")
    assert scores is not None and int(scores.argmax()) == 0 and known == 1.0


def test_a_word_the_document_knows_a_code_or_a_short_word_is_never_cut() -> None:
    bm25 = ChunkBM25(make_chunks(TEXTS))
    # "cashflow" is two known words; codes and words too short for two parts stay whole
    assert compound_parts(["cashflow", "q22023", "10k", "teatea"[:5]], {"cash", "flow", "q2", "2023", "10", "tea"},
                          "en") == {"cashflow": ("cash", "flow")}
    assert bm25.query_tokens("coffee growth in Q22023") == ["coffe", "growth", "q22023", "2023"]


def test_the_most_even_cut_into_known_words_wins() -> None:
    # "cashflow" reads as "cash" + "flow", not "cas" + "hflow"
    assert compound_parts(["cashflow"], {"cas", "hflow", "cash", "flow"}, "en") == {"cashflow": ("cash", "flow")}


def test_a_german_compound_reads_as_its_two_words_when_the_text_writes_them_apart() -> None:
    bm25 = ChunkBM25(make_chunks(["Der Umsatz stieg, das Wachstum blieb stabil.", "Die Kosten fielen."], language="de"))
    assert bm25.query_tokens("Umsatzwachstum") == ["umsatz", "wachstum"]


def test_a_query_word_longer_than_any_compound_is_not_cut() -> None:
    # cutting a word costs the square of its length: a 100,000-letter "word" is read as it is
    word = "cash" * 25_000
    assert compound_parts([word, "cashflow"], {"cash", "flow"}, "en") == {"cashflow": ("cash", "flow")}
    bm25 = ChunkBM25(make_chunks(TEXTS))
    assert bm25.query_tokens(f"operating {word}") == ["oper", word]
