"""SECURITY.md §4-5 under load: L1 (bounded load, 0 errors), H8 (no request fails because it
reached another worker), L3 (a SIGKILLed worker is replaced; only its in-flight requests fail),
R4 (RATE_LIMITED with retry_after).

The real ``python -m mcp_server --workers 2`` with fake embeddings; every MCP call opens fresh
connections, so its initialize and its tool call land on either worker. bench/load.py is the
long, configurable version (numbers for the benchmark report); tests/multiworker/ covers limits
and caches shared through Redis.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import psutil
import pytest

from tests.conftest import FileServer
from tests.mcp_harness import ThreadedServer, http_client, payload, server_process

from ._harness import call_tool, security_settings

pytestmark = pytest.mark.anyio

CLIENTS = 8
LOAD_SECONDS = 10.0


@dataclass
class Outcome:
    started: float
    ended: float
    ok: bool
    detail: str


@pytest.fixture(scope="module")
def workers() -> Iterator[tuple[psutil.Process, str]]:
    env = {"MCP_LOAD_MODELS": "false", "MCP_RATE_LIMIT_RPM": "1000000", "MCP_FETCH_ALLOWLIST": "127.0.0.1",
           "MCP_PARSE_WORKERS": "1"}
    with server_process(["--workers", "2"], env=env) as (proc, base):
        yield psutil.Process(proc.pid), base


def worker_pids(master: psutil.Process) -> set[int]:
    """uvicorn's worker processes: the master's spawned children (not its resource tracker)."""
    pids = set()
    for child in master.children():
        with contextlib.suppress(psutil.Error):  # a worker may be dying right now
            if any("spawn_main" in part for part in child.cmdline()) and child.status() != psutil.STATUS_ZOMBIE:
                pids.add(child.pid)
    return pids


def requests(corpus_server: FileServer) -> list[tuple[str, dict[str, Any]]]:
    url = corpus_server.url("docs/txt/UDHR_first_article_all.txt")
    return [
        ("detect_language", {"text": "A short English sentence for the load run."}),
        ("process_document", {"document_url": url}),
        ("retrieve_chunks", {"document_url": url, "query": "what is this about", "top_k": 3}),
        ("get_system_health", {}),
    ]


async def one_call(base: str, tool: str, args: dict[str, Any]) -> Outcome:
    started = time.monotonic()
    try:
        with anyio.fail_after(60):
            async with http_client(f"{base}/mcp", keepalive=False) as client:
                result = await client.call_tool(tool, args)
        ok, detail = not result.is_error, str(payload(result))[:200]
    except Exception as exc:  # a dropped connection, a 5xx, a timeout: all count as failures
        ok, detail = False, f"{type(exc).__name__}: {exc}"[:200]
    return Outcome(started, time.monotonic(), ok, detail)


async def run_clients(base: str, calls: list[tuple[str, dict[str, Any]]], seconds: float,
                      during: Any = None) -> list[Outcome]:
    outcomes: list[Outcome] = []
    deadline = time.monotonic() + seconds

    async def client(n: int) -> None:
        i = n
        while time.monotonic() < deadline:
            tool, args = calls[i % len(calls)]
            outcomes.append(await one_call(base, tool, args))
            i += 1

    async with anyio.create_task_group() as group:
        for n in range(CLIENTS):
            group.start_soon(client, n)
        if during is not None:
            group.start_soon(during)
    return outcomes


async def test_a_bounded_load_run_across_two_workers_ends_with_zero_errors(
    workers: tuple[psutil.Process, str], corpus_server: FileServer,
) -> None:
    master, base = workers
    calls = requests(corpus_server)
    for tool, args in calls:  # warm the caches and the index once
        assert (await one_call(base, tool, args)).ok
    outcomes = await run_clients(base, calls, LOAD_SECONDS)
    failures = [o.detail for o in outcomes if not o.ok]
    served_by = set()
    with httpx.Client(timeout=5, trust_env=False, limits=httpx.Limits(max_keepalive_connections=0)) as http:
        for _ in range(20):
            served_by.add(http.get(f"{base}/info").json()["pid"])
    print(f"load: {len(outcomes)} calls by {CLIENTS} clients in {LOAD_SECONDS:g} s, "
          f"{len(outcomes) / LOAD_SECONDS:.1f} calls/s, {len(failures)} errors")
    assert len(outcomes) >= CLIENTS
    assert failures == []
    assert served_by <= worker_pids(master)


async def test_a_worker_sigkilled_under_load_is_replaced_and_only_its_in_flight_requests_fail(
    workers: tuple[psutil.Process, str], corpus_server: FileServer,
) -> None:
    master, base = workers
    before = worker_pids(master)
    assert len(before) == 2
    victim = sorted(before)[0]
    killed_at: list[float] = []

    async def kill_then_wait_for_replacement() -> None:
        await anyio.sleep(2)  # let the load run first (the kill point, not synchronisation)
        killed_at.append(time.monotonic())
        os.kill(victim, signal.SIGKILL)
        with anyio.fail_after(60):
            while not (worker_pids(master) - before):  # bounded readiness poll
                await anyio.sleep(0.1)

    outcomes = await run_clients(base, requests(corpus_server), 8.0, kill_then_wait_for_replacement)
    after = worker_pids(master)
    assert victim not in after and len(after) == 2 and after - before
    failed = [o for o in outcomes if not o.ok]
    # Only calls already running when the worker died may fail: at most one per client.
    assert all(o.started <= killed_at[0] for o in failed), [o.detail for o in failed]
    assert len(failed) <= CLIENTS
    assert any(o.ok and o.started > killed_at[0] for o in outcomes)
    with httpx.Client(timeout=1.0, trust_env=False) as http:
        assert http.get(f"{base}/health").status_code == 200


async def test_a_client_over_its_rate_limit_gets_rate_limited_with_a_retry_after() -> None:
    with contextlib.ExitStack() as stack:
        from ._harness import running_server

        server: ThreadedServer = stack.enter_context(running_server(security_settings(rate_limit_rpm=2)))
        results = [await call_tool(server, "detect_language", {"text": "some English words here"}) for _ in range(3)]
    assert [failed for failed, _ in results] == [False, False, True]
    refused = results[2][1]
    assert refused["code"] == "RATE_LIMITED" and float(refused["retry_after"]) > 0
