"""A private document over MCP with a token from fetch_headers: read, and the token nowhere else.

The real HTTP app, a real MCP client, a loopback origin that wants the token; the server logs at
DEBUG into a folder this test reads. The token must reach the origin's requests for its own host
and nothing else: not a redirect to another host (``fixture.test`` names the same loopback server,
so the origin itself records what that hop carried), not a result, an error, a log line, health,
/info or /metrics.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.fetch.servers import Handler, LoopbackServer, respond
from tests.mcp_harness import payload, stdio_session

from ._harness import call_tool, running_server, security_settings

pytestmark = pytest.mark.anyio

SECRET = "tok-7f3a9c-private"


def _private(handler: Handler) -> None:
    if handler.headers.get("Authorization") == f"Bearer {SECRET}":
        respond(handler, 200, b"Quarterly notes: the private roadmap lists three launches.",
                {"Content-Type": "text/plain"})
    else:
        respond(handler, 401, b"", {"WWW-Authenticate": 'Bearer realm="origin"'})


async def test_a_private_document_is_read_with_its_token_which_appears_in_no_result_error_log_or_report(
    web: LoopbackServer, canary: LoopbackServer, tmp_path: Path,
) -> None:
    web.route("/private.txt", _private)
    web.route("/moved", lambda h: respond(h, 302, b"", {"Location": f"http://fixture.test:{web.port}/private.txt"}))
    logs = tmp_path / "logs"
    settings = security_settings(
        fetch_headers={f"127.0.0.1:{web.port}": {"Authorization": f"Bearer {SECRET}"}},
        fetch_allowlist=["127.0.0.1", "fixture.test"], log_dir=logs, log_level="DEBUG",
        upload_dir=tmp_path / "uploads", revalidate_after_s=0,
    )
    shown: list[str] = []
    with running_server(settings) as server:
        failed, body = await call_tool(server, "process_document", {"document_url": web.url("/private.txt")})
        assert not failed and "private roadmap" in body["content"], body
        shown.append(str(body))
        failed, body = await call_tool(server, "retrieve_chunks", {"document_url": web.url("/private.txt"),
                                                                   "query": "roadmap launches"})
        assert not failed and "private roadmap" in body["results"][0]["text"], body
        shown.append(str(body))
        # a redirect to another host: the token is dropped, the origin refuses, the error names no token
        failed, body = await call_tool(server, "process_document", {"document_url": web.url("/moved")})
        assert failed and body["code"] == "DOWNLOAD_ERROR" and "401" in body["error"], body
        shown.append(str(body))
        for tool, args in (("get_system_health", {}), ("manage_cache", {"action": "stats"})):
            failed, body = await call_tool(server, tool, args)
            assert not failed
            shown.append(str(body))
        async with httpx.AsyncClient(trust_env=False) as http:
            for path in ("/health", "/info", "/metrics"):
                shown.append((await http.get(server.base + path)).text)
    carried = [(seen.path, seen.headers.get("host"), seen.headers.get("authorization")) for seen in web.requests]
    token = f"Bearer {SECRET}"
    own = f"127.0.0.1:{web.port}"
    assert carried == [
        ("/private.txt", own, token),  # process_document
        ("/private.txt", own, token),  # retrieve_chunks: revalidated (no validators: downloaded again)
        ("/moved", own, token),
        ("/private.txt", f"fixture.test:{web.port}", None),  # another host: no token
    ]
    log_text = "\n".join(path.read_text() for path in logs.glob("*.log"))
    assert "fetch.complete" in log_text  # the log was written, at DEBUG
    for text in [*shown, log_text]:
        assert SECRET not in text
    assert canary.hits == 0


async def test_the_token_comes_from_the_mcp_fetch_headers_variable_of_a_real_server_process(
    web: LoopbackServer, canary: LoopbackServer, tmp_path: Path,
) -> None:
    web.route("/private.txt", _private)
    env = {"MCP_FETCH_HEADERS": json.dumps({f"127.0.0.1:{web.port}": {"Authorization": f"Bearer {SECRET}"}}),
           "MCP_FETCH_ALLOWLIST": "127.0.0.1", "MCP_LOAD_MODELS": "false", "MCP_PARSE_PRESTART": "false",
           "MCP_INDEX_DIR": str(tmp_path / "indexes"), "MCP_UPLOAD_DIR": str(tmp_path / "uploads")}
    async with stdio_session(env) as session:
        result = await session.call_tool("process_document", {"document_url": web.url("/private.txt")})
        health = await session.call_tool("get_system_health", {})
    assert not result.is_error and "private roadmap" in payload(result)["content"], payload(result)
    assert payload(health)["security"]["private_host_rules"] == 1
    assert SECRET not in str(payload(result)) + str(payload(health))
    assert [seen.headers.get("authorization") for seen in web.requests] == [f"Bearer {SECRET}"]
    assert canary.hits == 0
