"""OOXML guard: what runs before python-docx, python-pptx or openpyxl see a single byte.

An OOXML file (docx/pptx/xlsx) is a zip of XML parts. Before any parser opens it we read only
the zip's central directory and refuse:

- more than ``zip_max_entries`` members, more than ``zip_max_uncompressed_bytes`` in total, or a
  member (or the archive in all) declaring more than ``zip_ratio_grace_bytes`` at more than
  ``zip_max_ratio`` times its compressed size (zip bombs: a 1 GB member of zeros is refused
  without inflating anything; reads later cannot exceed the declared sizes because ``zipfile``
  truncates at ``file_size`` and checks the CRC);
- any XML part whose DOCTYPE declares external or parameter entities (XXE), or internal entities
  that would expand past ``_doctype.MAX_EXPANSION`` (billion laughs); a DOCTYPE that only names
  its DTD (OpenOffice.org's macro parts) or declares a few small entities passes
  (``_doctype.check_doctype``). The parsers are safe on their own (python-docx and python-pptx
  parse with ``resolve_entities=False``, openpyxl uses defusedxml when it is installed); this check
  is a second fence that does not depend on library internals.

A file in an OLE/CFB container (magic ``D0 CF 11 E0``) is an encrypted OOXML package
(``EncryptionInfo`` + ``EncryptedPackage`` streams), a legacy binary .doc/.xls/.ppt, an Outlook
.msg, or something else. ``ole_kind`` tells them apart by their streams for the sniffer: legacy
Office and .msg have their own processors; ``OleProcessor`` refuses the rest clearly.
"""

from __future__ import annotations

import functools
import io
import re
import zipfile
from typing import ClassVar

import olefile

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._doctype import check_doctype, decode_xml_head, prolog_of
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.formats import Format, Magic

__all__ = [
    "OLE_MAGIC",
    "OleProcessor",
    "check_ole",
    "check_zip_limits",
    "guard_ooxml",
    "is_ole",
    "ole_kind",
]

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ENCRYPTED_MESSAGE = "password required: the document is encrypted"
LEGACY_MESSAGE = "an OLE compound file of no format this server reads (not Word, Excel, PowerPoint or Outlook)"

# How much of each XML part's start is inspected. A DOCTYPE may only appear in the prolog,
# before the root element; OOXML prologs are a one-line declaration.
_PROLOG_BYTES = 16 * 1024
_DECLARATION = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
# A part declaring entities is read whole to count its references; Office writes none.
_ENTITY_PART_BYTES = 32 * 1024 * 1024
_XML_SUFFIXES = (".xml", ".rels", ".vml")


def is_ole(data: bytes) -> bool:
    return data[:8] == OLE_MAGIC


# The stream that names what an OLE container holds; first match wins (an encrypted OOXML
# package holds none of the others).
_OLE_STREAMS = (
    ("encrypted", ("EncryptedPackage", "EncryptionInfo")),
    ("doc", ("WordDocument",)),
    ("xls", ("Workbook", "Book")),
    ("ppt", ("PowerPoint Document",)),
    ("msg", ("__properties_version1.0",)),
)


def ole_kind(data: bytes) -> str | None:
    """What an OLE/CFB container holds ("doc", "xls", "ppt", "msg", "encrypted"), None when it is
    not one or holds none of them. Never raises: the sniffer asks it."""
    return _ole_kind(data) if is_ole(data) else None


@functools.lru_cache(maxsize=4)  # each OLE format's sniffer asks about the same bytes
def _ole_kind(data: bytes) -> str | None:
    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            streams = {"/".join(entry) for entry in ole.listdir(streams=True, storages=False)}
    except Exception:  # olefile raises OSError and assorted parse errors on junk
        return None
    for kind, names in _OLE_STREAMS:
        if streams & set(names):
            return kind
    # A message written without its property stream still keeps its MAPI properties at the root.
    if any(name.startswith("__substg1.0_") for name in streams):
        return "msg"
    return None


def check_ole(data: bytes) -> None:
    """Raise the right ``ProcessingError`` for an OLE/CFB container; never returns for one."""
    if not is_ole(data):
        return
    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            encrypted = ole.exists("EncryptedPackage") or ole.exists("EncryptionInfo")
    except Exception as exc:  # olefile raises OSError and assorted parse errors on junk
        raise ProcessingError("the file is truncated or corrupt (not a valid OLE container)") from exc
    if encrypted:
        raise ProcessingError(ENCRYPTED_MESSAGE, reason="encrypted")
    raise ProcessingError(LEGACY_MESSAGE, reason="legacy_format")


