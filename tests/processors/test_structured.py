"""Structured and marked-up text: JSON, YAML and XML as ``path: value`` lines located by their key
paths; reStructuredText and Org headings as locations; EPUB chapters in spine order with alt text."""

from __future__ import annotations

import io
import zipfile

import pytest

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors import DocumentInput, ProcessOptions, detect_type, process_document
from tests.conftest import DOCS

OPTIONS = ProcessOptions(detect_language=False)


def read(data: bytes, name: str) -> ProcessedDocument:
    return process_document(DocumentInput(data=data, doc_type=detect_type(data, "", name), filename=name), OPTIONS)


def located(doc: ProcessedDocument, text: str) -> tuple[str, ...]:
    at = doc.content.index(text)
    return next(loc.heading_path for loc in doc.locations if loc.start <= at < loc.end)


def test_a_json_value_keeps_its_key_path_which_is_also_its_location() -> None:
    doc = read((DOCS / "json" / "test.json").read_bytes(), "test.json")
    assert doc.doc_type == "json"
    assert "$.key1: string_value\n$.key2: 1234\n$.key3[0]: list_value1" in doc.content
    assert "$['5b64c88c-b3c3-4510-bcb8-da0b200602d8']: uuid_key" in doc.content
    assert located(doc, "list_value2") == ("$.key3", "$.key3[1]")


def test_json_is_recognised_without_a_name_and_invalid_json_is_a_clear_error() -> None:
    assert detect_type(b'{"a": [1, 2]}', "application/octet-stream", "download") == "json"
    with pytest.raises(ProcessingError, match="not valid JSON: Expecting"):
        read(b'{"a": [1, 2}', "bad.json")


def test_deeply_nested_json_is_read_without_recursion_or_refused_clearly() -> None:
    data = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(ProcessingError):
        read(data, "deep.json")


def test_yaml_is_read_like_json_and_an_alias_bomb_is_a_clear_error() -> None:
    doc = read((DOCS / "yaml" / "markdown-it-port.yaml").read_bytes(), "port.yaml")
    assert doc.doc_type == "yaml" and "$[0].package: markdown-it/markdown-it" in doc.content
    laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join(['*' + chr(97 + n)] * 10)}]\n" for n in range(8))
    with pytest.raises(ProcessingError, match="more than 500000 values"):
        read(laughs.encode(), "laughs.yaml")


def test_xml_elements_keep_their_paths_and_repeated_siblings_are_numbered() -> None:
    doc = read((DOCS / "xml" / "test_rss.xml").read_bytes(), "feed.xml")
    assert doc.doc_type == "xml" and "rss/channel/title: The Official Microsoft Blog" in doc.content
    assert "rss/channel/item[2]/title: " in doc.content
    assert located(doc, "rss/channel/item[2]/title: ")[:2] == ("rss/channel", "rss/channel/item[2]")


LAUGHS = '<!ENTITY l0 "lol">' + "".join(f'<!ENTITY l{i} "{("&l" + str(i - 1) + ";") * 10}">' for i in range(1, 10))


def test_xml_with_a_doctype_and_small_internal_entities_is_read_with_them_expanded() -> None:
    data = b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]><l><x>&b; and &a;</x></l>'
    assert "l/x: aaaaaaaa and aaaa" in read(data, "small.xml").content


@pytest.mark.parametrize(("doctype", "body", "reason"), [
    (f"<!DOCTYPE l [{LAUGHS}]>", "&l9;", "bomb"),  # billion laughs: 10^9 characters
    (f"<!DOCTYPE l [{LAUGHS}]>", "x", "bomb"),  # declared, even unused
    ('<!DOCTYPE l [<!ENTITY big "' + "a" * 1000 + '">]>', "&big;" * 2000, "bomb"),  # quadratic blowup
    ('<!DOCTYPE l [<!ENTITY a "&#38;b;"><!ENTITY b "&#38;a;">]>', "&a;", "bomb"),  # a cycle through char refs
    ('<!DOCTYPE l [<!ENTITY x SYSTEM "file:///etc/passwd">]>', "&x;", "unsafe_xml"),  # XXE
    ('<!DOCTYPE l [<!ENTITY % p SYSTEM "http://127.0.0.1:9/x.dtd"> %p;]>', "x", "unsafe_xml"),
    ('<!DOCTYPE l [<!ENTITY i SYSTEM "i.gif" NDATA gif>]>', "x", "unsafe_xml"),
])
def test_hostile_xml_entities_are_refused_with_their_reason(doctype: str, body: str, reason: str) -> None:
    with pytest.raises(ProcessingError) as info:
        read(f'<?xml version="1.0"?>{doctype}<l>{body}</l>'.encode(), "hostile.xml")
    assert info.value.details["reason"] == reason


