"""The index cache layer: memory (TTL, max entries) -> disk -> build, coalesced per key.

An index key hashes the document's content key with the embedding models, the chunker version
and the chunking configuration that does not depend on the parsed text (the model window) —
never the URL, and nothing that needs the document parsed: a known document goes bytes ->
content key -> index on disk without parsing (the chunk parameters that depend on the content's
length are a function of the content key, so they need not be in the key).

Big documents answer first from a *partial* index (``open``): BM25 over every chunk, and dense
vectors only for the query's candidates (the best-matching sentences of its best BM25 chunks),
embedded on demand; the complete index builds in a background task owned by ``running()`` (the app's
lifespan), is persisted, and serves the later calls. A document whose complete build is
estimated to take at most ``progressive_budget`` seconds is built completely in the call.

Concurrency: one ``anyio.Lock`` per key on this event loop (ten identical requests -> one build,
nine waits), a file lock per key across worker processes and, with a shared store, a lease per key
across hosts (``IndexTiers``: a worker or host that finds another one building waits for its index
and never builds it again). Every model call (embedding, search, a build) goes through the
``ModelRunner`` (``embedding/runner.py``): a bounded number at once, in worker threads, background
builds leaving searches a slot; the loop only awaits.

``config_key`` names what decides the chunks besides the content and the models, and must be
known before parsing (the service passes the model window).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcp_server import metrics
from mcp_server.caches.budget import BUILD_BYTES_PER_CHAR, MemoryBudget
from mcp_server.caches.layers import MemoryLayer, cache_put
from mcp_server.caches.registry import memory_layer
from mcp_server.core.concurrency import KeyedLock, Progress, off_loop
from mcp_server.core.models import Chunk
from mcp_server.core.settings import Settings
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.embedding.runner import ModelRunner
from mcp_server.encoders.embedders import Embedder
from mcp_server.indexes.builds import IndexBuilder, PendingBuild, manifest_check, profile
from mcp_server.indexes.cache_layers import register_embedders
from mcp_server.indexes.partial import answer_partial
from mcp_server.indexes.shared import SharedIndexStore
from mcp_server.indexes.store import IndexStore, Manifest
from mcp_server.indexes.tiers import IndexTiers
from mcp_server.retrieval.index import DocumentIndex, reads_foreign
from mcp_server.retrieval.learned import bundled
from mcp_server.retrieval.search import Searcher

__all__ = ["ChunkSource", "IndexManager", "IndexView", "make_index_key"]

log = logging.getLogger(__name__)

# The chunks, or a coroutine function producing them (called only when the index must be built).
ChunkSource = Sequence[Chunk] | Callable[[], Awaitable[Sequence[Chunk]]]


def make_index_key(content_sha256: str, model_id: str, chunker_version: str, config_key: str) -> str:
    """The on-disk and in-memory name of an index (32 hex chars)."""
    material = "\x1f".join(("rag-index/1", content_sha256, model_id, chunker_version, config_key))
    return hashlib.sha256(material.encode()).hexdigest()[:32]


@dataclass(frozen=True, kw_only=True, slots=True)
class IndexView:
    """What one call searches: the complete index, or the partial one of a document whose
    complete index is still building. ``cached``: nothing was embedded for this call. The one
    index-status record: the pipeline wraps it (``Indexed``, ``Retrieval``) and the tool result
    reads it (``tools/schemas.py``'s ``index_status``), never copying its fields."""

    index: DocumentIndex
    key: str  # what the index is stored under
    complete: bool
    cached: bool
    timings_ms: dict[str, float] = field(default_factory=dict)  # the partial path's stages

    @property
    def dense_coverage(self) -> float:
        return 1.0 if self.complete else round(self.index.coverage, 4)


class IndexManager:
    def __init__(
        self, settings: Settings, models: ModelRegistry, store: IndexStore | None = None, *,
        shared: SharedIndexStore | None = None, budget: MemoryBudget | None = None,
        timer: Callable[[], float] = time.monotonic, memory: MemoryLayer[DocumentIndex] | None = None,
    ) -> None:
        self.models = models
        self.store = store or IndexStore(settings.index_dir)
        self.tiers = IndexTiers(self.store, shared, lease_seconds=settings.index_lease_seconds,
                                max_bytes=settings.index_store_max_bytes,
                                local_max_bytes=settings.index_dir_max_mb * 2**20 or None)
        # the lifespan's registry's layer; a manager of its own (tests, scripts) makes one
        self._memory: MemoryLayer[DocumentIndex] = memory or memory_layer("index", settings, budget=budget, timer=timer)
        self.memory = budget
        if budget is not None:
            register_embedders(budget, models.embedders)
        self.runner = ModelRunner(settings.model_concurrency)
        # searching the indexes it hands out is retrieval's job, with the same models and model slots
        self.searcher = Searcher(models, self.runner, bundled() if settings.learned_ranking else None)
        self.budget = settings.progressive_budget
        self.candidates = settings.progressive_candidates
        self.foreign_wait = settings.progressive_foreign_wait
        self._key_locks = KeyedLock()
        self.counters = {"memory_hits": 0, "disk_hits": 0, "misses": 0, "builds": 0, "partial_answers": 0,
                         "background_builds": 0}
        self.builder = IndexBuilder(models, self.tiers, self.runner, self.counters, keep=self._remember,
                                    release=self._release)
        self._pending = self.builder.pending

    # --- keys -----------------------------------------------------------------------------
    def index_key(self, content_sha256: str, chunker_version: str, config_key: str) -> str:
        return make_index_key(content_sha256, self.models.index_model_id, chunker_version, config_key)

    # --- lifecycle --------------------------------------------------------------------------
    @asynccontextmanager
    async def running(self) -> AsyncIterator[IndexManager]:
        """Owns the background builds: they outlive the call that started them and stop here.
        Without it, every document is built completely in the call that needs it."""
        async with self.builder.running():
            yield self

    def pending(self, content_sha256: str, chunker_version: str, config_key: str) -> anyio.Event | None:
        """Set when the background build of this document ends; None when none is running."""
        state = self._pending.get(self.index_key(content_sha256, chunker_version, config_key))
        return state.done if state is not None else None

    # --- get or build ---------------------------------------------------------------------
    async def get_or_build(
        self, content_sha256: str, chunker_version: str, config_key: str, chunks: ChunkSource, *,
        progress: Progress | None = None,
    ) -> tuple[DocumentIndex, bool]:
        """The complete index, built in the call if needed; (index, cached): cached is True
        when no embedding was needed (memory or disk)."""
        view = await self.open(content_sha256, chunker_version, config_key, chunks, progress=progress)
        return view.index, view.cached

    async def stored(self, content_sha256: str, chunker_version: str, config_key: str) -> IndexView | None:
        """The complete index held in memory, on disk or in the shared store, else None (no build)."""
        key = self.index_key(content_sha256, chunker_version, config_key)
        if self._memory.get(key) is None and key in self._pending:
            return None
        async with self._key_locks.hold(key):
            index = self._memory.get(key)
            if index is not None:
                self.counters["memory_hits"] += 1
                metrics.index_lookup("memory")
            else:
                index, found = await self.tiers.find(key, manifest_check(self.models, chunker_version))
                if index is None:
                    return None
                self.counters["disk_hits"] += 1
                metrics.index_lookup(found)
                await self._remember(key, index)
        return IndexView(key=key, index=index, complete=True, cached=True)

    async def open(
        self, content_sha256: str, chunker_version: str, config_key: str, chunks: ChunkSource, *,
        query: str | None = None, progress: Progress | None = None, location: str = "",
    ) -> IndexView:
        """The index to search for ``query``: the complete one when it exists or is cheap to
        build now, else a partial one with vectors for the query's candidates (and the complete
        one starts building in the background). Without ``query``, always the complete one.
        ``location``: the URL the document is searched under (a partial answer's candidates
        are chosen without the words that name it, file name included: ``DocumentIndex.named``)."""
        key = self.index_key(content_sha256, chunker_version, config_key)
        index = self._memory.get(key)
        if index is not None:
            self.counters["memory_hits"] += 1
            metrics.index_lookup("memory")
            return IndexView(key=key, index=index, complete=True, cached=True)
        pending = self._pending.get(key) if query is not None else None
        if pending is not None:
            return await self._answer_partial(pending, query or "", progress, location)
        async with self._key_locks.hold(key):
            index = self._memory.get(key)
            if index is not None:  # built by the request we waited for
                self.counters["memory_hits"] += 1
                metrics.index_build("coalesced")
                metrics.index_lookup("memory")
                return IndexView(key=key, index=index, complete=True, cached=True)
            pending = self._pending.get(key) if query is not None else None
            if pending is None:
                loaded, found = await self.tiers.find(key, manifest_check(self.models, chunker_version))
                if loaded is not None:
                    self.counters["disk_hits"] += 1  # the shared store's too: they land in the folder
                    metrics.index_lookup(found)
                    await self._remember(key, loaded)
                    return IndexView(key=key, index=loaded, complete=True, cached=True)
                self.counters["misses"] += 1
                metrics.index_lookup("miss")
                chunk_list = list(await chunks() if callable(chunks) else chunks)
                embedder = self.models.embedder_for(*profile(chunk_list))
                need = BUILD_BYTES_PER_CHAR * sum(len(chunk.text) for chunk in chunk_list)
                if self.memory is not None:  # several big first calls at once queue here, or SERVER_BUSY
                    await self.memory.reserve(need, progress=progress)
                if query is None or self._build_now(chunk_list, embedder):
                    try:
                        fresh, built = await self.builder.build_here(key, chunker_version, chunk_list, progress)
                    finally:
                        self._release(need)
                    await self._remember(key, fresh)
                    return IndexView(key=key, index=fresh, complete=True, cached=not built)
                # BM25 over every chunk, no vectors yet: a second or so for a 3 MB book, off the loop
                started = time.perf_counter()
                handed = False  # whether the build owns ``need`` (it gives it back when it ends)
                try:
                    base = await off_loop(_partial_base, chunk_list, embedder)
                    base.key = key  # passage ids of partial answers name the key the complete index will have
                    lexical = round((time.perf_counter() - started) * 1000, 2)
                    pending = PendingBuild(key=key, base=base, embedder=embedder, progress=progress, reserved=need)
                    foreign = await off_loop(reads_foreign, base.named(location), query)
                    # a question in another language waits for the build: it starts first
                    handed = foreign and self.builder.start(key, chunker_version, chunk_list, pending)
                    view = await self._answer_partial(pending, query, progress, location, foreign=foreign)
                except BaseException:
                    if not handed:
                        self._release(need)
                    raise
                view.timings_ms["bm25_index"] = lexical
                if not foreign:
                    self.builder.start(key, chunker_version, chunk_list, pending)
                return view
        return await self._answer_partial(pending, query or "", progress, location)

    def _build_now(self, chunks: list[Chunk], embedder: Embedder) -> bool:
        """Build completely in the call when there is no background runner or the build is
        estimated within the budget. (A partial answer embeds a few sentences per candidate, so
        it is the cheaper first answer for any document that misses the budget.)"""
        if not self.builder.background or not chunks:
            return True
        return embedder.estimate_seconds(sum(len(chunk.text) for chunk in chunks)) <= self.budget

    async def _answer_partial(
        self, pending: PendingBuild, query: str, progress: Progress | None, location: str = "",
        foreign: bool | None = None,
    ) -> IndexView:
        index, complete, timings = await answer_partial(
            pending, query, self.runner, self.candidates, wait=self.foreign_wait, stored=self._memory.get,
            progress=progress, location=location, foreign=foreign)
        self.counters["partial_answers"] += not complete
        return IndexView(key=pending.key, index=index, complete=complete, cached=complete, timings_ms=timings)

    async def find(self, key: str) -> DocumentIndex | None:
        """The index stored under ``key``, from memory, else from disk or the shared store (then
        kept in memory); None when it is nowhere. Never builds: a passage id leads here without a download."""
        index = self._memory.get(key)
        if index is not None:
            return index
        pending = self._pending.get(key)
        if pending is not None:  # being built: the partial base holds every chunk already
            return pending.base
        def check(manifest: Manifest) -> str | None:  # the key names the chunker version: accept the manifest's
            return manifest_check(self.models, str(manifest.get("chunker_version")))(manifest)

        index, _ = await self.tiers.find(key, check)
        if index is not None:
            await self._remember(key, index)
        return index

    def _release(self, nbytes: int) -> None:
        if self.memory is not None:
            self.memory.release(nbytes)

    async def _remember(self, key: str, index: DocumentIndex) -> None:
        """Into the memory layer; measuring and any evictions it causes run off the loop. One read
        from disk without the detector's scores is scored for instructions in the background."""
        with anyio.CancelScope(shield=True):
            await cache_put(self._memory, key, index)
        self.builder.rescore(key, index)

    # --- housekeeping ---------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        memory_hits, disk_hits, misses = (self.counters[k] for k in ("memory_hits", "disk_hits", "misses"))
        lookups = memory_hits + disk_hits + misses
        return {
            **self.counters,
            "hit_rate": round((memory_hits + disk_hits) / lookups, 4) if lookups else 0.0,
            **{name: value for name, value in self._memory.stats().items()
               if name in ("entries", "max_entries", "bytes", "evictions")},
            "ttl": self._memory.stats()["ttl_s"],
            "building": [
                {"key": key, "chunks": len(state.base), "embedded": state.embedded[0], "to_embed": state.embedded[1]}
                for key, state in list(self._pending.items())
            ],
            "disk": self.store.stats(),
            "shared": self.tiers.stats(),
            "embedding_cache_entries": sum(e.cache_entries for e in self.models.embedders),
        }

    async def clear(self) -> dict[str, int]:
        """Forget every index in memory and on disk, and the embedders' vector caches."""
        entries = self._memory.clear()
        for embedder in self.models.embedders:
            embedder.clear_cache()
        return {"memory": entries, **await self.tiers.clear()}


def _partial_base(chunks: list[Chunk], embedder: Embedder) -> DocumentIndex:
    """BM25 over every chunk, no vectors yet, and its template passages: every partial answer's
    fusion reads them, so they are found here, once, before the complete build takes the cores."""
    base = DocumentIndex.embed(chunks, embedder, only=())
    base.templates  # noqa: B018 - found now, shared by every partial index of the document
    return base

