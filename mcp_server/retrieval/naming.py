"""Words of a query that name its document: they say which document, not which passage.

Agents write "In Boeing's 2022 Form 10-K: what was ...?" or "according to the latest 10-Q".
Inside one document the naming words (the company, the form, the period) are rare in the body,
so BM25 weighs them most and its top ranks go to the passages that repeat them: the cover page,
certifications, signature blocks. And the sentence encoder pulls the same passages up, since the
query's name matches their text better than any content does.

A document's *identity* is what its first page says: a filing's cover page, a report's title
page, a web page's title and lead (a one-page document: its first chunk). A query word *names*
the document when the identity holds it and the query writes it as a name is written: with a
capital letter or a digit ("Boeing", "2022", "10-K", "FY2022" is not on a cover page); a code of
letters and digits names it written with or without its inner punctuation ("10K" for the cover
page's "10-K"). A capitalised word the first page holds names it where the file name it is
searched under writes it too ("Does Pfizer have ...?" of PFIZER_2021_10K.pdf; ``file_name_words``),
and so do adjacent ones the file name writes as one word ("Best Buy" of BESTBUY_2023_10K.pdf).
Lower-case words ("capital", "revenue") are the question's subject even when the cover page
happens to hold them, and a name the body uses but the first page does not (a person, a
product, a place) is not the document's name either.

Ranking then treats the naming words so:

- a clause that only names the document says nothing of which passage: a heading before a colon
  ("In Boeing's 2022 Form 10-K:"), or, beside a question asking something else, a clause with a
  year or code whose owner's noun is the first page's ("According to PepsiCo's 2022 annual
  report, ...", "..., according to Boeing's 2022 Form 10-K?"); each ranking inside the document
  reads the rest, as if asked alone (``Identity.asked``). "What was Boeing's revenue in 2022, and
  ...?" keeps its clause;
- lexical: their BM25 weight drops to what a word in half the document's chunks gets
  (``naming_factors``), so they still break ties but no longer decide;
- dense: the query is embedded without them (``dense_query``), as the question it asks;
- across documents (``pool.py``): the naming words route to the documents whose identity holds
  them, and each document ranks its passages by the rest of the question.

No list of names, form types or finance words: identity comes from each document's own text.
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mcp_server.core.models import Chunk
from mcp_server.text.analysis import analyzer_for

__all__ = [
    "COMMON_SHARE", "IDENTITY_CHARS", "Identity", "bm25_idf", "file_name_words", "identity_of", "naming_factors",
]

# The share of a document's chunks that a "common word" is in: the naming words weigh as such.
COMMON_SHARE = 0.5
# The identity reads at most this much of the first page (a cover page is ~3,000-5,000 characters).
IDENTITY_CHARS = 6000
# A word as written in a query: letters, digits, and inner hyphens, periods or ampersands ("10-K", "U.S.").
_WORD = re.compile(r"[^\W_](?:[\w&.\-]*[^\W_])?")
# a year ("2022") or a code of letters and digits ("10-K", "Q4", "FY2022"); a bare number is content
_CODE = re.compile(r"(?:19|20)\d\d|(?=.*\d)(?=.*[^\W\d_])[\w&.\-]+")
_LETTER_CODE = re.compile(r"(?=.*\d)(?=.*[^\W\d_])[\w&.\-]+")
_EMPTY_BRACKETS = re.compile(r"\(\W*\)|\[\W*\]")
_POSSESSIVE = re.compile(r"['\u2019]s\b|(?<=s)['\u2019](?!\w)")  # "Boeing's", "MGM Resorts'"


# a query's words (character span, text), whether each names the document, the clauses naming it
_Marks = tuple[list[tuple[tuple[int, int], str]], list[bool], list[tuple[int, int]]]


class _NamingReader:
    """Which words of a query name the document whose first page holds ``tokens`` (and ``codes``,
    and whose file name writes ``names``), and which of its clauses only name it."""

    def __init__(self, tokens: frozenset[str], language: str, codes: frozenset[str], names: frozenset[str]) -> None:
        self.tokens, self.language, self.names = tokens, language, names
        # each code by its letters and digits alone: "10K" in a query is the first page's "10-K"
        self._squashed = {_squash(code): code for code in sorted(codes)}

    def code(self, word: str) -> str | None:
        """The first page's code that ``word`` writes (as the first page writes it), if any."""
        return self._squashed.get(_squash(word)) if _LETTER_CODE.fullmatch(word) else None

    def read(self, query: str) -> _Marks:
        if not self.tokens:
            return [], [], []
        # words of the query with each possessive blanked out (same length, so spans stay)
        words = [(m.span(), m.group()) for m in _WORD.finditer(_POSSESSIVE.sub(lambda m: " " * len(m[0]), query))]
        tokens = _word_tokens(self.language, tuple(w for _, w in words)) if words else ()
        known = [bool(t) and all(x in self.tokens for x in t) for t in tokens]
        named = [False] * len(words)
        owners: set[str] = set()
        possessive: list[int] = []  # the word before each owner's "'s"
        for i, ((_, end), word) in enumerate(words):
            if known[i] and _POSSESSIVE.match(query, end) and _capitalised(word):
                # the owner: this word and the capitalised identity words just before it ("Best Buy's", "3M's")
                possessive.append(i)
                j = i
                while j >= 0 and known[j] and _capitalised(words[j][1]) and (
                        j == i or _adjacent(query, words[j], words[j + 1])):
                    named[j] = True
                    owners.update(tokens[j])
                    j -= 1
        clauses = _clauses(query, words)
        unknown = [sum(1 for i in range(lo, hi) if tokens[i] and not known[i] and not _CODE.fullmatch(words[i][1]))
                   for lo, hi in clauses]
        naming: list[tuple[int, int]] = []
        for c, (lo, hi) in enumerate(clauses):
            content = [i for i in range(lo, hi) if tokens[i]]
            owned = [i for i in possessive if lo <= i < hi]
            if not (owned and 2 * sum(known[i] for i in content) >= len(content)):
                continue
            last = c == len(clauses) - 1
            if not last:  # an opening clause (never the question's last one): "In Boeing's 2022 Form 10-K:"
                named[lo:hi] = [True] * (hi - lo)
            # what only names the document: a heading before a colon, or, beside a question asking
            # something else, a clause with a year or code whose owner's noun is the first page's
            # and that holds at most one other word ("..., according to PepsiCo's 2022 annual
            # report?"); never one whose owner's noun is the subject ("What was Boeing's revenue in
            # 2022, and ...?"), nor one without a year or code ("..., and how did it affect
            # Boeing's stock price?": a cover page writes "stock" and "price" too)
            heading = not last and ":" in query[words[hi - 1][0][1]:words[hi][0][0]]
            aside = len(clauses) > 1 and unknown[c] <= 1 and sum(unknown) - unknown[c] >= 2 and all(
                self._names_a_document(words, tokens, known, i, hi) for i in owned) and _dated(words, lo, hi)
            if heading or aside:
                named[lo:hi] = [True] * (hi - lo)
                naming.append((lo, hi))
        for i, (_, word) in enumerate(words):
            if (known[i] and (_CODE.fullmatch(word) or (word[0].isupper() and (
                    set(tokens[i]) <= owners or _squash(word) in self.names)))) or self.code(word) is not None:
                # a year, a period or form code (as the first page writes it or not); the owner
                # again; a name the first page and the file name both write ("Does Pfizer ...?")
                named[i] = True
        for lo, hi in self._written_together(query, words, known):
            named[lo:hi] = [True] * (hi - lo)
        return words, named, naming

    def _names_a_document(
        self, words: list[tuple[tuple[int, int], str]], tokens: Sequence[Sequence[str]], known: list[bool], owner: int,
        end: int,
    ) -> bool:
        """Whether what the owner's possessive names is the document: the last word of what follows
        it up to a stopword (or the clause's ``end``) is on the first page or a code ("Boeing's 2022
        Form 10-K", "PepsiCo's annual report", "Amazon's most recent 10-Q"), not the question's
        subject ("Boeing's revenue in 2022", "Boeing's 2022 annual revenue")."""
        head = None
        for i in range(owner + 1, end):
            if not tokens[i]:
                if head is not None:
                    break
                continue
            head = i
        if head is None:
            return True
        return known[head] or self.code(words[head][1]) is not None

    def _written_together(
        self, query: str, words: list[tuple[tuple[int, int], str]], known: list[bool],
    ) -> list[tuple[int, int]]:
        """Runs of adjacent capitalised words the first page holds that the file name writes as one
        word ("Best Buy" of BESTBUY_2023_10K.pdf, "Ulta Beauty" of UltaBeauty-2023.pdf)."""
        name = [known[i] and w[0].isupper() for i, (_, w) in enumerate(words)]
        runs = []
        for lo in range(len(words)):
            hi = lo + 1
            while name[lo] and hi < len(words) and name[hi] and _adjacent(query, words[hi - 1], words[hi]):
                hi += 1
                if _squash("".join(w for _, w in words[lo:hi])) in self.names:
                    runs.append((lo, hi))
        return runs


