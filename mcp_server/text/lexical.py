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

import itertools
import re
from collections.abc import Sequence
from functools import cache

from mcp_server.core.markup import MARKER_LINE, PAGE_MARK, without_markers

__all__ = ["STOPWORDS", "bm25_tokens", "lexical_text", "without_page_markers", "word_runs"]

# Lucene's 33 English stopwords let "does", "have", "which", "than" through; bm25s' longer list
# drops those question words, which only match chunks by chance.
STOPWORDS = "en_plus"  # any change to what this module reads: bump analysis.ANALYSIS_VERSION (stored tokens)
# the comma first: the engine scans for it (a lookbehind first was tried at every character, 7x slower)
_THOUSANDS = re.compile(r",(?<=\d,)(?=\d{3}(?!\d))")
_GLUED_YEAR = re.compile(r"\b([A-Za-z]{1,3}\d?)((?:19|20)\d\d)\b")
_YEAR = re.compile(r"(?:19|20)\d\d")  # a text without one has no glued year: its search is 5x cheaper
# bm25s' token pattern, r"(?u)\b\w\w+\b", matches the maximal runs of two or more word characters: so
# does this, without testing the boundaries at every character (2x faster; tests/text/test_lexical.py)
_WORD = re.compile(r"\w\w+")
_RUN = re.compile(r"\w+")  # the template search's words (text/templates.py): _WORD's are those of 2+ characters

try:  # stemming lifts BM25 recall (e.g. "located" ~ "location"); optional so bm25s works without it
    import Stemmer

    _STEMMER = Stemmer.Stemmer("english").stemWords
except ImportError:  # pragma: no cover - PyStemmer is a declared dependency
    _STEMMER = None


def word_runs(text: str) -> list[str]:
    """The runs of word characters of ``text`` lower-cased, without its marker lines: what the template
    search (text/templates.py) reads."""
    return _RUN.findall(without_markers(text).lower())


def without_page_markers(text: str) -> str:
    """``text`` without its page marker lines (their line breaks stay); slide and sheet markers stay."""
    if PAGE_MARK not in text:  # no page marker line to find (most texts): no pattern to run at every line
        return text
    return MARKER_LINE.sub(lambda m: "" if m["page"] is not None else m[0], text)


def lexical_text(text: str) -> str:
    """``text`` as BM25 should read it: no page marker lines, no thousands separators, glued years split."""
    text = _THOUSANDS.sub("", without_page_markers(text))
    return _GLUED_YEAR.sub(r"\1\2 \2", text) if _YEAR.search(text) else text


def bm25_tokens(texts: Sequence[str], runs: list[list[str] | None] | None = None) -> list[list[str]]:
    """Stemmed BM25 tokens of each text (chunks and queries alike): ``bm25s.tokenize``'s tokens to the
    token (its pattern on the lower-cased text, its STOPWORDS, each distinct word stemmed once), read in
    one pass here because its loop numbers every token and rebuilds the stopword set per text (2x the
    time: a second of a 3 MB book's BM25 before its first answer; tests/text/test_lexical.py compares).

    ``runs``, when given, gets per text the words the template search reads (``word_runs``) where BM25
    reads the same text (no thousands separator, glued year or slide or sheet marker), else None:
    one scan for both, a tenth of a second of a book's first answer."""
    if runs is None:
        words = [_WORD.findall(lexical_text(text).lower()) for text in texts]
    else:
        words = []
        for text in texts:
            lexical = lexical_text(text)
            if lexical == without_markers(text):
                found = _RUN.findall(lexical.lower())
                runs.append(found)
                words.append([word for word in found if len(word) > 1])
            else:
                runs.append(None)
                words.append(_WORD.findall(lexical.lower()))
    stop = _stopwords()
    distinct = [word for word in dict.fromkeys(itertools.chain.from_iterable(words)) if word not in stop]
    stems = dict(zip(distinct, _STEMMER(distinct) if _STEMMER is not None else distinct, strict=True))
    return [[stems[word] for word in found if word in stems] for found in words]


@cache
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN_PLUS  # with SciPy (~11 MB, 0.3 s): in the server's warm-up (lifespan)

    return frozenset(STOPWORDS_EN_PLUS)
