"""The worker's memory budget: cache layers bounded together by measured bytes, least recently used first."""

from __future__ import annotations

import contextlib

import anyio
import anyio.lowlevel
import numpy as np
import pytest

from mcp_server.caches.budget import Activity, IdleTrim, MemoryBudget, measure
from mcp_server.caches.layers import MemoryLayer
from mcp_server.core.errors import ServerBusyError

MB = 2**20


def layer(name: str, budget: MemoryBudget, **bounds: int) -> MemoryLayer[bytes]:
    return MemoryLayer(name, max_entries=bounds.pop("max_entries", 100), ttl=3600, budget=budget,
                       size_of=len, **bounds)  # type: ignore[arg-type]


def test_layers_sharing_a_budget_evict_the_least_recently_used_entry_of_any_layer() -> None:
    budget = MemoryBudget(3 * MB)
    downloads, documents = layer("download", budget), layer("document", budget)
    downloads.put("a", b"x" * MB)
    documents.put("b", b"y" * MB)
    downloads.put("c", b"z" * MB)
    assert downloads.get("a") is not None  # "a" is now more recent than "b"
    documents.put("d", b"w" * MB)  # 4 MB: one must go, the least recently used: "b"
    assert documents.get("b") is None
    assert downloads.get("a") is not None and downloads.get("c") is not None and documents.get("d") is not None
    assert budget.used() <= 3 * MB
    stats = budget.stats()
    assert stats["evictions"] == {"document": 1} and stats["bytes"] == budget.used()


def test_the_entry_just_stored_stays_while_older_ones_can_make_room() -> None:
    budget = MemoryBudget(2 * MB)
    cache = layer("document", budget)
    cache.put("old", b"o" * MB)
    cache.put("new", b"n" * (2 * MB - 100))
    assert cache.get("new") is not None and cache.get("old") is None


def test_an_entry_larger_than_the_whole_budget_is_not_kept() -> None:
    budget = MemoryBudget(MB)
    cache = layer("document", budget)
    cache.put("small", b"s" * 1000)
    cache.put("huge", b"h" * (2 * MB))
    assert cache.get("huge") is None and budget.used() <= MB


def test_the_entry_count_stays_a_second_bound_under_a_budget() -> None:
    budget = MemoryBudget(100 * MB)
    cache = layer("document", budget, max_entries=2)
    for key in "abc":
        cache.put(key, b"v" * 10)
    assert cache.get("a") is None and cache.stats()["entries"] == 2 and cache.stats()["evictions"] == 1


def test_a_layer_keeps_its_own_byte_bound_inside_a_larger_budget() -> None:
    budget = MemoryBudget(100 * MB)
    cache = layer("download", budget, max_bytes=2 * MB)
    for key in "abc":
        cache.put(key, b"v" * MB)
    assert cache.stats()["bytes"] <= 2 * MB and cache.get("a") is None


def test_an_evicted_value_stays_whole_for_the_caller_holding_it() -> None:
    budget = MemoryBudget(MB)
    cache: MemoryLayer[np.ndarray] = MemoryLayer("index", max_entries=10, ttl=3600, budget=budget)
    cache.put("a", np.ones(100_000, dtype=np.float32))  # 400 kB, measured
    held = cache.get("a")
    cache.put("b", np.zeros(200_000, dtype=np.float32))  # 800 kB: "a" goes
    assert cache.get("a") is None and held is not None and float(held.sum()) == 100_000


def test_measure_counts_arrays_and_strings_once_each() -> None:
    text = "word " * 10_000
    vectors = np.zeros((1000, 384), dtype=np.float32)
    size = measure({"text": text, "vectors": vectors, "again": [text, vectors]})
    assert vectors.nbytes + len(text) <= size < vectors.nbytes + len(text) + 2000


def test_without_a_budget_only_the_layers_bound_themselves() -> None:
    budget = MemoryBudget(None)
    cache = layer("document", budget)
    cache.put("a", b"x" * (3 * MB))
    assert cache.get("a") is not None and budget.stats()["bytes"] == 3 * MB



# --- admission: index builds hold the budget while they run -------------------------------------
@pytest.mark.anyio
async def test_a_build_that_does_not_fit_waits_for_one_to_end_and_is_told_so() -> None:
    budget = MemoryBudget(10 * MB)
    await budget.reserve(8 * MB)
    told: list[str] = []
    admitted = anyio.Event()

    async def progress(done: float, total: float | None, message: str) -> None:
        told.append(message)

    async def second() -> None:
        await budget.reserve(5 * MB, progress=progress)
        admitted.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(second)
            while not told:  # the second build is queued: it said so
                await anyio.lowlevel.checkpoint()
            assert not admitted.is_set() and budget.reserved == 8 * MB
            budget.release(8 * MB)
            await admitted.wait()
    assert budget.reserved == 5 * MB and "queued" in told[0] and budget.stats()["admission_waits"] == 1


@pytest.mark.anyio
async def test_a_build_that_waits_too_long_gets_a_retryable_busy_error() -> None:
    budget = MemoryBudget(10 * MB)
    await budget.reserve(8 * MB)
    with pytest.raises(ServerBusyError) as caught:
        await budget.reserve(5 * MB, wait=0.05)
    assert caught.value.code == "SERVER_BUSY" and caught.value.details["retry_after"] > 0
    assert budget.reserved == 8 * MB


