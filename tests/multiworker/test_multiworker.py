"""Several worker processes behind one deployment: shared limits, caches and indexes, and survival.

Two server processes sharing one Redis and one index folder stand in for two uvicorn workers where
the test must decide which worker answers (uvicorn's accept is not steerable); the SIGKILL and
Redis-outage tests run the real ``--workers 2``.
"""

from __future__ import annotations

import contextlib
import os
import platform
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil
import pytest

from tests.conftest import FileServer
from tests.mcp_harness import (
    ThreadedServer,
    free_port,
    http_client,
    make_settings,
    payload,
    scratch_dir,
    server_process,
    stop_process,
)
from tests.multiworker.conftest import RedisServer

pytestmark = pytest.mark.anyio

KEYS = ["k-limit", "k-cache", "k-embed", "k-other"]


async def call(base: str, tool: str, args: dict[str, Any], key: str | None = None) -> tuple[bool, dict[str, Any]]:
    """One tool call on a fresh connection: (ok, structured payload)."""
    headers = {"Authorization": f"Bearer {key}"} if key else None
    async with http_client(f"{base}/mcp", headers=headers, keepalive=False) as client:
        result = await client.call_tool(tool, args)
    return not result.is_error, payload(result)


@pytest.fixture(scope="module")
def two_workers(module_redis: RedisServer) -> Iterator[tuple[str, str, Path]]:
    """Two fake-model servers on one Redis and one index folder: (base A, base B, index folder)."""
    index_dir = scratch_dir("rag-multiworker-index-")
    env = {"MCP_LOAD_MODELS": "false", "MCP_REDIS_URL": module_redis.url, "MCP_INDEX_DIR": str(index_dir),
           "MCP_FETCH_ALLOWLIST": "127.0.0.1", "MCP_API_KEYS": ",".join(KEYS), "MCP_RATE_LIMIT_RPM": "6",
           "MCP_GLOBAL_RATE_MULTIPLIER": "100"}
    with server_process([], env=env) as (_, base_a), server_process([], env=env) as (_, base_b):
        yield base_a, base_b, index_dir


async def test_a_clients_rate_limit_holds_across_two_workers_sharing_redis(
    two_workers: tuple[str, str, Path],
) -> None:
    base_a, base_b, _ = two_workers
    started = time.monotonic()
    results = [await call(base, "detect_language", {"text": "a sentence in English"}, "k-limit")
               for base in [base_a, base_b] * 5]
    refilled = int((time.monotonic() - started) / 10)  # 6 per minute: one token per 10 s
    ok = [r for r in results if r[0]]
    refused = [body for good, body in results if not good]
    assert 6 <= len(ok) <= 6 + refilled  # in-process buckets would allow 10 (6 per worker)
    assert {body["code"] for body in refused} == {"RATE_LIMITED"}
    assert all(body["retry_after"] > 0 for body in refused)
    good, health = await call(base_a, "get_system_health", {}, "k-other")
    assert good and health["rate_limit"]["backend"] == "redis"


async def test_a_document_processed_by_one_worker_is_a_cache_hit_on_another(
    two_workers: tuple[str, str, Path], corpus_server: FileServer,
) -> None:
    base_a, base_b, _ = two_workers
    url = corpus_server.url("docs/html/what_is_haystack.html")
    ok_a, first = await call(base_a, "process_document", {"document_url": url}, "k-cache")
    ok_b, second = await call(base_b, "process_document", {"document_url": url}, "k-cache")
    assert ok_a and ok_b
    assert (first["cached"], second["cached"]) == (False, True)
    assert second["content"] == first["content"]
    _, stats = await call(base_a, "manage_cache", {"action": "stats"}, "k-cache")
    document = stats["layers"]["document"]  # counted in Redis: A reports B's hit
    assert document["backend"] == "redis" and document["hits"] >= 1 and document["entries"] >= 1


