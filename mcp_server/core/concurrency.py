"""The one thread seam: every hop between the event loop and a thread goes through a function here,
plus one lock per key, a value computed once across threads, and the progress callback type.

* ``off_loop(fn, *args)``: a blocking call awaited from the loop, in anyio's worker threads.
* ``start_thread(target, *args, name=...)``: a daemon thread that lives beside the loop (a lease
  renewal, a watcher, a model loading in the background, a socket's accept loop).
* ``thread_pool(workers, name)``: an executor for work a blocking call fans out (a model's batches
  side by side, a parser pool's client connections).
* ``wait_future(future)``: a ``concurrent.futures.Future`` that another pool completes, awaited.
* ``answering()`` / ``after_answer(mark)``: a tool call's mark, ended when its result is ready (or it
  failed or was cancelled), which work it starts in the background may wait for (at most
  ``ANSWER_WAIT`` seconds) so as not to take the cores from the answer still being ranked and sent.

Nothing else in the package starts a thread or hops to one (``tests/test_house.py`` counts every
spelling outside this module against a short allowlist).
"""

from __future__ import annotations

import concurrent.futures
import heapq
import itertools
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from functools import partial
from threading import Lock
from typing import Any, Generic, TypeVar

import anyio
import anyio.abc
import anyio.to_thread

__all__ = [
    "ANSWER_WAIT", "Background", "KeyedLock", "Once", "Progress", "SmallestFirst", "after_answer", "answer_mark",
    "answering", "off_loop", "start_thread", "thread_pool", "wait_future",
]

T = TypeVar("T")

# (done, total or None while unknown, message), awaited on the event loop: the tools forward it
# as MCP progress notifications. Worker threads get a sync adapter (ModelRunner.progress).
Progress = Callable[[float, float | None, str], Awaitable[None]]

# What work held for a call's answer (``after_answer``) waits at most, in seconds: a big document's
# first answer is ranked, flagged and sent within it on a loaded machine; its complete build then starts.
ANSWER_WAIT = 2.0

# The running tool call's mark (``answering``); tasks started inside the call copy it with the context.
_answer_mark: ContextVar[anyio.Event | None] = ContextVar("answer_mark", default=None)


async def off_loop(fn: Callable[..., T], *args: Any, shield: bool = False) -> T:
    """``fn(*args)`` in a worker thread; the thread finishes even if the caller is cancelled, and
    with ``shield`` the caller waits for it (a step that started completes: a save, a lease released).

    The blocking objects call it once per operation: the model runner (``embedding/runner.py``,
    model work with a slot), the index tiers, the cache layers and the memory budget, the fetcher
    (local files, uploads), the text work around the models (sniffing, chunking, reading windows,
    quote indexes, token budgets), the health reports, ``/metrics`` and the lifespan."""
    with anyio.CancelScope(shield=shield):
        done = await anyio.to_thread.run_sync(partial(fn, *args), abandon_on_cancel=True)
    return done


def start_thread(target: Callable[..., object], *args: Any, name: str) -> threading.Thread:
    """A daemon thread running ``target(*args)``, started now (a daemon: shutdown never waits on it)."""
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread


def thread_pool(workers: int, name: str) -> concurrent.futures.Executor:
    """An executor of ``workers`` threads named ``name-N``, for work a blocking call fans out."""
    return concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)


async def wait_future(future: concurrent.futures.Future[T]) -> T:
    """The future's result, awaited: a worker thread of its own waits for it (anyio has no
    awaitable for a ``concurrent.futures.Future``; the thread is one of a limiter of its own so
    that waiting parses never hold the slots of ``off_loop``'s threads). Cancelled, the future is
    cancelled too (a queued task never runs; pebble stops the process running one)."""
    if future.done():
        return future.result()
    try:
        return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True,
                                              limiter=anyio.CapacityLimiter(1))
    except anyio.get_cancelled_exc_class():
        future.cancel()
        raise


