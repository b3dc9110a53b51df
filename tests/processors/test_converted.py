"""Legacy Office, OpenDocument and RTF through LibreOffice (``processors/_soffice.py``): the twin
check (a file LibreOffice saved from a corpus .docx/.pptx/.xlsx reads as that twin does), encrypted
files refused before conversion, and a converter that hangs, crashes, is missing or writes nothing
gives a clear error and leaves no process behind (fake ``soffice`` scripts stand in for it)."""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
import time
import zipfile
from pathlib import Path

import olefile
import pytest

from mcp_server.core.errors import ProcessingError
from mcp_server.processors import DocumentInput, ProcessOptions, detect_type, process_document
from mcp_server.processors._soffice import OfficeConverter
from mcp_server.processors.page_image import office_pdf
from tests.conftest import DOCS

needs_libreoffice = pytest.mark.skipif(shutil.which("soffice") is None,
                                       reason="LibreOffice is not installed (make system-deps installs it)")
OPTIONS = ProcessOptions(detect_language=False)

# converted file -> its twin, a format read before
TWINS = [("doc/testWORD.doc", "docx/testWORD.docx"), ("ppt/powerpoint_sample.ppt", "pptx/powerpoint_sample.pptx"),
         ("ods/stanley-cups.ods", "xlsx/stanley-cups.xlsx"), ("rtf/word_tables.rtf", "docx/word_tables.docx")]


def read(relative: str, options: ProcessOptions = OPTIONS) -> tuple[str, str]:
    data = (DOCS / relative).read_bytes()
    doc_type = detect_type(data, "", relative)
    return doc_type, process_document(DocumentInput(data=data, doc_type=doc_type, filename=relative), options).content


def words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"\w+", text)}


@needs_libreoffice
@pytest.mark.parametrize(("converted", "twin"), TWINS)
def test_a_file_saved_from_a_format_read_before_gives_at_least_85_percent_of_its_twins_words(
    converted: str, twin: str,
) -> None:
    doc_type, text = read(converted)
    assert doc_type == Path(converted).suffix[1:]
    theirs = words(read(twin)[1])
    assert len(words(text) & theirs) >= 0.85 * len(theirs)


@needs_libreoffice
def test_a_legacy_workbook_keeps_its_sheets_and_a_legacy_deck_its_slides() -> None:
    data = (DOCS / "xls" / "test.xls").read_bytes()
    doc = process_document(DocumentInput(data=data, doc_type="xls"), OPTIONS)
    assert doc.doc_type == "xls" and doc.metadata["converted_by"] == "LibreOffice"
    assert [loc.sheet for loc in doc.locations][0] == "Sheet1" and len({loc.sheet for loc in doc.locations}) == 2


def _encrypted_doc() -> bytes:
    """testWORD.doc with the FIB's fEncrypted flag set, as Word writes a password-protected file."""
    data = bytearray((DOCS / "doc" / "testWORD.doc").read_bytes())
    buffer = io.BytesIO(bytes(data))
    with olefile.OleFileIO(buffer, write_mode=True) as ole:
        stream = bytearray(ole.openstream("WordDocument").read())
        flags = int.from_bytes(stream[0x0A:0x0C], "little") | 0x0100
        stream[0x0A:0x0C] = flags.to_bytes(2, "little")
        ole.write_stream("WordDocument", bytes(stream))
    return buffer.getvalue()


def test_a_password_protected_legacy_word_file_is_refused_before_any_conversion() -> None:
    data = _encrypted_doc()
    assert detect_type(data, "", "secret.doc") == "doc"
    missing = ProcessOptions(office_command="/nonexistent/soffice")  # never reached
    with pytest.raises(ProcessingError, match="password required") as info:
        process_document(DocumentInput(data=data, doc_type="doc"), missing)
    assert info.value.details["reason"] == "encrypted"


def test_a_password_protected_legacy_file_gets_no_page_images_either() -> None:
    missing = ProcessOptions(office_command="/nonexistent/soffice")  # never reached
    with pytest.raises(ProcessingError, match="password required") as info:
        office_pdf(DocumentInput(data=_encrypted_doc(), doc_type="doc"), missing)
    assert info.value.details["reason"] == "encrypted"


def test_an_encrypted_ooxml_file_is_still_refused_as_encrypted() -> None:
    data = (DOCS / "docx" / "testWORD_protected_passtika.docx").read_bytes()
    assert detect_type(data, "", "x.docx") == "ole"
    with pytest.raises(ProcessingError, match="password required"):
        process_document(DocumentInput(data=data, doc_type="ole"), OPTIONS)


