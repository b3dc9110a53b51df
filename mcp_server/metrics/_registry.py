"""The instruments, created once per process on the first record after ``configure()``, and the
scrape that reads them (this process's registry, or every worker's files in multiprocess mode)."""

from __future__ import annotations

import glob
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import psutil
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


