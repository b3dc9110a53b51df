"""The citation viewer (MCP App) end to end: retrieve_chunks names it, the resource is listed with the app
MIME type, and headless Chromium runs it inside a host page that speaks the Apps protocol
(tests/apps/host.html) against the running server: on a PDF result it shows the page image with the
passage highlighted, in the host's (dark) theme."""

from __future__ import annotations

import base64
import http.server
import importlib.util
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import websockets

from mcp_server.server.viewer import VIEWER_URI
from tests.conftest import FileServer
from tests.mcp_harness import ROOT, ThreadedServer, http_client, make_settings

pytestmark = pytest.mark.anyio

HOST_PAGE = Path(__file__).with_name("host.html")
PDF = "docs/pdf/multi_page.pdf"
DOCX = "docs/docx/testWORD.docx"
CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/system-deps.sh)")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=900,1150"]
HOST_VARIABLES = {"--color-background-primary": "#20242c", "--color-text-primary": "#f1f1f1"}


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(make_settings()) as running:
        yield running


class Host:
    """The test's web server for host.html: /setup (what the host shows), /mcp (proxied to the MCP server,
    stateless JSON-RPC at 2025-11-25), /report (the app's log messages)."""

    def __init__(self, setup: dict[str, Any], mcp_url: str) -> None:
        self.reports: list[dict[str, Any]] = []
        self.shown = threading.Event()
        host = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def answer(self, body: bytes, content_type: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/setup":
                    self.answer(json.dumps(setup).encode(), "application/json")
                else:
                    self.answer(HOST_PAGE.read_bytes(), "text/html; charset=utf-8")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path == "/report":
                    host.reports.append(json.loads(body))
                    if host.reports[-1].get("data", {}).get("event") in ("shown", "error"):
                        host.shown.set()
                    self.answer(b"{}", "application/json")
                    return
                answered = httpx.post(mcp_url, content=body, timeout=120, headers={
                    "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2025-11-25"})
                self.answer(json.dumps(rpc(answered)).encode(), "application/json")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def rpc(response: httpx.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))
    return dict(response.json())


async def viewer_setup(server: ThreadedServer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """What a host has when it renders the viewer: the tool, its arguments and result, the viewer's HTML."""
    async with http_client(server.mcp_url) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == name)
        result = await client.call_tool(name, arguments)
        assert not result.is_error, result
        listed = {r.uri: r for r in (await client.list_resources()).resources}
        html = (await client.read_resource(tool.meta["ui"]["resourceUri"])).contents[0]  # type: ignore[index]
    assert str(listed[VIEWER_URI].mime_type) == "text/html;profile=mcp-app"
    assert html.mime_type == "text/html;profile=mcp-app"
    return {"tool": tool.model_dump(by_alias=True, mode="json", exclude_none=True), "arguments": arguments,
            "result": result.model_dump(by_alias=True, mode="json", exclude_none=True),
            "html": html.text, "theme": "dark", "variables": HOST_VARIABLES}  # type: ignore[union-attr]


def test_the_vendored_apps_bundle_is_the_installed_ext_apps_bundle_made_global() -> None:
    vendor = load_script("vendor_ext_apps")
    bundle = vendor.PACKAGE / "dist" / "src" / "app-with-deps.js"
    if not bundle.exists():
        pytest.fail("the ext-apps package is not installed: make setup (npm ci in tests/clients_js)")
    version = json.loads((vendor.PACKAGE / "package.json").read_text())["version"]
    assert vendor.TARGET.read_text(encoding="utf-8") == vendor.globalised(bundle.read_text(encoding="utf-8"), version)