@contextmanager
def answering() -> Iterator[anyio.Event]:
    """A tool call being answered (the guard's block around it): its mark, set when the block ends,
    its result ready, an error or a cancellation alike, so that a failed call never holds work."""
    mark = anyio.Event()
    token = _answer_mark.set(mark)
    try:
        yield mark
    finally:
        _answer_mark.reset(token)
        mark.set()


def answer_mark() -> anyio.Event | None:
    """The running call's mark (``answering``), to hand to work that outlives it; None outside a call."""
    return _answer_mark.get()


async def after_answer(mark: anyio.Event | None, *, sooner: anyio.Event | None = None,
                       wait: float = ANSWER_WAIT) -> None:
    """Returns once ``mark``'s call has answered, ``sooner`` is set (another call needs the work
    now) or ``wait`` seconds have passed, whichever comes first; at once without a mark."""
    events = [event for event in (mark, sooner) if event is not None]
    if mark is None or any(event.is_set() for event in events):
        return
    with anyio.move_on_after(wait):
        async with anyio.create_task_group() as tasks:
            async def until(event: anyio.Event) -> None:
                await event.wait()
                tasks.cancel_scope.cancel()

            for event in events:
                tasks.start_soon(until, event)


class KeyedLock:
    """One ``anyio.Lock`` per key, forgotten when nobody holds or waits for it (no unbounded dict).

    Ten identical requests take the same key: one does the work, nine wait and then find it done."""

    def __init__(self) -> None:
        self._locks: dict[str, anyio.Lock] = {}
        self._users: dict[str, int] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(key, anyio.Lock())
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[key] -= 1
            if self._users[key] == 0:
                del self._users[key], self._locks[key]

    def __len__(self) -> int:
        """Keys held or waited for now."""
        return len(self._locks)


class Once(Generic[T]):
    """A value computed at most once, by whichever thread asks first; the others wait for it.
    Copies of an object that share one ``Once`` share the value (a document's partial indexes)."""

    def __init__(self, compute: Callable[[], T]) -> None:
        self._compute: Callable[[], T] | None = compute
        self._value: T | None = None
        self._lock = Lock()

    def get(self) -> T:
        with self._lock:
            if self._compute is not None:
                self._value, self._compute = self._compute(), None
            return self._value  # type: ignore[return-value]


class SmallestFirst:
    """At most ``slots`` jobs at once; the waiting ones start smallest first, so a cold shelf's short documents
    are parsed (the parser pool: pebble's own queue is first come, first served) and chunked, and answer, before
    its long ones. One event loop's tasks only."""

    def __init__(self, slots: int) -> None:
        self.free = slots
        self.waiting: list[tuple[int, int, anyio.Event]] = []  # a heap: (size, arrival, the waiter's event)
        self.arrivals = itertools.count()

    @asynccontextmanager
    async def slot(self, size: int) -> AsyncIterator[None]:
        if self.free > 0 and not self.waiting:
            self.free -= 1
        else:
            entry = (size, next(self.arrivals), anyio.Event())
            heapq.heappush(self.waiting, entry)
            try:
                await entry[2].wait()
            except BaseException:  # cancelled: a slot handed over meanwhile goes on to the next
                if entry[2].is_set():
                    self._release()
                else:
                    self.waiting.remove(entry)
                    heapq.heapify(self.waiting)
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        if self.waiting:
            heapq.heappop(self.waiting)[2].set()  # the slot goes straight to the smallest waiting job
        else:
            self.free += 1


class Background:
    """Tasks that outlive the call that started them (a shelf's documents still loading when it has
    answered), owned by the app's lifespan: they run inside ``running()`` and are cancelled when it
    ends. Outside it (a service without a lifespan) ``active`` is False and callers wait themselves."""

    def __init__(self) -> None:
        self._tasks: anyio.abc.TaskGroup | None = None

    @property
    def active(self) -> bool:
        return self._tasks is not None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Background]:
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield self
            finally:
                self._tasks = None
                tasks.cancel_scope.cancel()

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, None]], *args: object) -> None:
        """``fn(*args)`` in the background (inside ``running()``)."""
        assert self._tasks is not None, "Background.spawn outside running()"
        self._tasks.start_soon(fn, *args)
