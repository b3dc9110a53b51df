"""Which sentences of a chunk carry a query's match: the dense side's focus.

A chunk scores as its best sentence's cosine. Of a 1,500-character chunk's ~15 sentences, the one
closest to a question is often not the one that answers it: a filing's chunk about cash holds a
sentence that reads like any question on liquidity. Keeping, of each candidate chunk, only the
few sentences whose shared query terms weigh the most (idf over the candidates' sentences), and
scoring the chunk by the best of those, puts first the chunks whose matching sentences also mean
the question. First answers embed only those sentences (``indexes/partial.py``); a complete
index scores its candidates the same way (``index.py``), so a second question on a document
ranks as the first did (bench/financebench.py, bench/partial_quality.py).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from mcp_server.core.models import Chunk
from mcp_server.retrieval.naming import bm25_idf
from mcp_server.retrieval.vectors import UnitSelect
from mcp_server.text.analysis import query_tokens
from mcp_server.text.sentences import chunk_units

__all__ = [
    "FOCUS_CANDIDATES", "SENTENCES_PER_CANDIDATE", "UnitTerms", "best_sentences", "topped_up", "keep_units",
    "within_budget",
]

# A 1,500-character chunk has ~15 sentences; the three sharing most query terms carry its match.
SENTENCES_PER_CANDIDATE = 3
# A complete index scores with focus its dense top chunks and this many best BM25 chunks (of the
# query without the words naming the document), as many as a first answer embeds by default
# (MCP_PROGRESSIVE_CANDIDATES).
FOCUS_CANDIDATES = 50

try:  # the same stemming as the BM25 index, so "located" selects a sentence with "location"
    import Stemmer

    _STEM = Stemmer.Stemmer("english").stemWords
except ImportError:  # pragma: no cover - PyStemmer is a declared dependency
    _STEM = None


def _terms(texts: list[str], languages: Sequence[str] = ("en",)) -> list[set[str]]:
    if list(languages) != ["en"]:  # the document's own analyzers
        return [set(query_tokens(text, languages)) for text in texts]
    import bm25s  # as text/lexical.py's: in the server's warm-up, a script's at first use (SciPy comes with it)

    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_STEM, return_ids=False, show_progress=False)
    return [set(t) for t in tokens]


def _query_terms(query: str, languages: tuple[str, ...]) -> frozenset[str]:
    """A query's terms, remembered: a search over a shelf reads one query in every document
    (Thai words depend on whether its dictionary has loaded yet: read every time)."""
    return frozenset(_terms([query], languages)[0]) if "th" in languages else _remembered_terms(query, languages)


@lru_cache(maxsize=1024)
def _remembered_terms(query: str, languages: tuple[str, ...]) -> frozenset[str]:
    return frozenset(_terms([query], languages)[0])


def keep_units(shared: np.ndarray, owners: np.ndarray, per_chunk: int) -> np.ndarray:
    """Of each chunk (``owners``, non-decreasing), its ``per_chunk`` units with the most ``shared``
    weight (ties: the earlier one) that share anything, or its first unit when none does."""
    n = len(shared)
    keep = np.zeros(n, dtype=np.bool_)
    if not n:
        return keep
    order = np.lexsort((np.arange(n), -shared, owners))  # by chunk, then weight, then position
    starts = np.flatnonzero(np.r_[True, owners[order][1:] != owners[order][:-1]])
    rank = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    chosen = order[(rank < per_chunk) & (shared[order] > 0)]
    keep[chosen] = True
    firsts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])  # each chunk's first unit
    group_best = np.maximum.reduceat(shared, firsts)
    keep[firsts[group_best <= 0]] = True
    return keep


def best_sentences(
    query: str, per_chunk: int, *, languages: Sequence[str] = ("en",), ranks: dict[int, int] | None = None,
    max_chars: float = float("inf"),
) -> UnitSelect:
    """Keep, of each chunk, the ``per_chunk`` units whose shared query terms weigh the most (ties:
    the earlier one), or its first unit when none shares a term. A term weighs its inverse
    document frequency over the candidates' units: in a report every unit names the company, so
    a unit sharing the question's rarer words ("legal", "inventories") is the one to embed.
    Past ``max_chars`` of kept text, the units of the chunks ranked last (``ranks``) go."""
    terms = sorted(_terms([query], languages)[0])

    def select(texts: list[str], owners: np.ndarray) -> np.ndarray:
        unit_terms = _terms(texts, languages)
        present = np.array([[term in unit for term in terms] for unit in unit_terms], dtype=np.bool_)
        present = present.reshape(len(texts), len(terms))
        weight = bm25_idf(present.sum(axis=0).astype(np.float64), len(texts))
        keep = keep_units(present.astype(np.float64) @ weight, np.asarray(owners), per_chunk)
        return within_budget(keep, texts, owners, ranks, max_chars) if ranks is not None else keep

    return select


def topped_up(select: UnitSelect, ranks: dict[int, int], max_chars: float) -> UnitSelect:
    """``select``'s units, then every other unit of the chunks in rank order (``ranks``) while the
    kept text stays within ``max_chars``: for a question that shares no words with the text, whose
    selection keeps each chunk's first unit only, the budget left embeds its best chunks whole."""
    def topped(texts: list[str], owners: np.ndarray) -> np.ndarray:
        keep = select(texts, owners)
        spent = sum(len(texts[i]) for i in np.nonzero(keep)[0])
        for owner in sorted(np.unique(owners).tolist(), key=lambda pos: ranks.get(pos, len(ranks))):
            units = np.nonzero(~keep & (owners == owner))[0]
            cost = sum(len(texts[i]) for i in units)
            if spent + cost > max_chars:
                break
            keep[units] = True
            spent += cost
        return keep

    return topped


