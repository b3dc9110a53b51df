"""Every cache layer of a worker, made once from one table of bounds and owned by the lifespan.

``layer_bounds`` is the one place a layer's size is written (the Redis variant of a layer reads
the same bounds); ``CacheRegistry`` makes every in-memory layer under the worker's memory budget,
takes a shared variant in its place (``swap``), and reports and clears them all in one loop. A
layer whose owner keeps more than the layer (the index manager: memory, disk and the shared
store; the downloads: what each URL answered) reports and clears through its owner (``own``).

Adding a layer: one line in ``layer_bounds`` (plus its setting when users should size it); the
code that uses it asks ``caches.memory(name)``, and stats and clear include it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_server.caches.budget import MemoryBudget, measure
from mcp_server.caches.layers import CacheLayer, MemoryLayer, cache_clear
from mcp_server.core.settings import Settings

__all__ = ["FAILURE_ENTRIES", "Bounds", "CacheRegistry", "Owner", "layer_bounds", "memory_layer"]

FAILURE_ENTRIES = 1000  # failed parses remembered (small values; the TTL is what bounds them)
QUOTE_INDEXES = 16  # documents whose quote index is kept in memory ...
QUOTE_INDEX_BYTES = 128 * 1024 * 1024  # ... within this many bytes (a 250-page 10-K's takes ~13 MB)
PAGE_IMAGES, PAGE_IMAGE_BYTES = 256, 64 * 1024 * 1024
PAGE_PDFS, PAGE_PDF_BYTES = 32, 128 * 1024 * 1024  # office documents' PDF exports (one LibreOffice run: every page)


@dataclass(frozen=True, kw_only=True, slots=True)
class Bounds:
    max_entries: int
    ttl: float
    max_bytes: int | None = None
    size_of: Callable[[Any], int] | None = None
    budgeted: bool = True  # under the worker's memory budget (a failed parse's record is too small to matter)
    count_lookups: bool = True  # False: the owner counts lookups itself (the index tiers: memory, disk, shared)


def layer_bounds(settings: Settings) -> dict[str, Bounds]:
    """Every layer's bounds, by name, in the order stats report them."""
    ttl = settings.cache_ttl
    return {
        "download": Bounds(max_entries=settings.cache_max_downloads, ttl=ttl,
                           max_bytes=settings.cache_max_download_bytes, size_of=lambda fetched: len(fetched.data)),
        "document": Bounds(max_entries=settings.cache_max_documents, ttl=ttl),
        # measured off the loop (cache_put): a big index is a walk over thousands of objects
        "index": Bounds(max_entries=settings.cache_max_indexes, ttl=ttl, size_of=measure, count_lookups=False),
        "failure": Bounds(max_entries=FAILURE_ENTRIES, ttl=max(settings.failure_ttl, 1e-3), budgeted=False),
        "quote_index": Bounds(max_entries=QUOTE_INDEXES, ttl=ttl, max_bytes=QUOTE_INDEX_BYTES,
                              size_of=lambda index: index.size),
        "page_image": Bounds(max_entries=PAGE_IMAGES, ttl=ttl, max_bytes=PAGE_IMAGE_BYTES,
                             size_of=lambda page: len(page.png) + 200),
        "page_pdf": Bounds(max_entries=PAGE_PDFS, ttl=ttl, max_bytes=PAGE_PDF_BYTES,
                           size_of=lambda pdf: len(pdf) + 200),
    }


def memory_layer(name: str, settings: Settings, *, budget: MemoryBudget | None = None,
                 timer: Callable[[], float] = time.monotonic) -> MemoryLayer[Any]:
    """The in-memory layer ``name`` with its bounds; under ``budget`` when the layer is budgeted
    (without one: a Redis layer's fallback, or a test's own manager)."""
    bounds = layer_bounds(settings)[name]
    return MemoryLayer(name, max_entries=bounds.max_entries, ttl=bounds.ttl, max_bytes=bounds.max_bytes,
                       size_of=bounds.size_of, budget=budget if bounds.budgeted else None, timer=timer,
                       count_lookups=bounds.count_lookups)


class Owner(Protocol):
    """What keeps a layer and more: it reports and clears the whole."""

    def stats(self) -> dict[str, Any]: ...

    async def clear(self) -> Any: ...


class CacheRegistry:
    def __init__(self, settings: Settings, budget: MemoryBudget | None = None) -> None:
        self.budget = budget
        self._layers: dict[str, CacheLayer[Any]] = {
            name: memory_layer(name, settings, budget=budget) for name in layer_bounds(settings)}
        self._owners: dict[str, Owner] = {}

    def __getitem__(self, name: str) -> CacheLayer[Any]:
        return self._layers[name]

    def memory(self, name: str) -> MemoryLayer[Any]:
        """The in-memory layer ``name`` (its users need its budget hooks or run it on the loop)."""
        layer = self._layers[name]
        if not isinstance(layer, MemoryLayer):
            raise TypeError(f"the {name} layer is {type(layer).__name__}, not in memory")
        return layer

    def swap(self, layer: CacheLayer[Any]) -> None:
        """A shared variant (Redis) takes the place of the in-memory layer of its name, before any use."""
        old = self._layers[layer.name]
        if self.budget is not None and isinstance(old, MemoryLayer):
            self.budget.unregister(old)
        self._layers[layer.name] = layer

    def own(self, name: str, owner: Owner) -> None:
        """``owner`` reports and clears layer ``name`` with what else it keeps."""
        if name not in self._layers:
            raise KeyError(name)
        self._owners[name] = owner

    def stats(self) -> dict[str, Any]:
        return {name: self._owners.get(name, layer).stats() for name, layer in self._layers.items()}

    async def clear(self) -> dict[str, Any]:
        return {name: await (self._owners[name].clear() if name in self._owners else cache_clear(layer))
                for name, layer in self._layers.items()}
