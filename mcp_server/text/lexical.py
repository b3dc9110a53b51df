"""What BM25 sees of a text: the words, with numbers and periods written one way.

Documents and questions write the same number and period differently: "30,583" in a table and
"30583" or "$30,583 million" in a question, "FY2022" in a question and "2022" in a column
header. bm25s cuts on non-word characters, so "30,583" became the two tokens "30" and "583"
(the second matching every other "583"). Here thousands separators go, and a year glued to a
short prefix also stands alone ("FY2022"; "Q22023": a quarter and its year written together).
Page marker lines ("--- Page 12 ---") are no content: "page" and its number would match every
question that says "page". The same function tokenises chunks and queries, so both sides always
agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp_server.core.markup import MARKER_LINE

__all__ = ["STOPWORDS", "bm25_tokens", "lexical_text", "without_page_markers"]

# Lucene's 33 English stopwords let "does", "have", "which", "than" through; bm25s' longer list
# drops those question words, which only match chunks by chance.
STOPWORDS = "en_plus"  # any change to what this module reads: bump analysis.ANALYSIS_VERSION (stored tokens)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_GLUED_YEAR = re.compile(r"\b([A-Za-z]{1,3}\d?)((?:19|20)\d\d)\b")

try:  # stemming lifts BM25 recall (e.g. "located" ~ "location"); optional so bm25s works without it
    import Stemmer

    _STEMMER = Stemmer.Stemmer("english").stemWords
except ImportError:  # pragma: no cover - PyStemmer is a declared dependency
    _STEMMER = None


def without_page_markers(text: str) -> str:
    """``text`` without its page marker lines (their line breaks stay); slide and sheet markers stay."""
    return MARKER_LINE.sub(lambda m: "" if m["page"] is not None else m[0], text)


def lexical_text(text: str) -> str:
    """``text`` as BM25 should read it: no page marker lines, no thousands separators, glued years split."""
    return _GLUED_YEAR.sub(r"\1\2 \2", _THOUSANDS.sub("", without_page_markers(text)))


def bm25_tokens(texts: Sequence[str]) -> list[list[str]]:
    """Stemmed BM25 tokens of each text (chunks and queries alike)."""
    import bm25s  # at the first index or query, not at start: bm25s brings SciPy (~10 MB of a worker)

    tokens = bm25s.tokenize(
        [lexical_text(t) for t in texts], stopwords=STOPWORDS, stemmer=_STEMMER, return_ids=False,
        show_progress=False,
    )
    return [list(t) for t in tokens]
