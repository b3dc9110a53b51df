"""Child processes, started one way: a program that runs to its end (``run``), or a long-lived child
(``start``) stopped with ``stop`` or, with its own session, killed whole with ``kill_group``. Our
own scripts run on this interpreter in isolated mode (``python_argv``). The parser pool's workers
are the one other kind: multiprocessing's forkserver children (``subprocesses/process_pool.py``).
Seen from the other side, a server worker that a supervisor started ends with it
(``ended_with_supervisor``)."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from mcp_server.core.concurrency import start_thread

__all__ = ["Child", "TimeoutExpired", "ended_with_supervisor", "kill_group", "python_argv", "run", "start", "stop"]

log = logging.getLogger(__name__)

SUPERVISOR_CHECK_SECONDS = 1.0  # how soon a worker notices that its supervisor is gone

Child = subprocess.Popen[bytes]
TimeoutExpired = subprocess.TimeoutExpired


def python_argv(script: Path, *args: str) -> list[str]:
    """One of our scripts on this interpreter, isolated (-I: no user site, no PYTHON* variables)."""
    return [sys.executable, "-I", str(script), *args]


def run(argv: Sequence[str], *, timeout: float,
        env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``argv`` to its end, its output captured as text (TimeoutExpired after ``timeout`` seconds,
    the child killed; OSError when it cannot start)."""
    return subprocess.run(list(argv), capture_output=True, text=True, env=env, timeout=timeout,  # noqa: S603
                          check=False)


def start(argv: Sequence[str], *, env: Mapping[str, str], pipes: bool = False, cwd: str | None = None,
          own_session: bool = False) -> Child:
    """A child that runs beside us: with ``pipes`` we talk over its stdin and stdout (its stderr is
    ours); without, it reads and writes nothing. ``own_session``: a group of its own, so that
    ``kill_group`` reaches the grandchildren it starts."""
    stream = subprocess.PIPE if pipes else subprocess.DEVNULL
    return subprocess.Popen(list(argv), stdin=stream, stdout=stream,  # noqa: S603 - callers give fixed programs
                            stderr=None if pipes else subprocess.DEVNULL, env=dict(env), cwd=cwd, close_fds=True,
                            start_new_session=own_session)


def stop(child: Child, *, grace: float) -> None:
    """Close its pipes (a child reading them ends) and wait ``grace`` seconds, then kill it."""
    for stream in (child.stdin, child.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def kill_group(child: Child) -> None:
    """The child's whole session killed (it was started with ``own_session``) and the child reaped."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()


@contextlib.contextmanager
def ended_with_supervisor(every: float = SUPERVISOR_CHECK_SECONDS) -> Iterator[None]:
    """In a server worker that a supervisor started through multiprocessing (uvicorn's ``--workers``
    and ``--reload``): once the supervisor is gone, this process sends itself SIGTERM, its graceful
    shutdown. A supervisor killed with SIGKILL cannot stop its workers, and uvicorn's workers do not
    notice (each keeps both ends of its health-check pipe): they kept the port, answered /health and
    failed every call that needed the parser pool the supervisor ran, and a server started again on
    that port could not bind it. A check of the parent's pid every ``every`` seconds, in a thread,
    while the block runs; in a process of its own (one worker, stdio, tests) nothing is watched.
    The supervisor is the process that started this one, not the parent at the time the block
    starts: a worker still starting when the supervisor was killed has been reparented already."""
    parent = multiprocessing.parent_process()
    if parent is None:
        yield
        return
    supervisor = parent.pid
    done = threading.Event()

    def watch() -> None:
        while True:
            if os.getppid() != supervisor:  # reparented: the supervisor has exited
                log.error("server.supervisor_gone", extra={"supervisor_pid": supervisor, "action": "shutting down"})
                os.kill(os.getpid(), signal.SIGTERM)
                return
            if done.wait(every):
                return

    start_thread(watch, name="supervisor-watch")
    try:
        yield
    finally:
        done.set()
