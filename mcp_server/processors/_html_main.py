"""A web page's main content (the article, without the site around it) and its metadata.

trafilatura picks the main content (chosen by measurement on real news and blog pages:
``bench/web_extraction.py``, bench/README.md); its HTML output goes through the same Markdown
writer as the whole page, so headings, lists, tables and code read alike in both views; the
site's own teasers the extractor lets through are cut from it (``_html_teasers.py``). Pages
that are not articles keep the whole cleaned page: what "too little" is was measured on the
dev pages and the test corpus's HTML files (the constants below). A page whose text is only
put there by JavaScript is recognised and said to be one.

lxml parses (libxml2: no DTD, no network, no entity definitions from an internal subset). A page
nested deeper than libxml2's limit, ``MAX_DEPTH`` elements, is refused with a clear error: the
parser stops there (the rest of the page would be lost), the real pages measured nest 15-35 deep
(bench/README.md), and a 100,000-deep page is a parser bomb, not a document. The limit costs
nothing on a normal page: the parser's error log says when it was reached, and only then is the
page's depth counted for the message.
"""

from __future__ import annotations

import itertools
import logging
import re
from dataclasses import dataclass
from typing import Any

import lxml.html
from lxml import etree

from mcp_server.core.errors import ProcessingError
from mcp_server.processors._html_images import image_places, put_images_back
from mcp_server.processors._html_teasers import drop_site_teasers

__all__ = [
    "JS_SHELL_HINT", "MAX_DEPTH", "MIN_MAIN_SHARE", "MIN_MAIN_WORDS", "WHOLE_PAGE_SHARE", "MainContent", "PageFacts",
    "extract_main", "page_facts", "page_metadata", "parse_page",
]

log = logging.getLogger(__name__)
# trafilatura logs every page it finds little in at WARNING; that is our decision to make.
logging.getLogger("trafilatura").setLevel(logging.ERROR)
logging.getLogger("htmldate").setLevel(logging.ERROR)

# Below this many words in the main content, the extractor found no article (the dev articles have
# 66 words and more; what it keeps of the test corpus's small non-article pages: 12 and 24).
MIN_MAIN_WORDS = 25
# Main content under this share of the page's words: the extractor kept too little of a page
# that is not an article (dev articles: 0.11 and up; listings and indexes keep a few teasers).
MIN_MAIN_SHARE = 0.05
# Main content at or above this share of the page: there is no site around it to drop, and the
# whole-page rendering keeps more structure (nested tables, the title heading, text beside tables).
WHOLE_PAGE_SHARE = 0.95
# A page with fewer words than this whose markup is a script application: a JavaScript shell.
JS_SHELL_MAX_WORDS = 40
JS_SHELL_HINT = (
    "this page renders its content with JavaScript, which the server does not run: its HTML holds "
    "only {words} words of text. Look for a server-rendered version of the page, its RSS/Atom feed, "
    "an API or a PDF of the same content."
)

# libxml2's depth limit without XML_PARSE_HUGE (elements, <html> being 1); browsers cap near it too
# (Blink re-parents elements past 512). The 79 real pages of the shared corpus nest 33 deep at most.
MAX_DEPTH = 256
# A tag, never reaching past the next "<": linear on hostile text ("<a<a<a..." with no ">").
_TAG = re.compile(r"<(/?)([A-Za-z][^\s/<>]*)[^<>]*>")
_MAX_TAGS_COUNTED = 250_000  # the depth in the message is "at least" past this many tags (~0.1-0.4 s)
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr"})

_DUMP_LINES = 5
# Script that outweighs the text: this much inline, or this many external scripts on a nearly empty page.
_SHELL_SCRIPT_CHARS = 5000
_SHELL_SCRIPTS = 3
_SHELL_SCRIPTS_MAX_WORDS = 15
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>")
_MAX_AUTHOR_WORDS = 6  # a longer "author" is a byline heuristic that caught a paragraph
_WORD = re.compile(r"\w+")
_CHROME_ANCESTOR = (
    "ancestor::script or ancestor::style or ancestor::noscript or ancestor::template or ancestor::nav "
    "or ancestor::aside or ancestor::svg or ancestor::iframe or ancestor::*[@role='navigation']"
)
_VISIBLE_TEXT = etree.XPath(f"//body//text()[not({_CHROME_ANCESTOR})]")
_APP_ROOTS = etree.XPath(
    "//body//*[@id='root' or @id='app' or @id='__next' or @id='__nuxt' or @id='___gatsby' or @ng-app"
    " or @data-reactroot or self::app-root]"
)
_NOSCRIPT_JS = re.compile(r"javascript", re.IGNORECASE)
_METADATA_FIELDS = (("title", "title"), ("sitename", "site_name"), ("date", "date"), ("url", "canonical_url"),
                    ("description", "description"), ("pagetype", "page_type"))


@dataclass(frozen=True, kw_only=True, slots=True)
class PageFacts:
    """What is known of the whole page before any extraction."""

    words: int  # of the text a reader sees (scripts, styles, navigation and asides left out)
    cut_short: bool  # a parser limit other than depth cut the tree short
    javascript_shell: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class MainContent:
    html: str  # the main content as simple HTML (trafilatura's output)
    words: int
    dump: bool  # one paragraph of every line of the page: trafilatura's last resort, not an article


