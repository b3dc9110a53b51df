"""The importance score and content type of a chunk's text (fields of every ``Chunk``)."""

from __future__ import annotations

import re

from mcp_server.core.markup import HEADING_LINE, MARKER_LINE

__all__ = ["content_type", "importance_score"]

_SCORED_LEVELS = 3  # headings "#" to "###" score; deeper levels do not
# Matches exactly where \d+\.?\d*% would: a digit, or a digit and a dot, before a "%".
_NUMBER = re.compile(r"\d\.?%|[$€]\d")
_KEYWORDS = "important|key|critical|summary|conclusion|result|finding|recommendation"
_KEYWORD_ANYWHERE = re.compile(_KEYWORDS)  # a cheap pre-check; \b makes the full search slow
_KEYWORD = re.compile(rf"\b(?:{_KEYWORDS})s?\b")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$|\t")
_BULLET = re.compile(r"^\s*(?:- |• |\* )")
# a table row holds a pipe or a tab, a bullet one of these marks: a text without any has neither
_LINE_MARKS = ("|", "\t", "- ", "* ", "• ")


def importance_score(text: str) -> float:
    """Base 0.5; heading +0.2; numbers or currency +0.15; keyword +0.1; short -0.2."""
    score = 0.5
    if _has_heading(text) or any(_is_caps_line(line) for line in text.splitlines()):
        score += 0.2
    if ("%" in text or "$" in text or "€" in text) and _NUMBER.search(text):
        score += 0.15
    lowered = text.lower()
    if _KEYWORD_ANYWHERE.search(lowered) and _KEYWORD.search(lowered):
        score += 0.1
    if len(text) < 50:
        score -= 0.2
    return round(min(max(score, 0.0), 1.0), 2)


def content_type(text: str) -> str:
    """``table`` | ``list`` | ``heading`` | ``text``.

    The rules read per line, so one stray pipe or dash does not relabel prose: ``table``
    when at least half the lines are Markdown table rows or tab-separated, ``list`` when at
    least half are bullets, ``heading`` when the chunk opens with a Markdown heading. Marker
    lines (``--- Page 3 ---``) do not count.
    """
    if any(mark in text for mark in _LINE_MARKS):
        return _counted_type(text)
    # no line can be a table row or a bullet: the first line that counts decides (~10x faster on prose)
    for line in text.splitlines():
        if line.strip() and not MARKER_LINE.match(line):
            return "heading" if HEADING_LINE.match(line) else "text"
    return "text"


def _counted_type(text: str) -> str:
    """``content_type`` by counting the table rows and bullets among every line."""
    lines = [line for line in text.splitlines() if line.strip() and not MARKER_LINE.match(line)]
    if not lines:
        return "text"
    if 2 * sum(1 for line in lines if _TABLE_ROW.search(line)) >= len(lines):
        return "table"
    if 2 * sum(1 for line in lines if _BULLET.match(line)) >= len(lines):
        return "list"
    if HEADING_LINE.match(lines[0]):
        return "heading"
    return "text"


def _has_heading(text: str) -> bool:
    # "#" first: most chunks have none, and the full pattern is slower than a substring test.
    return "#" in text and any(len(m["hashes"]) <= _SCORED_LEVELS for m in HEADING_LINE.finditer(text))


def _is_caps_line(line: str) -> bool:
    """An ALL-CAPS line with a few letters (a title), not a table row or a lone acronym."""
    # isupper() first: it is C-fast and false for nearly every line.
    if not line.isupper() or line.lstrip().startswith("|"):
        return False
    return sum(1 for char in line if char.isalpha()) >= 4
