"""The text contract between processors (writers) and chunking (readers).

Processors write structure into ``ProcessedDocument.content`` as lines of their own:
``--- Page N ---`` (PDF), ``--- Slide N ---`` (PPTX), ``=== Sheet: NAME ===`` (XLSX, CSV) and
ATX Markdown headings (``## Title``: DOCX, HTML, Markdown text). Chunking reads the same lines
back to find locations, break points and lines it must not cut, and ``title_line`` tells both
chunking and the dense units (``text/sentences.py``) which lines may title a table. Both sides use
this module, so a marker written is always a marker read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "HEADINGS",
    "HEADING_LINE",
    "MARKER_LINE",
    "PAGES",
    "PAGE_MARK",
    "PLAIN",
    "SHEETS",
    "SLIDES",
    "Breaks",
    "heading_line",
    "markdown_headings",
    "page_marker",
    "sheet_marker",
    "slide_marker",
    "title_line",
    "without_markers",
]

_PAGE, _SLIDE, _SHEET = "--- Page ", "--- Slide ", "=== Sheet: "
PAGE_MARK = _PAGE  # in every page marker line: a text without it has none (a test far cheaper than MARKER_LINE)
MAX_HEADING_LEVEL = 6


def page_marker(number: int) -> str:
    return f"{_PAGE}{number} ---"


def slide_marker(number: int) -> str:
    return f"{_SLIDE}{number} ---"


def sheet_marker(name: str) -> str:
    return f"{_SHEET}{name} ==="


def heading_line(level: int, title: str) -> str:
    """An ATX heading; levels beyond 6 are written as 6 (Markdown has no deeper level)."""
    return "#" * min(max(level, 1), MAX_HEADING_LEVEL) + " " + title


# A marker on a line of its own (surrounding blanks tolerated).
MARKER_LINE = re.compile(
    rf"^[ \t]*(?:{re.escape(_PAGE)}(?P<page>\d+) ---|{re.escape(_SLIDE)}(?P<slide>\d+) ---"
    rf"|{re.escape(_SHEET)}(?P<sheet>.*?) ===)[ \t]*\r?$",
    re.MULTILINE,
)


def without_markers(text: str) -> str:
    """``text`` without its marker lines (their line breaks stay)."""
    if _PAGE not in text and _SLIDE not in text and _SHEET not in text:  # no marker line: no pattern to run
        return text
    return MARKER_LINE.sub("", text)


# CommonMark ATX: up to 3 spaces of indent, 1-6 '#', a space, the title, an optional closing
# run of '#' after a space ("# C#" keeps its title "C#").
HEADING_LINE = re.compile(
    r"^[ \t]{0,3}(?P<hashes>#{1,6})[ \t]+(?P<title>\S.*?)(?:[ \t]+#+)?[ \t]*\r?$", re.MULTILINE
)


def markdown_headings(content: str) -> list[tuple[int, int, str]]:
    """``(offset, level, title)`` of every heading line in ``content``."""
    return [(m.start(), len(m["hashes"]), m["title"]) for m in HEADING_LINE.finditer(content)]


@dataclass(frozen=True, kw_only=True, slots=True)
class Breaks:
    """Where a format's structure lets the chunker cut, strongest first.

    ``separators`` start with a newline and contain whitespace (chunks are cut only at
    whitespace). ``hard`` ones (a subset) end a chunk with no overlap into the next.
    """

    separators: tuple[str, ...] = ()
    hard: tuple[str, ...] = ()


_HEADING_BREAKS = tuple(f"\n{heading_line(level, '')}" for level in (1, 2, 3))

PAGES = Breaks(separators=("\n" + _PAGE.rstrip(),))  # a passage may run on across a page break
SLIDES = Breaks(separators=("\n" + _SLIDE.rstrip(),), hard=("\n" + _SLIDE.rstrip(),))
SHEETS = Breaks(separators=("\n" + _SHEET.split(":")[0],), hard=("\n" + _SHEET.split(":")[0],))
HEADINGS = Breaks(separators=_HEADING_BREAKS, hard=_HEADING_BREAKS)
PLAIN = Breaks()


# A line of a table's title is at most this long (a longer line is prose that merely precedes the table).
TITLE_LINE_CHARS = 150
SENTENCE_WORDS = 5  # a line ending in . ! ? : with this many words is a sentence ("Ulta Beauty, Inc." is not)


def title_line(line: str) -> bool:
    """Whether ``line`` may belong to the title above a table: short, not a table row or marker,
    and not running text. A line that continues a sentence (lower-case start), is cut by
    hyphenation, or ends a sentence of several words ("... as shown below.") is prose."""
    stripped = line.strip()
    if not stripped or len(stripped) > TITLE_LINE_CHARS or stripped.startswith("|") or MARKER_LINE.fullmatch(line):
        return False
    if stripped[0].islower() or (stripped.endswith("-") and stripped[-2:-1].isalpha()):
        return False
    return not (stripped[-1] in ".!?:" and len(stripped.split()) >= SENTENCE_WORDS)
