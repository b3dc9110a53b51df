"""Reading a document's text in token-budgeted windows: stateless cursors, the pages filter, the cut.

Pure and synchronous (the caller runs ``read_window`` off the event loop). A cursor carries the
content key (a hash of the bytes), the offset to go on from and the pages filter, with a
checksum: a cursor of other bytes is *stale* and an altered one does not pass its checksum; both
are VALIDATION_ERRORs naming ``cursor``. The checksum is not a secret MAC: a forged cursor can only
name an offset of a document the caller may read anyway, and offsets are checked before use.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcp_server.chunking import TokenCounter, infer_locations, special_tokens
from mcp_server.core.errors import ValidationError
from mcp_server.core.models import Location, ProcessedDocument
from mcp_server.pipeline.research import PageRanges

__all__ = [
    "CHAPTER_TYPES", "CHARS_PER_TOKEN_CAP", "PAGED_TYPES", "SHEET_TYPES", "SLIDE_TYPES", "Cursor", "canonical_pages",
    "locations_of", "read_window", "selection", "skip_space", "unit_spans",
]

CHARS_PER_TOKEN_CAP = 12  # a window holds at most this many characters per token of budget
FIRST_CHARS_PER_TOKEN = 5  # the first window tried (English prose and filings run ~4 per token)
SLIDE_TYPES = ("pptx", "ppt", "odp")
SHEET_TYPES = ("xlsx", "xls", "ods", "csv")
CHAPTER_TYPES = ("epub",)  # chapters in reading order, each under its own top heading
PAGED_TYPES = ("pdf", *SLIDE_TYPES, *SHEET_TYPES, *CHAPTER_TYPES)  # text with pages, slides, sheets or chapters

_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_LINE = re.compile(r"\n")
_SPACE = re.compile(r"\s")
_CURSOR_VERSION = "c1"
_CHECK_CHARS = 12


# --- cursors --------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, slots=True)
class Cursor:
    key: str  # the content key's first 32 hex characters
    offset: int
    pages: str  # the canonical pages filter, "" for none

    def encode(self) -> str:
        body = f"{_CURSOR_VERSION}|{self.key}|{self.offset}|{self.pages}"
        check = hashlib.sha256(f"rag-read-cursor|{body}".encode()).hexdigest()[:_CHECK_CHARS]
        return base64.urlsafe_b64encode(f"{body}|{check}".encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, value: str) -> Cursor:
        bad = ValidationError("argument 'cursor': not a cursor of read_document (malformed or altered); "
                              "read again without a cursor", argument="cursor")
        text = value.strip()
        if not text or len(text) > 400 or not re.fullmatch(r"[A-Za-z0-9_-]+", text):
            raise bad
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("ascii")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise bad from None
        parts = raw.split("|")
        if len(parts) != 5 or parts[0] != _CURSOR_VERSION:
            raise bad
        version, key, offset, pages, check = parts
        body = f"{version}|{key}|{offset}|{pages}"
        if hashlib.sha256(f"rag-read-cursor|{body}".encode()).hexdigest()[:_CHECK_CHARS] != check:
            raise bad
        if not re.fullmatch(r"[0-9a-f]{32}", key) or not re.fullmatch(r"0|[1-9][0-9]{0,11}", offset):
            raise bad
        return cls(key=key, offset=int(offset), pages=pages)


def canonical_pages(ranges: PageRanges) -> str:
    return ",".join(f"{lo}-{hi}" if hi > lo else str(lo) for lo, hi in ranges.ranges)


# --- the document's pages, slides, sheets or chapters --------------------------------------------------------
def locations_of(doc: ProcessedDocument) -> tuple[Location, ...]:
    return tuple(sorted(doc.locations, key=lambda loc: loc.start)) or infer_locations(doc.content, doc.doc_type)


def unit_spans(doc: ProcessedDocument, locations: Sequence[Location]) -> dict[int, list[tuple[int, int]]]:
    """Each page (PDF), slide (PPTX), sheet (XLSX/CSV, numbered in order) or chapter (EPUB, numbered in
    reading order; the title block before the first is in none) -> its spans of text."""
    spans: dict[int, list[tuple[int, int]]] = {}
    sheets: dict[str, int] = {}
    chapter: tuple[str, ...] = ()
    chapters = 0
    for loc in locations:
        if doc.doc_type == "pdf":
            unit = loc.page
        elif doc.doc_type in SLIDE_TYPES:
            unit = loc.slide
        elif doc.doc_type in CHAPTER_TYPES:
            if loc.heading_path[:1] and loc.heading_path[:1] != chapter:  # a chapter's locations share its title
                chapter, chapters = loc.heading_path[:1], chapters + 1
            unit = chapters if loc.heading_path else None
        elif loc.sheet is not None:
            unit = sheets.setdefault(loc.sheet, len(sheets) + 1)
        else:
            unit = None
        if unit is None or loc.end <= loc.start:
            continue
        own = spans.setdefault(unit, [])
        if own and loc.start <= own[-1][1]:
            own[-1] = (own[-1][0], max(own[-1][1], loc.end))
        else:
            own.append((loc.start, loc.end))
    return spans


def selection(doc: ProcessedDocument, locations: Sequence[Location], pages: PageRanges | None) -> list[tuple[int, int]]:
    """The spans of text a read covers, in order: the whole text, or the chosen units'."""
    if pages is None:
        return [(0, len(doc.content))] if doc.content else []
    if doc.doc_type not in PAGED_TYPES:
        raise ValidationError(f"argument 'pages': a {doc.doc_type.upper()} document has no pages, slides, sheets or "
                              "chapters; read it without pages", argument="pages")
    units = unit_spans(doc, locations)
    chosen = sorted(span for unit, spans in units.items() if unit in pages for span in spans)
    if not chosen:
        have = f"1-{max(units)}" if units else "none"
        raise ValidationError(f"argument 'pages' selects nothing: the document's pages, slides, sheets or chapters "
                              f"are {have}", argument="pages", available=have)
    merged: list[tuple[int, int]] = []
    for start, end in chosen:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


