"""A big document's complete build waits for its first answer to be out (the guard's mark), at most
its wait; a call that fails or is cancelled holds nothing, and a call that waits for the complete
index does not wait for another call's answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_server.embedding import ModelRegistry
from mcp_server.encoders import FakeEmbedder
from mcp_server.indexes import IndexManager
from mcp_server.indexes.builds import PendingBuild
from mcp_server.indexes.manager import IndexView
from mcp_server.middleware.guard import ToolGuard
from mcp_server.middleware.ratelimit import InProcessRateLimiter
from tests.indexes.test_manager import BOOK, SHA, progressive
from tests.mcp_harness import make_settings
from tests.retrieval._chunks import make_chunks

pytestmark = pytest.mark.anyio

CHUNKS = [*BOOK, "A last chapter about the lighthouse keepers of the northern coast and their lamps."]


def held(tmp_path: Path, answer_wait: float) -> IndexManager:
    m = IndexManager(progressive(tmp_path), ModelRegistry(fast=FakeEmbedder(model_id="fake-fast")))
    m.builder.answer_wait = answer_wait
    return m


async def call(invoke: Callable[[Any], Awaitable[Any]]) -> Any:
    """One tool call through the guard (its mark ends when ``invoke`` returns, fails or is cancelled)."""
    settings = make_settings()
    guard = ToolGuard(settings, InProcessRateLimiter(settings))
    return await guard.run(tool="retrieve_chunks", kind="document", client="test", parse=lambda: None, invoke=invoke)


async def first_answer(m: IndexManager, query: str = "volcanoes") -> tuple[IndexView, PendingBuild]:
    view = await m.open(SHA, "1", "p", make_chunks(CHUNKS), query=query)
    return view, m.builder.pending[view.key]


async def test_the_complete_build_starts_once_the_first_answer_is_out(tmp_path: Path) -> None:
    m = held(tmp_path, answer_wait=600)
    during: list[bool] = []

    async def invoke(_: object) -> PendingBuild:
        view, pending = await first_answer(m)
        assert not view.complete
        await anyio.wait_all_tasks_blocked()  # a build started at once would be embedding by now
        during.append(pending.started.is_set())
        return pending

    async with m.running():
        pending = await call(invoke)
        with anyio.fail_after(30):
            await pending.done.wait()
    assert during == [False] and m.counters["background_builds"] == 1


async def test_the_complete_build_starts_after_its_wait_at_the_latest(tmp_path: Path) -> None:
    m = held(tmp_path, answer_wait=0.05)

    async def invoke(_: object) -> bool:
        _, pending = await first_answer(m)
        with anyio.fail_after(30):  # the call is still answering: the build starts all the same
            await pending.done.wait()
        return pending.started.is_set()

    async with m.running():
        assert await call(invoke) is True
    assert m.counters["background_builds"] == 1


@pytest.mark.parametrize("ending", ["fails", "is cancelled"])
async def test_a_call_that_fails_or_is_cancelled_does_not_hold_the_build(tmp_path: Path, ending: str) -> None:
    m = held(tmp_path, answer_wait=600)
    found: list[PendingBuild] = []

    async with m.running():
        with anyio.CancelScope() as scope:
            async def invoke(_: object) -> None:
                found.append((await first_answer(m))[1])
                if ending == "fails":
                    raise RuntimeError("the ranking failed")
                scope.cancel()  # the client went away
                await anyio.sleep_forever()

            result = await call(invoke)
            assert result.is_error  # INTERNAL_ERROR to the client
        with anyio.fail_after(30):
            await found[0].done.wait()
    assert m.counters["background_builds"] == 1


async def test_a_call_waiting_for_the_complete_index_does_not_wait_for_another_calls_answer(tmp_path: Path) -> None:
    m = held(tmp_path, answer_wait=600)
    first_in, first_may_end = anyio.Event(), anyio.Event()

    async def first(_: object) -> None:
        await first_answer(m)
        first_in.set()
        await first_may_end.wait()

    async def second(_: object) -> IndexView:  # another language: it waits for the complete index
        return await m.open(SHA, "1", "p", make_chunks(CHUNKS), query="Wann brach der Vulkan im Tal aus?")

    async with m.running(), anyio.create_task_group() as tasks:
        tasks.start_soon(call, first)
        await first_in.wait()
        with anyio.fail_after(20):  # less than the first call's hold and the foreign wait (30 s)
            view = await call(second)
        first_may_end.set()
    assert view.complete and m.counters["background_builds"] == 1
