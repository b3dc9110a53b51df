"""Plain text (and Markdown): decode with the right encoding, keep the text as it is.

Encoding order: a BOM (UTF-8/16/32), then strict UTF-8, then charset-normalizer among the
legacy code pages (cp1252, cp866, Shift_JIS, ...). Bytes no encoding explains are refused
rather than returned as mojibake.
"""

from __future__ import annotations

import codecs
from typing import ClassVar

from charset_normalizer import from_bytes

from mcp_server.core.errors import UnsupportedFormatError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._locations import heading_locations, markdown_headings
from mcp_server.processors.base import DocumentInput, ProcessOptions

__all__ = ["TextProcessor", "decode_bytes"]

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# When charset-normalizer finds several equally clean decodings, the common code page wins:
# cp1250 and cp1252 decode smart quotes identically, cp1125 and cp866 Cyrillic likewise.
_PREFERRED = ("cp1252", "cp1251", "cp866", "cp932", "shift_jis", "gb18030", "big5", "euc_kr")
_DETECT_BYTES = 256 * 1024  # detection reads a prefix; big files are decoded whole afterwards
_MAX_CONTROL_RATIO = 0.05  # more control characters than this is binary, not text


def decode_bytes(data: bytes, declared: str | None = None) -> tuple[str, str]:
    """``(text, encoding)``: a BOM, strict UTF-8, ``declared`` if it decodes strictly, detection.

    Valid UTF-8 outranks the declared charset: servers often declare ISO-8859-1 by default,
    and non-ASCII bytes that happen to form valid UTF-8 are almost never anything else.

    Raises ``UnsupportedFormatError`` when the bytes are not text in any encoding.
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return _checked(data[len(bom) :].decode(codec, "replace")), codec
    for candidate in ("utf-8", _normalise(declared)):
        if candidate is None:
            continue
        try:
            return _checked(data.decode(candidate)), candidate
        except (UnicodeDecodeError, LookupError):
            continue
    detected = detect_encoding(data)
    if detected is None:
        raise UnsupportedFormatError("unsupported format: binary data, not text in any known encoding")
    return _checked(data.decode(detected, "replace")), detected


def detect_encoding(data: bytes) -> str | None:
    """charset-normalizer's choice, biased to the common code page among equally clean ones."""
    results = from_bytes(data[:_DETECT_BYTES])
    best = results.best()
    if best is None:
        return None
    decoded = str(best)
    for codec in _PREFERRED:
        if any(match.encoding == codec and match.chaos <= best.chaos for match in results):
            return codec
        try:
            if data[:_DETECT_BYTES].decode(codec) == decoded:
                return codec
        except UnicodeDecodeError:
            continue
    return str(best.encoding)


def _normalise(codec: str | None) -> str | None:
    if not codec:
        return None
    try:
        return codecs.lookup(codec.strip().strip("\"'")).name
    except LookupError:
        return None


def _checked(text: str) -> str:
    """Refuse "text" that is mostly control characters (binary data that happened to decode)."""
    sample = text[:65536]
    if not sample:
        return text
    controls = sum(1 for char in sample if (char < " " and char not in "\t\n\r\f\b\x1b") or char == "\ufffd")
    if controls > _MAX_CONTROL_RATIO * len(sample):
        raise UnsupportedFormatError("unsupported format: binary data, not text")
    return text


class TextProcessor:
    doc_type: ClassVar[str] = "txt"
    extensions: ClassVar[tuple[str, ...]] = (".txt", ".text", ".md", ".markdown", ".rst", ".log")
    mime_types: ClassVar[tuple[str, ...]] = ("text/plain", "text/markdown")
    description: ClassVar[str] = "Plain text and Markdown; encoding detected (BOMs, UTF-8, legacy code pages)"

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        text, encoding = decode_bytes(doc.data, doc.charset)
        # One newline convention, so character offsets mean the same everywhere downstream.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        return ProcessedDocument(
            content=text,
            doc_type="txt",
            metadata={"encoding": encoding, "char_count": len(text), "line_count": len(text.splitlines())},
            locations=heading_locations(text, markdown_headings(text)),
        )