class Identity:
    """The analysed tokens of a document's first page (its ``tokens``), and how a query's words meet them."""

    def __init__(
        self, tokens: frozenset[str], language: str, codes: frozenset[str] = frozenset(),
        names: frozenset[str] = frozenset(),
    ) -> None:
        self.tokens = tokens
        self.language = language
        self.codes = codes  # its letters-and-digits codes as written, lower-cased ("10-k", "q4")
        self.names = names  # the words of the file name it is searched under (``file_name_words``)
        self._reader = _NamingReader(tokens, language, codes, names)
        self._last: tuple[str, _Marks] | None = None  # a search reads one query's marks several times

    def named(self, names: frozenset[str]) -> Identity:
        """This identity as the document is searched under a file name of these words."""
        return self if names == self.names else Identity(self.tokens, self.language, self.codes, names)

    def naming_codes(self, query: str) -> set[str]:
        """The first page's letters-and-digits codes that the query writes, with or without their
        inner punctuation ("10-K", "10K"): the analyzer reads "10-K" and "10-Q" both as "10", the
        codes tell the two forms apart."""
        return {code for w in _WORD.findall(query) if (code := self._reader.code(w)) is not None}

    def naming_words(self, query: str) -> list[tuple[int, int]]:
        """Character spans of the query's words that name the document (see the module docstring)."""
        words, named, _ = self._marks(query)
        return [span for (span, _), flag in zip(words, named, strict=True) if flag]

    def asked(self, query: str) -> str:
        """``query`` without its clauses that only name the document ("In Boeing's 2022 Form
        10-K:", ", according to PepsiCo's 2022 annual report?"): they say which document, nothing
        of which passage, so a passage is ranked by the rest of the question, as if it were asked
        alone. The query itself when no clause names the document or the rest would ask nothing
        (two words at least)."""
        words, _, clauses = self._marks(query)
        if not clauses:
            return query
        parts, last = [], 0
        for lo, hi in clauses:
            parts.append(query[last:words[lo][0][0]])
            last = words[hi][0][0] if hi < len(words) else len(query)
        parts.append(query[last:])
        rest = re.sub(r"\s+", " ", _EMPTY_BRACKETS.sub(" ", "".join(parts))).strip()
        rest = re.sub(r"[\s,;:(\[]+$", "", rest)  # the comma or bracket before a last clause left out
        if query.rstrip().endswith("?") and not rest.endswith(("?", ".", "!")):
            rest += "?"
        return rest if self._asks_something(rest) else query

    def _asks_something(self, text: str) -> bool:
        """Whether what is left of a query still asks something: two words at least, stopwords aside."""
        return len(analyzer_for(self.language).tokens([text])[0]) >= 2

    def query_vector(self, query: str, embed_query: Callable[[str], np.ndarray]) -> np.ndarray:
        """The dense side's vector of ``query`` (without a clause that only names the document,
        ``asked``): when words of it name the document, the mean direction of the query and the
        query without them (the name counts half; dropping it altogether lost the questions whose
        name was also their subject, bench/financebench.py)."""
        query = self.asked(query)
        focus = self.dense_query(query)
        vector = np.asarray(embed_query(query), dtype=np.float32)
        if focus == query:
            return vector
        mean = vector + np.asarray(embed_query(focus), dtype=np.float32)
        return mean / max(float(np.linalg.norm(mean)), 1e-12)

    def _marks(self, query: str) -> _Marks:
        """The query's words (spans, text), whether each names the document, and the clauses
        (word index ranges) that name it."""
        last = self._last
        if last is not None and last[0] == query:
            return last[1]
        marks = self._reader.read(query)
        self._last = (query, marks)
        return marks

    def naming_tokens(self, query: str) -> set[str]:
        """The analysed tokens of the naming words of ``query``."""
        analyzer = analyzer_for(self.language)
        words = [query[a:b] for a, b in self.naming_words(query)]
        return {t for tokens in analyzer.tokens(words) for t in tokens} if words else set()

    def dense_query(self, query: str) -> str:
        """``query`` without its naming words (and their possessive "'s"); the query itself when
        nothing names the document or nothing else would remain."""
        spans = self.naming_words(query)
        if not spans:
            return query
        parts, last = [], 0
        for a, b in spans:
            parts.append(query[last:a])
            last = b
            if _POSSESSIVE.match(query, last):
                last += 2
        parts.append(query[last:])
        # brackets the naming words filled ("annual report (10-K):") go with them
        rest = re.sub(r"\s+", " ", _EMPTY_BRACKETS.sub(" ", "".join(parts))).strip(" ,:;-")
        return rest if self._asks_something(rest) else query


