"""get_page_image on word-processing documents and decks over a real MCP client: LibreOffice exports
them to PDF once (cached in the ``page_pdf`` layer) and their pages render like a PDF's; a deck's
page N is its slide N; spreadsheets and text formats have no page images (a clear error); a
hanging converter is a clear error too."""

from __future__ import annotations

import base64
import io
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.types import CallToolResult, ImageContent
from PIL import Image

from tests.conftest import FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, call, call_raw, make_settings, payload

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(shutil.which("soffice") is None,
                                                    reason="LibreOffice is not installed (make system-deps)")]

DOCX, DOC, PPTX, PPT, ODT, XLSX, EPUB, TXT = (
    "docx/testWORD.docx", "doc/testWORD.doc", "pptx/powerpoint_sample.pptx", "ppt/powerpoint_sample.ppt",
    "odt/testWORD.odt", "xlsx/stanley-cups.xlsx", "epub/test.epub", "txt/fake-text.txt")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    with serve_copies(tmp_path_factory.mktemp("served"), DOCX, DOC, PPTX, PPT, ODT, XLSX, EPUB, TXT) as server:
        yield server


@pytest.fixture(scope="module")
def mcp() -> Iterator[ThreadedServer]:
    with ThreadedServer(make_settings(rate_limit_rpm=100_000)) as server:
        yield server


def url(files: FileServer, name: str) -> str:
    return files.url(Path(name).name)  # served by base name


def png_of(result: CallToolResult) -> bytes:
    image = next(block for block in result.content if isinstance(block, ImageContent))
    assert image.mime_type == "image/png"
    return base64.b64decode(image.data)


async def test_a_decks_slides_come_back_as_page_images_one_page_per_slide(files: FileServer,
                                                                         mcp: ThreadedServer) -> None:
    result = await call_raw(mcp, "get_page_image", document_url=url(files, PPTX), page=2)
    assert not result.is_error, result.content
    meta = payload(result)
    assert (meta["document_type"], meta["page"], meta["page_count"], meta["cached"]) == ("pptx", 2, 3, False)
    assert meta["width"] > meta["height"]  # a 16:9 slide, not a portrait page
    png = png_of(result)
    assert png.startswith(PNG_MAGIC) and len(png) == meta["bytes"]
    assert Image.open(io.BytesIO(png)).size == (meta["width"], meta["height"])
    failed, body = await call(mcp, "get_page_image", document_url=url(files, PPTX), page=4)
    assert failed and body["code"] == "VALIDATION_ERROR" and "pages 1-3" in body["error"], body


async def test_a_legacy_deck_renders_its_slides_too(files: FileServer, mcp: ThreadedServer) -> None:
    meta = payload(await call_raw(mcp, "get_page_image", document_url=url(files, PPT), page=3))
    assert (meta["document_type"], meta["page_count"]) == ("ppt", 3) and meta["width"] > meta["height"]


async def test_a_word_document_is_exported_once_and_every_page_renders_from_the_cached_export(
    files: FileServer, mcp: ThreadedServer,
) -> None:
    _, before = await call(mcp, "manage_cache", action="stats")
    first = payload(await call_raw(mcp, "get_page_image", document_url=url(files, DOCX), page=1))
    second = payload(await call_raw(mcp, "get_page_image", document_url=url(files, DOCX), page=2))
    assert (first["document_type"], first["page_count"], second["page"]) == ("docx", 2, 2)
    assert first["height"] > first["width"]  # a portrait page
    _, after = await call(mcp, "manage_cache", action="stats")
    layer, was = after["layers"]["page_pdf"], before["layers"]["page_pdf"]
    assert layer["hits"] - was["hits"] >= 1 and layer["entries"] >= 1
    again = payload(await call_raw(mcp, "get_page_image", document_url=url(files, DOCX), page=1))
    assert again["cached"] and again["bytes"] == first["bytes"]


async def test_a_passage_of_a_word_document_crops_its_page(files: FileServer, mcp: ThreadedServer) -> None:
    _, found = await call(mcp, "verify_quote", document_url=url(files, ODT),
                          quote="This is a sample Microsoft Word Document.")
    assert found["found"], found
    whole = payload(await call_raw(mcp, "get_page_image", document_url=url(files, ODT), page=1))
    crop = payload(await call_raw(mcp, "get_page_image", document_url=url(files, ODT), page=1,
                             passage_id=found["passage_id"]))
    assert crop["document_type"] == "odt" and crop["cropped"] and crop["height"] < whole["height"]


async def test_a_slide_passage_asked_on_another_slide_names_its_own(files: FileServer, mcp: ThreadedServer) -> None:
    _, found = await call(mcp, "verify_quote", document_url=url(files, PPTX), quote="Some notes on the second slide.")
    assert found["found"] and found["location"]["slide"] == 2, found
    failed, body = await call(mcp, "get_page_image", document_url=url(files, PPTX), page=1,
                              passage_id=found["passage_id"])
    assert failed and body["argument"] == "page" and "slide 2" in body["error"], body


@pytest.mark.parametrize(("name", "fragment"), [(XLSX, "has sheets, not pages"), (EPUB, "EPUB, which has no pages"),
                                                (TXT, "TXT, which has no pages")])
async def test_spreadsheets_and_text_formats_say_they_have_no_page_images(
    files: FileServer, mcp: ThreadedServer, name: str, fragment: str,
) -> None:
    failed, body = await call(mcp, "get_page_image", document_url=url(files, name), page=1)
    assert failed and body["code"] == "VALIDATION_ERROR" and body["reason"] == "no_pages", body
    assert fragment in body["error"] and body["argument"] == "document_url"


async def test_a_hanging_converter_is_a_clear_error_for_a_page_image(tmp_path: Path) -> None:
    fake = tmp_path / "soffice"
    fake.write_text("#!/bin/sh\nsleep 600\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "served").mkdir()
    with serve_copies(tmp_path / "served", DOC) as files, \
            ThreadedServer(make_settings(office_command=str(fake), office_timeout=0.5)) as server:
        failed, body = await call(server, "get_page_image", document_url=url(files, DOC), page=1)
    assert failed and body["code"] == "PROCESSING_ERROR" and body["reason"] == "converter_timeout", body
