"""A table row retrieved over MCP comes with what it means: its table's title and column headers.

A row alone ("| SKU-1123 | Hardware | $55.00 | ...") says neither which table it belongs to nor
which column each value is in. The borderless-table invoice of the corpus has a table that does
not fit one chunk (the document is short, so its chunks are small): its continuation chunk must
repeat the title line and the header row above its rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, http_client, make_settings, payload

pytestmark = pytest.mark.anyio

PDF = "pdf/SPARSE-2024-INV-1234_borderless_table.pdf"
TITLE = "Extended Inventory Review:"
HEADER = "| Product Code | Category | Unit Cost | Total Value | Last Audit | Notes |"
ROW = "| SKU-1123 | Hardware | $55.00 | $27,500.00 | 2024-10-30 | Verified |"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    with serve_copies(tmp_path_factory.mktemp("served"), PDF) as server:
        yield server


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    settings = make_settings(index_dir=tmp_path_factory.mktemp("indexes"), progressive_budget=1e6)
    with ThreadedServer(settings) as server:
        yield server


async def test_the_chunk_holding_a_table_row_also_holds_the_tables_title_and_column_headers(
    mcp: ThreadedServer, files: FileServer
) -> None:
    async with http_client(mcp.mcp_url) as client:
        result = await client.call_tool("retrieve_chunks", {
            "document_url": files.url(Path(PDF).name), "query": "unit cost of SKU-1123 hardware", "top_k": 20,
        })
    body = payload(result)
    assert not result.is_error, body
    holding = [r for r in body["results"] if ROW in r["text"]]
    assert holding, [r["text"] for r in body["results"]]
    # the row's own table continues from an earlier chunk: at least one holder starts past the title
    assert any(r["location"]["start_char"] > 0 for r in holding)
    for r in holding:
        lines = r["text"].splitlines()
        assert TITLE in lines and HEADER in lines, r["text"]
        assert lines.index(TITLE) < lines.index(HEADER) < lines.index(ROW)
        assert r["location"]["pages"] == [2]