@pytest.mark.anyio
async def test_the_caches_make_room_for_a_build_and_a_build_alone_always_fits() -> None:
    budget = MemoryBudget(3 * MB)
    cache = layer("document", budget)
    for key in "abc":
        cache.put(key, b"x" * MB)
    await budget.reserve(2 * MB)
    assert budget.used() <= MB and cache.get("c") is not None  # the least recently used went
    budget.release(2 * MB)
    await budget.reserve(50 * MB, wait=0)  # bigger than the budget, but nothing else builds
    assert budget.used() == 0 and budget.reserved == 50 * MB


# --- idle trim: an idle worker gives memory back -------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def idle_budget(entries: str = "abcd") -> tuple[Clock, MemoryBudget, MemoryLayer[bytes]]:
    clock = Clock()
    budget = MemoryBudget(100 * MB, activity=Activity(clock))
    cache = layer("document", budget)
    for key in entries:  # "a" least recently used, "d" most
        cache.put(key, key.encode() * MB)
    return clock, budget, cache


def test_an_idle_worker_keeps_the_most_recently_used_half_of_its_caches() -> None:
    clock, budget, cache = idle_budget()
    trim = IdleTrim(budget, after=60)
    clock.now += 59
    assert not trim.due() and trim.run() == 0 and budget.used() == 4 * MB
    clock.now += 1
    assert trim.run() == 2 * MB
    assert cache.get("a") is None and cache.get("b") is None
    assert cache.get("c") is not None and cache.get("d") is not None
    stats = budget.stats()
    assert stats["idle_trims"] == 1 and stats["idle_trimmed_bytes"] == 2 * MB and stats["bytes"] == 2 * MB


def test_an_idle_trim_repeats_after_each_further_idle_period_and_not_sooner() -> None:
    clock, budget, _ = idle_budget()
    trim = IdleTrim(budget, after=60)
    clock.now += 60
    trim.run()
    clock.now += 30
    assert trim.run() == 0 and budget.used() == 2 * MB
    clock.now += 30
    assert trim.run() == MB and budget.used() == MB


def test_an_idle_trim_never_evicts_what_a_running_call_holds() -> None:
    clock, budget, cache = idle_budget()
    trim = IdleTrim(budget, after=60)
    with budget.activity.call():
        held = cache.get("a")  # the call's document, the least recently used entry of all
        clock.now += 3600  # a call running for an hour: the worker is not idle
        assert not trim.due() and trim.run() == 0
        assert cache.get("a") is held and budget.used() == 4 * MB
    assert not trim.due()  # idle counts from the call's end
    clock.now += 60
    assert trim.run() == 2 * MB


def test_a_call_that_starts_during_an_idle_trim_stops_it_before_the_next_eviction() -> None:
    clock, budget, cache = idle_budget("abcdefgh")
    trim = IdleTrim(budget, after=60)
    oldest = cache.oldest
    calls: list[contextlib.AbstractContextManager[None]] = []

    def oldest_then_a_call_arrives(exclude: str | None = None) -> tuple[float, str] | None:
        if cache.nbytes() < 8 * MB and not calls:  # after the first eviction (a lookup would reorder)
            calls.append(budget.activity.call())
            calls[0].__enter__()
        return oldest(exclude)

    cache.oldest = oldest_then_a_call_arrives  # type: ignore[method-assign]
    clock.now += 60
    assert trim.run() == MB  # "a" only, not the four of half the caches
    assert all(cache.get(key) is not None for key in "bcdefgh")
    calls[0].__exit__(None, None, None)


@pytest.mark.anyio
async def test_an_index_build_under_way_postpones_the_idle_trim_until_a_period_after_it_ends() -> None:
    clock, budget, _ = idle_budget()
    trim = IdleTrim(budget, after=60)
    await budget.reserve(MB)
    clock.now += 120
    assert not trim.due()
    budget.release(MB)
    clock.now += 59
    assert not trim.due()
    clock.now += 1
    assert trim.run() == 2 * MB


def test_an_idle_trim_period_of_zero_never_trims() -> None:
    clock, budget, _ = idle_budget()
    trim = IdleTrim(budget, after=0)
    clock.now += 10**6
    assert not trim.due() and trim.run() == 0 and budget.used() == 4 * MB



class Model:
    """An on-demand model as the budget sees it (indexes/cache_layers.OnDemandModelLayer)."""

    name = "models"
    idle_trim = False

    def __init__(self) -> None:
        self.loaded = 8 * MB

    def nbytes(self) -> int:
        return self.loaded

    def oldest(self, exclude: str | None = None) -> tuple[float, str] | None:
        return (0.0, "model") if self.loaded and exclude != "model" else None  # older than any entry

    def evict(self, key: str) -> int:
        freed, self.loaded = self.loaded, 0
        return freed


def test_an_idle_trim_leaves_an_on_demand_model_to_its_own_idle_setting() -> None:
    clock, budget, cache = idle_budget()
    model = Model()
    budget.register(model)
    clock.now += 60
    assert IdleTrim(budget, after=60).run() == 2 * MB  # half the caches' 4 MB, not of the 12 MB with the model
    assert model.loaded == 8 * MB and cache.get("d") is not None