# --- one window -----------------------------------------------------------------------------------
def skip_space(content: str, spans: Sequence[tuple[int, int]], at: int) -> int | None:
    """The first non-space position at or after ``at`` within the spans; None at the end."""
    for start, end in spans:
        if end <= at:
            continue
        position = max(at, start)
        while position < end and content[position].isspace():
            position += 1
        if position < end:
            return position
    return None


def read_window(content: str, spans: Sequence[tuple[int, int]], at: int, budget: int, counter: TokenCounter,
                max_chars: int) -> tuple[str, int, int, int | None]:
    """(text, tokens, end, next start): the longest stretch from ``at`` that fits ``budget`` tokens,
    cut at a paragraph end if one fits, else a line end, else a word end, else inside a word.
    The stretch may cross from one span to the next (joined by a blank line)."""
    last_end = spans[-1][1] if spans else 0
    real_ends = {end for _, end in spans}
    # a first window of about what the budget holds, doubled while it fits whole: tokenizing the
    # whole character cap (12 per token) on every call would cost several times the reading
    chars = min(max_chars, budget * FIRST_CHARS_PER_TOKEN + 64)
    window: list[tuple[int, int]] = []

    def text_to(cut: int) -> str:
        return "\n\n".join(content[lo:min(hi, cut)] for lo, hi in window if lo < cut).strip()

    def tokens_to(cut: int) -> int:
        return counter.count_tokens([text_to(cut)])[0]

    while True:
        window = _window(spans, at, chars)
        window_end = window[-1][1] if window else at
        whole = tokens_to(window_end)
        if whole <= budget and window_end != last_end and window_end not in real_ends and chars < max_chars:
            chars = min(max_chars, chars * 2)
            continue
        break
    if whole <= budget and (window_end == last_end or window_end in real_ends):
        best: tuple[int, int] | None = (window_end, whole)
    else:
        best = None
        line_tokens = _line_prefix_tokens(content, window, counter)
        for pattern in (_PARAGRAPH, _LINE, _SPACE):
            cuts = _cuts(content, window, pattern, real_ends)
            if line_tokens is not None and pattern is not _SPACE:
                best = _largest_by_sums(cuts, line_tokens, tokens_to, budget)
            else:
                best = _largest_fitting(cuts, tokens_to, budget)
            if best is not None:
                break
        if best is None:  # one "word" longer than the budget: cut inside it
            lo, hi = window[0]
            best = _largest_fitting(list(range(lo + 1, hi + 1)), tokens_to, budget)
    cut, tokens = best if best is not None else (window[0][0] + 1, tokens_to(window[0][0] + 1))
    return text_to(cut), tokens, cut, skip_space(content, spans, cut)


