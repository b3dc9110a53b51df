"""TTL cache layers with hit/miss counts (cachetools underneath).

Two of the three layers live here (downloads by URL, processed documents by content key); the
retriever layer (memory then disk) belongs to ``retrieval/``. Each layer sits behind the small
``CacheLayer`` interface so a shared store (Redis) can replace the in-memory one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from cachetools import TTLCache

from mcp_server.core import metrics

__all__ = ["CacheLayer", "MemoryLayer"]

V = TypeVar("V")


class CacheLayer(Protocol[V]):
    name: str

    def get(self, key: str) -> V | None: ...

    def put(self, key: str, value: V) -> None: ...

    def delete(self, key: str) -> bool: ...

    def clear(self) -> int: ...

    def stats(self) -> dict[str, object]: ...


class MemoryLayer(Generic[V]):
    """Bounded by entries and, when ``size_of`` is given, by total size (oldest evicted first)."""

    def __init__(
        self,
        name: str,
        *,
        max_entries: int,
        ttl: float,
        max_bytes: int | None = None,
        size_of: Callable[[V], int] | None = None,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._size_of = size_of
        if max_bytes is not None and size_of is not None:
            self._cache: TTLCache[str, V] = TTLCache(maxsize=max_bytes, ttl=ttl, timer=timer, getsizeof=size_of)
        else:
            self._cache = TTLCache(maxsize=max_entries, ttl=ttl, timer=timer)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    def get(self, key: str) -> V | None:
        with self._lock:
            value = self._cache.get(key)
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
            metrics.cache_lookup(self.name, "memory", value is not None)
            return value

    def put(self, key: str, value: V) -> None:
        with self._lock:
            if self._size_of is not None and self.max_bytes is not None and self._size_of(value) > self.max_bytes:
                return  # larger than the whole layer: not cached
            self._cache.pop(key, None)
            while len(self._cache) >= self.max_entries:
                self._cache.popitem()
                self.evictions += 1
                metrics.cache_evicted(self.name, "memory")
            self._cache[key] = value

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._cache.pop(key, None) is not None

    def clear(self) -> int:
        with self._lock:
            count = len(self._cache)
            self._cache.clear()
            return count

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
            if self.max_bytes is not None:
                out["bytes"] = int(self._cache.currsize) if self._size_of else None
                out["max_bytes"] = self.max_bytes
            return out
