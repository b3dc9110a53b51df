"""JSON log lines with request id, tool and elapsed, on stderr and in daily files."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from mcp_server.core.logging import configure_logging
from tests.mcp_harness import memory_client

pytestmark = pytest.mark.anyio


async def test_tool_calls_log_json_events_with_request_id_tool_and_elapsed(tmp_path: Path) -> None:
    configure_logging("INFO", tmp_path)
    try:
        async with memory_client() as client:
            await client.call_tool("detect_language", {"text": "a sentence long enough to detect"})
            await client.call_tool("detect_language", {"text": ""})
    finally:
        configure_logging("INFO", None)
    files = list(tmp_path.glob("server_????-??-??.log"))
    assert len(files) == 1
    records = [json.loads(line) for line in files[0].read_text().splitlines()]
    by_request: dict[str, dict[str, dict[str, object]]] = {}
    for record in records:
        if record.get("tool") == "detect_language":
            by_request.setdefault(record["rid"], {})[record["msg"]] = record
    assert len(by_request) == 2 and all(len(rid) == 12 for rid in by_request)
    ok, failed = sorted(by_request.values(), key=lambda events: "tool.known_error" in events)
    assert set(ok) == {"tool.start", "tool.success"} and set(failed) == {"tool.start", "tool.known_error"}
    assert float(ok["tool.success"]["elapsed"]) >= 0  # type: ignore[arg-type]
    assert {"ts", "level", "logger"} <= set(ok["tool.success"])
    assert failed["tool.known_error"]["code"] == "VALIDATION_ERROR"


def test_noisy_libraries_log_at_warning_only() -> None:
    configure_logging("DEBUG", None)
    for name in ("httpx", "httpcore", "urllib3", "sentence_transformers", "filelock"):
        assert logging.getLogger(name).level == logging.WARNING
    configure_logging("INFO", None)
