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

Errors: a timeout -> ``ProcessingError("parsing took longer than N s")`` (it is the document's
fault, and retrying gives the same answer, so it is not the tool-level ``TIMEOUT``); a dead
worker or MemoryError -> ``ProcessingError("the parser crashed on this document")``; typed
errors raised in the worker come back unchanged; any other exception -> ``ProcessingError``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import multiprocessing
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

from mcp_server.core import metrics
from mcp_server.core.budget import release_memory
from mcp_server.core.errors import MCPServerError, ProcessingError
from mcp_server.core.settings import Settings

__all__ = ["ParserPool", "own_memory"]

T = TypeVar("T")
log = logging.getLogger(__name__)

# PyMuPDF is imported by the PDF reader only (the server process never loads it); workers get
# it and langdetect's profiles preloaded (_worker_preload), so a first document does not pay ~2 s.
_PRELOAD = ["mcp_server.processors", "mcp_server.processors._worker_preload"]
_MAX_TASKS = 200  # recycle workers now and then: parsers may leak
_START_TIMEOUT = 60  # seconds a worker may take to start at server start before it is given up


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


def _call(fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    """Runs in the worker: typed errors pass through, everything else becomes typed here,
    so nothing unpicklable crosses back."""
    try:
        return fn(*args)
    except MCPServerError:
        raise
    except MemoryError:
        raise ProcessingError("the parser crashed on this document", reason="out of memory") from None
    except Exception as exc:
        raise ProcessingError(f"the parser failed on this document ({type(exc).__name__})") from None


class ParserPool:
    """``await pool.run(process_document, inp, options)``; ``close()`` at shutdown."""

    def __init__(self, settings: Settings, *, preload: list[str] | None = None) -> None:
        self._timeout = settings.parse_timeout
        context = multiprocessing.get_context("forkserver")
        # Affects only the forkserver process (started lazily, once per server process).
        context.set_forkserver_preload(_PRELOAD if preload is None else preload)
        self._pool = ProcessPool(
            max_workers=settings.parse_workers,
            max_tasks=_MAX_TASKS,
            initializer=_init_worker,
            initargs=(settings.parse_memory_mb, settings.parse_nice, list(sys.path), settings.parse_worker_max_mb),
            context=context,
        )
        self._closed = False
        self._workers = settings.parse_workers
        self._running = 0  # run() calls under way
        self._finished = 0  # run() calls ended ...
        self._tidied = 0  # ... when ``tidy`` last ran
        metrics.parser_pool_size(settings.parse_workers)

    async def start(self) -> None:
        """Start every worker now (the forkserver, its preloaded imports, the forks) instead of on
        the first document. A worker that fails to start is logged; the pool replaces it."""
        futures = [self._pool.schedule(_call, args=(_started, ()), timeout=_START_TIMEOUT)
                   for _ in range(self._workers)]
        for future in futures:
            try:
                await asyncio.wrap_future(future)
            except Exception as exc:  # noqa: BLE001 - the first document will try again
                log.warning("parser.start_failed", extra={"error": repr(exc)})

    @metrics.parser_task
    async def run(self, fn: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        """``fn(*args)`` in a worker; ``fn`` and the arguments must pickle (module-level)."""
        if self._closed:
            raise ProcessingError("the parser pool is closed")
        limit = self._timeout if timeout is None else timeout
        future = self._pool.schedule(_call, args=(fn, args), timeout=limit)
        self._running += 1
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()  # pebble stops the worker running a cancelled task
            raise
        except MCPServerError:
            raise
        except (TimeoutError, concurrent.futures.TimeoutError) as exc:
            raise ProcessingError(f"parsing took longer than {limit:g} s", limit=limit) from exc
        except ProcessExpired as exc:
            raise ProcessingError("the parser crashed on this document", exitcode=exc.exitcode) from exc
        except concurrent.futures.CancelledError as exc:
            raise ProcessingError("the parser pool was stopped") from exc
        except Exception as exc:  # e.g. arguments that do not pickle
            raise ProcessingError(f"the parser failed on this document ({type(exc).__name__})") from exc
        finally:
            self._running -= 1
            self._finished += 1

    async def tidy(self) -> int:
        """When the pool is idle and has parsed since the last tidy: each worker gives freed heap
        back, and one still holding more than ~32 MB of its own memory (a fresh fork holds ~15)
        is replaced by a fresh fork. The number of workers replaced."""
        if self._closed or self._running or self._finished == self._tidied:
            return 0
        self._tidied = self._finished
        futures = [self._pool.schedule(_call, args=(_tidy, ()), timeout=_START_TIMEOUT) for _ in range(self._workers)]
        replaced = 0
        for future in futures:
            with contextlib.suppress(Exception):  # a worker that cannot even tidy is replaced by pebble
                replaced += bool(await asyncio.wrap_future(future))
        return replaced

    def close(self) -> None:
        """Stop the workers; running tasks are abandoned (shutdown must not wait on a hang)."""
        if self._closed:
            return
        self._closed = True
        self._pool.stop()
        self._pool.join(timeout=10)
