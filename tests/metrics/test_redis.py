"""Redis-backed caches and limits: lookups and evictions in Redis, errors and fallbacks while it is down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcp_server import metrics
from mcp_server.core.errors import RateLimitError
from mcp_server.core.models import FetchedDocument
from mcp_server.redis.cache import redis_layers
from mcp_server.redis.ratelimit import RedisRateLimiter
from mcp_server.redis.store import async_client, sync_client
from tests.mcp_harness import make_settings
from tests.metrics._helpers import Series, delta, parse
from tests.multiworker.conftest import RedisServer, running_redis

pytestmark = pytest.mark.anyio


def snapshot() -> dict[Series, float]:
    return parse(metrics.render()[0].decode())


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    metrics.configure(make_settings())
    with running_redis() as server:
        yield server


def doc(name: str) -> FetchedDocument:
    return FetchedDocument(data=b"x" * 10, url=name, final_url=name)


def test_redis_cache_lookups_and_evictions_are_counted_as_redis(redis_server: RedisServer) -> None:
    settings = make_settings(redis_url=redis_server.url, cache_max_downloads=2)
    downloads, _ = redis_layers(settings, sync_client(settings))
    before = snapshot()
    downloads.get("u0")
    for name in ("u0", "u1", "u2"):  # the third put evicts the oldest
        downloads.put(name, doc(name))
    downloads.get("u2")
    after = snapshot()
    assert delta(after, before, "rag_cache_lookups_total", layer="download", backend="redis", result="miss") == 1
    assert delta(after, before, "rag_cache_lookups_total", layer="download", backend="redis", result="hit") == 1
    assert delta(after, before, "rag_cache_evictions_total", layer="download", backend="redis") == 1
    assert delta(after, before, "rag_cache_lookups_total", layer="download", backend="memory") == 0


async def test_redis_errors_and_fallbacks_are_counted_per_component(redis_server: RedisServer) -> None:
    settings = make_settings(redis_url=redis_server.url, redis_retry_interval=60, rate_limit_rpm=1)
    downloads, _ = redis_layers(settings, sync_client(settings))
    client = async_client(settings)
    limiter = RedisRateLimiter(settings, client)
    redis_server.kill()
    before = snapshot()
    try:
        await limiter.check("ip:1")  # fails: an error, answered in process
        with pytest.raises(RateLimitError):
            await limiter.check("ip:1")  # not tried for 60 s: a fallback, and the in-process limit holds
    finally:
        await client.aclose()
    downloads.put("u", doc("u"))  # fails
    assert downloads.get("u") == doc("u")  # not tried: this worker's memory answers
    after = snapshot()
    assert delta(after, before, "rag_redis_errors_total", component="rate_limit") == 1
    assert delta(after, before, "rag_redis_fallbacks_total", component="rate_limit") == 2
    assert delta(after, before, "rag_redis_errors_total", component="cache") == 1
    assert delta(after, before, "rag_redis_fallbacks_total", component="cache") == 2
    assert delta(after, before, "rag_cache_lookups_total", layer="download", backend="memory", result="hit") == 1
    assert delta(after, before, "rag_rate_limit_rejections_total", scope="client") == 1
