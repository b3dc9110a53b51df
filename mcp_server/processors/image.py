"""Images (PNG, JPEG, TIFF, BMP, GIF, WebP): OCR text with per-word confidence.

Pillow opens only the listed formats, its decompression-bomb cap is set to the configured
pixel limit, and the pixel count is checked from the header before anything is decoded.
"""

from __future__ import annotations

import io
import warnings
from typing import ClassVar

from PIL import Image, ImageOps, UnidentifiedImageError

from mcp_server.core.errors import ProcessingError, UnsupportedFormatError
from mcp_server.core.models import ExtractedImage, ProcessedDocument
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.formats import Format, Magic
from mcp_server.processors.ocr import INSTALL_HINT, ocr_available, ocr_image

__all__ = ["ImageProcessor", "open_image"]

FORMATS = ("PNG", "JPEG", "TIFF", "BMP", "GIF", "WEBP")
_MAGIC = (
    *(Magic.prefix(head) for head in (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")),
    *(Magic.prefix(head) for head in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")),  # TIFF, BigTIFF
    Magic(parts=((0, b"RIFF"), (8, b"WEBP"))),
    # BMP: "BM" alone is too weak, so the DIB header size (a uint32 at 14) must be a known one.
    *(Magic(parts=((0, b"BM"), (14, size.to_bytes(4, "little")))) for size in (12, 40, 52, 56, 64, 108, 124)),
)


def open_image(data: bytes, max_pixels: int) -> tuple[Image.Image, str, int]:
    """``(image, format, frame count)``: the first frame within the pixel cap, EXIF-rotated."""
    Image.MAX_IMAGE_PIXELS = max_pixels  # per-process: parser workers only
    try:
        with warnings.catch_warnings():
            # Pillow warns about the damage it reads past (skipped TIFF/EXIF tags): the image is
            # still read; only the decompression-bomb warning is an error.
            warnings.simplefilter("ignore")
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=list(FORMATS))
            width, height = image.size
            if width * height > max_pixels:
                raise ProcessingError(
                    f"image too large: {width}x{height} pixels exceeds the limit of {max_pixels}",
                    limit=max_pixels,
                )
            image.load()
            source_format, frames = str(image.format), int(getattr(image, "n_frames", 1))
            return _upright(image), source_format, frames
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ProcessingError(f"image too large: over {max_pixels} pixels", limit=max_pixels) from exc
    except UnidentifiedImageError as exc:
        raise UnsupportedFormatError(
            "unsupported format: not a PNG, JPEG, TIFF, BMP, GIF or WebP image"
        ) from exc
    except (OSError, ValueError, SyntaxError, EOFError) as exc:  # truncated or corrupt data
        raise ProcessingError(f"the image is damaged ({type(exc).__name__})") from exc


def _upright(image: Image.Image) -> Image.Image:
    """The image turned as its EXIF orientation says; a damaged EXIF block that Pillow cannot
    read leaves the pixels as stored: the text is still there to read."""
    try:
        return ImageOps.exif_transpose(image) or image
    except (OSError, ValueError, SyntaxError, EOFError):
        return image


class ImageProcessor:
    format: ClassVar[Format] = Format(
        doc_type="image",
        description="Images: text by Tesseract OCR with per-word confidence",
        extensions=(".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".webp"),
        mime_types=("image/png", "image/jpeg", "image/tiff", "image/bmp", "image/gif", "image/webp"),
        magic=_MAGIC,
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        image, source_format, frames = open_image(doc.data, options.max_image_pixels)
        if not ocr_available():
            raise ProcessingError(INSTALL_HINT, reason="ocr_missing")
        result = ocr_image(image, languages=options.ocr_languages, timeout=options.ocr_timeout)
        metadata = {
            "width": image.width,
            "height": image.height,
            "format": source_format,
            "word_count": result.word_count,
        }
        if frames > 1:
            metadata["frames"] = frames  # only the first frame is read
        extracted = ExtractedImage(
            ocr_text=result.text, confidence=result.confidence, source=doc.filename, metadata=metadata
        )
        return ProcessedDocument(
            content=result.text,
            doc_type="image",
            metadata={**metadata, "ocr_confidence": result.confidence},
            images=(extracted,),
        )

