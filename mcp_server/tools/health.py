"""Health reports: the quick readiness answer for GET /health and the full one for the tool."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from typing import Any

import psutil

from mcp_server import SERVER_NAME, __version__
from mcp_server.core.concurrency import off_loop
from mcp_server.processors import converter_available, supported_formats
from mcp_server.processors.ocr import ocr_available
from mcp_server.text.language import language_detection_available
from mcp_server.tools.context import AppContext

__all__ = ["cache_stats", "readiness", "reported", "shared_store", "system_health"]


async def reported(report: Callable[[AppContext], dict[str, Any]], context: AppContext) -> dict[str, Any]:
    """A report made in a worker thread: cache sizes and counts may ask a shared store (Redis),
    merging workers' files reads the disk. The reports' one thread hop."""
    return await off_loop(report, context)


def cache_stats(context: AppContext) -> dict[str, Any]:
    """manage_cache(action="stats"): every cache layer's counts and sizes."""
    return context.service.stats()


def _worker() -> dict[str, Any]:
    return {"pid": os.getpid(), "rss_mb": round(psutil.Process().memory_info().rss / 2**20, 1)}


def shared_store(context: AppContext) -> dict[str, Any]:
    """Where limits and caches live: "memory" (one worker), "redis" (all workers), or
    "memory (redis unavailable)" while REDIS_URL is set but Redis does not answer. No I/O."""
    service = context.service
    return {
        "redis_configured": bool(context.settings.redis_url),
        "rate_limit": getattr(context.limiter, "backend", "memory"),
        "download": getattr(service.downloads, "backend", "memory"),
        "document": getattr(service.documents, "backend", "memory"),
        "index": service.indexes.tiers.backend,
    }


def readiness(context: AppContext, *, caches: bool = True) -> dict[str, Any]:
    """Cheap: /health must answer within a second even while parsers are busy. Cache sizes may
    ask a shared store, so GET /health runs this in a thread and drops them if it is slow."""
    service = context.service
    return {
        "status": "ok",
        "ready": True,  # the lifespan loaded the models before the server accepted connections
        "version": __version__,
        "uptime_s": round(time.time() - context.started_at, 1),
        "models": "fake" if context.models_fake else "loaded",
        "cache_entries": {
            "download": service.downloads.stats().get("entries"),
            "document": service.documents.stats().get("entries"),
            "index": service.indexes.stats().get("entries"),
        } if caches else "unavailable (the shared store is slow to answer)",
        "shared_store": shared_store(context),
        "worker": _worker(),
    }


def system_health(context: AppContext) -> dict[str, Any]:
    models = context.models.health()
    features = {
        "RERANK_AVAILABLE": context.models.rerank_available,
        "OCR_AVAILABLE": ocr_available(),
        "LANG_DETECT_AVAILABLE": language_detection_available(),
        "OFFICE_CONVERTER_AVAILABLE": converter_available(context.settings.office_command),
    }
    degraded = [role for role, status in models.get("roles", {}).items() if status.get("fallback")]
    settings = context.settings
    return {
        "status": "degraded" if (degraded or context.models_fake) else "healthy",
        "name": SERVER_NAME,
        "version": __version__,
        "uptime_s": round(time.time() - context.started_at, 1),
        "features": features,
        "models": {**models, "fake": context.models_fake},
        "device": models.get("device", "cpu"),
        "supported_formats": [entry.doc_type for entry in supported_formats()],
        "cache": context.service.stats(),
        "rate_limit": context.limiter.stats(),
        "shared_store": shared_store(context),
        "security": {
            "auth": "bearer" if settings.api_keys else "none",
            "fetch_allowlist": list(settings.fetch_allowlist),
            "document_roots": list(settings.document_roots),
            "max_download_bytes": settings.max_download_bytes,
            # how many hosts have headers, never which headers nor their values
            "private_host_rules": len(settings.fetch_headers),
            "revalidate_after_s": settings.revalidate_after_s,
            "upload_ttl_s": settings.upload_ttl,
        },
        "worker": _worker(),
        "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
