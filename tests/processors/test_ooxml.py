"""The OOXML guard: zip bombs, entity declarations, encrypted and legacy OLE files, corrupt zips."""

from __future__ import annotations

import io
import tracemalloc
import zipfile
from pathlib import Path

import docx
import openpyxl.xml
import pptx
import pytest

from mcp_server.core.errors import ProcessingError
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.docx import DocxProcessor
from mcp_server.processors.ooxml import OleProcessor, guard_ooxml
from mcp_server.processors.pptx import PptxProcessor
from mcp_server.processors.xlsx import XlsxProcessor

from ._office_helpers import MAIN_PART, billion_laughs, insert_doctype, many_entries, rewrite_part, xxe, zip_bomb

OPTIONS = ProcessOptions()
PROCESSORS = {"docx": DocxProcessor(), "pptx": PptxProcessor(), "xlsx": XlsxProcessor()}
SMALL = {
    "docx": ("docx/testWORD.docx", b"This is a sample Microsoft Word Document."),
    "pptx": ("pptx/fake-power-point-table.pptx", b"A Slide with a Table"),
    "xlsx": ("xlsx/stanley-cups.xlsx", b""),
}
MARKER = "XXE-MARKER-7f3a9c"


def _source(corpus_dir: Path, kind: str) -> bytes:
    return (corpus_dir / "docs" / SMALL[kind][0]).read_bytes()


def _process(kind: str, data: bytes) -> str:
    return PROCESSORS[kind].process(DocumentInput(data=data, doc_type=kind), OPTIONS).content


@pytest.fixture(scope="module")
def bomb_docx(corpus_dir: Path) -> bytes:
    return zip_bomb(_source(corpus_dir, "docx"))


def test_a_docx_holding_a_gigabyte_of_zeros_is_refused_without_inflating_it(bomb_docx: bytes) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(ProcessingError, match="zip_max_ratio") as info:
            _process("docx", bomb_docx)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024
    assert info.value.details["reason"] == "bomb"


def _with_members(source: bytes, members: dict[str, bytes]) -> bytes:
    out = io.BytesIO(source)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as package:
        for name, data in members.items():
            package.writestr(name, data)
    return out.getvalue()


def test_a_small_member_that_compresses_a_thousandfold_is_no_bomb(corpus_dir: Path) -> None:
    # A picture of one colour, an embedded OLE object of zeros: small in absolute terms.
    data = _with_members(_source(corpus_dir, "docx"), {"word/media/blank.bmp": bytes(2 * 1024 * 1024)})
    assert "This is a sample Microsoft Word Document." in _process("docx", data)


def test_many_small_members_that_expand_past_the_grace_in_all_are_a_bomb(corpus_dir: Path) -> None:
    zeros = {f"word/media/zeros{n}.bin": bytes(1024 * 1024) for n in range(40)}  # each under the 16 MiB grace
    with pytest.raises(ProcessingError, match="expand .* in all") as info:
        guard_ooxml(_with_members(_source(corpus_dir, "docx"), zeros), OPTIONS, kind="DOCX")
    assert info.value.details["reason"] == "bomb" and info.value.details["limit"] == "zip_max_ratio"


def test_one_member_just_past_the_grace_at_a_bombs_ratio_is_refused(corpus_dir: Path) -> None:
    options = ProcessOptions(zip_ratio_grace_bytes=1024 * 1024)
    data = _with_members(_source(corpus_dir, "docx"), {"word/media/zeros.bin": bytes(1024 * 1024 + 1)})
    with pytest.raises(ProcessingError, match="'word/media/zeros.bin' expands") as info:
        guard_ooxml(data, options, kind="DOCX")
    assert info.value.details["reason"] == "bomb"


def test_the_total_declared_size_limit_is_enforced_even_when_ratios_are_fine(bomb_docx: bytes) -> None:
    options = ProcessOptions(zip_max_ratio=10_000, zip_max_uncompressed_bytes=100 * 1024 * 1024)
    with pytest.raises(ProcessingError, match="zip_max_uncompressed_bytes"):
        guard_ooxml(bomb_docx, options, kind="DOCX")


def test_a_zip_with_too_many_entries_is_refused(corpus_dir: Path) -> None:
    data = many_entries(_source(corpus_dir, "docx"), 60)
    with pytest.raises(ProcessingError, match="zip_max_entries"):
        guard_ooxml(data, ProcessOptions(zip_max_entries=50), kind="DOCX")


@pytest.mark.parametrize("kind", ["docx", "pptx", "xlsx"])
def test_billion_laughs_in_any_ooxml_format_is_refused(corpus_dir: Path, kind: str) -> None:
    with pytest.raises(ProcessingError, match="entity-expansion bomb") as info:
        _process(kind, billion_laughs(_source(corpus_dir, kind), kind))
    assert info.value.details["reason"] == "bomb" and info.value.details["part"]


