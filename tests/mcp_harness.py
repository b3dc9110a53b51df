"""Real MCP clients against the server: in memory, over streamable HTTP, over stdio.

Each is the 2.x SDK's ``mcp.Client``, which negotiates the newest protocol the server speaks
(2026-07-28, per-request envelope) unless a test asks for the handshake era (``mode="legacy"``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client.client import ConnectMode
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from mcp_server.core.settings import Settings
from mcp_server.embedding.registry import MINILM_ID
from mcp_server.server.app import create_app
from mcp_server.server.build import RagMCP, create_server
from mcp_server.tools import TOOLS
from mcp_server.tools.common import tool

ROOT = Path(__file__).resolve().parent.parent
# The tools every client must list: read from the one list the server registers (``tools.TOOLS``),
# never a count written by hand.
TOOL_NAMES = frozenset(fn.__name__ for fn in TOOLS)


class ExplicitSettings(Settings):
    """Settings from the values given and the field defaults only: never the environment, never a
    ``.env`` file, so a test sees the same configuration on every machine."""

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


SCRATCH_DIRS: list[Path] = []  # folders of scratch_dir, removed when the test session ends (conftest.py)


def scratch_dir(prefix: str = "rag-test-index-") -> Path:
    """A new folder in the system's temporary folder (an index folder a test server writes), removed
    when the test session ends: the suite leaves nothing behind in /tmp."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    SCRATCH_DIRS.append(folder)
    return folder


def make_settings(**overrides: Any) -> Settings:
    """Settings for tests: no log files, loopback fixtures fetchable, fast retries, and models that
    do not depend on what the machine's model cache holds (MiniLM, bundled with the package, serves
    both embedder roles; no reranker), unless a test asks for others. Parser workers start on
    first use (many test servers never parse)."""
    base: dict[str, Any] = {
        "log_dir": None,
        "fetch_allowlist": ["127.0.0.1"],
        "retry_backoff": [0.0, 0.0, 0.0],
        "embedding_fast": MINILM_ID,
        "embedding_accurate": "",
        "reranker": "",
        "parse_prestart": False,  # workers start with a test's first document, as most never parse
        "index_dir": overrides.pop("index_dir", None) or scratch_dir(),
    }
    base.update(overrides)
    return ExplicitSettings(**base)


@tool("utility", title="Wait forever", summary="never finishes (timeout tests)", returns="—")
async def wait_forever() -> dict[str, Any]:
    """A tool that never finishes, for timeout tests (``server.add_guarded_tool(wait_forever)``)."""
    await anyio.Event().wait()
    return {}


@contextlib.asynccontextmanager
async def memory_client(server: RagMCP | None = None, mode: ConnectMode = "auto",
                        **settings: Any) -> AsyncIterator[Client]:
    """The server in this process, without framing (2026-07-28) or over memory streams (``mode="legacy"``)."""
    server = server or create_server(make_settings(**settings))
    async with Client(server, mode=mode) as client:
        yield client


def payload(result: CallToolResult) -> dict[str, Any]:
    """The result of a tool call as a dict: its structured content, or for an error (which carries
    no structured content) the JSON error in its text content."""
    if result.structured_content is not None:
        return dict(result.structured_content)
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ThreadedServer:
    """The real HTTP app under uvicorn in a background thread, on an ephemeral loopback port."""

    def __init__(self, settings: Settings, server: RagMCP | None = None) -> None:
        app = create_app(settings, server)
        self.uvicorn = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None,
                                                     lifespan="on"))
        self.thread = threading.Thread(target=self.uvicorn.run, daemon=True)

    def __enter__(self) -> ThreadedServer:
        self.thread.start()
        deadline = time.monotonic() + 120
        while not self.uvicorn.started:  # readiness poll on a condition, bounded
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("test server did not start")
            time.sleep(0.02)
        port = self.uvicorn.servers[0].sockets[0].getsockname()[1]
        self.base = f"http://127.0.0.1:{port}"
        self.mcp_url = f"{self.base}/mcp"
        return self

    def __exit__(self, *exc: object) -> None:
        self.uvicorn.should_exit = True
        self.thread.join(timeout=30)


@contextlib.asynccontextmanager
async def http_client(url: str, headers: dict[str, str] | None = None, keepalive: bool = True,
                      mode: ConnectMode = "auto") -> AsyncIterator[Client]:
    limits = httpx2.Limits() if keepalive else httpx2.Limits(max_keepalive_connections=0)
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=300), limits=limits) as http, \
            Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client


async def call_raw(server: ThreadedServer, tool: str, **arguments: Any) -> CallToolResult:
    """One tool call over a fresh streamable HTTP session to ``server``."""
    async with http_client(server.mcp_url) as client:
        return await client.call_tool(tool, arguments)


async def call(server: ThreadedServer, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    """One tool call over HTTP: (is it an error, its payload)."""
    result = await call_raw(server, tool, **arguments)
    return result.is_error, payload(result)


@contextlib.asynccontextmanager
async def stdio_session(env: dict[str, str] | None = None, mode: ConnectMode = "auto",
                        command: list[str] | None = None) -> AsyncIterator[Client]:
    """A client of the server over stdio, started by ``command`` (default ``python -m mcp_server``)."""
    command = command or [sys.executable, "-m", "mcp_server", "--transport", "stdio"]
    params = StdioServerParameters(
        command=command[0], args=command[1:], env={**os.environ, "MCP_LOG_DIR": "", **(env or {})}, cwd=str(ROOT),
    )
    with open(os.devnull, "w") as devnull:
        async with Client(stdio_client(params, errlog=devnull), mode=mode) as client:
            yield client


@contextlib.contextmanager
def server_process(args: list[str], env: dict[str, str] | None = None, ready_timeout: float = 180,
                   port: int | None = None) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``python -m mcp_server`` in a subprocess on ``port`` (default a free one); yields (process, base URL)."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "--port", str(port), *args],
        env={**os.environ, "MCP_LOG_DIR": "", **(env or {})}, cwd=str(ROOT),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("server did not become healthy")
            time.sleep(0.1)
        yield proc, base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def stop_process(pid: int) -> None:
    """SIGSTOP, then wait until every thread has stopped (a worker's health-check thread then
    cannot answer its supervisor's ping; bounded poll of /proc)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 30
    tasks = Path(f"/proc/{pid}/task")
    while not all((task / "stat").read_text().rsplit(")", 1)[1].split()[0] in "tT" for task in tasks.iterdir()):
        assert time.monotonic() < deadline, "the worker did not stop"
        time.sleep(0.01)
