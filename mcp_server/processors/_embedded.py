"""Objects embedded in an Office document (``word/embeddings/``): the files inside, for ``read_member``.

Word keeps an embedded document either as the file itself (an embedded .xlsx or .docx package) or
as an OLE object (``oleObject1.bin``): a legacy Office file (read as it is), an Acrobat document
(the PDF in its ``CONTENTS`` stream), an OOXML package (its ``Package`` stream) or any file wrapped
by the Object Packager (``\\x01Ole10Native``: a small header naming the file, then its bytes). A
.doc, .rtf or .odt converted by LibreOffice keeps its objects the same way. Macros
(``vbaProject.bin``) are not under this folder and never read.

Hand-written: olefile reads the container; the Ole10Native header (MS-OLEDS 2.3.6) is four
length-prefixed or NUL-ended fields, which no maintained library parses on its own.
"""

from __future__ import annotations

import io
import posixpath
import struct
import zipfile

import olefile

from mcp_server.processors.ooxml import is_ole, ole_kind

__all__ = ["embedded_files"]

_READ_AS_IS = ("doc", "xls", "ppt", "msg")


def embedded_files(package: zipfile.ZipFile, folder: str) -> list[tuple[str, bytes]]:
    """``(file name, bytes)`` of every object under ``folder`` that holds a file (sizes are the
    package's, already within the zip limits); objects that hold none are left out."""
    files = []
    for info in package.infolist():
        if not info.filename.startswith(folder) or info.is_dir():
            continue
        data = package.read(info)
        name = posixpath.basename(info.filename)
        found = _unwrap(data, name) if is_ole(data) else (name, data)
        if found is not None and found[1]:
            files.append(found)
    return files


def _unwrap(data: bytes, name: str) -> tuple[str, bytes] | None:
    if ole_kind(data) in _READ_AS_IS:
        return name, data
    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            if ole.exists("\x01Ole10Native"):
                return _native(ole.openstream("\x01Ole10Native").read(), name)
            if ole.exists("CONTENTS"):  # Acrobat: the PDF itself
                return f"{name}.pdf", ole.openstream("CONTENTS").read()
            if ole.exists("Package"):  # an OOXML package, named by its own content
                return name, ole.openstream("Package").read()
    except Exception:  # noqa: BLE001 - olefile raises OSError and assorted errors on damaged objects
        return None
    return None


def _native(stream: bytes, name: str) -> tuple[str, bytes] | None:
    """The file an Object Packager object wraps: size (4), flags (2), label, path (NUL-ended),
    two reserved bytes and a flag (4), the temporary path (length-prefixed), then the file's size (4)
    and bytes."""
    try:
        at = 6
        label_end = stream.index(b"\0", at)
        label = stream[at:label_end].decode("latin-1")
        at = stream.index(b"\0", label_end + 1) + 1 + 4  # past the source path and the reserved word
        (temp_length,) = struct.unpack_from("<I", stream, at)
        at += 4 + temp_length
        (size,) = struct.unpack_from("<I", stream, at)
        at += 4
    except (ValueError, struct.error):
        return None
    payload = stream[at : at + size]
    if len(payload) != size:
        return None
    return (label or name), payload
