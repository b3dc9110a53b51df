"""Prometheus metrics: the instruments, defined once, and one small function per thing recorded.

Every layer records through the functions here (one call per hook site); ``render()`` answers a
scrape. Instruments come from the official ``prometheus_client`` and are created lazily on the first
record after ``configure()``: before that (in-memory test servers, stdio without a metrics port)
every record function returns at once, so importing this module has no side effect beyond
importing the library.

Multi-worker view (``--workers N``): the library's multiprocess mode. Each worker process writes its
values to mmap files in one folder (``PROMETHEUS_MULTIPROC_DIR``, which the library reads itself when
it is imported; the CLI sets it from ``Settings.metrics_multiproc_dir`` before any worker starts),
and a scrape answered by any worker merges every file with ``MultiProcessCollector``: counters and
histograms sum over all workers, dead ones included; the gauges are ``livesum`` (live workers
only). A worker that exits marks itself dead (``mark_process_dead``); uvicorn offers no hook for a
worker that was killed, so a scrape marks dead every process whose files remain but whose pid is
gone. With one in-process worker the instruments live in a private registry served directly.

Labels are low-cardinality by construction: tool names, error codes, stages, layers, backends,
document types and a few fixed words; no hook passes a URL, a query or a client key, and
``_label()`` turns any value that is not a plain name (a URL, a sentence) into "other".
"""

from __future__ import annotations

import functools
import glob
import inspect
import json
import os
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

import psutil
from cachetools import Cache
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    multiprocess,
    values,
)
from prometheus_client.exposition import choose_encoder

from mcp_server.core.settings import Settings

__all__ = [
    "Stage",
    "build_slot",
    "bytes_downloaded",
    "cache_bytes",
    "cache_evicted",
    "cache_idle_trimmed",
    "cache_insert",
    "cache_lookup",
    "flags_found",
    "configure",
    "document_parsed",
    "download_revalidated",
    "enabled",
    "index_build",
    "index_dir_bytes",
    "index_embedded",
    "index_lookup",
    "metric_names",
    "observe_stage",
    "parser_pool_size",
    "parser_task",
    "process_exiting",
    "rate_limited",
    "redis_failed",
    "redis_fallback",
    "render",
    "retrieval",
    "search_timed",
    "timed",
    "tool_calls",
    "upload_answered",
]

P = ParamSpec("P")
R = TypeVar("R")

Stage = Literal["download", "parse", "chunk", "embed", "index_build", "query_embed", "search", "rerank"]

# Tool calls last from milliseconds (warm retrieve) to minutes (a cold 800-page document).
TOOL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
# Stages go down to the sub-millisecond (a BM25 search over a small document).
STAGE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                 120.0, 300.0)

_LABEL = re.compile(r"[A-Za-z0-9_]{1,40}")


def _label(value: str) -> str:
    """A label value only if it looks like a name; a URL, a query or a key becomes 'other'."""
    return value if _LABEL.fullmatch(value) else "other"


