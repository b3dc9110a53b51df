"""HTML: readable Markdown-ish text without the page chrome.

Two views of a page (``ProcessOptions.html_view``): ``main``, the main content as a person reads it
(``_html_main.py`` picks it; the whole page where the page is not an article or renders only with
JavaScript, and ``metadata.extraction`` says which was used), and ``full``, the whole cleaned page
written by the walk below. Both share the writer, the page's links and its metadata.

BeautifulSoup over lxml's HTML parser (no DTD loading, no network, no entity definitions in
HTML). The walk over the tree uses an explicit stack, never recursion; a page nested deeper than
``MAX_DEPTH`` (256) elements is refused before either view is read. Charset: the HTTP header or ``<meta>``
declaration is tried after strict UTF-8 and before detection, and dropped when the bytes do
not decode under it (``testArabicMisleadingCharset.html`` declares UTF-8, is windows-1256).
"""

from __future__ import annotations

import re
import warnings
from typing import Any, ClassVar

from bs4 import (
    BeautifulSoup,
    Comment,
    Doctype,
    NavigableString,
    PageElement,
    ProcessingInstruction,
    Tag,
    XMLParsedAsHTMLWarning,
)

from mcp_server.core.errors import ProcessingError
from mcp_server.core.markup import HEADINGS, heading_line
from mcp_server.core.models import ExtractedTable, ExtractedURL, ProcessedDocument
from mcp_server.processors._html_hidden import mark_hidden_lxml, mark_hidden_soup
from mcp_server.processors._html_images import worth_keeping
from mcp_server.processors._html_main import (
    JS_SHELL_HINT,
    MIN_MAIN_SHARE,
    MIN_MAIN_WORDS,
    WHOLE_PAGE_SHARE,
    MainContent,
    PageFacts,
    extract_main,
    page_facts,
    page_metadata,
    parse_page,
)
from mcp_server.processors._locations import heading_locations
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.encoding import decode_bytes, decode_sample
from mcp_server.processors.formats import Chunking, Format, Likelihood
from mcp_server.processors.urls import extract_urls, url_type

