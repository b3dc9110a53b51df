"""A private redis-server per test on a free loopback port (the Debian package; skipped if absent)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest
import redis

from tests.mcp_harness import free_port

REDIS_SERVER = shutil.which("redis-server")


class RedisServer:
    """``redis-server`` without persistence; ``kill()`` and ``start()`` simulate an outage."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert REDIS_SERVER is not None
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + 20
        try:
            while True:  # readiness poll on a condition, bounded
                with contextlib.suppress(redis.ConnectionError):
                    if client.ping():
                        return
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.02)
        finally:
            client.close()

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port)


@contextlib.contextmanager
def running_redis() -> Iterator[RedisServer]:
    if REDIS_SERVER is None:  # `make test` installs it; a silent skip would hide a broken set-up
        pytest.fail("redis-server binary not found: run `make system-deps` (or apt-get install redis-server)")
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with running_redis() as server:
        yield server


@pytest.fixture(scope="module")
def module_redis() -> Iterator[RedisServer]:
    with running_redis() as server:
        yield server
