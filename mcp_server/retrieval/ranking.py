"""Ranking: every rule and constant that orders search results, in one place.

Single-document search (``index.py``), the cross-document pool and its fusion of phrasings
(``pool.py``) and partial answers (a partial index searches through ``index.py``) all rank
with these pieces:

- ``fuse``: weighted reciprocal rank fusion of any number of rankings,
  score(item) = sum over rankings of weight / (RRF_K + rank), rank 1-based, absent = no term;
- ``fuse_hybrid``: the fusion of search, which one document's search and the pool both call: the
  dense ranking and the BM25 ranking with their weights (a new ranking signal is added here);
- ``lexical_weight``: how much of BM25's weight a query keeps over a document's vocabulary;
- ``rerank_head``: the cross-encoder re-sorts the head of a ranking (stable: ties keep the
  fused order), the tail keeps its place;
- ``take_per_document``: the first ``top_k`` results with at most so many from each document
  (``search_documents``' per_document);
- ``drop_duplicates``: the diversity pass. It only *drops* results that repeat text already
  chosen (the same passage, the same text, a span mostly shared with a better result of the
  same document); it never re-sorts, because an importance re-sort pushed answers down
  (bench/squad.py measures it).

Change the ranking here; ``bench/squad.py`` and ``bench/financebench.py`` measure it.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Protocol, TypeVar

import numpy as np

from mcp_server.core.models import Chunk, ChunkLocation
from mcp_server.rerankers.cross_encoders import Reranker
from mcp_server.text.analysis import base_language
from mcp_server.text.language import language_probabilities

__all__ = [
    "BM25_WEIGHT", "CANDIDATES_PER_RESULT", "DENSE_WEIGHT", "DUPLICATE_OVERLAP", "LEXICAL_COVERAGE_HIGH",
    "LEXICAL_COVERAGE_LOW", "MIN_CANDIDATES", "POOL_CANDIDATES_PER_RESULT", "QUERY_LANGUAGE_SHARE", "RRF_K",
    "TEMPLATE_PRIOR",
    "candidate_count", "distinct", "drop_duplicates", "fuse", "fuse_hybrid", "lexical_weight", "overlap_share",
    "rerank_head", "score_ranking", "take_per_document",
]

RRF_K = 60  # the constant of Cormack et al.; flat enough that both rankings count
# Weights of the two rankings in the fusion. Dense counts 1.5x: on long filings its sentence and
# table-row units found the right page more often than BM25's whole-chunk word counts, whose
# top ranks went to chunks that merely repeat the query's words (measured by bench/financebench.py).
DENSE_WEIGHT = 1.5
BM25_WEIGHT = 1.0
# Candidates each ranking contributes: max(5 x top_k, 50). A long report has hundreds of
# chunks; the right one is often near rank 20-40 in one ranking and high in the other.
MIN_CANDIDATES = 50
CANDIDATES_PER_RESULT = 5
# The pool asks each document for max(3 x per-document results, 50) candidates and reranks the
# head of max(3 x top_k, 50): every document proposes its own best, the global scores re-rank them.
POOL_CANDIDATES_PER_RESULT = 3
# A question in another language than the document's finds only a few names and numbers in its
# vocabulary, and BM25's ranking over those few would drown the cross-lingual dense ranking. So
# BM25 keeps its full weight when the document knows at least HIGH of the query's distinct words
# (nine in ten XQuAD questions in every language do over their own document) or when the query
# may be in one of the document's languages (the detector gives it a fifth or more: short
# questions are often ambiguous); otherwise its weight falls with that share, to none below LOW
# (an English question finds 0.1-0.4 of its words in a German, Russian or Thai document).
LEXICAL_COVERAGE_LOW = 0.4
LEXICAL_COVERAGE_HIGH = 0.7
QUERY_LANGUAGE_SHARE = 0.2
# A template passage (text/templates.py) counts this many places lower in each ranking it is fused from:
# first in both rankings it still lands in the head (a question that asks for it finds it), but
# a template that merely shares the question's words drops below the content that answers it.
TEMPLATE_PRIOR = 10
DUPLICATE_OVERLAP = 0.5  # a result sharing more than this share of its span with a chosen one is dropped

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class _Rerankable(Protocol):
    rerank: float | None


R = TypeVar("R", bound=_Rerankable)


def candidate_count(results: int, per_result: int = CANDIDATES_PER_RESULT) -> int:
    """Candidates a ranking contributes for ``results`` wanted: ``per_result`` each, at least MIN_CANDIDATES."""
    return max(per_result * results, MIN_CANDIDATES)


# --- fusion --------------------------------------------------------------------------------------
def fuse(rankings: Iterable[tuple[Iterable[K], float]], demote: Callable[[K], int] | None = None) -> dict[K, float]:
    """Weighted reciprocal rank fusion: each (ranking best first, weight) adds weight / (RRF_K + rank)
    to the score of every item it ranks (rank 1-based, plus ``demote(item)`` places when given).
    Items in first-seen order; terms are added in the order of ``rankings``."""
    scores: dict[K, float] = {}
    for ranking, weight in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (RRF_K + rank + (demote(item) if demote else 0))
    return scores


def fuse_hybrid(
    dense: Iterable[int] | None, bm25: np.ndarray | None, lexical: float, *, n: int | None = None,
    templates: np.ndarray | None = None,
) -> dict[int, float]:
    """The fusion of search, one document's (``index.py``) and a pool's (``pool.py``): the ``dense``
    ranking (positions, best first) at DENSE_WEIGHT and the ranking of the ``bm25`` scores (their
    first ``n``; a position without any query term is no BM25 candidate) at BM25_WEIGHT times
    ``lexical`` (``lexical_weight``); a position that ``templates`` marks counts TEMPLATE_PRIOR places
    lower in each. None leaves a ranking out (the dense- or BM25-only modes)."""
    rankings: list[tuple[Iterable[int], float]] = []
    if dense is not None:
        rankings.append((dense, DENSE_WEIGHT))
    if bm25 is not None:
        rankings.append((score_ranking(bm25, n, positive=True), BM25_WEIGHT * lexical))
    if templates is None:
        return fuse(rankings)
    marked = templates
    return fuse(rankings, lambda pos: TEMPLATE_PRIOR if marked[pos] else 0)


def score_ranking(scores: np.ndarray, n: int | None = None, *, positive: bool = False) -> list[int]:
    """Positions of ``scores`` best first (ties: the earlier position), the first ``n`` of them;
    with ``positive``, only those scoring above 0 (a BM25 score of 0 means no query term at all)."""
    order = np.argsort(-scores, kind="stable")
    if n is not None:
        order = order[:n]
    if positive:
        above = scores[order] <= 0
        order = order[: int(np.argmax(above))] if above.any() else order
    return [int(pos) for pos in order]


def known_share(asked: Sequence[str], known: Sequence[str]) -> float:
    """The share of the query's distinct words (``asked``) that the vocabulary knows (``known``):
    the ``coverage`` of ``lexical_weight``."""
    return len(set(known)) / len(set(asked)) if asked else 0.0


def lexical_weight(coverage: float, query: str, languages: Sequence[str]) -> float:
    """BM25's share of its weight for ``query``, of which ``coverage`` of the words are known to
    documents in ``languages``."""
    if coverage >= LEXICAL_COVERAGE_HIGH or _plausible_language(query, tuple(languages)):
        return 1.0
    span = LEXICAL_COVERAGE_HIGH - LEXICAL_COVERAGE_LOW
    return min(1.0, max(0.0, (coverage - LEXICAL_COVERAGE_LOW) / span))


@functools.lru_cache(maxsize=1024)
def _plausible_language(query: str, languages: tuple[str, ...]) -> bool:
    """Whether the detector finds one of ``languages`` plausible for ``query``."""
    shares: dict[str, float] = {}
    for language, probability in language_probabilities(query).items():
        shares[base_language(language)] = shares.get(base_language(language), 0.0) + probability
    return any(shares.get(language, 0.0) >= QUERY_LANGUAGE_SHARE for language in languages)


# --- rerank --------------------------------------------------------------------------------------
def rerank_head(
    query: str, ranked: list[R], reranker: Reranker, text: Callable[[R], str], head: int | None = None,
    weight: float | None = None,
) -> list[R]:
    """The first ``head`` items (all when None) scored by the cross-encoder (``item.rerank`` is set)
    and sorted by that score, stable so that equal scores keep the given order; with ``weight``, by
    1/(RRF_K + given place) + weight/(RRF_K + the cross-encoder's place) instead, as the fusion adds
    its rankings. The rest follow."""
    top = ranked if head is None else ranked[:head]
    if not top:
        return ranked
    for item, score in zip(top, reranker.score(query, [text(i) for i in top]), strict=True):
        item.rerank = float(score)
    by_model = sorted(range(len(top)), key=lambda i: -(top[i].rerank or 0.0))
    if weight is None:
        return [top[i] for i in by_model] + ranked[len(top):]
    place = {i: p for p, i in enumerate(by_model, start=1)}
    fused = sorted(range(len(top)), key=lambda i: -(1 / (RRF_K + i + 1) + weight / (RRF_K + place[i])))
    return [top[i] for i in fused] + ranked[len(top):]


# --- diversity -----------------------------------------------------------------------------------
def drop_duplicates(
    ranked: Sequence[T], chunk: Callable[[T], Chunk], *, identity: Callable[[T], Hashable],
    document: Callable[[T], Hashable] = lambda _: 0, top_k: int | None = None,
) -> list[T]:
    """Walk in relevance order; skip what repeats a result already chosen: the same ``identity``
    (one passage reached twice), the same text in one ``document``, or a span of one document
    sharing more than DUPLICATE_OVERLAP with a chosen one. Never re-sorts. With ``top_k``, stops
    there, and fills up with the skipped near-duplicates when fewer remain (rather near-duplicates
    than fewer results than asked for)."""
    kept = list(itertools.islice(distinct(ranked, chunk, identity=identity, document=document), top_k))
    if top_k is not None and len(kept) < top_k:
        seen_ids = {identity(item) for item in kept}
        kept += [item for item in ranked if identity(item) not in seen_ids][: top_k - len(kept)]
    return kept


def distinct(
    ranked: Iterable[T], chunk: Callable[[T], Chunk], *, identity: Callable[[T], Hashable],
    document: Callable[[T], Hashable] = lambda _: 0,
) -> Iterator[T]:
    """``drop_duplicates``' walk, lazily: a caller that needs the first few results of a long pool
    (every chunk compared with its document's kept spans) walks no further."""
    seen_ids: set[Hashable] = set()
    seen_text: set[tuple[Hashable, str]] = set()
    spans: dict[Hashable, list[ChunkLocation]] = {}
    for item in ranked:
        found = chunk(item)
        doc = document(item)
        norm = (doc, " ".join(found.text.split()).lower())  # whitespace runs as one space (as \s+), ~4x quicker
        if identity(item) in seen_ids or norm in seen_text:
            continue
        if any(overlap_share(found.location, loc) > DUPLICATE_OVERLAP for loc in spans.get(doc, ())):
            continue
        seen_ids.add(identity(item))
        seen_text.add(norm)
        spans.setdefault(doc, []).append(found.location)
        yield item


def take_per_document(
    ranked: Iterable[T], top_k: int, per_document: int, document: Callable[[T], Hashable],
) -> list[T]:
    """The first ``top_k`` of ``ranked`` in order, skipping a document's results past its first ``per_document``."""
    chosen: list[T] = []
    taken: dict[Hashable, int] = {}
    for item in ranked:
        doc = document(item)
        if taken.get(doc, 0) >= per_document:
            continue
        chosen.append(item)
        taken[doc] = taken.get(doc, 0) + 1
        if len(chosen) == top_k:
            break
    return chosen


def overlap_share(a: ChunkLocation, b: ChunkLocation) -> float:
    """The share of the shorter span that the two spans have in common (0 when they do not meet)."""
    inter = min(a.end_char, b.end_char) - max(a.start_char, b.start_char)
    if inter <= 0:
        return 0.0
    shorter = min(a.end_char - a.start_char, b.end_char - b.start_char)
    return inter / shorter if shorter > 0 else 0.0
