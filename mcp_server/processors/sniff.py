"""Which format a document is: its bytes first, then the Content-Type, then the file name.

Types: ``pdf docx pptx xlsx csv html txt image ole unknown``. Binary formats are recognised by
magic bytes alone (a PDF served as ``application/octet-stream`` at ``/download?id=7`` is a PDF);
the hints only choose among text formats, and among OOXML kinds when a zip is too broken to
list. Nothing is extracted or decompressed here.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from pathlib import PurePosixPath

__all__ = ["DOC_TYPES", "detect_type", "looks_like_text"]

DOC_TYPES = ("pdf", "docx", "pptx", "xlsx", "csv", "html", "txt", "image", "ole", "unknown")

_SAMPLE = 8192  # bytes inspected for text-vs-binary and HTML decisions
_CSV_SAMPLE = 65536  # CSV rows can be long (370 columns): a few whole records are needed

_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff", b"\xff\xfe", b"\xfe\xff")

# (magic prefix, offset, type). PDF may sit after a BOM or junk: handled separately.
_IMAGE_MAGIC: tuple[tuple[bytes, ...], ...] = (
    (b"\x89PNG\r\n\x1a\n",),
    (b"\xff\xd8\xff",),
    (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"),  # TIFF, BigTIFF
    (b"GIF87a", b"GIF89a"),
)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")

# OOXML part folders; checked on member names only (central directory or local headers).
_OOXML_PREFIXES = (("word/", "docx"), ("ppt/", "pptx"), ("xl/", "xlsx"))
_LOCAL_HEADER_NAME = re.compile(rb"PK\x03\x04.{22}(..)..", re.DOTALL)

_MIME_TYPES: dict[str, str] = {
    "application/pdf": "pdf",
    "application/x-pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/msword": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.ms-powerpoint": "pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.ms-excel": "xlsx",
    "text/csv": "csv",
    "application/csv": "csv",
    "text/tab-separated-values": "csv",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/plain": "txt",
    "text/markdown": "txt",
}
_EXTENSIONS: dict[str, str] = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".doc": "docx",
    ".pptx": "pptx",
    ".ppt": "pptx",
    ".xlsx": "xlsx",
    ".xls": "xlsx",
    ".xlsm": "xlsx",
    ".csv": "csv",
    ".tsv": "csv",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".txt": "txt",
    ".text": "txt",
    ".md": "txt",
    ".markdown": "txt",
    ".rst": "txt",
    ".log": "txt",
    ".png": "image",
    ".jpg": "image",
    ".jpeg": "image",
    ".tif": "image",
    ".tiff": "image",
    ".bmp": "image",
    ".gif": "image",
    ".webp": "image",
}
_TEXT_TYPES = frozenset({"csv", "html", "txt"})

# Documents that start like HTML (after whitespace/BOM/comments); case-insensitive.
_HTML_START = re.compile(
    rb"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)[\s>]",
    re.IGNORECASE | re.DOTALL,
)
# A fragment (``<h3 class=...>...</h3>``) is HTML when it opens with a common tag and closes one.
_TAGS = rb"(?:p|div|span|a|h[1-6]|table|tr|td|ul|ol|li|meta|title|script|style|section|article|form)"
_HTML_FRAGMENT = re.compile(rb"^\s*<" + _TAGS + rb"[\s/>]", re.IGNORECASE)
_HTML_CLOSE = re.compile(rb"</" + _TAGS + rb"\s*>", re.IGNORECASE)
_CSV_DELIMITERS = (",", ";", "\t", "|")


def detect_type(data: bytes, content_type: str = "", filename: str = "") -> str:
    """Sniff one of ``DOC_TYPES``. Never raises."""
    binary = _sniff_binary(data, content_type, filename)
    if binary is not None:
        return binary
    if not looks_like_text(data):
        return "unknown"
    return _sniff_text(data, _hint(content_type, filename))


def looks_like_text(data: bytes) -> bool:
    """True when the bytes read as text in some encoding (BOM, no NULs, few control bytes)."""
    sample = data[:_SAMPLE]
    if not sample:
        return True
    if sample.startswith(_BOMS):
        return True
    if b"\x00" in sample:
        return False
    controls = sum(1 for byte in sample if byte < 32 and byte not in b"\t\n\r\f\b\x1b")
    return controls <= len(sample) // 100


def _sniff_binary(data: bytes, content_type: str, filename: str) -> str | None:
    head = data[:16]
    if _is_pdf(data):
        return "pdf"
    if any(head.startswith(magics) for magics in _IMAGE_MAGIC):
        return "image"
    if head[:2] == b"BM" and len(data) > 26 and data[14] in (12, 40, 52, 56, 64, 108, 124):
        return "image"  # BMP: "BM" alone is too weak, so the DIB header size must be a known one
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image"
    if head.startswith(_OLE_MAGIC):
        return "ole"
    if head.startswith(_ZIP_MAGIC):
        return _ooxml_kind(data) or _ooxml_hint(content_type, filename) or "unknown"
    return None


def _is_pdf(data: bytes) -> bool:
    head = data[:1024]
    if head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"%PDF-"):
        return True
    # Readers also accept "%PDF-" after other junk in the first KiB; a text that merely
    # mentions it lacks the end-of-file marker.
    return b"%PDF-" in head and b"%%EOF" in data[-2048:]


def _ooxml_kind(data: bytes) -> str | None:
    """docx/pptx/xlsx from member names: the central directory, else the local headers."""
    names: list[str]
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        names = _local_header_names(data)
    for prefix, kind in _OOXML_PREFIXES:
        if any(name.startswith(prefix) for name in names):
            return kind
    return None


def _local_header_names(data: bytes) -> list[str]:
    # A truncated zip has no central directory; the local headers still name their members.
    names = []
    for match in _LOCAL_HEADER_NAME.finditer(data[: 4 * 1024 * 1024]):
        length = int.from_bytes(match.group(1), "little")
        start = match.end()
        names.append(data[start : start + length].decode("cp437", "replace"))
    return names


def _ooxml_hint(content_type: str, filename: str) -> str | None:
    hinted = _hint(content_type, filename)
    return hinted if hinted in ("docx", "pptx", "xlsx") else None


def _hint(content_type: str, filename: str) -> str | None:
    """The type the transport suggests: a specific Content-Type wins over the extension."""
    media = content_type.split(";", 1)[0].strip().lower()
    by_mime = _MIME_TYPES.get(media)
    suffix = PurePosixPath(filename.split("?", 1)[0].split("#", 1)[0]).suffix.lower()
    by_ext = _EXTENSIONS.get(suffix)
    if media.startswith("image/"):
        by_mime = "image"
    # text/plain is what raw-file hosts send for everything; a .csv/.html name is more specific.
    if by_mime == "txt" and by_ext in _TEXT_TYPES:
        return by_ext
    return by_mime or by_ext


def _sniff_text(data: bytes, hint: str | None) -> str:
    raw = _decode_sample(data[:_SAMPLE]).encode("utf-8", "replace")
    if _HTML_START.match(raw):
        return "html"
    if hint in _TEXT_TYPES:
        return hint
    if _HTML_FRAGMENT.match(raw) and _HTML_CLOSE.search(raw):
        return "html"
    if _looks_like_csv(_decode_sample(data[:_CSV_SAMPLE])):
        return "csv"
    return "txt"


def _decode_sample(sample: bytes) -> str:
    for bom, codec in (
        (b"\xef\xbb\xbf", "utf-8"),
        (b"\xff\xfe\x00\x00", "utf-32-le"),
        (b"\x00\x00\xfe\xff", "utf-32-be"),
        (b"\xff\xfe", "utf-16-le"),
        (b"\xfe\xff", "utf-16-be"),
    ):
        if sample.startswith(bom):
            return sample[len(bom) :].decode(codec, "replace")
    # Single-byte fallback is enough to look for tags and delimiters, which are ASCII.
    return sample.decode("latin-1")


def _looks_like_csv(text: str) -> bool:
    """At least 3 records that split into the same number (> 1) of fields on one delimiter."""
    lines = text.splitlines()
    if len(text) >= _CSV_SAMPLE // 2 and len(lines) > 1:
        lines = lines[:-1]  # the last sampled line may be cut
    lines = [line for line in lines[:50] if line.strip()]
    if len(lines) < 3:
        return False
    for delimiter in _CSV_DELIMITERS:
        # csv.reader, not str.count: quoted fields may hold the delimiter.
        widths = [len(row) for row in csv.reader(lines, delimiter=delimiter)]
        if widths and widths[0] > 1 and widths.count(widths[0]) >= 0.8 * len(widths):
            return True
    return False
