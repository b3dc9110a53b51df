"""A web page through the reading tools over a real MCP client: its main content by default, the whole
page with view="full" (or the html_view setting), the two cached, indexed and cited apart; the
fallbacks (not an article, a JavaScript shell) and images' alt text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcp_server.server.build import RagMCP, create_server
from tests.conftest import FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, call, make_settings

pytestmark = pytest.mark.anyio

BLOG = "test_blog.html"  # a real blog post: the article, and the site's navigation and tags around it
CHROME = "Skip to main content"  # only in the whole page
ARTICLE = "Just by tuning the inference parameters"


TABLE_PAGE = "table_06.html"  # a small test page: a table between two paragraphs, not an article
SHELL = ("<!doctype html><html><head><title>Dashboard</title><script src='/static/app.js'></script></head>"
         "<body><noscript>You need to enable JavaScript to run this app.</noscript><div id='root'></div></body></html>")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("served")
    (root / "shell.html").write_text(SHELL, encoding="utf-8")
    with serve_copies(root, f"html/{BLOG}", f"html/{TABLE_PAGE}", "pdf/multi_page.pdf") as server:
        yield server


def _server(tmp_path_factory: pytest.TempPathFactory, **settings: Any) -> RagMCP:
    return create_server(make_settings(index_dir=tmp_path_factory.mktemp("indexes"), rate_limit_rpm=100_000,
                                       **settings))


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    rag = _server(tmp_path_factory)
    with ThreadedServer(rag.rag_settings, rag) as server:
        yield server


async def test_process_document_reads_the_main_content_by_default_and_the_whole_page_on_request(
    mcp: ThreadedServer, files: FileServer,
) -> None:
    url = files.url(BLOG)
    failed, main = await call(mcp, "process_document", document_url=url)
    assert not failed, main
    assert main["metadata"]["extraction"] == "main" and ARTICLE in main["content"] and CHROME not in main["content"]
    assert main["metadata"]["date"] == "2023-04-21"
    failed, full = await call(mcp, "process_document", document_url=url, view="full")
    assert not failed, full
    assert full["metadata"]["extraction"] == "full" and CHROME in full["content"] and ARTICLE in full["content"]
    assert not full["cached"]  # another reading of the same bytes: cached apart
    _, again = await call(mcp, "process_document", document_url=url, view="main")
    assert again["cached"] and again["content"] == main["content"]
    links = {u["url"] for u in full["urls"] if u["source_location"] == "link"}
    assert links and links <= {u["url"] for u in main["urls"]}  # the page's links, whichever part is read


async def test_a_page_that_is_not_an_article_is_read_whole_and_says_why(mcp: ThreadedServer, files: FileServer) -> None:
    failed, main = await call(mcp, "process_document", document_url=files.url(TABLE_PAGE))
    assert not failed, main
    assert main["metadata"]["extraction"] == "full" and main["metadata"]["extraction_reason"], main["metadata"]
    _, full = await call(mcp, "process_document", document_url=files.url(TABLE_PAGE), view="full")
    assert main["content"] == full["content"] and "| A | B |" in main["content"]
    assert len(main["tables"]) == len(full["tables"]) == 1


async def test_a_javascript_shell_comes_back_with_a_hint_not_an_error(mcp: ThreadedServer, files: FileServer) -> None:
    for view in ("main", "full"):
        failed, body = await call(mcp, "process_document", document_url=files.url("shell.html"), view=view)
        assert not failed, body
        assert body["metadata"]["javascript_required"] is True and "JavaScript" in body["metadata"]["hint"]
        assert body["metadata"]["extraction"] == "full"


async def test_an_articles_images_are_read_as_their_alt_text(mcp: ThreadedServer, files: FileServer) -> None:
    _, main = await call(mcp, "process_document", document_url=files.url(BLOG))
    assert "[Image: level 3 algebra]" in main["content"] and "[Image: Chi Wang]" not in main["content"]
    _, full = await call(mcp, "process_document", document_url=files.url(BLOG), view="full")
    assert "[Image: Chi Wang]" in full["content"]  # the author's picture: in the page, not in the article


async def test_a_view_that_is_not_main_or_full_is_refused(mcp: ThreadedServer, files: FileServer) -> None:
    failed, body = await call(mcp, "process_document", document_url=files.url(BLOG), view="article")
    assert failed and body["code"] == "VALIDATION_ERROR", body


async def test_other_formats_read_the_same_in_either_view(mcp: ThreadedServer, files: FileServer) -> None:
    url = files.url("multi_page.pdf")
    _, default = await call(mcp, "process_document", document_url=url)
    _, full = await call(mcp, "process_document", document_url=url, view="full")
    assert full["content"] == default["content"] and full["cached"]  # one cache entry: the view is HTML's


async def test_chunks_passages_quotes_and_cursors_keep_the_views_apart(mcp: ThreadedServer, files: FileServer) -> None:
    url = files.url(BLOG)
    _, main_chunks = await call(mcp, "chunk_document", document_url=url)
    _, full_chunks = await call(mcp, "chunk_document", document_url=url, view="full")
    assert not any(CHROME in c["text"] for c in main_chunks["chunks"])
    assert any(CHROME in c["text"] for c in full_chunks["chunks"])

    _, main_hits = await call(mcp, "retrieve_chunks", document_url=url, query="inference parameters", top_k=3)
    _, full_hits = await call(mcp, "retrieve_chunks", document_url=url, query="inference parameters", top_k=3,
                              view="full")
    assert main_hits["total_chunks_indexed"] == main_chunks["chunk_count"]
    assert full_hits["total_chunks_indexed"] == full_chunks["chunk_count"]
    assert not {r["passage_id"] for r in main_hits["results"]} & {r["passage_id"] for r in full_hits["results"]}
    _, passage = await call(mcp, "get_passage", passage_id=full_hits["results"][0]["passage_id"])
    assert full_hits["results"][0]["text"] in passage["text"]

    _, searched = await call(mcp, "search_documents", document_urls=[url], query="navigation", view="full")
    assert searched["documents"][0]["chunks"] == full_chunks["chunk_count"]

    _, quote_main = await call(mcp, "verify_quote", document_url=url, quote=CHROME)
    _, quote_full = await call(mcp, "verify_quote", document_url=url, quote=CHROME, view="full")
    assert quote_main["match"] != "exact" and quote_full["match"] == "exact"

    _, read = await call(mcp, "read_document", document_url=url, max_tokens=200)
    assert read["next_cursor"] and CHROME not in read["text"]
    failed, stale = await call(mcp, "read_document", document_url=url, cursor=read["next_cursor"], view="full")
    assert failed and "stale cursor" in stale["error"], stale
    _, whole = await call(mcp, "read_document", document_url=url, max_tokens=200, view="full")
    assert whole["text"].startswith("# Does Model and Inference Parameter Matter")


async def test_the_html_view_setting_makes_the_whole_page_the_default(
    tmp_path_factory: pytest.TempPathFactory, files: FileServer,
) -> None:
    rag = _server(tmp_path_factory, html_view="full")
    with ThreadedServer(rag.rag_settings, rag) as server:
        _, full = await call(server, "process_document", document_url=files.url(BLOG))
        _, main = await call(server, "process_document", document_url=files.url(BLOG), view="main")
    assert full["metadata"]["extraction"] == "full" and CHROME in full["content"]
    assert main["metadata"]["extraction"] == "main" and CHROME not in main["content"]
