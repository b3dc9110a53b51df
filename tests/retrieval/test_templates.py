"""Template passages: near-duplicates within a document and index pages (retrieval/templates.py)."""

from __future__ import annotations

from mcp_server.retrieval.templates import template_mask
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
