"""Formats are declared once, by their processor; the sniffer and every list follow the registry."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from mcp_server.chunking import chunk_params_for
from mcp_server.core.markup import PAGES
from mcp_server.core.models import FetchedDocument, ProcessedDocument
from mcp_server.processors import (
    DocumentInput,
    Format,
    ProcessOptions,
    document_input,
    get_processor,
    process_document,
    register,
    supported_formats,
    unregister,
)
from mcp_server.processors.csv import CsvProcessor
from mcp_server.processors.formats import Chunking, Magic
from mcp_server.processors.sniff import detect_type, known_types
from mcp_server.processors.text import TextProcessor
from mcp_server.server.resources import supported_formats as resource_formats
from tests.conftest import DOCS


class ToyProcessor:
    """A whole format in a few lines: what the "Adding a format" section of docs/formats.md shows."""

    format: ClassVar[Format] = Format(
        doc_type="toy",
        description="Toy files: a magic line, then text",
        extensions=(".toy",),
        mime_types=("application/x-toy",),
        magic=(Magic.prefix(b"TOY1\n"),),
        chunking=Chunking(size=900, overlap=90, breaks=PAGES),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        text = doc.data.removeprefix(b"TOY1\n").decode("utf-8")
        return ProcessedDocument(content=text, doc_type="toy")


@pytest.fixture
def toy() -> Iterator[ToyProcessor]:
    processor = ToyProcessor()
    register(processor)
    try:
        yield processor
    finally:
        unregister("toy")


def test_a_toy_format_registered_in_one_line_is_sniffed_processed_chunked_and_listed(toy: ToyProcessor) -> None:
    data = b"TOY1\nA toy document about ducks, see https://example.org/ducks for more.\n"
    fetched = FetchedDocument(data=data, url="http://h/get?id=3", final_url="http://h/get?id=3",
                              content_type="application/octet-stream")
    inp = document_input(fetched)
    assert inp.doc_type == "toy"
    doc = process_document(inp, ProcessOptions(detect_language=False))
    assert doc.content.startswith("A toy document about ducks")
    assert [u.url for u in doc.extracted_urls] == ["https://example.org/ducks"]  # enrichment applies too
    params = chunk_params_for("toy", 50_000, 4096)
    assert (params.chunk_size, params.chunk_overlap, params.separators[0]) == (900, 90, "\n--- Page")
    assert "toy" in known_types()
    assert [f.doc_type for f in supported_formats()][-3:] == ["toy", "html", "txt"]  # specific before generic
    assert {"doc_type": "toy", "extensions": [".toy"], "mime_types": ["application/x-toy"],
            "description": "Toy files: a magic line, then text"} in resource_formats()


def test_an_unregistered_format_is_gone_from_the_sniffer_and_the_lists() -> None:
    register(ToyProcessor())
    unregister("toy")
    assert detect_type(b"TOY1\nwords\n", "application/x-toy", "a.toy") == "txt"
    assert get_processor("toy") is None
    assert "toy" not in known_types()
    assert chunk_params_for("toy", 50_000, 4096).chunk_size == 1200  # the default for unknown types


def test_a_format_cannot_claim_an_extension_or_mime_type_another_format_declared() -> None:
    class Clash(ToyProcessor):
        format: ClassVar[Format] = Format(doc_type="clash", description="x", extensions=(".csv",))

    with pytest.raises(ValueError, match="'.csv'"):
        register(Clash())
    assert get_processor("clash") is None


# -- the reconciled tables: every declared extension and MIME type hints its own format --------

_TEXT = b"just some words\nand more words\n"  # text no text format claims by content
_UNLISTABLE_ZIP = b"PK\x03\x04" + b"\x00" * 64  # a zip whose members cannot be read


def _hints(kind: str) -> list[tuple[str, str, str]]:
    return [(f.doc_type, "", f"file{ext}") for f in supported_formats() if getattr(f, kind) for ext in f.extensions] + [
        (f.doc_type, mime, "") for f in supported_formats() if getattr(f, kind) for mime in f.mime_types
    ]


@pytest.mark.parametrize(("doc_type", "content_type", "filename"), _hints("text"))
def test_every_text_format_extension_and_mime_type_names_its_format(
    doc_type: str, content_type: str, filename: str
) -> None:
    assert detect_type(_TEXT, content_type, filename) == doc_type


@pytest.mark.parametrize(("doc_type", "content_type", "filename"), _hints("zip_member"))
def test_every_office_extension_and_mime_type_names_its_kind_when_the_zip_cannot_be_listed(
    doc_type: str, content_type: str, filename: str
) -> None:
    assert detect_type(_UNLISTABLE_ZIP, content_type, filename) == doc_type


@pytest.mark.parametrize(
    ("fmt", "magic"),
    [(f, m) for f in supported_formats() for m in f.magic],
    ids=lambda v: v.doc_type if isinstance(v, Format) else repr(v.parts)[:40],
)
def test_every_declared_magic_is_recognised_from_the_bytes_alone(fmt: Format, magic: Magic) -> None:
    data = bytearray(b"\x00" * 64)
    for offset, head in magic.parts:
        data[offset : offset + len(head)] = head
    assert detect_type(bytes(data), "text/plain", "misleading.txt") == fmt.doc_type


def test_legacy_office_names_belong_to_their_ole_formats_and_never_relabel_a_package() -> None:
    docx = (DOCS / "docx" / "testWORD.docx").read_bytes()
    assert detect_type(docx, "application/msword", "report.doc") == "docx"  # the members decide
    ole = (DOCS / "docx" / "testWORD_protected_passtika.docx").read_bytes()
    assert detect_type(ole, "application/vnd.openxmlformats-officedocument.wordprocessingml.document") == "ole"
    # A .doc name is the legacy Word format's, so it does not make an unreadable zip a docx: the
    # archive format takes it (and reports it corrupt).
    assert detect_type(_UNLISTABLE_ZIP, "application/msword", "report.doc") == "zip"


def test_text_plain_from_a_raw_file_host_yields_to_a_text_format_extension() -> None:
    for f in supported_formats():
        if f.text:
            for ext in f.extensions:
                assert detect_type(_TEXT, "text/plain; charset=utf-8", f"https://raw.example/x{ext}") == f.doc_type


# -- one decoder: the same bytes read the same as .txt and as .csv -----------------------------

_ENCODED = [
    DOCS / "csv" / "stanley-cups-utf-16.csv",
    DOCS / "csv" / "test_mskanji.csv",
    DOCS / "txt" / "russian.cp866.txt",
    DOCS / "txt" / "testTXT_win-1252.txt",
    DOCS / "txt" / "fake-text-utf-16.txt",
    DOCS / "txt" / "fake-text-utf-32.txt",
]


@pytest.mark.parametrize("path", _ENCODED, ids=lambda p: p.name)
def test_csv_and_text_decode_the_same_bytes_with_the_same_encoding(path: Path) -> None:
    data = path.read_bytes()
    as_text = TextProcessor().process(DocumentInput(data=data, doc_type="txt"), ProcessOptions())
    as_csv = CsvProcessor().process(DocumentInput(data=data, doc_type="csv", filename="x.csv"), ProcessOptions())
    assert as_csv.metadata["encoding"] == as_text.metadata["encoding"]


def test_a_short_windows_1252_sample_reads_the_same_as_text_and_as_csv() -> None:
    data = "Name;Price\nCafé crème;3,50 €\nBäckerei „Müller“;2,10 €\n".encode("cp1252")
    as_text = TextProcessor().process(DocumentInput(data=data, doc_type="txt"), ProcessOptions())
    as_csv = CsvProcessor().process(DocumentInput(data=data, doc_type="csv"), ProcessOptions())
    assert "Bäckerei „Müller“;2,10 €" in as_text.content
    assert "| Bäckerei „Müller“ | 2,10 € |" in as_csv.content
    assert as_text.metadata["encoding"] == as_csv.metadata["encoding"] == "cp1252"