def load_script(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_three_passage_tools_name_the_viewer_and_the_others_do_not(server: ThreadedServer) -> None:
    async with http_client(server.mcp_url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        html = (await client.read_resource(VIEWER_URI)).contents[0]
        extensions = client.server_capabilities.extensions or {}
    named = {name for name, t in tools.items() if (t.meta or {}).get("ui", {}).get("resourceUri") == VIEWER_URI}
    assert named == {"retrieve_chunks", "search_documents", "get_passage"}
    assert "io.modelcontextprotocol/ui" in extensions
    text = html.text  # type: ignore[union-attr]
    assert "globalThis.McpExtApps" in text and "<script src" not in text and "https://cdn" not in text


async def run_in_chromium(setup: dict[str, Any], server: ThreadedServer, tmp_path: Path,
                          screenshot: Path) -> dict[str, Any]:
    """Chromium opens the host page on ``setup``; once the viewer reports what it shows, a screenshot.
    Returns the viewer's report."""
    host = Host(setup, server.mcp_url)
    profile = tmp_path / "profile"  # empty: no state from any earlier run
    browser = subprocess.Popen([str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                                "--remote-debugging-port=0", host.url],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        shown = await anyio.to_thread.run_sync(host.shown.wait, 240)
        if shown:
            screenshot.write_bytes(await capture(profile, host.url))
    finally:
        browser.terminate()
        browser.wait(timeout=30)
        host.close()
    assert shown, f"the viewer reported nothing; reports: {host.reports}"
    report: dict[str, Any] = next(r["data"] for r in host.reports
                                  if r.get("data", {}).get("event") in ("shown", "error"))
    assert report["event"] == "shown", report
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 20_000
    return report


@needs_chromium
async def test_chromium_shows_a_pdf_passage_highlighted_on_its_page_image_in_the_host_theme(
    server: ThreadedServer, corpus_server: FileServer, tmp_path: Path,
) -> None:
    arguments = {"document_url": corpus_server.url(PDF), "query": "Who patented the typewriter, and when?", "top_k": 3}
    setup = await viewer_setup(server, "retrieve_chunks", arguments)
    first = setup["result"]["structuredContent"]["results"][0]
    screenshot = Path(os.environ.get("RAG_VIEWER_SCREENSHOT") or tmp_path / "viewer.png").resolve()

    report = await run_in_chromium(setup, server, tmp_path, screenshot)

    assert report["view"] == "page" and report["passage_id"] == first["passage_id"]
    assert report["page"] == first["location"]["page"]
    assert report["highlighted"] is True
    x0, y0, x1, y1 = report["clip"]
    assert 0 <= x0 < x1 and 0 <= y0 < y1  # a region on the page, in PDF points
    assert report["theme"] == "dark" and report["background"] == "rgb(32, 36, 44)"  # the host's variables


@needs_chromium
async def test_chromium_shows_a_word_passage_from_search_documents_in_its_section(
    server: ThreadedServer, corpus_server: FileServer, tmp_path: Path,
) -> None:
    arguments = {"document_urls": [corpus_server.url(DOCX)], "query": "word processors", "top_k": 3}
    setup = await viewer_setup(server, "search_documents", arguments)
    first = setup["result"]["structuredContent"]["results"][0]

    report = await run_in_chromium(setup, server, tmp_path, tmp_path / "section.png")

    assert report["view"] == "section" and report["passage_id"] == first["passage_id"]
    assert report["chunks"] >= 1 and report["highlighted"] is True


async def capture(profile: Path, url: str) -> bytes:
    """A PNG of the page at ``url`` over the DevTools protocol (the port Chromium wrote into the profile)."""
    port_file = profile / "DevToolsActivePort"
    with anyio.fail_after(30):
        while not port_file.exists():  # written once the browser listens; bounded by the deadline
            await anyio.sleep(0.05)
    port = port_file.read_text().split()[0]
    async with httpx.AsyncClient() as http:
        targets = (await http.get(f"http://127.0.0.1:{port}/json/list")).json()
    target = next(t for t in targets if t["type"] == "page" and t["url"] == url)
    async with websockets.connect(target["webSocketDebuggerUrl"], max_size=None) as cdp:
        await cdp.send(json.dumps({"id": 1, "method": "Page.captureScreenshot", "params": {"format": "png"}}))
        while True:
            message = json.loads(await cdp.recv())
            if message.get("id") == 1:
                return base64.b64decode(message["result"]["data"])
