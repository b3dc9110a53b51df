"""Plain text: the right encoding, never mojibake, headings as locations."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_server.core.errors import ProcessingError
from mcp_server.processors import DocumentInput, ProcessOptions, process_document
from mcp_server.processors.encoding import decode_bytes
from mcp_server.processors.text import TextProcessor
from tests.processors._corpus import process_file

# (file, must_include, must_not_include)
TEXT_VECTORS = [
    ("txt/fake-text.txt", ["This is a test document to use for unit tests.", "Doylestown, PA 18901"], []),
    ("txt/fake-text-utf-16.txt", ["This is a test document to use for unit tests."], ["\x00", "\ufeff"]),
    ("txt/fake-text-utf-32.txt", ["This is a test document to use for unit tests."], ["\x00", "\ufeff"]),
    ("txt/russian.cp866.txt", ["Однажды, в студеную зимнюю пору", "мороз"], ["\ufffd"]),
    ("txt/testTXT_win-1252.txt", ["“windows” encoding"], ["\ufffd", "â€"]),
    ("txt/eng_spa_mult.txt", ["All human beings are born free"], ["\ufffd"]),
    ("txt/UDHR_first_article_all.txt", ["Universal Declaration of Human Right"], ["\ufffd"]),
    ("txt/norwich-city.txt", ["Iwan Roberts"], []),
]


@pytest.mark.parametrize(("relative", "must_include", "must_not_include"), TEXT_VECTORS)
def test_text_files_decode_to_the_expected_text(
    corpus_dir: Path, relative: str, must_include: list[str], must_not_include: list[str]
) -> None:
    doc = process_file(corpus_dir / "docs", relative)
    assert doc.doc_type == "txt"
    for text in must_include:
        assert text in doc.content
    for text in must_not_include:
        assert text not in doc.content


def test_an_empty_file_gives_empty_content_not_an_error(corpus_dir: Path) -> None:
    doc = process_file(corpus_dir / "docs", "txt/empty.txt")
    assert doc.content == ""
    assert doc.locations == ()


def test_the_encoding_is_reported(corpus_dir: Path) -> None:
    doc = process_file(corpus_dir / "docs", "txt/russian.cp866.txt")
    assert doc.metadata["encoding"] == "cp866"


def test_a_large_text_is_read_whole(corpus_dir: Path) -> None:
    doc = process_file(corpus_dir / "docs", "txt/book-war-and-peace-1225p.txt", detect_language=False)
    assert doc.content.startswith("CHAPTER I")
    assert len(doc.content) > 3_000_000


def test_markdown_headings_give_heading_path_locations() -> None:
    text = "intro\n# Guide\nabout\n## Install\nsteps\n# Other\nend\n"
    doc = TextProcessor().process(DocumentInput(data=text.encode(), doc_type="txt"), ProcessOptions())
    paths = [(doc.content[loc.start : loc.end].split("\n")[0], loc.heading_path) for loc in doc.locations]
    assert paths == [
        ("intro", ()),
        ("# Guide", ("Guide",)),
        ("## Install", ("Guide", "Install")),
        ("# Other", ("Other",)),
    ]
    assert doc.locations[-1].end == len(doc.content)


def test_crlf_line_ends_become_newlines() -> None:
    doc = TextProcessor().process(DocumentInput(data=b"a\r\nb\rc", doc_type="txt"), ProcessOptions())
    assert doc.content == "a\nb\nc"


def test_valid_utf8_wins_over_a_wrong_declared_charset() -> None:
    assert decode_bytes("naïve café".encode(), "iso-8859-1") == ("naïve café", "utf-8")


def test_a_declared_charset_is_used_when_the_bytes_are_not_utf8() -> None:
    assert decode_bytes("Grüße".encode("cp1252"), "windows-1252")[0] == "Grüße"


def test_binary_garbage_is_refused_not_returned_as_mojibake() -> None:
    garbage = bytes(range(256)) * 40
    with pytest.raises(ProcessingError, match="unsupported format"):
        process_document(DocumentInput(data=garbage, doc_type="txt"), ProcessOptions())


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=2048))
def test_the_text_processor_raises_only_typed_errors_on_random_bytes(data: bytes) -> None:
    try:
        doc = TextProcessor().process(DocumentInput(data=data, doc_type="txt"), ProcessOptions())
    except ProcessingError:
        return
    assert isinstance(doc.content, str)
