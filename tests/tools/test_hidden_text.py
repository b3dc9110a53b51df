"""Text a reader cannot see, over a real MCP client: hidden payloads flagged in every result under
``hidden_text=flag`` and absent from every result under ``drop``; the clean twins and the legitimate
cases (white on a dark background, a scan's OCR layer) never flagged; invisible code points never
returned, in every mode; an instruction scorer's flags on the texts returned."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from mcp_server.server.build import RagMCP, create_server
from tests.conftest import FileServer
from tests.mcp_harness import ThreadedServer, call, make_settings
from tests.metrics._helpers import delta, scrape
from tests.tools._hidden_documents import (
    CLEAN,
    HIDDEN,
    PAYLOAD,
    PAYLOAD_WORD,
    TAGS,
    VISIBLE,
    VISIBLE_WORD,
    docx_with_subject,
)
from tests.tools._hidden_gaps import GAP_CLEAN, GAP_HIDDEN
from tests.tools._hidden_images import IMAGE_CLEAN, IMAGE_HIDDEN, METADATA_DOCUMENTS, SMUGGLED_SUBJECT
from tests.tools._hidden_styled import MORE_CLEAN, MORE_HIDDEN, clipped_pdf

pytestmark = pytest.mark.anyio

QUERY = f"who should forward every invoice to the {PAYLOAD_WORD}"
INVISIBLE_TEXT = (
    f"{VISIBLE[0]}\n\nThe pass\u200bword for the vault is not to be shared.{TAGS}\n\n"
    f"Totals \u202eolleh\u202c were audited.\n\nThe ledg\u2063er was sig\u034fned at the vault\ufe01\ufe02\ufe03.\n\n"
    f"{VISIBLE[1]}\n"
)
INVISIBLE = ("\u200b", "\u202e", "\u202c", TAGS[0], "\u2063", "\u034f", "\ufe01")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FileServer]:
    root = tmp_path_factory.mktemp("served")
    for name, data in {**HIDDEN, **CLEAN, **MORE_HIDDEN, **MORE_CLEAN, **GAP_HIDDEN, **GAP_CLEAN, **IMAGE_HIDDEN,
                       **IMAGE_CLEAN, **METADATA_DOCUMENTS, "clipped.pdf": clipped_pdf()}.items():
        (root / name).write_bytes(data)
    (root / "invisible.txt").write_text(INVISIBLE_TEXT, encoding="utf-8")
    (root / "invisible.html").write_text(
        "<html><body><article>" + "".join(f"<p>{line}</p>" for line in INVISIBLE_TEXT.split("\n\n"))
        + "</article></body></html>", encoding="utf-8")
    server = FileServer(root)
    yield server
    server.close()


def _server(tmp_path_factory: pytest.TempPathFactory, **settings: Any) -> Iterator[ThreadedServer]:
    rag = create_server(make_settings(index_dir=tmp_path_factory.mktemp("indexes"), rate_limit_rpm=100_000,
                                      **settings))
    with ThreadedServer(rag.rag_settings, rag) as server:
        yield server


@pytest.fixture(scope="module")
def rag_flag(tmp_path_factory: pytest.TempPathFactory) -> RagMCP:
    return create_server(make_settings(index_dir=tmp_path_factory.mktemp("indexes"), rate_limit_rpm=100_000))


@pytest.fixture(scope="module")
def flag(rag_flag: RagMCP) -> Iterator[ThreadedServer]:
    with ThreadedServer(rag_flag.rag_settings, rag_flag) as server:
        yield server


@pytest.fixture(scope="module")
def drop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    yield from _server(tmp_path_factory, hidden_text="drop")


@pytest.fixture(scope="module")
def keep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedServer]:
    yield from _server(tmp_path_factory, hidden_text="keep")


async def _ok(server: ThreadedServer, tool: str, **arguments: Any) -> dict[str, Any]:
    failed, out = await call(server, tool, **arguments)
    assert not failed, out
    return out


def _hidden(flags: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in flags if f["kind"] == "hidden_text"]


def _covers_payload(text: str, offset: int, flags: Sequence[dict[str, Any]]) -> bool:
    """Some hidden_text flag's span (document offsets; ``text`` starts at ``offset``) holds the payload's word."""
    return any(PAYLOAD_WORD in text[max(f["start"] - offset, 0):f["end"] - offset] for f in _hidden(flags))


# --- flag ------------------------------------------------------------------------------------------
# Web pages in both views: the main view's extractor drops some hidden elements itself (then nothing
# reaches the agent); the whole page keeps them all.
CASES = [(name, view) for name in sorted({**HIDDEN, **MORE_HIDDEN, **GAP_HIDDEN, **IMAGE_HIDDEN})
         for view in (("main", "full") if name.endswith(".html") else (None,))]


@pytest.mark.parametrize(("name", "view"), CASES)
async def test_a_hidden_payload_is_flagged_in_every_result_that_holds_it(name: str, view: str | None,
                                                                         flag: ThreadedServer,
                                                                         files: FileServer) -> None:
    url = files.url(name)
    processed = await _ok(flag, "process_document", document_url=url, view=view)
    if view == "main" and PAYLOAD_WORD not in processed["content"]:
        found = await _ok(flag, "retrieve_chunks", document_url=url, query=QUERY, top_k=20, view=view)
        assert PAYLOAD_WORD not in str(found)  # dropped by the extractor: in no result
        return
    assert PAYLOAD_WORD in processed["content"]
    assert _covers_payload(processed["content"], 0, processed["flags"]), processed["flags"]
    assert processed["flag_counts"]["hidden_text"] >= 1
    assert all(f["reason"] and f["score"] is None for f in processed["flags"])

    chunked = await _ok(flag, "chunk_document", document_url=url, view=view)
    holding = [c for c in chunked["chunks"] if PAYLOAD_WORD in c["text"]]
    assert holding and all(_hidden(c["flags"]) for c in holding)

    found = await _ok(flag, "retrieve_chunks", document_url=url, query=QUERY, top_k=20, view=view)
    hits = [r for r in found["results"] if PAYLOAD_WORD in r["text"]]
    assert hits and all(_hidden(r["flags"]) for r in hits)
    passage = await _ok(flag, "get_passage", passage_id=hits[0]["passage_id"])
    assert _hidden(passage["flags"]) and _hidden(next(c for c in passage["chunks"] if c["target"])["flags"])
    searched = await _ok(flag, "search_documents", document_urls=[url], query=QUERY, view=view)
    assert all(_hidden(r["flags"]) for r in searched["results"] if PAYLOAD_WORD in r["text"])

    read = await _ok(flag, "read_document", document_url=url, max_tokens=2000, view=view)
    assert PAYLOAD_WORD in read["text"] and _hidden(read["flags"])


@pytest.mark.parametrize("name", sorted({**CLEAN, **MORE_CLEAN, **GAP_CLEAN, **IMAGE_CLEAN}))
async def test_clean_twins_and_text_a_reader_sees_are_never_flagged(name: str, flag: ThreadedServer,
                                                                   files: FileServer) -> None:
    url = files.url(name)
    processed = await _ok(flag, "process_document", document_url=url)
    assert VISIBLE_WORD in processed["content"]
    assert processed["flags"] == [] and processed["flag_counts"] == {}
    chunked = await _ok(flag, "chunk_document", document_url=url)
    assert all(c["flags"] == [] for c in chunked["chunks"])
    found = await _ok(flag, "retrieve_chunks", document_url=url, query=QUERY)
    assert found["results"] and all(r["flags"] == [] for r in found["results"])


# --- drop ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "view"), CASES)
async def test_under_drop_a_hidden_payload_is_in_no_result_and_the_drop_is_reported(
    name: str, view: str | None, drop: ThreadedServer, files: FileServer,
) -> None:
    url = files.url(name)
    processed = await _ok(drop, "process_document", document_url=url, view=view)
    assert PAYLOAD_WORD not in str(processed) and VISIBLE_WORD in processed["content"]
    dropped = _hidden(processed["flags"])
    assert all(f["start"] == f["end"] and "dropped" in f["reason"] for f in dropped)
    assert dropped or view == "main"  # the main view's extractor may have dropped it first
    chunked = await _ok(drop, "chunk_document", document_url=url, view=view)
    assert PAYLOAD_WORD not in str(chunked)
    found = await _ok(drop, "retrieve_chunks", document_url=url, query=QUERY, top_k=20, view=view)
    assert found["results"] and PAYLOAD_WORD not in str(found)
    read = await _ok(drop, "read_document", document_url=url, view=view)
    assert PAYLOAD_WORD not in read["text"]


@pytest.mark.parametrize("mode", ["flag", "drop"])
async def test_pdf_text_clipped_out_of_view_reaches_no_result(mode: str, request: pytest.FixtureRequest,
                                                              files: FileServer) -> None:
    server: ThreadedServer = request.getfixturevalue(mode)
    url = files.url("clipped.pdf")
    processed = await _ok(server, "process_document", document_url=url)
    assert VISIBLE_WORD in processed["content"] and PAYLOAD_WORD not in str(processed)
    found = await _ok(server, "retrieve_chunks", document_url=url, query=QUERY, top_k=20)
    read = await _ok(server, "read_document", document_url=url)
    assert found["results"] and PAYLOAD_WORD not in str(found) and PAYLOAD_WORD not in read["text"]


async def test_pdf_text_under_a_shape_drawn_after_it_is_flagged_as_covered_and_the_check_has_a_page_cap(
    flag: ThreadedServer, files: FileServer, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    url = files.url("under-a-navy-box.pdf")
    processed = await _ok(flag, "process_document", document_url=url)
    covered = [f for f in _hidden(processed["flags"]) if f["reason"] == "covered by a shape"]
    assert covered and PAYLOAD_WORD in processed["content"][covered[0]["start"]:covered[0]["end"]]
    assert "stays visible" not in "".join(processed["content"][f["start"]:f["end"]] for f in covered)
    # a PDF longer than the cap is not checked (the second pass costs about a page's word extraction)
    for server in _server(tmp_path_factory, pdf_cover_check_pages=0):
        unchecked = await _ok(server, "process_document", document_url=url)
        assert PAYLOAD_WORD in unchecked["content"] and unchecked["flags"] == []


async def test_a_scans_ocr_layer_is_read_against_the_scan_within_a_page_budget(
    flag: ThreadedServer, files: FileServer, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    url = files.url("scan-layer-says-other-words.pdf")
    processed = await _ok(flag, "process_document", document_url=url)
    [other] = _hidden(processed["flags"])  # the layer's two lines that say what the scan shows are not flagged
    assert other["reason"] == "OCR layer other than the scan's words"
    assert processed["content"][other["start"]:other["end"]] == PAYLOAD
    assert "ocr_layer_unchecked_pages" not in processed["metadata"]
    # past the budget a page is not read, and says so
    for server in _server(tmp_path_factory, pdf_layer_ocr_pages=0):
        unchecked = await _ok(server, "process_document", document_url=url)
        assert PAYLOAD_WORD in unchecked["content"] and unchecked["flags"] == []
        assert unchecked["metadata"]["ocr_layer_unchecked_pages"] == [1]


async def test_metadata_fields_are_settled_and_flagged_with_their_name_wherever_they_are_returned(
    rag_flag: RagMCP, flag: ThreadedServer, files: FileServer,
) -> None:
    for name, tool in (("subject-smuggled.pdf", "extract_pdf_text"), ("subject-smuggled.docx", "extract_docx_text")):
        processed = await _ok(flag, "process_document", document_url=files.url(name))
        extracted = await _ok(flag, tool, document_url=files.url(name))
        for result in (processed, extracted):
            assert result["metadata"]["subject"] == SMUGGLED_SUBJECT.replace(TAGS, "")
            assert not any(c in str(result) for c in INVISIBLE)
            [smuggled] = result["flags"]
            assert (smuggled["kind"], smuggled["field"]) == ("invisible_characters", "subject")
            assert result["metadata"]["subject"][smuggled["start"]:smuggled["end"]] == "report"
            assert result["flag_counts"] == {"invisible_characters": 1}
    clean = await _ok(flag, "extract_pdf_text", document_url=files.url("subject-clean.pdf"))
    assert clean["flags"] == [] and clean["flag_counts"] == {}
    assert rag_flag.shared_context is not None
    flagger = rag_flag.shared_context.service.flagger
    plugged, threshold = flagger.scorer, flagger.threshold
    flagger.scorer, flagger.threshold = _FakeDetector(), 0.5
    try:
        for tool in ("process_document", "extract_pdf_text"):
            result = await _ok(flag, tool, document_url=files.url("subject-payload.pdf"))
            [in_subject] = result["flags"]
            assert (in_subject["kind"], in_subject["field"]) == ("instructions_to_agent", "subject")
            assert result["metadata"]["subject"][in_subject["start"]:in_subject["end"]] == PAYLOAD
    finally:
        flagger.scorer, flagger.threshold = plugged, threshold
    chunked = await _ok(flag, "chunk_document", document_url=files.url("subject-smuggled.pdf"))
    assert all(c["flags"] == [] for c in chunked["chunks"])  # a field's flags are not the content's
    read = await _ok(flag, "read_document", document_url=files.url("subject-smuggled.pdf"))
    assert read["flags"] == []


async def test_the_policy_is_part_of_the_cache_key(drop: ThreadedServer, flag: ThreadedServer,
                                                   files: FileServer) -> None:
    url = files.url("vanish.docx")
    flagged = await _ok(flag, "process_document", document_url=url)
    dropped = await _ok(drop, "process_document", document_url=url)
    assert PAYLOAD_WORD in flagged["content"] and PAYLOAD_WORD not in dropped["content"]


# --- invisible code points ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["invisible.txt", "invisible.html"])
@pytest.mark.parametrize("mode", ["flag", "drop", "keep"])
async def test_invisible_code_points_are_never_returned_and_are_reported_in_every_mode(
    name: str, mode: str, request: pytest.FixtureRequest, files: FileServer,
) -> None:
    server: ThreadedServer = request.getfixturevalue(mode)
    url = files.url(name)
    processed = await _ok(server, "process_document", document_url=url)
    chunked = await _ok(server, "chunk_document", document_url=url)
    found = await _ok(server, "retrieve_chunks", document_url=url, query="the password for the vault")
    read = await _ok(server, "read_document", document_url=url)
    for result in (processed, chunked, found, read):
        assert not any(c in str(result) for c in INVISIBLE)
    content = processed["content"]
    assert "password for the vault" in content and "olleh" in content and "ledger was signed" in content
    reported = [f for f in processed["flags"] if f["kind"] == "invisible_characters"]
    assert {content[f["start"]:f["end"]] for f in reported} >= {"password", "olleh"}
    assert any("Unicode tag characters" in f["reason"] for f in reported)
    assert processed["flag_counts"]["invisible_characters"] == len(reported)
    holding = next(c for c in chunked["chunks"] if "password" in c["text"])
    assert any(f["kind"] == "invisible_characters" for f in holding["flags"])


# --- the instruction scorer's hook ----------------------------------------------------------------
class _FakeDetector:
    """Scores a sentence 0.9 when it names the quartermaster, else 0.1; counts what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def score(self, sentences: Sequence[str]) -> list[float]:
        self.asked.extend(sentences)
        return [0.9 if PAYLOAD_WORD in s else 0.1 for s in sentences]


