"""Finding a complete index without building it: the memory layer, then the folder, then the shared
store (``IndexTiers``), each hit and miss counted for the stats tool. The manager opens and builds
(``manager.py``); this is what it, a passage id (``IndexManager.find``) and a known URL read first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from mcp_server import metrics
from mcp_server.caches.layers import MemoryLayer, cache_put
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.indexes.builds import PendingBuild
from mcp_server.indexes.store import IndexStore, Manifest
from mcp_server.indexes.tiers import IndexTiers
from mcp_server.retrieval.index import DocumentIndex

__all__ = ["IndexLookup"]


class IndexLookup:
    def __init__(self, models: ModelRegistry, memory: MemoryLayer[DocumentIndex], store: IndexStore,
                 tiers: IndexTiers, counters: dict[str, int]) -> None:
        self.models, self.memory, self.store, self.tiers, self.counters = models, memory, store, tiers, counters

    def in_memory(self, key: str, *, coalesced: bool = False) -> DocumentIndex | None:
        """``coalesced``: found after waiting for the key's lock (built by the request we waited for)."""
        index = self.memory.get(key)
        if index is None:
            return None
        self.counters["memory_hits"] += 1
        if coalesced:
            metrics.index_build("coalesced")
        metrics.index_lookup("memory")
        return index

    async def on_disk(self, key: str, check: Callable[[Manifest], str | None], *,
                      miss: bool = False) -> DocumentIndex | None:
        """From the folder or the shared store (not yet in memory: the caller keeps it); ``miss``:
        counted as one when absent."""
        index, found = await self.tiers.find(key, check)
        if index is None:
            if miss:
                self.counters["misses"] += 1
                metrics.index_lookup("miss")
            return None
        self.counters["disk_hits"] += 1  # the shared store's too: they land in the folder
        metrics.index_lookup(found)
        return index

    async def keep(self, key: str, index: DocumentIndex) -> None:
        """Into the memory layer; measuring and any evictions it causes run off the loop. An index is
        kept under its own key only: the key passage ids name is the one it is found by."""
        if index.key != key:
            raise ValueError(f"an index made under {index.key!r} cannot be kept under {key!r}")
        with anyio.CancelScope(shield=True):
            await cache_put(self.memory, key, index)

    def stats(self, pending: dict[str, PendingBuild]) -> dict[str, Any]:
        memory_hits, disk_hits, misses = (self.counters[k] for k in ("memory_hits", "disk_hits", "misses"))
        lookups = memory_hits + disk_hits + misses
        memory = self.memory.stats()
        return {
            **self.counters,
            "hit_rate": round((memory_hits + disk_hits) / lookups, 4) if lookups else 0.0,
            **{name: value for name, value in memory.items()
               if name in ("entries", "max_entries", "bytes", "evictions")},
            "ttl": memory["ttl_s"],
            "building": [
                {"key": key, "chunks": len(state.base), "embedded": state.embedded[0], "to_embed": state.embedded[1]}
                for key, state in list(pending.items())
            ],
            "disk": self.store.stats(),
            "shared": self.tiers.stats(),
            "embedding_cache_entries": sum(e.cache_entries for e in self.models.embedders),
        }

    async def clear(self) -> dict[str, int]:
        """Forget every index in memory and on disk, and the embedders' vector caches."""
        entries = self.memory.clear()
        for embedder in self.models.embedders:
            embedder.clear_cache()
        return {"memory": entries, **await self.tiers.clear()}
