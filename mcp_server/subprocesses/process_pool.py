"""The process pool under the parsers: pebble's ProcessPool on a forkserver, and the service that
shares one pool among the ``--workers`` server workers.

Under the processors' layer (it imports no parser) because the ``--workers`` supervisor runs the
shared pool: it must not load the processors (~35 MB) only to pass their jobs on. ``processors/sandbox.py`` is
the face the pipeline uses (``ParserPool``); the parser-side functions here run in the parser
processes, forked from a forkserver that preloads the processors (``processors/_worker_preload``).

One pool for all ``--workers``: the forkserver's preloaded image (~0.2 GB: PyMuPDF, its layout
model, trafilatura, pandas) would otherwise be there once per server worker. The supervisor starts
a ``ParserService`` (the pool behind a ``multiprocessing.connection`` Unix socket in a folder only
this user may enter, HMAC authenticated with the process's ``authkey``, which the worker processes
uvicorn spawns inherit) before the workers, and sets ``MCP_PARSER_SOCKET`` for them. A job and its
outcome cross the supervisor as bytes, pickled by the server worker and unpickled in the parser
process, and back: the supervisor never imports a parser or a document type, and the caller gets
the same object as from a pool of its own. Timeouts, the memory limit, crash handling, recycling
and tidying all stay pebble's, in the supervisor; a job whose caller cancels it (or dies) is
cancelled there, which stops the parser running it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import logging
import multiprocessing
import os
import pickle
import shutil
import socket
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable
from multiprocessing.connection import Connection, Listener
from pathlib import Path
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

from mcp_server.caches.budget import limit_arenas, release_memory
from mcp_server.core.concurrency import start_thread
from mcp_server.core.errors import MCPServerError, ProcessingError
from mcp_server.core.settings import Settings

__all__ = ["PebblePool", "ParserService", "call", "call_pickled", "failed", "own_memory", "typed_error"]

T = TypeVar("T")
log = logging.getLogger(__name__)

# PyMuPDF is imported by the PDF reader only (the server process never loads it); workers get
# it and langdetect's profiles preloaded (_worker_preload), so a first document does not pay ~2 s.
_PRELOAD = ["mcp_server.processors", "mcp_server.processors._worker_preload"]
_MAX_TASKS = 200  # recycle workers now and then: parsers may leak
_START_TIMEOUT = 60  # seconds a worker may take to start at server start before it is given up
_TIDY_PERIOD = 15.0  # seconds between two tidy rounds of the shared pool (a worker's own pool: its lifespan's)


def _init_worker(memory_mb: int, niceness: int, sys_path: list[str], retire_mb: int = 0) -> None:
    import resource

    # Python 3.11's forkserver ignores the parent's sys.path; tasks must unpickle in the same
    # import world as the caller (tests, or a server started from another directory).
    sys.path[:] = sys_path + [entry for entry in sys.path if entry not in sys_path]

    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # Tesseract (a child of the worker) inherits the limit; OpenMP threads would each reserve
    # address space and compete for the same cores as the other workers.
    os.environ["OMP_THREAD_LIMIT"] = "1"
    # With every core busy parsing, an equal-priority server process gets half a core at best and
    # /health or a warm search waits behind a parser bomb; lower priority leaves it the cores
    # whenever it has work, and parsers still use all of them otherwise.
    os.nice(niceness)
    _retire_when_grown(retire_mb * 2**20)


def _retire_when_grown(limit: int) -> None:
    """In a worker: after each task (its result already sent), give freed heap back and end the
    worker's task loop when its own memory still exceeds ``limit`` bytes (0: never). pebble's loop
    asks ``worker_get_next_task`` for the next task after sending a result and ends the process
    cleanly when it stops: the path of ``max_tasks``, so no task is ever lost."""
    from pebble.pool import process as pebble_process

    tasks = getattr(pebble_process, "worker_get_next_task", None)
    if tasks is None:  # another pebble: freed memory is still given back at max_tasks
        log.warning("parser.recycling_unavailable", extra={"pebble": getattr(pebble_process, "__name__", "")})
        return

    def next_task(channel: Any, max_tasks: int) -> Any:
        for task in tasks(channel, max_tasks):
            yield task
            release_memory()
            if _retiring or (limit and own_memory() > limit):
                return

    pebble_process.worker_get_next_task = next_task


_retiring = False  # in a worker: set by ``_tidy``, the worker ends after the task
# an idle worker holding more of its own memory than this is replaced by a fresh fork (``tidy``);
# a fresh one holds ~15 MB, the rest of its pages are the forkserver's, shared
_IDLE_OWN_BYTES = 32 * 2**20


def _tidy() -> bool:
    """The task of ``ParserPool.tidy``: True when this worker will end after it (a fresh fork
    replaces it)."""
    global _retiring
    release_memory()
    _retiring = own_memory() > _IDLE_OWN_BYTES
    return _retiring


def own_memory(pid: int | str = "self") -> int:
    """Bytes of a process's own pages (private clean + dirty: what ending it gives back); 0 if unknown."""
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    total += int(line.split()[1]) * 1024
    except OSError:
        return 0
    return total