def _script(folder: Path, body: str) -> str:
    path = folder / "soffice"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _gone(pid_file: Path, within: float = 10.0) -> bool:
    """The process ends within ``within`` s (SIGKILL is delivered asynchronously): no such process,
    or a killed one left for init to reap (a zombie)."""
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)  # polling a condition with a deadline, not waiting for a guessed time
    return False


def test_a_hanging_converter_is_killed_with_its_children_and_reported(tmp_path: Path) -> None:
    command = _script(tmp_path, f"sleep 600 &\necho $! > {tmp_path}/child.pid\necho $$ > {tmp_path}/main.pid\nwait\n")
    with pytest.raises(ProcessingError, match=r"converter took longer than 0.5 s") as info:
        OfficeConverter(command, timeout=0.5).convert(b"{\\rtf1 x}", suffix=".rtf", target="docx")
    assert info.value.details["reason"] == "converter_timeout"
    assert _gone(tmp_path / "main.pid") and _gone(tmp_path / "child.pid")


def test_a_crashing_converter_is_a_clear_error(tmp_path: Path) -> None:
    command = _script(tmp_path, "kill -SEGV $$\n")
    with pytest.raises(ProcessingError, match="converter crashed") as info:
        OfficeConverter(command, timeout=5).convert(b"{\\rtf1 x}", suffix=".rtf", target="docx")
    assert info.value.details["reason"] == "converter_crashed"


def test_a_converter_that_writes_nothing_means_the_file_could_not_be_read(tmp_path: Path) -> None:
    command = _script(tmp_path, "exit 0\n")
    with pytest.raises(ProcessingError, match=r"could not read this \.rtf file"):
        OfficeConverter(command, timeout=5).convert(b"{\\rtf1 x}", suffix=".rtf", target="docx")


def test_a_missing_converter_names_the_packages_to_install() -> None:
    with pytest.raises(ProcessingError, match="libreoffice-writer-nogui") as info:
        process_document(DocumentInput(data=b"{\\rtf1 hello}", doc_type="rtf"),
                         ProcessOptions(office_command="no-such-soffice-here"))
    assert info.value.details["reason"] == "converter_missing"


@needs_libreoffice
def test_a_corrupt_legacy_file_is_a_clear_error() -> None:
    data = (DOCS / "doc" / "testWORD.doc").read_bytes()
    broken = data[:4096] + bytes(len(data) - 4096)
    with pytest.raises(ProcessingError):
        process_document(DocumentInput(data=broken, doc_type="doc"), OPTIONS)


def test_opendocument_and_legacy_office_are_recognised_from_their_bytes_alone() -> None:
    for relative, expected in [("odt/testWORD.odt", "odt"), ("ods/stanley-cups.ods", "ods"),
                               ("odp/powerpoint_sample.odp", "odp"), ("rtf/word_tables.rtf", "rtf"),
                               ("doc/test.doc", "doc"), ("xls/test.xls", "xls"), ("ppt/powerpoint_sample.ppt", "ppt"),
                               ("msg/test_outlook_msg.msg", "msg")]:
        assert detect_type((DOCS / relative).read_bytes(), "application/octet-stream", "download") == expected


def _with_basic_macros(data: bytes) -> bytes:
    """An OpenDocument package with the Basic library part OpenOffice.org 3 writes beside a macro
    (listed in the manifest, as LibreOffice requires): it names its DTD in a DOCTYPE."""
    module = "Basic/Standard/Module1.xml"
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as package:
        for info in source.infolist():
            member = source.read(info)
            if info.filename == "META-INF/manifest.xml":
                entry = f'<manifest:file-entry manifest:full-path="{module}" manifest:media-type="text/xml"/>'
                member = member.replace(b"</manifest:manifest>", f"{entry}</manifest:manifest>".encode())
            package.writestr(info, member)
        package.writestr(module, '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE script:module PUBLIC '
                         '"-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "module.dtd">\n<script:module '
                         'xmlns:script="http://openoffice.org/2000/script" script:name="Module1" '
                         'script:language="StarBasic">Sub Main\nMsgBox "MACRO-BODY"\nEnd Sub</script:module>')
    return out.getvalue()


@needs_libreoffice
def test_an_opendocument_file_with_openoffice_macro_parts_is_read_without_its_macros() -> None:
    data = _with_basic_macros((DOCS / "odt" / "testWORD.odt").read_bytes())
    doc = process_document(DocumentInput(data=data, doc_type=detect_type(data, "", "macro.odt")), OPTIONS)
    assert doc.doc_type == "odt" and "MACRO-BODY" not in doc.content
    assert words(read("odt/testWORD.odt")[1]) <= words(doc.content)
