"""Health reports: the quick readiness answer for GET /health and the full one for the tool."""

from __future__ import annotations

import time
from typing import Any

from mcp_server import __version__
from mcp_server.context import AppContext

__all__ = ["readiness"]


def readiness(context: AppContext) -> dict[str, Any]:
    """Cheap and non-blocking: /health must answer within a second even while parsers are busy."""
    return {
        "status": "ok",
        "ready": True,
        "version": __version__,
        "uptime_s": round(time.time() - context.started_at, 1),
    }
