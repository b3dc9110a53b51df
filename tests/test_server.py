"""The guard and the utility surface, through a real MCP client session (in memory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, TextContent

from mcp_server.core.logging import configure_logging
from mcp_server.core.settings import Settings
from mcp_server.pipeline.reading import DPI_RANGE, MAX_READ_TOKENS, MIN_READ_TOKENS
from mcp_server.processors import supported_formats
from mcp_server.server.build import create_server
from mcp_server.server.tool_calls import OUTPUT_SCHEMA_DIALECT
from mcp_server.server.viewer import VIEWER_URI
from mcp_server.tools.common import tool
from mcp_server.tools.research import MAX_QUERIES
from tests.mcp_harness import TOOL_NAMES, make_settings, memory_client, payload, wait_forever

SEARCH_MAX_DOCUMENTS = Settings.model_fields["search_max_documents"].default

pytestmark = pytest.mark.anyio



async def test_every_tool_is_listed_with_an_output_schema_and_annotations() -> None:
    async with memory_client() as client:
        tools = (await client.list_tools()).tools
    assert {listed.name for listed in tools} == TOOL_NAMES
    for listed in tools:
        assert listed.output_schema is not None, listed.name
        assert listed.output_schema["type"] == "object"
        assert listed.annotations is not None and listed.annotations.read_only_hint is not None, listed.name
        assert listed.description


async def test_every_tool_parameter_is_listed_with_a_description_and_its_bounds() -> None:
    async with memory_client() as client:
        tools = {listed.name: listed for listed in (await client.list_tools()).tools}
    for name, listed in tools.items():
        for parameter, schema in listed.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{name}.{parameter} has no description"
    search = tools["search_documents"].input_schema["properties"]
    assert (search["document_urls"]["minItems"], search["document_urls"]["maxItems"]) == (1, SEARCH_MAX_DOCUMENTS)
    assert search["queries"]["anyOf"][0]["maxItems"] == MAX_QUERIES
    assert search["per_document"]["anyOf"][0]["minimum"] == 1
    assert tools["manage_cache"].input_schema["properties"]["action"]["enum"] == ["stats", "clear", "drop"]
    read = tools["read_document"].input_schema["properties"]["max_tokens"]
    assert (read["minimum"], read["maximum"]) == (MIN_READ_TOKENS, MAX_READ_TOKENS)
    image = tools["get_page_image"].input_schema["properties"]
    assert (image["dpi"]["minimum"], image["dpi"]["maximum"], image["page"]["minimum"]) == (*DPI_RANGE, 1)
    # documented clamps stay clamps: no bound that would turn them into errors
    for name, parameter in [("retrieve_chunks", "top_k"), ("retrieve_chunks", "neighbors"),
                            ("search_documents", "top_k"), ("get_passage", "before"), ("get_passage", "after")]:
        schema = tools[name].input_schema["properties"][parameter]
        assert "minimum" not in schema and "maximum" not in schema and "clamped" in schema["description"]


@pytest.mark.parametrize(
    ("tool_name", "arguments", "argument", "fragment"),
    [
        ("search_documents", {"document_urls": [f"https://a.example/{n}.pdf" for n in range(SEARCH_MAX_DOCUMENTS + 1)],
                              "query": "x"}, "document_urls", f"at most {SEARCH_MAX_DOCUMENTS} items"),
        ("search_documents", {"document_urls": [], "query": "x"}, "document_urls", "at least 1 item"),
        ("search_documents", {"document_urls": ["https://example.com/a.pdf"], "query": "x",
                              "queries": ["y"] * (MAX_QUERIES + 1)}, "queries", f"at most {MAX_QUERIES} items"),
        ("search_documents", {"document_urls": ["https://example.com/a.pdf"], "query": "x", "per_document": 0},
         "per_document", "must be at least 1, not 0"),
        ("manage_cache", {"action": "explode"}, "action", "must be 'stats', 'clear' or 'drop', not 'explode'"),
        ("get_page_image", {"document_url": "https://example.com/a.pdf", "page": 1, "dpi": 5000}, "dpi",
         "must be at most 300, not 5000"),
        ("read_document", {"document_url": "https://example.com/a.pdf", "max_tokens": 10}, "max_tokens",
         f"must be at least {MIN_READ_TOKENS}, not 10"),
    ],
)
async def test_an_argument_outside_its_declared_contract_is_a_validation_error_naming_it(
    tool_name: str, arguments: dict[str, Any], argument: str, fragment: str,
) -> None:
    async with memory_client() as client:
        result = await client.call_tool(tool_name, arguments)
    body = payload(result)
    assert result.is_error and body["code"] == "VALIDATION_ERROR", body
    assert body["argument"] == argument and f"argument '{argument}'" in body["error"], body
    assert fragment in body["error"], body


# Keywords that 2020-12 reads and draft-07 does not (or reads otherwise): a schema declared as
# draft-07 must not use them, or clients would check less than the schema means.
NEWER_KEYWORDS = {"prefixItems", "unevaluatedProperties", "unevaluatedItems", "dependentRequired",
                  "dependentSchemas", "minContains", "maxContains", "$anchor", "$dynamicRef", "$dynamicAnchor",
                  "$recursiveRef", "$recursiveAnchor"}
# Beside a $ref, draft-07 ignores every keyword: only annotations may stand there.
ANNOTATIONS = {"$ref", "title", "description", "default", "examples"}


def schema_problems(node: Any, path: str = "#") -> list[str]:
    problems = []
    if isinstance(node, dict):
        problems += [f"{path}: {key}" for key in sorted(set(node) & NEWER_KEYWORDS)]
        if "$ref" in node and set(node) - ANNOTATIONS:
            problems.append(f"{path}: $ref beside {sorted(set(node) - ANNOTATIONS)}")
        for key, value in node.items():
            problems += schema_problems(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            problems += schema_problems(value, f"{path}/{i}")
    return problems


async def test_every_output_schema_names_draft_07_and_uses_nothing_draft_07_reads_otherwise() -> None:
    async with memory_client() as client:
        tools = (await client.list_tools()).tools
    for listed in tools:
        assert listed.output_schema is not None
        assert listed.output_schema["$schema"] == OUTPUT_SCHEMA_DIALECT, listed.name
        assert schema_problems(listed.output_schema) == [], listed.name


async def test_a_structured_result_repeats_itself_as_json_text_and_matches_its_output_schema() -> None:
    async with memory_client() as client:
        schema = {t.name: t.output_schema for t in (await client.list_tools()).tools}["detect_language"]
        result = await client.call_tool("detect_language", {"text": "Der schnelle braune Fuchs springt."})
    assert not result.is_error and isinstance(result.content[0], TextContent)
    assert json.loads(result.content[0].text) == result.structured_content
    jsonschema.validate(result.structured_content, schema or {})  # the client checked it too


async def test_detect_language_answers_code_and_name() -> None:
    async with memory_client() as client:
        text = "Der schnelle braune Fuchs springt über den faulen Hund."
        result = await client.call_tool("detect_language", {"text": text})
    assert not result.is_error
    assert payload(result) == {"language_code": "de", "language_name": "German"}


async def test_detect_language_falls_back_to_english_for_short_text() -> None:
    async with memory_client() as client:
        result = await client.call_tool("detect_language", {"text": "hola"})
    assert payload(result)["language_code"] == "en"


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "argument 'text' is required"),
        ({"text": 42}, "argument 'text'"),
        ({"text": "   "}, "must not be empty"),
        ({"text": "x" * 100_001}, "the limit is 100000"),
    ],
)
async def test_bad_arguments_are_a_validation_error_naming_the_argument(
    arguments: dict[str, Any], fragment: str
) -> None:
    async with memory_client() as client:
        result = await client.call_tool("detect_language", arguments)
    body = payload(result)
    assert result.is_error
    assert body["code"] == "VALIDATION_ERROR"
    assert fragment in body["error"]
    assert len(body["request_id"]) == 12


async def test_an_empty_bucket_answers_rate_limited_with_retry_after() -> None:
    async with memory_client(rate_limit_rpm=2) as client:
        codes = []
        for _ in range(3):
            result = await client.call_tool("detect_language", {"text": "hello world, how are you"})
            codes.append(payload(result).get("code"))
        limited = payload(result)
    assert codes == [None, None, "RATE_LIMITED"]
    assert limited["retry_after"] > 0


async def test_a_tool_that_overruns_its_timeout_answers_timeout() -> None:
    server = create_server(make_settings(request_timeout=0.2))
    server.add_guarded_tool(wait_forever)

    async with memory_client(server) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("wait_forever", {})
    body = payload(result)
    assert result.is_error and body["code"] == "TIMEOUT"
    assert "0.2 s" in body["error"]


async def test_an_unexpected_exception_is_internal_error_without_trace_or_path() -> None:
    server = create_server(make_settings())

    @tool("utility", title="Broken", summary="raises (error tests)", returns="—")
    async def broken() -> dict[str, Any]:
        raise RuntimeError("secret detail in /work/main/mcp_server/x.py")

    server.add_guarded_tool(broken)

    async with memory_client(server) as client:
        result = await client.call_tool("broken", {})
    body = payload(result)
    assert body["code"] == "INTERNAL_ERROR"
    assert "secret" not in body["error"] and "/work" not in body["error"] and "Traceback" not in body["error"]
    assert body["request_id"] in body["error"]


async def test_resources_are_generated_from_the_registries() -> None:
    async with memory_client() as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        formats = json.loads((await client.read_resource("rag://supported-formats")).contents[0].text)  # type: ignore[union-attr]
        tools = json.loads((await client.read_resource("rag://tool-descriptions")).contents[0].text)  # type: ignore[union-attr]
    assert listed == {"rag://supported-formats", "rag://tool-descriptions", VIEWER_URI}
    assert formats["formats"] == [f.describe() for f in supported_formats()]
    assert {t["name"] for t in tools["tools"]} == TOOL_NAMES
    assert tools["tool_count"] == len(TOOL_NAMES)


async def test_manage_cache_rejects_unknown_actions() -> None:
    async with memory_client() as client:
        result = await client.call_tool("manage_cache", {"action": "explode"})
    assert payload(result)["code"] == "VALIDATION_ERROR"


async def test_an_error_result_is_json_text_without_structured_content() -> None:
    async with memory_client() as client:
        result = await client.call_tool("detect_language", {})
    assert result.is_error and result.structured_content is None  # it would have to match the output schema
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    body = json.loads(result.content[0].text)
    assert set(body) == {"error", "code", "request_id", "arguments", "argument"} and body["code"] == "VALIDATION_ERROR"


async def test_an_unknown_tool_is_a_json_rpc_invalid_params_error_whose_request_id_is_logged(tmp_path: Path) -> None:
    configure_logging("INFO", tmp_path)
    try:
        async with memory_client() as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("no_such_tool", {})
            assert not (await client.call_tool("detect_language", {"text": "the session goes on"})).is_error
    finally:
        configure_logging("INFO", None)
    error = raised.value.error
    assert error.code == INVALID_PARAMS and error.message == "Unknown tool: no_such_tool"
    assert isinstance(error.data, dict) and len(error.data["request_id"]) == 12
    records = [json.loads(line) for log in tmp_path.glob("server_*.log") for line in log.read_text().splitlines()]
    logged = [r for r in records if r["msg"] == "tool.unknown"]
    assert [(r["rid"], r["requested_tool"]) for r in logged] == [(error.data["request_id"], "no_such_tool")]
