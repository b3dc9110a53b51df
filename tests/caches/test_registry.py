"""The worker's cache layers, each made once from one table of bounds: what manage_cache reports and
clears is that table, a shared variant takes a layer's place, and the index layer's old setting
name still sizes it."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import mcp_server.caches.registry as registry
from mcp_server.caches.budget import MemoryBudget
from mcp_server.caches.registry import Bounds, CacheRegistry, layer_bounds
from mcp_server.core.settings import Settings
from tests.mcp_harness import make_settings, memory_client, payload

pytestmark = pytest.mark.anyio


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


async def test_manage_cache_reports_and_clears_every_layer_of_the_table_once() -> None:
    names = list(layer_bounds(make_settings()))
    async with memory_client(load_models=False) as client:
        stats = payload(await client.call_tool("manage_cache", {"action": "stats"}))["layers"]
        cleared = payload(await client.call_tool("manage_cache", {"action": "clear"}))["layers"]

    assert [name for name in stats if name not in ("memory_budget", "upload")] == names
    assert list(cleared) == names
    assert "retriever" not in stats and stats["index"]["max_entries"] == 100
    assert cleared["index"] == {"memory": 0, "disk": 0}  # the manager clears memory and disk together


async def test_a_layer_added_to_the_table_is_reported_and_cleared_without_another_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = registry.layer_bounds
    monkeypatch.setattr(registry, "layer_bounds",
                        lambda s: {**real(s), "thumbnail": Bounds(max_entries=3, ttl=60, size_of=len)})
    async with memory_client(load_models=False, memory_budget_mb=1) as client:
        stats = payload(await client.call_tool("manage_cache", {"action": "stats"}))["layers"]
        cleared = payload(await client.call_tool("manage_cache", {"action": "clear"}))["layers"]

    assert stats["thumbnail"]["max_entries"] == 3 and stats["thumbnail"]["entries"] == 0
    assert "thumbnail" in stats["memory_budget"]["bytes_by_layer"]
    assert cleared["thumbnail"] == 0


class SharedLayer:
    """A layer of another backend (as the Redis ones are): the CacheLayer interface, not in memory."""

    name = "document"

    def get(self, key: str) -> None:
        return None

    def put(self, key: str, value: object) -> None: ...

    def delete(self, key: str) -> bool:
        return False

    def clear(self) -> int:
        return 0

    def stats(self) -> dict[str, object]:
        return {"backend": "shared"}


def test_a_shared_variant_takes_the_place_of_its_in_memory_layer_and_leaves_the_budget() -> None:
    budget = MemoryBudget(2**20)
    caches = CacheRegistry(settings(), budget)
    assert "document" in budget.bytes_by_layer()

    caches.swap(SharedLayer())

    assert isinstance(caches["document"], SharedLayer) and caches.stats()["document"] == {"backend": "shared"}
    assert "document" not in budget.bytes_by_layer()
    with pytest.raises(TypeError, match="not in memory"):
        caches.memory("document")


def test_every_layer_but_the_failure_records_joins_the_memory_budget() -> None:
    budget = MemoryBudget(2**20)
    CacheRegistry(settings(), budget)

    assert sorted(budget.bytes_by_layer()) == sorted(set(layer_bounds(settings())) - {"failure"})


def test_the_deprecated_retrievers_setting_still_sizes_the_index_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_CACHE_MAX_INDEXES", raising=False)
    monkeypatch.setenv("MCP_CACHE_MAX_RETRIEVERS", "7")

    old = settings()

    assert old.cache_max_indexes == 7 and CacheRegistry(old).memory("index").max_entries == 7
    assert ("cache_max_retrievers", "cache_max_indexes") in old.deprecated
    monkeypatch.setenv("MCP_CACHE_MAX_INDEXES", "9")
    assert settings().cache_max_indexes == 9  # the new name wins


async def test_a_server_started_with_the_old_index_setting_logs_the_name_to_use(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_server.server.lifespan"):
        async with memory_client(load_models=False, cache_max_retrievers=5) as client:
            stats = payload(await client.call_tool("manage_cache", {"action": "stats"}))["layers"]

    assert stats["index"]["max_entries"] == 5
    deprecated = [(r.setting, r.use) for r in caplog.records if r.getMessage() == "settings.deprecated"]  # type: ignore[attr-defined]
    assert deprecated == [("MCP_CACHE_MAX_RETRIEVERS", "MCP_CACHE_MAX_INDEXES")]
