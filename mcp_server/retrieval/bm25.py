"""The lexical side of one document's index: BM25 over its chunks, each read by its own
language's analyzer (``text/analysis.py``), and the words of a query that name the document
weighed down to a common word's weight (``naming.py``).

A query word the document never uses but that is two of its words written together ("cashflow"
where the filing writes "cash flows", "Umsatzwachstum" where a text writes "Umsatz" and
"Wachstum") is read as those two words (``compound_parts``): unread, it would match nothing."""

from __future__ import annotations

from collections.abc import Container, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from mcp_server.core.models import Chunk
from mcp_server.retrieval.naming import Identity, identity_of, naming_factors
from mcp_server.retrieval.ranking import known_share
from mcp_server.text.analysed import AnalysedCorpus, bm25_index
from mcp_server.text.analysis import analyzer_for, base_language, query_tokens

if TYPE_CHECKING:
    import bm25s

__all__ = [
    "MAX_COMPOUND_CHARS", "MIN_COMPOUND_PART", "MIN_IDENTITY_PAGES", "ChunkBM25", "analyse_chunks", "compound_parts",
]

MIN_IDENTITY_PAGES = 3  # a document with fewer pages has no cover page: its first page is content
# letters of each part of a query word read as two words, as written and as analysed: shorter
# stems are mostly affixes and clitics (Turkish "-lik", Greek "καθ-"), not words
MIN_COMPOUND_PART = 4
MAX_COMPOUND_CHARS = 64  # longer query words are not cut (cutting costs the square of the length)


