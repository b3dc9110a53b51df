"""One ranking over the candidates of several documents, with scores that compare across them.

Per-document scores do not compare: a document's fused score says how a chunk ranks *within*
that document (the best chunk of an unrelated document scores as high as the best chunk of the
right one), and BM25's IDF and length normalisation are statistics of one document. So each
document only *proposes* candidates (its dense and BM25 top-n, in its own ranking order, as
``retrieve_chunks`` ranks them) and the pool is scored once more, globally:

- dense: every pooled chunk's best sentence cosine, sorted over the whole pool. Cosines of one
  embedding model compare across documents; when documents were embedded by different models
  (the accurate role serves long documents), each model's cosines are first standardised over
  that model's candidates (z-scores), the only common scale two models have;
- BM25: one Okapi BM25 index over the pooled candidates' texts, so IDF and length normalisation
  are shared by every document (a word that only one document uses weighs as such);
- reciprocal rank fusion of the two global rankings (``ranking.fuse_hybrid``, as a single
  document's search).

When the query names documents (the words of their first pages, ``naming.py``), the named ones
come first: the name routes, and each document ranks its passages by the rest of the question.
Otherwise the global scores decide which documents get places in the answer and how many; a document's
own ranking decides which of its chunks fill them: the i-th best global score among a
document's candidates goes to the i-th chunk of its own ranking. Within one document its own
statistics rank better: pooled BM25 weighs the words that tell documents apart (a company's
name) heavily, which finds the right document but not the right passage in it (measured by
bench/financebench.py on the dev set). So scores stay on one
global scale, and each document's passages keep the order ``retrieve_chunks`` gives them. Then
the cross-encoder on the head, when one is loaded (its scores are absolute), and the diversity
pass (``ranking.py``).

Route before ranking (``route``, the setting ``search_route_documents``): what a document's search costs
is mostly its focus (unit terms of its candidates) and its learned order, not its FAISS and BM25
lookups. So on a shelf of more than ``route`` documents, each first gets a cheap look (``glance``:
its dense and BM25 top ``ROUTE_CHUNKS``), those looks are fused as the pool fuses candidates, and
only the ``route`` documents with the best chunk there, and every document the query names, are
searched fully and pooled (``_routed``).

That is the ranking of one query. Extra phrasings (``queries``) are each ranked that way and
fused by unweighted reciprocal rank fusion of those rankings (``ranking.fuse``, weight 1 each);
ties keep the order of the first phrasing's ranking.
Everything here is synchronous; the caller runs it in a worker thread under MCP_MODEL_CONCURRENCY.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from mcp_server.citations.passages import passage_id
from mcp_server.core.bounds import clamp
from mcp_server.core.models import Chunk, SearchHit
from mcp_server.rerankers.cross_encoders import Reranker
from mcp_server.retrieval.index import DocumentIndex, glance, reranks
from mcp_server.retrieval.learned import LearnedRanker
from mcp_server.retrieval.ranking import (
    POOL_CANDIDATES_PER_RESULT,
    candidate_count,
    distinct,
    fuse,
    fuse_hybrid,
    known_share,
    lexical_weight,
    rerank_head,
    score_ranking,
    take_per_document,
)
from mcp_server.text.analysis import query_tokens

__all__ = ["MAX_POOL_TOP_K", "NAMED_SHARE", "PoolHit", "PoolSource", "bm25_scores", "named_sources", "search_pool"]

MAX_POOL_TOP_K = 50
BM25_K1, BM25_B = 1.5, 0.75  # bm25s' defaults, as every document's own BM25 (bm25.py)
NAMED_SHARE = 0.8  # a source named at least this share as strongly as the best-named one comes first too
ROUTE_CHUNKS = 5  # routing's first look at each document: its dense and its BM25 top this many chunks

# (model id, text) -> unit query vector
EmbedQuery = Callable[[str, str], np.ndarray]


@dataclass(frozen=True, kw_only=True, slots=True)
class PoolSource:
    index: DocumentIndex
    allowed: np.ndarray | None = None  # sorted chunk positions a filter allows (pages); None = all


@dataclass(frozen=True, kw_only=True, slots=True)
class PoolHit:
    source: int  # position of the document in the caller's list
    hit: SearchHit
    ranks: tuple[int | None, ...] = ()  # 1-based rank in each phrasing's ranking (None = not ranked)


@dataclass(slots=True)
class _Entry:
    source: int
    pos: int
    local: int = 0  # rank in its document's own ranking
    dense: float = 0.0
    bm25: float = 0.0
    fused: float = 0.0
    rerank: float | None = None


@dataclass(slots=True)
class _Ranking:
    entries: list[_Entry] = field(default_factory=list)  # best first, after the diversity pass


def search_pool(
    sources: Sequence[PoolSource], queries: Sequence[str], embed: EmbedQuery, *, top_k: int,
    per_document: int | None = None, reranker: Reranker | None = None, ranker: LearnedRanker | None = None,
    route: int = 0,
) -> list[PoolHit]:
    """The best ``top_k`` chunks of all sources (at most ``per_document`` from each), best first; with
    ``route``, only the sources a first look ranks among the ``route`` best (and those named) are
    searched fully for each query (``_routed``)."""
    top_k = clamp(top_k, 1, MAX_POOL_TOP_K)
    per_doc = min(per_document, top_k) if per_document else top_k
    n_each = candidate_count(per_doc, POOL_CANDIDATES_PER_RESULT)
    vectors: dict[tuple[str, str], np.ndarray] = {}

    def vector(model_id: str, query: str) -> np.ndarray:
        if (model_id, query) not in vectors:
            vectors[model_id, query] = np.asarray(embed(model_id, query), dtype=np.float32).ravel()
        return vectors[model_id, query]

    rerank_n = candidate_count(top_k, POOL_CANDIDATES_PER_RESULT)
    ranked = [_rank_one(sources, q, vector, n_each, reranker, rerank_n, ranker, route) for q in queries]
    if len(ranked) == 1:  # the diversity pass walks only as far as the answer reaches
        order = enumerate(_diverse(sources, ranked[0]), start=1)
        chosen = take_per_document(order, top_k, per_doc, lambda ranked_entry: ranked_entry[1].source)
        return [_hit(sources, entry, (rank,)) for rank, entry in chosen]
    fused, ranks = _fuse_rankings([_Ranking(list(_diverse(sources, entries))) for entries in ranked])
    # phrasings may have found overlapping chunks
    picked = take_per_document(_diverse(sources, fused), top_k, per_doc, lambda e: e.source)
    return [_hit(sources, entry, tuple(ranks[entry.source, entry.pos])) for entry in picked]


# --- one query ---------------------------------------------------------------------------------
def _rank_one(
    sources: Sequence[PoolSource], query: str, vector: Callable[[str, str], np.ndarray],
    n_each: int, reranker: Reranker | None, rerank_n: int,
    ranker: LearnedRanker | None = None, route: int = 0,
) -> list[_Entry]:
    """The pool's entries for ``query``, best first, before the diversity pass."""
    entries: list[_Entry] = []
    named = named_sources(sources, query)
    for s in _routed(sources, query, vector, route, named) if route else range(len(sources)):
        src = sources[s]
        index = src.index
        if not index.chunks:
            continue
        vec = index.query_vector(query, functools.partial(vector, index.model_id))
        found = index.candidates(vec, query, min(n_each, len(index.chunks)), src.allowed, ranker)
        entries += [_Entry(s, pos, dense=sim, local=rank) for rank, (pos, sim) in enumerate(found)]
    if not entries:
        return []
    dense = _comparable_dense(sources, entries)
    bm25 = _fused(sources, entries, query, dense)
    for entry, score in zip(entries, bm25, strict=True):
        entry.bm25 = float(score)
    _places_in_own_order(entries)
    ranked = sorted(entries, key=lambda e: (e.source not in named, -e.fused, e.local, e.source))
    head = min(rerank_n, reranker.head or rerank_n) if reranker is not None else 0
    if reranker is not None and reranks(reranker, [sources[s].index for s in {e.source for e in ranked[:head]}]):
        ranked = rerank_head(query, ranked, reranker, lambda e: _chunk(sources, e).text, head, reranker.weight)
    return ranked


