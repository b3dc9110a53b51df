"""RedisIndexStore against a private redis-server: entries, leases, namespaces, outage."""

from __future__ import annotations

import time

from mcp_server.encoders import FakeEmbedder
from mcp_server.indexes import IndexStore
from mcp_server.indexes.store import INDEX_FILE
from mcp_server.redis.index_store import RedisIndexStore
from mcp_server.redis.store import Outage, sync_client
from mcp_server.retrieval import DocumentIndex
from tests.mcp_harness import free_port, make_settings
from tests.multiworker.conftest import RedisServer
from tests.retrieval._chunks import make_chunks

TEXTS = ["Kelp forests shelter fish.", "Lighthouses guide ships at night.", "Moss grows on the north side."]


def store(url: str, namespace: str = "default", retry: float = 5) -> RedisIndexStore:
    settings = make_settings(redis_url=url, redis_namespace=namespace, redis_timeout=0.5)
    return RedisIndexStore(sync_client(settings), prefix=f"rag:{namespace}:", ttl=60,
                           outage=Outage("index", retry))


def exported(tmp_path: str) -> tuple[dict[str, object], dict[str, bytes]]:
    local = IndexStore(tmp_path)
    local.save("k", DocumentIndex.embed(make_chunks(TEXTS), FakeEmbedder()), chunker_version="1")
    entry = local.export("k")
    assert entry is not None
    return entry


def test_an_entry_round_trips_and_only_its_namespace_sees_it(redis_server: RedisServer, tmp_path: str) -> None:
    manifest, blobs = exported(tmp_path)
    one, other = store(redis_server.url), store(redis_server.url, namespace="other")
    assert one.put("k", manifest, blobs) and one.exists("k")
    assert one.get("k") == (manifest, blobs)
    assert other.get("k") is None and not other.exists("k")
    raw = redis_server.client()
    assert 0 < raw.pttl("rag:default:index:v1:e:k") <= 60_000
    assert not [k for k in raw.keys("*") if b"pickle" in k]
    assert one.clear() == 1 and one.get("k") is None


def test_a_lease_is_held_by_one_token_renewed_by_it_and_lapses_when_not(redis_server: RedisServer) -> None:
    a, b = store(redis_server.url), store(redis_server.url)
    assert a.acquire("k", "ta", 0.3) is True
    assert b.acquire("k", "tb", 0.3) is False
    assert b.renew("k", "tb", 5) is False and a.renew("k", "ta", 0.3) is True
    b.release("k", "tb")  # not its lease: nothing happens
    assert b.acquire("k", "tb", 0.3) is False
    deadline = time.monotonic() + 5
    while not b.acquire("k", "tb", 5):  # a's lease lapses without renewal; bounded poll
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert a.renew("k", "ta", 5) is False  # taken over: a no longer holds it
    b.release("k", "tb")
    assert a.acquire("k", "ta", 5) is True


def test_a_damaged_entry_is_moved_aside_and_misses(redis_server: RedisServer, tmp_path: str) -> None:
    manifest, blobs = exported(tmp_path)
    one = store(redis_server.url)
    one.put("k", manifest, blobs)
    redis_server.client().hset("rag:default:index:v1:e:k", "manifest", b"{not json")
    assert one.get("k") is None and not one.exists("k")
    assert redis_server.client().keys("rag:default:index:v1:corrupt:k:*")
    assert one.backend == "redis"  # a bad entry is not an outage


def test_with_redis_down_reads_miss_writes_skip_and_the_lease_says_unknown(tmp_path: str) -> None:
    manifest, blobs = exported(tmp_path)
    down = store(f"redis://127.0.0.1:{free_port()}/0", retry=60)
    assert down.get("k") is None and down.put("k", manifest, blobs) is False
    assert down.acquire("k", "t", 5) is None and down.renew("k", "t", 5) is False
    assert down.backend == "memory (redis unavailable)"
    failures = down.outage.failures
    assert down.exists("k") is False and down.outage.failures == failures  # within the retry interval: not tried


def test_an_entry_is_replaced_whole(redis_server: RedisServer, tmp_path: str) -> None:
    manifest, blobs = exported(tmp_path)
    one = store(redis_server.url)
    one.put("k", manifest, blobs)
    one.put("k", {**manifest, "created": 1.0}, {**blobs, INDEX_FILE: b"other"})
    got = one.get("k")
    assert got is not None and got[0]["created"] == 1.0 and got[1][INDEX_FILE] == b"other"
