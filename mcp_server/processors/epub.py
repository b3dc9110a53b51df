"""EPUB e-books: chapters in spine order, each a ``## chapter`` section located by its title.

``META-INF/container.xml`` names the package document; its spine gives the reading order and its
table of contents (the EPUB 3 nav document, else the EPUB 2 NCX) the chapter titles (a chapter
missing from it takes its XHTML ``<title>``, else its first heading). Each chapter's XHTML is read
by the HTML processor, with every image replaced by ``[Image: alt text]`` first and the book's
style sheets it links put in the page (the HTML processor reads them for the text they hide). The zip passes
the same directory limits as every archive (SECURITY P1) before anything is inflated; the XML of
the container, package and NCX is parsed by ``_doctype.parse_xml`` (a DOCTYPE, as every Project
Gutenberg book has, and internal entities read with their expansion bounded; nothing external).

Why not ebooklib: it parses with lxml's default parser (entities resolved) and reads the whole
book into memory objects; four small XML files and the spine are all that is needed here.
"""

from __future__ import annotations

import functools
import io
import posixpath
import warnings
import zipfile
from collections.abc import Callable
from typing import ClassVar
from urllib.parse import unquote
from xml.etree.ElementTree import Element

from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

from mcp_server.core.errors import MCPServerError, ProcessingError
from mcp_server.core.markup import HEADINGS
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._doctype import parse_xml
from mcp_server.processors._members import Parts, check_count
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.formats import Chunking, Format, Magic
from mcp_server.processors.html import HtmlProcessor
from mcp_server.processors.ooxml import check_zip_limits

__all__ = ["EpubProcessor"]

_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_NCX = "{http://www.daisy.org/z3986/2005/ncx/}"
_XHTML = {"application/xhtml+xml", "text/html"}
MAX_STYLE_SHEET = 1_000_000  # bytes: a book's style sheet past this is not read for hidden text


