"""Downloading over HTTP: bytes and metadata, retries, the deadline and the byte cap (R1, R2)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_server.core.errors import DownloadError
from mcp_server.fetch import Fetcher, StaticResolver

from .servers import Handler, LoopbackServer, fetch_once, make_settings, respond

pytestmark = pytest.mark.anyio

PUBLIC = StaticResolver({"docs.test": "93.184.216.34"})


def mock(handler: Callable[[httpx.Request], httpx.Response]) -> dict[str, Any]:
    return {"transport": httpx.MockTransport(handler), "resolver": PUBLIC}


async def test_an_allowlisted_loopback_server_serves_a_corpus_file_byte_for_byte(
    corpus_dir: Path, corpus_server: object
) -> None:
    relative = "docs/pdf/multi_page.pdf"
    url = corpus_server.url(relative)  # type: ignore[attr-defined]
    doc = await fetch_once(url)
    assert doc.data == (corpus_dir / relative).read_bytes()
    assert doc.url == url
    assert doc.final_url == url
    assert doc.content_type == "application/pdf"
    assert doc.filename == "multi_page.pdf"


async def test_content_type_charset_and_disposition_filename_are_reported() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            content=b"a,b\n",
            headers={
                "Content-Type": 'Text/CSV; Charset="ISO-8859-1"',
                "Content-Disposition": "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.csv",
            },
        )

    doc = await fetch_once("https://docs.test/download?id=7#top", **mock(handler))
    assert (doc.content_type, doc.charset, doc.filename) == ("text/csv", "iso-8859-1", "résumé.csv")
    assert doc.url == "https://docs.test/download?id=7#top"
    assert doc.final_url == "https://docs.test/download?id=7"


async def test_a_disposition_filename_cannot_carry_a_path() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=b"x", headers={"Content-Disposition": 'attachment; filename="../../etc/passwd"'}
        )

    doc = await fetch_once("https://docs.test/a", **mock(handler))
    assert doc.filename == "passwd"


async def test_without_headers_the_filename_is_the_last_path_segment_and_the_type_is_empty() -> None:
    doc = await fetch_once(
        "https://docs.test/reports/Q3%20plan.docx",
        **mock(lambda request: httpx.Response(200, content=b"x")),
    )
    assert (doc.content_type, doc.charset, doc.filename) == ("", None, "Q3 plan.docx")


async def test_server_errors_are_retried_until_the_document_arrives(
    web: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    def flaky(h: Handler) -> None:
        if web.calls("/flaky") < 3:
            respond(h, 503, b"busy")
        else:
            respond(h, 200, b"finally")

    url = web.route("/flaky", flaky)
    with caplog.at_level(logging.INFO, logger="mcp_server.fetch"):
        doc = await fetch_once(url, make_settings(retry_backoff=[0.01, 0.02]))
    assert doc.data == b"finally"
    assert web.calls("/flaky") == 3
    retries = [r for r in caplog.records if hasattr(r, "attempt")]
    assert [(r.attempt, r.wait, r.url) for r in retries] == [(1, 0.01, url), (2, 0.02, url)]  # type: ignore[attr-defined]
    done = [r for r in caplog.records if hasattr(r, "bytes")]
    assert [r.bytes for r in done] == [len(b"finally")]


async def test_a_server_error_on_every_attempt_gives_up_after_the_configured_attempts(
    web: LoopbackServer,
) -> None:
    url = web.route("/down", lambda h: respond(h, 500, b"broken"))
    with pytest.raises(
        DownloadError, match=r"HTTP 500 Internal Server Error for .*/down \(gave up after 3 attempts\)"
    ):
        await fetch_once(url)
    assert web.calls("/down") == 3


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410])
async def test_client_errors_are_not_retried_and_name_the_status(status: int, web: LoopbackServer) -> None:
    url = web.route("/missing", lambda h: respond(h, status))
    with pytest.raises(DownloadError) as failed:
        await fetch_once(url)
    assert failed.value.message.startswith(f"HTTP {status} ")
    assert failed.value.message.endswith(f"for {url}")
    assert failed.value.details["status"] == status
    assert web.calls("/missing") == 1


async def test_a_404_names_its_reason() -> None:
    with pytest.raises(DownloadError, match=r"^HTTP 404 Not Found for https://docs.test/x$"):
        await fetch_once("https://docs.test/x", **mock(lambda r: httpx.Response(404)))


@pytest.mark.parametrize(
    ("retry_after", "cap", "expected_wait"), [("0.05", 10.0, 0.05), ("3600", 0.02, 0.02)]
)
async def test_too_many_requests_waits_as_retry_after_says_up_to_the_cap(
    retry_after: str, cap: float, expected_wait: float, web: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    def limited(h: Handler) -> None:
        if web.calls("/limited") == 1:
            respond(h, 429, headers={"Retry-After": retry_after})
        else:
            respond(h, 200, b"ok")

    url = web.route("/limited", limited)
    with caplog.at_level(logging.WARNING, logger="mcp_server.fetch"):
        doc = await fetch_once(url, make_settings(retry_after_cap=cap, retry_backoff=[0.5]))
    assert doc.data == b"ok"
    assert [r.wait for r in caplog.records if hasattr(r, "wait")] == [expected_wait]


async def test_a_refused_connection_is_retried_then_reported(
    closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="mcp_server.fetch"),
        pytest.raises(DownloadError, match=r"connection to .* failed.*gave up after 3 attempts"),
    ):
        await fetch_once(f"http://127.0.0.1:{closed_port}/")
    assert [r.attempt for r in caplog.records if hasattr(r, "attempt")] == [1, 2]


def trickle(h: Handler) -> None:
    """One byte at a time, slowly enough that no single read times out."""
    h.send_response(200)
    h.send_header("Content-Length", "100000")
    h.end_headers()
    h.close_connection = True
    for _ in range(400):
        try:
            h.wfile.write(b"x")
            h.wfile.flush()
        except OSError:
            return
        time.sleep(0.05)  # the server's pace, not test synchronisation


async def test_a_trickling_server_is_cut_off_by_the_overall_deadline(web: LoopbackServer) -> None:
    url = web.route("/trickle", trickle)
    settings = make_settings(download_deadline=0.5, read_timeout=10)
    with pytest.raises(DownloadError, match=r"did not finish within the 0.5 s deadline") as failed:
        await fetch_once(url, settings)
    assert failed.value.details["limit"] == 0.5


async def test_the_deadline_also_bounds_the_waits_between_attempts(web: LoopbackServer) -> None:
    url = web.route("/down", lambda h: respond(h, 503))
    with pytest.raises(DownloadError, match="deadline"):
        await fetch_once(url, make_settings(download_deadline=0.3, retry_backoff=[60]))
    assert web.calls("/down") == 1


async def test_a_body_larger_than_the_cap_is_refused_even_when_content_length_understates_it() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        chunks = [b"x" * 1024] * 64
        return httpx.Response(
            200, headers={"Content-Length": "10"}, stream=httpx.ByteStream(b"".join(chunks))
        )

    with pytest.raises(DownloadError, match=r"larger than the download limit of 4096 bytes") as failed:
        await fetch_once("https://docs.test/big", make_settings(max_download_bytes=4096), **mock(handler))
    assert failed.value.details["limit"] == 4096


async def test_an_endless_chunked_body_is_cut_off_at_the_cap(web: LoopbackServer) -> None:
    def endless(h: Handler) -> None:
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.close_connection = True
        chunk = b"y" * 65536
        try:
            for _ in range(10_000):
                h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except OSError:
            return

    url = web.route("/endless", endless)
    with pytest.raises(DownloadError, match="limit of 1000000 bytes"):
        await fetch_once(url, make_settings(max_download_bytes=1_000_000))


async def test_a_gzip_bomb_is_cut_off_at_the_cap_on_decoded_bytes(
    web: LoopbackServer, gzip_bomb: bytes
) -> None:
    def bomb(h: Handler) -> None:
        h.close_connection = True
        try:
            respond(h, 200, gzip_bomb, {"Content-Encoding": "gzip", "Content-Type": "text/plain"})
        except OSError:
            return

    url = web.route("/bomb", bomb)
    cap = 4 * 1024 * 1024  # above the ~1 MB on the wire, far below the 1 GiB it expands to
    assert len(gzip_bomb) < cap
    with pytest.raises(DownloadError, match=f"limit of {cap} bytes"):
        await fetch_once(url, make_settings(max_download_bytes=cap))


async def test_an_honest_content_length_above_the_cap_fails_before_the_body_is_read() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        def never() -> bytes:
            raise AssertionError("the body must not be read")

        class Unread(httpx.SyncByteStream, httpx.AsyncByteStream):
            async def __aiter__(self):
                yield never()

        return httpx.Response(200, headers={"Content-Length": str(10**9)}, stream=Unread())

    with pytest.raises(DownloadError, match="limit of 1000 bytes"):
        await fetch_once("https://docs.test/huge", make_settings(max_download_bytes=1000), **mock(handler))


async def test_a_downloads_own_cap_can_tighten_the_download_limit_but_never_loosen_it() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"z" * 3000)

    async with Fetcher(make_settings(max_download_bytes=2000), **mock(handler)) as fetcher:
        with pytest.raises(DownloadError, match="limit of 2000 bytes"):
            await fetcher.fetch("https://docs.test/sheet.css", max_bytes=1_000_000)
        with pytest.raises(DownloadError, match="limit of 1000 bytes"):
            await fetcher.fetch("https://docs.test/sheet.css", max_bytes=1000)
    async with Fetcher(make_settings(max_download_bytes=4000), **mock(handler)) as fetcher:
        assert len((await fetcher.fetch("https://docs.test/sheet.css", max_bytes=3500)).data) == 3000


TRANSPORT_ERRORS = [
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.ReadTimeout,
    httpx.WriteTimeout,
    httpx.PoolTimeout,
    httpx.ReadError,
    httpx.WriteError,
    httpx.CloseError,
    httpx.RemoteProtocolError,
    httpx.LocalProtocolError,
    httpx.ProxyError,
    httpx.UnsupportedProtocol,
    httpx.DecodingError,
    httpx.TooManyRedirects,
    httpx.TransportError,
    httpx.NetworkError,
    httpx.TimeoutException,
    httpx.ProtocolError,
    httpx.RequestError,
]
OTHER_ERRORS: list[Exception] = [
    httpx.InvalidURL("bad"),
    httpx.StreamConsumed(),
    httpx.StreamClosed(),
    httpx.ResponseNotRead(),
    httpx.RequestNotRead(),
    httpx.StreamError("x"),
    httpx.HTTPError("x"),
    httpx.CookieConflict("x"),
    OSError("disk"),
    ConnectionResetError("reset"),
]


def every_library_error() -> list[Exception]:
    request = httpx.Request("GET", "https://93.184.216.34/")
    errors: list[Exception] = [kind("boom", request=request) for kind in TRANSPORT_ERRORS]
    errors.append(httpx.HTTPStatusError("boom", request=request, response=httpx.Response(500)))
    return errors + OTHER_ERRORS


def test_the_mapping_test_covers_every_exception_httpx_exports() -> None:
    exported = {getattr(httpx, name) for name in httpx.__all__}
    exported = {item for item in exported if isinstance(item, type) and issubclass(item, Exception)}
    covered = {type(error) for error in every_library_error()}
    assert exported <= covered


@pytest.mark.parametrize("error", every_library_error(), ids=lambda e: type(e).__name__)
async def test_every_library_exception_becomes_a_download_error(error: Exception) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error

    with pytest.raises(DownloadError) as failed:
        await fetch_once("https://docs.test/doc", make_settings(retry_backoff=[0.0]), **mock(handler))
    assert "docs.test/doc" in failed.value.message
    assert "93.184.216.34" not in failed.value.message
