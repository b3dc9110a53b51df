"""The command line's part: multiprocess folder set-up, and metrics for stdio on their own port."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_server.__main__ import metrics_processes
from tests.mcp_harness import free_port, make_settings, payload, stdio_session
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
