"""The long-lived resources of one server process, opened and closed by a lifespan."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from mcp_server.core.settings import Settings
from mcp_server.middleware.guard import ToolGuard
from mcp_server.middleware.ratelimit import InProcessRateLimiter, RateLimiter

__all__ = ["AppContext", "open_app_context"]

logger = logging.getLogger(__name__)


@dataclass(kw_only=True)
class AppContext:
    settings: Settings
    limiter: RateLimiter
    guard: ToolGuard
    started_at: float = field(default_factory=time.time)
    services: dict[str, Any] = field(default_factory=dict)


@asynccontextmanager
async def open_app_context(settings: Settings) -> AsyncIterator[AppContext]:
    limiter = InProcessRateLimiter(settings)
    context = AppContext(settings=settings, limiter=limiter, guard=ToolGuard(settings, limiter))
    logger.info("server.ready")
    yield context
