"""Builders of hostile OOXML files for the processors-B tests (zip bombs, billion laughs, XXE)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

# The part each format's parser reads first, so an entity there would be expanded if allowed.
MAIN_PART = {"docx": "word/document.xml", "pptx": "ppt/slides/slide1.xml", "xlsx": "xl/workbook.xml"}

_LEVELS = "".join(
    f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10)
)
BILLION_LAUGHS_DTD = '<!DOCTYPE lolz [<!ENTITY lol "lol">' + _LEVELS + "]>"


def rewrite_part(source: bytes, part: str, transform: object) -> bytes:
    """A copy of the OOXML package ``source`` with ``part`` replaced by ``transform(old_bytes)``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(source)) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == part:
                data = transform(data)  # type: ignore[operator]
            zout.writestr(info.filename, data)
    return out.getvalue()


def insert_doctype(xml: bytes, dtd: str) -> bytes:
    """Put ``dtd`` after the XML declaration (where a DOCTYPE must go)."""
    if xml.startswith(b"<?xml"):
        end = xml.index(b"?>") + 2
        return xml[:end] + dtd.encode() + xml[end:]
    return dtd.encode() + xml


def billion_laughs(source: bytes, kind: str) -> bytes:
    return rewrite_part(source, MAIN_PART[kind], lambda xml: insert_doctype(xml, BILLION_LAUGHS_DTD))


def xxe(source: bytes, kind: str, secret: Path, anchor: bytes) -> bytes:
    """An external entity pointing at ``secret``, referenced in place of the text ``anchor``."""
    dtd = f'<!DOCTYPE doc [<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>'

    def transform(xml: bytes) -> bytes:
        return insert_doctype(xml, dtd).replace(anchor, b"&xxe;", 1)

    return rewrite_part(source, MAIN_PART[kind], transform)


def zip_bomb(source: bytes, megabytes: int = 1024) -> bytes:
    """``source`` plus a member of ``megabytes`` MB of zeros (about 1000:1 deflated)."""
    out = io.BytesIO(source)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED, compresslevel=1) as z, \
            z.open("word/media/zeros.bin", "w", force_zip64=True) as member:
        chunk = bytes(16 * 1024 * 1024)
        for _ in range(megabytes // 16):
            member.write(chunk)
    return out.getvalue()


def many_entries(source: bytes, count: int) -> bytes:
    out = io.BytesIO(source)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_STORED) as z:
        for i in range(count):
            z.writestr(f"customXml/extra{i}.bin", b"x")
    return out.getvalue()