def file_name_words(location: str) -> frozenset[str]:
    """The words of a document's file name, each by its letters and digits alone, lower-cased:
    "https://host/filings/PFIZER_2021_10K.pdf" -> pfizer, 2021, 10k. The last segment of a URL's
    path (or a path), without its extension; none when there is no file name."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(location).path) if "://" in location else location
    stem = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return frozenset(_squash(word) for word in re.split(r"[\W_]+", stem) if word)


def _squash(code: str) -> str:
    """A code's letters and digits, lower-cased: "10-K", "10K" and "10-k" are one code."""
    return "".join(ch for ch in code.lower() if ch.isalnum())


def _dated(words: list[tuple[tuple[int, int], str]], lo: int, hi: int) -> bool:
    """Whether words ``lo:hi`` hold a year or a code of letters and digits ("2022", "10-K", "Q4")."""
    return any(_CODE.fullmatch(w) for _, w in words[lo:hi])


@functools.lru_cache(maxsize=256)
def _word_tokens(language: str, words: tuple[str, ...]) -> tuple[list[str], ...]:
    """Each word's tokens: read once per question and language, not once per document of a shelf."""
    return tuple(analyzer_for(language).tokens(list(words)))


def _capitalised(word: str) -> bool:
    """Whether the word's first letter is a capital ("Boeing", "3M"; not "2022" nor "revenue")."""
    return next((ch.isupper() for ch in word if ch.isalpha()), False)


