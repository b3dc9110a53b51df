"""stdio transport: the SDK client over a spawned server, and a byte-level stdout purity check."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.mcp_harness import ROOT, payload, stdio_session

pytestmark = pytest.mark.anyio


async def test_stdio_client_lists_tools_calls_a_tool_and_reads_resources() -> None:
    async with stdio_session() as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("detect_language", {"text": "Questo è un testo scritto in italiano."})
        resource = await client.read_resource("rag://supported-formats")
        bad = await client.call_tool("detect_language", {"text": None})
    assert len(tools) == 13
    assert payload(result)["language_code"] == "it"
    assert "docx" in resource.contents[0].text  # type: ignore[union-attr]
    assert payload(bad)["code"] == "VALIDATION_ERROR"


def test_stdout_carries_only_json_rpc_in_stdio_mode() -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_system_health", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "detect_language", "arguments": {"text": 1}}},
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in messages)
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_server", "--transport", "stdio"], input=stdin.encode(), capture_output=True,
        cwd=ROOT, env={**os.environ, "MCP_LOG_DIR": "", "MCP_LOG_LEVEL": "DEBUG"}, timeout=240, check=False,
    )
    lines = [line for line in proc.stdout.decode().splitlines() if line.strip()]
    assert lines, proc.stderr.decode()[-2000:]
    parsed = [json.loads(line) for line in lines]  # every stdout line is JSON
    assert all(m.get("jsonrpc") == "2.0" for m in parsed)
    assert {m.get("id") for m in parsed} >= {1, 2, 3, 4}
    assert b"tool.start" in proc.stderr  # logs went to stderr
