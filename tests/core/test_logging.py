"""JSON log lines with request id, tool and elapsed, on stderr and in daily files."""

from __future__ import annotations

import ast
import json
import logging
import re
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


LOG_METHODS = {"debug", "info", "warning", "error", "exception", "critical"}
EVENT_NAME = re.compile(r"^[a-z_]+(\.[a-z_]+)+$")


def log_calls(path: Path) -> list[tuple[int, str]]:
    """(line, problem) of every logger call whose message is not a bare event name."""
    problems = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in LOG_METHODS and isinstance(node.func.value, ast.Name)
                and node.func.value.id in {"log", "logger"}):
            continue
        message = node.args[0] if node.args else None
        if not (isinstance(message, ast.Constant) and isinstance(message.value, str)
                and EVENT_NAME.match(message.value)):
            problems.append((node.lineno, "the message is not an event name like 'fetch.retry'"))
        elif len(node.args) > 1:
            problems.append((node.lineno, "values are formatted into the message instead of extra={...}"))
    return problems


def test_log_calls_name_an_event_and_pass_values_as_fields() -> None:
    package = Path(__file__).resolve().parents[2] / "mcp_server"
    problems = [f"{path.relative_to(package)}:{line}: {problem}"
                for path in sorted(package.rglob("*.py"))
                for line, problem in log_calls(path)]
    assert not problems, "\n".join(problems)


def test_the_log_call_check_sees_formatted_messages(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('log.info("index.built key=%s", key)\nlogger.info("fetch.done", extra={"a": 1})\n'
                      'logger.warning("download complete")\n')
    assert [line for line, _ in log_calls(sample)] == [1, 3]
