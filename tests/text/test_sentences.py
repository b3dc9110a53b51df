"""Sentence units: the splitter keeps every sentence whole and never leaves a chunk without one."""

from __future__ import annotations

import regex
from hypothesis import given
from hypothesis import strategies as st

from mcp_server.text import sentences
from mcp_server.text.sentences import (
    MAX_UNIT_CHARS,
    MIN_SENTENCE_CHARS,
    PHRASE_UNIT_CHARS,
    ROW_GROUP_CHARS,
    chunk_units,
    sentence_spans,
    sentence_units,
    split_sentences,
)
from tests.conftest import DOCS, qa_set
from tests.retrieval._chunks import make_chunks

# the spaces the phrase units of a script without spaces between words may be cut at
_SA_SPACE = regex.compile(r"(?<=\p{Line_Break=SA})\s+(?=\p{Line_Break=SA})")


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


def test_a_thai_paragraph_without_full_stops_becomes_sentence_sized_units_cut_at_its_spaces() -> None:
    text = (qa_set("xquad-dev") / "th" / "doc.txt").read_text(encoding="utf-8")
    paragraphs = [p for p in text.split("\n") if len(p) > 2 * MAX_UNIT_CHARS]
    assert paragraphs
    for paragraph in paragraphs:
        units = chunk_units(paragraph)
        assert len(units) > len(paragraph) // PHRASE_UNIT_CHARS // 2
        assert "".join("".join(units).split()) == "".join(paragraph.split())
        for unit in units:  # longer only where no space between two Thai letters allows a cut
            assert len(unit) <= PHRASE_UNIT_CHARS or not _SA_SPACE.search(unit)
        pos = 0
        for unit in units[:-1]:  # every cut is at a space, never inside a word
            end = paragraph.index(unit, pos) + len(unit)
            assert paragraph[end].isspace()
            pos = end


def test_lao_khmer_and_thai_sentences_are_cut_at_their_spaces_and_other_scripts_keep_theirs_whole() -> None:
    lines = (DOCS / "txt" / "UDHR_first_article_all.txt").read_text(encoding="utf-8").split("\n")
    article = {lines[i - 1].strip(): line for i, line in enumerate(lines) if i and line.strip()}
    for name in ("Thai", "Lao", "Khmer, Central"):
        text = " ".join([article[name]] * 4)  # a paragraph of the article four times: past one unit
        units = chunk_units(text)
        assert len(units) > 1 and all(len(unit) <= PHRASE_UNIT_CHARS for unit in units), name
        assert "".join("".join(units).split()) == "".join(text.split())
    english = " ".join(["all human beings are born free and equal in dignity and rights"] * 8)
    assert PHRASE_UNIT_CHARS < len(english) < MAX_UNIT_CHARS and chunk_units(english) == [english]



# The boundary pattern before its full stops were matched rather than looked behind for: both must
# give the same spans (the current one scans ~3x faster: bench/sentence_boundary.py).
_CLOSERS = "\"')\\]\u201d\u2019\u00bb\u300d\u300f\uff09"
_LOOKBEHIND_BOUNDARY = regex.compile(
    rf"(?<=[.!?])([{_CLOSERS}]*)\s+(?=[\"'(\[\u201c\u2018\u00ab]?[\p{{Lu}}\p{{Lt}}\p{{Lo}}0-9])"
    rf"|(?<=[\u3002\uff01\uff1f\u0964\u0965\u061f\u06d4])([{_CLOSERS}]*)\s*(?=\S)"
    r"|\s*\n\s*"
)
_TEXT_SUFFIXES = {".txt", ".csv", ".json", ".xml", ".html", ".htm", ".md", ".eml", ".org", ".rst", ".yaml", ".yml"}


def _cuts(pattern: regex.Pattern[str], text: str) -> list[tuple[int, int]]:
    """(where a sentence ends, where the next one starts) at each boundary ``pattern`` finds."""
    out = []
    for match in pattern.finditer(text):
        closed = next((g for g in (1, 2) if match.group(g) is not None), None)
        out.append((match.end(closed) if closed is not None else match.start(), match.end()))
    return out


