"""Redis as the shared store of several worker processes: clients, key names, outage tracking.

Redis is optional and never trusted to be up. Every user of it keeps an in-process fallback and an
``Outage``: the first failure logs one warning and switches to the fallback for
``redis_retry_interval`` seconds, the next success logs the recovery. Calls fail fast (short
timeouts, one immediate retry for a stale pooled connection, no exponential back-off) so a dead
Redis costs a request at most ``2 x redis_timeout`` once per interval.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from mcp_server import metrics
from mcp_server.core.settings import Settings

__all__ = ["REDIS_ERRORS", "Outage", "async_client", "key_prefix", "sync_client"]

logger = logging.getLogger(__name__)

# What a down, restarting or misbehaving Redis raises (socket errors come wrapped or bare).
REDIS_ERRORS: tuple[type[BaseException], ...] = (redis.RedisError, OSError)


def key_prefix(settings: Settings) -> str:
    return f"rag:{settings.redis_namespace}:"


def _options(settings: Settings) -> dict[str, object]:
    return {
        "socket_timeout": settings.redis_timeout,
        "socket_connect_timeout": settings.redis_timeout,
        "retry": Retry(NoBackoff(), 1),
        "client_name": "rag-document-server",
    }


def sync_client(settings: Settings) -> redis.Redis:
    """Blocking client for the cache layers (called from worker threads; the pool is thread-safe)."""
    assert settings.redis_url
    return redis.Redis.from_url(settings.redis_url, **_options(settings))


def async_client(settings: Settings) -> redis.asyncio.Redis:
    """Event-loop client for the rate limiter (one per worker process, made inside the lifespan)."""
    assert settings.redis_url
    return redis.asyncio.Redis.from_url(settings.redis_url, **_options(settings))  # type: ignore[arg-type]


class Outage:
    """Is Redis to be tried now? Logs once when an outage starts and once when it ends."""

    def __init__(self, what: str, retry_interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self.retry_interval = retry_interval
        self._clock = clock
        self._retry_at = 0.0
        self.down = False
        self.failures = 0
        self._lock = threading.Lock()

    def should_try(self) -> bool:
        if not self.down or self._clock() >= self._retry_at:
            return True
        metrics.redis_fallback(self.what)
        return False

    def failed(self, exc: BaseException) -> None:
        metrics.redis_failed(self.what)
        with self._lock:
            self.failures += 1
            self._retry_at = self._clock() + self.retry_interval
            if self.down:
                return
            self.down = True
        logger.warning("redis.unavailable", extra={
            "component": self.what, "error": f"{type(exc).__name__}: {exc}", "fallback": "in-process",
            "retry_in_s": self.retry_interval})

    def succeeded(self) -> None:
        if not self.down:
            return
        with self._lock:
            was_down, self.down = self.down, False
        if was_down:
            logger.warning("redis.recovered", extra={"component": self.what})

    @property
    def backend(self) -> str:
        return "memory (redis unavailable)" if self.down else "redis"