def parse_page(text: str) -> tuple[Any, bool]:
    """``(lxml tree, cut short by another of the parser's limits)``; the tree is ``None`` for an empty
    page; a page nested deeper than ``MAX_DEPTH`` is a ``ProcessingError`` (``reason="too_deep"``)."""
    parser = lxml.html.HTMLParser(remove_comments=True, remove_pis=True, no_network=True)
    try:
        # lxml refuses a str that declares its encoding (XHTML's <?xml ... encoding=...?>): decoded already
        tree = lxml.html.document_fromstring(_XML_DECLARATION.sub("", text, count=1), parser=parser)
    except (etree.ParserError, ValueError):
        tree = None
    limits = [entry.message for entry in parser.error_log if entry.type_name == "ERR_RESOURCE_LIMIT"]
    if any("depth" in message for message in limits):
        depth, counted_all = tag_depth(text)
        depth = max(depth, MAX_DEPTH + 1)
        raise ProcessingError(
            f"the HTML page nests its tags {'' if counted_all else 'at least '}{depth:,} deep; pages nested deeper "
            f"than {MAX_DEPTH} elements are not read (the HTML parser's limit; real pages nest 15-35 deep)",
            doc_type="html", reason="too_deep", depth=depth, max_depth=MAX_DEPTH,
        )
    # The other limit: a text node over 10 MB ("Buffer size limit exceeded") loses the text after it.
    return tree, bool(limits)


def tag_depth(text: str) -> tuple[int, bool]:
    """``(how deep the page's tags open, every tag counted)``: start tags not closed yet, void
    elements aside; the depth the message reports, counted only for a page the parser refused."""
    depth = deepest = counted = 0
    for match in itertools.islice(_TAG.finditer(text), _MAX_TAGS_COUNTED):
        counted += 1
        if match.group(1):
            depth = max(depth - 1, 0)
        elif match.group(2).lower() not in _VOID and not match.group(0).endswith("/>"):
            depth += 1
            deepest = max(deepest, depth)
    return deepest, counted < _MAX_TAGS_COUNTED


def page_facts(tree: Any, cut_short: bool) -> PageFacts:
    text = " ".join(str(part) for part in _VISIBLE_TEXT(tree))
    words = len(_WORD.findall(text))
    return PageFacts(words=words, cut_short=cut_short,
                     javascript_shell=words < JS_SHELL_MAX_WORDS and _script_application(tree, words))


def _script_application(tree: Any, words: int) -> bool:
    """Markup of a client-rendered application: an empty mount point, a noscript plea, or
    script that outweighs the text many times over."""
    if _APP_ROOTS(tree):
        return True
    if any(_NOSCRIPT_JS.search(node.text_content() or "") for node in tree.iter("noscript")):
        return True
    script_chars = sum(len(node.text or "") for node in tree.iter("script"))
    external = sum(1 for node in tree.iter("script") if node.get("src"))
    return script_chars > _SHELL_SCRIPT_CHARS or external >= _SHELL_SCRIPTS and words < _SHELL_SCRIPTS_MAX_WORDS


def page_metadata(tree: Any) -> dict[str, Any]:
    """Title, authors, date, site name, canonical URL, description and page type, where the page
    states them (meta tags, JSON-LD, bylines); the language its markup declares."""
    from trafilatura import extract_metadata  # here: the server process never parses (workers preload it)

    try:
        found = extract_metadata(tree, extensive=False)
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - a bug in the metadata heuristics must not cost the page its text
        log.warning("html.metadata_failed", exc_info=True)
        return {}
    metadata: dict[str, Any] = {}
    for source, name in _METADATA_FIELDS:
        value = getattr(found, source, None)
        if isinstance(value, str) and value.strip():
            metadata[name] = value.strip()
    if found.author:
        authors = [name.strip() for name in found.author.split(";") if name.strip()]
        if authors and all(len(name.split()) <= _MAX_AUTHOR_WORDS for name in authors):
            metadata["authors"] = authors
    language = tree.get("lang") or tree.get("xml:lang") or _content_language(tree)
    if language:
        metadata["language"] = language.strip()[:35]
    return metadata


def _content_language(tree: Any) -> str:
    for meta in tree.iter("meta"):
        if (meta.get("http-equiv") or "").lower() == "content-language":
            return str(meta.get("content") or "")
    return ""


def extract_main(tree: Any, page_url: str = "") -> MainContent | None:
    """The main content of a parsed page (the tree is changed), or ``None`` when none was found;
    ``page_url`` (its canonical address) tells the site's own links from others."""
    from trafilatura import extract

    places = image_places(tree)  # before the extractor changes the tree
    # Measured on the dev pages (bench/README.md): the comments section out (precision), the links in
    # (the link text stays in its paragraph: recall and precision), no images (they pull captions in:
    # the article's images are put back after, by the text they stood beside).
    try:
        html = extract(tree, output_format="html", include_comments=False, include_tables=True,
                       include_formatting=False, include_links=True, include_images=False)
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - the extractor failing leaves the whole page, which still reads
        log.warning("html.main_content_failed", exc_info=True)
        return None
    if not html:
        return None
    page = lxml.html.document_fromstring(html)
    body = page.body
    blocks = list(body)
    dump = len(blocks) == 1 and blocks[0].tag == "p" and (blocks[0].text_content() or "").count("\n") >= _DUMP_LINES
    # What the extractor found, before any cut or alt text: it decides main content or whole page.
    words = len(_WORD.findall(body.text_content()))
    teasers = drop_site_teasers(body, page_url, min_words_left=MIN_MAIN_WORDS)
    if (places and put_images_back(body, places)) or teasers:
        html = lxml.html.tostring(page, encoding="unicode")
    return MainContent(html=html, words=words, dump=dump)
