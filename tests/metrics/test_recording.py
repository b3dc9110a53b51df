"""The record functions at their hook sites, without HTTP: index builds, caches, limits, parser pool."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from cachetools import TTLCache

from mcp_server import metrics
from mcp_server.caches.layers import MemoryLayer
from mcp_server.core.errors import RateLimitError
from mcp_server.core.settings import Settings
from mcp_server.embedding import ModelRegistry
from mcp_server.indexes import IndexManager
from mcp_server.middleware.ratelimit import InProcessRateLimiter
from tests.mcp_harness import make_settings
from tests.metrics._helpers import Series, delta, parse, value
from tests.retrieval._chunks import make_chunks

pytestmark = pytest.mark.anyio

TEXTS = [f"Paragraph {i} tells about {word}." for i, word in enumerate(["apples", "rivers", "engines", "tigers"])]


def snapshot() -> dict[Series, float]:
    return parse(metrics.render()[0].decode())


@pytest.fixture(autouse=True)
def recording() -> Iterator[None]:
    metrics.configure(make_settings())
    yield


def test_a_label_that_is_not_a_name_becomes_other() -> None:
    before = snapshot()
    metrics.retrieval("http://example.com/secret?q=1", warm=True)
    metrics.document_parsed("a query with spaces")
    after = snapshot()
    assert delta(after, before, "rag_retrievals_total", doc_type="other", index="warm") == 1
    assert delta(after, before, "rag_documents_parsed_total", doc_type="other") == 1
    assert "example.com" not in metrics.render()[0].decode()


def test_nothing_is_recorded_while_switched_off() -> None:
    metrics.configure(make_settings(metrics_enabled=False))
    before = snapshot()
    metrics.rate_limited("client")
    metrics.configure(make_settings())
    assert delta(snapshot(), before, "rag_rate_limit_rejections_total") == 0


def test_a_multiprocess_folder_without_the_library_in_multiprocess_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="PROMETHEUS_MULTIPROC_DIR"):
        metrics.configure(make_settings(metrics_multiproc_dir=tmp_path))


def test_an_insert_into_a_full_cache_counts_one_eviction_and_an_expired_entry_none() -> None:
    now = [0.0]
    cache: TTLCache[str, int] = TTLCache(maxsize=2, ttl=10, timer=lambda: now[0])
    cache["a"], cache["b"] = 1, 2
    before = snapshot()
    metrics.cache_insert("index", cache, "a")  # replaces: no eviction
    metrics.cache_insert("index", cache, "c")
    cache["c"] = 3
    now[0] = 11  # everything expired: room without evicting
    metrics.cache_insert("index", cache, "d")
    cache["d"] = 4
    assert delta(snapshot(), before, "rag_cache_evictions_total", layer="index", backend="memory") == 1


def test_the_memory_layer_counts_hits_misses_and_evictions() -> None:
    layer: MemoryLayer[str] = MemoryLayer("document", max_entries=1, ttl=60)
    before = snapshot()
    layer.get("x")
    layer.put("x", "one")
    layer.get("x")
    layer.put("y", "two")
    after = snapshot()
    assert delta(after, before, "rag_cache_lookups_total", layer="document", backend="memory", result="miss") == 1
    assert delta(after, before, "rag_cache_lookups_total", layer="document", backend="memory", result="hit") == 1
    assert delta(after, before, "rag_cache_evictions_total", layer="document", backend="memory") == 1


async def test_a_build_waits_for_a_slot_runs_and_a_failing_one_counts_as_failed() -> None:
    limiter = anyio.CapacityLimiter(1)
    before = snapshot()
    entered = anyio.Event()
    release = anyio.Event()

    async def holder() -> None:
        async with metrics.build_slot(limiter):
            entered.set()
            await release.wait()

    async def failing() -> None:
        with pytest.raises(ValueError):
            async with metrics.build_slot(limiter):
                raise ValueError("embedding failed")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(holder)
            await entered.wait()
            group.start_soon(failing)
            while value(snapshot(), "rag_index_builds_in_flight", state="waiting") < 1:  # bounded by fail_after
                await anyio.sleep(0.01)
            assert value(snapshot(), "rag_index_builds_in_flight", state="running") == 1
            release.set()
    after = snapshot()
    assert delta(after, before, "rag_index_builds_total", event="failed") == 1
    assert value(after, "rag_index_builds_in_flight") == 0


async def test_parser_tasks_beyond_the_pool_size_count_as_queued() -> None:
    release = anyio.Event()
    started = 0

    @metrics.parser_task
    async def parse_one() -> None:
        nonlocal started
        started += 1
        await release.wait()

    metrics.parser_pool_size(2)
    before = snapshot()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(parse_one)
            while started < 3:  # bounded by fail_after
                await anyio.sleep(0.01)
            during = snapshot()
            release.set()
    after = snapshot()
    assert value(during, "rag_parser_pool_tasks", state="busy") == 2
    assert value(during, "rag_parser_pool_tasks", state="queued") == 1
    assert value(after, "rag_parser_pool_tasks") == 0
    assert delta(after, before, "rag_stage_duration_seconds_count", stage="parse") == 3


async def test_a_global_rejection_is_counted_apart_from_a_client_one() -> None:
    limiter = InProcessRateLimiter(make_settings(rate_limit_rpm=2, global_rate_multiplier=1.5))
    before = snapshot()
    outcomes: list[str] = []
    for client in ["a", "a", "a", "b", "b"]:
        try:
            await limiter.check(client)
            outcomes.append("ok")
        except RateLimitError as exc:
            outcomes.append("global" if "global" in exc.message else "client")
    after = snapshot()
    assert outcomes == ["ok", "ok", "client", "ok", "global"]
    assert delta(after, before, "rag_rate_limit_rejections_total", scope="client") == 1
    assert delta(after, before, "rag_rate_limit_rejections_total", scope="global") == 1


async def test_an_index_from_disk_a_coalesced_build_and_a_rerank_are_counted(tmp_path: Path) -> None:
    settings = Settings(index_dir=tmp_path, _env_file=None)
    models = ModelRegistry.fake(reranker=True)
    first = IndexManager(settings, models)
    before = snapshot()

    async def build(manager: IndexManager) -> Any:
        return await manager.get_or_build("b" * 64, "1", "params", make_chunks(TEXTS))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:  # two requests, one build
            group.start_soon(build, first)
            group.start_soon(build, first)
    index, cached = await build(IndexManager(settings, models))  # a new process: from disk
    await first.searcher.search(index, "engines", 2)
    after = snapshot()
    assert cached is True
    assert delta(after, before, "rag_index_builds_total", event="started") == 1
    assert delta(after, before, "rag_index_builds_total", event="coalesced") == 1
    assert delta(after, before, "rag_chunks_embedded_total") == len(TEXTS)
    assert delta(after, before, "rag_cache_lookups_total", layer="index", backend="disk", result="hit") == 1
    assert delta(after, before, "rag_cache_lookups_total", layer="index", backend="disk", result="miss") == 1
    assert delta(after, before, "rag_cache_lookups_total", layer="index", backend="memory", result="hit") == 1
    for stage in ("embed", "index_build", "query_embed", "search", "rerank"):
        assert delta(after, before, "rag_stage_duration_seconds_count", stage=stage) == 1, stage


def test_stage_timings_land_in_the_right_bucket() -> None:
    before = snapshot()

    @metrics.timed("chunk")
    def slow() -> None:
        time.sleep(0.03)  # the measured work itself, not synchronisation

    slow()
    after = snapshot()
    assert delta(after, before, "rag_stage_duration_seconds_bucket", stage="chunk", le="0.025") == 0
    assert delta(after, before, "rag_stage_duration_seconds_bucket", stage="chunk", le="0.05") == 1
    assert delta(after, before, "rag_stage_duration_seconds_sum", stage="chunk") >= 0.03
