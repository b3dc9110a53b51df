"""Sniffing: content first, then Content-Type, then the file name; never raises."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_server.processors.sniff import detect_type, known_types
from tests.conftest import DOCS

_FOLDER_TYPES = {"jpg": "image", "png": "image"}
# Text formats recognised by their name or Content-Type only (much plain text is valid YAML, and a
# line of "=" under a title is not proof of reStructuredText): their bytes alone read as plain text.
_HINT_ONLY = {"yaml", "rst", "org"}


def _expected(path: Path) -> str:
    if "_protected_passtika" in path.name:
        return "ole"  # encrypted OOXML is an OLE/CFB container
    return _FOLDER_TYPES.get(path.parent.name, path.parent.name)


CORPUS_FILES = sorted(p for p in DOCS.glob("*/*") if p.is_file())


def test_the_corpus_is_all_there() -> None:
    # The README's per-format tables list 106 files.
    assert len(CORPUS_FILES) == 106


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_corpus_file_is_sniffed_as_its_format(path: Path) -> None:
    assert detect_type(path.read_bytes(), "", path.name) == _expected(path)


# Without any hint the bytes alone decide; only a zip too truncated to list needs its name.
@pytest.mark.parametrize(
    "path",
    [p for p in CORPUS_FILES if p.name != "testWORD_truncated.docx"],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_corpus_file_is_sniffed_from_its_bytes_alone(path: Path) -> None:
    expected = _expected(path)
    assert detect_type(path.read_bytes()) == ("txt" if expected in _HINT_ONLY else expected)


def test_a_pdf_served_as_octet_stream_at_a_query_url_is_a_pdf() -> None:
    data = (DOCS / "pdf" / "multi_page.pdf").read_bytes()
    assert detect_type(data, "application/octet-stream", "download?id=7") == "pdf"


def test_a_pdf_with_a_utf8_bom_before_the_header_is_a_pdf() -> None:
    assert detect_type((DOCS / "pdf" / "testPDF_bom.pdf").read_bytes()) == "pdf"


def test_a_text_that_mentions_the_pdf_header_is_not_a_pdf() -> None:
    assert detect_type(b"The magic is %PDF-1.7 at the start of the file.\n", "", "notes.txt") == "txt"


def test_a_truncated_docx_is_sniffed_from_its_name() -> None:
    data = (DOCS / "docx" / "testWORD_truncated.docx").read_bytes()
    assert detect_type(data, "", "testWORD_truncated.docx") == "docx"
    assert detect_type(data, "application/vnd.openxmlformats-officedocument.wordprocessingml.document") == "docx"


@pytest.mark.parametrize(
    ("data", "content_type", "filename", "expected"),
    [
        (b"a,b,c\n1,2,3\n4,5,6\n", "text/plain", "data.csv", "csv"),  # raw hosts say text/plain
        (b"a,b,c\n1,2,3\n4,5,6\n", "text/csv", "", "csv"),
        (b"just some words\nand more\n", "", "page.html", "html"),  # the hint picks among text types
        (b"<!DOCTYPE html><html><body><p>x</p></body></html>", "text/plain", "x.txt", "html"),
        (b"hello world", "application/pdf", "x.pdf", "txt"),  # content beats a lying hint
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 32, "text/html", "x.html", "image"),
        (b"GIF89a" + b"\x00" * 32, "", "", "image"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 32, "", "", "image"),
        (b"II*\x00" + b"\x00" * 32, "", "", "image"),
        (b"BM" + b"\x00" * 12 + b"\x28" + b"\x00" * 40, "", "", "image"),
        (b"\x00\x01\x02\x03\x04\x05" * 100, "", "", "unknown"),
        (b"", "", "", "txt"),
    ],
)
def test_hints_choose_only_among_what_the_bytes_allow(
    data: bytes, content_type: str, filename: str, expected: str
) -> None:
    assert detect_type(data, content_type, filename) == expected


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=4096), content_type=st.text(max_size=40), filename=st.text(max_size=40))
def test_detect_type_never_raises_on_random_bytes(data: bytes, content_type: str, filename: str) -> None:
    assert detect_type(data, content_type, filename) in known_types()


@settings(max_examples=100, deadline=None)
@given(tail=st.binary(max_size=2048))
def test_detect_type_never_raises_on_random_zip_and_ole_bodies(tail: bytes) -> None:
    assert detect_type(b"PK\x03\x04" + tail) in known_types()
    assert detect_type(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + tail) == "ole"
