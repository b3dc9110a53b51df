"""Tesseract, shared by the image and PDF processors: words, confidence, typed errors."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from PIL import Image

from mcp_server.core.errors import ProcessingError

__all__ = ["INSTALL_HINT", "OcrResult", "OcrWord", "ocr_available", "ocr_image", "ocr_words", "prepare_for_ocr"]

_MIN_SIDE = 300  # tesseract misses glyphs under ~20 px high; small images are scaled up
_MAX_UPSCALE = 4.0
INSTALL_HINT = "OCR needs Tesseract: apt-get install tesseract-ocr (or brew install tesseract)"


@dataclass(frozen=True, kw_only=True, slots=True)
class OcrResult:
    text: str
    confidence: float  # mean confidence of the kept words, 0..100
    word_count: int


_TESSERACT = "tesseract"  # pytesseract's default command


def _pytesseract() -> Any:
    """pytesseract, imported where OCR runs: it imports pandas (~26 MB per process), which the
    server processes never need (the parser workers preload it: _worker_preload)."""
    import pytesseract

    return pytesseract


def ocr_available() -> bool:
    loaded = sys.modules.get("pytesseract")
    command = loaded.pytesseract.tesseract_cmd if loaded is not None else _TESSERACT
    return shutil.which(command) is not None


def prepare_for_ocr(image: Image.Image) -> Image.Image:
    """Greyscale on a white background, scaled up when small."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        # Transparent pixels would turn black and swallow black text.
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, rgba)
    image = image.convert("L")
    short = min(image.size)
    if 0 < short < _MIN_SIDE:
        factor = min(_MIN_SIDE / short, _MAX_UPSCALE)
        size = (round(image.width * factor), round(image.height * factor))
        image = image.resize(size, Image.Resampling.LANCZOS)
    return image


OcrWord = tuple[float, float, float, float, str, float]  # x0, y0, x1, y1 in the image's pixels, word, confidence


def ocr_image(image: Image.Image, *, languages: str, timeout: float) -> OcrResult:
    """Words with confidence > 0, laid out as lines and paragraphs."""
    return _assemble(_data(prepare_for_ocr(image), languages, timeout))


def ocr_words(image: Image.Image, *, languages: str, timeout: float) -> list[OcrWord]:
    """The words with confidence > 0, their boxes (in ``image``'s pixels) and confidence (0-100), in reading order."""
    prepared = prepare_for_ocr(image)
    scale = image.width / prepared.width if prepared.width else 1.0
    data = _data(prepared, languages, timeout)
    out = []
    for index, text, confidence in _confident(data):
        x, y = int(str(data["left"][index])) * scale, int(str(data["top"][index])) * scale
        out.append((x, y, x + int(str(data["width"][index])) * scale,
                    y + int(str(data["height"][index])) * scale, text, confidence))
    return out


def _data(prepared: Image.Image, languages: str, timeout: float) -> dict[str, list[object]]:
    if not ocr_available():
        raise ProcessingError(INSTALL_HINT, reason="ocr_missing")
    pytesseract = _pytesseract()
    try:
        data: dict[str, list[object]] = pytesseract.image_to_data(
            prepared, lang=languages, timeout=timeout, output_type=pytesseract.Output.DICT
        )
    except pytesseract.TesseractNotFoundError as exc:
        raise ProcessingError(INSTALL_HINT, reason="ocr_missing") from exc
    except pytesseract.TesseractError as exc:
        raise ProcessingError(f"OCR failed: {str(exc.message).strip()[:200]}") from exc
    except RuntimeError as exc:  # pytesseract reports its timeout as a bare RuntimeError
        raise ProcessingError(f"OCR took longer than {timeout:g} s", reason="timeout") from exc
    return data


def _confident(data: dict[str, list[object]]) -> Iterator[tuple[int, str, float]]:
    """Tesseract's words (their index in ``data``, text, confidence) with text and a confidence above 0."""
    for index, word in enumerate(data["text"]):
        text = str(word).strip()
        try:
            confidence = float(str(data["conf"][index]))
        except ValueError:
            continue
        if text and confidence > 0:
            yield index, text, confidence


def _assemble(data: dict[str, list[object]]) -> OcrResult:
    lines: dict[tuple[int, int, int], list[str]] = {}
    confidences: list[float] = []
    for index, text, confidence in _confident(data):
        key = (int(str(data["block_num"][index])), int(str(data["par_num"][index])),
               int(str(data["line_num"][index])))
        lines.setdefault(key, []).append(text)
        confidences.append(confidence)
    out: list[str] = []
    previous: tuple[int, int] | None = None
    for (block, paragraph, _), words in lines.items():
        if previous is not None and previous != (block, paragraph):
            out.append("")  # blank line between paragraphs
        out.append(" ".join(words))
        previous = (block, paragraph)
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return OcrResult(text="\n".join(out), confidence=round(mean, 2), word_count=len(confidences))
