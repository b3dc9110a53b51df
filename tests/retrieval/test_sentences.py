"""Sentence units: the splitter keeps every sentence whole and never leaves a chunk without one."""

from __future__ import annotations

from mcp_server.retrieval.sentences import MIN_SENTENCE_CHARS, sentence_units, split_sentences
from tests.retrieval._chunks import make_chunks


def test_sentences_end_at_terminal_punctuation_before_a_capital_digit_or_quote() -> None:
    text = 'The river rose overnight. "Evacuate now!" the mayor said. 3 bridges closed before dawn.'
    assert split_sentences(text) == ["The river rose overnight.", '"Evacuate now!" the mayor said.',
                                     "3 bridges closed before dawn."]


def test_a_closing_quote_stays_with_its_sentence() -> None:
    assert split_sentences('He said "the flood is coming." Nobody listened to him.') == [
        'He said "the flood is coming."', "Nobody listened to him."]


def test_a_newline_ends_a_sentence_and_a_lowercase_start_does_not() -> None:
    text = "Version numbers like 2.5 stay whole. e.g. this stays joined to it\nA new line starts here now."
    assert split_sentences(text) == ["Version numbers like 2.5 stay whole. e.g. this stays joined to it",
                                     "A new line starts here now."]


def test_short_fragments_join_the_following_sentence_and_a_short_tail_joins_the_previous() -> None:
    text = "Mr. Smith went to Washington in May.\nChapter 2\nThe second chapter begins with rain. The End."
    sentences = split_sentences(text)
    assert sentences == ["Mr. Smith went to Washington in May.",
                         "Chapter 2\nThe second chapter begins with rain. The End."]
    assert all(len(s) >= MIN_SENTENCE_CHARS for s in sentences)


def test_a_text_without_a_boundary_is_one_sentence() -> None:
    assert split_sentences("a single run-on fragment without any end") == ["a single run-on fragment without any end"]
    assert split_sentences("tiny") == ["tiny"]
    assert split_sentences("") == [""]


def test_every_chunk_owns_at_least_one_unit_in_chunk_order() -> None:
    chunks = make_chunks(["First sentence is here. Second sentence is here.", "", "Only one sentence here."])
    texts, owners = sentence_units(chunks)
    assert owners.tolist() == [0, 0, 1, 2]
    assert texts == ["First sentence is here.", "Second sentence is here.", "", "Only one sentence here."]
