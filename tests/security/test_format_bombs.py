"""The bombs of issue #31 end to end over MCP: a zip bomb, an e-mail nested 50 deep, a message of
10,000 attachments and a document converter that hangs each give a clear error while GET /health,
polled all along with a 1 s client timeout, keeps answering (``call_while_healthy``). The converter
is a stand-in script that never finishes, so the test needs no LibreOffice."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from email.message import EmailMessage

import pytest

from tests.conftest import DOCS
from tests.fetch.servers import LoopbackServer, respond
from tests.mcp_harness import ThreadedServer

from ._bombs import ooxml_with_zero_member, zip_of_zeros
from ._harness import call_while_healthy, running_server, security_settings, warm_parsers

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    hang = tmp_path_factory.mktemp("converter") / "soffice"
    hang.write_text("#!/bin/sh\nexec sleep 600\n")
    hang.chmod(hang.stat().st_mode | stat.S_IXUSR)
    settings = security_settings(office_command=str(hang), office_timeout=1, parse_timeout=20)
    with running_server(settings) as running:
        yield running


@pytest.fixture(scope="module")
def warm(server: ThreadedServer, _web_server: LoopbackServer) -> ThreadedServer:
    return warm_parsers(server, _web_server)


async def refused(server: ThreadedServer, web: LoopbackServer, path: str, data: bytes, content_type: str,
                  within: float = 20.0) -> dict[str, object]:
    url = web.route(path, lambda h: respond(h, 200, data, {"Content-Type": content_type}))
    failed, body, polls = await call_while_healthy(server, "process_document", {"document_url": url}, within=within)
    assert failed and body["code"] == "PROCESSING_ERROR", body
    assert polls >= 1 and "Traceback" not in str(body)
    return body


async def test_a_zip_bomb_is_refused_while_health_answers(warm: ThreadedServer, web: LoopbackServer) -> None:
    body = await refused(warm, web, "/bomb.zip", zip_of_zeros("zeros.txt"), "application/zip")
    assert body.get("limit") == "zip_max_ratio", body


def _nested(depth: int) -> bytes:
    message = EmailMessage()
    message["Subject"], message["From"] = f"level {depth}", "a@example.com"
    message.set_content("innermost")
    for level in range(depth - 1, 0, -1):
        outer = EmailMessage()
        outer["Subject"], outer["From"] = f"level {level}", "a@example.com"
        outer.set_content(f"body {level}")
        outer.add_attachment(message, filename=f"level{level + 1}.eml")
        message = outer
    return message.as_bytes()


async def test_an_email_nested_50_deep_is_refused_while_health_answers(
    warm: ThreadedServer, web: LoopbackServer,
) -> None:
    body = await refused(warm, web, "/deep.eml", _nested(50), "message/rfc822")
    assert body.get("limit") == "archive_max_depth", body


async def test_a_message_of_10000_attachments_is_refused_while_health_answers(
    warm: ThreadedServer, web: LoopbackServer,
) -> None:
    parts = "".join(f"--B\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=a{i}.txt\r\n\r\n"
                    f"attachment {i}\r\n" for i in range(10_000))
    raw = (f"From: a@example.com\r\nSubject: many\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; "
           f"boundary=B\r\n\r\n{parts}--B--\r\n").encode()
    body = await refused(warm, web, "/many.eml", raw, "message/rfc822")
    assert body.get("limit") == "archive_max_members", body


async def test_a_hanging_converter_is_cut_off_while_health_answers(
    warm: ThreadedServer, web: LoopbackServer,
) -> None:
    body = await refused(warm, web, "/legacy.doc", (DOCS / "doc" / "test.doc").read_bytes(), "application/msword")
    assert "converter took longer than 1 s" in str(body["error"]), body
    assert body.get("reason") == "converter_timeout", body


async def page_image_refused(server: ThreadedServer, web: LoopbackServer, path: str, data: bytes,
                             content_type: str) -> dict[str, object]:
    url = web.route(path, lambda h: respond(h, 200, data, {"Content-Type": content_type}))
    failed, body, polls = await call_while_healthy(server, "get_page_image", {"document_url": url, "page": 1},
                                                   within=20.0)
    assert failed and body["code"] == "PROCESSING_ERROR", body
    assert polls >= 1 and "Traceback" not in str(body)
    return body


async def test_a_hanging_converter_drawing_a_page_is_cut_off_while_health_answers(
    warm: ThreadedServer, web: LoopbackServer,
) -> None:
    body = await page_image_refused(warm, web, "/pages.doc", (DOCS / "doc" / "test.doc").read_bytes(),
                                    "application/msword")
    assert body.get("reason") == "converter_timeout", body


async def test_a_docx_zip_bomb_asked_for_a_page_is_refused_before_any_conversion(
    warm: ThreadedServer, web: LoopbackServer,
) -> None:
    bomb = ooxml_with_zero_member((DOCS / "docx" / "testWORD.docx").read_bytes(), "word/media/zeros.bin")
    body = await page_image_refused(warm, web, "/bomb-pages.docx", bomb,
                                    "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
    assert body.get("limit") == "zip_max_ratio", body  # the zip guard, not the (hanging) converter
