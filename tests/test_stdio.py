"""stdio transport: the SDK client over a spawned server, and a byte-level stdout purity check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError

from tests.mcp_harness import ROOT, TOOL_NAMES, payload, stdio_session

pytestmark = pytest.mark.anyio


async def test_stdio_client_lists_tools_calls_a_tool_and_reads_resources() -> None:
    async with stdio_session() as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("detect_language", {"text": "Questo è un testo scritto in italiano."})
        resource = await client.read_resource("rag://supported-formats")
        bad = await client.call_tool("detect_language", {"text": None})
    assert len(tools) == len(TOOL_NAMES)
    assert payload(result)["language_code"] == "it"
    assert "docx" in resource.contents[0].text  # type: ignore[union-attr]
    assert payload(bad)["code"] == "VALIDATION_ERROR"


async def test_the_sdks_mcp_command_runs_the_server_file_of_the_checkout() -> None:
    # `mcp run server.py` (mcp[cli]; `mcp dev` and `mcp install` start the same file through uv)
    mcp_command = Path(sys.executable).with_name("mcp")
    async with stdio_session(command=[str(mcp_command), "run", "server.py"]) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("detect_language", {"text": "Questo è un testo scritto in italiano."})
    assert sorted(tool.name for tool in tools) == sorted(TOOL_NAMES)
    assert payload(result)["language_code"] == "it"


async def test_an_unknown_resource_is_not_found_and_an_unknown_prompt_is_invalid_params_over_stdio() -> None:
    async with stdio_session() as client:
        with pytest.raises(MCPError) as resource:
            await client.read_resource("rag://nope")
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("no_such_prompt")
        known = await client.read_resource("rag://tool-descriptions")
    assert (resource.value.error.code, resource.value.error.data) == (-32002, {"uri": "rag://nope"})
    assert "rag://nope" in resource.value.error.message
    assert (prompt.value.error.code, prompt.value.error.message) == (-32602, "Unknown prompt: no_such_prompt")
    assert "retrieve_chunks" in known.contents[0].text  # type: ignore[union-attr]


def test_stdout_carries_only_json_rpc_in_stdio_mode(tmp_path: Path) -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_system_health", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "detect_language", "arguments": {"text": 1}}},
    ]
    errlog = (tmp_path / "stderr.log").open("wb")  # a file, so a chatty stderr can never block the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "--transport", "stdio"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=errlog, cwd=ROOT,
        env={**os.environ, "MCP_LOG_DIR": "", "MCP_LOG_LEVEL": "DEBUG"},
    )
    assert proc.stdin and proc.stdout
    for message in messages:
        proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    lines: list[bytes] = []
    answered: set[int] = set()
    # Keep stdin open until every request is answered (EOF ends the session); the timer bounds it.
    killer = threading.Timer(240, proc.kill)
    killer.start()
    try:
        while answered < {1, 2, 3, 4}:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            answered.add(json.loads(line).get("id", 0))  # every stdout line is a JSON message
    finally:
        killer.cancel()
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.stdout.close()
        proc.wait(timeout=60)
        errlog.close()
    stderr = (tmp_path / "stderr.log").read_bytes()
    lines += [line for line in rest.splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines]
    assert answered >= {1, 2, 3, 4}, stderr.decode()[-2000:]
    assert all(m.get("jsonrpc") == "2.0" for m in parsed)
    assert b"tool.start" in stderr  # the logs went to stderr
