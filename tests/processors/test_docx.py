"""DOCX: corpus vectors, document order, headings, tables, lists, links, locations, fuzzing."""

from __future__ import annotations

import contextlib
import io
import struct
import zipfile
from pathlib import Path

import docx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._embedded import _native
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.docx import DocxProcessor
from mcp_server.processors.ocr import ocr_available

OPTIONS = ProcessOptions()

# (file, must_include, must_not_include)
VECTORS = [
    ("testWORD.docx", ["# Sample Word Document Title", "# Heading Level 1", "## Heading Level 2",
                       "### Heading Level 3", "| This is a table |", "Nested table",
                       "Tika (http://tika.apache.org/)", "This is the header for our document",
                       "This is the footer for our document"], ["<w:"]),
    ("word_tables.docx", ["# Test with tables", "| Header 0.0 | Header 0.1 | Header 0.2 |",
                          "| Cell 1.0 | Merged Cell 1.1 1.2 | Merged Cell 1.1 1.2 |",
                          "| Cell 2.0 | Merged Cell 1.1 2.1 | Cell 2.2 |"], []),
    ("docx_rich_cells.docx", ["## Table with rich cells", "This is a list:<br>- A First",
                              "A, B, C; Cell 1, Cell 2, Cell 3", "- R2C2 item 2"], []),
    ("unit_test_headers_numbered.docx", ["# Section 1", "## Section 1.1", "### Section 1.2.3",
                                         "- Appendix A: Glossary", "    - Detail A.1.1",
                                         "## REFERENCES"], []),
    ("docx-tables.docx", ["| Header Col 1 | Header Col 2 |", "A link example (https://tabul.com/)",
                          "| e | e | d |"], []),
    ("test.docx", ["AutoGen"], []),
    ("list_after_num_headers.docx", ["## Chính sách bảo hành", "### ĐỐI TƯỢNG ÁP DỤNG",
                                     "- Term 1: Definition 1"], []),
    ("testWORD_formattingFlipUnderlineOrder.docx",
     ["Informacje o zmianach w ustawie o działalności leczniczej"], []),
    ("word_sample.docx", ["# Swimming in the lake", "- You can relax and look around\n- Paddle about",
                          "| Leaves | Ash, Elm, Maple | 50 |"], []),
]


def _process(data: bytes) -> ProcessedDocument:
    return DocxProcessor().process(DocumentInput(data=data, doc_type="docx"), OPTIONS)


@pytest.fixture(scope="module")
def handbook(corpus_dir: Path) -> ProcessedDocument:
    return _process((corpus_dir / "docs" / "docx" / "handbook-872p.docx").read_bytes())


@pytest.mark.parametrize(("name", "must_include", "must_not_include"), VECTORS, ids=[v[0] for v in VECTORS])
def test_docx_corpus_files_give_their_expected_text(
    corpus_dir: Path, name: str, must_include: list[str], must_not_include: list[str]
) -> None:
    doc = _process((corpus_dir / "docs" / "docx" / name).read_bytes())
    assert doc.doc_type == "docx"
    for fragment in must_include:
        assert fragment in doc.content, fragment
    for fragment in must_not_include:
        assert fragment not in doc.content, fragment


def test_paragraphs_and_tables_come_out_in_document_order(corpus_dir: Path) -> None:
    content = _process((corpus_dir / "docs" / "docx" / "word_tables.docx").read_bytes()).content
    assert content.index("A uniform table") < content.index("| Cell 1.0 | Cell 1.1 | Cell 1.2 |")
    assert content.index("| Cell 1.0 | Cell 1.1 | Cell 1.2 |") < content.index("A non-uniform table")


def test_word_tables_gives_its_seven_tables(corpus_dir: Path) -> None:
    doc = _process((corpus_dir / "docs" / "docx" / "word_tables.docx").read_bytes())
    assert len(doc.tables) == 7
    assert all(t.content.startswith("| ") for t in doc.tables)


def test_hyperlinks_are_listed_in_metadata(corpus_dir: Path) -> None:
    doc = _process((corpus_dir / "docs" / "docx" / "docx-tables.docx").read_bytes())
    assert {"text": "A link example", "url": "https://tabul.com/"} in doc.metadata["hyperlinks"]


