"""The retriever cache layer: memory (TTL, max entries) -> disk -> build, coalesced per key.

An index key hashes the document *content* with the embedding models, the chunker version and
the chunk parameters — never the URL: the same bytes at two URLs are embedded once, and new
bytes at an old URL can never meet a stale index.

Concurrency: one ``anyio.Lock`` per key on this event loop (ten identical requests -> one build,
nine waits), a file lock per key across worker processes (``IndexStore.lock``), and a semaphore
of ``gpu_concurrency`` around every build and search. Model and FAISS work runs in worker
threads; the loop only awaits.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.from_thread
from cachetools import TTLCache

from mcp_server.core.concurrency import run_sync
from mcp_server.core.models import Chunk, SearchHit
from mcp_server.core.settings import Settings
from mcp_server.retrieval.index import DocumentIndex
from mcp_server.retrieval.models import ModelRegistry
from mcp_server.retrieval.store import IndexStore, Manifest

__all__ = ["ChunkSource", "IndexManager", "Progress", "make_index_key"]

log = logging.getLogger(__name__)

T = TypeVar("T")
# The chunks, or a coroutine function producing them (called only when the index must be built).
ChunkSource = Sequence[Chunk] | Callable[[], Awaitable[Sequence[Chunk]]]
# (done, total, message); may be sync or async (e.g. ``ctx.report_progress``-style).
Progress = Callable[[int, int, str], Any]


def make_index_key(content_sha256: str, model_id: str, chunker_version: str, params_key: str) -> str:
    """The on-disk and in-memory name of an index (32 hex chars)."""
    material = "\x1f".join(("rag-index/1", content_sha256, model_id, chunker_version, params_key))
    return hashlib.sha256(material.encode()).hexdigest()[:32]


class IndexManager:
    def __init__(
        self, settings: Settings, models: ModelRegistry, store: IndexStore | None = None, *,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.models = models
        self.store = store or IndexStore(settings.index_dir)
        self._memory: TTLCache[str, DocumentIndex] = TTLCache(
            maxsize=settings.cache_max_retrievers, ttl=settings.cache_ttl, timer=timer
        )
        self._concurrency = settings.gpu_concurrency
        self._limiter: anyio.CapacityLimiter | None = None  # created on the loop, lazily
        self._key_locks: dict[str, anyio.Lock] = {}
        self._key_waiters: dict[str, int] = {}
        self.counters = {"memory_hits": 0, "disk_hits": 0, "misses": 0, "builds": 0}

    # --- keys -----------------------------------------------------------------------------
    def index_key(self, content_sha256: str, chunker_version: str, params_key: str) -> str:
        return make_index_key(content_sha256, self.models.index_model_id, chunker_version, params_key)

    # --- get or build ---------------------------------------------------------------------
    async def get_or_build(
        self, content_sha256: str, chunker_version: str, params_key: str, chunks: ChunkSource, *,
        progress: Progress | None = None,
    ) -> tuple[DocumentIndex, bool]:
        """(index, cached): cached is True when no embedding was needed (memory or disk)."""
        key = self.index_key(content_sha256, chunker_version, params_key)
        index = self._memory.get(key)
        if index is not None:
            self.counters["memory_hits"] += 1
            return index, True
        async with self._key_lock(key):
            index = self._memory.get(key)
            if index is not None:  # built by the request we waited for
                self.counters["memory_hits"] += 1
                return index, True
            loaded = await run_sync(self._load, key, chunker_version)
            if loaded is not None:
                self.counters["disk_hits"] += 1
                self._memory[key] = loaded
                return loaded, True
            self.counters["misses"] += 1
            chunk_list = list(await chunks() if callable(chunks) else chunks)
            report = self._thread_progress(progress)
            async with self._gpu():
                fresh, built = await run_sync(self._build, key, chunker_version, chunk_list, report)
            self._memory[key] = fresh
            return fresh, not built

    async def find(self, key: str) -> DocumentIndex | None:
        """The index stored under ``key``, from memory, else from disk (then kept in memory);
        None when it is in neither. Never builds: a passage id leads here without a download."""
        index = self._memory.get(key)
        if index is not None:
            return index
        index = await run_sync(self._find_on_disk, key)
        if index is not None:
            self._memory[key] = index
        return index

    def _find_on_disk(self, key: str) -> DocumentIndex | None:
        if not self.store.path(key).exists():
            return None
        with self.store.lock(key):  # the key names the chunker version: accept the manifest's
            return self.store.load(key, lambda manifest: self._check(str(manifest.get("chunker_version")))(manifest))

    def _check(self, chunker_version: str) -> Callable[[Manifest], str | None]:
        def check(manifest: Manifest) -> str | None:
            if manifest.get("chunker_version") != chunker_version:
                return f"chunker version {manifest.get('chunker_version')} != {chunker_version}"
            embedder = self.models.embedder_for(int(manifest.get("chunk_count", 0)))
            if manifest.get("model_id") != embedder.model_id:
                return f"model {manifest.get('model_id')} != {embedder.model_id}"
            if manifest.get("dimension") != embedder.dimension:
                return f"dimension {manifest.get('dimension')} != {embedder.dimension}"
            return None

        return check

    def _load(self, key: str, chunker_version: str) -> DocumentIndex | None:
        if not self.store.path(key).exists():  # the common miss costs no lock
            return None
        with self.store.lock(key):
            return self.store.load(key, self._check(chunker_version))

    def _build(
        self, key: str, chunker_version: str, chunks: list[Chunk],
        progress: Callable[[int, int, str], None] | None,
    ) -> tuple[DocumentIndex, bool]:
        """(index, built). Under the file lock another process may have finished it meanwhile."""
        with self.store.lock(key):
            existing = self.store.load(key, self._check(chunker_version))
            if existing is not None:
                return existing, False
            embedder = self.models.embedder_for(len(chunks))
            started = time.perf_counter()
            index = DocumentIndex.embed(chunks, embedder, progress=progress)
            index.key = key
            self.store.save(key, index, chunker_version=chunker_version)
            self.counters["builds"] += 1
            log.info("index.built key=%s chunks=%d sentences=%d model=%s seconds=%.2f",
                     key, len(chunks), index.faiss.ntotal, embedder.model_id, time.perf_counter() - started)
            return index, True

    # --- search ---------------------------------------------------------------------------
    async def search(
        self, index: DocumentIndex, query: str, top_k: int = 5, *, neighbors: int = 0,
        rerank: bool = True,
    ) -> tuple[list[SearchHit], dict[str, float]]:
        """Hits in relevance order and timings in milliseconds (embed, search)."""
        async with self._gpu():
            return await run_sync(self._search, index, query, top_k, neighbors, rerank)

    def _search(
        self, index: DocumentIndex, query: str, top_k: int, neighbors: int, rerank: bool,
    ) -> tuple[list[SearchHit], dict[str, float]]:
        t0 = time.perf_counter()
        query_vec = self.models.embedder_by_id(index.model_id).embed_query(query)
        t1 = time.perf_counter()
        reranker = self.models.reranker if rerank else None
        hits = index.search(query_vec, query, top_k, reranker=reranker, neighbors=neighbors)
        t2 = time.perf_counter()
        return hits, {"embed_ms": round((t1 - t0) * 1000, 2), "search_ms": round((t2 - t1) * 1000, 2)}

    async def run_limited(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread under the GPU_CONCURRENCY limiter that every build and
        search shares (model and FAISS work of callers outside this class, e.g. a cross-document search)."""
        async with self._gpu():
            return await run_sync(fn, *args)

    # --- housekeeping ---------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        memory_hits, disk_hits, misses = (self.counters[k] for k in ("memory_hits", "disk_hits", "misses"))
        lookups = memory_hits + disk_hits + misses
        return {
            **self.counters,
            "hit_rate": round((memory_hits + disk_hits) / lookups, 4) if lookups else 0.0,
            "entries": len(self._memory),
            "max_entries": int(self._memory.maxsize),
            "ttl": self._memory.ttl,
            "disk": self.store.stats(),
            "embedding_cache_entries": sum(
                e.cache_entries for e in {id(e): e for e in (self.models.fast, self.models.accurate)}.values()
            ),
        }

    async def clear(self) -> dict[str, int]:
        """Forget every index in memory and on disk, and the embedders' vector caches."""
        entries = len(self._memory)
        self._memory.clear()
        for embedder in {id(e): e for e in (self.models.fast, self.models.accurate)}.values():
            embedder.clear_cache()
        removed = await run_sync(self.store.clear)
        return {"memory": entries, "disk": removed}

    # --- plumbing -------------------------------------------------------------------------
    def _gpu(self) -> anyio.CapacityLimiter:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self._concurrency)
        return self._limiter

    def _key_lock(self, key: str) -> _KeyLock:
        return _KeyLock(self, key)

    @staticmethod
    def _thread_progress(progress: Progress | None) -> Callable[[int, int, str], None] | None:
        """Adapt a sync or async callback so the embedding thread can call it; a failing
        callback (client gone) never fails the build."""
        if progress is None:
            return None

        async def call(done: int, total: int, message: str) -> None:
            result = progress(done, total, message)
            if inspect.isawaitable(result):
                await result

        def report(done: int, total: int, message: str) -> None:
            try:
                anyio.from_thread.run(call, done, total, message)
            except Exception as exc:  # noqa: BLE001 - progress is best effort
                log.debug("index.progress_failed %s", exc)

        return report


class _KeyLock:
    """A per-key lock that disappears when nobody holds or waits for it (no unbounded dict)."""

    def __init__(self, manager: IndexManager, key: str) -> None:
        self.manager, self.key = manager, key

    async def __aenter__(self) -> None:
        m = self.manager
        lock = m._key_locks.get(self.key)
        if lock is None:
            lock = m._key_locks[self.key] = anyio.Lock()
        m._key_waiters[self.key] = m._key_waiters.get(self.key, 0) + 1
        try:
            await lock.acquire()
        except BaseException:
            self._release_ref()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.manager._key_locks[self.key].release()
        self._release_ref()

    def _release_ref(self) -> None:
        m = self.manager
        m._key_waiters[self.key] -= 1
        if m._key_waiters[self.key] == 0:
            del m._key_waiters[self.key], m._key_locks[self.key]
