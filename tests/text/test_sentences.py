"""Sentence units: the splitter keeps every sentence whole and never leaves a chunk without one."""

from __future__ import annotations

from mcp_server.text.sentences import (
    MAX_UNIT_CHARS,
    MIN_SENTENCE_CHARS,
    ROW_GROUP_CHARS,
    chunk_units,
    sentence_units,
    split_sentences,
)
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


STATEMENT = """Some prose before the statement ends here.
Consolidated Statements of Cash Flows
(In millions)
| | Six Months Ended July 29, 2023 | Six Months Ended July 30, 2022 |
|---|---|---|
| Net earnings | $ 482 | $ 648 |
| Depreciation and amortization | 445 | 429 |
--- Page 7 ---
Total cash provided by operating activities was lower."""


def test_table_rows_are_embedded_in_groups_under_the_tables_title_and_column_header() -> None:
    units = chunk_units(STATEMENT)
    head = ("Consolidated Statements of Cash Flows\n(In millions)\n"
            "Six Months Ended July 29, 2023 Six Months Ended July 30, 2022")
    assert units == [
        "Some prose before the statement ends here.",
        f"{head}\nNet earnings $ 482 $ 648\nDepreciation and amortization 445 429",
        "Total cash provided by operating activities was lower.",
    ]  # the page marker line is no content: no unit holds it


def test_a_long_table_becomes_several_row_groups_each_with_the_header() -> None:
    rows = "\n".join(f"| Line item number {i} | {i},000 | {i},500 |" for i in range(60))
    units = chunk_units(f"Balance Sheet\n| | 2023 | 2022 |\n|---|---|---|\n{rows}")
    assert len(units) > 3
    assert all(u.startswith("Balance Sheet\n2023 2022\n") for u in units)
    assert all(len(u) <= ROW_GROUP_CHARS + 100 for u in units)
    assert sum(u.count("Line item number") for u in units) == 60  # every row in exactly one group


def test_a_unit_longer_than_a_model_window_is_cut_at_whitespace() -> None:
    text = "word " * 700
    units = chunk_units(text)
    assert len(units) == 4 and all(len(u) <= MAX_UNIT_CHARS for u in units)
    assert " ".join(units).split() == text.split()
