"""The index cache layer: memory (TTL, max entries) -> disk -> build, coalesced per key.

An index key hashes the document's content key with the embedding models, the chunker version
and the chunking configuration that does not depend on the parsed text (the model window) —
never the URL, and nothing that needs the document parsed: a known document goes bytes ->
content key -> index on disk without parsing (the chunk parameters that depend on the content's
length are a function of the content key, so they need not be in the key).

``opening`` finds an index without its chunks (``IndexLookup``) or holds the key's lock while the
caller makes them and hands them to ``build``: chunks go down, no function of the caller's is called.

Big documents answer first from a *partial* index (``FirstAnswers``, ``partial.py``): BM25 over every chunk, and dense
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

import dataclasses
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcp_server.caches.budget import BUILD_BYTES_PER_CHAR, MemoryBudget
from mcp_server.caches.layers import MemoryLayer
from mcp_server.caches.registry import memory_layer
from mcp_server.core.concurrency import KeyedLock, Progress
from mcp_server.core.models import Chunk
from mcp_server.core.settings import Settings
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.embedding.runner import ModelRunner
from mcp_server.indexes.builds import IndexBuilder, PendingBuild, manifest_check, profile
from mcp_server.indexes.cache_layers import register_embedders
from mcp_server.indexes.lookup import IndexLookup
from mcp_server.indexes.partial import FirstAnswers
from mcp_server.indexes.shared import SharedIndexStore
from mcp_server.indexes.store import IndexStore, Manifest
from mcp_server.indexes.tiers import IndexTiers
from mcp_server.retrieval.index import DocumentIndex
from mcp_server.retrieval.learned import bundled
from mcp_server.retrieval.search import Searcher

__all__ = ["IndexManager", "IndexView", "Opening", "make_index_key"]

log = logging.getLogger(__name__)

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
    complete: bool
    cached: bool
    timings_ms: dict[str, float] = field(default_factory=dict)  # the partial path's stages

    @property
    def key(self) -> str:
        """What the index is stored under: the index's own key (one key rule), which passage ids name."""
        return self.index.key

    @property
    def dense_coverage(self) -> float:
        return 1.0 if self.complete else round(self.index.coverage, 4)


