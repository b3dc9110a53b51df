"""Images: OCR text and confidence, the pixel cap, formats from an explicit list."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from mcp_server.core.errors import ProcessingError, UnsupportedFormatError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors import DocumentInput, ProcessOptions, process_document
from mcp_server.processors.ocr import ocr_available
from tests.processors._corpus import process_file

pytestmark = pytest.mark.skipif(not ocr_available(), reason="tesseract is not installed")

# (file, must_include, must_not_include)
IMAGE_VECTORS = [
    ("png/testOCR.png", ["This file contains some words."], []),
    ("jpg/testOCR.jpg", ["OCR Testing"], []),  # 136x66: readable only after upscaling
    ("png/testOCR_spacing.png", ["The quick brown fox"], []),
    ("png/image_metadata.png", ["Sample Document", "Author: John Doe", "January 15, 2022"], []),
]


@pytest.fixture(scope="module")
def parsed(corpus_dir: Path) -> dict[str, ProcessedDocument]:
    return {relative: process_file(corpus_dir / "docs", relative) for relative, _, _ in IMAGE_VECTORS}


@pytest.mark.parametrize(("relative", "must_include", "must_not_include"), IMAGE_VECTORS)
def test_images_are_read_by_ocr(
    parsed: dict[str, ProcessedDocument], relative: str, must_include: list[str], must_not_include: list[str]
) -> None:
    doc = parsed[relative]
    assert doc.doc_type == "image"
    for text in must_include:
        assert text in doc.content
    for text in must_not_include:
        assert text not in doc.content


def test_one_extracted_image_carries_text_confidence_and_metadata(parsed: dict[str, ProcessedDocument]) -> None:
    doc = parsed["png/testOCR.png"]
    (image,) = doc.images
    assert image.ocr_text == doc.content
    assert 50 < image.confidence <= 100
    assert image.metadata == {"width": 982, "height": 622, "format": "PNG", "word_count": 5}


def _png(size: tuple[int, int], text: str = "") -> bytes:
    image = Image.new("RGB", size, "white")
    if text:
        ImageDraw.Draw(image).text((10, 10), text, fill="black")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_an_image_over_the_pixel_cap_is_refused_before_ocr() -> None:
    data = _png((200, 200))
    with pytest.raises(ProcessingError, match="image too large"):
        process_document(DocumentInput(data=data, doc_type="image"), ProcessOptions(max_image_pixels=10_000))


def test_a_decompression_bomb_far_over_the_cap_is_refused() -> None:
    data = _png((400, 400))
    with pytest.raises(ProcessingError, match="image too large"):
        process_document(DocumentInput(data=data, doc_type="image"), ProcessOptions(max_image_pixels=1_000))


def test_formats_outside_the_list_are_unsupported() -> None:
    icon = io.BytesIO()
    Image.new("RGB", (16, 16)).save(icon, format="ICO")
    with pytest.raises(UnsupportedFormatError, match="unsupported format"):
        process_document(DocumentInput(data=icon.getvalue(), doc_type="image"), ProcessOptions())


def test_a_truncated_image_is_a_processing_error(corpus_dir: Path) -> None:
    data = (corpus_dir / "docs" / "png" / "testOCR.png").read_bytes()[:2000]
    with pytest.raises(ProcessingError):
        process_document(DocumentInput(data=data, doc_type="image"), ProcessOptions())


def test_a_blank_image_gives_empty_text_not_an_error() -> None:
    doc = process_document(DocumentInput(data=_png((300, 300)), doc_type="image"), ProcessOptions())
    assert doc.content == ""
    assert doc.images[0].confidence == 0.0
