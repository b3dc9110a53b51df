"""SECURITY.md §2: HTTP transport and auth (H1-H5, H7) against the real app on 127.0.0.1.

tests/test_http_transport.py and tests/test_stdio.py cover the basic cases; these add the bind
addresses, header spellings, chunked bodies, session ids across keys and a stdio run that parses
damaged files with the C libraries while stdout must stay pure JSON-RPC.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil
import pytest

from mcp_server.core.settings import Settings
from mcp_server.middleware import http as http_guard
from tests.mcp_harness import ROOT, ThreadedServer, make_settings, server_process

from ._harness import call_tool

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "detect_language", "arguments": {"text": "an English sentence for the test"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-06-18"}
KEYS = ["key-alpha-0123456789", "key-beta-0123456789"]


def settings(**overrides: Any) -> Settings:
    return make_settings(load_models=False, rate_limit_rpm=100_000, **overrides)


@pytest.fixture(scope="module", params=["0.0.0.0", "::", "127.0.0.1", "192.0.2.10"])
def bound(request: pytest.FixtureRequest) -> Iterator[ThreadedServer]:
    """The app configured as if bound to each address (the socket itself stays on 127.0.0.1)."""
    with ThreadedServer(settings(host=request.param, api_keys=KEYS)) as server:
        yield server


@pytest.fixture(scope="module")
def keyed() -> Iterator[ThreadedServer]:
    with ThreadedServer(settings(api_keys=KEYS)) as server:
        yield server


def auth(key: str = KEYS[0]) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1.evil.example", "localhost.evil.example",
                                  "evil.example:80", "[::2]", "0.0.0.0", "169.254.169.254"])
@pytest.mark.parametrize("path", ["/mcp", "/health", "/info"])
def test_a_foreign_host_header_is_misdirected_on_every_bind_address(
    bound: ThreadedServer, host: str, path: str,
) -> None:
    headers = {**MCP_HEADERS, **auth(), "Host": host}
    with httpx.Client(timeout=5, trust_env=False) as http:
        response = http.post(bound.base + path, json=INIT, headers=headers) if path == "/mcp" \
            else http.get(bound.base + path, headers=headers)
    assert response.status_code == 421, response.text


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1.evil.example", "null",
                                    "https://localhost.evil.example", "file://", "http://169.254.169.254"])
@pytest.mark.parametrize("path", ["/mcp", "/health"])
def test_a_foreign_origin_is_forbidden_on_every_bind_address(bound: ThreadedServer, origin: str, path: str) -> None:
    headers = {**MCP_HEADERS, **auth(), "Origin": origin}
    with httpx.Client(timeout=5, trust_env=False) as http:
        response = http.post(bound.base + path, json=INIT, headers=headers) if path == "/mcp" \
            else http.get(bound.base + path, headers=headers)
    assert response.status_code == 403, response.text


def test_loopback_host_and_origin_are_accepted(bound: ThreadedServer) -> None:
    port = bound.base.rsplit(":", 1)[1]
    headers = {**MCP_HEADERS, **auth(), "Host": f"localhost:{port}", "Origin": f"http://127.0.0.1:{port}"}
    with httpx.Client(timeout=5, trust_env=False) as http:
        assert http.post(bound.mcp_url, json=INIT, headers=headers).status_code == 200


def test_a_body_over_the_cap_is_413_even_when_streamed_without_a_length(keyed: ThreadedServer) -> None:
    body = json.dumps({**INIT, "params": {**INIT["params"], "pad": "x" * 1_200_000}}).encode()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 65536):
            yield body[start:start + 65536]

    with httpx.Client(timeout=10, trust_env=False) as http:
        declared = http.post(keyed.mcp_url, content=body, headers={**MCP_HEADERS, **auth()})
        streamed = http.post(keyed.mcp_url, content=chunks(), headers={**MCP_HEADERS, **auth()})
        lying = http.post(keyed.mcp_url, content=chunks(),
                          headers={**MCP_HEADERS, **auth(), "Content-Length": str(len(body))})
    assert declared.status_code == 413
    assert streamed.status_code == 413
    assert lying.status_code == 413


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                                          "text/json"])
def test_a_body_that_is_not_json_is_400(keyed: ThreadedServer, content_type: str) -> None:
    with httpx.Client(timeout=5, trust_env=False) as http:
        response = http.post(keyed.mcp_url, content=json.dumps(INIT),
                             headers={**MCP_HEADERS, **auth(), "Content-Type": content_type})
    assert response.status_code in (400, 415), response.text


def test_the_default_bind_address_is_loopback() -> None:
    assert Settings(_env_file=None).host == "127.0.0.1"  # type: ignore[call-arg]
    env = {"MCP_LOAD_MODELS": "false", "MCP_HOST": "", "MCP_PARSE_WORKERS": "1"}
    env = {k: v for k, v in env.items() if v}
    clean = {k: v for k, v in os.environ.items() if k != "MCP_HOST"}
    with server_process([], env={**clean, **env}) as (proc, _):
        listening = [c.laddr for p in [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
                     for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    assert listening, "the server listens somewhere"
    assert {addr.ip for addr in listening} == {"127.0.0.1"}


@pytest.mark.parametrize("headers", [
    {},
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer wrong"},
    {"Authorization": f"Bearer {KEYS[0][:-1]}"},
    {"Authorization": f"Bearer {KEYS[0]}x"},
    {"Authorization": f"Bearer {KEYS[0].upper()}"},
    {"Authorization": f"Basic {KEYS[0]}"},
    {"Authorization": KEYS[0]},
    {"Authorization": f"Token {KEYS[0]}"},
    {"X-API-Key": KEYS[0]},
    {"Cookie": f"token={KEYS[0]}"},
])
@pytest.mark.parametrize("query", ["", f"?api_key={KEYS[0]}", f"?access_token={KEYS[0]}", f"?key={KEYS[0]}"])
def test_mcp_without_a_valid_bearer_key_is_401_and_a_query_string_key_is_ignored(
    keyed: ThreadedServer, headers: dict[str, str], query: str,
) -> None:
    with httpx.Client(timeout=5, trust_env=False) as http:
        for path in ("/mcp", "/mcp/", "/mcp/x"):
            response = http.post(keyed.base + path + query, json=INIT, headers={**MCP_HEADERS, **headers})
            assert response.status_code == 401, (path, response.text)
            assert response.headers["www-authenticate"].startswith("Bearer")
            assert KEYS[0] not in response.text


async def test_every_configured_key_opens_mcp_and_health_stays_open(keyed: ThreadedServer) -> None:
    for key in KEYS:
        failed, body = await call_tool(keyed, "detect_language", {"text": "An English sentence."}, auth(key))
        assert not failed and body["language_code"] == "en"
    with httpx.Client(timeout=1.0, trust_env=False) as http:
        assert http.get(f"{keyed.base}/health").status_code == 200


def test_the_key_check_compares_every_key_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[int, int]] = []
    real = http_guard.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(http_guard.hmac, "compare_digest", spy)
    keys = ["short", "a-much-longer-key-" * 4, "third"]
    for token in ["short", "third", "nope", "a-much-longer-key-" * 4, ""]:
        compared.clear()
        http_guard.key_matches(token, keys)
        # Every key is compared, always as equal-length digests: timing says nothing about which.
        assert compared == [(32, 32)] * len(keys)


async def test_a_session_id_made_with_one_key_gives_another_key_nothing(keyed: ThreadedServer) -> None:
    with httpx.Client(timeout=5, trust_env=False) as http:
        made = http.post(keyed.mcp_url, json=INIT, headers={**MCP_HEADERS, **auth(KEYS[0])})
        assert made.status_code == 200
        # Stateless by design (any worker answers any request): no session is ever issued.
        assert "mcp-session-id" not in made.headers
        for session in ("a-session-of-key-a", made.headers.get("mcp-session-id", "")):
            # Without a valid key, a session id opens nothing.
            anonymous = http.post(keyed.mcp_url, json=CALL, headers={**MCP_HEADERS, "Mcp-Session-Id": session})
            assert anonymous.status_code == 401
            # With key B, the request is a fresh stateless one: it sees only its own answer.
            other = http.post(keyed.mcp_url, json=CALL,
                              headers={**MCP_HEADERS, **auth(KEYS[1]), "Mcp-Session-Id": session})
            assert other.status_code in (200, 400, 404), other.text
            assert "mcp-session-id" not in other.headers
            if other.status_code == 200:
                messages = [json.loads(line[5:]) for line in other.text.splitlines() if line.startswith("data:")]
                assert [m.get("id") for m in messages] == [7]
                assert "protocolVersion" not in other.text  # nothing of A's initialize


async def test_stdio_stdout_stays_pure_json_rpc_while_c_libraries_parse_damaged_files(
    corpus_dir: Path, tmp_path: Path,
) -> None:
    docs = corpus_dir / "docs"
    files = [docs / "pdf" / "testPDF_bad_page_303226.pdf", docs / "docx" / "testWORD_truncated.docx",
             docs / "jpg" / "testOCR.jpg", docs / "pdf" / "password.pdf"]
    broken = tmp_path / "cut.pdf"
    data = (docs / "pdf" / "multi_page.pdf").read_bytes()
    broken.write_bytes(data[: len(data) // 2])
    files.append(broken)
    roots = ",".join(sorted({str(f.parent) for f in files}))
    messages: list[dict[str, Any]] = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    for n, path in enumerate(files, start=10):
        messages.append({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                         "params": {"name": "process_document", "arguments": {"document_url": str(path)}}})
    messages.append({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                     "params": {"name": "process_document", "arguments": {"document_url": "http://127.0.0.2/"}}})
    wanted = {1, 99, *range(10, 10 + len(files))}
    env = {**os.environ, "MCP_LOG_DIR": "", "MCP_LOG_LEVEL": "DEBUG", "MCP_LOAD_MODELS": "false",
           "MCP_DOCUMENT_ROOTS": roots, "PYTHONWARNINGS": "always"}
    stdout = b""
    with anyio.fail_after(120):
        async with await anyio.open_process([sys.executable, "-m", "mcp_server", "--transport", "stdio"],
                                            cwd=ROOT, env=env, stderr=None) as proc:
            assert proc.stdin is not None and proc.stdout is not None
            await proc.stdin.send(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
            seen: set[int] = set()
            while not wanted <= seen:
                stdout += await proc.stdout.receive()
                for line in stdout.splitlines()[:-1] if not stdout.endswith(b"\n") else stdout.splitlines():
                    if line.strip():
                        seen.add(json.loads(line).get("id"))
            await proc.stdin.aclose()
            stdout += b"".join([chunk async for chunk in proc.stdout])
    lines = [line for line in stdout.splitlines() if line.strip()]
    parsed = [json.loads(line) for line in lines]  # every stdout line is JSON-RPC
    assert all(m.get("jsonrpc") == "2.0" for m in parsed)
    assert {m.get("id") for m in parsed} >= wanted