def test_locations_follow_the_heading_path_and_cover_the_content(corpus_dir: Path) -> None:
    doc = _process((corpus_dir / "docs" / "docx" / "unit_test_headers_numbered.docx").read_bytes())
    paths = [loc.heading_path for loc in doc.locations]
    assert ("Test Document", "Section 1.2", "Section 1.2.3") not in paths  # levels replace, not append
    assert ("Section 1", "Section 1.2", "Section 1.2.3") in paths
    starts = [loc.start for loc in doc.locations]
    assert starts == sorted(starts)
    for a, b in zip(doc.locations, doc.locations[1:], strict=False):
        assert a.end <= b.start
    section = next(loc for loc in doc.locations if loc.heading_path == ("Section 1", "Section 1.1"))
    assert doc.content[section.start : section.end].startswith("## Section 1.1")


def test_the_872_page_handbook_is_processed_whole(handbook: ProcessedDocument) -> None:
    assert 780_000 < len(handbook.content) < 860_000
    assert handbook.metadata["heading_count"] >= 280
    assert len(handbook.tables) == 2
    assert handbook.locations[-1].end == len(handbook.content)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_docx_bytes_give_a_document_or_a_processing_error(
    corpus_dir: Path, data: st.DataObject
) -> None:
    original = (corpus_dir / "docs" / "docx" / "docx-tables.docx").read_bytes()
    with contextlib.suppress(ProcessingError):
        _process(_mutate(original, data))