__all__ = ["HtmlProcessor", "html_to_markdown", "looks_like_html"]

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]+)""", re.IGNORECASE)
_CHROME = ("script", "style", "nav", "noscript", "template", "aside", "svg", "iframe", "object", "embed")
_PAGE_CHROME = ("header", "footer")  # dropped unless they belong to an article or main
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_BLOCKS = frozenset(
    {
        "address", "article", "blockquote", "body", "caption", "center", "dd", "details", "dialog",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "form", "hr", "html", "li", "main",
        "ol", "p", "pre", "section", "summary", "ul",
    }
)
_MAX_SPAN = 100  # colspan/rowspan beyond this are hostile, not layout
_MAX_TABLE_CELLS = 100_000
_SPACES = re.compile(r"[ \t\r\n\f\v\u00a0]+")


# Documents that start like HTML (after whitespace/BOM/comments); case-insensitive.
_HTML_START = re.compile(
    r"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)[\s>]",
    re.IGNORECASE | re.DOTALL | re.ASCII,
)
# A fragment (``<h3 class=...>...</h3>``) is HTML when it opens with a common tag and closes one.
_TAGS = r"(?:p|div|span|a|h[1-6]|table|tr|td|ul|ol|li|meta|title|script|style|section|article|form)"
_HTML_FRAGMENT = re.compile(r"^\s*<" + _TAGS + r"[\s/>]", re.IGNORECASE | re.ASCII)
_HTML_CLOSE = re.compile(r"</" + _TAGS + r"\s*>", re.IGNORECASE | re.ASCII)
_SNIFF_BYTES = 8192


def looks_like_html(data: bytes) -> Likelihood | None:
    """Certain for a document that opens like HTML; likely for a fragment of common tags."""
    sample = decode_sample(data[:_SNIFF_BYTES])
    if _HTML_START.match(sample):
        return Likelihood.CERTAIN
    if _HTML_FRAGMENT.match(sample) and _HTML_CLOSE.search(sample):
        return Likelihood.LIKELY
    return None


class HtmlProcessor:
    format: ClassVar[Format] = Format(
        doc_type="html",
        description="Web pages: the main content (trafilatura; the whole cleaned page on request or when the page "
        "is not an article), headings, lists and tables as Markdown, images' alt text, title/authors/date "
        "metadata; nested deeper than 256 elements is refused",
        extensions=(".html", ".htm", ".xhtml"),
        mime_types=("text/html", "application/xhtml+xml"),
        text=True,
        looks_like=looks_like_html,
        generic=True,
        chunking=Chunking(size=1500, overlap=300, breaks=HEADINGS),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        if len(doc.data) > options.max_html_bytes:
            raise ProcessingError(
                f"the HTML page is {len(doc.data) / 1e6:.1f} MB; pages over {options.max_html_bytes / 1e6:g} MB "
                "are not parsed (the server setting max_html_bytes)",
                doc_type="html", limit=options.max_html_bytes,
            )
        text, encoding = decode_bytes(doc.data, doc.charset or _declared_charset(doc.data))
        tree, cut_short = parse_page(text)  # a page nested deeper than MAX_DEPTH is refused here
        if tree is None:  # nothing to parse (an empty page)
            return _whole_page(text, encoding, {}, {"extraction": "full"}, doc)
        page = page_metadata(tree)
        facts = page_facts(tree, cut_short)
        if facts.javascript_shell:  # said in either view: there is nothing else to read
            page.update(javascript_required=True, hint=JS_SHELL_HINT.format(words=facts.words))
        if options.html_view == "full" or facts.javascript_shell:
            return _whole_page(text, encoding, page, {"extraction": "full"}, doc)
        mark_hidden_lxml(tree, doc.style_sheets, doc.style_sheets_complete)  # what the extractor keeps stays marked
        links = _tree_links(tree)  # before the extractor changes the tree
        main = None if cut_short else extract_main(tree, page.get("canonical_url", ""))
        reason = _not_an_article(facts, main)
        if reason or main is None:
            return _whole_page(text, encoding, page, {"extraction": "full", "extraction_reason": reason}, doc)
        content, headings, tables = html_to_markdown(_soup(main.html))
        return _document(content, headings, tables, links, encoding, page, {"extraction": "main"})


def _not_an_article(facts: PageFacts, main: MainContent | None) -> str:
    """Why the whole page is read instead of the main content; empty when the main content is."""
    if facts.cut_short:
        return "the page has a text too long for the main-content extractor's parser"
    if main is None or main.words < MIN_MAIN_WORDS:
        return f"no article found: the main content has {main.words if main else 0} words"
    if main.dump:
        return "no article found: the page is not laid out as one"
    share = main.words / max(facts.words, 1)
    if share < MIN_MAIN_SHARE:
        return f"not an article: the main content is {share:.0%} of the page"
    if share >= WHOLE_PAGE_SHARE:
        return "the main content is the whole page"
    return ""


def _soup(text: str) -> BeautifulSoup:
    with warnings.catch_warnings():
        # XHTML served as HTML (example-10k-1p.html) is still best read by the HTML parser.
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        return BeautifulSoup(text, "lxml")


def _whole_page(text: str, encoding: str, page: dict[str, Any], how: dict[str, Any],
                doc: DocumentInput) -> ProcessedDocument:
    """The whole cleaned page (the reading before main-content extraction), title on top."""
    soup = _soup(text)
    mark_hidden_soup(soup, doc.style_sheets, doc.style_sheets_complete)
    title = _title(soup)
    links = _links(soup)
    content, headings, tables = html_to_markdown(soup, title=title)
    if title:
        page = {"title": title, **page}
    return _document(content, headings, tables, links, encoding, page, how)


def _document(
    content: str, headings: list[tuple[int, int, str]], tables: tuple[ExtractedTable, ...],
    links: list[tuple[str, str]], encoding: str, page: dict[str, Any], how: dict[str, Any],
) -> ProcessedDocument:
    metadata = {"encoding": encoding, "char_count": len(content), "table_count": len(tables), **page,
                **{name: value for name, value in how.items() if value}}
    return ProcessedDocument(
        content=content,
        doc_type="html",
        metadata=metadata,
        tables=tables,
        extracted_urls=_merge_urls(extract_urls(content), links),
        locations=heading_locations(content, headings),
    )


def html_to_markdown(
    soup: BeautifulSoup, *, title: str = ""
) -> tuple[str, list[tuple[int, int, str]], tuple[ExtractedTable, ...]]:
    """``(content, headings as (offset, level, title), tables)`` of a parsed page."""
    _strip_chrome(soup)
    writer = _Writer()
    if title:
        writer.heading(1, title)
    writer.walk(soup)
    return writer.result()


class _Writer:
    """Collects Markdown blocks while walking the tree with an explicit stack."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.length = 0  # characters of "\n\n".join(blocks) so far
        self.inline: list[str] = []
        self.prefix = ""  # "- " of the list item whose text comes next
        self.list_depth = 0
        self.headings: list[tuple[int, int, str]] = []
        self.tables: list[ExtractedTable] = []
        self.images: set[str] = set()  # alt texts written already

    def walk(self, root: Tag) -> None:
        stack: list[tuple[PageElement, bool]] = [(root, False)]
        while stack:
            node, leaving = stack.pop()
            if isinstance(node, NavigableString):
                if not isinstance(node, (Comment, Doctype, ProcessingInstruction)):
                    self.inline.append(str(node))
                continue
            if not isinstance(node, Tag):
                continue
            name = node.name
            if leaving:
                self.flush()
                if name in ("ul", "ol"):
                    self.list_depth -= 1
                continue
            if name in _HEADINGS:
                self.heading(_HEADINGS[name], _text_of(node))
                continue
            if name == "table":
                self.table(node)
                continue
            if name == "br":
                self.inline.append("\n")
                continue
            if name == "img":
                self.image(node)
                continue
            if name == "pre":
                self.flush()
                inner = node.find("pre")  # trafilatura writes a code block as <pre> in an indented <pre>
                self.block((inner if isinstance(inner, Tag) else node).get_text().strip("\n"))
                continue
            if name in _BLOCKS:
                self.flush()
                if name in ("ul", "ol"):
                    self.list_depth += 1
                elif name == "li":
                    self.prefix = "  " * max(self.list_depth - 1, 0) + "- "
                stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.contents))
        self.flush()

    def image(self, node: Tag) -> None:
        """An image as its alt text, inline where it stands, once per page."""
        alt = _SPACES.sub(" ", str(node.get("alt") or "")).strip()
        if worth_keeping(alt) and alt.casefold() not in self.images:
            self.images.add(alt.casefold())
            self.inline.append(f" [Image: {alt}] ")

    def flush(self) -> None:
        lines = [_SPACES.sub(" ", part).strip() for part in "".join(self.inline).split("\n")]
        self.inline.clear()
        text = "\n".join(line for line in lines if line)
        if text:
            self.block(self.prefix + text)
            self.prefix = ""

    def block(self, text: str) -> None:
        if not text:
            return
        if self.blocks:
            self.length += 2
        self.blocks.append(text)
        self.length += len(text)

    def heading(self, level: int, text: str) -> None:
        self.flush()
        if text:
            offset = self.length + (2 if self.blocks else 0)
            self.headings.append((offset, level, text))
            self.block(heading_line(level, text))

    def table(self, node: Tag) -> None:
        self.flush()
        markdown = _table_markdown(node)
        if markdown:
            path = [name for _, _, name in self.headings[-1:]]
            self.tables.append(
                ExtractedTable(
                    content=markdown,
                    location=f"table {len(self.tables) + 1}" + (f" under '{path[0]}'" if path else ""),
                    metadata={"rows": markdown.count("\n") - 0, "source": "html"},
                )
            )
            self.block(markdown)

    def result(self) -> tuple[str, list[tuple[int, int, str]], tuple[ExtractedTable, ...]]:
        return "\n\n".join(self.blocks), self.headings, tuple(self.tables)


