"""The streamable-HTTP ASGI app: /mcp (stateless MCP), /health, /info, /metrics and POST /documents
(uploads, ``server.uploads``), behind the HTTP guard.

``create_app()`` is also the uvicorn factory for ``--workers N`` and ``--reload``: every worker
process builds its own app from the same environment. With ``metrics_port`` set, /metrics leaves
the main port for the scrape-only app of ``metrics_http``.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from mcp_server import SERVER_NAME, __version__, metrics
from mcp_server.core.logging import configure_logging
from mcp_server.core.settings import Settings
from mcp_server.middleware.http import HTTPGuardMiddleware, transport_security_settings
from mcp_server.server.build import RagMCP, create_server
from mcp_server.server.metrics_http import METRICS_PATH, scrape
from mcp_server.server.resources import supported_formats
from mcp_server.server.uploads import UPLOAD_PATH, upload_endpoint
from mcp_server.server.viewer import VIEWER_URI
from mcp_server.subprocesses.processes import ended_with_supervisor
from mcp_server.tools.health import readiness, reported

__all__ = ["create_app"]

HEALTH_CACHE_BUDGET_S = 0.5  # /health answers within a second even when Redis hangs


def create_app(settings: Settings | None = None, server: RagMCP | None = None) -> Starlette:
    settings = settings or Settings()
    configure_logging(settings.log_level, settings.log_dir)
    metrics.configure(settings)
    server = server or create_server(settings)
    mcp_app = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,  # any worker can answer any request (--workers N)
        max_request_body_size=settings.max_request_body_bytes,
        transport_security=transport_security_settings(settings),
        host=settings.host,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            # a worker of --workers or --reload stops when its supervisor is gone (even SIGKILLed)
            with ended_with_supervisor():
                async with server.app_context(), mcp_app.router.lifespan_context(mcp_app):
                    yield
        finally:
            metrics.process_exiting()

    async def health(request: Request) -> JSONResponse:
        context = server.shared_context
        if context is None:
            return JSONResponse({"status": "starting", "ready": False}, status_code=503)
        body: dict[str, Any] | None = None
        with anyio.move_on_after(HEALTH_CACHE_BUDGET_S):
            body = await reported(readiness, context)
        if body is None:
            body = readiness(context, caches=False)
        return JSONResponse(body, status_code=200 if body["ready"] else 503)

    async def info(request: Request) -> JSONResponse:
        return JSONResponse({
            "name": SERVER_NAME,
            "version": __version__,
            "mcp_endpoint": "/mcp",
            "upload_endpoint": UPLOAD_PATH,
            "transport": "streamable-http (stateless)",
            "auth": "bearer" if settings.api_keys else "none",
            "tools": [tool["name"] for tool in server.describe_tools()],
            "resources": ["rag://supported-formats", "rag://tool-descriptions", VIEWER_URI],
            "supported_formats": supported_formats(),
            "pid": os.getpid(),
            "time": time.time(),
        })

    routes = [Route("/health", health, methods=["GET"]), Route("/info", info, methods=["GET"]),
              Route(UPLOAD_PATH, upload_endpoint(lambda: server.shared_context), methods=["POST"])]
    if settings.metrics_enabled and settings.metrics_port is None:
        routes.append(Route(METRICS_PATH, scrape, methods=["GET"]))
    return Starlette(
        routes=[*routes, Mount("/", app=mcp_app)],
        lifespan=lifespan,
        middleware=[Middleware(HTTPGuardMiddleware, settings=settings)],
    )

