"""read_document, verify_quote and get_page_image over a real MCP client (the Python SDK's, over HTTP)."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp.types import ImageContent

from mcp_server.pipeline.reading import PAGE_IMAGE_MAX_BYTES, PAGE_IMAGE_MAX_PIXELS
from mcp_server.server.build import RagMCP, create_server
from tests.conftest import FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, call, call_raw, make_settings, payload

pytestmark = pytest.mark.anyio

PDF, PPTX, XLSX, TXT, DOCX, JPG = ("multi_page.pdf", "powerpoint_sample.pptx", "stanley-cups.xlsx",
                                   "fake-text.txt", "testWORD.docx", "testOCR.jpg")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# copied from page 4 of multi_page.pdf as a reader would: on one line (the PDF breaks it over three)
PAGE4 = ("Programs like Scrivener allowed authors to manage large projects, from novels to screenplays, with "
         "features like chapter outlines and character notes.")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("served")
    with serve_copies(root, f"pdf/{PDF}", f"pptx/{PPTX}", f"xlsx/{XLSX}", f"txt/{TXT}", f"docx/{DOCX}",
                     f"jpg/{JPG}") as server:
        yield server


@pytest.fixture(scope="module")
def rag(tmp_path_factory: pytest.TempPathFactory) -> RagMCP:
    return create_server(make_settings(index_dir=tmp_path_factory.mktemp("indexes"), rate_limit_rpm=100_000))


@pytest.fixture(scope="module")
def mcp(rag: RagMCP) -> Iterator[ThreadedServer]:
    with ThreadedServer(rag.rag_settings, rag) as server:
        yield server


async def content_of(server: ThreadedServer, url: str) -> str:
    failed, body = await call(server, "process_document", document_url=url)
    assert not failed and not body["truncated"], body
    return str(body["content"])


def squeezed(text: str) -> str:
    return "".join(text.split())


async def read_all(server: ThreadedServer, url: str, **arguments: Any) -> list[dict[str, Any]]:
    windows: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        args = dict(arguments) if cursor is None else {"cursor": cursor, "max_tokens": arguments["max_tokens"]}
        failed, body = await call(server, "read_document", document_url=url, **args)
        assert not failed, body
        windows.append(body)
        cursor = body["next_cursor"]
        if cursor is None:
            return windows
        assert len(windows) < 200, "the cursors never end"


# --- verify_quote --------------------------------------------------------------------------------------
async def test_a_sentence_copied_from_page_4_is_found_exact_on_page_4_with_a_passage_id(
    files: FileServer, mcp: ThreadedServer,
) -> None:
    failed, found = await call(mcp, "verify_quote", document_url=files.url(PDF), quote=PAGE4)
    assert not failed, found
    assert (found["found"], found["match"], found["similarity"]) == (True, "exact", 1.0)
    assert found["location"]["pages"] == [4] and found["occurrences"] == 1
    assert found["document_text"] == PAGE4
    # the id is the one retrieve_chunks issues for that chunk: get_passage reads it back
    failed, passage = await call(mcp, "get_passage", passage_id=found["passage_id"])
    assert not failed, passage
    assert squeezed(PAGE4) in squeezed(passage["text"])
    _, retrieved = await call(mcp, "retrieve_chunks", document_url=files.url(PDF), query=PAGE4, top_k=20)
    assert found["passage_id"] in {r["passage_id"] for r in retrieved["results"]}


async def test_one_word_changed_is_not_exact_and_the_answer_shows_the_documents_wording(
    files: FileServer, mcp: ThreadedServer,
) -> None:
    changed = PAGE4.replace("large", "huge")
    failed, found = await call(mcp, "verify_quote", document_url=files.url(PDF), quote=changed)
    assert not failed, found
    assert found["match"] == "close" and found["found"] is True
    assert found["threshold"] <= found["similarity"] < 1.0
    assert "to manage large projects" in found["document_text"]
    assert found["differences"] == [{"quote": "huge", "document": "large"}]
    assert found["location"]["pages"] == [4] and found["passage_id"].startswith("p1.")


async def test_an_invented_sentence_is_none(files: FileServer, mcp: ThreadedServer) -> None:
    invented = "The first word processor was carved in granite by Babylonian accountants in 1712."
    failed, found = await call(mcp, "verify_quote", document_url=files.url(PDF), quote=invented)
    assert not failed, found
    assert (found["found"], found["match"]) == (False, "none")
    assert found["passage_id"] is None and found["similarity"] < found["threshold"]


async def test_a_quote_with_another_number_is_never_close(files: FileServer, mcp: ThreadedServer) -> None:
    quote = "Patented in 1869 by Christopher Latham Sholes, the typewriter revolutionized written communication"
    failed, found = await call(mcp, "verify_quote", document_url=files.url(PDF), quote=quote)
    assert not failed, found
    assert found["match"] == "none" and "numbers" in found["reason"]
    assert found["differences"] == [{"quote": "1869", "document": "1868"}]  # where the document disagrees


async def test_exact_ignores_line_breaks_hyphens_quotes_and_dashes_only(files: FileServer,
                                                                       mcp: ThreadedServer) -> None:
    # the PDF breaks this sentence over two lines and writes "Apple’s" with a typographic apostrophe
    quote = "Apple's MacWrite, which leveraged the Macintosh's graphical capabilities"
    _, found = await call(mcp, "verify_quote", document_url=files.url(PDF), quote=quote)
    assert found["match"] == "exact" and found["location"]["pages"] == [2]
    # ... and this one hyphenates "self-publishing" at a line end
    hyphenated = "This accessibility paved the way for self-publishing, blogging, and even fan fiction communities."
    _, found = await call(mcp, "verify_quote", document_url=files.url(PDF), quote=hyphenated)
    assert found["match"] == "exact" and found["location"]["pages"] == [4]
    _, cased = await call(mcp, "verify_quote", document_url=files.url(PDF), quote=quote.upper())
    assert cased["match"] != "exact"


async def test_a_quote_from_a_word_document_stands_under_its_heading(files: FileServer,
                                                                    mcp: ThreadedServer) -> None:
    quote = "This document includes text that is BOLD and ITALIC."
    failed, found = await call(mcp, "verify_quote", document_url=files.url(DOCX), quote=quote)
    assert not failed and found["match"] == "exact", found
    assert found["location"]["heading_path"][-1] == "Heading Level 3" and found["passage_id"].startswith("p1.")


async def test_concurrent_first_quotes_on_a_document_build_its_quote_index_once(files: FileServer,
                                                                               mcp: ThreadedServer) -> None:
    _, before = await call(mcp, "manage_cache", action="stats")

    async def verify() -> None:
        failed, found = await call(mcp, "verify_quote", document_url=files.url(XLSX), quote="Maple Leafs")
        assert not failed and found["match"] == "exact", found

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(verify)
    _, after = await call(mcp, "manage_cache", action="stats")
    # one build; each other call finds it, before or after waiting for it (a second build would miss)
    layer = "quote_index"
    assert after["layers"][layer]["hits"] - before["layers"][layer]["hits"] == 4
    assert after["layers"][layer]["entries"] - before["layers"][layer]["entries"] == 1


# --- read_document -----------------------------------------------------------------------------------
async def test_reading_by_cursor_with_200_tokens_covers_every_page_once(files: FileServer,
                                                                       mcp: ThreadedServer) -> None:
    url = files.url(PDF)
    content = await content_of(mcp, url)
    windows = await read_all(mcp, url, max_tokens=200)
    assert len(windows) > 5
    assert all(0 < w["tokens"] <= 200 for w in windows)
    # nothing missing, nothing twice: the texts put together are the document's text
    assert squeezed("".join(w["text"] for w in windows)) == squeezed(content)
    spans = [(w["location"]["start_char"], w["location"]["end_char"]) for w in windows]
    assert all(end <= following for (_, end), (following, _) in zip(spans, spans[1:], strict=False))
    markers = [m for w in windows for m in re.findall(r"--- Page (\d+) ---", w["text"])]
    assert markers == ["1", "2", "3", "4", "5"]
    assert sorted({p for w in windows for p in w["pages"]}) == [1, 2, 3, 4, 5]
    # cut at paragraph or line ends: no window ends inside a word of the text
    for window in windows[:-1]:
        end = window["location"]["end_char"]
        assert content[end].isspace(), content[end - 20: end + 20]


async def test_pages_4_returns_page_4_only(files: FileServer, mcp: ThreadedServer) -> None:
    url = files.url(PDF)
    windows = await read_all(mcp, url, pages="4", max_tokens=4000)
    assert len(windows) == 1 and windows[0]["pages"] == [4] and windows[0]["next_cursor"] is None
    text = windows[0]["text"]
    assert text.startswith("--- Page 4 ---") and "Page 3" not in text and "Page 5" not in text
    assert squeezed(PAGE4) in squeezed(text)
    several = await read_all(mcp, url, pages="2,4-5", max_tokens=150)
    assert {p for w in several for p in w["pages"]} == {2, 4, 5}
    assert [m for w in several for m in re.findall(r"--- Page (\d+) ---", w["text"])] == ["2", "4", "5"]


async def test_slides_and_sheets_are_pages_of_read_document(files: FileServer, mcp: ThreadedServer) -> None:
    failed, slide = await call(mcp, "read_document", document_url=files.url(PPTX), pages="2")
    assert not failed, slide
    assert slide["pages"] == [2] and slide["location"].get("slide") == 2
    failed, sheet = await call(mcp, "read_document", document_url=files.url(XLSX), pages="1", max_tokens=100)
    assert not failed, sheet
    assert sheet["pages"] == [1] and "sheet" in sheet["location"] and sheet["next_cursor"] is not None


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"cursor": "not-a-cursor"}, "argument 'cursor': not a cursor of read_document"),
        ({"cursor": ""}, "argument 'cursor' must not be empty"),
        ({"pages": "0"}, "argument 'pages'"),
        ({"pages": "40"}, "argument 'pages' selects nothing"),
        ({"max_tokens": 10}, "argument 'max_tokens' must be at least 50, not 10"),
    ],
)
async def test_bad_reads_are_validation_errors_naming_the_argument(
    files: FileServer, mcp: ThreadedServer, arguments: dict[str, Any], fragment: str,
) -> None:
    failed, body = await call(mcp, "read_document", document_url=files.url(PDF), **arguments)
    assert failed and body["code"] == "VALIDATION_ERROR" and fragment in body["error"], body


async def test_a_cursor_of_another_document_or_altered_is_a_validation_error(files: FileServer,
                                                                             mcp: ThreadedServer) -> None:
    _, first = await call(mcp, "read_document", document_url=files.url(PDF), max_tokens=100)
    cursor = first["next_cursor"]
    failed, foreign = await call(mcp, "read_document", document_url=files.url(TXT), cursor=cursor)
    assert failed and foreign["code"] == "VALIDATION_ERROR" and "stale cursor" in foreign["error"]
    assert foreign["argument"] == "cursor"
    altered = cursor[:-3] + ("AAA" if not cursor.endswith("AAA") else "BBB")
    failed, tampered = await call(mcp, "read_document", document_url=files.url(PDF), cursor=altered)
    assert failed and tampered["code"] == "VALIDATION_ERROR" and tampered["argument"] == "cursor"
    failed, other_pages = await call(mcp, "read_document", document_url=files.url(PDF), cursor=cursor, pages="3")
    assert failed and other_pages["argument"] == "pages"


async def test_a_cursor_from_one_server_reads_on_in_another(files: FileServer, mcp: ThreadedServer) -> None:
    """Stateless: a second server (another worker) continues a read the first one started."""
    _, first = await call(mcp, "read_document", document_url=files.url(PDF), max_tokens=100)
    with ThreadedServer(make_settings(load_models=True)) as other:
        failed, second = await call(other, "read_document", document_url=files.url(PDF), max_tokens=100,
                                    cursor=first["next_cursor"])
    assert not failed, second
    assert second["location"]["start_char"] >= first["location"]["end_char"]


async def test_a_document_without_pages_reads_whole_and_refuses_a_pages_filter(files: FileServer,
                                                                              mcp: ThreadedServer) -> None:
    windows = await read_all(mcp, files.url(DOCX), max_tokens=4000)
    assert squeezed("".join(w["text"] for w in windows)) == squeezed(await content_of(mcp, files.url(DOCX)))
    failed, body = await call(mcp, "read_document", document_url=files.url(DOCX), pages="1")
    assert failed and body["argument"] == "pages" and "has no pages" in body["error"]


# --- get_page_image ----------------------------------------------------------------------------------
async def test_page_2_comes_back_as_a_png_image_block(files: FileServer, mcp: ThreadedServer) -> None:
    result = await call_raw(mcp, "get_page_image", document_url=files.url(PDF), page=2)
    assert not result.is_error, result.content
    images = [block for block in result.content if isinstance(block, ImageContent)]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    png = base64.b64decode(images[0].data)
    assert png.startswith(PNG_MAGIC)
    meta = payload(result)
    assert (meta["page"], meta["page_count"], meta["cropped"], meta["bytes"]) == (2, 5, False, len(png))
    assert meta["width"] * meta["height"] <= PAGE_IMAGE_MAX_PIXELS and len(png) <= PAGE_IMAGE_MAX_BYTES


async def test_a_passage_id_crops_the_page_to_the_passage(files: FileServer, mcp: ThreadedServer) -> None:
    _, found = await call(mcp, "verify_quote", document_url=files.url(PDF), quote=PAGE4)
    whole = payload(await call_raw(mcp, "get_page_image", document_url=files.url(PDF), page=4))
    result = await call_raw(mcp, "get_page_image", document_url=files.url(PDF), page=4, passage_id=found["passage_id"])
    crop = payload(result)
    assert not result.is_error and crop["cropped"] and crop["passage_id"] == found["passage_id"]
    assert crop["height"] < whole["height"]
    failed, elsewhere = await call(mcp, "get_page_image", document_url=files.url(PDF), page=1,
                                   passage_id=found["passage_id"])
    assert failed and elsewhere["argument"] == "page" and "page 4" in elsewhere["error"]


async def test_an_image_document_is_its_own_single_page(files: FileServer, mcp: ThreadedServer) -> None:
    result = await call_raw(mcp, "get_page_image", document_url=files.url(JPG), page=1)
    assert not result.is_error, result.content
    image = next(block for block in result.content if isinstance(block, ImageContent))
    assert base64.b64decode(image.data).startswith(PNG_MAGIC) and payload(result)["document_type"] == "image"
    failed, body = await call(mcp, "get_page_image", document_url=files.url(JPG), page=2)
    assert failed and body["argument"] == "page"


async def test_a_huge_dpi_stays_within_the_caps(files: FileServer, mcp: ThreadedServer) -> None:
    meta = payload(await call_raw(mcp, "get_page_image", document_url=files.url(PDF), page=1, dpi=300))
    assert meta["width"] * meta["height"] <= PAGE_IMAGE_MAX_PIXELS and meta["dpi"] < 300


@pytest.mark.parametrize(
    ("name", "arguments", "argument", "fragment"),
    [
        (TXT, {"page": 1}, "document_url", "needs a document with pages"),
        (XLSX, {"page": 1}, "document_url", "has sheets, not pages"),
        (PDF, {"page": 9}, "page", "the document has pages 1-5"),
        (PDF, {"page": 1, "dpi": 5000}, "dpi", "argument 'dpi'"),
        (PDF, {"page": 1, "passage_id": "p1.nope"}, "passage_id", "is not a passage id"),
    ],
)
async def test_pages_that_cannot_be_rendered_are_clear_validation_errors(
    files: FileServer, mcp: ThreadedServer, name: str, arguments: dict[str, Any], argument: str, fragment: str,
) -> None:
    failed, body = await call(mcp, "get_page_image", document_url=files.url(name), **arguments)
    assert failed and body["code"] == "VALIDATION_ERROR" and body["argument"] == argument, body
    assert fragment in body["error"], body


async def test_the_new_caches_show_in_manage_cache_and_the_calls_in_metrics(files: FileServer,
                                                                            mcp: ThreadedServer) -> None:
    for _ in range(2):
        await call(mcp, "verify_quote", document_url=files.url(PDF), quote=PAGE4)
    await call(mcp, "read_document", document_url=files.url(PDF), max_tokens=100)
    await call(mcp, "get_page_image", document_url=files.url(PDF), page=3)
    await call(mcp, "get_page_image", document_url=files.url(PDF), page=3)
    _, stats = await call(mcp, "manage_cache", action="stats")
    assert stats["layers"]["quote_index"]["hits"] >= 1 and stats["layers"]["page_image"]["hits"] >= 1
    metrics = httpx.get(f"{mcp.base}/metrics").text
    for tool in ("read_document", "verify_quote", "get_page_image"):
        assert f'rag_tool_calls_total{{code="OK",tool="{tool}"}}' in metrics, tool
    assert 'rag_cache_lookups_total{backend="memory",layer="quote_index",result="hit"}' in metrics


def test_the_tool_descriptions_state_the_caps_they_enforce() -> None:
    from mcp_server.pipeline.reading import MAX_READ_TOKENS, MIN_READ_TOKENS
    from mcp_server.tools.reading import get_page_image, read_document

    assert f"{MIN_READ_TOKENS}..{MAX_READ_TOKENS}" in (read_document.__doc__ or "")
    doc = " ".join((get_page_image.__doc__ or "").split())
    assert f"{PAGE_IMAGE_MAX_PIXELS // 1_000_000} megapixels" in doc
    assert f"{PAGE_IMAGE_MAX_BYTES // 1_000_000} MB" in doc

