"""Every format of issue #31 through the four reading tools over a real MCP client (HTTP):
process_document names the format and holds the text, chunk_document locates the chunks,
retrieve_chunks finds a passage by its words, read_document reads it with its location, and
verify_quote finds a quote. One file per format from tests/corpus (LibreOffice conversions are few:
one per converted format)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_server.server.build import RagMCP, create_server
from tests.conftest import FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, http_client, make_settings, payload

pytestmark = pytest.mark.anyio

# corpus file -> (doc_type, a phrase of its text, what chunk locations must carry)
CASES: dict[str, tuple[str, str, str]] = {
    "doc/testWORD.doc": ("doc", "This is a sample Microsoft Word Document", "heading_path"),
    "xls/test.xls": ("xls", "Alpha", "sheet"),
    "ppt/powerpoint_sample.ppt": ("ppt", "Some notes on the second slide", "slide"),
    "odt/testWORD.odt": ("odt", "This is a sample Microsoft Word Document", "heading_path"),
    "ods/stanley-cups.ods": ("ods", "Stanley", "sheet"),
    "odp/powerpoint_sample.odp": ("odp", "Some notes on the second slide", "slide"),
    "rtf/word_tables.rtf": ("rtf", "A uniform table", "end_char"),
    "eml/test.eml": ("eml", "This is a test email with multiple parts", "heading_path"),
    "msg/test_outlook_msg.msg": ("msg", "This is the body of the test email message", "heading_path"),
    "epub/test.epub": ("epub", "Here's a second chapter with a different style", "end_char"),  # one chunk: 2 chapters
    "zip/corpus-members.zip": ("zip", "This is a sample Microsoft Word Document", "heading_path"),
    "json/test.json": ("json", "$.key3[1]: list_value2", "heading_path"),
    "xml/test_rss.xml": ("xml", "The Official Microsoft Blog", "heading_path"),
    "yaml/markdown-it-port.yaml": ("yaml", "markdown-it/markdown-it", "heading_path"),
    "rst/numpy-ma-README.rst": ("rst", "As a regular user of MaskedArray", "heading_path"),
    "org/testWORD.org": ("org", "This is a sample Microsoft Word Document", "heading_path"),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    with serve_copies(tmp_path_factory.mktemp("served"), *CASES) as server:
        yield server


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    rag: RagMCP = create_server(make_settings(index_dir=tmp_path_factory.mktemp("indexes"), rate_limit_rpm=100_000))
    with ThreadedServer(rag.rag_settings, rag) as server:
        yield server


async def call(server: ThreadedServer, tool: str, **arguments: Any) -> dict[str, Any]:
    async with http_client(server.mcp_url) as client:
        result = await client.call_tool(tool, arguments)
    body = payload(result)
    assert not result.is_error, (tool, body)
    return body


@pytest.mark.parametrize("name", sorted(CASES))
async def test_a_new_format_is_read_chunked_retrieved_and_read_with_locations(
    name: str, files: FileServer, mcp: ThreadedServer,
) -> None:
    doc_type, phrase, located_by = CASES[name]
    url = files.url(name.rsplit("/", 1)[1])

    processed = await call(mcp, "process_document", document_url=url)
    assert processed["document_type"] == doc_type
    assert phrase in processed["content"]
    assert "\\rtf" not in processed["content"] and "\\par" not in processed["content"]

    chunks = (await call(mcp, "chunk_document", document_url=url))["chunks"]
    assert chunks and any(phrase in chunk["text"] for chunk in chunks)
    assert any(chunk["location"].get(located_by) for chunk in chunks), [c["location"] for c in chunks]

    retrieved = await call(mcp, "retrieve_chunks", document_url=url, query=phrase, top_k=3)
    assert retrieved["document_type"] == doc_type
    assert any(phrase in hit["text"] for hit in retrieved["results"]), retrieved["results"]

    read = await call(mcp, "read_document", document_url=url, max_tokens=100_000)
    assert read["document_type"] == doc_type and phrase in read["text"]
    assert (read["location"]["end_char"] == read["total_chars"]) == (read["next_cursor"] is None)

    verified = await call(mcp, "verify_quote", document_url=url, quote=phrase)
    assert verified["found"] is True, verified


async def test_a_legacy_deck_and_workbook_are_read_one_slide_or_sheet_at_a_time(
    files: FileServer, mcp: ThreadedServer,
) -> None:
    slide = await call(mcp, "read_document", document_url=files.url("powerpoint_sample.ppt"), pages="2")
    assert "Some notes on the second slide" in slide["text"] and slide["pages"] == [2]
    sheet = await call(mcp, "read_document", document_url=files.url("test.xls"), pages="1")
    assert "Alpha" in sheet["text"] and sheet["pages"] == [1]


async def test_an_epub_is_read_one_chapter_at_a_time_in_reading_order(files: FileServer, mcp: ThreadedServer) -> None:
    second = await call(mcp, "read_document", document_url=files.url("test.epub"), pages="2")
    assert second["pages"] == [2] and second["text"].startswith("## Chapter 2")
    assert "second chapter" in second["text"] and "Chapter 1" not in second["text"]
    both = await call(mcp, "read_document", document_url=files.url("test.epub"))
    assert both["pages"] == [1, 2] and both["text"].startswith("# Test EPUB Document")  # the title block in none
    async with http_client(mcp.mcp_url) as client:
        result = await client.call_tool("read_document", {"document_url": files.url("test.epub"), "pages": "3"})
    assert result.is_error and "chapters are 1-2" in payload(result)["error"]


async def test_health_says_whether_the_office_converter_is_there(mcp: ThreadedServer) -> None:
    health = await call(mcp, "get_system_health")
    assert health["features"]["OFFICE_CONVERTER_AVAILABLE"] is (shutil.which("soffice") is not None)
    assert {"doc", "xls", "ppt", "odt", "ods", "odp", "rtf", "eml", "msg", "epub", "zip", "json", "xml", "yaml",
            "rst", "org"} <= set(health["supported_formats"])


async def test_archive_members_are_located_by_their_paths(files: FileServer, mcp: ThreadedServer) -> None:
    archive = await call(mcp, "chunk_document", document_url=files.url("corpus-members.zip"))
    tops = {tuple(chunk["location"].get("heading_path", [])[:1]) for chunk in archive["chunks"]}
    # the small last member (json/test.json) shares its chunk with the message before it
    assert {("docx/testWORD.docx",), ("csv/stanley-cups.csv",), ("eml/test.eml",)} <= tops
