"""Teasers the extractor kept in a web page's main content: blocks that are links to the site's other pages.

A paragraph, list item or heading whose text is nearly all link text (or that sits inside a link), every
link pointing to the same site (a relative link, an anchor on the page, or the page's own host), is the
site talking about itself: "Related: ...", "READ MORE: ...", "DON'T MISS" lists, a tag, the next
articles' headlines, the headline linking to its own page. The article's own links are either inside
a sentence (a small share of its text) or go elsewhere (its sources, a shop, a paper): those stay. A
list whose every item opens with a link to the site's own pages is a list of its other articles,
each with a blurb, even where the blurb outweighs the link. On the dev pages (bench/README.md) the
blocks cut were 19 teasers and 6 short lines of the articles ("Pro tip: Get more meal ideas here",
"European Space Agency"); the lists cut, 7, none of the articles' own.

The page's host comes from its canonical URL (the server is not told where the page came from, and
a page read from a file has no address); without one only relative links count as the site's own.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from lxml import etree

__all__ = ["drop_site_teasers"]

# Link text share above which a block is a link rather than text with links in it: the dev pages'
# teasers are 0.86-1.0 link text, the article sentences with links in them 0.5-0.7.
_LINK_SHARE = 0.8
_BLOCKS = ("p", "li", "h1", "h2", "h3", "h4", "h5", "h6")
_LISTS = ("ul", "ol")
_WORD = re.compile(r"\w+")
# Two items or more: a single "Related: ..." item is judged as a block like any other.
_MIN_LIST_ITEMS = 2
_OPENING_LINK = etree.XPath("(.//text()[normalize-space()])[1]/ancestor::a[1]")  # the link the item's text opens in


def drop_site_teasers(body: Any, page_url: str, *, min_words_left: int) -> int:
    """Remove from the extractor's output (its ``<body>``) every block that is a link to the page's own
    site, unless fewer than ``min_words_left`` words would be left (then the page is a list of links,
    not an article with teasers: kept as the extractor found it); returns how many were removed."""
    host = _host(page_url)
    teasers: list[Any] = []
    for block in body.iter(*_BLOCKS, *_LISTS):  # document order: a block before the blocks inside it
        if any(ancestor in teasers for ancestor in block.iterancestors(*_BLOCKS, *_LISTS)):
            continue
        if _teaser_list(block, host) if block.tag in _LISTS else _teaser(block, host):
            teasers.append(block)
    cut = sum(len(_WORD.findall(block.text_content())) for block in teasers)
    if not teasers or len(_WORD.findall(body.text_content())) - cut < min_words_left:
        return 0
    for block in teasers:
        block.drop_tree()
    for listing in list(body.iter(*_LISTS)):
        if listing.getparent() is not None and not _chars(listing.text_content()):
            listing.drop_tree()
    return len(teasers)


def _teaser(block: Any, host: str) -> bool:
    text = _chars(block.text_content())
    around = next(block.iterancestors("a"), None)  # a heading inside a link: all of it is link text
    links = [around] if around is not None else list(block.iter("a"))
    if not links:
        return False
    linked = text if around is not None else sum(_chars(link.text_content()) for link in links)
    return text > 0 and linked >= _LINK_SHARE * text and all(_same_site(link.get("href"), host) for link in links)


def _teaser_list(listing: Any, host: str) -> bool:
    """A list whose every item opens with a link to the site's own pages: the other articles, each
    with its blurb (its link text can be under half of the item)."""
    items = [child for child in listing if child.tag == "li"]
    if len(items) < _MIN_LIST_ITEMS:
        return False
    for item in items:
        opening = _OPENING_LINK(item)
        if not opening or not _same_site(opening[0].get("href"), host):
            return False
    return True


def _chars(text: str | None) -> int:
    return sum(len(word) for word in _WORD.findall(text or ""))


def _same_site(href: str | None, host: str) -> bool:
    href = (href or "").strip()
    if not href:
        return False
    if href.startswith(("#", "javascript:")):
        return True
    parts = urlsplit(href)
    if parts.scheme and parts.scheme not in ("http", "https"):
        return False  # mailto:, tel:, an app's scheme: not a page of the site
    if not parts.netloc:
        return True  # relative: the site's own
    return bool(host) and _same_host(_bare(parts.hostname or ""), host)


def _host(url: str) -> str:
    try:
        return _bare(urlsplit(url.strip()).hostname or "")
    except ValueError:
        return ""


def _bare(host: str) -> str:
    return host.lower().removeprefix("www.")


def _same_host(one: str, other: str) -> bool:
    return one == other or one.endswith("." + other) or other.endswith("." + one)