def _started() -> None:
    """The task of ``ParserPool.start``: nothing, once the worker runs."""


def call(fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    """Runs in the worker: typed errors pass through, everything else becomes typed here,
    so nothing unpicklable crosses back."""
    try:
        return fn(*args)
    except MCPServerError:
        raise
    except MemoryError:
        raise ProcessingError("the parser crashed on this document", reason="out_of_memory") from None
    except Exception as exc:
        raise failed(exc) from None


def failed(exc: BaseException) -> ProcessingError:
    """The typed error of a parse that failed with an untyped exception (its type named, never its text)."""
    return ProcessingError(f"the parser failed on this document ({type(exc).__name__})")


def call_pickled(job: bytes) -> bytes:
    """Runs in the worker for a shared pool: ``job`` is a pickled ``(fn, args)``; the outcome goes
    back pickled, ``("ok", result)`` or ``("error", typed error)``, for the server worker that asked."""
    try:
        fn, args = pickle.loads(job)  # noqa: S301 - the job comes from a server worker of this server
        outcome: tuple[str, Any] = ("ok", call(fn, args))
    except MCPServerError as exc:
        outcome = ("error", exc)
    except Exception as exc:  # noqa: BLE001 - e.g. a function that no longer imports
        outcome = ("error", failed(exc))
    try:
        return pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - a result that does not pickle
        return pickle.dumps(("error", failed(exc)), pickle.HIGHEST_PROTOCOL)


def typed_error(exc: BaseException, limit: float) -> MCPServerError:
    """What a call that ended with ``exc`` in pebble raises: always a typed error."""
    if isinstance(exc, MCPServerError):
        return exc
    if isinstance(exc, (TimeoutError, concurrent.futures.TimeoutError)):
        return ProcessingError(f"parsing took longer than {limit:g} s", reason="timeout", limit=limit)
    if isinstance(exc, ProcessExpired):
        return ProcessingError("the parser crashed on this document", reason="crashed", exitcode=exc.exitcode)
    if isinstance(exc, concurrent.futures.CancelledError):
        return ProcessingError("the parser pool was stopped", reason="unavailable")
    return failed(exc)  # e.g. arguments that do not pickle


class PebblePool:
    """The pebble pool and its bookkeeping, driven from threads: a server process's own pool or the
    supervisor's shared one."""

    def __init__(self, settings: Settings, preload: list[str] | None) -> None:
        context = multiprocessing.get_context("forkserver")
        # Affects only the forkserver process (started lazily, once per process).
        context.set_forkserver_preload(_PRELOAD if preload is None else preload)
        self.pool = ProcessPool(
            max_workers=settings.parse_workers,
            max_tasks=_MAX_TASKS,
            initializer=_init_worker,
            initargs=(settings.parse_memory_mb, settings.parse_nice, list(sys.path), settings.parse_worker_max_mb),
            context=context,
        )
        self.workers = settings.parse_workers
        self.closed = False
        self._lock = threading.Lock()
        self._running = 0  # tasks scheduled and not ended
        self._finished = 0  # tasks ended ...
        self._tidied = 0  # ... when ``tidy`` last ran

    def schedule(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> concurrent.futures.Future[Any]:
        future = self.pool.schedule(fn, args=args, timeout=timeout)
        with self._lock:
            self._running += 1
        future.add_done_callback(self._ended)
        return future

    def _ended(self, _: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._running -= 1
            self._finished += 1

    def start(self) -> list[concurrent.futures.Future[Any]]:
        return [self.pool.schedule(call, args=(_started, ()), timeout=_START_TIMEOUT) for _ in range(self.workers)]

    def tidy(self) -> list[concurrent.futures.Future[Any]]:
        """The tidy tasks, one per worker, when the pool is idle and has parsed since the last tidy."""
        with self._lock:
            if self.closed or self._running or self._finished == self._tidied:
                return []
            self._tidied = self._finished
        return [self.pool.schedule(call, args=(_tidy, ()), timeout=_START_TIMEOUT) for _ in range(self.workers)]

    def close(self) -> None:
        """Stop the workers; running tasks are abandoned (shutdown must not wait on a hang)."""
        if self.closed:
            return
        self.closed = True
        self.pool.stop()
        self.pool.join(timeout=10)


def replaced_count(futures: list[concurrent.futures.Future[Any]]) -> int:
    replaced = 0
    for future in futures:
        with contextlib.suppress(Exception):  # a worker that cannot even tidy is replaced by pebble
            replaced += bool(future.result())
    return replaced


# --- one pool for every --workers worker -------------------------------------------------------------
class ParserService:
    """In the ``--workers`` supervisor: one pebble pool serving the workers over a Unix socket.

    Each connection carries one job at a time: ``("run", timeout, job bytes)`` is answered with the
    outcome's bytes; ``("cancel",)`` while it runs cancels it (pebble stops the parser running it),
    and so does the connection's end (a worker killed or stopped). Every ``_TIDY_PERIOD`` seconds an
    idle pool that has parsed since is tidied (``ParserPool.tidy``) and this process gives freed heap
    back (the outcomes it passed on)."""

    def __init__(self, settings: Settings, *, preload: list[str] | None = None) -> None:
        limit_arenas(settings.malloc_arenas)  # its threads pass big outcomes on: one arena each otherwise
        self._pebble = PebblePool(settings, preload)
        self._folder = Path(tempfile.mkdtemp(prefix="rag-parsers-"))  # 0700: this user only
        self.address = str(self._folder / "parsers.sock")
        self._authkey = bytes(multiprocessing.current_process().authkey)
        self._listener = Listener(self.address, family="AF_UNIX", authkey=self._authkey)
        self._stopping = threading.Event()
        if settings.parse_prestart:
            self._pebble.start()  # the workers start while the server workers load their models
        self._threads = [start_thread(self._accept, name="parser-service"),
                         start_thread(self._tidy_now_and_then, name="parser-service-tidy")]
        log.info("parser.service", extra={"socket": self.address, "workers": settings.parse_workers})

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                connection = self._listener.accept()
            except Exception as exc:  # noqa: BLE001 - a failed handshake, or the listener closed
                if self._stopping.is_set():
                    return
                log.warning("parser.service_refused", extra={"error": repr(exc)})
                continue
            if self._stopping.is_set():
                connection.close()
                return
            start_thread(self._serve, connection, name="parser-service-connection")

    def _serve(self, connection: Connection) -> None:
        """One connection: jobs one after another; the outcome is sent by the job's done callback.
        The job is held weakly: pebble holds it while it runs, and an answered job's bytes must not
        stay alive until the connection's next job."""
        running: Callable[[], concurrent.futures.Future[Any] | None] = lambda: None  # noqa: E731
        try:
            while True:
                request = connection.recv()
                if request[0] == "cancel":
                    _cancel(running())
                    continue
                _, limit, job = request
                try:
                    future = self._pebble.schedule(call_pickled, (job,), limit)
                except Exception as exc:  # noqa: BLE001 - a pool that cannot take work (stopping)
                    with contextlib.suppress(OSError, ValueError):
                        connection.send_bytes(pickle.dumps(("error", typed_error(exc, limit))))
                    continue
                del job, request
                running = weakref.ref(future)
                future.add_done_callback(functools.partial(_answer, connection, limit))
                del future
        except (EOFError, OSError):  # the worker left: its job is of no use to anyone now
            _cancel(running())
        finally:
            connection.close()

    def _tidy_now_and_then(self) -> None:
        while not self._stopping.wait(_TIDY_PERIOD):
            futures = self._pebble.tidy()
            if futures:
                replaced = replaced_count(futures)
                release_memory()
                if replaced:
                    log.info("parser.tidied", extra={"replaced": replaced})

    def close(self) -> None:
        """Stop the pool (running jobs are abandoned) and remove the socket."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as wake:  # the accepting thread's
            wake.connect(self.address)  # handshake fails at once on this, and it sees the stop
        self._threads[0].join(timeout=10)
        self._listener.close()
        self._pebble.close()
        shutil.rmtree(self._folder, ignore_errors=True)


def _cancel(future: concurrent.futures.Future[Any] | None) -> None:
    if future is not None:
        future.cancel()  # pebble stops the parser running it; a finished job stays as it is


def _answer(connection: Connection, limit: float, future: concurrent.futures.Future[Any]) -> None:
    """Done callback of a job (in pebble's thread): its outcome to the worker that asked."""
    with contextlib.suppress(OSError, ValueError):  # the worker left (or cancelled and closed)
        connection.send_bytes(_outcome(future, limit))


def _outcome(future: concurrent.futures.Future[Any], limit: float) -> bytes:
    """A finished job's answer as the worker unpickles it."""
    if future.cancelled():
        return pickle.dumps(("error", ProcessingError("the parser pool was stopped", reason="unavailable")))
    exc = future.exception()
    if exc is None:
        return future.result()
    return pickle.dumps(("error", typed_error(exc, limit)))