def _fused(sources: Sequence[PoolSource], entries: list[_Entry], query: str, dense: np.ndarray) -> np.ndarray:
    """Each entry's ``fused`` score, set: the reciprocal rank fusion of the global dense and pooled BM25
    rankings; returns the pooled BM25 scores."""
    bm25, coverage = _pooled_bm25(sources, entries, query)
    languages = list(dict.fromkeys(lang for src in sources for lang in src.index.languages))
    lexical = lexical_weight(coverage, query, languages)
    for j, score in fuse_hybrid(score_ranking(dense), bm25, lexical).items():
        entries[j].fused = score
    return bm25


def _routed(
    sources: Sequence[PoolSource], query: str, vector: Callable[[str, str], np.ndarray], keep: int, named: set[int],
) -> list[int]:
    """The sources worth searching fully for ``query``: those it names and the ``keep`` whose best chunk
    of a first look (``index.glance``: each document's dense and BM25 top ``ROUTE_CHUNKS``, no focus, no
    learned order) ranks highest in the pool's own global fusion (the dense cosines compared across
    documents, BM25 with the shelf's IDF). A search of a document costs most in what ``glance`` leaves
    out, so a shelf of 50 costs little more than the ``keep`` that matter. Every source under a pages
    filter (a first look sees every page) or a shelf of at most ``keep``: all of them."""
    if len(sources) <= keep or any(src.allowed is not None for src in sources):
        return list(range(len(sources)))
    entries: list[_Entry] = []
    for s, src in enumerate(sources):
        index = src.index
        if index.chunks:
            vec = index.query_vector(query, functools.partial(vector, index.model_id))
            entries += [_Entry(s, pos, dense=sim) for pos, sim in glance(index, vec, query, ROUTE_CHUNKS)]
    _fused(sources, entries, query, _comparable_dense(sources, entries))
    best: dict[int, float] = {}
    for entry in entries:
        best[entry.source] = max(best.get(entry.source, 0.0), entry.fused)
    return sorted(set(sorted(best, key=lambda s: (-best[s], s))[:keep]) | named)