@dataclass(frozen=True, kw_only=True, slots=True)
class Opening:
    """A key looked up before any chunks (``IndexManager.opening``): its ``view`` when found, else
    what ``IndexManager.build`` needs besides the chunks. Plain values: the pipeline makes the chunks
    and hands them down, indexes/ never calls back into it."""

    key: str
    chunker_version: str
    query: str | None
    location: str
    progress: Progress | None = None
    view: IndexView | None = None


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
        self._key_locks = KeyedLock()
        self.counters = {"memory_hits": 0, "disk_hits": 0, "misses": 0, "builds": 0, "partial_answers": 0,
                         "background_builds": 0}
        self.lookup = IndexLookup(models, self._memory, self.store, self.tiers, self.counters)
        self.builder = IndexBuilder(models, self.tiers, self.runner, self.counters, keep=self._remember,
                                    release=self._release)
        self._pending = self.builder.pending
        self.partial = FirstAnswers(settings, self.runner, self.builder, self._memory.get)

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
        self, content_sha256: str, chunker_version: str, config_key: str, chunks: Sequence[Chunk], *,
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
            return self._from_memory(key) or await self._from_disk(key, chunker_version)

    async def open(
        self, content_sha256: str, chunker_version: str, config_key: str, chunks: Sequence[Chunk], *,
        query: str | None = None, progress: Progress | None = None, location: str = "",
    ) -> IndexView:
        """``opening`` and ``build`` with the chunks at hand (tests, benchmarks, scripts)."""
        async with self.opening(content_sha256, chunker_version, config_key, query=query, progress=progress,
                                location=location) as found:
            return found.view or await self.build(found, chunks)

    @asynccontextmanager
    async def opening(
        self, content_sha256: str, chunker_version: str, config_key: str, *,
        query: str | None = None, progress: Progress | None = None, location: str = "",
    ) -> AsyncIterator[Opening]:
        """The index to search for ``query`` when it needs no chunks: the complete one from memory
        or disk, or a partial one while the complete one builds. Else ``view`` is None and the key's
        lock is held until the block ends: the caller makes the chunks and hands them to ``build``
        there (ten identical cold calls parse and build once). Without ``query``, only the complete
        index. ``location``: the URL the document is searched under (a partial answer's candidates
        are chosen without the words that name it, file name included: ``DocumentIndex.named``)."""
        key = self.index_key(content_sha256, chunker_version, config_key)
        opening = Opening(key=key, chunker_version=chunker_version, query=query, progress=progress, location=location)
        view = self._from_memory(key)
        pending = self._pending.get(key) if view is None and query is not None else None
        if view is None and pending is None:
            async with self._key_locks.hold(key):
                view = self._from_memory(key, coalesced=True)  # built by the request we waited for
                pending = self._pending.get(key) if view is None and query is not None else None
                if view is None and pending is None:
                    view = await self._from_disk(key, chunker_version, miss=True)
                    if view is None:
                        yield opening  # built by the caller, under the lock
                        return
        if view is None:
            assert pending is not None
            view = await self._answer_partial(pending, query or "", progress, location)
        yield dataclasses.replace(opening, view=view)

    async def build(self, opening: Opening, chunks: Sequence[Chunk]) -> IndexView:
        """The index of a key ``opening`` did not find, from its chunks, inside the ``opening`` block:
        built completely now when it is cheap or there is no query, else a partial index with vectors
        for the query's candidates while the complete one builds in the background."""
        if opening.view is not None:
            raise ValueError("the index was found: nothing to build")
        key, chunker_version, query, progress = opening.key, opening.chunker_version, opening.query, opening.progress
        chunk_list = list(chunks)
        embedder = self.models.embedder_for(*profile(chunk_list))
        need = BUILD_BYTES_PER_CHAR * sum(len(chunk.text) for chunk in chunk_list)
        if self.memory is not None:  # several big first calls at once queue here, or SERVER_BUSY
            await self.memory.reserve(need, progress=progress)
        if query is None or self.partial.build_now(chunk_list, embedder):
            try:
                fresh, built = await self.builder.build_here(key, chunker_version, chunk_list, progress)
            finally:
                self._release(need)
            await self._remember(key, fresh)
            return IndexView(index=fresh, complete=True, cached=not built)
        answer = await self.partial.start(key, chunker_version, chunk_list, embedder, query, progress=progress,
                                          location=opening.location, reserved=need, release=self._release)
        return self._partial_view(*answer, cached=False)  # complete only by waiting for the build it started

    def _from_memory(self, key: str, *, coalesced: bool = False) -> IndexView | None:
        index = self.lookup.in_memory(key, coalesced=coalesced)
        return None if index is None else IndexView(index=index, complete=True, cached=True)

    async def _from_disk(self, key: str, chunker_version: str, *, miss: bool = False) -> IndexView | None:
        index = await self.lookup.on_disk(key, manifest_check(self.models, chunker_version), miss=miss)
        if index is None:
            return None
        await self._remember(key, index)
        return IndexView(index=index, complete=True, cached=True)

    async def _answer_partial(self, pending: PendingBuild, query: str, progress: Progress | None,
                              location: str) -> IndexView:
        answer = await self.partial.answer(pending, query, progress, location)
        return self._partial_view(*answer, cached=answer[1])  # complete: built by an earlier call

    def _partial_view(self, index: DocumentIndex, complete: bool, timings: dict[str, float], *,
                      cached: bool) -> IndexView:
        self.counters["partial_answers"] += not complete
        return IndexView(index=index, complete=complete, cached=cached, timings_ms=timings)

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
        """Into memory; one read from disk without the detector's scores is scored in the background."""
        await self.lookup.keep(key, index)
        self.builder.rescore(key, index)

    # --- housekeeping ---------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        return self.lookup.stats(self._pending)

    async def clear(self) -> dict[str, int]:
        """Forget every index in memory and on disk, and the embedders' vector caches."""
        return await self.lookup.clear()
