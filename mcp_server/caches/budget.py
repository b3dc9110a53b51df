"""One byte budget for every in-memory cache of a worker (``MCP_MEMORY_BUDGET_MB``).

Each cache layer (downloads, processed documents, indexes, embedding vectors, quote indexes,
page images) keeps its own entry and byte bounds and registers with the worker's ``MemoryBudget``.
After a layer grows, ``enforce`` evicts the least recently used entry among all layers (each
layer reports its oldest entry's last-use time, ``time.monotonic``) until the layers together fit.
Sizes are measured (``measure`` walks the object: strings, arrays, FAISS vectors), not counted.

An eviction only drops the cache's reference: a call that holds the value (a search running on
an index, a document being read) keeps it alive and finishes; the memory goes when the call ends.
The entry a layer has just stored is never its own victim, unless it alone exceeds the budget.

An idle server gives memory back (``IdleTrim``, ``MCP_IDLE_TRIM_SECONDS``): after that long without
a tool call or an index build the caches drop their least recently used half, again after each
further period idle, and the freed heap goes back to the system. ``Activity`` counts the calls
running; a trim evicts nothing while one runs, and stops at the eviction where one starts.

Hand-written because cachetools bounds one cache by size, not several caches together.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import logging
import sys
import threading
import time
import types
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import anyio

from mcp_server import metrics
from mcp_server.core.concurrency import Progress, off_loop
from mcp_server.core.errors import ServerBusyError

__all__ = ["BUILD_BYTES_PER_CHAR", "Activity", "BudgetedLayer", "IdleTrim", "MemoryBudget", "measure",
           "release_memory"]

log = logging.getLogger(__name__)

ADMISSION_WAIT = 120.0  # seconds a build waits for the budget before its call gets SERVER_BUSY
# What indexing holds per character of chunk text: sentence vectors (384 float32 per ~100-character
# sentence: ~15 B/char), the chunks and the BM25 matrix (a few more)
BUILD_BYTES_PER_CHAR = 20

_ATOMS = (str, bytes, bytearray, int, float, bool, complex, type(None))
# classes, modules and functions are shared code, not a cached value's data
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


class BudgetedLayer(Protocol):
    name: str

    def nbytes(self) -> int:
        """Measured bytes held now."""

    def oldest(self, exclude: str | None = None) -> tuple[float, str] | None:
        """(last use, key) of the least recently used entry other than ``exclude``; None if none."""

    def evict(self, key: str) -> int:
        """Drop ``key`` (a no-op when already gone); the bytes freed."""


def measure(obj: Any) -> int:
    """Approximate bytes reachable from ``obj`` (each object counted once): Python objects by
    ``sys.getsizeof``, NumPy arrays by ``nbytes``, FAISS indexes by their codes."""
    seen: set[int] = set()
    total = 0
    stack = [obj]
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, _OPAQUE):
            continue
        seen.add(id(item))
        if isinstance(item, _ATOMS):
            total += sys.getsizeof(item)
            continue
        nbytes = getattr(item, "nbytes", None)
        if isinstance(nbytes, int) and hasattr(item, "dtype"):  # a NumPy array (a view counts its own size)
            total += nbytes + 112
            continue
        ntotal = getattr(item, "ntotal", None)
        if isinstance(ntotal, int) and hasattr(item, "d"):  # a FAISS index: SWIG hides its buffers
            total += ntotal * int(getattr(item, "code_size", 4 * int(item.d))) + 256
            continue
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        else:
            attrs = getattr(item, "__dict__", None)
            if attrs is not None:
                stack.append(attrs)
            for slot in getattr(type(item), "__slots__", ()):
                if isinstance(slot, str) and hasattr(item, slot):
                    stack.append(getattr(item, slot))
    return total


class Activity:
    """The tool calls running in a worker and when the worker was last busy (``clock``'s time): what
    an idle trim waits for. Calls start and end on the event loop; a trim reads it from a thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.running = 0
        self.started = 0  # calls started so far: a trim that sees it change stops
        self.since = clock()  # the end of the last call or index build
        # held by a trim around each eviction and by a call's start: once a call has started, no
        # eviction is under way or begins (the call waits at most for one eviction to finish)
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        with self.lock:
            self.running += 1
            self.started += 1
        try:
            yield
        finally:
            self.running -= 1
            self.since = self.clock()

    def touch(self) -> None:
        """Busy just now (an index build ended)."""
        self.since = self.clock()


class MemoryBudget:
    """The byte bound shared by a worker's cache layers; ``max_bytes=None``: layers bound themselves only."""

    def __init__(self, max_bytes: int | None, *, activity: Activity | None = None) -> None:
        self.max_bytes = max_bytes
        self.activity = activity or Activity()
        self.idle_trims = 0
        self.idle_trimmed_bytes = 0
        self._layers: list[BudgetedLayer] = []
        self._lock = threading.Lock()
        self.evictions: Counter[str] = Counter()
        self.evicted_bytes = 0
        self.reserved = 0  # bytes admitted for index builds under way (``admitted``); caches make room for them
        self._released: anyio.Event | None = None
        self.admission_waits = 0

    def register(self, layer: BudgetedLayer) -> None:
        with self._lock:
            if all(existing is not layer for existing in self._layers):
                self._layers.append(layer)

    def unregister(self, layer: BudgetedLayer) -> None:
        """``layer`` leaves the budget (a shared variant took its place before any use)."""
        with self._lock:
            self._layers = [existing for existing in self._layers if existing is not layer]

    def used(self) -> int:
        return sum(layer.nbytes() for layer in list(self._layers))

    def enforce(self, keep: tuple[BudgetedLayer, str] | None = None) -> int:
        """Evict least recently used entries until the layers fit; never ``keep`` (the layer and key
        just stored) while anything else is left. Call without holding a layer's lock. Bytes freed."""
        freed = 0
        if self.max_bytes is None:
            metrics.cache_bytes(self.bytes_by_layer())
            return 0
        with self._lock:
            while self.used() + self.reserved > self.max_bytes:
                victim = self._oldest(keep)
                if victim is None and keep is not None:
                    victim = (keep[0], keep[1])  # alone over the whole budget: not kept
                    keep = None
                if victim is None:
                    break
                layer, key = victim
                size = layer.evict(key)
                freed += size
                if size:  # a victim may refuse (a model a call is using): nothing was evicted
                    self.evictions[layer.name] += 1
                    metrics.cache_evicted(layer.name, "memory")
        metrics.cache_bytes(self.bytes_by_layer())
        if freed:
            self.evicted_bytes += freed
            log.debug("cache.budget_evicted", extra={"bytes": freed, "max_bytes": self.max_bytes})
            if freed >= RELEASE_AFTER_BYTES:
                release_memory()
        return freed

    async def reserve(self, nbytes: int, *, progress: Progress | None = None, wait: float = ADMISSION_WAIT) -> None:
        """Hold ``nbytes`` of the budget while a document's index is built (on the event loop; give
        it back with ``release``). The caches give way at once; builds already holding the budget do
        not, so a build that does not fit waits for one to end (saying so through ``progress``), and
        after ``wait`` seconds the call gets ``ServerBusyError`` (retryable). A build alone always fits."""
        if self.max_bytes is not None:
            deadline = anyio.current_time() + wait
            told = False
            while self.reserved and self.reserved + nbytes > self.max_bytes:
                if anyio.current_time() >= deadline:
                    raise ServerBusyError(retry_after=30.0, reserved_mb=self.reserved // 2**20)
                if not told:
                    told = True
                    self.admission_waits += 1
                    log.info("index.admission_wait", extra={"bytes": nbytes, "reserved": self.reserved})
                    if progress is not None:
                        with contextlib.suppress(Exception):
                            await progress(0, None, f"queued: {self.reserved // 2**20} MB of other index builds "
                                                    f"hold the memory budget")
                if self._released is None:
                    self._released = anyio.Event()
                with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                    await self._released.wait()
        self.reserved += nbytes
        if self.max_bytes is not None and self.used() + self.reserved > self.max_bytes:
            await off_loop(self.enforce, shield=True)  # the caches make room now, off the loop

    def release(self, nbytes: int) -> None:
        """Give back what ``reserve`` held (on the event loop); a waiting build may go."""
        self.reserved -= nbytes
        self.activity.touch()
        released, self._released = self._released, None
        if released is not None:
            released.set()

    def trim(self, keep_bytes: int, started: int) -> dict[str, int]:
        """Evict least recently used entries until the layers hold at most ``keep_bytes``, while no
        call runs, none has started since ``started`` (``Activity.started``) and no build holds the
        budget; each eviction under ``Activity.lock``. Bytes freed by layer."""
        activity = self.activity
        freed: Counter[str] = Counter()
        with self._lock:
            while self.trimmable() > keep_bytes:
                victim = self._oldest(None, trimmable_only=True)
                if victim is None:
                    break
                layer, key = victim
                with activity.lock:
                    if activity.running or activity.started != started or self.reserved:
                        break
                    size = layer.evict(key)
                if not size:  # refused (a model in use) or gone meanwhile: stop rather than spin
                    break
                freed[layer.name] += size
        metrics.cache_bytes(self.bytes_by_layer())
        return dict(freed)

    def trimmable(self) -> int:
        """Bytes an idle trim may give back: every layer's but the on-demand models' (their own
        idle setting, ``MCP_MODEL_IDLE_UNLOAD``, says when they leave)."""
        return sum(layer.nbytes() for layer in list(self._layers) if getattr(layer, "idle_trim", True))

    def _oldest(self, keep: tuple[BudgetedLayer, str] | None,
                trimmable_only: bool = False) -> tuple[BudgetedLayer, str] | None:
        best: tuple[float, BudgetedLayer, str] | None = None
        for layer in self._layers:
            if trimmable_only and not getattr(layer, "idle_trim", True):
                continue
            found = layer.oldest(keep[1] if keep is not None and keep[0] is layer else None)
            if found is not None and (best is None or found[0] < best[0]):
                best = (found[0], layer, found[1])
        return None if best is None else (best[1], best[2])

    def bytes_by_layer(self) -> dict[str, int]:
        by_layer: Counter[str] = Counter()
        for layer in list(self._layers):
            by_layer[layer.name] += layer.nbytes()
        return dict(by_layer)

    def stats(self) -> dict[str, object]:
        by_layer = self.bytes_by_layer()
        return {
            "max_bytes": self.max_bytes,
            "bytes": sum(by_layer.values()),
            "bytes_by_layer": dict(by_layer),
            "evictions": dict(self.evictions),
            "evicted_bytes": self.evicted_bytes,
            "reserved_for_builds": self.reserved,
            "admission_waits": self.admission_waits,
            "idle_trims": self.idle_trims,
            "idle_trimmed_bytes": self.idle_trimmed_bytes,
        }


class IdleTrim:
    """Memory given back by an idle worker: ``after`` seconds after its last call or index build
    ended, the caches keep the most recently used half of their bytes, and again after each further
    ``after`` seconds idle (a server idle for long holds little beyond its models); then cyclic
    garbage is collected and freed heap returned (``release_memory``). ``after`` 0: never."""

    def __init__(self, budget: MemoryBudget, after: float) -> None:
        self.budget, self.after = budget, after
        self.last = -float("inf")  # the clock's time of the last trim

    def due(self) -> bool:
        activity = self.budget.activity
        if self.after <= 0 or activity.running or self.budget.reserved:
            return False
        return activity.clock() - max(activity.since, self.last) >= self.after

    def run(self) -> int:
        """One trim if ``due`` (in a worker thread: eviction and collection take milliseconds to
        tens of them); the bytes the caches gave up."""
        if not self.due():
            return 0
        activity = self.budget.activity
        started = activity.started
        self.last = activity.clock()
        held = self.budget.trimmable()
        freed = self.budget.trim(held // 2, started) if held else {}
        total = sum(freed.values())
        if total:
            self.budget.idle_trims += 1
            self.budget.idle_trimmed_bytes += total
            for layer, size in freed.items():
                metrics.cache_idle_trimmed(layer, size)
            gc.collect()  # an index's cycles (chunks <-> their document) would wait for the next collection
            release_memory()
            log.info("cache.idle_trimmed", extra={"bytes": total, "kept": held - total})
        return total


# After this many bytes leave the caches at once (or a big document's build), freed heap goes back
# to the system: glibc keeps freed memory in its arenas otherwise and the process never shrinks.
RELEASE_AFTER_BYTES = 16 * 2**20
_libc: Any = None


def _glibc() -> Any:
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
        try:
            _libc = ctypes.CDLL(name) if name else False
            if _libc is not False and not hasattr(_libc, "malloc_trim"):  # musl has no malloc_trim
                _libc = False
        except OSError:
            _libc = False
    return _libc


def release_memory() -> bool:
    """Give freed heap pages back to the system (glibc ``malloc_trim``); False where unavailable."""
    libc = _glibc()
    if not libc:
        return False
    return bool(libc.malloc_trim(0))


def limit_arenas(count: int) -> bool:
    """Cap glibc's malloc arenas (``mallopt(M_ARENA_MAX)``): each thread that allocates may get an
    arena of its own, and freed memory in one arena is not reused by the others."""
    libc = _glibc()
    if not libc or count <= 0:
        return False
    m_arena_max = -8
    return bool(libc.mallopt(m_arena_max, count))