@pytest.mark.parametrize("kind", ["docx", "pptx", "xlsx"])
def test_an_external_entity_is_refused_and_the_local_file_never_leaks(
    corpus_dir: Path, tmp_path: Path, kind: str
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(MARKER)
    data = xxe(_source(corpus_dir, kind), kind, secret, SMALL[kind][1] or b"<sheets>")
    with pytest.raises(ProcessingError, match="no external entities") as info:
        _process(kind, data)
    assert info.value.details["reason"] == "unsafe_xml"
    assert MARKER not in str(info.value.to_dict())


@pytest.mark.parametrize("kind", ["docx", "pptx", "xlsx"])
def test_a_part_that_only_names_its_dtd_passes_the_guard_as_openoffice_org_writes_them(
    corpus_dir: Path, kind: str
) -> None:
    named = '<!DOCTYPE script:module PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "module.dtd">'
    data = rewrite_part(_source(corpus_dir, kind), MAIN_PART[kind], lambda xml: insert_doctype(xml, named))
    guard_ooxml(data, OPTIONS, kind=kind.upper())


def test_the_parsers_themselves_do_not_resolve_external_entities(corpus_dir: Path, tmp_path: Path) -> None:
    # Second fence: even without the guard, python-docx/python-pptx keep entities unresolved
    # and openpyxl parses through defusedxml.
    secret = tmp_path / "secret.txt"
    secret.write_text(MARKER)
    doc = docx.Document(io.BytesIO(xxe(_source(corpus_dir, "docx"), "docx", secret, SMALL["docx"][1])))
    assert MARKER not in "\n".join(p.text for p in doc.paragraphs)
    deck = pptx.Presentation(io.BytesIO(xxe(_source(corpus_dir, "pptx"), "pptx", secret, SMALL["pptx"][1])))
    assert MARKER not in "".join(s.text_frame.text for s in deck.slides[0].shapes if s.has_text_frame)
    assert openpyxl.xml.DEFUSEDXML is True


@pytest.mark.parametrize(
    "path",
    ["docx/testWORD_protected_passtika.docx", "pptx/testPPT_protected_passtika.pptx",
     "xlsx/testEXCEL_protected_passtika.xlsx"],
)
def test_encrypted_office_files_ask_for_a_password(corpus_dir: Path, path: str) -> None:
    data = (corpus_dir / "docs" / path).read_bytes()
    kind = path.split("/")[0]
    with pytest.raises(ProcessingError, match="password required"):
        _process(kind, data)
    with pytest.raises(ProcessingError, match="password required"):
        OleProcessor().process(DocumentInput(data=data, doc_type="ole"), OPTIONS)


def test_an_ole_container_of_no_known_format_is_refused_naming_the_formats_read() -> None:
    data = _minimal_cfb()
    with pytest.raises(ProcessingError, match="OLE compound file of no format") as info:
        OleProcessor().process(DocumentInput(data=data, doc_type="ole"), OPTIONS)
    assert "Word, Excel, PowerPoint or Outlook" in info.value.message


def test_a_truncated_docx_is_reported_as_corrupt(corpus_dir: Path) -> None:
    data = (corpus_dir / "docs" / "docx" / "testWORD_truncated.docx").read_bytes()
    with pytest.raises(ProcessingError, match=r"truncated or corrupt \(not a valid DOCX zip\)"):
        _process("docx", data)


@pytest.mark.parametrize("kind", ["docx", "pptx", "xlsx"])
def test_bytes_that_are_not_a_zip_are_reported_as_corrupt(kind: str) -> None:
    with pytest.raises(ProcessingError, match="truncated or corrupt"):
        _process(kind, b"hello, I am plain text and not a zip at all")


def _minimal_cfb() -> bytes:
    """A valid, empty Compound File (what a legacy .doc/.xls is wrapped in), 3 sectors of 512 B."""
    import struct

    header = bytearray(512)
    header[0:8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
    struct.pack_into("<HHHHH", header, 24, 0x3E, 3, 0xFFFE, 9, 6)
    struct.pack_into("<IIIIIIII", header, 40, 0, 1, 1, 0, 0x1000, 0xFFFFFFFE, 0, 0xFFFFFFFE)
    struct.pack_into("<I", header, 68, 0)  # DIFAT count 0
    difat = [0] + [0xFFFFFFFF] * 108  # the FAT lives in sector 0
    struct.pack_into("<109I", header, 76, *difat)
    fat = [0xFFFFFFFD, 0xFFFFFFFE] + [0xFFFFFFFF] * 126  # sector 0 = FAT, sector 1 = directory
    fat_sector = struct.pack("<128I", *fat)
    root = bytearray(128)
    name = "Root Entry".encode("utf-16-le") + b"\x00\x00"
    root[0 : len(name)] = name
    struct.pack_into("<HBB", root, 64, len(name), 5, 1)
    struct.pack_into("<III", root, 68, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF)
    struct.pack_into("<II", root, 116, 0xFFFFFFFE, 0)
    directory = bytes(root) + bytes(128 * 3)
    return bytes(header) + fat_sector + directory
