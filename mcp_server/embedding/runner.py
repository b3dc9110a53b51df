"""Model work off the event loop, a bounded number at once: the one way index code runs a model.

Embedding, the BM25 scoring beside it, FAISS search and reranking are CPU work (or a GPU's queue)
that runs in worker threads. ``ModelRunner`` owns the limit of how many run at once (the
``model_concurrency`` setting, on any device) and the progress that a thread reports; the hop
itself is ``core.concurrency.off_loop``, which the text work around the models (sniffing, chunking
and reading windows with their tokenizers, quote indexes, a partial index's BM25, language
detection, packing results into a token budget) calls without a slot:

* ``run(fn, *args)``: takes a model slot, runs ``fn`` in a worker thread, gives the slot back.
* ``build(fn, background=...)``: the same for an index build, counted in the builds gauge
  (``metrics.build_slot``). A background build also takes one of ``model_concurrency - 1``
  background slots, so searches keep one (with one slot, a background build holds it while it
  embeds, as an in-call build always did).
* ``progress(callback)``: the async progress callback adapted for a worker thread; a failing
  callback (the client is gone) never fails the work, and after ``stop`` none is called (the loop
  may no longer run it). ``stopping`` tells a background build's own report to give up.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import anyio.from_thread

from mcp_server import metrics
from mcp_server.core.concurrency import Progress, off_loop

__all__ = ["ModelRunner", "ThreadProgress"]

log = logging.getLogger(__name__)

T = TypeVar("T")
ThreadProgress = Callable[[int, int, str], None]  # (done, total, message), called from a worker thread


class ModelRunner:
    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.stopping = threading.Event()
        self._model_slots: anyio.CapacityLimiter | None = None  # created on the loop, lazily
        self._background_slots: anyio.CapacityLimiter | None = None

    def start(self) -> None:
        self.stopping.clear()

    def stop(self) -> None:
        """Running builds stop at their next batch; no more progress is sent."""
        self.stopping.set()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread, holding one model slot."""
        async with self._model():
            return await off_loop(fn, *args)

    async def build(self, fn: Callable[[], T], *, background: bool) -> T:
        """An index build ``fn()`` in a worker thread, counted as waiting, then running; a
        background build's failures are counted by its task (a shutdown is none)."""
        slot = (metrics.build_slot(_both(self._background(), self._model()), count_failed=False) if background
                else metrics.build_slot(self._model()))
        async with slot:
            return await off_loop(fn)

    def progress(self, progress: Progress | None) -> ThreadProgress | None:
        if progress is None:
            return None
        stopping = self.stopping

        async def call(done: int, total: int, message: str) -> None:
            await progress(done, total, message)

        def report(done: int, total: int, message: str) -> None:
            if stopping.is_set():
                return
            try:
                anyio.from_thread.run(call, done, total, message)
            except Exception as exc:  # noqa: BLE001 - progress is best effort
                log.debug("index.progress_failed", extra={"error": str(exc)})

        return report

    def _model(self) -> anyio.CapacityLimiter:
        if self._model_slots is None:
            self._model_slots = anyio.CapacityLimiter(self.slots)
        return self._model_slots

    def _background(self) -> anyio.CapacityLimiter:
        if self._background_slots is None:
            self._background_slots = anyio.CapacityLimiter(max(1, self.slots - 1))
        return self._background_slots


@asynccontextmanager
async def _both(first: anyio.CapacityLimiter, second: anyio.CapacityLimiter) -> AsyncIterator[None]:
    async with first, second:
        yield
