"""process_document edge cases through a real client: sniffing by content, garbage, local files."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.conftest import DOCS, FileServer
from tests.mcp_harness import memory_client, payload

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("odd")
    shutil.copy(DOCS / "pdf/multi_page.pdf", root / "download")  # no extension: application/octet-stream
    shutil.copy(DOCS / "docx/testWORD.docx", root / "report.pdf")  # an extension that lies
    (root / "garbage.bin").write_bytes(os.urandom(4096) + bytes(range(32)) * 64)
    (root / "notes.unknownext").write_text("Plain notes with a link https://example.com/api/v1/items and text.\n")
    (root / "linked.md").write_text("# Notice\n\nVerify your account at [http://sketchy.example](sketchy.example).\n")
    server = FileServer(root)
    yield server
    server.close()


async def test_a_pdf_served_as_octet_stream_without_extension_is_processed_as_pdf(served: FileServer) -> None:
    async with memory_client(load_models=False) as client:
        result = await client.call_tool("process_document", {"document_url": served.url("download?id=7")})
    body = payload(result)
    assert not result.is_error, body
    assert body["document_type"] == "pdf" and "--- Page 1 ---" in body["content"]


async def test_content_wins_over_a_lying_extension(served: FileServer) -> None:
    async with memory_client(load_models=False) as client:
        body = payload(await client.call_tool("process_document", {"document_url": served.url("report.pdf")}))
    assert body["document_type"] == "docx"


async def test_binary_garbage_is_an_unsupported_format_not_mojibake(served: FileServer) -> None:
    async with memory_client(load_models=False) as client:
        result = await client.call_tool("process_document", {"document_url": served.url("garbage.bin")})
    body = payload(result)
    assert result.is_error and body["code"] == "PROCESSING_ERROR"
    assert "unsupported format" in body["error"]


async def test_text_of_an_unknown_extension_is_read_as_text_with_its_urls(served: FileServer) -> None:
    async with memory_client(load_models=False) as client:
        body = payload(await client.call_tool("process_document", {"document_url": served.url("notes.unknownext")}))
    assert body["document_type"] == "txt" and "Plain notes" in body["content"]
    assert body["urls"][0]["url"] == "https://example.com/api/v1/items"
    assert body["urls"][0]["url_type"] == "api_endpoint"


async def test_a_markdown_link_whose_text_is_a_url_is_processed_not_an_error(served: FileServer) -> None:
    # "[http://a.example](a.example)" is one URL match with "](" in its host, which urlsplit refuses
    async with memory_client(load_models=False) as client:
        result = await client.call_tool("process_document", {"document_url": served.url("linked.md")})
    body = payload(result)
    assert not result.is_error, body
    assert "Verify your account" in body["content"]
    assert [u["url_type"] for u in body["urls"] if u["url"].startswith("http://sketchy.example")] == ["general"]


async def test_local_files_are_read_only_under_document_roots() -> None:
    target = DOCS / "txt" / "fake-text.txt"
    async with memory_client(load_models=False, document_roots=[str(DOCS / "txt")]) as client:
        inside = await client.call_tool("process_document", {"document_url": target.as_uri()})
        plain_path = await client.call_tool("process_document", {"document_url": str(target)})
        other = DOCS / "csv" / "csv-tab.csv"
        outside = await client.call_tool("process_document", {"document_url": other.as_uri()})
        escape = await client.call_tool("process_document", {"document_url": f"{DOCS}/txt/../csv/csv-tab.csv"})
    assert not inside.is_error and not plain_path.is_error
    assert payload(outside)["code"] == "DOWNLOAD_ERROR" and payload(escape)["code"] == "DOWNLOAD_ERROR"


async def test_local_files_are_refused_when_no_roots_are_configured() -> None:
    async with memory_client(load_models=False) as client:
        body = payload(await client.call_tool("process_document",
                                              {"document_url": (DOCS / "txt" / "fake-text.txt").as_uri()}))
    assert body["code"] == "DOWNLOAD_ERROR" and "DOCUMENT_ROOTS" in body["error"]


async def test_a_private_address_outside_the_allowlist_is_refused(served: FileServer) -> None:
    async with memory_client(load_models=False, fetch_allowlist=[]) as client:
        body = payload(await client.call_tool("process_document", {"document_url": served.url("download")}))
    assert body["code"] == "DOWNLOAD_ERROR"


async def test_a_missing_file_is_a_download_error_with_the_status(served: FileServer) -> None:
    async with memory_client(load_models=False) as client:
        body = payload(await client.call_tool("process_document", {"document_url": served.url("nope.pdf")}))
    assert body["code"] == "DOWNLOAD_ERROR" and "404" in body["error"]


async def test_extract_image_text_names_its_own_argument_when_the_url_is_bad() -> None:
    async with memory_client(load_models=False) as client:
        body = payload(await client.call_tool("extract_image_text", {"image_url": "ftp://example.com/x.png"}))
    assert body["code"] == "VALIDATION_ERROR" and body["error"].startswith("image_url ")