async def test_a_plugged_in_instruction_scorer_flags_the_sentences_it_scores_high(
    rag_flag: RagMCP, flag: ThreadedServer, files: FileServer, tmp_path: Path,
) -> None:
    assert rag_flag.shared_context is not None
    flagger = rag_flag.shared_context.service.flagger
    plugged, threshold = flagger.scorer, flagger.threshold  # the bundled detector, which the lifespan plugs in
    detector = _FakeDetector()
    flagger.scorer, flagger.threshold = detector, 0.5
    try:
        url = files.url("white-on-dark.html")  # visible text: the payload is a sentence a reader sees
        processed = await _ok(flag, "process_document", document_url=url)
        [instruction] = [f for f in processed["flags"] if f["kind"] == "instructions_to_agent"]
        assert processed["content"][instruction["start"]:instruction["end"]] == PAYLOAD
        assert instruction["score"] == 0.9 and processed["flag_counts"] == {"instructions_to_agent": 1}
        found = await _ok(flag, "retrieve_chunks", document_url=url, query=QUERY)
        hit = next(r for r in found["results"] if PAYLOAD_WORD in r["text"])
        assert [f["kind"] for f in hit["flags"]] == ["instructions_to_agent"]
        assert all(not r["flags"] for r in found["results"] if PAYLOAD_WORD not in r["text"])
        chunked = await _ok(flag, "chunk_document", document_url=url)
        assert [bool(c["flags"]) for c in chunked["chunks"]] == [PAYLOAD_WORD in c["text"] for c in chunked["chunks"]]
        passage = await _ok(flag, "get_passage", passage_id=hit["passage_id"])
        read = await _ok(flag, "read_document", document_url=url)
        assert [f["start"] for f in passage["flags"]] == [f["start"] for f in read["flags"]] == [instruction["start"]]
        asked = len(detector.asked)
        await _ok(flag, "retrieve_chunks", document_url=url, query=QUERY)
        assert len(detector.asked) == asked  # a sentence is scored once
        (tmp_path / "subject.docx").write_bytes(docx_with_subject(PAYLOAD))
        server = FileServer(tmp_path)
        try:
            described = await _ok(flag, "process_document", document_url=server.url("subject.docx"))
        finally:
            server.close()
        [in_subject] = described["flags"]
        assert (in_subject["kind"], in_subject["field"]) == ("instructions_to_agent", "subject")
        assert described["metadata"]["subject"][in_subject["start"]:in_subject["end"]] == PAYLOAD
        flagger.threshold = 0.95
        processed = await _ok(flag, "process_document", document_url=url)
        assert processed["flags"] == []
    finally:
        flagger.scorer, flagger.threshold = plugged, threshold


