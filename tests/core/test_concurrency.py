"""KeyedLock: one holder per key, other keys independent, nothing kept once a key is free. The answer
mark: work held for a call's answer waits until the call ends, at most its wait."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import nullcontext

import anyio
import pytest
from anyio.abc import TaskGroup

from mcp_server.core.concurrency import KeyedLock, Once, after_answer, answer_mark, answering

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



async def _a_call(ending: str, tasks: TaskGroup, held: Callable[[anyio.Event | None], Awaitable[None]],
                  waited: anyio.Event) -> None:
    """A call that leaves ``held`` work to ``tasks`` (which outlive it) and ends as ``ending`` says;
    the work waits while the call runs."""
    with anyio.CancelScope() as scope, answering():
        tasks.start_soon(held, answer_mark())
        await anyio.wait_all_tasks_blocked()
        assert not waited.is_set()
        if ending == "fails":
            raise RuntimeError("the call failed")
        if ending == "is cancelled":
            scope.cancel()
            await anyio.sleep_forever()


@pytest.mark.parametrize("ending", ["answers", "fails", "is cancelled"])
async def test_work_held_for_a_calls_answer_waits_until_the_call_ends_however_it_ends(ending: str) -> None:
    waited = anyio.Event()

    async def held(mark: anyio.Event | None) -> None:
        await after_answer(mark, wait=600)
        waited.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            with pytest.raises(RuntimeError) if ending == "fails" else nullcontext():
                await _a_call(ending, tasks, held, waited)
            await waited.wait()
    assert answer_mark() is None  # the mark is the call's only


async def test_work_held_for_a_calls_answer_starts_after_the_wait_or_when_wanted_sooner() -> None:
    with anyio.fail_after(10), answering() as mark:
        await after_answer(answer_mark(), wait=0.01)  # the call is still answering: the wait has passed
        sooner = anyio.Event()
        sooner.set()
        await after_answer(mark, sooner=sooner, wait=600)
        await after_answer(None, wait=600)  # outside a call: nothing to wait for
        assert not mark.is_set()
