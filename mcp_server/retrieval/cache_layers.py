"""The embedders' vector caches as layers of the worker's memory budget (``core.budget``).

A cache of tens of thousands of small vectors is one layer: its place in the budget's order is
the embedder's last use, and an eviction drops its least recently used half.
"""

from __future__ import annotations

from mcp_server.core.budget import MemoryBudget
from mcp_server.retrieval.embedders import Embedder

__all__ = ["EmbeddingCacheLayer", "register_embedders"]


class EmbeddingCacheLayer:
    name = "embedding"

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def nbytes(self) -> int:
        return self.embedder.cache_bytes()

    def oldest(self, exclude: str | None = None) -> tuple[float, str] | None:
        if exclude == "vectors" or not self.embedder.cache_entries:
            return None
        return self.embedder.cache_used_at, "vectors"

    def evict(self, key: str) -> int:
        return self.embedder.trim_cache(0.5)


def register_embedders(budget: MemoryBudget, embedders: list[Embedder]) -> None:
    for embedder in embedders:
        budget.register(EmbeddingCacheLayer(embedder))