async def test_two_workers_asked_for_the_same_new_document_at_once_embed_it_once(
    two_workers: tuple[str, str, Path], corpus_server: FileServer,
) -> None:
    base_a, base_b, index_dir = two_workers
    url = corpus_server.url("docs/txt/norwich-city.txt")

    async def builds() -> int:
        total = 0
        for base in (base_a, base_b):
            _, stats = await call(base, "manage_cache", {"action": "stats"}, "k-embed")
            total += stats["layers"]["index"]["builds"]
        return total

    before = await builds()
    answers: dict[str, dict[str, Any]] = {}

    async def ask(base: str) -> None:
        good, body = await call(base, "retrieve_chunks", {"document_url": url, "query": "When was the club founded?"},
                                "k-embed")
        assert good, body
        answers[base] = body

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(ask, base_a)
            group.start_soon(ask, base_b)
    assert await builds() - before == 1
    assert sorted(answers[base_a]["results"], key=str) == sorted(answers[base_b]["results"], key=str)
    stored = [p for p in index_dir.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(stored) == 1 and ".corrupt-" not in stored[0].name


def _health(base: str) -> dict[str, Any] | None:
    with contextlib.suppress(httpx.HTTPError):
        response = httpx.get(f"{base}/health", timeout=5)
        if response.status_code == 200:
            return dict(response.json())
    return None


async def test_a_worker_killed_with_sigkill_is_replaced_and_the_server_keeps_answering() -> None:
    with server_process(["--workers", "2"], env={"MCP_LOAD_MODELS": "false"}) as (_, base):
        good, body = await call(base, "get_system_health", {})
        assert good
        victim = body["worker"]["pid"]
        os.kill(victim, signal.SIGKILL)
        seen: set[int] = set()
        deadline = time.monotonic() + 90
        while not (seen - {victim}) or len(seen) < 2:  # the survivor and a replacement, bounded poll
            health = _health(base)
            assert health is not None, "a request after the kill failed"
            seen.add(health["worker"]["pid"])
            assert victim not in seen
            assert time.monotonic() < deadline, f"no replacement worker seen; pids {seen}"
            await anyio.sleep(0.05)  # pacing of the poll, not synchronisation
        good, _ = await call(base, "detect_language", {"text": "the server still answers tool calls"})
        assert good


def _awaits_a_health_check_answer(supervisor: int) -> bool:
    """The supervisor's main thread is blocked in poll() on one pipe with more than a second left:
    a health-check wait (between rounds it waits on a futex). x86-64 system call numbers."""
    fields = Path(f"/proc/{supervisor}/syscall").read_text().split()
    return fields[0] == "7" and int(fields[2], 16) == 1 and int(fields[3], 16) > 1000



@pytest.mark.skipif(platform.machine() != "x86_64", reason="reads x86-64 system call numbers from /proc")
async def test_a_worker_killed_while_the_supervisor_awaits_its_health_check_answer_is_replaced_at_once() -> None:
    # uvicorn's supervisor kept the worker's end of the pipe open: this wait lasted the whole timeout
    with server_process(["--workers", "2"], env={"MCP_LOAD_MODELS": "false",
                                                 "MCP_WORKER_HEALTHCHECK_TIMEOUT": "600"}) as (proc, base):
        health = _health(base)
        assert health is not None
        victim = health["worker"]["pid"]
        stop_process(victim)  # its pong thread cannot answer: the supervisor's next ping to it stays open
        held_since, deadline = None, time.monotonic() + 60
        while held_since is None or time.monotonic() - held_since < 1.0:
            # a healthy worker answers in milliseconds and the rounds are 0.5 s apart: a wait that
            # holds for a second is the wait for the stopped worker (bounded poll on a condition)
            if not _awaits_a_health_check_answer(proc.pid):
                held_since = None
            elif held_since is None:
                held_since = time.monotonic()
            assert time.monotonic() < deadline, "the supervisor never waited for the stopped worker"
            await anyio.sleep(0.01)
        os.kill(victim, signal.SIGKILL)
        seen: set[int] = set()
        deadline = time.monotonic() + 60  # a tenth of the health-check timeout
        while len(seen - {victim}) < 2:  # the survivor and a replacement, bounded poll
            health = _health(base)
            assert health is not None, "a request after the kill failed"
            seen.add(health["worker"]["pid"])
            assert time.monotonic() < deadline, f"no replacement worker seen; pids {seen}"
            await anyio.sleep(0.05)  # pacing of the poll, not synchronisation
        assert victim not in seen


async def test_workers_of_a_supervisor_killed_with_sigkill_exit_and_a_server_restarted_on_its_port_parses(
    corpus_server: FileServer, tmp_path: Path,
) -> None:
    """``kill -9`` of the server's own pid (the supervisor) once left its workers running: they kept
    the port, answered /health, and failed every document that needed the parser pool the supervisor
    ran ("the parser pool was stopped"); a server started again on that port could not bind it."""
    env = {"MCP_LOAD_MODELS": "false", "MCP_FETCH_ALLOWLIST": "127.0.0.1", "MCP_INDEX_DIR": str(tmp_path / "indexes")}
    url = corpus_server.url("docs/pdf/multi_page.pdf")
    with server_process(["--workers", "2"], env=env) as (supervisor, base):
        good, _ = await call(base, "chunk_document", {"document_url": url})
        assert good
        started = psutil.Process(supervisor.pid).children(recursive=True)
        assert len([p for p in started if "spawn_main" in " ".join(p.cmdline())]) >= 2  # the two workers
        os.kill(supervisor.pid, signal.SIGKILL)
        supervisor.wait()
        _, alive = psutil.wait_procs(started, timeout=60)  # bounded wait for their exit, not a pause
        assert not alive, f"outlived their supervisor: {[(p.pid, p.cmdline()[-1][:60]) for p in alive]}"
        with server_process(["--workers", "2"], env=env, port=int(base.rsplit(":", 1)[1])) as (_, again):
            good, body = await call(again, "chunk_document", {"document_url": url})
            assert good, body


async def test_redis_killed_mid_run_leaves_requests_succeeding_and_health_says_so(
    redis_server: RedisServer, corpus_server: FileServer,
) -> None:
    env = {"MCP_LOAD_MODELS": "false", "MCP_REDIS_URL": redis_server.url, "MCP_FETCH_ALLOWLIST": "127.0.0.1",
           "MCP_REDIS_RETRY_INTERVAL": "0.5", "MCP_RATE_LIMIT_RPM": "100000",
           "MCP_INDEX_DIR": str(scratch_dir("rag-multiworker-index-"))}
    with server_process(["--workers", "2"], env=env) as (_, base):
        good, body = await call(base, "process_document", {"document_url": corpus_server.url("docs/txt/fake-text.txt")})
        assert good and body["cached"] is False
        redis_server.kill()
        calls = [
            ("process_document", {"document_url": corpus_server.url("docs/html/test_blog.html")}),
            ("retrieve_chunks", {"document_url": corpus_server.url("docs/txt/fake-text.txt"), "query": "text"}),
            ("manage_cache", {"action": "stats"}),
            ("manage_cache", {"action": "clear"}),
            ("detect_language", {"text": "Redis is gone but the server is not"}),
        ]
        for tool, args in calls * 2:
            good, body = await call(base, tool, args)
            assert good, (tool, body)
        good, health = await call(base, "get_system_health", {})
        assert good and health["shared_store"]["rate_limit"] == "memory (redis unavailable)"
        redis_server.start()  # back on the same port: the workers return to it
        deadline = time.monotonic() + 60
        while health["shared_store"]["rate_limit"] != "redis":  # bounded poll on a condition
            assert time.monotonic() < deadline, health["shared_store"]
            await anyio.sleep(0.1)  # pacing (the retry interval is 0.5 s), not synchronisation
            good, health = await call(base, "get_system_health", {})
            assert good


async def test_a_server_whose_redis_is_down_at_start_serves_in_process_and_says_so() -> None:
    settings = make_settings(load_models=False, redis_url=f"redis://127.0.0.1:{free_port()}/0",
                             redis_retry_interval=60)
    with ThreadedServer(settings) as server:
        good, _ = await call(server.base, "detect_language", {"text": "served without the shared store"})
        assert good
        store = httpx.get(f"{server.base}/health").json()["shared_store"]
        assert store["redis_configured"] is True
        assert {store["rate_limit"], store["download"], store["document"]} == {"memory (redis unavailable)"}


async def test_without_redis_url_limits_and_caches_stay_in_process() -> None:
    with ThreadedServer(make_settings(load_models=False)) as server:
        store = httpx.get(f"{server.base}/health").json()["shared_store"]
        good, health = await call(server.base, "get_system_health", {})
    assert store["redis_configured"] is False
    assert {store["rate_limit"], store["download"], store["document"]} == {"memory"}
    assert good and health["rate_limit"]["backend"] == "memory"
