"""Two hosts behind one load balancer: two server processes with their own index folders and one
Redis (``MCP_INDEX_STORE=redis``). One build per document for the deployment, a killed builder's
lease lapsing, and both hosts answering on their own when Redis is gone."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from tests.conftest import FileServer
from tests.mcp_harness import scratch_dir, server_process
from tests.multiworker.conftest import RedisServer
from tests.multiworker.test_multiworker import call

pytestmark = pytest.mark.anyio

QUERY = {"query": "When was the club founded?"}
LEASES = "rag:default:index:v1:lease:*"
ENTRIES = "rag:default:index:v1:e:*"


@contextlib.contextmanager
def two_hosts(redis_url: str, **extra: str) -> Iterator[list[tuple[Any, str]]]:
    """Two fake-model servers, each with its own index folder, sharing indexes through Redis."""
    with contextlib.ExitStack() as stack:
        hosts = []
        for _ in range(2):
            env = {"MCP_LOAD_MODELS": "false", "MCP_REDIS_URL": redis_url, "MCP_INDEX_STORE": "redis",
                   "MCP_INDEX_DIR": str(scratch_dir("rag-multihost-index-")),
                   "MCP_FETCH_ALLOWLIST": "127.0.0.1", "MCP_RATE_LIMIT_RPM": "100000", **extra}
            hosts.append(stack.enter_context(server_process([], env=env)))
        yield hosts


async def index_stats(base: str) -> dict[str, Any]:
    good, stats = await call(base, "manage_cache", {"action": "stats"})
    assert good, stats
    return dict(stats["layers"]["index"])


async def test_a_document_asked_on_two_hosts_at_once_is_embedded_once_and_loaded_by_the_other(
    redis_server: RedisServer, corpus_server: FileServer,
) -> None:
    url = corpus_server.url("docs/txt/norwich-city.txt")
    with two_hosts(redis_server.url) as hosts:
        answers: list[dict[str, Any]] = []

        async def ask(base: str) -> None:
            good, body = await call(base, "retrieve_chunks", {"document_url": url, **QUERY})
            assert good, body
            answers.append(body)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tasks:
                for _, base in hosts:
                    tasks.start_soon(ask, base)
        stats = [await index_stats(base) for _, base in hosts]
        assert sum(s["builds"] for s in stats) == 1, stats
        assert sum(s["shared"]["shared_hits"] for s in stats) == 1, stats  # the other host loaded it
        assert sum(s["shared"]["shared_published"] for s in stats) == 1
        assert answers[0]["results"] == answers[1]["results"]
        assert len(redis_server.client().keys(ENTRIES)) == 1 and not redis_server.client().keys(LEASES)
        good, health = await call(hosts[0][1], "get_system_health", {})
        assert good and health["shared_store"]["index"].startswith("redis (shared by hosts")


async def test_a_builder_killed_mid_build_leaves_a_lease_that_lapses_and_the_other_host_builds(
    redis_server: RedisServer, corpus_server: FileServer,
) -> None:
    url = corpus_server.url("docs/txt/book-war-and-peace-1225p.txt")  # seconds to embed even with fakes
    client = redis_server.client()
    with two_hosts(redis_server.url, MCP_INDEX_LEASE_SECONDS="10") as ((builder, base_a), (_, base_b)):
        with anyio.fail_after(240):
            async with anyio.create_task_group() as tasks:

                async def doomed() -> None:
                    with contextlib.suppress(Exception):  # its server dies under it
                        await call(base_a, "retrieve_chunks", {"document_url": url, **QUERY})

                tasks.start_soon(doomed)
                while not client.keys(LEASES):  # host A took the lease: it is embedding now
                    await anyio.sleep(0.005)
                os.killpg(builder.pid, signal.SIGKILL)
                tasks.cancel_scope.cancel()
            assert not client.keys(ENTRIES), "the build finished before the kill: nothing was tested"
            assert client.keys(LEASES)  # the dead builder's lease is still there
            good, body = await call(base_b, "retrieve_chunks", {"document_url": url, **QUERY})
        assert good and body["results"], body
        stats = await index_stats(base_b)
        assert stats["builds"] == 1 and stats["shared"]["lease_waits"] == 1, stats
        assert len(client.keys(ENTRIES)) == 1 and not client.keys(LEASES)


async def test_with_redis_gone_each_host_builds_on_its_own_and_still_answers(
    redis_server: RedisServer, corpus_server: FileServer,
) -> None:
    url = corpus_server.url("docs/html/what_is_haystack.html")
    with two_hosts(redis_server.url, MCP_REDIS_RETRY_INTERVAL="60") as hosts:
        redis_server.kill()
        for _, base in hosts:
            with anyio.fail_after(60):
                good, body = await call(base, "retrieve_chunks", {"document_url": url, "query": "What is Haystack?"})
            assert good and body["results"], body
            stats = await index_stats(base)
            assert stats["builds"] == 1 and stats["shared"]["unshared_builds"] == 1, stats
            good, health = await call(base, "get_system_health", {})
            assert good and health["shared_store"]["index"].startswith("disk (shared store unavailable"), health
