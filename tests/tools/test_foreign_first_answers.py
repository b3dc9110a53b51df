"""First answers to a question in another language than its document's, over a real MCP client.

A partial index picks its candidates by BM25, which shares no words with such a question: the
first call waits for the complete index when it should be built within MCP_PROGRESSIVE_FOREIGN_WAIT,
and past that a partial answer embeds units spread evenly over the whole document, and holds what
the build has embedded so far. A question in the document's own language answers at once from a
partial index, as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, call, make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FRENCH = "fr_olap.pdf"  # a French course on OLAP
ENGLISH_QUESTION = "What are the binary operators between two queries?"
FRENCH_QUESTION = "Quels sont les opérateurs binaires entre deux requêtes ?"
ANSWER = "Opérateurs binaires"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    with serve_copies(tmp_path_factory.mktemp("served"), f"pdf/{FRENCH}") as server:
        yield server


def first_call_settings(index_dir: Path, **overrides: Any) -> Any:
    """Every first call answers from a partial index of one candidate (the first chunk, as no
    word of an English question is the document's) while the complete one builds."""
    return make_settings(index_dir=index_dir, progressive_budget=0, progressive_candidates=1, **overrides)


async def ask_first(settings: Any, url: str, query: str) -> dict[str, Any]:
    with ThreadedServer(settings) as server:
        failed, body = await call(server, "retrieve_chunks", document_url=url, query=query, top_k=3)
    assert not failed, body
    return body


async def test_an_english_question_asked_first_on_a_french_document_is_answered_from_its_complete_index(
    files: FileServer, tmp_path: Path,
) -> None:
    body = await ask_first(first_call_settings(tmp_path), files.url(FRENCH), ENGLISH_QUESTION)
    assert body["index"]["status"] == "complete" and body["index"]["dense_coverage"] == 1.0
    assert body["cached"] is False  # built in this call, not found in memory or on disk
    assert any(ANSWER in r["text"] for r in body["results"])


async def test_a_french_question_asked_first_on_the_same_document_answers_at_once_from_a_partial_index(
    files: FileServer, tmp_path: Path,
) -> None:
    body = await ask_first(first_call_settings(tmp_path), files.url(FRENCH), FRENCH_QUESTION)
    assert body["index"]["status"] == "partial" and body["index"]["dense_coverage"] < 1.0
    assert any(ANSWER in r["text"] for r in body["results"])


async def test_with_the_wait_off_an_english_question_asked_first_answers_at_once_from_vectors_over_the_whole_document(
    files: FileServer, tmp_path: Path,
) -> None:
    body = await ask_first(first_call_settings(tmp_path, progressive_foreign_wait=0), files.url(FRENCH),
                           ENGLISH_QUESTION)
    # its one BM25 candidate cannot tell where the answer is: the units the first answer embeds
    # spread over every chunk of the document (some of each), not over the first chunks only
    assert body["index"]["status"] == "partial" and body["index"]["dense_coverage"] == 1.0
