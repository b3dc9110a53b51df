"""Servers the benchmarks measure: ``python -m mcp_server`` over streamable HTTP in a subprocess, a
loopback file server for the documents, a private redis-server, and an MCP SDK client session.

    with FileServer(DOCS) as files, server_process(env=server_env(MCP_INDEX_DIR=folder)) as server:
        async with mcp_session(server.mcp_url) as session:
            ms, body = await timed_call(session, "retrieve_chunks", {"document_url": files.url(...), ...})

Every figure comes from a real server process and the Python SDK's client, as an agent sees it.
Nothing here imports ``mcp_server`` or the tests: ``server_process(code=...)`` may run another
checkout (a baseline) beside this one. Waiting is a bounded poll on a condition (the server's
/health, the index builds), never a fixed sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import httpx2
import psutil
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

__all__ = [
    "ROOT", "FileServer", "RssSampler", "Server", "call_tool", "cpu_seconds", "free_port", "mcp_session", "payload",
    "redis_server", "server_env", "server_process", "timed_call", "wait_for_builds",
]

ROOT = Path(__file__).resolve().parent.parent


# --- the server under measurement -----------------------------------------------------------
def server_env(**overrides: str) -> dict[str, str]:
    """Environment of a measured server: documents fetched from 127.0.0.1, no rate limit in the way,
    no model hub, no log files; ``overrides`` (``MCP_INDEX_DIR=...``) on top."""
    return {"MCP_FETCH_ALLOWLIST": "127.0.0.1", "MCP_RATE_LIMIT_RPM": "1000000", "MCP_LOG_DIR": "",
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **overrides}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server(NamedTuple):
    process: subprocess.Popen[bytes]
    base: str  # http://127.0.0.1:<port>

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"


@contextlib.contextmanager
def server_process(args: Sequence[str] = (), env: dict[str, str] | None = None, *, code: Path | None = None,
                   ready_timeout: float = 300) -> Iterator[Server]:
    """``python -m mcp_server --port <free port> *args`` with ``env`` over this process's environment;
    yields once GET /health answers 200, stops the process group (SIGTERM, then SIGKILL after 30 s)
    on the way out. It runs in this checkout (``-m`` imports its package unless PYTHONPATH and
    PYTHONSAFEPATH say otherwise), or in the checkout ``code``, whose package then comes first; a
    checkout with its own ``.venv`` runs on that environment (a baseline on other dependencies, e.g.
    another MCP SDK), else on this one."""
    port = free_port()
    environment = {**os.environ, "MCP_LOG_DIR": "", **(env or {})}
    python = sys.executable
    if code is not None:
        code = code.resolve()
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), environment.get("PYTHONPATH")]))
        if (code / ".venv" / "bin" / "python").exists():
            python = str(code / ".venv" / "bin" / "python")
    proc = subprocess.Popen(
        [python, "-m", "mcp_server", "--port", str(port), *args], env=environment, cwd=str(code or ROOT),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout
        while True:  # readiness: a bounded poll on /health
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("server did not become healthy")
            time.sleep(0.1)
        yield Server(proc, base)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A private redis-server on a free loopback port, without persistence; yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server not found (make system-deps)")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def up() -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
        return False

    try:
        deadline = time.monotonic() + 20
        while not up():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        self.server.gets += 1  # type: ignore[attr-defined]  # FileServer.gets: the documents asked for
        super().do_GET()

    def send_response(self, code: int, message: str | None = None) -> None:
        if code == 304:  # an If-Modified-Since the file has not passed: FileServer.not_modified
            self.server.not_modified += 1  # type: ignore[attr-defined]
        super().send_response(code, message)


class FileServer:
    """A threaded HTTP server on 127.0.0.1 serving one folder; ``url(path)`` builds links. A context
    manager, or ``close()`` it."""

    def __init__(self, directory: Path) -> None:
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.httpd.gets = self.httpd.not_modified = 0  # type: ignore[attr-defined]
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, relative: str) -> str:
        return f"{self.base}/{relative.lstrip('/')}"

    @property
    def gets(self) -> int:
        """GET requests served so far (downloads, conditional or not)."""
        return int(self.httpd.gets)  # type: ignore[attr-defined]

    @property
    def not_modified(self) -> int:
        """Of those, the ones answered 304 Not Modified (no body)."""
        return int(self.httpd.not_modified)  # type: ignore[attr-defined]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FileServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- the client ---------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def mcp_session(url: str, headers: dict[str, str] | None = None, *, keepalive: bool = True,
                      read_timeout: float | None = 300) -> AsyncIterator[Client]:
    """A connected MCP SDK client over streamable HTTP (protocol 2026-07-28). ``read_timeout=None`` for
    calls that send nothing for minutes (a cold search over many filings)."""
    limits = httpx2.Limits() if keepalive else httpx2.Limits(max_keepalive_connections=0)
    timeout = httpx2.Timeout(60, read=read_timeout)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout, limits=limits) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        yield client


def payload(result: CallToolResult) -> dict[str, Any]:
    """A tool result as a dict: its structured content, or for an error (no structured content) the
    JSON error in its text."""
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]


async def call_tool(session: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The tool's result; a tool error raises RuntimeError (a benchmark must not score an error)."""
    result = await session.call_tool(tool, arguments)
    body = payload(result)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {body}")
    return body


async def timed_call(session: Client, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """(milliseconds the client waited, the result) of one call; a tool error raises RuntimeError."""
    started = time.perf_counter()
    body = await call_tool(session, tool, arguments)
    return (time.perf_counter() - started) * 1000, body


async def wait_for_builds(session: Client, poll: float = 0.5, limit: float = 3600) -> float:
    """Seconds until the server runs no background index build (``manage_cache`` stats): a
    benchmark waiting for a build to end, polled, bounded."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        stats = await call_tool(session, "manage_cache", {"action": "stats"})
        layers = stats["layers"]
        if not (layers.get("index") or layers["retriever"])["building"]:  # "retriever": a checkout before the rename
            return time.perf_counter() - started
        await asyncio.sleep(poll)
    raise RuntimeError(f"the background build did not finish within {limit:.0f} s")


# --- what a server process costs ------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its descendants (the parser workers): on a busy
    machine, what a call cost without the waiting for cores."""
    total = 0.0
    with contextlib.suppress(psutil.Error):
        process = psutil.Process(pid)
        for each in [process, *process.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                times = each.cpu_times()
                total += times.user + times.system
    return total


class RssSampler:
    """Polls the RSS of a process (and, apart, its children) until stopped; keeps the peaks."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.process = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self.peak_children = 0
        self.peak_tree = 0  # the process and its children together, at the same sample
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with contextlib.suppress(psutil.Error):
                own = self.process.memory_info().rss
                self.peak = max(self.peak, own)
                children = sum(c.memory_info().rss for c in self.process.children(recursive=True))
                self.peak_children = max(self.peak_children, children)
                self.peak_tree = max(self.peak_tree, own + children)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