def _lookbehind_spans(text: str) -> list[tuple[int, int]]:
    original = sentences._BOUNDARY
    sentences._BOUNDARY = _LOOKBEHIND_BOUNDARY
    try:
        return sentence_spans(text)
    finally:
        sentences._BOUNDARY = original


def _same_as_the_lookbehind_pattern(text: str) -> bool:
    return (_cuts(sentences._BOUNDARY, text) == _cuts(_LOOKBEHIND_BOUNDARY, text)
            and sentence_spans(text) == _lookbehind_spans(text))


EDGE_CASES = [
    'He said "the flood is coming." Nobody listened.', "It rose (fast.) Then it fell.", "Wait!\u201d She left.",
    "Stop.\u2019 \u2018Go on,\u2019 he said.", "Is it?\u00bb \u00abYes.\u00bb", "Done.) (Next one.", "End...  Next.",
    "a.b.c. D e f. 3 more. \"Quoted start.", "no capital. after it. 12 starts one.", "trailing stop. ",
    "\u6587\u3002\u6587\u3002\u3002\u6587\uff01\u300d\u6587\uff1f\u300f \u6587", "\u6587\u3002\n\u6587\u3002",
    "\u0939\u093f\u0902\u0926\u0940 \u0964 \u0905\u0917\u0932\u093e \u0965\u0905\u0902\u0924",
    "\u0645\u0627 \u0647\u0630\u0627\u061f \u0647\u0630\u0627 \u06d4\u0646\u0639\u0645",
    "line one\nline two\r\n  line three \n\n\n", "\n\nleading newlines. Then Text.", "Mr. Smith. Dr. Who. A.",
    "Fig. 3 shows it.\nChapter 2\nshort", "", "   ", ".", "!\n?", "Ends with closers only.\u201d\u2019)]",
    "\u0391\u03b8\u03ae\u03bd\u03b1. \u0388\u03bd\u03b1. \u0414\u0430. \u041d\u0435\u0442.",
    "Title: X. \u01c5ungla. \u00c9t\u00e9.",
]


def test_the_boundary_matched_at_its_full_stop_gives_the_lookbehind_patterns_spans_on_edge_cases() -> None:
    assert [text for text in EDGE_CASES if not _same_as_the_lookbehind_pattern(text)] == []
    assert split_sentences("Wait for it, he said!\u201d She left the room at once.") == [
        "Wait for it, he said!\u201d", "She left the room at once."]  # the closer stays with its sentence
    assert split_sentences("\u4eca\u5929\u4e0b\u96e8\u4e86\u5f88\u4e45\u5f88\u4e45\u5f88\u4e45\u3002"
                           "\u660e\u5929\u5929\u6674\u4e86\u5417\u6211\u4eec\u53bb\u516c\u56ed\u5427\uff1f") == [
        "\u4eca\u5929\u4e0b\u96e8\u4e86\u5f88\u4e45\u5f88\u4e45\u5f88\u4e45\u3002"
        "\u660e\u5929\u5929\u6674\u4e86\u5417\u6211\u4eec\u53bb\u516c\u56ed\u5427\uff1f"]  # short: joined


@given(st.text(alphabet=list("aA1 .!?\n\t\"')]\u00bb\u300d\u300f\uff09\u201c\u2018\u00ab(\u3002\uff01\uff1f"
                             "\u0964\u0965\u061f\u06d4\u6587\u0e01\u0645"), max_size=80))
def test_the_boundary_matched_at_its_full_stop_gives_the_lookbehind_patterns_spans_on_any_text(text: str) -> None:
    assert _same_as_the_lookbehind_pattern(text)


def test_the_boundary_matched_at_its_full_stop_gives_the_same_spans_on_every_text_file_of_the_corpus() -> None:
    paths = sorted(path for path in DOCS.rglob("*") if path.is_file() and path.suffix.lower() in _TEXT_SUFFIXES)
    assert len(paths) > 20 and any("war-and-peace" in path.name for path in paths)
    differ = [path.name for path in paths
              if not _same_as_the_lookbehind_pattern(path.read_bytes().decode("utf-8", errors="replace"))]
    assert differ == []
