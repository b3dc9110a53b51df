"""Fixtures for the security suite: the loopback fixture server and the canary.

``web`` (127.0.0.1) is the only fetchable fixture server: tool servers allowlist just 127.0.0.1.
``canary`` (127.0.0.2) answers a few paths and counts every TCP connection it accepts; each SSRF
test ends with ``canary.hits == 0`` and the fixture checks it again on teardown. Both are the
servers of tests/fetch/servers.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fetch.servers import LoopbackServer, respond

from ._harness import CANARY


@pytest.fixture(scope="session")
def _web_server() -> Iterator[LoopbackServer]:
    server = LoopbackServer.start("127.0.0.1")
    yield server
    server.close()


@pytest.fixture(scope="session")
def _canary_server() -> Iterator[LoopbackServer]:
    server = LoopbackServer.start(CANARY)
    yield server
    server.close()


@pytest.fixture
def web(_web_server: LoopbackServer) -> LoopbackServer:
    _web_server.reset()
    return _web_server


@pytest.fixture
def canary(_canary_server: LoopbackServer) -> Iterator[LoopbackServer]:
    _canary_server.reset()
    for path in ("/", "/latest/meta-data/", "/secret"):
        _canary_server.httpd.routes[path] = lambda h: respond(h, 200, b"canary secret")
    yield _canary_server
    assert _canary_server.hits == 0, "a request reached the canary"
