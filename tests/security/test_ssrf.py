"""SECURITY.md §1 end to end: SSRF probes through the process_document tool (S1-S7).

Every probe goes through a real MCP client to the real HTTP app, whose allowlist holds only
127.0.0.1; the canary on 127.0.0.2 must never hear of any of them (the ``canary`` fixture also
checks ``hits == 0`` on teardown). tests/fetch/test_ssrf.py probes the Fetcher itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fetch.servers import LoopbackServer, respond
from tests.mcp_harness import ThreadedServer
from tests.processors._office_helpers import rewrite_part

from ._harness import call_tool, running_server, security_settings

pytestmark = pytest.mark.anyio

REFUSED = ("DOWNLOAD_ERROR", "VALIDATION_ERROR")

# {port} is the canary's port: a probe that got through would be counted.
PROBES = [
    # the canary itself, and numeric spellings of its address (S3)
    "http://127.0.0.2:{port}/",
    "https://127.0.0.2:{port}/",
    "http://2130706434:{port}/",
    "http://0x7f000002:{port}/",
    "http://0x7f.2:{port}/",
    "http://0x7f.0.0.2:{port}/",
    "http://127.2:{port}/",
    "http://0177.0.0.2:{port}/",
    "http://127.000.000.002:{port}/",
    "http://127.0.0.2.:{port}/",
    # IPv6 forms embedding it (S2, S3)
    "http://[::ffff:127.0.0.2]:{port}/",
    "http://[::ffff:7f00:2]:{port}/",
    "http://[0:0:0:0:0:ffff:7f00:2]:{port}/",
    "http://[::127.0.0.2]:{port}/",
    "http://[64:ff9b::7f00:2]:{port}/",
    "http://[2002:7f00:2::]:{port}/",
    "http://[::1]:{port}/",
    "http://[::]:{port}/",
    "http://0.0.0.0:{port}/",
    "http://0:{port}/",
    # URL parser confusion
    "http://user:pw@127.0.0.2:{port}/",
    "http://127.0.0.1@127.0.0.2:{port}/",
    "http://127.0.0.2:{port}/#@127.0.0.1",
    "http://127.0.0.2:{port}\\@127.0.0.1/",
    # DNS answers (S1): blocked, and allowed-then-blocked
    "http://canary.test:{port}/",
    "http://CANARY.test:{port}/",
    "http://mixed.test:{port}/",
    "http://mixed-public.test:{port}/",
    "http://mixed6.test:{port}/",
    "http://nat64.test:{port}/",
    "http://sixtofour.test:{port}/",
    "http://loopback6.test:{port}/",
    # cloud metadata and private ranges (S2)
    "http://169.254.169.254/latest/meta-data/",
    "http://2852039166/latest/meta-data/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[fd00:ec2::254]/",
    "http://metadata.test/",
    "http://rfc1918.test/",
    "http://cgnat.test/",
    "http://ula.test/",
    "http://linklocal6.test/",
    "http://10.0.0.1/",
    "http://172.16.0.1/",
    "http://192.168.0.1/",
    "http://100.64.0.1/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://[fe80::1]/",
    "http://[ff02::1]/",
    # other schemes (S5)
    "ftp://127.0.0.2:{port}/",
    "gopher://127.0.0.2:{port}/_GET",
    "dict://127.0.0.2:{port}/",
    "file:///etc/passwd",
    "/etc/passwd",
    "file://127.0.0.2/etc/passwd",
]


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("roots")
    (root / "inside.txt").write_text("a local document inside the root")
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("secret outside the root")
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    return root


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with running_server(security_settings()) as running:
        yield running


@pytest.fixture(scope="module")
def rooted_server(roots: Path) -> Iterator[ThreadedServer]:
    with running_server(security_settings(document_roots=[str(roots)])) as running:
        yield running


async def assert_refused(server: ThreadedServer, url: str) -> dict[str, object]:
    failed, body = await call_tool(server, "process_document", {"document_url": url})
    assert failed, body
    assert body["code"] in REFUSED, body
    assert "canary secret" not in str(body)
    return body


@pytest.mark.parametrize("probe", PROBES)
async def test_an_ssrf_probe_through_the_tool_is_refused_and_never_reaches_the_canary(
    probe: str, server: ThreadedServer, canary: LoopbackServer,
) -> None:
    await assert_refused(server, probe.format(port=canary.port))
    assert canary.hits == 0


def _redirect(location: str, status: int = 302):  # type: ignore[no-untyped-def]
    return lambda h: respond(h, status, b"", {"Location": location})


@pytest.mark.parametrize("location", [
    "http://127.0.0.2:{port}/secret",
    "http://2130706434:{port}/secret",
    "http://[::ffff:127.0.0.2]:{port}/secret",
    "http://canary.test:{port}/secret",
    "http://mixed.test:{port}/secret",
    "//127.0.0.2:{port}/secret",
    "http://169.254.169.254/latest/meta-data/",
    "http://metadata.test/latest/meta-data/",
    "file:///etc/passwd",
    "ftp://127.0.0.2:{port}/",
    "gopher://127.0.0.2:{port}/_GET",
])
@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_redirect_to_a_blocked_target_is_refused(
    location: str, status: int, server: ThreadedServer, web: LoopbackServer, canary: LoopbackServer,
) -> None:
    url = web.route("/hop", _redirect(location.format(port=canary.port), status))
    body = await assert_refused(server, url)
    assert body["code"] == "DOWNLOAD_ERROR"
    assert web.calls("/hop") == 1  # refused before any retry
    assert canary.hits == 0


async def test_a_redirect_loop_is_refused(server: ThreadedServer, web: LoopbackServer,
                                          canary: LoopbackServer) -> None:
    web.route("/a", _redirect("/b"))
    url = web.route("/b", _redirect("/a"))
    body = await assert_refused(server, url)
    assert "loop" in str(body["error"])
    assert canary.hits == 0


async def test_more_than_five_redirect_hops_are_refused_and_five_are_followed(
    server: ThreadedServer, web: LoopbackServer, canary: LoopbackServer,
) -> None:
    for hop in range(7):
        web.route(f"/r{hop}", _redirect(f"/r{hop + 1}"))
    web.route("/r7", lambda h: respond(h, 200, b"the end of the chain", {"Content-Type": "text/plain"}))
    body = await assert_refused(server, web.url("/r1"))  # r1 -> ... -> r7 is six hops
    assert "too many redirects" in str(body["error"])
    failed, done = await call_tool(server, "process_document", {"document_url": web.url("/r2")})
    assert not failed and "the end of the chain" in str(done["content"])
    assert canary.hits == 0


async def test_a_name_whose_only_answer_is_allowed_is_fetched_from_the_checked_address(
    server: ThreadedServer, web: LoopbackServer, canary: LoopbackServer,
) -> None:
    web.route("/doc", lambda h: respond(h, 200, b"fixture text", {"Content-Type": "text/plain"}))
    failed, body = await call_tool(server, "process_document",
                                   {"document_url": f"http://fixture.test:{web.port}/doc"})
    assert not failed and "fixture text" in str(body["content"]), body
    # One connection, to the pinned 127.0.0.1, still naming the host it asked for.
    assert [seen.headers["host"] for seen in web.requests] == [f"fixture.test:{web.port}"]
    assert canary.hits == 0


def test_the_canary_is_reachable_once_allowlisted_so_the_probes_prove_something(
    _canary_server: LoopbackServer,
) -> None:
    import anyio

    _canary_server.reset()
    _canary_server.httpd.routes["/"] = lambda h: respond(h, 200, b"canary", {"Content-Type": "text/plain"})
    try:
        with running_server(security_settings(fetch_allowlist=["127.0.0.0/30"])) as wide:
            failed, body = anyio.run(call_tool, wide, "process_document",
                                     {"document_url": _canary_server.url("/")})
        assert not failed, body
        assert _canary_server.hits >= 1
    finally:
        _canary_server.reset()


async def test_proxy_environment_variables_cannot_route_a_download_to_the_canary(
    web: LoopbackServer, canary: LoopbackServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(variable, canary.url("/"))
    for variable in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
    web.route("/doc", lambda h: respond(h, 200, b"direct text", {"Content-Type": "text/plain"}))
    with running_server(security_settings()) as proxied:
        failed, body = await call_tool(proxied, "process_document", {"document_url": web.url("/doc")})
    assert not failed and "direct text" in str(body["content"]), body
    assert web.calls("/doc") == 1
    assert canary.hits == 0


async def test_a_port_outside_the_port_allowlist_is_refused_even_on_an_allowed_address(
    web: LoopbackServer, canary: LoopbackServer,
) -> None:
    web.route("/doc", lambda h: respond(h, 200, b"right port", {"Content-Type": "text/plain"}))
    settings = security_settings(fetch_allowlist=["127.0.0.0/8"], allowed_ports=[str(web.port)])
    with running_server(settings) as ported:
        failed, body = await call_tool(ported, "process_document", {"document_url": web.url("/doc")})
        assert not failed and "right port" in str(body["content"])
        body = await assert_refused(ported, canary.url("/"))
    assert "allowed_ports" in str(body["error"])
    assert canary.hits == 0


async def test_file_urls_are_read_only_under_the_document_roots(
    rooted_server: ThreadedServer, roots: Path, canary: LoopbackServer,
) -> None:
    failed, body = await call_tool(rooted_server, "process_document",
                                   {"document_url": (roots / "inside.txt").as_uri()})
    assert not failed and "inside the root" in str(body["content"]), body
    for url in ["/etc/passwd", "file:///etc/passwd", (roots / "escape.txt").as_uri(),
                f"{roots}/../{roots.name}/../outside/secret.txt", f"file://localhost{roots}/../../etc/passwd",
                f"file://127.0.0.2{roots}/inside.txt"]:
        body = await assert_refused(rooted_server, url)
        assert "secret outside" not in str(body) and "root:" not in str(body)
    assert canary.hits == 0


def _docx_with_external_parts(source: bytes, target: str) -> bytes:
    rel = (f'<Relationship Id="rIdX" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
           f'relationships/image" Target="{target}" TargetMode="External"/>').encode()
    return rewrite_part(source, "word/_rels/document.xml.rels",
                        lambda xml: xml.replace(b"</Relationships>", rel + b"</Relationships>"))


async def test_urls_inside_documents_are_never_fetched_by_the_parsers(
    server: ThreadedServer, web: LoopbackServer, canary: LoopbackServer, corpus_dir: Path,
) -> None:
    target = canary.url("/secret")
    html = (f'<html><head><link rel="stylesheet" href="{target}"><meta http-equiv="refresh" content="0;url={target}">'
            f'<script src="{target}"></script></head><body><p>Page text</p><img src="{target}">'
            f'<iframe src="{target}"></iframe><object data="{target}"></object></body></html>').encode()
    docx = _docx_with_external_parts((corpus_dir / "docs" / "docx" / "testWORD.docx").read_bytes(), target)
    documents = {
        "/page.html": (html, "text/html"),
        "/table.csv": (f"name,link\nsecret,{target}\n{target},{target}\n".encode(), "text/csv"),
        "/plain.txt": (target.encode(), "text/plain"),
        "/doc.docx": (docx, "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    }
    for path, (data, kind) in documents.items():
        web.route(path, lambda h, d=data, k=kind: respond(h, 200, d, {"Content-Type": k}))
        failed, body = await call_tool(server, "process_document", {"document_url": web.url(path)})
        assert not failed, body
        assert "canary secret" not in str(body)
    failed, body = await call_tool(server, "query_spreadsheet",
                                   {"document_url": web.url("/table.csv"), "search_value": "secret"})
    assert "canary secret" not in str(body)
    assert canary.hits == 0




# --- revalidation and uploads (issue #34) ----------------------------------------------------
def _validated(body: bytes) -> object:
    """A document with an ETag; answers 304 to it."""
    def route(handler):  # type: ignore[no-untyped-def]
        if handler.headers.get("If-None-Match") == '"v1"':
            respond(handler, 304, b"", {"ETag": '"v1"'})
        else:
            respond(handler, 200, body, {"Content-Type": "text/plain", "ETag": '"v1"'})
    return route


@pytest.mark.parametrize("location", [
    "http://127.0.0.2:{port}/secret", "http://canary.test:{port}/secret", "http://mixed.test:{port}/secret",
    "http://169.254.169.254/latest/meta-data/", "file:///etc/passwd",
])
async def test_a_revalidation_that_now_redirects_to_a_blocked_target_is_refused(
    location: str, web: LoopbackServer, canary: LoopbackServer, tmp_path: Path,
) -> None:
    url = web.route("/doc", _validated(b"the first, harmless version"))
    with running_server(security_settings(revalidate_after_s=0, upload_dir=tmp_path)) as fresh:
        failed, body = await call_tool(fresh, "process_document", {"document_url": url})
        assert not failed and "harmless" in str(body["content"]), body
        web.route("/doc", _redirect(location.format(port=canary.port)))
        body = await assert_refused(fresh, url)  # the conditional GET's redirect is checked like any hop
    assert body["code"] == "DOWNLOAD_ERROR"
    assert "if-none-match" in web.requests[-1].headers  # it was the revalidation that was refused
    assert canary.hits == 0


async def test_a_revalidation_is_pinned_to_the_checked_address_like_the_first_download(
    web: LoopbackServer, canary: LoopbackServer, tmp_path: Path,
) -> None:
    web.route("/doc", _validated(b"pinned text"))
    url = f"http://fixture.test:{web.port}/doc"
    with running_server(security_settings(revalidate_after_s=0, upload_dir=tmp_path)) as fresh:
        for _ in range(2):
            failed, body = await call_tool(fresh, "process_document", {"document_url": url})
            assert not failed and "pinned text" in str(body["content"]), body
    assert [(s.headers["host"], s.headers.get("if-none-match")) for s in web.requests] == [
        (f"fixture.test:{web.port}", None), (f"fixture.test:{web.port}", '"v1"')]
    assert canary.hits == 0


@pytest.mark.parametrize("probe", [
    "upload://127.0.0.2:{port}/", "upload://../../etc/passwd", "upload:///etc/passwd", "upload://canary.test/",
    "upload://" + "0" * 63, "upload://" + "0" * 64 + "/../../etc/passwd", "UPLOAD://" + "G" * 64,
])
async def test_an_upload_url_names_only_a_stored_upload_never_a_host_or_a_path(
    probe: str, server: ThreadedServer, canary: LoopbackServer,
) -> None:
    body = await assert_refused(server, probe.format(port=canary.port))
    assert body["code"] == "VALIDATION_ERROR"
    assert "root:" not in str(body)
    assert canary.hits == 0


async def test_an_uploaded_document_full_of_canary_links_never_reaches_the_canary(
    canary: LoopbackServer, tmp_path: Path,
) -> None:
    import httpx

    target = canary.url("/secret")
    html = (f'<html><head><link rel="stylesheet" href="{target}"><script src="{target}"></script></head>'
            f'<body><p>Uploaded page</p><img src="{target}"><iframe src="{target}"></iframe></body></html>').encode()
    with running_server(security_settings(upload_dir=tmp_path)) as uploading:
        async with httpx.AsyncClient(trust_env=False) as http:
            answer = await http.post(f"{uploading.base}/documents", content=html,
                                     params={"filename": "page.html"}, headers={"Content-Type": "text/html"})
        assert answer.status_code == 201, answer.text
        failed, body = await call_tool(uploading, "process_document",
                                       {"document_url": answer.json()["document_url"]})
    assert not failed and "Uploaded page" in str(body["content"]), body
    assert "canary secret" not in str(body)
    assert canary.hits == 0
