"""A web page's linked style sheets, over a real MCP client: a same-origin sheet is fetched when the
page is parsed, so a class it hides is flagged (or dropped) and a background it paints is known; a
sheet of another origin is never requested; a sheet over the byte cap is left out (the page is then
read as one whose sheet is unknown: white text is not judged)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_server.pipeline.style_sheets import SHEET_BYTES
from mcp_server.server.build import create_server
from tests.conftest import FileServer
from tests.mcp_harness import ThreadedServer, call, make_settings
from tests.tools._hidden_documents import PAYLOAD, PAYLOAD_WORD, VISIBLE_WORD, _page

pytestmark = pytest.mark.anyio

HIDING_SHEET = ".promo { display: none }\n.card { background: #ffffff }\n.banner { background: #202020 }\n"


class _Counting(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        type(self).hits += 1
        body = HIDING_SHEET.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/css")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def other_origin() -> Iterator[str]:
    """A sheet server on another port of the same address: another origin."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/site.css"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, other_origin: str) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("site")
    (root / "site.css").write_text(HIDING_SHEET)
    (root / "huge.css").write_text(HIDING_SHEET + "/*" + "x" * SHEET_BYTES + "*/")
    link = '<link rel="stylesheet" href="{}">'
    pages = {
        "hidden-by-class.html": _page(f'<div class="promo"><p>{PAYLOAD}</p></div>', link.format("site.css")),
        "white-on-a-linked-white-card.html": _page(f'<div class="card"><p style="color:#fff">{PAYLOAD}</p></div>',
                                                   link.format("/site.css")),
        "white-on-a-linked-dark-banner.html": _page(f'<div class="banner"><p style="color:#fff">{PAYLOAD}</p></div>',
                                                    link.format("site.css")),
        "sheet-of-another-origin.html": _page(f'<div class="promo"><p>{PAYLOAD}</p></div>', link.format(other_origin)),
        "sheet-over-the-cap.html": _page(f'<div class="card"><p style="color:#fff">{PAYLOAD}</p></div>',
                                         link.format("huge.css")),
    }
    for name, data in pages.items():
        (root / name).write_bytes(data)
    server = FileServer(root)
    yield server
    server.close()


def _server(tmp_path: Path, **settings: Any) -> ThreadedServer:
    rag = create_server(make_settings(index_dir=tmp_path / "indexes", rate_limit_rpm=100_000, **settings))
    return ThreadedServer(rag.rag_settings, rag)


async def _process(server: ThreadedServer, url: str) -> dict[str, Any]:
    failed, out = await call(server, "process_document", document_url=url, view="full")
    assert not failed, out
    return out


def _flagged(processed: dict[str, Any]) -> bool:
    content = processed["content"]
    return any(PAYLOAD_WORD in content[f["start"]:f["end"]] for f in processed["flags"] if f["kind"] == "hidden_text")


async def test_a_class_hidden_or_a_background_painted_by_a_same_origin_linked_sheet_is_read(
    files: FileServer, tmp_path: Path,
) -> None:
    with _server(tmp_path) as server:
        for name in ("hidden-by-class.html", "white-on-a-linked-white-card.html"):
            processed = await _process(server, files.url(name))
            assert VISIBLE_WORD in processed["content"] and _flagged(processed), (name, processed["flags"])
        dark = await _process(server, files.url("white-on-a-linked-dark-banner.html"))
        assert PAYLOAD_WORD in dark["content"] and dark["flags"] == []  # white on the sheet's dark banner
    with _server(tmp_path / "drop", hidden_text="drop") as server:
        dropped = await _process(server, files.url("hidden-by-class.html"))
        assert PAYLOAD_WORD not in str(dropped) and VISIBLE_WORD in dropped["content"]


async def test_a_sheet_of_another_origin_is_never_requested_and_one_over_the_cap_is_left_out(
    files: FileServer, tmp_path: Path,
) -> None:
    before = _Counting.hits
    with _server(tmp_path) as server:
        other = await _process(server, files.url("sheet-of-another-origin.html"))
        assert PAYLOAD_WORD in other["content"] and other["flags"] == []
        assert _Counting.hits == before
        capped = await _process(server, files.url("sheet-over-the-cap.html"))
        # the sheet not read, the card's background is unknown: white text there is not judged
        assert PAYLOAD_WORD in capped["content"] and capped["flags"] == []