def _table_markdown(table: Tag) -> str:
    """A rectangular Markdown table; rowspan/colspan cells repeat their text across the span."""
    rows = [tr for tr in table.find_all("tr") if tr.find_parent("table") is table]
    grid: dict[tuple[int, int], str] = {}
    width = 0
    for r, tr in enumerate(rows):
        c = 0
        for cell in tr.find_all(("td", "th"), recursive=False):
            while (r, c) in grid:
                c += 1
            text = _text_of(cell).replace("|", "\\|")
            rowspan, colspan = _span(cell, "rowspan"), _span(cell, "colspan")
            for dr in range(rowspan):
                for dc in range(colspan):
                    if len(grid) < _MAX_TABLE_CELLS:
                        grid[(r + dr, c + dc)] = text
            c += colspan
            width = max(width, c)
    height = max((r for r, _ in grid), default=-1) + 1
    if not grid or width == 0:
        return ""
    lines = []
    for r in range(height):
        cells = [grid.get((r, c), "") for c in range(width)]
        lines.append("| " + " | ".join(cells) + " |")
        if r == 0:
            lines.append("|" + "---|" * width)
    return "\n".join(lines)


def _span(cell: Tag, attribute: str) -> int:
    try:
        value = int(str(cell.get(attribute) or "1").strip())
    except ValueError:
        return 1
    return min(max(value, 1), _MAX_SPAN)


