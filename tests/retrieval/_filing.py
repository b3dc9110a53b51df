"""A made-up annual filing as paged chunks: a cover page that names it, a table of contents, body
pages, two near-identical certifications and a signature page (the kinds of passages that
crowd the head of a ranking when a question names its document)."""

from __future__ import annotations

from mcp_server.core.models import Chunk, ChunkLocation

COMPANY = "Northwind Traders"
COVER = (
    "UNITED STATES SECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\nFORM 10-K\n"
    "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934\n"
    "For the fiscal year ended December 31, 2022\nCommission file number 1-4567\n"
    "NORTHWIND TRADERS, INC.\n(Exact name of registrant as specified in its charter)\n"
    "Delaware 41-0417775\n3 Harbor Way, Seattle, Washington 98101\n"
    "Indicate by check mark whether the registrant is a well-known seasoned issuer. Yes No\n"
    "Northwind Traders common stock outstanding at January 31, 2023: 549,600,000 shares."
)
CONTENTS = (
    "TABLE OF CONTENTS\nItem 1. Business 3\nItem 1A. Risk Factors 9\nItem 2. Properties 18\n"
    "Item 3. Legal Proceedings 19\nItem 7. Discussion and Analysis of Results 21\n"
    "Item 8. Financial Statements 30\nItem 9A. Controls and Procedures 52\nSignatures 55"
)
BODY = [
    "Northwind Traders sells coffee, tea and kitchen goods through 420 stores and its website. "
    "The company was founded in 1972 in Seattle and employs 18,000 people.",
    "Gross margin was 38.2% of net sales in 2022, down from 40.1% in 2021, as freight costs and "
    "promotional markdowns rose faster than prices.",
    "| Consolidated Statement of Income | 2022 | 2021 |\n| --- | --- | --- |\n| Net sales | 6,412 | 6,050 |\n"
    "| Cost of sales | 3,963 | 3,624 |\n| Gross profit | 2,449 | 2,426 |\n| Operating income | 611 | 702 |",
    "Inventories rose to $1,204 million at year end because imported goods arrived earlier than in "
    "prior years; the stores hold about eleven weeks of supply.",
    "The company leases its 420 stores under operating leases with remaining terms of one to twelve "
    "years, and owns two distribution centers in Kent, Washington and Reno, Nevada.",
    "Maria Alvarez, who founded the tea business that the company bought in 2019, leads the tea "
    "division and is responsible for sourcing from growers in Kenya and India.",
]


def certification(name: str, title: str) -> str:
    return (
        f"CERTIFICATION\nI, {name}, certify that:\n1. I have reviewed this annual report on Form 10-K of "
        "Northwind Traders, Inc.;\n2. Based on my knowledge, this report does not contain any untrue statement "
        "of a material fact or omit to state a material fact necessary to make the statements made, in light "
        "of the circumstances under which such statements were made, not misleading with respect to the period "
        "covered by this report;\n3. Based on my knowledge, the financial statements, and other financial "
        "information included in this report, fairly present in all material respects the financial condition, "
        "results of operations and cash flows of the registrant as of, and for, the periods presented in this "
        f"report.\nDate: February 14, 2023\n/s/ {name}\n{title}"
    )


CERTIFICATIONS = [certification("Dana Whitfield", "Chief Executive Officer"),
                  certification("Omar Reyes", "Chief Financial Officer")]
SIGNATURES = (
    "SIGNATURES\nPursuant to the requirements of the Securities Exchange Act of 1934, the registrant has "
    "duly caused this report to be signed on its behalf by the undersigned.\nNORTHWIND TRADERS, INC.\n"
    "/s/ Dana Whitfield, Chief Executive Officer, February 14, 2023\n"
    "/s/ Omar Reyes, Chief Financial Officer, February 14, 2023"
)


def filing_chunks() -> list[Chunk]:
    """The filing's chunks, one per page (the cover is page 1)."""
    texts = [COVER, CONTENTS, *BODY, SIGNATURES, *CERTIFICATIONS]
    chunks, pos = [], 0
    for i, text in enumerate(texts):
        chunks.append(Chunk(
            text=text, chunk_index=i, total_chunks=len(texts), token_count=len(text.split()),
            importance_score=0.5, content_type="table" if text.startswith("|") else "text", doc_type="pdf",
            location=ChunkLocation(start_char=pos, end_char=pos + len(text), pages=(i + 1,)), language="en",
        ))
        pos += len(text) + 2
    return chunks