def within_budget(
    keep: np.ndarray, texts: list[str], owners: np.ndarray, ranks: dict[int, int], max_chars: float,
) -> np.ndarray:
    """``keep`` without the units of the chunks ranked last (``ranks``) past ``max_chars`` of kept
    text; the first chunk always keeps its units."""
    if sum(len(texts[i]) for i in np.nonzero(keep)[0]) <= max_chars:
        return keep
    spent = 0
    for owner in sorted(np.unique(owners).tolist(), key=lambda pos: ranks.get(pos, len(ranks))):
        units = np.nonzero(keep & (owners == owner))[0]
        cost = sum(len(texts[i]) for i in units)
        if spent and spent + cost > max_chars:
            keep[units] = False
        else:
            spent += cost
    return keep


class UnitTerms:
    """The analysed terms of each unit of a document's chunks, worked out once per chunk when a
    query first needs it (the split and the stemming cost ~0.2 ms a chunk, a search scores ~100
    chunks): per chunk an array of term ids and the unit of each, ~1 KB a chunk."""

    def __init__(self, chunks: Sequence[Chunk], languages: Sequence[str]) -> None:
        self._chunks = chunks
        self._languages = tuple(languages)
        self._vocabulary: dict[str, int] = {}
        self._known: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}  # pos -> (term ids, their units, units)
        self._lock = threading.Lock()

    def shared(self, query: str, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(per unit of the chunks at ``positions``, in order: the idf weight of the query's terms
        it holds (idf over these units, as ``best_sentences``), the position of its chunk)."""
        self._learn([int(p) for p in positions if int(p) not in self._known])
        entries = [self._known[int(p)] for p in positions]
        counts = np.array([units for _, _, units in entries], dtype=np.int64)
        owners = np.repeat(np.asarray(positions, dtype=np.int64), counts)
        n = int(counts.sum())
        wanted = np.array(sorted({self._vocabulary[t] for t in _query_terms(query, self._languages)
                                  if t in self._vocabulary}), dtype=np.int64)
        if not n or not len(wanted):
            return np.zeros(n, dtype=np.float64), owners
        offsets = np.r_[0, np.cumsum(counts)[:-1]]
        ids = np.concatenate([ids for ids, _, _ in entries])
        units = np.concatenate([units + offset for (_, units, _), offset in zip(entries, offsets, strict=True)])
        hit = np.isin(ids, wanted)
        term = np.searchsorted(wanted, ids[hit])  # each (unit, term) pair once: a unit's ids are unique
        weight = bm25_idf(np.bincount(term, minlength=len(wanted)).astype(np.float64), n)
        return np.bincount(units[hit], weights=weight[term], minlength=n), owners

    def _learn(self, positions: list[int]) -> None:
        if not positions:
            return
        texts = [chunk_units(self._chunks[pos].text) for pos in positions]
        flat = _terms([unit for units in texts for unit in units], self._languages)
        with self._lock:
            start = 0
            for pos, units in zip(positions, texts, strict=True):
                ids, owners = [], []
                for u, terms in enumerate(flat[start:start + len(units)]):
                    unique = sorted({self._vocabulary.setdefault(t, len(self._vocabulary)) for t in terms})
                    ids += unique
                    owners += [u] * len(unique)
                start += len(units)
                self._known[pos] = (np.array(ids, dtype=np.int32), np.array(owners, dtype=np.int32), len(units))
