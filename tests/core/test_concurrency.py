"""KeyedLock: one holder per key, other keys independent, nothing kept once a key is free."""

from __future__ import annotations

import anyio
import pytest

from mcp_server.core.concurrency import KeyedLock, Once

pytestmark = pytest.mark.anyio


async def test_one_key_has_one_holder_at_a_time_and_is_forgotten_when_free() -> None:
    locks = KeyedLock()
    inside: list[str] = []
    most = 0
    release = anyio.Event()

    async def hold(name: str) -> None:
        nonlocal most
        async with locks.hold("doc"):
            inside.append(name)
            most = max(most, len(inside))
            await release.wait()
            inside.remove(name)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            for name in ("a", "b", "c"):
                group.start_soon(hold, name)
            while not inside:  # the first holder is in; the others wait on the same key
                await anyio.sleep(0)
            assert len(locks) == 1
            release.set()
    assert most == 1 and len(locks) == 0


async def test_different_keys_do_not_wait_for_each_other() -> None:
    locks = KeyedLock()
    with anyio.fail_after(10):
        async with locks.hold("one"), locks.hold("two"):
            assert len(locks) == 2
    assert len(locks) == 0


async def test_a_cancelled_waiter_leaves_nothing_behind() -> None:
    locks = KeyedLock()
    held, release = anyio.Event(), anyio.Event()
    entered = []

    async def holder() -> None:
        async with locks.hold("doc"):
            held.set()
            await release.wait()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(holder)
            await held.wait()
            with anyio.CancelScope() as scope:
                scope.cancel()  # the waiter is cancelled while it waits for the key
                async with locks.hold("doc"):
                    entered.append(True)
            release.set()
    assert not entered and len(locks) == 0


def test_once_computes_its_value_once_for_every_thread_that_asks() -> None:
    import threading

    calls: list[int] = []
    started, release = threading.Event(), threading.Event()

    def compute() -> list[int]:
        calls.append(1)
        started.set()
        release.wait()
        return [42]

    once = Once(compute)
    results: list[list[int]] = []
    first = threading.Thread(target=lambda: results.append(once.get()))
    first.start()
    started.wait()
    second = threading.Thread(target=lambda: results.append(once.get()))  # arrives during the computation
    second.start()
    release.set()
    first.join()
    second.join()
    assert results == [[42], [42]] and results[0] is results[1] and calls == [1]
    assert once.get() is results[0]
