"""Which format a document is: its bytes first, then the Content-Type, then the file name.

Every table here comes from the registered formats' declarations (``processors/formats.py``):
a type is one of ``known_types()``, or ``unknown``. Binary formats are recognised by their
declared magic bytes alone (a PDF served as ``application/octet-stream`` at ``/download?id=7``
is a PDF); the hints only choose among text formats, and among zip packages when a zip is too
broken to list. Nothing is extracted or decompressed here.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import PurePosixPath

from mcp_server.processors.base import registered
from mcp_server.processors.encoding import bom_codec
from mcp_server.processors.formats import Format, Likelihood

__all__ = ["TEXT_FALLBACK", "UNKNOWN", "detect_type", "known_types", "looks_like_text"]

UNKNOWN = "unknown"
TEXT_FALLBACK = "txt"  # text that no text format claims

_SAMPLE = 8192  # bytes inspected for the text-vs-binary decision
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # the container, not a format: members decide
_LOCAL_HEADER_NAME = re.compile(rb"PK\x03\x04.{22}(..)..", re.DOTALL)


def known_types() -> tuple[str, ...]:
    """Every type ``detect_type`` may answer."""
    return (*(p.format.doc_type for p in registered()), UNKNOWN)


def detect_type(data: bytes, content_type: str = "", filename: str = "") -> str:
    """Sniff one of ``known_types()``. Never raises."""
    formats = [p.format for p in registered()]
    binary = _sniff_binary(formats, data, content_type, filename)
    if binary is not None:
        return binary
    if not looks_like_text(data):
        return UNKNOWN
    return _sniff_text(formats, data, _hint(formats, content_type, filename))


def looks_like_text(data: bytes) -> bool:
    """True when the bytes read as text in some encoding (BOM, no NULs, few control bytes)."""
    sample = data[:_SAMPLE]
    if not sample or bom_codec(sample) is not None:
        return True
    if b"\x00" in sample:
        return False
    controls = sum(1 for byte in sample if byte < 32 and byte not in b"\t\n\r\f\b\x1b")
    return controls <= len(sample) // 100


def _sniff_binary(formats: list[Format], data: bytes, content_type: str, filename: str) -> str | None:
    for fmt in formats:
        if fmt.recognises(data):
            return fmt.doc_type
    if data.startswith(_ZIP_MAGIC):
        packages = [fmt for fmt in formats if fmt.zip_member]
        # An archive format (zip_member "") takes any zip that no package's member or hint claims.
        archive = next((fmt.doc_type for fmt in formats if fmt.zip_member == ""), UNKNOWN)
        return _zip_kind(packages, data) or _zip_hint(packages, content_type, filename) or archive
    return None


def _zip_kind(packages: list[Format], data: bytes) -> str | None:
    """The package whose member folder appears: the central directory, else the local headers."""
    names: list[str]
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        names = _local_header_names(data)
    for fmt in packages:
        if any(name.startswith(fmt.zip_member or "") for name in names):
            return fmt.doc_type
    return None


def _local_header_names(data: bytes) -> list[str]:
    # A truncated zip has no central directory; the local headers still name their members.
    names = []
    for match in _LOCAL_HEADER_NAME.finditer(data[: 4 * 1024 * 1024]):
        length = int.from_bytes(match.group(1), "little")
        start = match.end()
        names.append(data[start : start + length].decode("cp437", "replace"))
    return names


def _zip_hint(packages: list[Format], content_type: str, filename: str) -> str | None:
    hinted = _hint(packages, content_type, filename)
    return hinted if hinted in {fmt.doc_type for fmt in packages} else None


def _hint(formats: list[Format], content_type: str, filename: str) -> str | None:
    """The type the transport suggests: a specific Content-Type wins over the extension."""
    media = content_type.split(";", 1)[0].strip().lower()
    suffix = PurePosixPath(filename.split("?", 1)[0].split("#", 1)[0]).suffix.lower()
    by_mime = next((fmt for fmt in formats if media and media in fmt.mime_types), None)
    by_ext = next((fmt for fmt in formats if suffix and suffix in fmt.extensions), None)
    # text/plain is what raw-file hosts send for everything; a .csv/.html name is more specific.
    if by_mime is not None and by_mime.doc_type == TEXT_FALLBACK and by_ext is not None and by_ext.text:
        return by_ext.doc_type
    chosen = by_mime or by_ext
    return chosen.doc_type if chosen is not None else None


def _sniff_text(formats: list[Format], data: bytes, hint: str | None) -> str:
    """The surest text format; a hint naming a text format beats all but a certain one."""
    best: tuple[Likelihood, str] | None = None
    for fmt in formats:
        if fmt.text and fmt.looks_like is not None:
            likelihood = fmt.looks_like(data)
            if likelihood is not None and (best is None or likelihood > best[0]):
                best = (likelihood, fmt.doc_type)
    if best is not None and best[0] is Likelihood.CERTAIN:
        return best[1]
    if hint in {fmt.doc_type for fmt in formats if fmt.text}:
        return hint
    return best[1] if best is not None else TEXT_FALLBACK
