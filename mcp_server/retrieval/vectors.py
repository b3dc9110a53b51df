"""The dense side of one document's index: FAISS over unit vectors (a sentence, or a few table
rows under their title and header; ``text/sentences.py``) with the chunk each one belongs to.

A chunk's dense score is the best cosine of its units (sentence-MaxSim). The vectors may cover
only some chunks (a partial index): a chunk without vectors has an empty range and no score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import faiss
import numpy as np

from mcp_server.core.models import Chunk
from mcp_server.encoders.embedders import Embedder, ProgressFn
from mcp_server.text.sentences import sentence_units

__all__ = ["EMBED_SLICE", "SENTENCE_FANOUT", "SentenceVectors", "UnitSelect", "embed_into"]

SENTENCE_FANOUT = 4  # sentences fetched per dense chunk candidate; several may share a chunk
EMBED_SLICE = 4096  # sentences embedded and added to FAISS at a time (bounds the vectors held twice)

# (unit texts, the document position of each one's chunk) -> mask of the units to embed (``index.extended``)
UnitSelect = Callable[[list[str], np.ndarray], np.ndarray]


class SentenceVectors:
    """A FAISS index of unit vectors and ``owners``, the chunk position of each vector
    (non-decreasing), for a document of ``size`` chunks."""

    def __init__(self, faiss_index: faiss.Index, owners: np.ndarray, size: int) -> None:
        if owners.ndim != 1 or len(owners) != faiss_index.ntotal:
            raise ValueError(f"index holds {faiss_index.ntotal} vectors for {len(owners)} owner entries")
        if len(owners) and (owners[0] < 0 or owners[-1] >= size or np.any(np.diff(owners) < 0)):
            raise ValueError("owners must map vectors to chunks, in chunk order")
        self.faiss = faiss_index
        self.owners = owners
        self.size = size
        # vectors of chunk p are starts[p]:starts[p + 1]; a chunk without vectors has an empty range
        self.starts = np.searchsorted(owners, np.arange(size + 1), side="left")
        self.covered = np.diff(self.starts) > 0

    def ranking(self, vec: np.ndarray, n: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Up to ``n`` (chunk position, best sentence cosine), best first; among ``allowed``
        positions when given (exact cosines of their sentences, no FAISS cut-off)."""
        if allowed is not None:
            allowed = np.asarray(allowed, dtype=np.int64)
            allowed = allowed[self.covered[allowed]]
            if not len(allowed):
                return []
            best = self.scores(vec[0], allowed)
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

    def scores(self, query_vec: np.ndarray, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        """Exact dense score (best sentence cosine) of each chunk in ``positions``, in that order;
        every one of them must have vectors."""
        positions = np.asarray(positions, dtype=np.int64)
        if not len(positions):
            return np.zeros(0, dtype=np.float32)
        counts = self.starts[positions + 1] - self.starts[positions]
        ids = np.concatenate([np.arange(self.starts[p], self.starts[p + 1]) for p in positions])
        sims = self.faiss.reconstruct_batch(ids.astype(np.int64)) @ np.asarray(query_vec, dtype=np.float32).ravel()
        return np.maximum.reduceat(sims, np.concatenate(([0], np.cumsum(counts)[:-1])))

    def unit_ids(self, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        """The ids of the vectors of the chunks at ``positions``, in that order."""
        parts = [np.arange(self.starts[p], self.starts[p + 1]) for p in positions]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)

    def best_of(self, vec: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Per chunk of the document, its best cosine among the vectors ``ids`` (-inf for the rest)."""
        best = np.full(self.size, -np.inf, dtype=np.float32)
        if len(ids):
            np.maximum.at(best, self.owners[ids], self.faiss.reconstruct_batch(ids) @ vec)
        return best

    def best(self, vec: np.ndarray, positions: Sequence[int]) -> np.ndarray:
        """Per chunk of the document, its best sentence cosine among the covered ``positions``
        (-inf for every other chunk)."""
        return self.best_of(vec, self.unit_ids(positions))


def embed_into(
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
