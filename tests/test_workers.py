"""--workers N: stateless streamable HTTP, so consecutive requests may reach any worker."""

from __future__ import annotations

import anyio
import pytest

from tests.mcp_harness import http_client, payload, server_process

pytestmark = pytest.mark.anyio


async def test_four_workers_answer_100_tool_calls_without_an_error() -> None:
    env = {"MCP_RATE_LIMIT_RPM": "100000", "MCP_LOAD_MODELS": "false"}
    with server_process(["--workers", "4"], env=env) as (_, base):
        errors: list[object] = []
        pids: set[int] = set()

        async def client_task(n: int) -> None:
            # A new TCP connection per request (no keep-alive): initialize and the call land on
            # whichever worker accepts them.
            async with http_client(f"{base}/mcp", keepalive=False) as client:
                for i in range(10):
                    tool = "get_system_health" if i % 2 else "detect_language"
                    args = {} if tool == "get_system_health" else {"text": f"request number {n}-{i} in English"}
                    result = await client.call_tool(tool, args)
                    body = payload(result)
                    if result.is_error:
                        errors.append(body)
                    elif tool == "get_system_health":
                        pids.add(body["worker"]["pid"])

        with anyio.fail_after(240):
            async with anyio.create_task_group() as group:
                for n in range(10):
                    group.start_soon(client_task, n)
    assert errors == []
    assert len(pids) >= 2, "requests never reached a second worker"
