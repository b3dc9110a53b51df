"""The MCP Inspector's CLI, a TypeScript SDK client, against the live HTTP server.

It lists and reads, and calls every tool once with good and once with bad input. TypeScript
clients check ``structuredContent`` against the tool's output schema even on errors, so an error
that carried its dict there reached the user as "Structured content does not match the tool's
output schema" instead of its code and message; these tests read what the Inspector prints.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from mcp_server.server.viewer import VIEWER_URI
from tests.clients_js._calls import BAD, GOOD, MULTI_PAGE_PDF, Call, error_body
from tests.clients_js._node import Run, inspector
from tests.clients_js.conftest import API_KEY
from tests.conftest import FileServer
from tests.mcp_harness import TOOL_NAMES, ThreadedServer, make_settings

RESOURCES = ("rag://supported-formats", "rag://tool-descriptions")
UNKNOWN_RESOURCE = "rag://no-such-resource"
TOOL_IS_ERROR = 5  # the Inspector CLI's exit status for a result with isError
REQUEST_FAILED = 1  # its exit status for a JSON-RPC error (it prints the message, not the code)


def call_args(call: Call, corpus: str) -> list[str]:
    return ["--method", "tools/call", "--tool-name", call.tool, "--tool-args-json", json.dumps(call.bound(corpus))]


@pytest.fixture(scope="module")
def printed(node: Path, node_home: Path, keyed_server: ThreadedServer, corpus_server: FileServer) -> dict[str, Run]:
    """Every Inspector run of this module, started up front three at a time (one Node process each)."""
    target = [keyed_server.mcp_url, "--header", f"Authorization: Bearer {API_KEY}"]
    jobs = {
        "tools/list": ["--method", "tools/list"],
        "resources/list": ["--method", "resources/list"],
        **{uri: ["--method", "resources/read", "--uri", uri] for uri in (*RESOURCES, UNKNOWN_RESOURCE)},
        **{call.id: call_args(call, corpus_server.base) for call in GOOD + BAD},
    }
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(inspector, target + args, home=node_home) for name, args in jobs.items()}
    return {name: future.result() for name, future in futures.items()}


def result_of(run: Run) -> dict[str, Any]:
    return run.json()


def test_the_inspector_lists_every_tool_with_an_output_schema(printed: dict[str, Run]) -> None:
    run = printed["tools/list"]
    assert run.returncode == 0, run.printed
    tools = result_of(run)["tools"]
    assert {tool["name"] for tool in tools} == TOOL_NAMES
    assert all(tool["outputSchema"]["type"] == "object" for tool in tools)


def test_the_inspector_lists_the_three_resources_and_reads_both_json_ones(printed: dict[str, Run]) -> None:
    listed = {resource["uri"]: resource for resource in result_of(printed["resources/list"])["resources"]}
    assert set(listed) == {*RESOURCES, VIEWER_URI}
    assert listed[VIEWER_URI]["mimeType"] == "text/html;profile=mcp-app"  # the citation viewer (MCP App)
    formats = json.loads(result_of(printed["rag://supported-formats"])["contents"][0]["text"])
    tools = json.loads(result_of(printed["rag://tool-descriptions"])["contents"][0]["text"])
    assert "pdf" in {entry["doc_type"] for entry in formats["formats"]}
    assert {entry["name"] for entry in tools["tools"]} == TOOL_NAMES


def test_the_inspector_shows_an_unknown_resource_as_not_found_with_its_uri(printed: dict[str, Run]) -> None:
    run = printed[UNKNOWN_RESOURCE]
    assert run.returncode == REQUEST_FAILED, run.printed
    assert f"Resource not found: {UNKNOWN_RESOURCE}" in run.stderr, run.printed


@pytest.mark.parametrize("call", GOOD, ids=lambda call: call.id)
def test_every_tool_answers_good_input_in_the_inspector(call: Call, printed: dict[str, Run]) -> None:
    run = printed[call.id]
    assert run.returncode == 0, run.printed
    result = result_of(run)
    assert result["isError"] is False
    assert call.expect in json.dumps(result["structuredContent"], ensure_ascii=False), run.stdout[:2000]


@pytest.mark.parametrize("call", BAD, ids=lambda call: call.id)
def test_every_tool_error_shows_its_code_and_message_in_the_inspector(call: Call, printed: dict[str, Run]) -> None:
    run = printed[call.id]
    assert run.returncode == TOOL_IS_ERROR, run.printed
    assert call.code in run.stdout and call.expect in run.stdout, run.printed  # what a person reads
    result = result_of(run)
    assert result["isError"] is True and "structuredContent" not in result
    body = error_body(result["content"][0]["text"])
    assert body["code"] == call.code and call.expect in body["error"] and len(body["request_id"]) == 12


def test_the_inspector_prints_a_png_image_block_and_a_read_cursor_that_reads_on(
    printed: dict[str, Run], node_home: Path, keyed_server: ThreadedServer, corpus_server: FileServer,
) -> None:
    image_run = printed["get_page_image-ok"]
    images = [block for block in result_of(image_run)["content"] if block["type"] == "image"]
    assert len(images) == 1 and images[0]["mimeType"] == "image/png", image_run.printed
    assert images[0]["data"].startswith("iVBORw0KGgo")  # base64 of the PNG signature
    assert '"type": "image"' in image_run.stdout and "iVBORw0KGgo" in image_run.stdout
    read_run = printed["read_document-ok"]
    cursor = result_of(read_run)["structuredContent"]["next_cursor"]
    assert cursor and cursor in read_run.stdout, read_run.printed
    # the cursor, as printed, continues the read in a new Inspector process (a new session)
    arguments = {"document_url": MULTI_PAGE_PDF.replace("{corpus}", corpus_server.base), "cursor": cursor,
                 "max_tokens": 200}
    following = inspector([keyed_server.mcp_url, "--header", f"Authorization: Bearer {API_KEY}", "--method",
                           "tools/call", "--tool-name", "read_document", "--tool-args-json", json.dumps(arguments)],
                          home=node_home)
    assert following.returncode == 0, following.printed
    second = result_of(following)["structuredContent"]
    first = result_of(read_run)["structuredContent"]
    assert second["location"]["start_char"] >= first["location"]["end_char"] and second["text"] != first["text"]


def test_a_rate_limited_call_shows_rate_limited_and_retry_after_in_the_inspector(node: Path, node_home: Path) -> None:
    with ThreadedServer(make_settings(rate_limit_rpm=1, load_models=False)) as server:
        health = [server.mcp_url, "--method", "tools/call", "--tool-name", "get_system_health"]
        first, second = inspector(health, home=node_home), inspector(health, home=node_home)
    assert first.returncode == 0, first.printed
    assert second.returncode == TOOL_IS_ERROR and "RATE_LIMITED" in second.stdout, second.printed
    body = error_body(result_of(second)["content"][0]["text"])
    assert body["code"] == "RATE_LIMITED" and body["retry_after"] > 0
