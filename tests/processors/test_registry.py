"""The registry: formats listed from the processors, dispatch, fallbacks, enrichment."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from mcp_server.core.errors import ProcessingError, UnsupportedFormatError
from mcp_server.core.models import FetchedDocument
from mcp_server.processors import (
    DocumentInput,
    ProcessOptions,
    document_input,
    get_processor,
    process_document,
    supported_formats,
)


def test_supported_formats_come_from_the_registered_processors() -> None:
    formats = supported_formats()
    types = [info.doc_type for info in formats]
    for doc_type in ("pdf", "image", "html", "txt"):
        assert doc_type in types
        processor = get_processor(doc_type)
        assert processor is not None
        assert processor.format is formats[types.index(doc_type)] and processor.format.description
    assert types[-2:] == ["html", "txt"]  # generic formats last
    assert formats[0].describe()["extensions"]


def test_unknown_text_is_read_as_txt() -> None:
    doc = process_document(DocumentInput(data=b"plain words", doc_type="unknown"), ProcessOptions())
    assert (doc.doc_type, doc.content) == ("txt", "plain words")


def test_unknown_binary_is_unsupported_not_mojibake() -> None:
    with pytest.raises(UnsupportedFormatError, match="unsupported format"):
        process_document(DocumentInput(data=bytes(range(256)) * 4, doc_type="unknown"), ProcessOptions())


def test_a_type_without_a_processor_is_unsupported() -> None:
    with pytest.raises(UnsupportedFormatError):
        process_document(DocumentInput(data=b"\x00\x01" * 100, doc_type="rar"), ProcessOptions())


def test_urls_and_language_are_filled_in_after_processing() -> None:
    text = "Ceci est un document français. Voir https://example.fr/api/v1/items pour les détails."
    doc = process_document(DocumentInput(data=text.encode(), doc_type="txt"), ProcessOptions())
    assert doc.detected_language == "fr"
    assert [(u.url, u.url_type) for u in doc.extracted_urls] == [("https://example.fr/api/v1/items", "api_endpoint")]


def test_language_detection_can_be_switched_off() -> None:
    text = "Ceci est un document français assez long pour la détection."
    doc = process_document(DocumentInput(data=text.encode(), doc_type="txt"), ProcessOptions(detect_language=False))
    assert doc.detected_language == "en"


def test_document_input_sniffs_a_download(corpus_dir: Path) -> None:
    data = (corpus_dir / "docs" / "pdf" / "testPDF_bom.pdf").read_bytes()
    fetched = FetchedDocument(
        data=data, url="http://h/download?id=7", final_url="http://h/download?id=7",
        content_type="application/octet-stream",
    )
    inp = document_input(fetched)
    assert inp.doc_type == "pdf"
    assert "Hello World" in process_document(inp, ProcessOptions()).content


def test_processed_documents_and_errors_pickle_for_the_worker_boundary() -> None:
    doc = process_document(DocumentInput(data=b"# Title\ntext", doc_type="txt"), ProcessOptions())
    assert pickle.loads(pickle.dumps(doc)) == doc
    error = pickle.loads(pickle.dumps(ProcessingError("password required", reason="encrypted", encrypted=True)))
    assert (type(error), error.message, error.details) == (ProcessingError, "password required",
                                                           {"reason": "encrypted", "encrypted": True})
