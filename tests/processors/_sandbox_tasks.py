"""Hostile and harmless task functions for the parser pool tests.

They live in an importable module (tests run with --import-mode=importlib, so test modules
cannot be unpickled by name in a worker process).
"""

from __future__ import annotations

import os
import time

from mcp_server.core.errors import RateLimitError, UnsupportedFormatError


def echo(value: str) -> str:
    return value


def pid() -> int:
    return os.getpid()


def hang() -> None:
    time.sleep(3600)


def abort() -> None:
    os.abort()


def allocate_10gb() -> int:
    return len(bytearray(10 * 1024**3))


def raise_typed() -> None:
    raise UnsupportedFormatError("unsupported format: test", kind="x")


def raise_rate_limit() -> None:
    raise RateLimitError("slow down", retry_after=2.5)


def raise_untyped() -> None:
    raise KeyError("library bug")


def busy(seconds: float) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return "done"


def niceness() -> int:
    return os.nice(0)


def language_profiles_loaded() -> bool:
    from langdetect import detector_factory

    return detector_factory._factory is not None


_KEPT: list[bytearray] = []


def grow(megabytes: int) -> int:
    """Keep ``megabytes`` of touched memory in this worker (as a big document's leftovers would)."""
    _KEPT.append(bytearray(b"x" * (megabytes * 2**20)))
    return os.getpid()


def loaded(names: tuple[str, ...]) -> list[str]:
    import sys

    return [name for name in names if name in sys.modules]


def hang_marked(fifo: str) -> None:
    """Say which process hangs (its pid, into the named pipe ``fifo`` the test reads), then hang."""
    with open(fifo, "w", encoding="ascii") as mark:
        mark.write(str(os.getpid()))
    time.sleep(3600)


def wait_for_word(fifo: str) -> str:
    """Hold the worker until the test writes into the named pipe ``fifo`` (opening it blocks until then)."""
    with open(fifo, encoding="ascii") as words:
        return words.read()
