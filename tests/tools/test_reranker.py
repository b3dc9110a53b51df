"""The bundled cross-encoder over a real MCP client: when its files are missing (they are not shipped:
docs/architecture.md "The cross-encoder") or unreadable, the server starts, reports why in health and
keeps today's ranking; the tools never fail. (tests/retrieval/test_rerank.py: where a reranker applies.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DOCS
from tests.mcp_harness import memory_client, payload

pytestmark = pytest.mark.anyio

DOCUMENT = DOCS / "pdf" / "redp5110_sampled.pdf"
QUERY = "Which authority is needed to define a row permission?"
COMPLETE = {"progressive_budget": 1e6, "document_roots": [str(DOCUMENT.parent)]}


async def results(reranker: str, top_k: int = 10) -> tuple[dict[str, Any], dict[str, Any]]:
    """(retrieve_chunks' payload, get_system_health's) on a fresh server with ``reranker``."""
    async with memory_client(reranker=reranker, **COMPLETE) as client:
        found = await client.call_tool("retrieve_chunks", {"document_url": DOCUMENT.as_uri(), "query": QUERY,
                                                           "top_k": top_k})
        health = await client.call_tool("get_system_health", {})
    assert not found.is_error, payload(found)
    return payload(found), payload(health)


def order(body: dict[str, Any]) -> list[int]:
    return [r["chunk_index"] for r in body["results"]]


@pytest.mark.parametrize("damage", ["missing", "unreadable"])
async def test_a_reranker_that_cannot_be_loaded_keeps_todays_ranking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str,
) -> None:
    from mcp_server.embedding import registry

    folder = tmp_path / "reranker"
    folder.mkdir()
    if damage == "unreadable":
        (folder / "model.onnx").write_bytes(b"not an ONNX graph")
        (folder / "tokenizer.json").write_text("{}")
    monkeypatch.setattr(registry, "MODEL_DIR", folder)  # the bundled files, gone or damaged
    plain, _ = await results("")
    fallback, health = await results("bundled")
    assert plain["results"]
    assert order(fallback) == order(plain)
    assert all(r["scores"]["rerank"] is None for r in fallback["results"])
    role = health["models"]["roles"]["reranker"]
    assert role["loaded"] is False and "bundled" in role["configured"] and role["fallback"]
    assert health["features"]["RERANK_AVAILABLE"] is False
