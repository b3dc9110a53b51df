"""Template passages: near-duplicates within a document and index pages (text/templates.py)."""

from __future__ import annotations

import itertools
import re

from mcp_server.text.lexical import bm25_tokens
from mcp_server.text.templates import (
    _COMMON_SHINGLE,
    DUPLICATE_JACCARD,
    MIN_SHINGLES,
    SHINGLE,
    _near_duplicates,
    template_mask,
)
from tests.conftest import CORPUS, DOCS
from tests.retrieval._filing import BODY, CERTIFICATIONS, CONTENTS, COVER, SIGNATURES

EXHIBITS = (
    "| Exhibit | Description |\n| --- | --- |\n| 3.1 | Restated Certificate of Incorporation |\n"
    "| 3.2 | Bylaws, as amended |\n| 10.1 | Credit Agreement dated March 3, 2021 |\n"
    "| 21.1 | Subsidiaries of the Registrant |\n| 23.1 | Consent of Independent Accountants |\n"
    "| 31.1 | Certification of the Chief Executive Officer |\n| 32.1 | Section 1350 Certifications |"
)


def test_certifications_signed_by_two_officers_are_near_duplicates() -> None:
    mask = template_mask([COVER, *BODY, *CERTIFICATIONS])
    assert mask.tolist() == [False] * (1 + len(BODY)) + [True, True]


def test_a_table_of_contents_and_an_exhibit_index_are_templates() -> None:
    assert template_mask([CONTENTS, EXHIBITS]).tolist() == [True, True]


def test_statement_tables_numbered_lists_and_prose_are_content() -> None:
    table = BODY[2]
    # the same statement for the quarter: the same rows, other figures
    other_period = table
    for figure, quarter in (("6,412", "1,610"), ("6,050", "1,522"), ("3,963", "1,001"), ("3,624", "917"),
                            ("2,449", "609"), ("2,426", "605"), ("611", "150"), ("702", "171")):
        other_period = other_period.replace(figure, quarter)
    numbered = "\n".join(f"{i}. A risk that could reduce our sales, number {i}, described at length here." for i in
                         range(1, 8))
    assert template_mask([other_period, numbered, SIGNATURES, *BODY]).tolist() == [False] * (3 + len(BODY))


def _pairwise_near_duplicates(texts: list[str]) -> list[bool]:
    """The definition, pair by pair: shingle sets of at least MIN_SHINGLES sharing a Jaccard of
    DUPLICATE_JACCARD or more, counting only shingles held by at most _COMMON_SHINGLE of them."""
    sets = []
    for text in texts:
        words = re.findall(r"\w+", text.lower())
        sets.append({tuple(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)})
    eligible = [i for i, grams in enumerate(sets) if len(grams) >= MIN_SHINGLES]
    holders: dict[tuple[str, ...], int] = {}
    for i in eligible:
        for gram in sets[i]:
            holders[gram] = holders.get(gram, 0) + 1
    mask = [False] * len(texts)
    for a, b in itertools.combinations(eligible, 2):
        common = sum(1 for gram in sets[a] & sets[b] if holders[gram] <= _COMMON_SHINGLE)
        if common / (len(sets[a]) + len(sets[b]) - common) >= DUPLICATE_JACCARD:
            mask[a] = mask[b] = True
    return mask


def test_near_duplicates_in_a_book_are_those_a_pairwise_comparison_finds() -> None:
    book = (CORPUS / "docs" / "txt" / "book-war-and-peace-1225p.txt").read_text(encoding="utf-8")[:200_000]
    texts = [book[at:at + 1500] for at in range(0, len(book), 1500)]
    # two copies with a few words changed (near-duplicates), two that are half another page
    texts += [texts[3].replace("the", "a", 6), texts[40].replace("and", "or", 2),
              texts[77][:700] + texts[110][700:], texts[125][:300] + " ".join(["words"] * 250)]
    expected = _pairwise_near_duplicates(texts)
    assert [i for i, duplicate in enumerate(expected) if duplicate] == [3, 40, len(texts) - 4, len(texts) - 3]
    assert _near_duplicates(texts).tolist() == expected


def test_the_words_bm25_read_on_the_way_give_the_same_template_passages() -> None:
    paths = sorted((DOCS / "txt").glob("*.txt"))
    texts = [path.read_text(encoding="utf-8", errors="replace")[:3_000] for path in paths]
    texts += list(texts) + ["--- Slide 2 ---\nrevenue 12,345 in FY2022", "a b c"]  # duplicates, and texts read twice
    runs: list[list[str] | None] = []
    bm25_tokens(texts, runs)
    assert any(read is None for read in runs) and any(read is not None for read in runs)
    assert template_mask(texts, runs).tolist() == template_mask(texts).tolist()
