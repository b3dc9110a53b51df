"""``AppContext``: the long-lived resources of one server process, as the tools read them from ``ctx``.

Declared here, where it is read, and built by the server's lifespan (``server.lifespan``), so that
no tool module imports the server.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mcp_server.core.settings import Settings
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.middleware.guard import ToolGuard
from mcp_server.middleware.ratelimit import RateLimiter
from mcp_server.pipeline.reading import Reading
from mcp_server.pipeline.service import DocumentService

__all__ = ["AppContext"]


@dataclass(kw_only=True)
class AppContext:
    settings: Settings
    limiter: RateLimiter
    guard: ToolGuard
    models: ModelRegistry
    service: DocumentService
    reading: Reading  # read_document, verify_quote, get_page_image: on the service, with their own caches
    started_at: float = field(default_factory=time.time)
    models_fake: bool = False
