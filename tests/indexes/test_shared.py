"""Indexes shared by several hosts through the deployment's store (the in-process fake here;
``tests/multihost`` runs the Redis one): load instead of build, one build per key, lease take-over,
outage, size cap, quarantine. Two managers with two folders and one store stand for two hosts."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from mcp_server.core.settings import Settings
from mcp_server.embedding import ModelRegistry
from mcp_server.encoders import FakeEmbedder
from mcp_server.indexes import IndexManager
from mcp_server.indexes.shared import MemoryIndexStore
from mcp_server.indexes.store import INDEX_FILE
from tests.retrieval._chunks import make_chunks

pytestmark = pytest.mark.anyio

SHA = "c" * 64
TEXTS = [f"Section {i} explains {word} at length, and nothing else." for i, word in
         enumerate(["glaciers", "harbours", "turbines", "sonnets", "meteors", "otters"])]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def host(tmp_path: Path, name: str, shared: MemoryIndexStore, **settings: object) -> IndexManager:
    values = {"index_dir": tmp_path / name, "index_lease_seconds": 5.0, **settings}
    return IndexManager(Settings(_env_file=None, **values), ModelRegistry.fake(), shared=shared)  # type: ignore[arg-type]


def embedded(m: IndexManager) -> int:
    assert isinstance(m.models.fast, FakeEmbedder)
    return m.models.fast.texts_embedded


async def test_a_document_built_on_one_host_is_loaded_on_another_without_embedding(tmp_path: Path) -> None:
    shared = MemoryIndexStore()
    a, b = host(tmp_path, "a", shared), host(tmp_path, "b", shared)
    built, _ = await a.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    index, cached = await b.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert cached is True and embedded(b) == 0 and b.counters["builds"] == 0
    assert b.stats()["shared"]["shared_hits"] == 1 and a.stats()["shared"]["shared_published"] == 1
    assert index.chunks == built.chunks and index.owners.tolist() == built.owners.tolist()
    assert b.store.exists(b.index_key(SHA, "1", "p"))  # now in b's folder too: a restart reads it locally
    hits, _ = await b.searcher.search(index, "otters", top_k=1)
    assert "otters" in hits[0].chunk.text


async def test_two_hosts_asked_for_one_new_document_at_once_build_it_once(tmp_path: Path) -> None:
    shared = MemoryIndexStore()
    hosts = [host(tmp_path, "a", shared, index_lease_seconds=30.0), host(tmp_path, "b", shared)]
    for m in hosts:
        m.tiers.poll = 0.01
    results: list[bool] = []

    async def ask(m: IndexManager) -> None:
        results.append((await m.get_or_build(SHA, "1", "p", make_chunks(TEXTS)))[1])

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tasks:
            for m in hosts:
                tasks.start_soon(ask, m)
    assert sum(m.counters["builds"] for m in hosts) == 1 and sorted(results) == [False, True]
    assert sum(m.stats()["shared"]["shared_hits"] for m in hosts) == 1
    assert not shared.leases  # released after the build


async def test_a_crashed_builders_lease_lapses_and_the_waiting_host_builds(tmp_path: Path) -> None:
    clock = Clock()
    shared = MemoryIndexStore(clock=clock)
    b = host(tmp_path, "b", shared)
    b.tiers.poll = 0.01
    key = b.index_key(SHA, "1", "p")
    assert shared.acquire(key, "token-of-a-host-that-died", 5.0)
    done = anyio.Event()

    async def ask() -> None:
        await b.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
        done.set()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            while b.tiers.counters["lease_waits"] == 0:  # bounded by fail_after
                await anyio.sleep(0.01)
            assert not done.is_set() and b.counters["builds"] == 0  # it waits while the lease holds
            clock.now += 5.1  # nobody renews: the lease lapses
            await done.wait()
    assert b.counters["builds"] == 1 and key in shared.entries and not shared.leases


async def test_with_the_shared_store_down_each_host_builds_and_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    shared = MemoryIndexStore()
    shared.down = True
    a, b = host(tmp_path, "a", shared), host(tmp_path, "b", shared)
    with caplog.at_level(logging.WARNING, logger="mcp_server.indexes.tiers"):
        for m in (a, b):
            index, cached = await m.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
            assert cached is False and len(index) == len(TEXTS)
    assert [m.counters["builds"] for m in (a, b)] == [1, 1]
    assert a.tiers.backend.startswith("disk (shared store unavailable")
    assert a.stats()["shared"]["unshared_builds"] == 1 and "index.lease_unavailable" in caplog.text
    shared.down = False  # back: the next build is shared again
    await a.get_or_build("d" * 64, "1", "p", make_chunks(TEXTS[:2]))
    assert len(shared.entries) == 1


async def test_an_index_over_the_size_cap_stays_on_its_host_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    shared = MemoryIndexStore()
    a = host(tmp_path, "a", shared, index_store_max_bytes=1000)
    with caplog.at_level(logging.WARNING, logger="mcp_server.indexes.tiers"):
        await a.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert not shared.entries and a.stats()["shared"]["shared_too_large"] == 1
    [record] = [r for r in caplog.records if r.getMessage() == "index.not_shared"]
    assert record.max_bytes == 1000 and record.bytes > 1000  # type: ignore[attr-defined]
    b = host(tmp_path, "b", shared)
    _, cached = await b.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert cached is False and b.counters["builds"] == 1


async def test_a_corrupt_shared_entry_is_quarantined_and_rebuilt(tmp_path: Path) -> None:
    shared = MemoryIndexStore()
    a = host(tmp_path, "a", shared)
    await a.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    key = a.index_key(SHA, "1", "p")
    vectors = bytearray(shared.entries[key][INDEX_FILE.encode()])
    vectors[len(vectors) // 2] ^= 0x01
    shared.entries[key][INDEX_FILE.encode()] = bytes(vectors)
    b = host(tmp_path, "b", shared)
    _, cached = await b.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert cached is False and b.counters["builds"] == 1 and shared.quarantined == [key]
    assert key in shared.entries  # b's build replaced it
    c = host(tmp_path, "c", shared)
    _, cached = await c.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert cached is True and c.counters["builds"] == 0


async def test_a_passage_lookup_finds_an_index_another_host_built(tmp_path: Path) -> None:
    shared = MemoryIndexStore()
    a, b = host(tmp_path, "a", shared), host(tmp_path, "b", shared)
    built, _ = await a.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    found = await b.find(a.index_key(SHA, "1", "p"))
    assert found is not None and found.chunks == built.chunks
    assert await b.find("0" * 32) is None


async def test_a_host_that_takes_the_lease_just_after_another_published_loads_that_index(tmp_path: Path) -> None:
    shared = MemoryIndexStore()
    a = host(tmp_path, "a", shared)
    await a.get_or_build(SHA, "1", "p", make_chunks(TEXTS))  # published, lease released

    class LateStore(MemoryIndexStore):
        """b looks before a's publish and asks for the lease after a's release."""

        asked = False

        def get(self, key: str):  # type: ignore[no-untyped-def]
            return super().get(key) if self.asked else None

        def acquire(self, key: str, token: str, seconds: float) -> bool | None:
            self.asked = True
            return super().acquire(key, token, seconds)

    late = LateStore()
    late.entries = shared.entries
    b = host(tmp_path, "b", late)
    index, cached = await b.get_or_build(SHA, "1", "p", make_chunks(TEXTS))
    assert cached is True and b.counters["builds"] == 0 and embedded(b) == 0
    assert b.stats()["shared"]["shared_hits"] == 1 and not late.leases  # the lease it took is given back