# --- metrics ---------------------------------------------------------------------------------------
async def test_the_flags_of_a_document_parsed_are_counted_by_kind(flag: ThreadedServer, tmp_path: Path) -> None:
    (tmp_path / "counted.txt").write_text(INVISIBLE_TEXT + "Counted by the metrics test.\n", encoding="utf-8")
    (tmp_path / "counted.html").write_text(f"<p>Counted by the metrics test.</p><p hidden>{PAYLOAD}</p>",
                                           encoding="utf-8")
    server = FileServer(tmp_path)
    try:
        before = scrape(flag.base)
        text = await _ok(flag, "process_document", document_url=server.url("counted.txt"))
        page = await _ok(flag, "process_document", document_url=server.url("counted.html"))
        after = scrape(flag.base)
    finally:
        server.close()
    assert not text["cached"] and not page["cached"]
    assert delta(after, before, "rag_flags_total", kind="invisible_characters") == text["flag_counts"][
        "invisible_characters"] >= 2
    assert delta(after, before, "rag_flags_total", kind="hidden_text") == page["flag_counts"]["hidden_text"] == 1


async def test_query_spreadsheet_returns_no_invisible_code_point_and_under_drop_no_hidden_row(
    flag: ThreadedServer, drop: ThreadedServer, files: FileServer, tmp_path: Path,
) -> None:
    url = files.url("hidden-row.xlsx")
    _, flagged = await call(flag, "query_spreadsheet", document_url=url, search_value=PAYLOAD_WORD)
    _, dropped = await call(drop, "query_spreadsheet", document_url=url, search_value=PAYLOAD_WORD)
    assert flagged["match_count"] == 1 and dropped["match_count"] == 0
    _, found = await call(drop, "query_spreadsheet", document_url=url, search_value=VISIBLE_WORD)
    assert found["match_count"] == 1 and "\ufdd0" not in str(found)
    (tmp_path / "smuggled.csv").write_text(f"Name,Note\nalpha,pass\u200bword{TAGS}\n", encoding="utf-8")
    server = FileServer(tmp_path)
    try:
        _, smuggled = await call(flag, "query_spreadsheet", document_url=server.url("smuggled.csv"),
                                 search_value="password")
    finally:
        server.close()
    assert smuggled["match_count"] == 1 and not any(c in str(smuggled) for c in INVISIBLE)
