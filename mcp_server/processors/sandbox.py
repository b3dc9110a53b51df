"""Parser workers: untrusted bytes are parsed in separate processes, never on the event loop.

pebble's ProcessPool gives what a hostile document needs: a per-task timeout that kills the
worker, and a crashed worker (segfault, abort, OOM kill) fails only its own task while the
pool starts a replacement. Workers start from a fresh forkserver (never a fork of the server,
which has torch loaded), preload the processor modules, and cap their address space.

A parser process gives its freed heap back after every document (``malloc_trim``), and one that
still holds more than ``MCP_PARSE_WORKER_MAX_MB`` of its own memory afterwards (a big document's
fragments: PyMuPDF's caches, lxml's and Python's arenas) ends after returning its result, as pebble
ends a worker after ``max_tasks``: the pool forks a fresh one from the forkserver (milliseconds), so
parsers do not keep a big document's peak for good.

With ``--workers N`` the N server workers share one pool, run by the supervisor
(``subprocesses/process_pool.ParserService``; ``MCP_PARSER_SOCKET`` tells a worker where it is): the parser
image is in memory once, and ``MCP_PARSE_WORKERS`` parsers serve the whole server. A single process
(the default, stdio, tests) runs a pool of its own. Both behave alike to the caller.

Errors: a timeout -> ``ProcessingError("parsing took longer than N s")`` (it is the document's
fault, and retrying gives the same answer, so it is not the tool-level ``TIMEOUT``); a dead
worker or MemoryError -> ``ProcessingError("the parser crashed on this document")``; typed
errors raised in the worker come back unchanged; any other exception -> ``ProcessingError``.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import pickle
import threading
from collections.abc import Callable
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import Any, TypeVar

import anyio

from mcp_server import metrics
from mcp_server.core.concurrency import SmallestFirst, thread_pool, wait_future
from mcp_server.core.errors import ProcessingError
from mcp_server.core.settings import Settings
from mcp_server.subprocesses.process_pool import PebblePool, call, failed, own_memory, replaced_count, typed_error

__all__ = ["ParserPool", "own_memory"]

T = TypeVar("T")
log = logging.getLogger(__name__)
_CLIENT_THREADS = 64  # a server worker's calls to the shared pool under way at once; more wait their turn


class ParserPool:
    """``await pool.run(process_document, inp, options)``; ``close()`` at shutdown.

    With ``settings.parser_socket`` set (a ``--workers`` worker), the jobs go to the supervisor's
    shared pool; otherwise this process runs a pool of its own."""

    def __init__(self, settings: Settings, *, preload: list[str] | None = None) -> None:
        self._timeout = settings.parse_timeout
        socket = settings.parser_socket
        self._own = None if socket else PebblePool(settings, preload)
        self._shared = _SharedPool(socket) if socket else None
        self._closed = False
        self._gate = SmallestFirst(max(1, settings.parse_workers // (settings.workers if socket else 1)))
        # summed over the workers, the gauge counts the shared pool's processes once
        metrics.parser_pool_size(settings.parse_workers / settings.workers if socket else settings.parse_workers)

    @property
    def shared(self) -> bool:
        """True when the jobs run in the supervisor's pool, shared by every worker."""
        return self._shared is not None

    async def start(self) -> None:
        """Start every worker now (the forkserver, its preloaded imports, the forks) instead of on
        the first document. A worker that fails to start is logged; the pool replaces it. The
        supervisor starts a shared pool."""
        if self._own is None:
            return
        for future in self._own.start():
            try:
                await wait_future(future)
            except Exception as exc:  # noqa: BLE001 - the first document will try again
                log.warning("parser.start_failed", extra={"error": repr(exc)})

    @metrics.parser_task
    async def run(self, fn: Callable[..., T], *args: Any, timeout: float | None = None, size: int = 0) -> T:
        """``fn(*args)`` in a worker; ``fn`` and the arguments must pickle (module-level). When every worker
        is busy, the jobs waiting start by ``size`` (the input's bytes), smallest first."""
        if self._closed:
            raise ProcessingError("the parser pool is closed", reason="unavailable")
        async with self._gate.slot(size):
            return await self._run(fn, args, self._timeout if timeout is None else timeout)

    async def _run(self, fn: Callable[..., T], args: tuple[Any, ...], limit: float) -> T:
        if self._shared is not None:
            return await self._shared.run(fn, args, limit)
        assert self._own is not None
        try:
            future = self._own.schedule(call, (fn, args), limit)
        except Exception as exc:  # a pool that takes no more work (stopping)
            raise typed_error(exc, limit) from exc
        try:
            return await wait_future(future)
        except anyio.get_cancelled_exc_class():
            future.cancel()  # pebble stops the worker running a cancelled task
            raise
        except Exception as exc:
            raise typed_error(exc, limit) from exc

    async def tidy(self) -> int:
        """When the pool is idle and has parsed since the last tidy: each worker gives freed heap
        back, and one still holding more than ~32 MB of its own memory (a fresh fork holds ~15)
        is replaced by a fresh fork. The number of workers replaced (0 for the shared pool: the
        supervisor tidies it)."""
        if self._own is None or self._closed:
            return 0
        futures = self._own.tidy()
        for future in futures:
            with contextlib.suppress(Exception):  # counted below
                await wait_future(future)
        return replaced_count(futures)

    def close(self) -> None:
        """Stop the workers (or leave the shared pool); running tasks are abandoned (shutdown must
        not wait on a hang)."""
        if self._closed:
            return
        self._closed = True
        if self._own is not None:
            self._own.close()
        if self._shared is not None:
            self._shared.close()


