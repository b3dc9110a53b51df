"""The model runner: model work in worker threads, a bounded number at once, searches never
queued behind background builds, no progress once stopped."""

from __future__ import annotations

import functools
import threading

import anyio
import anyio.to_thread
import pytest

from mcp_server.embedding.runner import ModelRunner

pytestmark = pytest.mark.anyio


async def test_a_search_runs_while_a_background_build_holds_its_slot() -> None:
    runner = ModelRunner(2)
    entered, gate = threading.Event(), threading.Event()

    def build() -> str:
        entered.set()
        gate.wait(30)
        return "built"

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(functools.partial(runner.build, build, background=True))
            await anyio.to_thread.run_sync(entered.wait, 30)
            searched = await runner.run(lambda: threading.current_thread() is not threading.main_thread())
            gate.set()
    assert searched is True


async def test_progress_reaches_the_loop_from_a_worker_thread_until_the_runner_stops() -> None:
    runner = ModelRunner(1)
    seen: list[tuple[float, float | None, str]] = []

    async def progress(done: float, total: float | None, message: str) -> None:
        seen.append((done, total, message))

    report = runner.progress(progress)
    assert report is not None and runner.progress(None) is None
    await runner.run(report, 1, 4, "embedding")
    runner.stop()
    await runner.run(report, 2, 4, "embedding")
    assert seen == [(1, 4, "embedding")] and runner.stopping.is_set()