class EpubProcessor:
    format: ClassVar[Format] = Format(
        doc_type="epub",
        description="EPUB e-books: chapters in reading order as headings, images' alt text",
        extensions=(".epub",),
        mime_types=("application/epub+zip",),
        magic=(Magic(parts=((0, b"PK\x03\x04"), (30, b"mimetypeapplication/epub+zip"))),),
        zip_member="META-INF/container.xml",  # the mimetype member is not always first and stored
        chunking=Chunking(size=1500, overlap=300, breaks=HEADINGS),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        try:
            book = zipfile.ZipFile(io.BytesIO(doc.data))
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
            raise ProcessingError("the file is truncated or corrupt (not a valid EPUB zip)", reason="corrupt") from exc
        with book:
            check_zip_limits(book.infolist(), options)
            try:
                return _read(book, options)
            except MCPServerError:
                raise
            except (KeyError, zipfile.BadZipFile, OSError) as exc:
                raise ProcessingError(f"the EPUB file could not be parsed: {type(exc).__name__}",
                                      reason="corrupt") from exc


def _read(book: zipfile.ZipFile, options: ProcessOptions) -> ProcessedDocument:
    container = _xml(book, "META-INF/container.xml")
    rootfile = container.find(f".//{_CONTAINER}rootfile")
    if rootfile is None or not rootfile.get("full-path"):
        raise ProcessingError("the EPUB file names no package document", reason="corrupt")
    opf_path = rootfile.get("full-path", "")
    package = _xml(book, opf_path)
    base = posixpath.dirname(opf_path)
    manifest = {item.get("id"): item for item in package.iter(f"{_OPF}item")}
    spine = [manifest[ref.get("idref")] for ref in package.iter(f"{_OPF}itemref") if ref.get("idref") in manifest]
    chapters = [item for item in spine if item.get("media-type") in _XHTML and "nav" not in
                (item.get("properties") or "").split()]
    check_count(len(chapters), options, "chapters")
    titles = _toc(book, base, manifest.values())
    parts = Parts()
    book_title = _text(package.find(f".//{_DC}title"))
    if book_title:
        creator = _text(package.find(f".//{_DC}creator"))
        parts.add(f"# {book_title}" + (f"\n\n{creator}" if creator else ""), ())
    names: list[str] = []
    for number, item in enumerate(chapters, 1):
        path = _join(base, item.get("href", ""))
        try:
            html = book.read(path)
        except KeyError:
            continue
        chapter, fallback = _chapter(html, options, functools.partial(_style_sheet, book, path))
        name = titles.get(path) or fallback or f"Chapter {number}"
        names.append(name)
        parts.add_member(name, chapter, ())
    metadata: dict[str, object] = {"chapters": names, "chapter_count": len(names)}
    if book_title:
        metadata["title"] = book_title
    creator = _text(package.find(f".//{_DC}creator"))
    if creator:
        metadata["author"] = creator
    return ProcessedDocument(content=parts.content, doc_type="epub", metadata=metadata,
                             tables=tuple(parts.tables), locations=tuple(parts.locations))


def _style_sheet(book: zipfile.ZipFile, chapter: str, href: str) -> str | None:
    """The text of the book's style sheet ``href`` links from ``chapter``; None when it is not in the book."""
    path = _join(posixpath.dirname(chapter), href.split("#", 1)[0])
    try:
        info = book.getinfo(path)
    except KeyError:
        return None
    return book.read(info).decode("utf-8", "replace") if info.file_size <= MAX_STYLE_SHEET else None


def _chapter(html: bytes, options: ProcessOptions,
             style_sheet: Callable[[str], str | None]) -> tuple[ProcessedDocument, str]:
    """The chapter read by the HTML processor (images as their alt text, the book's style sheets it
    links put in the page, for the text they hide), and its own title."""
    soup = _soup(html)
    for link in soup.find_all("link"):
        linked = "stylesheet" in " ".join(link.get("rel") or []).lower()
        if linked and (css := style_sheet(str(link.get("href") or ""))):
            style = soup.new_tag("style")
            style.string = css
            link.replace_with(style)
    for image in soup.find_all(["img", "image"]):
        alt = str(image.get("alt") or image.get("title") or "").strip() if hasattr(image, "get") else ""
        image.replace_with(f" [Image: {alt}] " if alt else " ")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    if soup.title:
        soup.title.decompose()  # the chapter heading is ours; the HTML processor would repeat it
    if not title:
        first = soup.find(["h1", "h2", "h3"])
        title = first.get_text(" ", strip=True) if first else ""
    doc = DocumentInput(data=str(soup).encode("utf-8"), doc_type="html", charset="utf-8", content_type="text/html")
    return HtmlProcessor().process(doc, options), title


def _toc(book: zipfile.ZipFile, base: str, items: object) -> dict[str, str]:
    """Chapter file (path in the zip) -> its title in the book's table of contents."""
    titles: dict[str, str] = {}
    for item in items:  # type: ignore[attr-defined]
        href = item.get("href", "")
        if "nav" in (item.get("properties") or "").split():
            nav_path = _join(base, href)
            soup = _soup(book.read(nav_path))
            for link in soup.select("nav a[href]"):
                target = _join(posixpath.dirname(nav_path), str(link.get("href", "")).split("#", 1)[0])
                titles.setdefault(target, link.get_text(" ", strip=True))
        elif item.get("media-type") == "application/x-dtbncx+xml" and not titles:
            ncx_path = _join(base, href)
            for point in _xml(book, ncx_path).iter(f"{_NCX}navPoint"):
                label, content = point.find(f"{_NCX}navLabel/{_NCX}text"), point.find(f"{_NCX}content")
                if label is not None and content is not None:
                    target = _join(posixpath.dirname(ncx_path), content.get("src", "").split("#", 1)[0])
                    titles.setdefault(target, _text(label))
    return {path: title for path, title in titles.items() if title}


def _soup(xhtml: bytes) -> BeautifulSoup:
    # XHTML read by the HTML parser on purpose: the HTML processor reads it the same way.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        return BeautifulSoup(xhtml, "lxml")


def _xml(book: zipfile.ZipFile, name: str) -> Element:
    return parse_xml(book.read(name))


def _join(base: str, href: str) -> str:
    return posixpath.normpath(posixpath.join(base, unquote(href))).lstrip("/")


def _text(element: Element | None) -> str:
    return " ".join("".join(element.itertext()).split()) if element is not None else ""
