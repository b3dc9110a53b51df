"""The embedders' vector caches, and models loaded on demand, as layers of the worker's memory
budget (``caches.budget``).

A cache of tens of thousands of small vectors is one layer: its place in the budget's order is
the embedder's last use, and an eviction drops its least recently used half. A model that loads
on demand (the multilingual one) counts its resident bytes while it is loaded; as the least
recently used entry it is dropped (never under a call that uses it) and its next call loads it.
"""

from __future__ import annotations

from typing import Any

from mcp_server.caches.budget import MemoryBudget
from mcp_server.encoders.embedders import Embedder

__all__ = ["EmbeddingCacheLayer", "OnDemandModelLayer", "register_embedders"]


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


class OnDemandModelLayer:
    name = "models"
    idle_trim = False  # an idle worker's model leaves after MCP_MODEL_IDLE_UNLOAD, not with the caches

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder  # has resident_bytes(), busy, used_at and unload_if_idle()

    def nbytes(self) -> int:
        return int(self.embedder.resident_bytes())

    def oldest(self, exclude: str | None = None) -> tuple[float, str] | None:
        if exclude == "model" or not self.embedder.resident_bytes() or self.embedder.busy:
            return None
        return float(self.embedder.used_at), "model"

    def evict(self, key: str) -> int:
        size = self.nbytes()
        return size if self.embedder.unload_if_idle(0) else 0


def register_embedders(budget: MemoryBudget, embedders: list[Embedder]) -> None:
    for embedder in embedders:
        budget.register(EmbeddingCacheLayer(embedder))
        if hasattr(embedder, "resident_bytes"):
            layer = OnDemandModelLayer(embedder)
            budget.register(layer)
            # a model that has just loaded makes room at once, not at the next cache store
            embedder.on_load = lambda layer=layer: budget.enforce(keep=(layer, "model"))  # type: ignore[attr-defined]
