"""The Redis-backed rate limiter and cache layers, two instances standing in for two workers."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest
import redis

from mcp_server.core.errors import RateLimitError
from mcp_server.core.models import (
    ExtractedImage,
    ExtractedTable,
    ExtractedURL,
    FetchedDocument,
    Location,
    ProcessedDocument,
)
from mcp_server.core.settings import Settings
from mcp_server.redis.cache import RedisLayer, redis_layers
from mcp_server.redis.ratelimit import RedisRateLimiter
from mcp_server.redis.store import async_client, sync_client
from tests.mcp_harness import free_port, make_settings
from tests.multiworker.conftest import RedisServer

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def limiters(settings: Settings, count: int = 2) -> AsyncIterator[list[RedisRateLimiter]]:
    clients = [async_client(settings) for _ in range(count)]
    try:
        yield [RedisRateLimiter(settings, client) for client in clients]
    finally:
        for client in clients:
            await client.aclose()


async def outcomes(limiter_list: list[RedisRateLimiter], client: str, requests: int) -> list[str]:
    """Round-robin over the 'workers': 'ok', 'client' or 'global' per request."""
    out = []
    for i in range(requests):
        try:
            await limiter_list[i % len(limiter_list)].check(client)
            out.append("ok")
        except RateLimitError as exc:
            out.append("global" if "global" in exc.message else "client")
            assert exc.details["retry_after"] > 0
    return out


async def test_a_client_gets_its_per_minute_budget_once_across_two_workers(redis_server: RedisServer) -> None:
    settings = make_settings(redis_url=redis_server.url, rate_limit_rpm=6, global_rate_multiplier=100)
    async with limiters(settings) as two:
        got = await outcomes(two, "ip:10.0.0.1", 9)
        assert got.count("ok") == 6 and got.count("client") == 3
        assert await outcomes(two, "ip:10.0.0.2", 1) == ["ok"]  # another client has its own bucket


async def test_the_global_budget_is_exact_across_workers_and_spares_the_client_token(
    redis_server: RedisServer,
) -> None:
    settings = make_settings(redis_url=redis_server.url, rate_limit_rpm=4, global_rate_multiplier=1.5)
    async with limiters(settings, 3) as three:
        first = await outcomes(three, "key:a", 4)
        second = await outcomes(three, "key:b", 4)
        assert first == ["ok"] * 4
        assert second == ["ok", "ok", "global", "global"]  # 6 = 1.5 x 4 in total
        # key:b was refused by the global bucket, so its own bucket still holds 2 tokens: Redis says so.
        tokens = float(redis_server.client().hget("rag:default:ratelimit:client:key:b", "tokens") or 0)
        assert 1.9 < tokens <= 2.1
        assert three[0].stats()["backend"] == "redis"


async def test_a_multi_document_call_takes_its_cost_from_the_shared_bucket(redis_server: RedisServer) -> None:
    settings = make_settings(redis_url=redis_server.url, rate_limit_rpm=5, global_rate_multiplier=100)
    async with limiters(settings) as two:
        await two[0].check("ip:10.0.0.3", cost=3)
        with pytest.raises(RateLimitError) as caught:
            await two[1].check("ip:10.0.0.3", cost=3)  # the other worker sees 2 left
        assert 11.0 < caught.value.details["retry_after"] <= 12.5  # one more token at 5 per minute
        await two[1].check("ip:10.0.0.3", cost=2)
        await two[0].check("ip:10.0.0.4", cost=50)  # more than a bucket: takes the full bucket
        assert await outcomes(two, "ip:10.0.0.4", 1) == ["client"]


async def test_idle_client_buckets_expire_in_redis(redis_server: RedisServer) -> None:
    settings = make_settings(redis_url=redis_server.url, rate_limit_rpm=60)
    async with limiters(settings, 1) as one:
        await one[0].check("ip:10.0.0.9")
    ttl_ms = redis_server.client().pttl("rag:default:ratelimit:client:ip:10.0.0.9")
    assert 0 < ttl_ms <= 2_100  # one token short of full refills in 1 s, plus a second of slack


async def test_the_limiter_falls_back_in_process_when_redis_is_down_and_logs_it_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = make_settings(redis_url=f"redis://127.0.0.1:{free_port()}/0", rate_limit_rpm=3,
                             redis_retry_interval=60)
    with caplog.at_level(logging.WARNING, logger="mcp_server.redis.store"):
        async with limiters(settings, 1) as one:
            got = await outcomes(one, "ip:10.0.0.1", 4)
            assert got == ["ok", "ok", "ok", "client"]  # the in-process bucket enforces the same rpm
            assert one[0].stats()["backend"] == "memory (redis unavailable)"
    assert [r.message for r in caplog.records].count("redis.unavailable") == 1


async def test_the_limiter_returns_to_redis_when_it_comes_back(redis_server: RedisServer) -> None:
    settings = make_settings(redis_url=redis_server.url, rate_limit_rpm=100, redis_retry_interval=0)
    async with limiters(settings, 1) as one:
        await one[0].check("c")
        redis_server.kill()
        await one[0].check("c")
        assert one[0].stats()["backend"] == "memory (redis unavailable)"
        redis_server.start()
        await one[0].check("c")
        assert one[0].stats()["backend"] == "redis"


# --- cache layers -------------------------------------------------------------------------


@pytest.fixture
def settings(redis_server: RedisServer) -> Settings:
    return make_settings(redis_url=redis_server.url, cache_max_downloads=3, cache_max_download_bytes=1000,
                         cache_max_documents=3, redis_retry_interval=0)


def two_workers(settings: Settings) -> Iterator[tuple[RedisLayer[FetchedDocument], RedisLayer[ProcessedDocument]]]:
    for _ in range(2):
        yield redis_layers(settings, sync_client(settings))


RICH = ProcessedDocument(
    content="# Title\n\nbody", doc_type="docx", metadata={"title": "T", "pages": 2, "nested": {"a": [1, 2]}},
    tables=(ExtractedTable(content="|a|b|", location="page 1", metadata={"rows": 1}),),
    images=(ExtractedImage(ocr_text="hello", confidence=91.5, source="page 2"),),
    extracted_urls=(ExtractedURL(url="https://example.org", context="see", url_type="general"),),
    detected_language="de",
    locations=(Location(start=0, end=7, page=1, heading_path=("Title",)), Location(start=7, end=13, page=2)),
)


def test_a_document_put_by_one_worker_is_an_equal_hit_on_another(settings: Settings) -> None:
    (downloads_a, documents_a), (downloads_b, documents_b) = two_workers(settings)
    fetched = FetchedDocument(data=b"\x00\x01binary\n\xff", url="http://x/a.pdf", final_url="http://x/b.pdf",
                              content_type="application/pdf", charset=None, filename="b.pdf")
    downloads_a.put(fetched.url, fetched)
    documents_a.put("key1", RICH)
    assert downloads_b.get(fetched.url) == fetched
    assert documents_b.get("key1") == RICH
    assert documents_b.get("absent") is None
    stats = documents_a.stats()  # counted in Redis: worker A sees worker B's lookups
    assert (stats["backend"], stats["entries"], stats["hits"], stats["misses"]) == ("redis", 1, 1, 1)


def test_the_entry_and_byte_caps_evict_the_oldest_across_workers(settings: Settings) -> None:
    (downloads_a, _), (downloads_b, _) = two_workers(settings)

    def doc(name: str, size: int) -> FetchedDocument:
        return FetchedDocument(data=b"x" * size, url=name, final_url=name)

    for i, layer in enumerate([downloads_a, downloads_b, downloads_a, downloads_b]):
        layer.put(f"u{i}", doc(f"u{i}", 10))
    assert downloads_a.get("u0") is None and downloads_b.get("u3") is not None  # 3 entries kept
    downloads_a.put("big", doc("big", 800))  # over 1000 bytes with the others (headers count too): oldest go
    stats = downloads_b.stats()
    assert stats["entries"] <= 2 and int(stats["bytes"]) <= 1000  # type: ignore[call-overload]
    assert downloads_b.get("big") is not None
    downloads_a.put("huge", doc("huge", 5000))  # larger than the layer: not cached at all
    assert downloads_b.get("huge") is None


def test_clear_empties_the_shared_layer_but_not_another_namespace(
    settings: Settings, redis_server: RedisServer,
) -> None:
    other = make_settings(redis_url=redis_server.url, redis_namespace="other")
    (_, documents_a), (_, documents_b) = two_workers(settings)
    _, documents_other = redis_layers(other, sync_client(other))
    documents_a.put("k", RICH)
    documents_other.put("k", RICH)
    assert documents_b.clear() == 1
    assert documents_a.get("k") is None
    assert documents_other.get("k") == RICH


def test_an_undecodable_value_is_a_miss_never_an_error(settings: Settings, redis_server: RedisServer) -> None:
    (_, documents), _ = two_workers(settings)
    documents.put("k", RICH)
    client = redis_server.client()
    for key in client.scan_iter("rag:default:cache:document:v1:e:*"):
        client.set(key, b"{not json")
    assert documents.get("k") is None


def test_cache_layers_fall_back_to_memory_while_redis_is_down_and_return(
    settings: Settings, redis_server: RedisServer,
) -> None:
    (_, documents), _ = two_workers(settings)
    redis_server.kill()
    documents.put("k", RICH)  # kept in this worker's memory meanwhile
    assert documents.get("k") == RICH
    assert documents.stats()["backend"] == "memory (redis unavailable)"
    redis_server.start()
    assert documents.get("k") is None  # Redis again (retry interval 0), which is empty after restart
    assert documents.stats()["backend"] == "redis"


def test_values_in_redis_are_json_not_pickle(settings: Settings, redis_server: RedisServer) -> None:
    (downloads, documents), _ = two_workers(settings)
    documents.put("k", RICH)
    downloads.put("u", FetchedDocument(data=b"%PDF-1.7", url="u", final_url="u"))
    client: redis.Redis = redis_server.client()
    values = [client.get(key) for key in client.scan_iter("rag:default:cache:*:e:*")]
    assert len(values) == 2
    for value in values:
        assert value is not None and not value.startswith(b"\x80")  # pickle protocol 2+ header
        assert value.startswith(b"{")