def test_a_mutated_main_part_gives_a_processing_error(corpus_dir: Path) -> None:
    original = (corpus_dir / "docs" / "docx" / "docx-tables.docx").read_bytes()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(original)) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            body = zin.read(info)
            zout.writestr(info, body[: len(body) // 2] if info.filename == "word/document.xml" else body)
    with pytest.raises(ProcessingError, match="could not be parsed"):
        _process(out.getvalue())


def _mutate(original: bytes, data: st.DataObject) -> bytes:
    buf = bytearray(original)
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, len(buf) - 1))
        buf[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        buf = buf[: data.draw(st.integers(0, len(buf)))]
    return bytes(buf)


def _as_macro_enabled(data: bytes, main_type: str) -> bytes:
    """The package saved as Word saves a .docm: its main part under the macro-enabled content type,
    a VBA project beside it (whose bytes must never come back)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for info in source.infolist():
            member = source.read(info)
            if info.filename == "[Content_Types].xml":
                member = member.replace(
                    b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
                    main_type.encode())
                member = member.replace(b"</Types>", b'<Default Extension="bin" '
                                        b'ContentType="application/vnd.ms-office.vbaProject"/></Types>')
            package.writestr(info, member)
        package.writestr("word/vbaProject.bin", b"Attribute VB_Name = \"MACRO-SOURCE\"\nSub AutoOpen()\nEnd Sub")
    return out.getvalue()


@pytest.mark.parametrize("main_type", [
    "application/vnd.ms-word.document.macroEnabled.main+xml",  # .docm
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",  # .dotm
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",  # .dotx
])
def test_a_macro_enabled_document_or_template_is_read_as_docx_and_its_macros_never_returned(
    corpus_dir: Path, main_type: str,
) -> None:
    data = (corpus_dir / "docs" / "docx" / "testWORD.docx").read_bytes()
    doc = DocxProcessor().process(DocumentInput(data=_as_macro_enabled(data, main_type), doc_type="docx"), OPTIONS)
    assert doc.content == DocxProcessor().process(DocumentInput(data=data, doc_type="docx"), OPTIONS).content
    assert "MACRO-SOURCE" not in doc.content and "AutoOpen" not in doc.content


def _with_embedding(source: bytes, name: str, data: bytes) -> bytes:
    out = io.BytesIO(source)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as package:
        package.writestr(f"word/embeddings/{name}", data)
    return out.getvalue()


def test_an_embedded_workbook_is_read_after_the_documents_own_text(corpus_dir: Path) -> None:
    # Word keeps an embedded workbook as the .xlsx package itself under word/embeddings/.
    workbook = (corpus_dir / "docs" / "xlsx" / "stanley-cups.xlsx").read_bytes()
    data = _with_embedding((corpus_dir / "docs" / "docx" / "testWORD.docx").read_bytes(),
                           "Microsoft_Excel_Worksheet.xlsx", workbook)
    doc = DocxProcessor().process(DocumentInput(data=data, doc_type="docx"), OPTIONS)
    own = doc.content.index("This is a sample Microsoft Word Document.")
    assert own < doc.content.index("## Embedded: Microsoft_Excel_Worksheet.xlsx") < doc.content.index("Stanley Cups")
    assert doc.metadata["embedded_objects"] == ["Microsoft_Excel_Worksheet.xlsx"]
    at = doc.content.index("Stanley Cups")
    assert any(loc.heading_path[:1] == ("Embedded: Microsoft_Excel_Worksheet.xlsx",)
               for loc in doc.locations if loc.start <= at < loc.end)
    flat = DocxProcessor().process(DocumentInput(data=data, doc_type="docx"), ProcessOptions(archive_max_depth=0))
    assert "Stanley Cups" not in flat.content  # embedded objects count as one level of nesting


def test_a_file_wrapped_by_the_object_packager_is_unwrapped() -> None:
    payload = b"Quarterly figures, embedded as a text file."
    temp = b"C:\\Temp\\notes.txt\0"
    stream = (struct.pack("<IH", 0, 2) + b"notes.txt\0" + b"C:\\Docs\\notes.txt\0" + struct.pack("<I", 0x30000)
              + struct.pack("<I", len(temp)) + temp + struct.pack("<I", len(payload)) + payload)
    assert _native(stream, "oleObject1.bin") == ("notes.txt", payload)
    assert _native(stream[:-5], "oleObject1.bin") is None  # truncated: nothing, not an error


def test_a_word_file_without_text_says_why_it_is_empty(corpus_dir: Path) -> None:
    from mcp_server.processors import process_document

    blank = io.BytesIO()
    docx.Document().save(blank)
    pictured = io.BytesIO()
    document = docx.Document()
    picture = io.BytesIO()
    Image.new("RGB", (200, 120), "white").save(picture, "PNG")  # a picture with no words in it
    document.add_picture(picture)
    document.save(pictured)
    options = ProcessOptions(detect_language=False)
    for data, why in ((blank.getvalue(), "no_text"), (pictured.getvalue(), "images_only")):
        doc = process_document(DocumentInput(data=data, doc_type="docx"), options)
        assert doc.content.strip() == "" and doc.metadata["empty_reason"] == why
    read = process_document(DocumentInput(data=(corpus_dir / "docs" / "docx" / "testWORD.docx").read_bytes(),
                                          doc_type="docx"), options)
    assert "empty_reason" not in read.metadata


@pytest.mark.skipif(not ocr_available(), reason="tesseract is not installed")
def test_a_word_file_of_scanned_pictures_is_read_through_ocr(corpus_dir: Path) -> None:
    scanned = io.BytesIO()
    document = docx.Document()
    document.add_picture(str(corpus_dir / "docs" / "png" / "testOCR.png"))
    document.save(scanned)
    doc = DocxProcessor().process(DocumentInput(data=scanned.getvalue(), doc_type="docx"), OPTIONS)
    assert "This file contains some words." in doc.content and "empty_reason" not in doc.metadata


def test_a_runs_tabs_breaks_and_hyphens_read_as_python_docx_reads_them() -> None:
    document = docx.Document()
    run = document.add_paragraph().add_run("before tab")
    run.add_tab()
    run.add_text("after tab")
    run.add_break()  # a line break: a new line
    run.add_text("next line")
    run.add_break(docx.enum.text.WD_BREAK.PAGE)  # a page break: no text
    run.add_text("after the page break")
    for tag in ("w:cr", "w:noBreakHyphen", "w:ptab"):
        run._r.append(docx.oxml.OxmlElement(tag))
    run._r.append(docx.oxml.OxmlElement("w:instrText"))  # not text a reader sees
    run.add_text("end")
    buffer = io.BytesIO()
    document.save(buffer)
    expected = "before tab\tafter tab\nnext lineafter the page break\n-\tend"
    assert run.text == expected
    assert _process(buffer.getvalue()).content == expected
