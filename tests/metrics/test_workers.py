"""--workers 2 (real subprocess servers): one consistent view whichever worker answers the scrape."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import Counter
from pathlib import Path

import anyio
import httpx
import pytest

from tests.mcp_harness import free_port, server_process
from tests.metrics._helpers import call, scrape, value

pytestmark = pytest.mark.anyio


def _health_pid(base: str) -> int | None:
    with contextlib.suppress(httpx.HTTPError):
        response = httpx.get(f"{base}/health", timeout=5)
        if response.status_code == 200:
            return int(response.json()["worker"]["pid"])
    return None


async def test_two_workers_sum_to_the_calls_made_even_after_one_is_killed(tmp_path: Path) -> None:
    folder = tmp_path / "prometheus"
    folder.mkdir()
    (folder / "counter_1.db").write_bytes(b"left over from an earlier run")  # emptied at start, or scrapes fail
    env = {"MCP_LOAD_MODELS": "false", "MCP_RATE_LIMIT_RPM": "100000", "MCP_METRICS_MULTIPROC_DIR": str(folder)}
    with server_process(["--workers", "2"], env=env) as (_, base):
        made: Counter[str] = Counter()
        pids: set[int] = set()

        async def client(n: int) -> None:
            for i in range(6):
                tool = "get_system_health" if i % 2 else "detect_language"
                ok, body = await call(base, tool, {} if i % 2 else {"text": f"call {n}-{i} in plain English"})
                assert ok, body
                made[tool] += 1
                if tool == "get_system_health":
                    pids.add(body["worker"]["pid"])

        with anyio.fail_after(180):
            async with anyio.create_task_group() as group:
                for n in range(4):
                    group.start_soon(client, n)
        assert len(pids) == 2, "the calls never reached the second worker"
        assert {int(p.stem.rsplit("_", 1)[1]) for p in folder.glob("counter_*.db")} >= pids

        def check_totals() -> None:
            for _ in range(4):  # fresh connections: the scrape lands on either worker, the answer is the same
                samples = scrape(base)
                for tool, count in made.items():
                    assert value(samples, "rag_tool_calls_total", tool=tool, code="OK") == count
                    assert value(samples, "rag_tool_duration_seconds_count", tool=tool) == count

        check_totals()
        # livesum over the workers: each reports its share of the one pool they share (MCP_PARSE_WORKERS 2)
        assert value(scrape(base), "rag_parser_pool_workers") == 2

        victim = pids.pop()
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 120
        while (pid := _health_pid(base)) is None or pid in pids | {victim}:  # bounded poll for the replacement
            assert time.monotonic() < deadline, "no replacement worker answered"
            await anyio.sleep(0.1)  # pacing of the poll, not synchronisation
        check_totals()  # the killed worker's counters still count
        assert value(scrape(base), "rag_parser_pool_workers") == 2  # its live gauges do not
        assert not list(folder.glob(f"gauge_live*_{victim}.db"))


async def test_a_separate_metrics_port_serves_all_workers_behind_the_keys_and_the_main_port_does_not() -> None:
    port = free_port()
    env = {"MCP_LOAD_MODELS": "false", "MCP_API_KEYS": "scrape-key,other-key", "MCP_METRICS_PORT": str(port)}
    with server_process(["--workers", "2"], env=env) as (_, base):
        scraper = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/metrics", headers={"Authorization": "Bearer scrape-key"}).status_code == 404
        assert httpx.get(f"{scraper}/metrics").status_code == 401
        for n in range(4):
            assert (await call(base, "detect_language", {"text": f"sentence number {n}"}, "other-key"))[0]
        samples = scrape(scraper, "scrape-key")
        assert value(samples, "rag_tool_calls_total", tool="detect_language", code="OK") == 4
        assert httpx.get(f"{scraper}/mcp", headers={"Authorization": "Bearer scrape-key"}).status_code == 404
