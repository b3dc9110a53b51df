"""PDFs read since the sixth processing version: text under a picture drawn after it, and a scan whose
invisible OCR layer says something else than the scan; with what a reader does see (a picture behind
the text, a translucent picture over it, a scan whose layer reads it with an OCR engine's slips).
And metadata fields that carry invisible code points. Built here, like ``_hidden_documents``.
"""

from __future__ import annotations

import docx
import pymupdf

from tests.tools._hidden_documents import PAYLOAD, TAGS, VISIBLE, picture_of_visible, saved, scan_with_layer

_LINE = pymupdf.Rect(40, 186, 560, 206)  # the payload's line (written at y 200)


def _picture(width: int, height: int, *, alpha: int | None = None, flat: bool = False) -> pymupdf.Pixmap:
    """A light picture: flat white, or a soft gradient with speckles (no flat tone anywhere)."""
    samples = bytearray()
    for y in range(height):
        for x in range(width):
            level = 255 if flat else 200 + (x * 40 // width) + ((x * 7 + y * 13) % 11)
            samples += bytes((level, level, min(level + 5, 255))) + (bytes((alpha,)) if alpha is not None else b"")
    return pymupdf.Pixmap(pymupdf.csRGB, width, height, bytes(samples), alpha is not None)


def _text_pdf(*, before: pymupdf.Pixmap | None = None, after: pymupdf.Pixmap | None = None) -> bytes:
    """The visible lines and the payload's line, with a picture drawn over the payload's line before
    (a background) or after it (a cover)."""
    pdf = pymupdf.open()
    page = pdf.new_page()
    for i, line in enumerate(VISIBLE):
        page.insert_text((50, 80 + 20 * i), line, fontsize=10)
    if before is not None:
        page.insert_image(_LINE, pixmap=before, keep_proportion=False)
    page.insert_text((50, 200), PAYLOAD, fontsize=10)
    if after is not None:
        page.insert_image(_LINE, pixmap=after, keep_proportion=False)
    return bytes(pdf.tobytes())


def scan_over_text(lines: list[str]) -> bytes:
    """``lines`` written in black, then a picture (150 dpi) of ``VISIBLE`` drawn over the whole page: the
    text is under the scan, as some OCR tools leave it."""
    picture = picture_of_visible(150)
    scan = pymupdf.open()
    scanned = scan.new_page()
    for i, line in enumerate(lines):
        scanned.insert_text((50, 80 + 20 * i), line, fontsize=10)
    scanned.insert_image(scanned.rect, stream=picture)
    return bytes(scan.tobytes())


def stamped(lines: list[str]) -> bytes:
    """``lines`` under a page-sized translucent picture (a watermark): seen through it, never a scan."""
    pdf = pymupdf.open()
    page = pdf.new_page()
    for i, line in enumerate(lines):
        page.insert_text((50, 80 + 20 * i), line, fontsize=10)
    stamp = pymupdf.Pixmap(pymupdf.csRGB, 60, 85, bytes((200, 40, 40, 60)) * (60 * 85), True)
    page.insert_image(page.rect, pixmap=stamp, keep_proportion=False)
    return bytes(pdf.tobytes())


def _slips(line: str) -> str:
    """An OCR engine's usual slips: rn for m, 0 for o in a word or two, a dropped letter."""
    return line.replace("cooperative", "c0operative").replace("northern", "nortbern").replace("storage", "st0rage")


def pdf_with_info(subject: str) -> bytes:
    pdf = pymupdf.open()
    pdf.new_page().insert_text((50, 80), VISIBLE[0], fontsize=10)
    pdf.set_metadata({"title": "Orchard report", "subject": subject})
    return bytes(pdf.tobytes())


def docx_with_subject_of(subject: str) -> bytes:
    document = docx.Document()
    document.add_paragraph(VISIBLE[0])
    document.core_properties.subject = subject
    return saved(document)


IMAGE_HIDDEN: dict[str, bytes] = {
    "under-a-white-picture.pdf": _text_pdf(after=_picture(64, 4, flat=True)),
    "under-a-textured-picture.pdf": _text_pdf(after=_picture(260, 10)),
    "scan-layer-says-other-words.pdf": scan_with_layer([VISIBLE[0], VISIBLE[1], PAYLOAD]),
    "under-a-scan-other-words.pdf": scan_over_text([VISIBLE[0], VISIBLE[1], PAYLOAD]),
}
IMAGE_CLEAN: dict[str, bytes] = {
    "text-over-a-picture.pdf": _text_pdf(before=_picture(260, 10)),
    "under-a-translucent-picture.pdf": _text_pdf(after=_picture(260, 10, alpha=70)),
    "scan-layer-with-ocr-slips.pdf": scan_with_layer([_slips(line) for line in VISIBLE]),
    "under-a-scan-its-words.pdf": scan_over_text(VISIBLE),
    "under-a-page-sized-watermark.pdf": stamped([*VISIBLE, PAYLOAD]),
}
SMUGGLED_SUBJECT = f"Orchard report{TAGS} for the growers"
METADATA_DOCUMENTS: dict[str, bytes] = {
    "subject-smuggled.pdf": pdf_with_info(SMUGGLED_SUBJECT),
    "subject-smuggled.docx": docx_with_subject_of(SMUGGLED_SUBJECT),
    "subject-clean.pdf": pdf_with_info("Orchard report for the growers"),
    "subject-payload.pdf": pdf_with_info(PAYLOAD),
}
