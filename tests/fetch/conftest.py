"""Fixtures for the downloader tests.

``web`` is a programmable HTTP server on 127.0.0.1 (reachable only through the test allowlist);
``canary`` listens on 127.0.0.2 and counts every TCP connection it accepts. SSRF tests aim at
the canary and end with ``canary.hits == 0``.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from .servers import LoopbackServer, gzip_bomb_body, respond


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def _web_server() -> Iterator[LoopbackServer]:
    server = LoopbackServer.start("127.0.0.1")
    yield server
    server.close()


@pytest.fixture(scope="session")
def _canary_server() -> Iterator[LoopbackServer]:
    server = LoopbackServer.start("127.0.0.2")
    server.httpd.routes["/"] = lambda h: respond(h, 200, b"canary")
    yield server
    server.close()


@pytest.fixture
def web(_web_server: LoopbackServer) -> LoopbackServer:
    _web_server.reset()
    return _web_server


@pytest.fixture
def canary(_canary_server: LoopbackServer) -> Iterator[LoopbackServer]:
    _canary_server.httpd.requests.clear()
    _canary_server.httpd.hits = 0
    yield _canary_server


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def gzip_bomb() -> bytes:
    """gzip of 1 GiB of zeros (about 1 MB on the wire)."""
    return gzip_bomb_body(1024)
