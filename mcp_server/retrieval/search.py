"""One document's index searched for a query, as a tool asks it: the query embedded by the model
that embedded the index (the words naming the document counting half, ``naming.py``), ranked by
``DocumentIndex.search`` (the fusion, the learned ranker's head, the cross-encoder), and timed.

``Searcher.search`` runs that in a model slot of the ``ModelRunner`` (``embedding/runner.py``), off
the event loop. Building an index is ``indexes/``'s job; this one only reads what it is given.
"""

from __future__ import annotations

import time

from mcp_server import metrics
from mcp_server.core.models import SearchHit
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.embedding.runner import ModelRunner
from mcp_server.retrieval.index import DocumentIndex
from mcp_server.retrieval.learned import LearnedRanker

__all__ = ["Searcher", "search_now"]


class Searcher:
    """Searches an index with the application's models, model slots and learned ranker (None: the
    fusion's order, ``MCP_LEARNED_RANKING=false``)."""

    def __init__(self, models: ModelRegistry, runner: ModelRunner, ranker: LearnedRanker | None) -> None:
        self.models, self.runner, self.ranker = models, runner, ranker

    async def search(
        self, index: DocumentIndex, query: str, top_k: int = 5, *, neighbors: int = 0, rerank: bool = True,
    ) -> tuple[list[SearchHit], dict[str, float]]:
        """Hits in relevance order and their stages' milliseconds (``embed``, ``search``), named as the
        tool result's ``timings_ms`` names them."""
        return await self.runner.run(search_now, self.models, index, query, top_k, neighbors, rerank, self.ranker)


def search_now(
    models: ModelRegistry, index: DocumentIndex, query: str, top_k: int, neighbors: int, rerank: bool,
    ranker: LearnedRanker | None = None,
) -> tuple[list[SearchHit], dict[str, float]]:
    """``Searcher.search`` in the calling thread (it blocks: a model call)."""
    t0 = time.perf_counter()
    query_vec = index.query_vector(query, models.embedder_by_id(index.model_id).embed_query)
    t1 = time.perf_counter()
    reranker = models.reranker if rerank else None
    hits = index.search(query_vec, query, top_k, reranker=reranker, neighbors=neighbors, ranker=ranker)
    t2 = time.perf_counter()
    metrics.search_timed(t1 - t0, t2 - t1)
    return hits, {"embed": round((t1 - t0) * 1000, 2), "search": round((t2 - t1) * 1000, 2)}
