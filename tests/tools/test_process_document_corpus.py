"""Every file of the corpus (tests/corpus/docs) through process_document, over MCP streamable HTTP, served
from a loopback HTTP server: expected text where the corpus README gives it, the documented
error for encrypted and truncated files, OCR text for scanned PDFs and images."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DOCS, FileServer
from tests.mcp_harness import ThreadedServer, http_client, make_settings, payload

pytestmark = pytest.mark.anyio

PASSWORD = ("PROCESSING_ERROR", "password")

# file -> fragments the content must include (case-sensitive), or (code, message fragment).
EXPECTED: dict[str, list[str] | tuple[str, str]] = {
    "pdf/ocr_test.pdf": ["Docling bundles PDF document conversion"],
    "pdf/MEDRPT-2024-PAT-3847_medical_report_scan.pdf": ["SEATTLE GENERAL HOSPITAL"],
    "pdf/password.pdf": PASSWORD,
    "pdf/2206.01062_pg3.pdf": PASSWORD,
    "pdf/testPDF_bad_page_303226.pdf": ["1309.61"],
    "pdf/multi_page.pdf": ["--- Page 5 ---"],
    "pdf/redp5110_sampled.pdf": ["--- Page 18 ---"],
    "docx/testWORD_protected_passtika.docx": PASSWORD,
    "docx/testWORD_truncated.docx": ("PROCESSING_ERROR", "corrupt"),
    "pptx/powerpoint_sample.pptx": ["Some notes on the second slide."],
    "pptx/testPPT_various2.pptx": ["NotesForSlide2"],
    "pptx/fake-power-point-malformed.pptx": ["Problem Date Placeholder", "Test Slide"],
    "pptx/testPPT_protected_passtika.pptx": PASSWORD,
    "xlsx/testEXCEL_protected_passtika.xlsx": PASSWORD,
    "xlsx/eng_spa.xlsx": ["English", "Spanish"],
    "xlsx/protectedSheets.xlsx": ["Лист1"],
    "csv/test_mskanji.csv": ["名前", "年齢", "住所"],
    "csv/stanley-cups-utf-16.csv": ["Stanley"],
    "txt/fake-text-utf-16.txt": ["This is a test document"],
    "png/testOCR.png": ["This file contains some words"],
    "png/image_metadata.png": ["Sample Document"],
    "jpg/qr_bill_example.jpg": ["3139"],
    "html/wiki_duck.html": ["Duck"],
    "doc/test.doc": ["Test Legacy Word Document", "The quick brown fox jumps over the lazy dog."],
    "doc/testWORD.doc": ["Heading Level 1"],
    "xls/test.xls": ["Alpha", "Delta"],
    "ppt/powerpoint_sample.ppt": ["Some notes on the second slide."],
    "odt/testWORD.odt": ["Heading Level 1"],
    "ods/stanley-cups.ods": ["Stanley"],
    "odp/powerpoint_sample.odp": ["Some notes on the second slide."],
    "rtf/word_tables.rtf": ["A uniform table"],
    "eml/test.eml": ["From: John Doe <john.doe@example.com>", "## test.txt"],
    "msg/test_outlook_msg.msg": ["This is the body of the test email message"],
    "eml/test_outlook_msg.eml": ["Subject: Test Email Message", "This is the body of the test email message"],
    "epub/test.epub": ["## Chapter 2", "Chapter 2: More Content"],
    "zip/corpus-members.zip": ["## docx/testWORD.docx", "Heading Level 1", "$.key1: string_value"],
    "json/test.json": ["$.key3[1]: list_value2"],
    "xml/test_rss.xml": ["rss/channel/title: The Official Microsoft Blog"],
    "yaml/markdown-it-port.yaml": ["$[0].package: markdown-it/markdown-it"],
    "rst/numpy-ma-README.rst": ["A guide to masked arrays in NumPy"],
    "org/testWORD.org": ["** Heading Level 2"],
}
# Files whose content is legitimately empty.
EMPTY = {"txt/empty.txt"}

FILES = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[FileServer, ThreadedServer]]:
    files = FileServer(DOCS)
    with ThreadedServer(make_settings(load_models=False, rate_limit_rpm=100_000)) as mcp:
        yield files, mcp
    files.close()


def test_the_whole_corpus_is_covered() -> None:
    # The corpus README says 106 (every one of them is tested below).
    assert len(FILES) >= 106


@pytest.mark.parametrize("name", FILES)
async def test_process_document_handles_corpus_file(servers: tuple[FileServer, ThreadedServer], name: str) -> None:
    files, mcp = servers
    async with http_client(mcp.mcp_url) as client:
        result = await client.call_tool("process_document", {"document_url": files.url(name)})
        body = payload(result)
        full_text = body.get("content", "")
        if body.get("truncated"):  # content is capped at 50k characters; chunks carry all of it
            assert body["content_length"] > len(body["content"]) == 50_000
            chunks = payload(await client.call_tool("chunk_document", {"document_url": files.url(name)}))
            full_text = "\n".join(chunk["text"] for chunk in chunks["chunks"])
    expected = EXPECTED.get(name, [])
    if isinstance(expected, tuple):
        code, fragment = expected
        assert result.is_error, f"{name} should fail with {code}"
        assert body["code"] == code
        assert fragment in body["error"].lower()
        assert "Traceback" not in body["error"]
        return
    assert not result.is_error, body
    if name in EMPTY:
        assert body["content"] == ""
        return
    assert body["content"].strip(), f"{name} gave no content"
    assert body["document_type"] == _expected_type(name)
    for fragment in expected:
        assert fragment in full_text, f"{fragment!r} missing from {name}"
    assert "\ufffd" not in body["content"][:5000] or name.startswith(("jpg/", "png/")), "mojibake in content"


def _expected_type(name: str) -> str:
    folder = Path(name).parts[0]
    return {"jpg": "image", "png": "image"}.get(folder, folder)
