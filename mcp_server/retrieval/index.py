"""One document's search index: FAISS over unit vectors (scores are cosines) plus BM25.

Dense scoring is sentence-MaxSim: FAISS holds one vector per *unit* of each chunk (a sentence,
or a few table rows under their table's title and header; see ``sentences.py``) with a unit ->
chunk map, and a chunk's dense score is the best cosine of its units (``vectors.py``). A
chunk-level vector averages a specific sentence away among its neighbours; the max keeps it
(measured by bench/squad.py). BM25 is ``bm25.py``'s.

Search pipeline (all synchronous; the manager runs it in a worker thread):

    dense top-N  ┐
                 ├─ reciprocal rank fusion ─ cross-encoder rerank (if any) ─ diversity ─ neighbours
    BM25 top-N   ┘

The fusion, the rerank, the diversity pass and their constants are ``ranking.py``'s (N = max(5 x
top_k, 50); dense weighs 1.5x); the neighbours are ``neighbours.py``'s. BM25 reads the text
through ``lexical.py`` (no page markers, numbers without thousands separators).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import faiss
import numpy as np

from mcp_server.citations.neighbours import expand_hits
from mcp_server.citations.passages import passage_id
from mcp_server.core.bounds import clamp
from mcp_server.core.concurrency import Once
from mcp_server.core.models import Chunk, SearchHit
from mcp_server.detectors.scores import ChunkScores, InstructionScores
from mcp_server.encoders.embedders import Embedder, ProgressFn
from mcp_server.rerankers.cross_encoders import Reranker
from mcp_server.retrieval.bm25 import ChunkBM25
from mcp_server.retrieval.focus import FOCUS_CANDIDATES, SENTENCES_PER_CANDIDATE, UnitTerms, keep_units
from mcp_server.retrieval.learned import CandidateSignals, ChunkFacts, LearnedRanker, held_numbers, idf
from mcp_server.retrieval.naming import Identity, file_name_words
from mcp_server.retrieval.ranking import (
    CANDIDATES_PER_RESULT,
    RRF_K,
    candidate_count,
    drop_duplicates,
    fuse_hybrid,
    lexical_weight,
    rerank_head,
)
from mcp_server.retrieval.vectors import SentenceVectors, UnitSelect, embed_into
from mcp_server.text.analysed import StoredAnalysis
from mcp_server.text.language import dominant_script
from mcp_server.text.templates import template_mask

__all__ = [
    "MAX_NEIGHBORS", "MAX_TOP_K", "RRF_K", "DocumentIndex", "SearchMode", "extended", "lexical_weight",
    "reads_foreign", "with_vectors",
]

# hybrid fuses both rankings; dense / bm25 use one (for benchmarks and ablations)
SearchMode = Literal["hybrid", "dense", "bm25"]

MAX_TOP_K = 20
SCRIPT_SAMPLE = 500  # characters of each chunk that name the scripts a document is written in
MAX_NEIGHBORS = 2


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

    def __init__(
        self, chunks: Sequence[Chunk], faiss_index: faiss.Index, *, model_id: str,
        owners: np.ndarray | None = None, stored: StoredAnalysis | None = None, key: str = "",
        templates_now: bool = False,
    ) -> None:
        self.chunks, self.model_id, self._key = list(chunks), model_id, key
        self._set_vectors(faiss_index, owners)
        # the partial indexes of a document, copies, share it; ``stored``: its tokens read with the index
        # ``templates_now``: the template passages found here, from the words BM25's analysis reads on the way
        runs: list[list[str] | None] | None = [] if templates_now else None
        self.lexical = ChunkBM25(self.chunks, stored.corpus if stored is not None else None, runs)
        self.languages, self.identity = self.lexical.languages, self.lexical.identity
        self._unit_terms = UnitTerms(self.chunks, self.languages)  # the focus of the dense side, shared too
        self._facts = ChunkFacts(self.chunks)  # what the learned ranker reads of a chunk's numbers, shared too
        # found at the first search (or warm()), or read with the index; shared by the copies as well
        self._templates = Once(_template_finder(self.chunks, stored, runs))
        if templates_now:
            self._templates.get()  # the runs go with the finder
        self.instructions: InstructionScores | None = None  # set by the complete build or a load (stored_scores)
        self._scripts = Once(lambda: {dominant_script(chunk.text, SCRIPT_SAMPLE) for chunk in self.chunks})

    @classmethod
    def build(cls, chunks: Sequence[Chunk], vectors: np.ndarray, *, model_id: str,
              owners: np.ndarray | None = None, key: str = "") -> DocumentIndex:
        """From precomputed unit vectors: one per chunk, or one per sentence with ``owners``."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        expected = len(chunks) if owners is None else len(owners)
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise ValueError(f"need {expected} vectors, got shape {vectors.shape} for {len(chunks)} chunks")
        index = faiss.IndexFlatIP(vectors.shape[1])
        if len(vectors):
            index.add(vectors)
        return cls(chunks, index, model_id=model_id, owners=owners, key=key)

    @classmethod
    def embed(
        cls, chunks: Sequence[Chunk], embedder: Embedder, *, progress: ProgressFn | None = None,
        only: Sequence[int] | None = None, key: str = "", templates_now: bool = False,
    ) -> DocumentIndex:
        """Split the chunks into sentences, embed those (and only those) and build the index;
        with ``only``, just the sentences of the chunks at those positions (a partial index)."""
        positions = np.arange(len(chunks), dtype=np.int64) if only is None else np.unique(np.asarray(only, np.int64))
        index = faiss.IndexFlatIP(embedder.dimension)
        owners = embed_into(index, chunks, positions, embedder, progress)
        return cls(chunks, index, model_id=embedder.model_id, owners=owners, key=key, templates_now=templates_now)

    def _set_vectors(self, faiss_index: faiss.Index, owners: np.ndarray | None) -> None:
        n = len(self.chunks)
        owners = np.arange(n, dtype=np.int64) if owners is None else np.asarray(owners, dtype=np.int64)
        self._vectors = SentenceVectors(faiss_index, owners, n)
        self.faiss, self.owners, self.dimension = faiss_index, owners, int(faiss_index.d)

    @property
    def key(self) -> str:
        """The cache key it is stored under, given where it is made (no one sets it later): passage ids name it."""
        return self._key

    @property
    def coverage(self) -> float:
        """Share of the chunks that have vectors (1.0 for a complete index, and for no chunks)."""
        return float(self._vectors.covered.mean()) if len(self.chunks) else 1.0

    @property
    def templates(self) -> np.ndarray:
        """Per chunk, whether it is a template passage (``text/templates.py``); found at the first search."""
        return self._templates.get()

    def named(self, location: str) -> DocumentIndex:
        """This index searched under ``location`` (a URL or path): a copy sharing all but its identity,
        which holds that file name's words (``naming.file_name_words``); itself when nothing changes."""
        identity = self.identity.named(file_name_words(location)) if self.identity is not None else None
        return self if identity is self.identity else _with_identity(self, identity)

    def asked(self, query: str) -> str:
        """``query`` without the clauses that only name this document: what every ranking reads."""
        return self.identity.asked(query) if self.identity is not None else query

    def dense_query(self, query: str) -> str:
        """``query`` without the words that name this document (``naming.py``)."""
        return self.identity.dense_query(self.asked(query)) if self.identity is not None else query

    def query_vector(self, query: str, embed_query: Callable[[str], np.ndarray]) -> np.ndarray:
        """The dense side's vector of ``query`` here (``naming.Identity.query_vector``)."""
        if self.identity is None:
            return np.asarray(embed_query(query), dtype=np.float32)
        return self.identity.query_vector(query, embed_query)

    def bm25_top(self, query: str, n: int) -> list[int]:
        """Positions of the ``n`` best BM25 chunks for ``query`` (those matching a query term)."""
        return self.lexical.top(self.asked(query), n, self.identity)

    def __len__(self) -> int:
        return len(self.chunks)

    # --- search -----------------------------------------------------------------------------
    def search(
        self, query_vec: np.ndarray, query: str, top_k: int = 5, *,
        reranker: Reranker | None = None, neighbors: int = 0, mode: SearchMode = "hybrid",
        ranker: LearnedRanker | None = None,
    ) -> list[SearchHit]:
        top_k, neighbors = clamp(top_k, 1, MAX_TOP_K), clamp(neighbors, 0, MAX_NEIGHBORS)
        if not self.chunks:
            return []
        query = self.asked(query)
        ranked = fused_head(self, query_vec, query, top_k, mode)
        ranked = learned_order(self, ranker, query, ranked) if mode == "hybrid" else ranked
        if reranker is not None and reranks(reranker, [self]):
            ranked = rerank_head(query, ranked, reranker, lambda c: self.chunks[c.pos].text, reranker.head,
                                 reranker.weight)
        chosen = drop_duplicates(ranked, lambda c: self.chunks[c.pos], identity=lambda c: c.pos, top_k=top_k)
        hits = [SearchHit(chunk=(chunk := self.chunks[c.pos]), score=c.rerank if c.rerank is not None else c.rrf,
                          dense=c.dense, bm25=c.bm25, rerank=c.rerank,
                          passage_id=passage_id(self.key, chunk.chunk_index, chunk.text) if self.key else "")
                for c in chosen]
        return expand_hits(self.chunks, hits, [c.pos for c in chosen], neighbors) if neighbors else hits

    def _fuse(
        self, query_vec: np.ndarray, query: str, n: int, mode: SearchMode, allowed: np.ndarray | None = None,
    ) -> dict[int, _Candidate]:
        """The candidates of both rankings with their fused scores for ``query`` as ``asked``;
        only among ``allowed`` positions when given."""
        candidates: dict[int, _Candidate] = {}
        vec = np.ascontiguousarray(np.asarray(query_vec, dtype=np.float32).reshape(1, -1))
        dense = self._vectors.ranking(vec, n, allowed)
        bm25, coverage = self.lexical.scores(query, self.identity)
        lexical = lexical_weight(coverage, query, self.languages)
        if mode == "hybrid" and lexical >= 1.0 and self._vectors.covered.all():
            dense = focused(self, vec[0], query, dense, n, allowed)
        for pos, sim in dense:
            candidates.setdefault(pos, _Candidate(pos)).dense = sim
        if bm25 is not None and allowed is not None:
            kept = np.zeros_like(bm25)
            kept[allowed] = bm25[allowed]
            bm25 = kept
        fused = fuse_hybrid([pos for pos, _ in dense] if mode != "bm25" else None,
                            bm25 if mode != "dense" else None, lexical, n=n, templates=self.templates)
        for pos, score in fused.items():
            candidates.setdefault(pos, _Candidate(pos)).rrf = score
        if bm25 is not None:
            for cand in candidates.values():
                cand.bm25 = float(bm25[cand.pos])
        missing = [c for c in candidates.values() if c.dense is None and self._vectors.covered[c.pos]]
        if missing:  # BM25-only candidates still report their best sentence cosine
            best = self._vectors.best(vec[0], [c.pos for c in missing])
            for cand in missing:
                cand.dense = float(best[cand.pos])
        return candidates

    def query_tokens(self, query: str) -> list[str]:
        """The query's BM25 tokens as this document's analyzers read them (known or not)."""
        return self.lexical.query_tokens(query)

    # --- cross-document search (retrieval/pool.py ranks the pooled candidates once more) ----
    def candidates(
        self, query_vec: np.ndarray, query: str, n: int, allowed: np.ndarray | None = None,
        ranker: LearnedRanker | None = None,
    ) -> list[tuple[int, float]]:
        """The union of the dense and the BM25 top ``n`` chunks as (position, best sentence cosine),
        in this document's own ranking order (``search``'s, ``ranker`` too), only among ``allowed``
        positions when given (exact cosines, no FAISS cut-off). Without vectors a chunk scores -inf."""
        asked = self.asked(query)
        fused = self._fuse(query_vec, asked, n, "hybrid", allowed)
        ranked = learned_order(self, ranker, asked, sorted(fused.values(), key=lambda c: (-c.rrf, c.pos)))
        return [(c.pos, float("-inf") if c.dense is None else c.dense) for c in ranked]

    def dense_scores(self, query_vec: np.ndarray, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        """Exact dense score (best sentence cosine) of each chunk in ``positions``, in that order."""
        return self._vectors.scores(query_vec, positions)


def stored_scores(index: DocumentIndex, chunk: Chunk) -> ChunkScores | None:
    """The instruction detector's scores of ``chunk``'s sentences (``detectors/scores.py``), when ``index``
    holds it and has them (set by the complete build or read with the index); None: the flagger scores it."""
    pos = chunk.chunk_index
    if index.instructions is None or not 0 <= pos < len(index.chunks) or index.chunks[pos] is not chunk:
        return None
    return index.instructions.chunk(pos)


def glance(index: DocumentIndex, query_vec: np.ndarray, query: str, n: int) -> list[tuple[int, float]]:
    """A first look at ``index`` for ``query`` (``pool.py`` routes a shelf by it): the union of its dense
    top ``n`` (FAISS alone, no focus) and its BM25 top ``n`` as (position, best sentence cosine), without
    the fusion, focus or learned order that ``candidates`` pays for."""
    vec = np.ascontiguousarray(np.asarray(query_vec, dtype=np.float32).reshape(1, -1))
    dense = dict(index._vectors.ranking(vec, n))
    lexical = [pos for pos in index.bm25_top(query, n) if pos not in dense and index._vectors.covered[pos]]
    if lexical:
        best = index._vectors.best(vec[0], lexical)
        dense.update((pos, float(best[pos])) for pos in lexical)
    return list(dense.items())


def _template_finder(chunks: Sequence[Chunk], stored: StoredAnalysis | None,
                     runs: list[list[str] | None] | None = None) -> Callable[[], np.ndarray]:
    if stored is not None and len(stored.templates) == len(chunks):
        return lambda: stored.templates
    texts = [c.text for c in chunks]
    read = runs if runs is not None and len(runs) == len(chunks) else None
    return lambda: template_mask(texts, read)


def reads_foreign(index: DocumentIndex, query: str) -> bool:
    """Whether ``query`` reads as another language than the document's: BM25 weighs less than in
    full for it (``ranking.lexical_weight``: few of its words are the document's, and no language
    of the document is plausible for it), so only the dense side can rank for it; unless it is
    written in a script other than Latin that the document's chunks are written in."""
    asked = index.asked(query)
    if lexical_weight(index.lexical.coverage(asked), asked, index.languages) >= 1.0:
        return False
    # a script few languages share, which the document is written in: the question is in its
    # language, whatever the detector made of a few words of it (a short Chinese question)
    script = dominant_script(asked)
    return script in ("", "Latin") or script not in index._scripts.get()


def extended(
    index: DocumentIndex, positions: Sequence[int], embedder: Embedder, *, progress: ProgressFn | None = None,
    select: UnitSelect | None = None,
) -> DocumentIndex:
    """A copy of ``index`` whose vectors also cover the chunks at ``positions`` (only the uncovered ones
    are embedded; ``select`` may keep only some of their units, see ``partial.py``); the
    BM25 index is shared, not rebuilt. ``index`` is left unchanged."""
    wanted = np.unique(np.asarray(positions, dtype=np.int64))
    wanted = wanted[(wanted >= 0) & (wanted < len(index.chunks))]
    new = wanted[~index._vectors.covered[wanted]]
    if not len(new):
        return index
    added = faiss.IndexFlatIP(index.dimension)
    owners = embed_into(added, index.chunks, new, embedder, progress, select)
    return with_vectors(index, added.reconstruct_n(0, added.ntotal), owners)


def with_vectors(index: DocumentIndex, vectors: np.ndarray, owners: np.ndarray) -> DocumentIndex:
    """A copy of ``index`` holding ``vectors`` (of the chunks ``owners``) besides its own."""
    owners = np.concatenate([index.owners, owners])
    vectors = np.concatenate([index.faiss.reconstruct_n(0, index.faiss.ntotal), vectors])
    order = np.argsort(owners, kind="stable")  # owners must stay in chunk order
    merged = faiss.IndexFlatIP(index.dimension)
    merged.add(np.ascontiguousarray(vectors[order], dtype=np.float32))
    clone = copy.copy(index)
    clone._set_vectors(merged, owners[order])
    return clone


def _with_identity(index: DocumentIndex, identity: Identity | None) -> DocumentIndex:
    clone = copy.copy(index)
    clone.identity = identity
    return clone


# --- the dense side of a complete index, with focus (retrieval/focus.py) ----------------------
def focused(
    index: DocumentIndex, vec: np.ndarray, query: str, dense: list[tuple[int, float]], n: int,
    allowed: np.ndarray | None,
) -> list[tuple[int, float]]:
    """The dense ranking of a complete ``index`` with focus (``focus.py``): its top chunks and the
    best BM25 chunks of what the question asks, each scored by its best sentence among those
    that share the query's weightiest terms, as a first answer scores them. Only where the
    query's words are the document's (BM25 at its full weight; a question in another language
    shares few: its cross-lingual ranking stays whole), where some sentence shares a query word
    (a question in other words than the text's is the dense side's alone), and where the vectors
    are the chunks' sentences."""
    lexical = set(index.lexical.top(index.dense_query(query), FOCUS_CANDIDATES, index.identity))
    if allowed is not None:
        lexical &= set(np.asarray(allowed).tolist())
    pool = np.array(sorted({pos for pos, _ in dense} | lexical), dtype=np.int64)
    shared, owners = index._unit_terms.shared(query, pool)
    ids = index._vectors.unit_ids(pool)
    if len(ids) != len(shared) or not shared.any():
        return dense  # the vectors are not these units (``build`` without owners); no unit shares a word
    best = index._vectors.best_of(vec, ids[keep_units(shared, owners, SENTENCES_PER_CANDIDATE)])
    ranked = sorted(((int(pos), float(best[pos])) for pos in pool), key=lambda item: (-item[1], item[0]))
    return ranked[:n]


# --- the learned ranker's view of the head (retrieval/learned.py) ------------------------------
def fused_head(
    index: DocumentIndex, query_vec: np.ndarray, query: str, top_k: int, mode: SearchMode = "hybrid",
) -> list[_Candidate]:
    """The fusion's candidates for ``query`` as ``asked``, best first, as many as ``top_k`` results take."""
    n = min(len(index.chunks), candidate_count(top_k, CANDIDATES_PER_RESULT))
    return sorted(index._fuse(query_vec, query, n, mode).values(), key=lambda c: (-c.rrf, c.pos))[:n]


def learnable(index: DocumentIndex) -> bool:
    """Whether the learned ranker orders the index's head: a complete index of an English document
    (the language it was trained on; another keeps the fusion's order)."""
    return index.languages == ["en"] and bool(index._vectors.covered.all())


def reranks(reranker: Reranker, indexes: Sequence[DocumentIndex]) -> bool:
    """Whether ``reranker`` orders these indexes' results: any, unless it names the languages it was
    trained for; then only complete indexes of documents in those (others keep today's order)."""
    if reranker.languages is None:
        return True
    return all(set(i.languages) <= set(reranker.languages) and bool(i._vectors.covered.all()) for i in indexes)


def learned_order(
    index: DocumentIndex, ranker: LearnedRanker | None, query: str, ranked: list[_Candidate],
) -> list[_Candidate]:
    """``ranked`` with its head in the learned ranker's order, when there is one and it applies."""
    if ranker is None or not learnable(index):
        return ranked
    head = ranked[: ranker.head]
    return [head[i] for i in ranker.order(signals(index, query, head))] + ranked[len(head):]


def signals(index: DocumentIndex, query: str, head: Sequence[_Candidate]) -> CandidateSignals:
    """What the learned ranker reads of the ``head`` candidates for ``query`` as ``asked``."""
    pos = np.array([c.pos for c in head], dtype=np.int64)
    presence, df = index.lexical.presence(query, pos.tolist(), index.identity)
    chunks = index.chunks
    held, digits = index._facts.of(pos.tolist())
    numbers, query_numbers = held_numbers(query, held)
    return CandidateSignals(
        fused=np.array([c.rrf * RRF_K for c in head]), bm25=np.array([c.bm25 or 0.0 for c in head]),
        dense=np.array([-1.0 if c.dense is None else c.dense for c in head]),
        presence=presence.astype(np.float64), idf=idf(df, len(chunks)), template=index.templates[pos],
        table=np.array([chunks[p].content_type == "table" for p in pos], dtype=np.bool_),
        chars=np.array([len(chunks[p].text) for p in pos], dtype=np.float64),
        digits=digits, position=pos / max(len(chunks), 1),
        numeric_query=any(ch.isdigit() for ch in query), numbers=numbers, query_numbers=query_numbers,
    )