def named_sources(sources: Sequence[PoolSource], query: str) -> set[int]:
    """The sources the query names (``naming.py``): each naming word, and each code the query and
    a first page write alike ("10-Q"), weighs by how few of the sources' identities hold it (one
    every identity holds names none), and the sources scoring at least NAMED_SHARE of the best come
    first; when some of those write a code of the query, only they."""
    words = {s: src.index.identity.naming_tokens(query) | {f"code:{c}" for c in src.index.identity.naming_codes(query)}
             for s, src in enumerate(sources) if src.index.identity is not None}
    holders: dict[str, int] = {}
    for tokens in words.values():
        for token in tokens:
            holders[token] = holders.get(token, 0) + 1
    n = len(sources)
    scores = {s: sum(math.log(1 + n / holders[t]) for t in tokens if holders[t] < n) for s, tokens in words.items()}
    best = max(scores.values(), default=0.0)
    named = {s for s, score in scores.items() if score > 0 and score >= NAMED_SHARE * best}
    # a code is the most precise naming there is: among the named sources, those whose first page
    # writes a code of the query ("10-Q") are the ones meant (one company's 10-Q beside its 10-K)
    coded = {s for s in named if any(t.startswith("code:") for t in words[s])}
    return coded or named


def _places_in_own_order(entries: list[_Entry]) -> None:
    """Hand each document's global scores, best first, to its chunks in its own ranking order."""
    by_source: dict[int, list[_Entry]] = {}
    for entry in entries:
        by_source.setdefault(entry.source, []).append(entry)
    for group in by_source.values():
        scores = sorted((e.fused for e in group), reverse=True)
        for entry, score in zip(sorted(group, key=lambda e: e.local), scores, strict=True):
            entry.fused = score


def _comparable_dense(sources: Sequence[PoolSource], entries: list[_Entry]) -> np.ndarray:
    dense = np.array([e.dense for e in entries], dtype=np.float64)
    models = np.array([sources[e.source].index.model_id for e in entries])
    if len(set(models.tolist())) > 1:
        for model in set(models.tolist()):
            mask = models == model
            spread = dense[mask].std()
            dense[mask] = (dense[mask] - dense[mask].mean()) / (spread if spread > 0 else 1.0)
    return dense


def _pooled_bm25(sources: Sequence[PoolSource], entries: list[_Entry], query: str) -> tuple[np.ndarray, float]:
    """BM25 over the pooled candidates (one IDF for all), and the share of the query's words they know."""
    languages = [lang for e in entries for lang in sources[e.source].index.languages]
    asked = query_tokens(query, languages)
    terms = list(dict.fromkeys(asked))
    lengths = np.zeros(len(entries), dtype=np.int64)
    tf = np.zeros((len(terms), len(entries)), dtype=np.float64)
    by_source: dict[int, list[int]] = {}
    for j, e in enumerate(entries):
        by_source.setdefault(e.source, []).append(j)
    for source, rows in by_source.items():  # each chunk's tokens as its own document's BM25 read them
        positions = [entries[j].pos for j in rows]
        lengths[rows], tf[:, rows] = sources[source].index.lexical.term_counts(positions, terms)
    scores, wanted = bm25_scores(lengths, tf, terms, asked)
    return scores.astype(np.float64), known_share(asked, wanted)


