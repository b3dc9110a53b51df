"""Loopback HTTP servers and helpers for the downloader tests."""

from __future__ import annotations

import http.server
import struct
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mcp_server.core.models import FetchedDocument
from mcp_server.core.settings import Settings
from mcp_server.fetch import Fetcher

Handler = http.server.BaseHTTPRequestHandler
Route = Callable[[Handler], None]


def make_settings(**overrides: Any) -> Settings:
    """Settings for tests: fixture server allowlisted, tiny waits, no .env file."""
    values: dict[str, Any] = {
        "fetch_allowlist": ["127.0.0.1"],
        "retry_backoff": [0.01],
        "download_deadline": 20,
        "connect_timeout": 5,
        "read_timeout": 10,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


async def fetch_once(url: str, settings: Settings | None = None, **kwargs: Any) -> FetchedDocument:
    """One fetch with a fresh Fetcher (``transport``/``resolver`` pass through)."""
    async with Fetcher(settings or make_settings(), **kwargs) as fetcher:
        return await fetcher.fetch(url)


def respond(
    handler: Handler, status: int = 200, body: bytes = b"", headers: dict[str, str] | None = None
) -> None:
    handler.send_response(status)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    routes: dict[str, Route]
    requests: list[Seen]
    hits: int

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.hits += 1  # every accepted connection counts, even one that never sends a request
        return True


class _RouteHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:  # noqa: N802
        self.server.requests.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}))
        route = self.server.routes.get(urlsplit(self.path).path)
        if route is None:
            respond(self, 404, b"no such route")
        else:
            route(self)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@dataclass
class LoopbackServer:
    httpd: _Server
    host: str
    port: int
    thread: threading.Thread = field(repr=False)

    @classmethod
    def start(cls, host: str) -> LoopbackServer:
        httpd = _Server((host, 0), _RouteHandler)
        httpd.routes, httpd.requests, httpd.hits = {}, [], 0
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        return cls(httpd, host, httpd.server_address[1], thread)

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def route(self, path: str, handler: Route) -> str:
        self.httpd.routes[path] = handler
        return self.url(path)

    def calls(self, path: str) -> int:
        return sum(1 for seen in self.httpd.requests if urlsplit(seen.path).path == path)

    @property
    def requests(self) -> list[Seen]:
        return self.httpd.requests

    @property
    def hits(self) -> int:
        return self.httpd.hits

    def reset(self) -> None:
        self.httpd.routes.clear()
        self.httpd.requests.clear()
        self.httpd.hits = 0

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def gzip_bomb_body(megabytes: int = 1024) -> bytes:
    """A valid gzip stream of ``megabytes`` MiB of zeros, built without compressing them all.

    After a full flush the compressor emits the same bytes for every further 1 MiB of zeros,
    so the middle is one block repeated; only the trailer (CRC, size) needs the whole length.
    """
    block = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeat = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.flush(zlib.Z_FINISH)[:-8]
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(block, crc)
    trailer = struct.pack("<II", crc, (megabytes << 20) & 0xFFFFFFFF)
    return first + repeat * (megabytes - 1) + tail + trailer
