"""The one text decoder: one BOM table and one charset policy for txt, csv, html and sniffing.

Order: a BOM (UTF-8/16/32), then strict UTF-8, then the declared charset if the bytes decode
strictly under it, then charset-normalizer among the legacy code pages (cp1252, cp866,
Shift_JIS, ...). Valid UTF-8 outranks the declared charset: servers often declare ISO-8859-1
by default, and non-ASCII bytes that happen to form valid UTF-8 are almost never anything
else. Bytes no encoding explains are refused rather than returned as mojibake.
"""

from __future__ import annotations

import codecs

from charset_normalizer import from_bytes

from mcp_server.core.errors import UnsupportedFormatError

__all__ = ["BOMS", "bom_codec", "decode_bytes", "decode_sample", "detect_encoding"]

BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# When charset-normalizer finds several nearly equally clean decodings (small samples score
# DOS/Mac and Baltic code pages as well as windows-125x), the common code page wins; so does
# one that decodes identically to its choice (cp866 for its cp1125, cp1252 for its cp1250).
_PREFERRED = (
    "cp1252", "cp1250", "cp1251", "cp866", "cp932", "shift_jis", "gb18030", "big5", "euc_kr", "latin_1",
    "iso8859_15",
)
_CHAOS_TIE = 0.05
_DETECT_BYTES = 256 * 1024  # detection reads a prefix; big files are decoded whole afterwards
_MAX_CONTROL_RATIO = 0.05  # more control characters than this is binary, not text


def bom_codec(data: bytes) -> tuple[bytes, str] | None:
    """``(bom, codec)`` when ``data`` starts with a byte-order mark."""
    return next(((bom, codec) for bom, codec in BOMS if data.startswith(bom)), None)


def decode_bytes(data: bytes, declared: str | None = None) -> tuple[str, str]:
    """``(text, encoding)``: a BOM, strict UTF-8, ``declared`` if it decodes strictly, detection.

    Raises ``UnsupportedFormatError`` when the bytes are not text in any encoding.
    """
    found = bom_codec(data)
    if found is not None:
        bom, codec = found
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


def decode_sample(sample: bytes) -> str:
    """A cheap, never-failing decoding for sniffing: the BOM's codec, else latin-1.

    Enough to look for tags and delimiters, which are ASCII in every encoding sniffed here.
    """
    found = bom_codec(sample)
    if found is not None:
        bom, codec = found
        return sample[len(bom) :].decode(codec, "replace")
    return sample.decode("latin-1")


def detect_encoding(data: bytes) -> str | None:
    """charset-normalizer's choice, biased to the common code page among nearly equally clean ones."""
    results = from_bytes(data[:_DETECT_BYTES])
    best = results.best()
    if best is None:
        return None
    decoded = str(best)
    near = {match.encoding for match in results if match.chaos <= best.chaos + _CHAOS_TIE}
    for codec in _PREFERRED:
        if codec in near:
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