class _Instruments:
    """Every exported series, on ``registry`` (the private one; the multiprocess scrape reads files)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str, labels: Iterable[str] = ()) -> Counter:
            return Counter(name, doc, list(labels), registry=registry)

        def histogram(name: str, doc: str, labels: Iterable[str], buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, doc, list(labels), registry=registry, buckets=buckets)

        def gauge(name: str, doc: str, labels: Iterable[str] = ()) -> Gauge:
            # livesum: the sum over the worker processes that are alive now.
            return Gauge(name, doc, list(labels), registry=registry, multiprocess_mode="livesum")

        self.tool_calls = counter("rag_tool_calls_total", "Tool calls by tool and result code (OK or the error code).",
                                  ("tool", "code"))
        self.tool_seconds = histogram("rag_tool_duration_seconds", "Tool call latency, every outcome.", ("tool",),
                                      TOOL_BUCKETS)
        self.stage_seconds = histogram(
            "rag_stage_duration_seconds",
            "Pipeline stage latency: download, parse (in the parser pool, queue wait included), chunk, embed "
            "(document chunks), index_build (embed + index + save), query_embed, search (rerank included), rerank.",
            ("stage",), STAGE_BUCKETS)
        self.cache_lookups = counter("rag_cache_lookups_total", "Cache lookups by layer, backend and result.",
                                     ("layer", "backend", "result"))
        self.cache_evictions = counter("rag_cache_evictions_total",
                                       "Entries evicted to make room, by layer and backend.", ("layer", "backend"))
        self.cache_bytes = gauge("rag_cache_bytes",
                                 "Measured bytes held by the in-memory cache layers (MCP_MEMORY_BUDGET_MB bounds "
                                 "their sum per worker), by layer; summed over the live workers.", ("layer",))
        self.cache_idle_trimmed = counter(
            "rag_cache_idle_trimmed_bytes_total",
            "Bytes the in-memory cache layers gave back while the worker was idle (MCP_IDLE_TRIM_SECONDS), by layer.",
            ("layer",))
        self.index_dir_bytes = Gauge("rag_index_dir_bytes",
                                     "Bytes of committed indexes in the index folder (MCP_INDEX_DIR_MAX_MB bounds it), "
                                     "as last measured by any worker.", registry=registry,
                                     multiprocess_mode="mostrecent")
        self.retrievals = counter("rag_retrievals_total",
                                  "retrieve_chunks answers by document type and index state (warm: no embedding).",
                                  ("doc_type", "index"))
        self.documents_parsed = counter("rag_documents_parsed_total", "Documents parsed successfully, by sniffed type.",
                                        ("doc_type",))
        self.flags = counter("rag_flags_total", "Flags found, by kind: hidden_text and invisible_characters in "
                             "documents parsed, instructions_to_agent in sentences scored.", ("kind",))
        self.index_builds = counter("rag_index_builds_total",
                                    "Index build events: started, coalesced (waited for another build), failed.",
                                    ("event",))
        self.index_builds_in_flight = gauge("rag_index_builds_in_flight",
                                            "Index builds waiting for a build slot or running.", ("state",))
        self.chunks_embedded = counter("rag_chunks_embedded_total", "Document chunks embedded into new indexes.")
        self.download_bytes = counter("rag_download_bytes_total", "Bytes downloaded over HTTP(S) (decoded).")
        self.download_revalidations = counter(
            "rag_download_revalidations_total",
            "Cached downloads checked again after revalidate_after_s: not_modified (a 304 kept the copy), "
            "changed (new bytes), unchanged (downloaded or read again, the same bytes).", ["outcome"])
        self.uploads = counter("rag_uploads_total", "POST /documents answers: stored, too_large, refused.",
                               ["outcome"])
        self.rate_limited = counter("rag_rate_limit_rejections_total",
                                    "Tool calls refused by a rate limit: the client's bucket or the global one.",
                                    ("scope",))
        self.parser_tasks = gauge("rag_parser_pool_tasks", "Parser pool tasks: busy (on a worker) or queued.",
                                  ("state",))
        self.parser_workers = gauge("rag_parser_pool_workers", "Parser worker processes configured.")
        self.redis_errors = counter("rag_redis_errors_total", "Failed Redis calls, by component.", ("component",))
        self.redis_fallbacks = counter("rag_redis_fallbacks_total",
                                       "Operations answered by in-process state because Redis was down.",
                                       ("component",))


def metric_names() -> tuple[str, ...]:
    """Every exported family name (counters without ``_total``), from a throwaway registry; for docs
    and tests (in multiprocess mode it would leave files behind: never call it in a worker)."""
    registry = CollectorRegistry()
    _Instruments(registry)
    return tuple(sorted(family.name for family in registry.collect()))


class _State:
    def __init__(self) -> None:
        self.enabled = False
        self.multiproc_dir: Path | None = None
        self.registry = CollectorRegistry()
        self.instruments: _Instruments | None = None
        self.lock = threading.Lock()
        self.parser_size = 1
        self.parser_in_flight = 0


_state = _State()


def configure(settings: Settings) -> None:
    """Turn recording on or off for this process and say where a scrape reads from.

    Called by every server process at start (the HTTP app, the CLI for stdio and the scrape port).
    """
    directory = settings.metrics_multiproc_dir if settings.metrics_enabled else None
    if directory is not None and not getattr(values.ValueClass, "_multiprocess", False):
        raise RuntimeError("metrics_multiproc_dir is set but prometheus_client was imported without "
                           "PROMETHEUS_MULTIPROC_DIR: start the server with `python -m mcp_server`")
    # *_created series exist only without multiprocess mode: leave them out so that one worker and
    # N workers export the same names.
    disable_created_metrics()
    _state.multiproc_dir = directory
    _state.enabled = settings.metrics_enabled


def enabled() -> bool:
    return _state.enabled


def _get() -> _Instruments | None:
    if not _state.enabled:
        return None
    instruments = _state.instruments
    if instruments is None:
        with _state.lock:
            if _state.instruments is None:  # created once per process, kept across configure() calls
                _state.instruments = _Instruments(_state.registry)
            instruments = _state.instruments
    return instruments


# --- scrape -------------------------------------------------------------------------------
def render(accept: str | None = None) -> tuple[bytes, str]:
    """(body, content type) of a scrape in the format the scraper asked for. Blocking (file reads)."""
    encoder, content_type = choose_encoder(accept or "")
    directory = _state.multiproc_dir
    if directory is None:
        _get()  # a first scrape lists every family, even before anything was recorded
        return encoder(_state.registry), content_type
    _forget_dead_processes(directory)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(directory))
    return encoder(registry), content_type


_PID_FILE = re.compile(r"gauge_live\w+?_(\d+)\.db")


def _forget_dead_processes(directory: Path) -> None:
    """mark_process_dead for workers that died without saying so (SIGKILL, OOM): uvicorn replaces
    them but, unlike gunicorn, has no child_exit hook to call it from."""
    pids = set()
    for path in glob.glob(os.path.join(directory, "gauge_live*.db")):
        found = _PID_FILE.fullmatch(os.path.basename(path))
        if found:
            pids.add(int(found.group(1)))
    for pid in pids:
        if not psutil.pid_exists(pid):
            multiprocess.mark_process_dead(pid, str(directory))


def process_exiting() -> None:
    """A worker shutting down takes its live gauges with it (the library's mark_process_dead)."""
    if _state.multiproc_dir is not None:
        multiprocess.mark_process_dead(os.getpid(), str(_state.multiproc_dir))


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
