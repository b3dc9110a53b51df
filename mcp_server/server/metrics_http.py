"""GET /metrics: the endpoint of the main app and the scrape-only app of ``metrics_port``.

Kept apart from ``app.py`` so the ``--workers N`` supervisor, which serves ``metrics_port`` itself
(it outlives every worker and reads their files), does not import the models, FAISS and parsers.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mcp_server import metrics
from mcp_server.core.concurrency import off_loop
from mcp_server.core.settings import Settings
from mcp_server.middleware.http import HTTPGuardMiddleware

__all__ = ["METRICS_PATH", "create_metrics_app", "scrape"]

METRICS_PATH = "/metrics"


async def scrape(request: Request) -> Response:
    """Prometheus text (OpenMetrics if the scraper asks); merging the workers' files is file I/O: off the loop."""
    body, content_type = await off_loop(metrics.render, request.headers.get("accept"))
    return Response(body, headers={"Content-Type": content_type})


def create_metrics_app(settings: Settings) -> Starlette:
    """/metrics alone, behind the same guard as the main port (bearer keys; Host checks for its own bind)."""
    metrics.configure(settings)
    guard_settings = settings.model_copy(update={"host": settings.metrics_host})
    return Starlette(routes=[Route(METRICS_PATH, scrape, methods=["GET"])],
                     middleware=[Middleware(HTTPGuardMiddleware, settings=guard_settings)])
