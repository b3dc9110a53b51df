"""Child processes, started one way: a program that runs to its end (``run``), or a long-lived child
(``start``) stopped with ``stop`` or, with its own session, killed whole with ``kill_group``. Our
own scripts run on this interpreter in isolated mode (``python_argv``). The parser pool's workers
are the one other kind: multiprocessing's forkserver children (``subprocesses/process_pool.py``)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["Child", "TimeoutExpired", "kill_group", "python_argv", "run", "start", "stop"]

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