def _adjacent(query: str, a: tuple[tuple[int, int], str], b: tuple[tuple[int, int], str]) -> bool:
    """Whether only spaces or an ampersand separate word ``a`` from the next word ``b``."""
    return query[a[0][1]:b[0][0]].strip(" &") == ""


def _clauses(query: str, words: list[tuple[tuple[int, int], str]]) -> list[tuple[int, int]]:
    """Word index ranges of the query's clauses: cut at colons, semicolons, commas, question marks
    and sentence ends."""
    cuts = [m.start() for m in re.finditer(r"[:;,?!]|\.(?:\s|$)", query)]
    ranges, lo = [], 0
    for i, ((start, _), _) in enumerate(words):
        if i > lo and any(words[i - 1][0][1] <= c < start for c in cuts):
            ranges.append((lo, i))
            lo = i
    return [*ranges, (lo, len(words))] if words else []


def naming_factors(naming: set[str], df: dict[str, int], n_chunks: int) -> dict[str, float]:
    """Per naming token, the factor that brings its BM25 idf down to a common word's (<= 1)."""
    common = bm25_idf(max(1.0, COMMON_SHARE * n_chunks), n_chunks)
    return {t: min(1.0, common / bm25_idf(df.get(t, 0), n_chunks)) for t in naming}


def bm25_idf(df: Any, n: int) -> Any:
    """Lucene's BM25 idf (bm25s' default), always positive: of one document frequency or an array of them."""
    return np.log(1 + (n - df + 0.5) / (df + 0.5))


def identity_of(chunks: Sequence[Chunk], tokens: Sequence[Sequence[str]], language: str) -> Identity:
    """The identity of a document from its chunks and their analysed ``tokens``: the chunks of
    its first page (the first chunk when pages are unknown), at most IDENTITY_CHARS of them."""
    if not chunks:
        return Identity(frozenset(), language)
    first_page = min((p for c in chunks for p in c.location.pages), default=None)
    chosen: set[str] = set()
    codes: set[str] = set()
    chars = 0
    for chunk, toks in zip(chunks, tokens, strict=True):
        on_first = first_page is not None and chunk.location.pages and chunk.location.pages[0] == first_page
        if chars and (not on_first or chars >= IDENTITY_CHARS):
            break
        chosen.update(toks)
        codes.update(w.lower() for w in _WORD.findall(chunk.text) if _LETTER_CODE.fullmatch(w))
        chars += len(chunk.text)
    return Identity(frozenset(chosen), language, frozenset(codes))
