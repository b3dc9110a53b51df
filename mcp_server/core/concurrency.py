"""Keeping blocking work off the event loop, one lock per key, a value computed once across threads,
and the progress callback type."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from threading import Lock
from typing import Any, Generic, TypeVar

import anyio
import anyio.to_thread

__all__ = ["KeyedLock", "Once", "Progress", "run_sync"]

T = TypeVar("T")

# (done, total or None while unknown, message), awaited on the event loop: the tools forward it
# as MCP progress notifications. Worker threads get a sync adapter (IndexManager builds one).
Progress = Callable[[float, float | None, str], Awaitable[None]]


async def run_sync(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking function in a worker thread (the thread finishes even if we are cancelled).

    Callers do not hop themselves: each blocking object exposes an async API that hops once per
    operation, and only those seams call this: the model runner (``embedding/runner.py``: model
    work with a slot, the text work around it without), the index tiers (``indexes/tiers.py``),
    the cache layers (``caches/layers.py``), the fetcher (local files, uploads), the health reports
    (``tools/health.py``), ``/metrics`` and the lifespan (models opened, memory given back)."""
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs), abandon_on_cancel=True)


class KeyedLock:
    """One ``anyio.Lock`` per key, forgotten when nobody holds or waits for it (no unbounded dict).

    Ten identical requests take the same key: one does the work, nine wait and then find it done."""

    def __init__(self) -> None:
        self._locks: dict[str, anyio.Lock] = {}
        self._users: dict[str, int] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(key, anyio.Lock())
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[key] -= 1
            if self._users[key] == 0:
                del self._users[key], self._locks[key]

    def __len__(self) -> int:
        """Keys held or waited for now."""
        return len(self._locks)


class Once(Generic[T]):
    """A value computed at most once, by whichever thread asks first; the others wait for it.
    Copies of an object that share one ``Once`` share the value (a document's partial indexes)."""

    def __init__(self, compute: Callable[[], T]) -> None:
        self._compute: Callable[[], T] | None = compute
        self._value: T | None = None
        self._lock = Lock()

    def get(self) -> T:
        with self._lock:
            if self._compute is not None:
                self._value, self._compute = self._compute(), None
            return self._value  # type: ignore[return-value]