def test_restructuredtext_titles_become_heading_locations() -> None:
    doc = read((DOCS / "rst" / "numpy-ma-README.rst").read_bytes(), "README.rst")
    assert doc.doc_type == "rst" and doc.metadata["heading_count"] >= 5
    assert located(doc, "As a regular user of MaskedArray") == ("A guide to masked arrays in NumPy", "History")


def test_org_headlines_become_heading_locations() -> None:
    doc = read((DOCS / "org" / "testWORD.org").read_bytes(), "testWORD.org")
    assert doc.doc_type == "org"
    assert located(doc, "This is a sample Microsoft Word Document") == (
        "Heading Level 1", "Heading Level 2", "Heading Level 3")


def test_epub_chapters_come_in_spine_order_as_headings_with_their_locations() -> None:
    doc = read((DOCS / "epub" / "test.epub").read_bytes(), "test.epub")
    assert doc.doc_type == "epub" and doc.metadata["chapters"] == ["Chapter 1", "Chapter 2"]
    assert doc.content.startswith("# Test EPUB Document\n\nTest Author")
    assert doc.content.index("## Chapter 1") < doc.content.index("## Chapter 2")
    assert located(doc, "Here's a second chapter")[0] == "Chapter 2"


def _epub(chapters: dict[str, str], spine: list[str], prolog: str = '<?xml version="1.0"?>') -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        book.writestr("mimetype", "application/epub+zip")
        book.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" '
                      'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile '
                      'full-path="OPS/book.opf" media-type="application/oebps-package+xml"/></rootfiles></container>')
        items = "".join(f'<item id="{n}" href="{n}.xhtml" media-type="application/xhtml+xml"/>' for n in chapters)
        refs = "".join(f'<itemref idref="{n}"/>' for n in spine)
        book.writestr("OPS/book.opf", f'{prolog}<package xmlns="http://www.idpf.org/2007/opf" '
                      f'version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Atlas'
                      f'</dc:title></metadata><manifest>{items}</manifest><spine>{refs}</spine></package>')
        for name, body in chapters.items():
            page = f"<html><head><title>{name.title()}</title></head><body>{body}</body></html>"
            book.writestr(f"OPS/{name}.xhtml", page)
    return out.getvalue()


def test_epub_follows_the_spine_not_the_manifest_and_keeps_images_alt_text() -> None:
    maps = '<p>Old maps.</p><img src="a.png" alt="A map of the Nile"/>'
    data = _epub({"rivers": "<p>About rivers.</p>", "maps": maps}, spine=["maps", "rivers"])
    doc = read(data, "atlas.epub")
    assert doc.metadata["chapters"] == ["Maps", "Rivers"]
    assert doc.content.index("Old maps.") < doc.content.index("About rivers.")
    assert "[Image: A map of the Nile]" in doc.content


def test_an_epub_whose_package_names_its_dtd_as_project_gutenberg_books_do_is_read() -> None:
    gutenberg = _epub({"c": "<p>Call me Ishmael.</p>"}, ["c"], prolog='<?xml version="1.0"?><!DOCTYPE package PUBLIC '
                      '"+//ISBN 978-0-00-000000-0//DTD OPF 2.0//EN" "http://www.idpf.org/dtds/2007/opf.dtd">')
    assert "Call me Ishmael." in read(gutenberg, "moby.epub").content


def test_an_epub_with_a_billion_laughs_in_its_package_document_is_refused() -> None:
    evil = _epub({"c": "<p>x</p>"}, ["c"], prolog=f"<!DOCTYPE p [{LAUGHS}]>")
    with pytest.raises(ProcessingError) as info:
        read(evil, "evil.epub")
    assert info.value.details["reason"] == "bomb"