def bm25_scores(
    lengths: np.ndarray, tf: np.ndarray, terms: Sequence[str], asked: Sequence[str],
) -> tuple[np.ndarray, list[str]]:
    """(Okapi BM25 of each pooled chunk, of token count ``lengths`` and holding each of the distinct
    ``terms`` of the query so often, ``tf``: terms x chunks, for the ``asked`` tokens; the asked
    tokens some chunk holds), bm25s' scores to the bit (its "lucene" method, k1 1.5, b 0.75,
    float32): only the query's terms are counted, where indexing the whole pool in bm25s first cost
    ~0.1 ms a chunk and the pool holds ~50 chunks of every document."""
    scores = np.zeros(len(lengths), dtype=np.float32)
    if not len(terms) or not lengths.sum():
        return scores, []
    norm = BM25_K1 * ((1 - BM25_B) + BM25_B * lengths / lengths.mean())
    df = np.count_nonzero(tf, axis=1)
    n = len(lengths)
    idf = np.array([math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df], dtype=np.float32)
    per_term = (idf[:, None].astype(np.float64) * (tf / (norm + tf))).astype(np.float32)
    held = {term: row for row, term in enumerate(terms) if df[row]}
    wanted = [t for t in asked if t in held]
    for term in wanted:  # in the query's order, repeats too, summed in float32 as bm25s sums
        scores += per_term[held[term]]
    return scores, wanted


# --- several phrasings ---------------------------------------------------------------------------
def _fuse_rankings(rankings: list[_Ranking]) -> tuple[list[_Entry], dict[tuple[int, int], list[int | None]]]:
    ranks: dict[tuple[int, int], list[int | None]] = {}
    first: dict[tuple[int, int], _Entry] = {}  # the entry of the first phrasing that ranked it (its scores)
    for q, ranking in enumerate(rankings):
        for rank, entry in enumerate(ranking.entries, start=1):
            key = (entry.source, entry.pos)
            ranks.setdefault(key, [None] * len(rankings))[q] = rank
            first.setdefault(key, entry)
    fused = fuse(([(e.source, e.pos) for e in ranking.entries], 1.0) for ranking in rankings)
    # ties: the ranks of the phrasings in order (absent counts as last)
    inf = float("inf")
    order = sorted(ranks, key=lambda k: (-fused[k], *[r if r is not None else inf for r in ranks[k]]))
    entries = []
    for key in order:
        entry = first[key]
        entries.append(_Entry(entry.source, entry.pos, local=entry.local, dense=entry.dense, bm25=entry.bm25,
                              fused=fused[key], rerank=entry.rerank))
    return entries, ranks


# --- selection ---------------------------------------------------------------------------------
def _chunk(sources: Sequence[PoolSource], entry: _Entry) -> Chunk:
    return sources[entry.source].index.chunks[entry.pos]


def _diverse(sources: Sequence[PoolSource], ranked: Iterable[_Entry]) -> Iterator[_Entry]:
    """The diversity pass over the pool, lazily: one passage reached twice (one document at two
    URLs), the same text in one document, a span mostly shared with a better chunk of the same document."""
    return distinct(ranked, lambda e: _chunk(sources, e), document=lambda e: e.source,
                    identity=lambda e: f"{sources[e.source].index.key}/{e.pos}")


def _hit(sources: Sequence[PoolSource], entry: _Entry, ranks: tuple[int | None, ...]) -> PoolHit:
    index = sources[entry.source].index
    chunk = index.chunks[entry.pos]
    score = entry.rerank if entry.rerank is not None and len(ranks) == 1 else entry.fused
    hit = SearchHit(chunk=chunk, score=score, dense=entry.dense, bm25=entry.bm25, rerank=entry.rerank,
                    passage_id=passage_id(index.key, entry.pos, chunk.text))
    return PoolHit(source=entry.source, hit=hit, ranks=ranks)
