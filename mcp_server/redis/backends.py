"""With ``REDIS_URL`` set: the rate limiter, the download/document cache layers, the uploaded
documents and (with ``MCP_INDEX_STORE=redis``) the shared index store in Redis.

Opened by the lifespan of every worker process. Redis being down here is not an error: the
backends start in their in-process fallback, say so in the log and in health, and try Redis again
after ``redis_retry_interval``.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from dataclasses import dataclass

from mcp_server.caches.registry import layer_bounds, memory_layer
from mcp_server.core.failures import FailedParse, FailureCodec
from mcp_server.core.models import FetchedDocument, ProcessedDocument
from mcp_server.core.settings import Settings
from mcp_server.fetch import DiskUploads
from mcp_server.redis.cache import RedisLayer, redis_layers, redis_uploads
from mcp_server.redis.index_store import RedisIndexStore
from mcp_server.redis.ratelimit import RedisRateLimiter
from mcp_server.redis.store import REDIS_ERRORS, async_client, key_prefix, sync_client

__all__ = ["RedisBackends", "open_redis_backends"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class RedisBackends:
    limiter: RedisRateLimiter
    downloads: RedisLayer[FetchedDocument]
    documents: RedisLayer[ProcessedDocument]
    failures: RedisLayer[FailedParse]
    indexes: RedisIndexStore | None  # with MCP_INDEX_STORE=redis
    uploads: RedisLayer[FetchedDocument]  # POST /documents, for every host (the upload folder while down)



async def open_redis_backends(settings: Settings, stack: AsyncExitStack) -> RedisBackends:
    """Clients are closed by ``stack``; the URL (it may hold a password) is never logged."""
    aclient = async_client(settings)
    stack.push_async_callback(aclient.aclose)
    sclient = sync_client(settings)
    stack.callback(sclient.close)
    downloads, documents = redis_layers(settings, sclient)
    bounds = layer_bounds(settings)["failure"]
    failures = RedisLayer(
        "failure", sclient, FailureCodec(), prefix=key_prefix(settings), max_entries=bounds.max_entries,
        ttl=bounds.ttl, outage=downloads.outage, fallback=memory_layer("failure", settings),
    )
    indexes = (RedisIndexStore(sclient, prefix=key_prefix(settings), ttl=settings.index_store_ttl,
                               outage=downloads.outage) if settings.index_store == "redis" else None)
    uploads = redis_uploads(settings, sclient, downloads.outage, DiskUploads(settings))
    backends = RedisBackends(limiter=RedisRateLimiter(settings, aclient), downloads=downloads,
                             documents=documents, failures=failures, indexes=indexes, uploads=uploads)
    try:
        await aclient.ping()
    except REDIS_ERRORS as exc:
        backends.limiter.outage.failed(exc)
        downloads.outage.failed(exc)
    else:
        logger.info("redis.connected", extra={"namespace": key_prefix(settings)})
    return backends