class ChunkBM25:
    """BM25 over every chunk of a document (from the chunks' tokens: analysed here, or as stored
    beside the index, ``indexes/lexical.py``), the document's ``languages`` (the one with the most
    text first) and its ``identity``."""

    def __init__(self, chunks: Sequence[Chunk], analysed: AnalysedCorpus | None = None,
                 runs: list[list[str] | None] | None = None) -> None:
        """``analysed``: the chunks' tokens as stored with the index (else they are analysed here, and
        ``runs`` gets what the template search reads of each chunk on the way: ``analyse_chunks``)."""
        self.size = len(chunks)
        # each chunk is read by its own language's analyzer; a query by each language present
        self.languages = _languages(chunks)
        if analysed is None or len(analysed) != self.size:
            analysed = AnalysedCorpus.of(analyse_chunks(chunks, runs))
        self.analysed = analysed  # ~4 bytes a token: what the index stores, and what the pool reads
        self._df = analysed.document_frequencies()
        self.identity = _identity(chunks, analysed, self.languages[0])
        self._bm25: bm25s.BM25 | None = None
        if len(analysed.ids):  # bm25s cannot index a corpus without a single token
            self._bm25 = bm25_index(analysed)

    def term_counts(self, positions: Sequence[int], terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(the token count of the chunks at ``positions``; how often each holds each of ``terms``:
        terms x positions), counted on the stored token ids: a search across documents pools some
        chunks of each, and scores them with one BM25 (``pool.py``)."""
        vocabulary = self._bm25.vocab_dict if self._bm25 is not None else {}
        return self.analysed.counts(positions, [vocabulary.get(term, -1) if term else -1 for term in terms])

    def query_tokens(self, query: str) -> list[str]:
        """The query's BM25 tokens as this document's analyzers read them (known or not); an
        unknown one that is two known words written together stands for those two."""
        tokens = query_tokens(query, self.languages)
        if self._bm25 is None:
            return tokens
        vocab = self._bm25.vocab_dict
        unknown = [t for t in dict.fromkeys(tokens) if t not in vocab]
        if not unknown:
            return tokens
        parts = compound_parts(unknown, vocab, self.languages[0])
        return [p for t in tokens for p in parts.get(t, (t,))]

    def scores(self, query: str, identity: Identity | None = None) -> tuple[np.ndarray | None, float]:
        """(each chunk's BM25 score, None when no query word is known; the share of the query's
        distinct words that the document's vocabulary knows). ``identity``: the one the query's
        naming words are read by (the document's own, or as searched under a file name)."""
        if self._bm25 is None:
            return None, 0.0
        asked = self.query_tokens(query)
        tokens = [t for t in asked if t in self._bm25.vocab_dict]
        if not tokens:
            return None, 0.0
        identity = identity if identity is not None else self.identity
        naming = identity.naming_tokens(query) & set(tokens) if identity is not None else set()
        content = [t for t in tokens if t not in naming]
        scores = np.asarray(self._bm25.get_scores(content), dtype=np.float32) if content else \
            np.zeros(self.size, dtype=np.float32)
        # the naming words weigh as a common word does (naming.py)
        for token, factor in naming_factors(naming, self._df, self.size).items():
            scores += factor * np.asarray(self._bm25.get_scores([token] * asked.count(token)), dtype=np.float32)
        return scores, known_share(asked, tokens)

    def coverage(self, query: str) -> float:
        """The share of the query's distinct words that the document's vocabulary knows (what
        ``scores`` returns beside the scores, without scoring)."""
        if self._bm25 is None:
            return 0.0
        asked = self.query_tokens(query)
        return known_share(asked, [t for t in asked if t in self._bm25.vocab_dict])

    def presence(
        self, query: str, positions: Sequence[int], identity: Identity | None = None,
    ) -> tuple[np.ndarray, list[int]]:
        """(query terms x ``positions``: whether the chunk holds the term; each term's document
        frequency) for the query's distinct known terms that do not name the document."""
        if self._bm25 is None:
            return np.zeros((0, len(positions)), dtype=np.bool_), []
        tokens = [t for t in dict.fromkeys(self.query_tokens(query)) if t in self._bm25.vocab_dict]
        identity = identity if identity is not None else self.identity
        naming = identity.naming_tokens(query) if identity is not None else set()
        content = [t for t in tokens if t not in naming]
        at = np.asarray(positions, dtype=np.int64)
        rows = [np.asarray(self._bm25.get_scores([t]), dtype=np.float32)[at] > 0 for t in content]
        matrix = np.stack(rows) if rows else np.zeros((0, len(at)), dtype=np.bool_)
        return matrix, [self._df.get(t, 0) for t in content]

    def top(self, query: str, n: int, identity: Identity | None = None) -> list[int]:
        """Positions of the ``n`` best BM25 chunks for ``query`` (those matching a query term)."""
        scores, _ = self.scores(query, identity)
        if scores is None:
            return []
        order = np.argsort(-scores, kind="stable")[:n]
        return [int(pos) for pos in order if scores[pos] > 0]


def _identity(chunks: Sequence[Chunk], corpus: Sequence[list[str]], language: str) -> Identity | None:
    """The document's identity (``naming.py``) when it has a first page to read it from: a paged
    document of MIN_IDENTITY_PAGES or more (a shorter one's first page is its content)."""
    pages = {p for c in chunks for p in c.location.pages}
    return identity_of(chunks, corpus, language) if len(pages) >= MIN_IDENTITY_PAGES else None


def _languages(chunks: Sequence[Chunk]) -> list[str]:
    """The languages of a document's chunks, the one with the most text first (["en"] when none is known)."""
    chars: dict[str, int] = {}
    for chunk in chunks:
        language = base_language(chunk.language) or "en"
        chars[language] = chars.get(language, 0) + len(chunk.text)
    return sorted(chars, key=lambda language: -chars[language]) or ["en"]


def analyse_chunks(chunks: Sequence[Chunk], runs: list[list[str] | None] | None = None) -> list[list[str]]:
    """BM25 tokens of each chunk by its language's analyzer (one batch per language); ``runs``, when
    given, gets per chunk its ``lexical.word_runs`` where the analyzer read them on the way, else None."""
    out: list[list[str]] = [[] for _ in chunks]
    read: list[list[str] | None] = [None] * len(chunks)
    by_language: dict[str, list[int]] = {}
    for i, chunk in enumerate(chunks):
        by_language.setdefault(base_language(chunk.language) or "en", []).append(i)
    for language, positions in by_language.items():
        found: list[list[str] | None] | None = [] if runs is not None else None
        for i, tokens in zip(positions, analyzer_for(language).tokens([chunks[i].text for i in positions], found),
                             strict=True):
            out[i] = tokens
        for i, words in zip(positions, found or (), strict=False):
            read[i] = words
    if runs is not None:
        runs.extend(read)
    return out


def compound_parts(tokens: Sequence[str], vocab: Container[str], language: str) -> dict[str, tuple[str, str]]:
    """Of the ``tokens`` (analysed words the document does not know), those that are two words it
    does know written together, each with the two: cut into parts of at least MIN_COMPOUND_PART
    letters, the most even cut first, each part read by the analyzer as one known token of at least
    as many. Letters only: "q22023" or "10-k" are codes, not compounds."""
    found: dict[str, tuple[str, str]] = {}
    for token in tokens:
        for left, right in _halves(token, language):
            if left in vocab and right in vocab:
                found[token] = (left, right)
                break
    return found


def _halves(token: str, language: str) -> tuple[tuple[str, str], ...]:
    """The cuts of ``token`` whose two parts each read as one token of at least MIN_COMPOUND_PART
    letters, as read, the most even cut first; remembered (a search over a shelf asks every document
    about the same unknown words), except in Thai, whose reading depends on whether its dictionary has loaded."""
    read = _read_halves if base_language(language) != "th" else _read_halves.__wrapped__
    return read(token, language)


@lru_cache(maxsize=4096)
def _read_halves(token: str, language: str) -> tuple[tuple[str, str], ...]:
    if not (token.isalpha() and 2 * MIN_COMPOUND_PART <= len(token) <= MAX_COMPOUND_CHARS):
        return ()
    at = sorted(range(MIN_COMPOUND_PART, len(token) - MIN_COMPOUND_PART + 1),
                key=lambda i: (abs(2 * i - len(token)), i))
    read = iter(analyzer_for(language).tokens([half for i in at for half in (token[:i], token[i:])]))
    cuts = []
    for _ in at:
        left, right = next(read), next(read)
        if len(left) == 1 and len(right) == 1 and min(len(left[0]), len(right[0])) >= MIN_COMPOUND_PART:
            cuts.append((left[0], right[0]))
    return tuple(cuts)
