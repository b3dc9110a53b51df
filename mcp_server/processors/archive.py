"""ZIP archives: every member read by its own processor, located by its path in the archive.

Only the central directory is read before anything is inflated, and the archive is refused
(SECURITY P1, as for OOXML packages) when it declares more than ``zip_max_entries`` entries, a
member (or all of them) expanding more than ``zip_max_ratio`` times to more than
``zip_ratio_grace_bytes``, or more than ``zip_max_uncompressed_bytes`` in all; a zip bomb is
refused from its directory, in milliseconds, without inflating a byte (and ``zipfile`` never reads
past a member's declared size). More than ``archive_max_members`` files, or archives inside
archives (or messages) more than ``archive_max_depth`` deep, fail with a clear error too.
Encrypted members are named but not read; so are members that fail to parse, with the reason.
Recognised as a zip that is no OOXML, OpenDocument or EPUB package.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from typing import ClassVar

from mcp_server.core.errors import ProcessingError
from mcp_server.core.markup import HEADINGS
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._members import Parts, check_count, deeper, read_member
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.formats import Chunking, Format
from mcp_server.processors.ooxml import check_zip_limits

__all__ = ["ZipProcessor"]

_SKIPPED = ("__MACOSX/", ".DS_Store", "Thumbs.db")
_LISTED = 200  # member names written in the archive's first section


class ZipProcessor:
    format: ClassVar[Format] = Format(
        doc_type="zip",
        description="ZIP archives: each member read by its own processor, with zip-bomb and depth limits",
        extensions=(".zip",),
        mime_types=("application/zip", "application/x-zip-compressed"),
        zip_member="",  # any zip that no package format claims (they are registered first)
        chunking=Chunking(size=1500, overlap=300, breaks=HEADINGS),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        try:
            archive = zipfile.ZipFile(io.BytesIO(doc.data))
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
            raise ProcessingError("the file is truncated or corrupt (not a valid zip)", reason="corrupt") from exc
        with archive:
            infos = archive.infolist()
            check_zip_limits(infos, options)
            files = [info for info in infos if not info.is_dir() and not info.filename.startswith(_SKIPPED)
                     and not info.filename.endswith(_SKIPPED)]
            check_count(len(files), options, "files in the archive")
            inner = deeper(options, "archives") if files else options
            parts = Parts()
            names = [info.filename for info in files]
            listing = "\n".join(f"- {name}" for name in names[:_LISTED])
            more = f"\n- ... and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
            parts.add(f"Archive of {len(names)} files:\n\n{listing}{more}", ())
            skipped: dict[str, str] = {}
            for info in files:
                result = _read(archive, info, inner)
                if isinstance(result, str):
                    skipped[info.filename] = result
                parts.add_member(info.filename, result, ())
        metadata = {"file_count": len(names), "files": names[:_LISTED], "not_read": skipped}
        return ProcessedDocument(content=parts.content, doc_type="zip", metadata=metadata,
                                 tables=tuple(parts.tables), locations=tuple(parts.locations))


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, options: ProcessOptions) -> ProcessedDocument | str:
    if info.flag_bits & 0x1:
        return "encrypted (password required)"
    try:
        data = archive.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:  # ValueError: bad offsets
        return f"corrupt member ({type(exc).__name__})"
    except NotImplementedError:
        return "compression method not supported"
    return read_member(data, info.filename, options)
