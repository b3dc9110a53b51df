"""One small function per thing recorded: each returns at once while recording is off."""

from __future__ import annotations

import functools
import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Literal, ParamSpec, TypeVar

from cachetools import Cache

from mcp_server.metrics._registry import Stage, _get, _label, _state

P = ParamSpec("P")
R = TypeVar("R")


# --- tools --------------------------------------------------------------------------------
def _result_code(result: Any) -> str:
    """OK, or the code of an error result ({"error", "code", ...} with is_error set)."""
    if not getattr(result, "is_error", False):
        return "OK"
    # The guard's error results carry their JSON as text only (no structuredContent: see guard.py).
    try:
        content = json.loads(result.content[0].text)
    except (AttributeError, IndexError, TypeError, ValueError):
        return "INTERNAL_ERROR"
    return str(content.get("code", "INTERNAL_ERROR")) if isinstance(content, dict) else "INTERNAL_ERROR"


def tool_calls(run: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Decorates the guard's ``run(*, tool=...)``: counts every call by tool and code, times it."""

    @functools.wraps(run)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        started = time.perf_counter()
        code = "CANCELLED"  # the client went away: no result was produced
        try:
            result = await run(*args, **kwargs)
            code = _result_code(result)
            return result
        finally:
            m = _get()
            if m is not None:
                tool = _label(str(kwargs.get("tool", "unknown")))
                m.tool_calls.labels(tool, _label(code)).inc()
                m.tool_seconds.labels(tool).observe(time.perf_counter() - started)

    return wrapper


# --- stages -------------------------------------------------------------------------------
def observe_stage(stage: Stage, seconds: float) -> None:
    m = _get()
    if m is not None:
        m.stage_seconds.labels(stage).observe(seconds)


def timed(stage: Stage) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: the function's duration (sync or async, failures included) as ``stage``."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def async_wrapper(*args: P.args, **kwargs: P.kwargs) -> Any:
                started = time.perf_counter()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    observe_stage(stage, time.perf_counter() - started)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                observe_stage(stage, time.perf_counter() - started)

        return wrapper

    return decorate


def search_timed(query_embed_seconds: float, search_seconds: float) -> None:
    observe_stage("query_embed", query_embed_seconds)
    observe_stage("search", search_seconds)


def retrieval(doc_type: str, warm: bool) -> None:
    m = _get()
    if m is not None:
        m.retrievals.labels(_label(doc_type), "warm" if warm else "cold").inc()


def document_parsed(doc_type: str) -> None:
    m = _get()
    if m is not None:
        m.documents_parsed.labels(_label(doc_type)).inc()


def flags_found(kind: str, count: int = 1) -> None:
    m = _get()
    if m is not None and count:
        m.flags.labels(_label(kind)).inc(count)


def bytes_downloaded(count: int) -> None:
    m = _get()
    if m is not None:
        m.download_bytes.inc(count)


def download_revalidated(outcome: Literal["not_modified", "changed", "unchanged"]) -> None:
    m = _get()
    if m is not None:
        m.download_revalidations.labels(outcome).inc()


def upload_answered(outcome: Literal["stored", "too_large", "refused"]) -> None:
    m = _get()
    if m is not None:
        m.uploads.labels(outcome).inc()


# --- caches -------------------------------------------------------------------------------
Layer = Literal["download", "document", "index"]
Backend = Literal["memory", "disk", "redis"]


def cache_lookup(layer: Layer | str, backend: Backend, hit: bool) -> None:
    m = _get()
    if m is not None:
        m.cache_lookups.labels(_label(layer), backend, "hit" if hit else "miss").inc()


def cache_evicted(layer: Layer | str, backend: Backend, count: int = 1) -> None:
    m = _get()
    if m is not None and count > 0:
        m.cache_evictions.labels(_label(layer), backend).inc(count)


def cache_idle_trimmed(layer: str, size: int) -> None:
    m = _get()
    if m is not None and size > 0:
        m.cache_idle_trimmed.labels(_label(layer)).inc(size)


def cache_bytes(by_layer: dict[str, int]) -> None:
    m = _get()
    if m is not None:
        for layer, size in by_layer.items():
            m.cache_bytes.labels(_label(layer)).set(size)


def index_dir_bytes(size: int) -> None:
    m = _get()
    if m is not None:
        m.index_dir_bytes.set(size)


def cache_insert(layer: Layer, cache: Cache[Any, Any], key: Any) -> None:
    """Call just before ``cache[key] = value`` on an entry-bounded cachetools cache: counts the
    eviction the insert is about to make (cachetools evicts silently)."""
    if _state.enabled and key not in cache and cache.currsize + 1 > cache.maxsize:
        expire = getattr(cache, "expire", None)
        if expire is not None:
            expire()  # what __setitem__ does first: an expired entry leaving is not an eviction
        if cache.currsize + 1 > cache.maxsize:
            cache_evicted(layer, "memory")


def index_lookup(found: Literal["memory", "disk", "shared", "miss"]) -> None:
    """The index layer is memory, then disk, then (when one is set up) the shared store, then a
    build: one lookup result per tier asked."""
    cache_lookup("index", "memory", found == "memory")
    if found != "memory":
        cache_lookup("index", "disk", found == "disk")
    if found == "shared":
        cache_lookup("index", "redis", True)


# --- index builds -------------------------------------------------------------------------
def index_build(event: Literal["started", "coalesced", "failed"]) -> None:
    m = _get()
    if m is not None:
        m.index_builds.labels(event).inc()


def index_embedded(chunks: int, seconds: float) -> None:
    m = _get()
    if m is not None:
        m.chunks_embedded.inc(chunks)
        m.stage_seconds.labels("embed").observe(seconds)


def _in_flight(state: str, delta: int) -> None:
    m = _get()
    if m is not None:
        m.index_builds_in_flight.labels(state).inc(delta)


def build_slot(limiter: AbstractAsyncContextManager[Any], *, count_failed: bool = True,
               ) -> AbstractAsyncContextManager[None]:
    """``async with build_slot(limiter)`` instead of ``async with limiter`` around a build: the
    build counts as waiting, then running; leaving with an exception counts it failed (unless
    ``count_failed`` is False: the caller counts its failures itself)."""

    @asynccontextmanager
    async def slot() -> AsyncIterator[None]:
        _in_flight("waiting", 1)
        try:
            await limiter.__aenter__()
        finally:
            _in_flight("waiting", -1)
        _in_flight("running", 1)
        try:
            yield
        except Exception:
            if count_failed:
                index_build("failed")
            raise
        finally:
            _in_flight("running", -1)
            await limiter.__aexit__(None, None, None)

    return slot()


# --- parser pool --------------------------------------------------------------------------
def parser_pool_size(workers: float) -> None:
    """This process's parser processes: its own pool's, or its share of the pool all --workers share."""
    with _state.lock:
        _state.parser_size = max(1, round(workers))
    m = _get()
    if m is not None:
        m.parser_workers.set(workers)


def _parser_tasks(delta: int) -> None:
    m = _get()
    with _state.lock:
        _state.parser_in_flight += delta
        busy = min(_state.parser_in_flight, _state.parser_size)
        queued = _state.parser_in_flight - busy
    if m is not None:
        # This process's pool: tasks beyond its worker count wait in pebble's queue.
        m.parser_tasks.labels("busy").set(busy)
        m.parser_tasks.labels("queued").set(queued)


def parser_task(run: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Decorates the parser pool's async ``run``: busy/queued tasks and the ``parse`` stage."""

    @functools.wraps(run)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        started = time.perf_counter()
        _parser_tasks(1)
        try:
            return await run(*args, **kwargs)
        finally:
            _parser_tasks(-1)
            observe_stage("parse", time.perf_counter() - started)

    return wrapper


# --- rate limits and Redis ----------------------------------------------------------------
def rate_limited(scope: Literal["client", "global"]) -> None:
    m = _get()
    if m is not None:
        m.rate_limited.labels(scope).inc()


def redis_failed(component: str) -> None:
    """A Redis call failed; the operation is answered by in-process state instead."""
    m = _get()
    if m is not None:
        m.redis_errors.labels(_label(component)).inc()
        m.redis_fallbacks.labels(_label(component)).inc()


def redis_fallback(component: str) -> None:
    """Redis was not tried (down, waiting for the retry interval): in-process state answered."""
    m = _get()
    if m is not None:
        m.redis_fallbacks.labels(_label(component)).inc()
