"""Images' alt text in a web page's main content, where the article's own images stood.

trafilatura's own image output (``include_images``) also lets figure captions, credits and
teaser thumbnails into the text: on the dev pages precision fell from 0.951 to 0.921 with their
alt text (bench/README.md). So the extractor reads the page without images, and each image of
the page is put back beside the text it stood next to, only when that text is in the main
content: an image between two kept paragraphs is the article's, one beside a menu is not. The
text next to an image is looked up in one XPath pass over the page in document order (no
per-image search), before the extractor changes the tree.

An image's alt text is kept when it labels the image (``worth_keeping``), once, and not when a
paragraph or heading of the text already starts with it (a caption or the headline repeating it).
An image that is a link to another page is that link's label, not a picture of the article: the
author's mugshot, share icons, teaser thumbnails, a newsletter or advertising banner (on the dev
pages, 21 of the 39 images written were links, none the article's own); a link to the picture's
own file (its full size) or to an anchor on the page (a gallery) keeps it.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass
from typing import Any

from lxml import etree

__all__ = ["ImagePlace", "image_places", "put_images_back", "worth_keeping"]

_MAX_IMAGES = 200  # a gallery page beyond this keeps the first ones; the lookup stays linear
_MAX_STEPS = 50  # texts looked at on each side: a figure wrapping a whole page anchors nothing
_MIN_ALT_WORDS = 2
# Longer alt text is the photo's caption copied into it ("In this photo issued by ITV, ..."): captions
# stay out of the main content like the extractor's own figure captions (with them, dev precision 0.931).
_MAX_ALT_WORDS = 8
_MIN_ANCHOR_CHARS = 15  # text shorter than this ("Share", "1", "Related") places nothing: too common
_PICTURE_FILE = re.compile(r"\.(?:jpe?g|png|gif|webp|avif|bmp|tiff?|svg)(?:[?#]|$)", re.IGNORECASE)
_HOLDERS = ("figure", "picture")  # the image's caption and sources live inside; the anchor is outside
_ANY_IMAGE = etree.XPath("boolean(//body//img[normalize-space(@alt)])")
# Images with alt text and the visible text around them, in document order.
_IMAGES_AND_TEXT = etree.XPath(
    "//body//img[normalize-space(@alt)] | //body//text()[normalize-space()]"
    "[not(ancestor::script or ancestor::style or ancestor::noscript or ancestor::template)]"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class ImagePlace:
    alt: str
    after: str  # the text just before the image (the image goes after it)
    before: str  # the text just after the image (the image goes before it)


def normalized(text: str) -> str:
    return " ".join(text.split())


def worth_keeping(alt: str) -> bool:
    """A label of the image: two words or more (a single token is mostly a file name, ``IMG_2041``,
    or a placeholder) and no longer than a caption (news sites copy the caption into it)."""
    return _MIN_ALT_WORDS <= len(alt.split()) <= _MAX_ALT_WORDS


def image_places(tree: Any) -> list[ImagePlace]:
    """Every image with alt text worth keeping, with the text on either side of it."""
    if not _ANY_IMAGE(tree):  # most of the cost is the text lookup: none without an image to place
        return []
    nodes = _IMAGES_AND_TEXT(tree)
    places: list[ImagePlace] = []
    for index, node in enumerate(nodes):
        if isinstance(node, str) or len(places) >= _MAX_IMAGES:
            continue
        alt = normalized(str(node.get("alt") or ""))
        if not worth_keeping(alt) or _links_elsewhere(node):
            continue
        holder = _holder(node)
        places.append(ImagePlace(alt=alt, after=_nearest_text(nodes, index, -1, holder),
                                 before=_nearest_text(nodes, index, 1, holder)))
    return places


def _links_elsewhere(image: Any) -> bool:
    """The image is (part of) a link to another page: not to a picture file, nor an anchor or script
    on the same page (a gallery's or lightbox's zoom)."""
    link = next(image.iterancestors("a"), None)
    href = str(link.get("href") or "").strip() if link is not None else ""
    return bool(href) and not href.startswith(("#", "javascript:")) and not _PICTURE_FILE.search(href)


def _holder(image: Any) -> Any:
    """The outermost figure or picture around the image, else the image itself."""
    holder = image
    for ancestor in image.iterancestors(*_HOLDERS):
        holder = ancestor
    return holder


def _nearest_text(nodes: list[Any], start: int, step: int, holder: Any) -> str:
    """The first text on one side of the image outside its figure (its caption is no anchor); a short
    one ("Related", "Share") anchors nothing rather than letting a teaser reach past it to the article."""
    for index in range(start + step, start + step * (_MAX_STEPS + 1), step):
        if not 0 <= index < len(nodes):
            break
        node = nodes[index]
        if isinstance(node, str) and not _inside(node, holder):
            return normalized(node)
    return ""


def _inside(text: Any, holder: Any) -> bool:
    parent = text.getparent()
    if parent is None:
        return False
    if parent is holder:
        return not text.is_tail  # the holder's tail is the text after it
    return any(ancestor is holder for ancestor in parent.iterancestors())


def put_images_back(body: Any, places: list[ImagePlace]) -> int:
    """Insert ``<p><img alt></p>`` into the extractor's output (its ``<body>``) beside the kept text
    each image stood next to; returns how many were put back."""
    blocks = list(body)
    texts = [normalized(block.text_content() or "") for block in blocks]
    starts = [text.casefold() for text in texts]
    joined = "\n".join(texts)  # one search per anchor; anchors hold no newline, so never span two blocks
    offsets = list(itertools.accumulate((len(text) + 1 for text in texts[:-1]), initial=0))
    before: dict[int, list[str]] = {}
    after: dict[int, list[str]] = {}
    kept: set[str] = set()
    for place in places:
        key = place.alt.casefold()
        if key in kept or any(text.startswith(key) for text in starts):  # repeated, or a caption is
            continue
        where = _block_with(joined, offsets, place.before)
        if where is not None:
            before.setdefault(where, []).append(place.alt)
        else:
            where = _block_with(joined, offsets, place.after)
            if where is None:
                continue
            after.setdefault(where, []).append(place.alt)
        kept.add(key)
    for where, block in enumerate(blocks):
        for alt in before.get(where, ()):
            block.addprevious(_image_paragraph(alt))
        for alt in reversed(after.get(where, ())):
            block.addnext(_image_paragraph(alt))
    return len(kept)


def _block_with(joined: str, offsets: list[int], anchor: str) -> int | None:
    """The first block whose text holds the anchor."""
    if len(anchor) < _MIN_ANCHOR_CHARS:
        return None
    found = joined.find(anchor)
    return None if found < 0 else bisect.bisect_right(offsets, found) - 1


def _image_paragraph(alt: str) -> Any:
    paragraph = etree.Element("p")
    etree.SubElement(paragraph, "img", alt=alt)
    return paragraph
