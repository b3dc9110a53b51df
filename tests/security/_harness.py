"""Helpers of the security suite (SECURITY.md): a real server behind a real client.

``running_server(settings)`` is the real HTTP app (ThreadedServer) with the real context, except
that its Fetcher resolves names through the fake DNS ``NAMES`` (answers mixing allowed and
blocked addresses, metadata, ...), so DNS cases are tested end to end through the tools.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_server.core.settings import Settings
from mcp_server.fetch import Fetcher, StaticResolver
from mcp_server.processors.sandbox import ParserPool
from mcp_server.server.build import create_server
from mcp_server.server.lifespan import open_app_context
from mcp_server.tools.context import AppContext
from tests.fetch.servers import LoopbackServer, respond
from tests.mcp_harness import ThreadedServer, make_settings, payload
from tests.processors import _sandbox_tasks

CANARY = "127.0.0.2"
# The fake DNS of the tool server (any other name does not resolve).
NAMES: dict[str, str | list[str]] = {
    "canary.test": CANARY,
    "fixture.test": "127.0.0.1",
    "mixed.test": ["127.0.0.1", CANARY],  # an allowed answer, then a blocked one
    "mixed-public.test": ["93.184.216.34", CANARY],
    "mixed6.test": ["2606:4700:4700::1111", f"::ffff:{CANARY}"],
    "metadata.test": "169.254.169.254",
    "rfc1918.test": "10.1.2.3",
    "cgnat.test": "100.64.0.1",
    "ula.test": "fd00::1",
    "linklocal6.test": "fe80::1",
    "loopback6.test": "::1",
    "nat64.test": "64:ff9b::7f00:2",
    "sixtofour.test": "2002:7f00:2::",
}


class _Resolver(StaticResolver):
    """The fake names, plus numeric hosts read as literals (so ``127.0.0.1`` still works)."""

    async def resolve(self, host: str, port: int) -> list[Any]:
        with contextlib.suppress(ValueError):
            return [ipaddress.ip_address(host.strip("[]"))]
        return await super().resolve(host, port)


# Documents with these names are not parsed: the real parser pool runs a hostile task instead.
HOSTILE_TASKS: dict[str, Callable[[], Any]] = {
    "hang.txt": _sandbox_tasks.hang,
    "crash.txt": _sandbox_tasks.abort,
    "allocate.txt": _sandbox_tasks.allocate_10gb,
}


class HostileParsers:
    """The real ParserPool, except that documents named in HOSTILE_TASKS hang, abort or allocate."""

    def __init__(self, pool: ParserPool) -> None:
        self._pool = pool

    async def run(self, fn: Callable[..., Any], *args: Any, timeout: float | None = None, size: int = 0) -> Any:
        task = HOSTILE_TASKS.get(getattr(args[0], "filename", "") if args else "")
        if task is not None:
            return await self._pool.run(task, timeout=timeout, size=size)
        return await self._pool.run(fn, *args, timeout=timeout, size=size)


def fake_dns_context(settings: Settings, hostile: bool = False) -> Callable[[Settings], Any]:
    """A context factory: the real one, with the Fetcher rebuilt on the fake resolver (and, if
    ``hostile``, the parser pool wrapped in HostileParsers)."""

    @contextlib.asynccontextmanager
    async def factory(_: Settings) -> AsyncIterator[AppContext]:
        async with open_app_context(settings) as context:
            service = context.service
            fetcher = Fetcher(settings, resolver=_Resolver(NAMES), uploads=service.fetcher.uploads)
            original, service.fetcher = service.fetcher, fetcher
            pool = service.parsers
            if hostile:
                service.parsers = HostileParsers(pool)  # type: ignore[assignment]
            try:
                yield context
            finally:
                service.fetcher, service.parsers = original, pool
                await fetcher.aclose()

    return factory


def security_settings(**overrides: Any) -> Settings:
    """Fake models, no rate limit in the way, short network timeouts, fast retries."""
    values: dict[str, Any] = {
        "load_models": False,
        "rate_limit_rpm": 100_000,
        "connect_timeout": 1,
        "read_timeout": 2,
        "download_deadline": 5,
        "parse_workers": 2,
    }
    values.update(overrides)
    return make_settings(**values)


def warm_parsers(server: ThreadedServer, web: LoopbackServer) -> ThreadedServer:
    """Both parser workers started first (their start pays for imports, not for a document)."""
    web.httpd.routes["/warm.txt"] = lambda h: respond(h, 200, b"warm up", {"Content-Type": "text/plain"})

    async def warm_up() -> None:
        async with anyio.create_task_group() as group:
            for n in range(2):
                group.start_soon(call_tool, server, "process_document", {"document_url": web.url(f"/warm.txt?{n}")})

    anyio.run(warm_up)
    return server


@contextlib.contextmanager
def running_server(settings: Settings, hostile: bool = False) -> Iterator[ThreadedServer]:
    server = create_server(settings, app_context_factory=fake_dns_context(settings, hostile))
    with ThreadedServer(settings, server) as running:
        yield running


async def call_tool(server: ThreadedServer, tool: str, args: dict[str, Any],
                    headers: dict[str, str] | None = None) -> tuple[bool, dict[str, Any]]:
    """One tool call over streamable HTTP with the SDK client: (isError, structured payload)."""
    async with direct_client(server.mcp_url, headers=headers) as client:
        result = await client.call_tool(tool, args)
    return bool(result.is_error), payload(result)


@contextlib.asynccontextmanager
async def direct_client(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """An SDK client that ignores proxy variables (the proxy test sets them for the server)."""
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120), trust_env=False) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        yield client


async def call_while_healthy(server: ThreadedServer, tool: str, args: dict[str, Any],
                             within: float = 2.0) -> tuple[bool, dict[str, Any], int]:
    """Call ``tool`` (bounded by ``within`` seconds) while GET /health is polled with a 1 s
    timeout; every poll must answer 200. Returns (isError, payload, number of polls)."""
    polls = 0
    async with direct_client(server.mcp_url) as client, httpx.AsyncClient(timeout=1.0, trust_env=False) as http:
        finished = anyio.Event()

        async def poll_health() -> None:
            nonlocal polls
            while not finished.is_set():
                response = await http.get(f"{server.base}/health")
                assert response.status_code == 200, response.text
                polls += 1
                await anyio.sleep(0.05)  # pacing, not synchronisation

        async with anyio.create_task_group() as group:
            group.start_soon(poll_health)
            try:
                with anyio.fail_after(within):
                    result = await client.call_tool(tool, args)
            finally:
                finished.set()
    return bool(result.is_error), payload(result), polls
