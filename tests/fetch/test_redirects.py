"""Redirects are followed by hand and every hop is checked again (SECURITY S4)."""

from __future__ import annotations

import pytest

from mcp_server.core.errors import DownloadError

from .servers import Handler, LoopbackServer, Route, fetch_once, make_settings, respond

pytestmark = pytest.mark.anyio


def redirect(location: str, status: int = 302) -> Route:
    return lambda h: respond(h, status, headers={"Location": location})


async def test_a_chain_of_redirects_up_to_the_limit_is_followed(web: LoopbackServer) -> None:
    for hop in range(5):
        web.route(f"/hop{hop}", redirect(f"/hop{hop + 1}", status=(301, 302, 303, 307, 308)[hop]))
    web.route("/hop5", lambda h: respond(h, 200, b"arrived", {"Content-Type": "text/plain; charset=utf-8"}))
    doc = await fetch_once(web.url("/hop0"))
    assert doc.data == b"arrived"
    assert doc.url == web.url("/hop0")
    assert doc.final_url == web.url("/hop5")
    assert (doc.filename, doc.content_type, doc.charset) == ("hop5", "text/plain", "utf-8")


async def test_one_redirect_more_than_the_limit_is_refused(web: LoopbackServer) -> None:
    for hop in range(3):
        web.route(f"/hop{hop}", redirect(f"/hop{hop + 1}"))
    web.route("/hop3", lambda h: respond(h, 200, b"too far"))
    with pytest.raises(DownloadError, match=r"too many redirects .*limit is 2"):
        await fetch_once(web.url("/hop0"), make_settings(max_redirects=2))
    assert web.calls("/hop3") == 0


async def test_a_redirect_loop_is_refused(web: LoopbackServer) -> None:
    web.route("/a", redirect("/b"))
    web.route("/b", redirect("/a"))
    with pytest.raises(DownloadError, match="redirect loop"):
        await fetch_once(web.url("/a"))
    assert web.calls("/a") == 1


async def test_a_redirect_to_the_canary_is_refused(web: LoopbackServer, canary: LoopbackServer) -> None:
    web.route("/go", redirect(canary.url("/")))
    with pytest.raises(DownloadError, match="refusing"):
        await fetch_once(web.url("/go"))
    assert canary.hits == 0


async def test_a_protocol_relative_redirect_to_the_canary_is_refused(
    web: LoopbackServer, canary: LoopbackServer
) -> None:
    web.route("/go", redirect(f"//127.0.0.2:{canary.port}/"))
    with pytest.raises(DownloadError, match="refusing"):
        await fetch_once(web.url("/go"))
    assert canary.hits == 0


@pytest.mark.parametrize(
    "location",
    [
        "file:///etc/passwd",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "gopher://127.0.0.1/_x",
        "http://2130706434/",
    ],
)
async def test_redirects_to_forbidden_targets_are_refused(
    location: str, web: LoopbackServer, canary: LoopbackServer
) -> None:
    web.route("/go", redirect(location))
    with pytest.raises(DownloadError, match="refusing"):
        await fetch_once(web.url("/go"), make_settings(connect_timeout=1))
    assert canary.hits == 0


async def test_a_redirect_without_location_is_an_error(web: LoopbackServer) -> None:
    def bare(h: Handler) -> None:
        respond(h, 302)

    web.route("/bare", bare)
    with pytest.raises(DownloadError, match="HTTP 302 Found"):
        await fetch_once(web.url("/bare"))
