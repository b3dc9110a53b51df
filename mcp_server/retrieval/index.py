"""One document's search index: FAISS over unit vectors (scores are cosines) plus BM25.

Dense scoring is sentence-MaxSim: FAISS holds one vector per *unit* of each chunk (a sentence,
or a few table rows under their table's title and header; see ``sentences.py``) with a unit ->
chunk map, and a chunk's dense score is the best cosine of its units. A chunk-level vector
averages a specific sentence away among its neighbours; the max keeps it (measured by
bench/squad.py).

Search pipeline (all synchronous; the manager runs it in a worker thread):

    dense top-N  ┐
                 ├─ reciprocal rank fusion ─ cross-encoder rerank (if any) ─ diversity ─ neighbours
    BM25 top-N   ┘

The fusion, the rerank, the diversity pass and their constants are ``ranking.py``'s (N = max(5 x
top_k, 50); dense weighs 1.5x). BM25 reads the text through ``lexical.py`` (no page markers,
numbers without thousands separators).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import bm25s
import faiss
import numpy as np

from mcp_server.core.bounds import clamp
from mcp_server.core.concurrency import Once
from mcp_server.core.models import Chunk, ChunkLocation, SearchHit
from mcp_server.encoders.embedders import Embedder, ProgressFn
from mcp_server.encoders.rerankers import Reranker
from mcp_server.retrieval.naming import Identity, identity_of, naming_factors
from mcp_server.retrieval.ranking import (
    BM25_WEIGHT,
    CANDIDATES_PER_RESULT,
    DENSE_WEIGHT,
    RRF_K,
    TEMPLATE_PRIOR,
    candidate_count,
    drop_duplicates,
    fuse,
    known_share,
    lexical_weight,
    overlap_share,
    rerank_head,
    score_ranking,
)
from mcp_server.retrieval.templates import template_mask
from mcp_server.text.analysis import analyzer_for, base_language, query_tokens
from mcp_server.text.sentences import sentence_units

__all__ = [
    "MAX_NEIGHBORS", "MAX_TOP_K", "RRF_K", "DocumentIndex", "SearchMode", "UnitSelect", "lexical_weight",
    "merge_texts", "overlap_share",
]

# hybrid fuses both rankings; dense / bm25 use one (for benchmarks and ablations)
SearchMode = Literal["hybrid", "dense", "bm25"]

MAX_TOP_K = 20
MAX_NEIGHBORS = 2
SENTENCE_FANOUT = 4  # sentences fetched per dense chunk candidate; several may share a chunk
MIN_IDENTITY_PAGES = 3  # a document with fewer pages has no cover page: its first page is content
EMBED_SLICE = 4096  # sentences embedded and added to FAISS at a time (bounds the vectors held twice)

# (unit texts, the document position of each one's chunk) -> mask of the units to embed (``DocumentIndex.extended``)
UnitSelect = Callable[[list[str], np.ndarray], np.ndarray]


@dataclass(slots=True)
class _Candidate:
    pos: int
    dense: float | None = None
    bm25: float | None = None
    rrf: float = 0.0
    rerank: float | None = None


class DocumentIndex:
    """Chunks of one document, the FAISS index of their sentences with ``owners`` (the chunk
    position of each vector, non-decreasing) and a BM25 index (rebuilt from the texts) over
    every chunk. Without ``owners`` each chunk is one vector.

    The vectors may cover only some chunks (a *partial* index, ``coverage`` < 1: the first
    answer on a big document while the complete one builds): dense ranking then runs over the
    covered chunks only, and a chunk without vectors has no dense score.
    """

    key: str = ""  # the cache key it is stored under (set by the store and the manager); passage ids name it

    def __init__(
        self, chunks: Sequence[Chunk], faiss_index: faiss.Index, *, model_id: str,
        owners: np.ndarray | None = None,
    ) -> None:
        self.chunks = list(chunks)
        self.model_id = model_id
        self._set_vectors(faiss_index, owners)
        self._bm25: bm25s.BM25 | None = None
        # each chunk is read by its own language's analyzer; a query by each language present
        self.languages = _languages(self.chunks)
        corpus = analyse_chunks(self.chunks)
        self._df: dict[str, int] = {}
        for tokens in corpus:
            for token in set(tokens):
                self._df[token] = self._df.get(token, 0) + 1
        self.identity = _identity(self.chunks, corpus, self.languages[0])
        # found at the first search (or warm()); the partial indexes of a document, copies, share it
        texts = [c.text for c in self.chunks]
        self._templates = Once(lambda: template_mask(texts))
        if any(corpus):  # bm25s cannot index a corpus without a single token
            self._bm25 = bm25s.BM25()
            self._bm25.index(corpus, show_progress=False)

    @classmethod
    def build(
        cls, chunks: Sequence[Chunk], vectors: np.ndarray, *, model_id: str, owners: np.ndarray | None = None,
    ) -> DocumentIndex:
        """From precomputed unit vectors: one per chunk, or one per sentence with ``owners``."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        expected = len(chunks) if owners is None else len(owners)
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise ValueError(f"need {expected} vectors, got shape {vectors.shape} for {len(chunks)} chunks")
        index = faiss.IndexFlatIP(vectors.shape[1])
        if len(vectors):
            index.add(vectors)
        return cls(chunks, index, model_id=model_id, owners=owners)

    @classmethod
    def embed(
        cls, chunks: Sequence[Chunk], embedder: Embedder, *, progress: ProgressFn | None = None,
        only: Sequence[int] | None = None,
    ) -> DocumentIndex:
        """Split the chunks into sentences, embed those (and only those) and build the index;
        with ``only``, just the sentences of the chunks at those positions (a partial index)."""
        positions = np.arange(len(chunks), dtype=np.int64) if only is None else np.unique(np.asarray(only, np.int64))
        index = faiss.IndexFlatIP(embedder.dimension)
        owners = _embed_into(index, chunks, positions, embedder, progress)
        return cls(chunks, index, model_id=embedder.model_id, owners=owners)

    def extended(
        self, positions: Sequence[int], embedder: Embedder, *, progress: ProgressFn | None = None,
        select: UnitSelect | None = None,
    ) -> DocumentIndex:
        """A copy whose vectors also cover the chunks at ``positions`` (only the uncovered ones
        are embedded; ``select`` may keep only some of their units, see ``partial.py``); the
        BM25 index is shared, not rebuilt. ``self`` is left unchanged."""
        wanted = np.unique(np.asarray(positions, dtype=np.int64))
        wanted = wanted[(wanted >= 0) & (wanted < len(self.chunks))]
        new = wanted[~self._covered[wanted]]
        if not len(new):
            return self
        added = faiss.IndexFlatIP(self.dimension)
        owners = np.concatenate([self.owners, _embed_into(added, self.chunks, new, embedder, progress, select)])
        vectors = np.concatenate([self.faiss.reconstruct_n(0, self.faiss.ntotal), added.reconstruct_n(0, added.ntotal)])
        order = np.argsort(owners, kind="stable")  # owners must stay in chunk order
        index = faiss.IndexFlatIP(self.dimension)
        index.add(np.ascontiguousarray(vectors[order]))
        clone = copy.copy(self)
        clone._set_vectors(index, owners[order])
        return clone

    def _set_vectors(self, faiss_index: faiss.Index, owners: np.ndarray | None) -> None:
        n = len(self.chunks)
        owners = np.arange(n, dtype=np.int64) if owners is None else np.asarray(owners, dtype=np.int64)
        if owners.ndim != 1 or len(owners) != faiss_index.ntotal:
            raise ValueError(f"index holds {faiss_index.ntotal} vectors for {len(owners)} owner entries")
        if len(owners) and (owners[0] < 0 or owners[-1] >= n or np.any(np.diff(owners) < 0)):
            raise ValueError("owners must map vectors to chunks, in chunk order")
        self.faiss = faiss_index
        self.owners = owners
        # vectors of chunk p are starts[p]:starts[p + 1]; a chunk without vectors has an empty range
        self._starts = np.searchsorted(owners, np.arange(n + 1), side="left")
        self._covered = np.diff(self._starts) > 0
        self.dimension = int(faiss_index.d)

    @property
    def coverage(self) -> float:
        """Share of the chunks that have vectors (1.0 for a complete index, and for no chunks)."""
        return float(self._covered.mean()) if len(self.chunks) else 1.0

    @property
    def templates(self) -> np.ndarray:
        """Per chunk, whether it is a template passage (``templates.py``); found at the first search."""
        return self._templates.get()

    def dense_query(self, query: str) -> str:
        """``query`` without the words that name this document (``naming.py``)."""
        return self.identity.dense_query(query) if self.identity is not None else query

    def query_vector(self, query: str, embed_query: Callable[[str], np.ndarray]) -> np.ndarray:
        """The dense side's vector of ``query`` here: when words of it name this document, the
        mean direction of the query and the query without them (the name counts half; dropping
        it altogether lost the questions whose name was also their subject, bench/financebench.py)."""
        focus = self.dense_query(query)
        vector = np.asarray(embed_query(query), dtype=np.float32)
        if focus == query:
            return vector
        mean = vector + np.asarray(embed_query(focus), dtype=np.float32)
        return mean / max(float(np.linalg.norm(mean)), 1e-12)

    def bm25_top(self, query: str, n: int) -> list[int]:
        """Positions of the ``n`` best BM25 chunks for ``query`` (those matching a query term)."""
        scores, _ = self._bm25_scores(query)
        if scores is None:
            return []
        order = np.argsort(-scores, kind="stable")[:n]
        return [int(pos) for pos in order if scores[pos] > 0]

    def __len__(self) -> int:
        return len(self.chunks)

    # --- search -----------------------------------------------------------------------------
    def search(
        self, query_vec: np.ndarray, query: str, top_k: int = 5, *,
        reranker: Reranker | None = None, neighbors: int = 0, mode: SearchMode = "hybrid",
    ) -> list[SearchHit]:
        top_k, neighbors = clamp(top_k, 1, MAX_TOP_K), clamp(neighbors, 0, MAX_NEIGHBORS)
        if not self.chunks:
            return []
        n = min(len(self.chunks), candidate_count(top_k, CANDIDATES_PER_RESULT))
        candidates = self._fuse(query_vec, query, n, mode)
        ranked = sorted(candidates.values(), key=lambda c: (-c.rrf, c.pos))[:n]
        if reranker is not None:
            ranked = rerank_head(query, ranked, reranker, lambda c: self.chunks[c.pos].text)
        chosen = drop_duplicates(ranked, lambda c: self.chunks[c.pos], identity=lambda c: c.pos, top_k=top_k)
        hits = [
            SearchHit(
                chunk=self.chunks[c.pos],
                score=c.rerank if c.rerank is not None else c.rrf,
                dense=c.dense, bm25=c.bm25, rerank=c.rerank,
            )
            for c in chosen
        ]
        return self._expand(hits, chosen, neighbors) if neighbors else hits

    def _fuse(
        self, query_vec: np.ndarray, query: str, n: int, mode: SearchMode, allowed: np.ndarray | None = None,
    ) -> dict[int, _Candidate]:
        """The candidates of both rankings with their fused scores; only among ``allowed``
        positions when given."""
        candidates: dict[int, _Candidate] = {}
        vec = np.ascontiguousarray(np.asarray(query_vec, dtype=np.float32).reshape(1, -1))
        dense = self._dense_ranking(vec, n, allowed)
        for pos, sim in dense:
            candidates.setdefault(pos, _Candidate(pos)).dense = sim
        bm25, coverage = self._bm25_scores(query)
        if bm25 is not None and allowed is not None:
            kept = np.zeros_like(bm25)
            kept[allowed] = bm25[allowed]
            bm25 = kept
        rankings: list[tuple[list[int], float]] = []
        if mode != "bm25":
            rankings.append(([pos for pos, _ in dense], DENSE_WEIGHT))
        if bm25 is not None and mode != "dense":  # a chunk without any query term is no BM25 candidate
            weight = BM25_WEIGHT * lexical_weight(coverage, query, self.languages)
            rankings.append((score_ranking(bm25, n, positive=True), weight))
        templates = self.templates
        for pos, score in fuse(rankings, lambda pos: TEMPLATE_PRIOR if templates[pos] else 0).items():
            candidates.setdefault(pos, _Candidate(pos)).rrf = score
        if bm25 is not None:
            for cand in candidates.values():
                cand.bm25 = float(bm25[cand.pos])
        missing = [c for c in candidates.values() if c.dense is None and self._covered[c.pos]]
        if missing:  # BM25-only candidates still report their best sentence cosine
            ids = np.concatenate([np.arange(self._starts[c.pos], self._starts[c.pos + 1]) for c in missing])
            sims = self.faiss.reconstruct_batch(ids.astype(np.int64)) @ vec[0]
            best = np.full(len(self.chunks), -np.inf, dtype=np.float32)
            np.maximum.at(best, self.owners[ids], sims)
            for cand in missing:
                cand.dense = float(best[cand.pos])
        return candidates

    def _dense_ranking(self, vec: np.ndarray, n: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Up to ``n`` (chunk position, best sentence cosine), best first; among ``allowed``
        positions when given (exact cosines of their sentences, no FAISS cut-off)."""
        if allowed is not None:
            allowed = np.asarray(allowed, dtype=np.int64)
            allowed = allowed[self._covered[allowed]]
            if not len(allowed):
                return []
            best = self.dense_scores(vec[0], allowed)
            order = np.argsort(-best, kind="stable")[:n]
            return [(int(allowed[i]), float(best[i])) for i in order]
        if not self.faiss.ntotal:  # a partial index may have no vectors yet
            return []
        sims, ids = self.faiss.search(vec, min(self.faiss.ntotal, n * SENTENCE_FANOUT))
        ranking: list[tuple[int, float]] = []
        seen: set[int] = set()
        for sid, sim in zip(ids[0], sims[0], strict=True):
            if sid < 0:
                continue
            pos = int(self.owners[sid])
            if pos not in seen:  # sentences come best first: the first one of a chunk is its max
                seen.add(pos)
                ranking.append((pos, float(sim)))
                if len(ranking) == n:
                    break
        return ranking

    def query_tokens(self, query: str) -> list[str]:
        """The query's BM25 tokens as this document's analyzers read them (known or not)."""
        return query_tokens(query, self.languages)

    def _bm25_scores(self, query: str) -> tuple[np.ndarray | None, float]:
        """(each chunk's BM25 score, None when no query word is known; the share of the query's
        distinct words that the document's vocabulary knows)."""
        if self._bm25 is None:
            return None, 0.0
        asked = self.query_tokens(query)
        tokens = [t for t in asked if t in self._bm25.vocab_dict]
        if not tokens:
            return None, 0.0
        naming = self.identity.naming_tokens(query) & set(tokens) if self.identity is not None else set()
        content = [t for t in tokens if t not in naming]
        scores = np.asarray(self._bm25.get_scores(content), dtype=np.float32) if content else \
            np.zeros(len(self.chunks), dtype=np.float32)
        # the naming words weigh as a common word does (naming.py)
        for token, factor in naming_factors(naming, self._df, len(self.chunks)).items():
            scores += factor * np.asarray(self._bm25.get_scores([token] * asked.count(token)), dtype=np.float32)
        return scores, known_share(asked, tokens)

    # --- cross-document search (retrieval/pool.py ranks the pooled candidates once more) ----
    def candidates(
        self, query_vec: np.ndarray, query: str, n: int, allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """The union of the dense and the BM25 top ``n`` chunks as (position, best sentence cosine),
        in this document's own ranking order (the fusion ``search`` ranks by), only among
        ``allowed`` positions when given (exact cosines for those, no FAISS cut-off). A chunk
        without vectors (a partial index) scores -inf."""
        fused = self._fuse(query_vec, query, n, "hybrid", allowed)
        ranked = sorted(fused.values(), key=lambda c: (-c.rrf, c.pos))
        return [(c.pos, float("-inf") if c.dense is None else c.dense) for c in ranked]

    def dense_scores(self, query_vec: np.ndarray, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        """Exact dense score (best sentence cosine) of each chunk in ``positions``, in that order."""
        positions = np.asarray(positions, dtype=np.int64)
        if not len(positions):
            return np.zeros(0, dtype=np.float32)
        counts = self._starts[positions + 1] - self._starts[positions]  # >= 1: every chunk has vectors
        ids = np.concatenate([np.arange(self._starts[p], self._starts[p + 1]) for p in positions])
        sims = self.faiss.reconstruct_batch(ids.astype(np.int64)) @ np.asarray(query_vec, dtype=np.float32).ravel()
        return np.maximum.reduceat(sims, np.concatenate(([0], np.cumsum(counts)[:-1])))

    # --- neighbours -------------------------------------------------------------------------
    def _expand(self, hits: list[SearchHit], chosen: list[_Candidate], neighbors: int) -> list[SearchHit]:
        """Each hit grows by ``neighbors`` chunks each side; blocks that touch or overlap merge
        into the block of the better-ranked hit, which keeps that hit's place."""
        last = len(self.chunks) - 1
        blocks: list[list[int]] = []  # [lo, hi] per output hit, in rank order
        owners: list[int] = []  # index into hits
        for i, cand in enumerate(chosen):
            lo, hi = max(0, cand.pos - neighbors), min(last, cand.pos + neighbors)
            for block in blocks:
                if lo <= block[1] + 1 and hi >= block[0] - 1:
                    block[0], block[1] = min(block[0], lo), max(block[1], hi)
                    break
            else:
                blocks.append([lo, hi])
                owners.append(i)
        merged = True
        while merged:  # a grown block may now touch another one
            merged = False
            for a in range(len(blocks)):
                for b in range(a + 1, len(blocks)):
                    if blocks[b][0] <= blocks[a][1] + 1 and blocks[b][1] >= blocks[a][0] - 1:
                        blocks[a] = [min(blocks[a][0], blocks[b][0]), max(blocks[a][1], blocks[b][1])]
                        del blocks[b], owners[b]
                        merged = True
                        break
                if merged:
                    break
        out = []
        for (lo, hi), owner in zip(blocks, owners, strict=True):
            hit = hits[owner]
            span = self.chunks[lo : hi + 1]
            location = _span_location(hit.chunk.location, [c.location for c in span])
            out.append(dataclasses.replace(
                hit, chunk=dataclasses.replace(hit.chunk, location=location), text=merge_texts(span)
            ))
        return out


def _identity(chunks: Sequence[Chunk], corpus: list[list[str]], language: str) -> Identity | None:
    """The document's identity (``naming.py``) when it has a first page to read it from: a paged
    document of MIN_PAGES or more (a shorter one's first page is its content)."""
    pages = {p for c in chunks for p in c.location.pages}
    return identity_of(chunks, corpus, language) if len(pages) >= MIN_IDENTITY_PAGES else None


def _languages(chunks: Sequence[Chunk]) -> list[str]:
    """The languages of a document's chunks, the one with the most text first (["en"] when none is known)."""
    chars: dict[str, int] = {}
    for chunk in chunks:
        language = base_language(chunk.language) or "en"
        chars[language] = chars.get(language, 0) + len(chunk.text)
    return sorted(chars, key=lambda language: -chars[language]) or ["en"]


def analyse_chunks(chunks: Sequence[Chunk]) -> list[list[str]]:
    """BM25 tokens of each chunk by its language's analyzer (one batch per language)."""
    out: list[list[str]] = [[] for _ in chunks]
    by_language: dict[str, list[int]] = {}
    for i, chunk in enumerate(chunks):
        by_language.setdefault(base_language(chunk.language) or "en", []).append(i)
    for language, positions in by_language.items():
        for i, tokens in zip(positions, analyzer_for(language).tokens([chunks[i].text for i in positions]),
                             strict=True):
            out[i] = tokens
    return out


def _embed_into(
    index: faiss.Index, chunks: Sequence[Chunk], positions: np.ndarray, embedder: Embedder,
    progress: ProgressFn | None, select: UnitSelect | None = None,
) -> np.ndarray:
    """Embed the sentences of the chunks at ``positions`` (sorted) into ``index``, a slice at a
    time so that no second full-size copy of the vectors exists; returns each vector's chunk
    position. ``select`` sees the units with their chunks' positions in the document."""
    texts, owners = sentence_units([chunks[int(p)] for p in positions])
    owners = positions[owners]  # the chunk positions in the document, which ``select`` ranks by
    if select is not None:
        keep = select(texts, owners)
        texts, owners = [t for t, k in zip(texts, keep, strict=True) if k], owners[keep]
    done = 0  # texts sent to the model in earlier slices
    for start in range(0, len(texts), EMBED_SLICE):
        part = texts[start : start + EMBED_SLICE]
        later = len(texts) - start - len(part)  # not examined yet: the total shrinks as cache hits show
        sliced = [0]

        def report(n: int, total: int, message: str, before: int = done, later: int = later,
                   sliced: list[int] = sliced) -> None:
            sliced[0] = total
            if progress is not None:
                single = not before and not later
                progress(before + n, before + total + later,
                         message if single else f"embedded {before + n}/{before + total + later} sentences")

        index.add(embedder.embed(part, progress=report, unit="sentences"))
        done += sliced[0]
    return owners


def _span_location(anchor: ChunkLocation, parts: list[ChunkLocation]) -> ChunkLocation:
    pages = tuple(sorted({p for loc in parts for p in loc.pages}))
    return dataclasses.replace(
        anchor, start_char=min(p.start_char for p in parts), end_char=max(p.end_char for p in parts),
        pages=pages or anchor.pages,
    )


def merge_texts(chunks: Sequence[Chunk]) -> str:
    """Adjacent chunks joined once: the characters two chunks share are kept only once.

    Offsets decide when a chunk's text is exactly its span; otherwise the longest suffix of the
    text so far that is a prefix of the next chunk is dropped.
    """
    if not chunks:
        return ""
    text = chunks[0].text
    end = chunks[0].location.end_char
    exact = all(len(c.text) == c.location.end_char - c.location.start_char for c in chunks)
    for chunk in chunks[1:]:
        loc = chunk.location
        if exact:
            if loc.start_char >= end:
                text += ("\n" if loc.start_char > end else "") + chunk.text
            elif loc.end_char > end:
                text += chunk.text[end - loc.start_char :]
        else:
            shared = _suffix_prefix(text, chunk.text)
            sep = "" if shared else "\n"
            text += sep + chunk.text[shared:]
        end = max(end, loc.end_char)
    return text


def _suffix_prefix(a: str, b: str) -> int:
    """Length of the longest suffix of ``a`` that is a prefix of ``b`` (KMP failure function)."""
    limit = min(len(a), len(b))
    s = b[:limit] + "\0" + a[-limit:] if limit else ""
    fail = [0] * len(s)
    for i in range(1, len(s)):
        k = fail[i - 1]
        while k and s[i] != s[k]:
            k = fail[k - 1]
        if s[i] == s[k]:
            k += 1
        fail[i] = k
    return fail[-1] if s else 0
