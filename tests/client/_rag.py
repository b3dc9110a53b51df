"""What the client tests need of the server, from the client's own environment (client/.venv): the
server as a subprocess of the server's environment (RAG_SERVER_PYTHON, default .venv/bin/python),
the corpus on a loopback file server, and an MCP 1.x client session (the SDK the adapters pin).

This module imports nothing of ``mcp_server`` or ``tests.mcp_harness``: those need mcp 2."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

ROOT = Path(__file__).resolve().parents[2]
SERVER_PYTHON = Path(os.environ.get("RAG_SERVER_PYTHON") or ROOT / ".venv" / "bin" / "python")
CORPUS = Path(os.environ.get("RAG_CORPUS_DIR") or ROOT / "tests" / "corpus").resolve()
# loopback documents fetchable, fast retries, no log files, no model hub
TEST_ENV = {
    "MCP_LOG_DIR": "", "MCP_FETCH_ALLOWLIST": "127.0.0.1", "MCP_RETRY_BACKOFF": "0,0,0",
    "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class FileServer:
    """A threaded HTTP server on 127.0.0.1 serving one folder; ``url(path)`` builds links."""

    def __init__(self, directory: Path) -> None:
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, relative: str) -> str:
        return f"{self.base}/{relative.lstrip('/')}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextlib.contextmanager
def rag_server_process(tmp: Path, **env: str) -> Iterator[str]:
    """``python -m mcp_server`` of the server's environment on a free port; yields the MCP endpoint URL."""
    if not SERVER_PYTHON.exists():
        raise RuntimeError(f"the server's Python is not at {SERVER_PYTHON}: run `make setup` or set RAG_SERVER_PYTHON")
    port = free_port()
    log = (tmp / f"server-{port}.log").open("wb")  # a file, so a chatty stderr never blocks the server
    proc = subprocess.Popen(
        [str(SERVER_PYTHON), "-m", "mcp_server", "--port", str(port)],
        env={**os.environ, **TEST_ENV, "MCP_INDEX_DIR": str(tmp / f"index-{port}"), **env}, cwd=str(ROOT),
        stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:  # readiness poll on a condition, bounded
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}; see {log.name}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("server did not become healthy")
            time.sleep(0.1)
        yield f"{base}/mcp"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        log.close()


@contextlib.asynccontextmanager
async def http_client(url: str) -> AsyncIterator[ClientSession]:
    """An mcp 1.x client session (handshake era) over streamable HTTP."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(60, read=300)) as http, \
            streamable_http_client(url, http_client=http) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def payload(result: CallToolResult) -> dict[str, Any]:
    if result.structuredContent is not None:
        return dict(result.structuredContent)
    return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]