def _window(spans: Sequence[tuple[int, int]], at: int, chars: int) -> list[tuple[int, int]]:
    """The spans' text from ``at`` on, ``chars`` characters at most."""
    window: list[tuple[int, int]] = []
    room = chars
    for start, end in spans:
        if end <= at or room <= 0:
            continue
        lo = max(start, at)
        hi = min(end, lo + room)
        window.append((lo, hi))
        room -= hi - lo
    return window


def _cuts(content: str, window: Sequence[tuple[int, int]], pattern: re.Pattern[str], real_ends: set[int]) -> list[int]:
    out: list[int] = []
    for lo, hi in window:
        out.extend(m.start() for m in pattern.finditer(content, lo, hi) if m.start() > lo)
        if hi in real_ends:
            out.append(hi)
    return sorted(set(out))


def _line_prefix_tokens(content: str, window: Sequence[tuple[int, int]],
                        counter: TokenCounter) -> dict[int, int] | None:
    """Line end -> tokens of the window's text up to there, from one batched count of its lines.
    Only for tokenizers that never join text across whitespace (WordPiece: MiniLM, BGE): a text's
    count is then the special tokens plus the sum over its lines, so every paragraph and line cut
    is priced at once instead of by a count per probe. None for other tokenizers."""
    if not getattr(counter, "splits_on_whitespace", False):
        return None
    ends: list[int] = []
    lines: list[str] = []
    for lo, hi in window:
        start = lo
        for m in _LINE.finditer(content, lo, hi):
            lines.append(content[start : m.start()])
            ends.append(m.start())
            start = m.start()
        lines.append(content[start:hi])
        ends.append(hi)
    counts = counter.count_tokens(lines)
    specials = special_tokens(counter)
    prefix: dict[int, int] = {}
    total = specials
    for end, count in zip(ends, counts, strict=True):
        total += count - specials
        prefix[end] = total
    return prefix


def _largest_by_sums(cuts: Sequence[int], prefix: dict[int, int], tokens_to: Callable[[int], int],
                     budget: int) -> tuple[int, int] | None:
    """The last cut whose summed count fits, checked with one real count (the sums are exact for
    these tokenizers; should one ever disagree, the binary search decides)."""
    fitting = [cut for cut in cuts if prefix.get(cut, budget + 1) <= budget]
    if not fitting:
        return None
    exact = tokens_to(fitting[-1])
    if exact <= budget:
        return fitting[-1], exact
    return _largest_fitting(cuts, tokens_to, budget)


def _largest_fitting(cuts: Sequence[int], tokens_to: Callable[[int], int], budget: int) -> tuple[int, int] | None:
    """Binary search: token counts grow with the cut (whitespace cuts of a whitespace-splitting
    tokenizer), so the last cut that fits is found in log2(len(cuts)) counts."""
    best: tuple[int, int] | None = None
    lo, hi = 0, len(cuts) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        count = tokens_to(cuts[mid])
        if count <= budget:
            best, lo = (cuts[mid], count), mid + 1
        else:
            hi = mid - 1
    return best
