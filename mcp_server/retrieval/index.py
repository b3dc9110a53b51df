"""One document's search index: FAISS over unit vectors (scores are cosines) plus BM25.

Search pipeline (all synchronous; the manager runs it in a worker thread):

    dense top-N  ┐
                 ├─ reciprocal rank fusion ─ cross-encoder rerank (if any) ─ diversity ─ neighbours
    BM25 top-N   ┘

N = max(3 x top_k, 20). The diversity pass only *drops* chunks that repeat text already chosen
(overlapping spans, identical text); it never re-sorts, because the seed's importance re-sort
halved its MRR.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import bm25s
import faiss
import numpy as np

from mcp_server.core.models import Chunk, ChunkLocation, SearchHit
from mcp_server.retrieval.rerankers import Reranker

__all__ = ["MAX_NEIGHBORS", "MAX_TOP_K", "RRF_K", "DocumentIndex", "SearchMode", "clamp_top_k", "merge_texts"]

# hybrid fuses both rankings; dense / bm25 use one (for benchmarks and ablations)
SearchMode = Literal["hybrid", "dense", "bm25"]

MAX_TOP_K = 20
MAX_NEIGHBORS = 2
RRF_K = 60  # the constant of Cormack et al.; flat enough that both rankings count
DENSE_WEIGHT = 1.0  # weights of the two rankings in the fusion (see bench/README.md)
BM25_WEIGHT = 1.0
MIN_CANDIDATES = 20
DUPLICATE_OVERLAP = 0.5  # a chunk sharing more than this share of its span with a chosen one is dropped

try:  # stemming lifts BM25 recall (e.g. "located" ~ "location"); optional so bm25s works without it
    import Stemmer

    _STEMMER = Stemmer.Stemmer("english").stemWords
except ImportError:  # pragma: no cover - PyStemmer is a declared dependency
    _STEMMER = None


def clamp_top_k(top_k: int) -> int:
    return max(1, min(int(top_k), MAX_TOP_K))


def _tokenize(texts: Sequence[str]) -> list[list[str]]:
    tokens = bm25s.tokenize(
        list(texts), stopwords="en", stemmer=_STEMMER, return_ids=False, show_progress=False
    )
    return [list(t) for t in tokens]


@dataclass(slots=True)
class _Candidate:
    pos: int
    dense: float | None = None
    bm25: float | None = None
    rrf: float = 0.0
    rerank: float | None = None


class DocumentIndex:
    """Chunks of one document, their FAISS index and a BM25 index (rebuilt from the texts)."""

    def __init__(self, chunks: Sequence[Chunk], faiss_index: faiss.Index, *, model_id: str) -> None:
        if faiss_index.ntotal != len(chunks):
            raise ValueError(f"index holds {faiss_index.ntotal} vectors for {len(chunks)} chunks")
        self.chunks = list(chunks)
        self.faiss = faiss_index
        self.model_id = model_id
        self.dimension = int(faiss_index.d)
        self._bm25: bm25s.BM25 | None = None
        corpus = _tokenize([c.text for c in self.chunks]) if self.chunks else []
        if any(corpus):  # bm25s cannot index a corpus without a single token
            self._bm25 = bm25s.BM25()
            self._bm25.index(corpus, show_progress=False)

    @classmethod
    def build(cls, chunks: Sequence[Chunk], vectors: np.ndarray, *, model_id: str) -> DocumentIndex:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
            raise ValueError(f"need one vector per chunk, got shape {vectors.shape} for {len(chunks)}")
        index = faiss.IndexFlatIP(vectors.shape[1])
        if len(chunks):
            index.add(vectors)
        return cls(chunks, index, model_id=model_id)

    def __len__(self) -> int:
        return len(self.chunks)

    def memory_bytes(self) -> int:
        return self.faiss.ntotal * self.dimension * 4 + sum(len(c.text) for c in self.chunks)

    # --- search -----------------------------------------------------------------------------
    def search(
        self, query_vec: np.ndarray, query: str, top_k: int = 5, *,
        reranker: Reranker | None = None, neighbors: int = 0, mode: SearchMode = "hybrid",
    ) -> list[SearchHit]:
        top_k = clamp_top_k(top_k)
        neighbors = max(0, min(int(neighbors), MAX_NEIGHBORS))
        if not self.chunks:
            return []
        n = min(len(self.chunks), max(3 * top_k, MIN_CANDIDATES))
        candidates = self._fuse(query_vec, query, n, mode)
        ranked = sorted(candidates.values(), key=lambda c: (-c.rrf, c.pos))[:n]
        if reranker is not None and ranked:
            scores = reranker.score(query, [self.chunks[c.pos].text for c in ranked])
            for cand, score in zip(ranked, scores, strict=True):
                cand.rerank = float(score)
            # stable sort: equal rerank scores keep the fused order
            ranked.sort(key=lambda c: -(c.rerank if c.rerank is not None else float("-inf")))
        chosen = self._diverse(ranked, top_k)
        hits = [
            SearchHit(
                chunk=self.chunks[c.pos],
                score=c.rerank if c.rerank is not None else c.rrf,
                dense=c.dense, bm25=c.bm25, rerank=c.rerank,
            )
            for c in chosen
        ]
        return self._expand(hits, chosen, neighbors) if neighbors else hits

    def _fuse(self, query_vec: np.ndarray, query: str, n: int, mode: SearchMode) -> dict[int, _Candidate]:
        candidates: dict[int, _Candidate] = {}
        vec = np.ascontiguousarray(np.asarray(query_vec, dtype=np.float32).reshape(1, -1))
        sims, ids = self.faiss.search(vec, n)
        for rank, (pos, sim) in enumerate(zip(ids[0], sims[0], strict=True)):
            if pos < 0:
                continue
            cand = candidates.setdefault(int(pos), _Candidate(int(pos)))
            cand.dense = float(sim)
            if mode != "bm25":
                cand.rrf += DENSE_WEIGHT / (RRF_K + rank + 1)
        bm25 = self._bm25_scores(query)
        if bm25 is not None and mode != "dense":
            order = np.argsort(-bm25, kind="stable")[:n]
            for rank, pos in enumerate(order):
                if bm25[pos] <= 0:  # no query term at all: not a BM25 candidate
                    break
                cand = candidates.setdefault(int(pos), _Candidate(int(pos)))
                cand.rrf += BM25_WEIGHT / (RRF_K + rank + 1)
        if bm25 is not None:
            for cand in candidates.values():
                cand.bm25 = float(bm25[cand.pos])
        missing = [c for c in candidates.values() if c.dense is None]
        if missing:  # BM25-only candidates still report their cosine
            vectors = self.faiss.reconstruct_batch(np.array([c.pos for c in missing], dtype=np.int64))
            for cand, sim in zip(missing, vectors @ vec[0], strict=True):
                cand.dense = float(sim)
        return candidates

    def _bm25_scores(self, query: str) -> np.ndarray | None:
        if self._bm25 is None:
            return None
        tokens = [t for t in _tokenize([query])[0] if t in self._bm25.vocab_dict]
        if not tokens:
            return None
        return np.asarray(self._bm25.get_scores(tokens), dtype=np.float32)

    def _diverse(self, ranked: list[_Candidate], top_k: int) -> list[_Candidate]:
        """Walk in relevance order; skip chunks that repeat what is already chosen."""
        chosen: list[_Candidate] = []
        seen_text: set[str] = set()
        for cand in ranked:
            chunk = self.chunks[cand.pos]
            norm = re.sub(r"\s+", " ", chunk.text).strip().lower()
            if norm in seen_text:
                continue
            if any(_overlap_share(chunk.location, self.chunks[c.pos].location) > DUPLICATE_OVERLAP
                   for c in chosen):
                continue
            chosen.append(cand)
            seen_text.add(norm)
            if len(chosen) == top_k:
                break
        if len(chosen) < top_k:  # rather near-duplicates than fewer results than asked for
            ids = {c.pos for c in chosen}
            chosen += [c for c in ranked if c.pos not in ids][: top_k - len(chosen)]
        return chosen

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


def _overlap_share(a: ChunkLocation, b: ChunkLocation) -> float:
    inter = min(a.end_char, b.end_char) - max(a.start_char, b.start_char)
    if inter <= 0:
        return 0.0
    shorter = min(a.end_char - a.start_char, b.end_char - b.start_char)
    return inter / shorter if shorter > 0 else 0.0


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