def _text_of(node: Tag) -> str:
    return _SPACES.sub(" ", node.get_text(" ")).strip()


def _strip_chrome(soup: BeautifulSoup) -> None:
    for tag in soup.find_all(_CHROME):
        tag.decompose()
    for tag in soup.find_all(_PAGE_CHROME):
        if not tag.find_parent(("article", "main")):
            tag.decompose()
    for tag in soup.find_all(True, attrs={"role": "navigation"}):
        tag.decompose()
    if soup.head is not None:
        soup.head.decompose()  # the title was read already; meta/link carry no text


def _title(soup: BeautifulSoup) -> str:
    tag = soup.find("title")
    return _text_of(tag) if isinstance(tag, Tag) else ""


def _links(soup: BeautifulSoup) -> list[tuple[str, str]]:
    """``(href, link text)`` of absolute http(s) links, before the chrome is removed."""
    found = []
    for anchor in soup.find_all("a", href=True):
        href = str(anchor["href"]).strip()
        if href.lower().startswith(("http://", "https://")):
            found.append((href, _text_of(anchor)))
    return found


def _tree_links(tree: Any) -> list[tuple[str, str]]:
    """``_links`` on an lxml tree."""
    found = []
    for anchor in tree.iter("a"):
        href = str(anchor.get("href") or "").strip()
        if href.lower().startswith(("http://", "https://")):
            found.append((href, _SPACES.sub(" ", " ".join(anchor.itertext())).strip()))
    return found


def _merge_urls(
    from_text: tuple[ExtractedURL, ...], links: list[tuple[str, str]]
) -> tuple[ExtractedURL, ...]:
    seen = {url.url for url in from_text}
    merged = list(from_text)
    for href, text in links:
        if href not in seen and len(merged) < 1000:
            seen.add(href)
            merged.append(
                ExtractedURL(url=href, context=text[:200], source_location="link", url_type=url_type(href))
            )
    return tuple(merged)


def _declared_charset(data: bytes) -> str | None:
    match = _META_CHARSET.search(data[:4096])
    return match.group(1).decode("ascii", "ignore") if match else None