def guard_ooxml(data: bytes, options: ProcessOptions, *, kind: str) -> None:
    """Check an OOXML package's zip before any parser opens it (``kind`` names it in errors).

    Raises ``ProcessingError`` for encrypted/legacy OLE files, a file that is not a zip, and
    any zip or XML limit crossed.
    """
    check_ole(data)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise ProcessingError(
            f"the file is truncated or corrupt (not a valid {kind} zip)", reason="corrupt"
        ) from exc
    with zf:
        infos = zf.infolist()
        check_zip_limits(infos, options)
        for info in infos:
            if info.filename.lower().endswith(_XML_SUFFIXES) and not info.is_dir():
                _check_prolog(zf, info, kind)


def check_zip_limits(infos: list[zipfile.ZipInfo], options: ProcessOptions) -> None:
    """Refuse a zip from its directory: too many entries, too many bytes in all, or expansion like a
    bomb's. A ratio counts only past ``zip_ratio_grace_bytes`` (a member's, or the whole archive's):
    a 1.4 MB picture of one colour in a Word file expands 269x and is no bomb, while a member, or
    many, expanding far past the grace at that ratio is."""
    if len(infos) > options.zip_max_entries:
        raise ProcessingError(
            f"zip has {len(infos)} entries, more than the limit zip_max_entries={options.zip_max_entries}",
            reason="too_large", limit="zip_max_entries",
        )
    total = packed = 0
    for info in infos:
        if info.file_size > options.zip_ratio_grace_bytes:
            # compress_size 0 with content is an infinite ratio, not a division error.
            ratio = info.file_size / info.compress_size if info.compress_size else float("inf")
            if ratio > options.zip_max_ratio:
                raise ProcessingError(
                    f"zip member {info.filename!r} expands {ratio:.0f}x to {info.file_size:,} bytes, more than "
                    f"the limit zip_max_ratio={options.zip_max_ratio:g} (a zip bomb)",
                    reason="bomb", limit="zip_max_ratio",
                )
        total += info.file_size
        packed += info.compress_size
        if total > options.zip_max_uncompressed_bytes:
            raise ProcessingError(
                "zip declares more uncompressed bytes than the limit "
                f"zip_max_uncompressed_bytes={options.zip_max_uncompressed_bytes}",
                reason="too_large", limit="zip_max_uncompressed_bytes",
            )
    if total > options.zip_ratio_grace_bytes and total > options.zip_max_ratio * max(packed, 1):
        raise ProcessingError(
            f"zip members expand {total / max(packed, 1):.0f}x in all to {total:,} bytes, more than the limit "
            f"zip_max_ratio={options.zip_max_ratio:g} (a zip bomb)",
            reason="bomb", limit="zip_max_ratio",
        )


def _check_prolog(zf: zipfile.ZipFile, info: zipfile.ZipInfo, kind: str) -> None:
    try:
        with zf.open(info) as member:
            head = member.read(_PROLOG_BYTES)
            text = decode_xml_head(head)
            prolog = prolog_of(text)
            if prolog is None and info.file_size > len(head):
                # A prolog longer than we read could hide declarations further on.
                raise ProcessingError(f"an XML part's prolog runs past {_PROLOG_BYTES // 1024} KiB",
                                      reason="unsafe_xml", part=info.filename)
            prolog = text if prolog is None else prolog
            if not _DECLARATION.search(prolog):
                return
            if "<!ENTITY" in prolog.upper():
                # Entities declared: every reference in the part counts towards the expansion bound.
                if info.file_size > _ENTITY_PART_BYTES:
                    raise ProcessingError(f"an XML part declaring entities is larger than {_ENTITY_PART_BYTES:,} "
                                          "bytes", reason="too_large", part=info.filename)
                text = decode_xml_head(head + member.read())
    except ProcessingError:
        raise
    except Exception as exc:  # BadZipFile, zlib.error, EOFError, NotImplementedError (method)
        raise ProcessingError(
            f"the file is truncated or corrupt (not a valid {kind} zip)", reason="corrupt"
        ) from exc
    try:
        check_doctype(text, prolog)
    except ProcessingError as exc:
        raise ProcessingError(exc.message, **exc.details, part=info.filename) from exc


class OleProcessor:
    """OLE/CFB containers no other format claims: encrypted OOXML, or unknown contents; refused
    with a clear message. (Legacy .doc/.xls/.ppt and Outlook .msg have their own processors.)"""

    format: ClassVar[Format] = Format(
        doc_type="ole",
        description="Encrypted Office files and other OLE containers: refused with a clear message",
        mime_types=("application/x-ole-storage", "application/x-cfb"),
        magic=(Magic.prefix(OLE_MAGIC),),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        check_ole(doc.data)
        raise ProcessingError(LEGACY_MESSAGE, reason="legacy_format")
