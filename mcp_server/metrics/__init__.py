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

from mcp_server.metrics._record import (
    build_slot,
    bytes_downloaded,
    cache_bytes,
    cache_evicted,
    cache_idle_trimmed,
    cache_insert,
    cache_lookup,
    document_parsed,
    download_revalidated,
    flags_found,
    index_build,
    index_dir_bytes,
    index_embedded,
    index_lookup,
    observe_stage,
    parser_pool_size,
    parser_task,
    rate_limited,
    redis_failed,
    redis_fallback,
    retrieval,
    search_timed,
    timed,
    tool_calls,
    upload_answered,
)
from mcp_server.metrics._registry import Stage, configure, enabled, metric_names, process_exiting, render

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
