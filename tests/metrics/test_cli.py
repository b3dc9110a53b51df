"""The command line's part: multiprocess folder set-up, and metrics for stdio on their own port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from mcp_server.__main__ import metrics_processes
from tests.mcp_harness import ROOT, free_port, make_settings, payload, stdio_session
from tests.metrics._helpers import scrape, value

pytestmark = pytest.mark.anyio


def test_one_in_process_worker_drops_an_inherited_prometheus_multiproc_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "/somewhere/else")
    with metrics_processes(make_settings(), multiprocess=False) as settings:
        assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ
        assert settings.metrics_multiproc_dir is None


def test_several_workers_get_an_emptied_folder_from_the_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.delenv("MCP_METRICS_MULTIPROC_DIR", raising=False)
    (tmp_path / "histogram_123.db").write_bytes(b"stale")
    (tmp_path / "keep.txt").write_text("not ours")
    with metrics_processes(make_settings(metrics_multiproc_dir=tmp_path), multiprocess=True) as settings:
        assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == os.environ["MCP_METRICS_MULTIPROC_DIR"] == str(tmp_path)
        assert settings.metrics_multiproc_dir == tmp_path
        assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    assert tmp_path.is_dir()  # the operator's folder stays


def test_without_the_setting_a_temporary_folder_lives_as_long_as_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.delenv("MCP_METRICS_MULTIPROC_DIR", raising=False)
    with metrics_processes(make_settings(), multiprocess=True) as settings:
        folder = settings.metrics_multiproc_dir
        assert folder is not None and folder.is_dir()
    assert not folder.exists()


def test_metrics_switched_off_set_up_no_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "/somewhere/else")
    with metrics_processes(make_settings(metrics_enabled=False), multiprocess=True) as settings:
        assert settings.metrics_multiproc_dir is None and "PROMETHEUS_MULTIPROC_DIR" not in os.environ


async def test_stdio_serves_metrics_on_the_metrics_port_and_keeps_stdout_clean() -> None:
    port = free_port()
    async with stdio_session(env={"MCP_LOAD_MODELS": "false", "MCP_METRICS_PORT": str(port)}) as client:
        first = await client.call_tool("detect_language", {"text": "Questo è un testo scritto in italiano."})
        second = await client.call_tool("detect_language", {"text": None})
        samples = scrape(f"http://127.0.0.1:{port}")
    assert payload(first)["language_code"] == "it" and payload(second)["code"] == "VALIDATION_ERROR"
    assert value(samples, "rag_tool_calls_total", tool="detect_language", code="OK") == 1
    assert value(samples, "rag_tool_calls_total", tool="detect_language", code="VALIDATION_ERROR") == 1


def test_with_a_metrics_port_stdout_still_carries_only_json_rpc(tmp_path: Path) -> None:
    port = free_port()
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_system_health", "arguments": {}}},
    ]
    errlog = (tmp_path / "stderr.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "--transport", "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=errlog, cwd=ROOT, env={**os.environ, "MCP_LOG_DIR": "", "MCP_LOG_LEVEL": "DEBUG",
                                      "MCP_LOAD_MODELS": "false", "MCP_METRICS_PORT": str(port)},
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    proc.stdin.flush()
    answered: set[int] = set()
    killer = threading.Timer(240, proc.kill)  # bounds the reads below
    killer.start()
    try:
        while answered < {1, 2}:
            line = proc.stdout.readline()
            if not line:
                break
            answered.add(json.loads(line).get("id", 0))  # every stdout line is a JSON message
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    finally:
        killer.cancel()
        proc.stdin.close()
        proc.stdout.read()
        proc.stdout.close()
        proc.wait(timeout=60)
        errlog.close()
    assert answered >= {1, 2}, (tmp_path / "stderr.log").read_text()[-2000:]
    assert 'rag_tool_calls_total{code="OK",tool="get_system_health"} 1.0' in scraped
    assert b"metrics.port" in (tmp_path / "stderr.log").read_bytes()  # the logs went to stderr
