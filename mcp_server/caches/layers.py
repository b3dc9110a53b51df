"""TTL cache layers with hit/miss counts (cachetools underneath).

Every layer of a worker is made once by the registry (``registry.py``) from its bounds; the
index layer's owner (``indexes.IndexManager``) adds the disk and the shared store behind it. Each
layer sits behind the small ``CacheLayer`` interface so a shared store (Redis) can replace the
in-memory one. Code on the
event loop calls a layer through ``cache_get`` / ``cache_put`` / ``cache_delete`` / ``cache_clear``:
they decide what runs on the loop and what in a worker thread.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from cachetools import TTLCache

from mcp_server import metrics
from mcp_server.caches.budget import MemoryBudget, measure
from mcp_server.core.concurrency import off_loop

__all__ = ["CacheLayer", "MemoryLayer", "cache_clear", "cache_delete", "cache_get", "cache_put"]

V = TypeVar("V")
T = TypeVar("T")


class CacheLayer(Protocol[V]):
    name: str

    def get(self, key: str) -> V | None: ...

    def put(self, key: str, value: V) -> None: ...

    def delete(self, key: str) -> bool: ...

    def clear(self) -> int: ...

    def stats(self) -> dict[str, object]: ...


class _Counted(TTLCache[str, V]):
    """Counts what cachetools evicts to make room (it does so silently)."""

    def __init__(self, *args: Any, on_evict: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on_evict = on_evict

    def popitem(self) -> tuple[str, V]:
        item = super().popitem()
        self._on_evict()
        return item


class MemoryLayer(Generic[V]):
    """Bounded by entries and, when ``size_of`` is given, by total size (least recently used
    evicted first); with a ``budget``, also by the worker's ``MemoryBudget`` together with the
    other layers (sizes then measured by ``size_of``, else by ``measure``)."""

    def __init__(
        self,
        name: str,
        *,
        max_entries: int,
        ttl: float,
        max_bytes: int | None = None,
        size_of: Callable[[V], int] | None = None,
        budget: MemoryBudget | None = None,
        timer: Callable[[], float] = time.monotonic,
        count_lookups: bool = True,
    ) -> None:
        self.name = name
        self._count_lookups = count_lookups  # False: the owner counts lookups itself (the index layer)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._budget = budget
        if size_of is None and budget is not None:
            size_of = measure
        self._size_of = size_of
        self._next_size = 0  # measured once per put, read back by the cache's getsizeof
        if size_of is not None:
            self._cache: TTLCache[str, V] = _Counted(
                maxsize=max_bytes or sys.maxsize, ttl=ttl, timer=timer, getsizeof=lambda _: self._next_size,
                on_evict=self._evicted)
        else:
            self._cache = _Counted(maxsize=max_entries, ttl=ttl, timer=timer, on_evict=self._evicted)
        self._used: dict[str, float] = {}  # key -> last use (time.monotonic), least recent first
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        if budget is not None:
            budget.register(self)

    def _evicted(self) -> None:
        self.evictions += 1
        metrics.cache_evicted(self.name, "memory")

    def _touch(self, key: str) -> None:
        self._used.pop(key, None)
        self._used[key] = time.monotonic()

    def get(self, key: str) -> V | None:
        with self._lock:
            value = self._cache.get(key)
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
                self._touch(key)
            if self._count_lookups:
                metrics.cache_lookup(self.name, "memory", value is not None)
            return value

    def put(self, key: str, value: V) -> None:
        size = self._size_of(value) if self._size_of is not None else 1
        with self._lock:
            if self._size_of is not None and self.max_bytes is not None and size > self.max_bytes:
                return  # larger than the whole layer: not cached
            self._cache.pop(key, None)
            while len(self._cache) >= self.max_entries:
                self._cache.popitem()
            self._next_size = size
            self._cache[key] = value
            self._touch(key)
        if self._budget is not None:  # outside the lock: the budget takes other layers' locks
            self._budget.enforce(keep=(self, key))

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._cache.pop(key, None) is not None

    def clear(self) -> int:
        with self._lock:
            count = len(self._cache)
            self._cache.clear()
            self._used.clear()
            return count

    # --- BudgetedLayer ------------------------------------------------------------------------
    def nbytes(self) -> int:
        if self._size_of is None:
            return 0
        with self._lock:
            self._cache.expire()
            return int(self._cache.currsize)

    def oldest(self, exclude: str | None = None) -> tuple[float, str] | None:
        with self._lock:
            for key in list(self._used):
                if key not in self._cache:  # expired or evicted by the cache itself
                    del self._used[key]
                elif key != exclude:
                    return self._used[key], key
            return None

    def evict(self, key: str) -> int:
        with self._lock:
            self._used.pop(key, None)
            if key not in self._cache:
                return 0
            before = int(self._cache.currsize)
            del self._cache[key]
            self.evictions += 1
            return before - int(self._cache.currsize)

    def stats(self) -> dict[str, object]:
        with self._lock:
            self._cache.expire()
            total = self.hits + self.misses
            out: dict[str, object] = {
                "backend": "memory",
                "entries": len(self._cache),
                "max_entries": self.max_entries,
                "hits": self.hits,
                "misses": self.misses,
                "hit_rate": round(self.hits / total, 3) if total else 0.0,
                "evictions": self.evictions,
                "ttl_s": self._cache.ttl,
            }
            if self._size_of is not None:
                out["bytes"] = int(self._cache.currsize)
            if self.max_bytes is not None:
                out["max_bytes"] = self.max_bytes
            return out


async def cache_get(layer: CacheLayer[V], key: str) -> V | None:
    """A lookup in this process's memory takes microseconds: it runs on the loop, without the
    thread hop (~0.1 ms idle, several ms on busy cores) that a remote layer (Redis) needs."""
    if isinstance(layer, MemoryLayer):
        return layer.get(key)
    return await _off_loop(layer.get, key)


async def cache_put(layer: CacheLayer[V], key: str, value: V) -> None:
    """Off the loop: a remote layer's call, or measuring a big value and the evictions it causes."""
    await _off_loop(layer.put, key, value)


async def cache_delete(layer: CacheLayer[V], key: str) -> bool:
    return await _off_loop(layer.delete, key)


async def cache_clear(layer: CacheLayer[V]) -> int:
    return await _off_loop(layer.clear)


async def _off_loop(operation: Callable[..., T], *args: Any) -> T:
    """The layers' one thread hop: one operation of one layer per hop."""
    return await off_loop(operation, *args)