class _Job:
    """One call to the shared pool, as the thread waiting for it and a cancelling caller see it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connection: Connection | None = None  # set once the job is sent, until its outcome is in
        self.cancelled = False

    def cancel(self) -> None:
        """Tell the supervisor (the job's connection carries one job: the next message is ours)."""
        with self.lock:
            self.cancelled = True
            if self.connection is not None:
                with contextlib.suppress(OSError, ValueError):
                    self.connection.send(("cancel",))


class _SharedPool:
    """In a server worker: jobs to the supervisor's ``ParserService``, each on a connection of its
    own (kept for the next job) and waited for in a thread, so that the loop never blocks."""

    def __init__(self, address: Path) -> None:
        self._address = str(address)
        self._authkey = bytes(multiprocessing.current_process().authkey)
        self._idle: list[Connection] = []
        self._jobs: set[_Job] = set()  # sent or being sent, not answered yet
        self._lock = threading.Lock()
        self._threads = thread_pool(_CLIENT_THREADS, "parser-client")
        self._closed = False

    def _connection(self) -> Connection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return Client(self._address, family="AF_UNIX", authkey=self._authkey)

    def _release(self, connection: Connection) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(connection)
                return
        connection.close()

    def _exchange(self, fn: Callable[..., Any], args: tuple[Any, ...], limit: float, job: _Job) -> tuple[str, Any]:
        """In a thread: send the job, wait for its outcome, ``("ok", result)`` or ``("error", typed error)``."""
        try:
            return self._send_and_wait(fn, args, limit, job)
        finally:
            with self._lock:
                self._jobs.discard(job)

    def _send_and_wait(self, fn: Callable[..., Any], args: tuple[Any, ...], limit: float, job: _Job) -> tuple[str, Any]:
        try:
            request = ("run", limit, pickle.dumps((fn, args), pickle.HIGHEST_PROTOCOL))
        except Exception as exc:  # noqa: BLE001 - e.g. arguments that do not pickle
            return "error", failed(exc)
        try:
            connection = self._connection()
        except (OSError, EOFError, multiprocessing.AuthenticationError) as exc:
            log.warning("parser.service_unreachable", extra={"error": repr(exc)})
            return "error", ProcessingError("the parser pool was stopped", reason="unavailable")
        if job.cancelled:
            self._release(connection)
            return "error", ProcessingError("the parser call was cancelled", reason="unavailable")
        try:
            connection.send(request)
            del request
            with job.lock:
                job.connection = connection
                if job.cancelled:  # cancelled while the job was being sent
                    connection.send(("cancel",))
            answer = connection.recv_bytes()
            with job.lock:  # from here a cancel has nothing to stop, and must not reach the next job
                job.connection = None
        except (OSError, EOFError) as exc:
            connection.close()
            log.warning("parser.service_lost", extra={"error": repr(exc)})
            return "error", ProcessingError("the parser pool was stopped", reason="unavailable")
        self._release(connection)
        try:
            outcome: tuple[str, Any] = pickle.loads(answer)  # noqa: S301 - our own parser process's answer
        except Exception as exc:  # noqa: BLE001 - an outcome that does not unpickle here
            return "error", failed(exc)
        return outcome

    async def run(self, fn: Callable[..., Any], args: tuple[Any, ...], limit: float) -> Any:
        job = _Job()
        with self._lock:
            self._jobs.add(job)
        future = self._threads.submit(self._exchange, fn, args, limit, job)
        try:
            kind, value = await wait_future(future)
        except anyio.get_cancelled_exc_class():
            # the job would go on in the supervisor: stop it (a tiny message; the thread ends when
            # the supervisor answers)
            job.cancel()
            raise
        if kind == "error":
            raise value
        return value

    def close(self) -> None:
        """Leave the shared pool: idle connections closed, jobs under way cancelled there (their
        threads end with the answer, so that the process's exit does not wait on a long parse)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            jobs = list(self._jobs)
        for connection in idle:
            connection.close()
        for job in jobs:
            job.cancel()
        self._threads.shutdown(wait=False, cancel_futures=True)
