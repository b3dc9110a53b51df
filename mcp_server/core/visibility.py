"""What a reader of a document cannot see: hidden-text marks and invisible code points.

Processors know, as they extract it, that a run of text is hidden from a reader (a ``hidden``
HTML element, a ``w:vanish`` run, PDF text in render mode 3, a hidden sheet). They wrap it with
``hidden(text, reason)``: two noncharacters (U+FDD0-U+FDEF, which Unicode sets aside for a
program's internal use) around the text, the first naming the reason. ``settle`` runs once on
every text the processors return (``processors/_visibility.py``): it removes the marks and the
invisible code points no reader sees (Unicode tag characters, zero-width characters inside words,
bidi overrides and isolates, runs of variation selectors) and says where they were, as ``TextFlag``
values, with the edits that map the old offsets to the new ones. A document that writes the noncharacters itself can
only mark more of its own text as hidden, never hide a mark.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_server.core.models import TextFlag

__all__ = [
    "HIDDEN_REASONS", "HiddenPolicy", "Settled", "clean_text", "hidden", "settle",
]

HiddenPolicy = Literal["flag", "drop", "keep"]

# One mark per reason: the order is the mark's code point, so new reasons go at the end.
HIDDEN_REASONS: tuple[str, ...] = (
    "hidden attribute",
    "display:none",
    "visibility:hidden",
    "font size 0",
    "opacity 0",
    "text coloured like its background",
    "positioned off-screen",
    "hidden run (w:vanish)",
    "tiny text (1 pt or less)",
    "invisible text (render mode 3)",
    "outside the page",
    "hidden sheet",
    "very hidden sheet",
    "hidden row",
    "hidden column",
    "hidden slide",
    "outside the slide",
    "speaker notes",
    "covered by a shape",
    "OCR layer the scan does not show",
    "clipped out of view",
    "scaled to nothing",
    "box collapsed with overflow hidden",
    "hidden run (w:specVanish)",
    "number format shows nothing",
    "under an image",
    "OCR layer other than the scan's words",
)
_OPEN_BASE = 0xFDD0
_CLOSE = "\ufdef"
assert len(HIDDEN_REASONS) < 0xFDEF - _OPEN_BASE

# Latin, Greek, Cyrillic letters and digits: scripts with no use for a zero-width character
# between two of their letters (Arabic, Indic and South-East Asian scripts and emoji do use them).
_PLAIN = "0-9A-Za-z\u00c0-\u024f\u1e00-\u1eff\u0370-\u03ff\u0400-\u052f"
_TAGS = "\U000e0000-\U000e007f"
_BIDI = "\u202a-\u202e\u2066-\u2069"
# Zero-width characters, the invisible mathematical operators (U+2061-2064), the Mongolian vowel
# separator and the combining grapheme joiner: nothing a reader sees between two letters of a word.
_ZERO_WIDTH = "\u200b-\u200d\u2060-\u2064\u180e\u034f"
# Variation selectors: one after an emoji or a CJK character picks its glyph; two or more in a row
# choose nothing and can carry a message byte by byte ("emoji smuggling").
_SELECTORS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_INVISIBLE = re.compile(
    f"(?P<tags>[{_TAGS}]+)|(?P<bidi>[{_BIDI}]+)|(?P<bom>\ufeff+)"
    f"|(?P<selectors>[{_SELECTORS}]{{2,}})"
    f"|(?<=[{_PLAIN}])(?P<zw>[{_ZERO_WIDTH}\ufeff]+)(?=[{_PLAIN}])"
    "|(?P<mark>[\ufdd0-\ufdef])"
)
_DROPPED = re.compile("(?P<segment>[\ufdd0-\ufdee][^\ufdef]*\ufdef)")
_ANY = re.compile(f"[{_TAGS}{_BIDI}{_ZERO_WIDTH}\ufeff\ufdd0-\ufdef]|[{_SELECTORS}]{{2}}")
# A subdivision flag (England, Scotland, Wales) is a black flag, tag letters and a cancel tag.
_FLAG_EMOJI = "\U0001f3f4"
WORD_REACH = 80
_NAMES = {"tags": "Unicode tag characters", "bidi": "bidirectional control characters",
          "bom": "zero-width characters", "zw": "zero-width characters",
          "selectors": "variation selectors"}


def hidden(text: str, reason: str) -> str:
    """``text`` marked as hidden from a reader, for ``reason`` (one of ``HIDDEN_REASONS``). Marks do
    not nest: in a text that holds marked spans already (a hidden run in a shape off the slide), the
    spans keep their own reason and the text around them is marked with ``reason``."""
    if not text:
        return text
    mark = chr(_OPEN_BASE + HIDDEN_REASONS.index(reason))
    if _CLOSE not in text:
        return mark + text + _CLOSE
    pieces, last = [], 0
    for segment in _DROPPED.finditer(text):
        pieces += [_around(text[last:segment.start()], mark), segment.group()]
        last = segment.end()
    pieces.append(_around(text[last:], mark))
    return "".join(pieces)


def _around(text: str, mark: str) -> str:
    return mark + text + _CLOSE if text.strip() else text


@dataclass(frozen=True, kw_only=True, slots=True)
class Settled:
    """A text with its marks and invisible code points removed.

    ``flags`` are sorted by start, in the new text's offsets; ``removed`` the old text's removed
    ranges, sorted, for ``position`` to carry an old offset over."""

    text: str
    flags: tuple[TextFlag, ...] = ()
    removed: tuple[tuple[int, int], ...] = ()
    _starts: list[int] = field(init=False, repr=False, compare=False)
    _shifts: list[int] = field(init=False, repr=False, compare=False)  # characters removed up to each range's end

    def __post_init__(self) -> None:
        total, shifts = 0, []
        for start, end in self.removed:
            total += end - start
            shifts.append(total)
        object.__setattr__(self, "_starts", [start for start, _ in self.removed])
        object.__setattr__(self, "_shifts", shifts)

    def position(self, old: int) -> int:
        """The new offset of old offset ``old`` (the start of a removed range for one inside it)."""
        if not self.removed:
            return old
        i = bisect.bisect_right(self._starts, old)
        shift = self._shifts[i - 1] if i else 0
        if i and old < self.removed[i - 1][1]:  # inside a removed range
            start, end = self.removed[i - 1]
            return start - (shift - (end - start))
        return old - shift


def clean_text(text: str) -> str:
    """``text`` without marks and invisible code points, hidden text kept (metadata, table cells)."""
    return settle(text, "keep").text if _ANY.search(text) else text


def settle(text: str, policy: HiddenPolicy = "flag") -> Settled:
    """Remove the marks (and under ``drop`` the text they mark) and the invisible code points."""
    if not _ANY.search(text):
        return Settled(text=text)
    pieces: list[str] = []
    removed: list[tuple[int, int]] = []
    hidden_flags: list[TextFlag] = []
    invisible: list[tuple[int, str, int]] = []  # (new offset, what, count)
    dropped: list[tuple[int, str, int]] = []  # (new offset, reason, characters)
    size, last, opened = 0, 0, None  # characters written, old offset copied up to, (reason, new start)
    for match in _matches(text, policy):
        start, end = match.start(), match.end()
        pieces.append(text[last:start])
        size += start - last
        last = end
        kind = match.lastgroup or ""
        if kind == "tags" and _emoji_flag(text, start, end):
            pieces.append(match.group())
            size += end - start
            continue
        removed.append((start, end))
        if kind == "segment":
            segment = match.group()
            dropped.append((size, _reason(segment[0]), len(segment) - 2))
        elif kind == "mark":
            if match.group() != _CLOSE:
                opened = opened or (_reason(match.group()), size)
            elif opened is not None:
                if size > opened[1]:
                    hidden_flags.append(TextFlag(kind="hidden_text", reason=opened[0], start=opened[1], end=size))
                opened = None
        else:
            invisible.append((size, _NAMES[kind], end - start))
    pieces.append(text[last:])
    new = "".join(pieces)
    flags = [] if policy == "keep" else _merged(new, hidden_flags) + _dropped_flags(new, dropped)
    flags += _invisible_flags(new, invisible)
    flags.sort(key=lambda f: (f.start, f.end))
    return Settled(text=new, flags=tuple(flags), removed=tuple(removed))


def _merged(text: str, flags: list[TextFlag]) -> list[TextFlag]:
    """Hidden spans of one reason with only whitespace between them: one span (the text nodes of
    one hidden element are marked one by one)."""
    out: list[TextFlag] = []
    for flag in flags:
        last = out[-1] if out else None
        if (last is not None and last.reason == flag.reason and last.end > last.start and flag.end > flag.start
                and not text[last.end:flag.start].strip()):
            out[-1] = TextFlag(kind=last.kind, reason=last.reason, start=last.start, end=max(last.end, flag.end))
        else:
            out.append(flag)
    return out


def _dropped_flags(text: str, found: Sequence[tuple[int, str, int]]) -> list[TextFlag]:
    """One flag where hidden text of one reason was dropped, runs with only whitespace between joined."""
    runs: list[list[Any]] = []  # [offset, reason, characters]
    for at, reason, count in found:
        if runs and runs[-1][1] == reason and not text[runs[-1][0]:at].strip():
            runs[-1][2] += count
        else:
            runs.append([at, reason, count])
    return [TextFlag(kind="hidden_text", reason=f"{reason}: {count} characters dropped", start=at, end=at)
            for at, reason, count in runs]


def _matches(text: str, policy: HiddenPolicy) -> list[re.Match[str]]:
    if policy != "drop":
        return list(_INVISIBLE.finditer(text))
    out: list[re.Match[str]] = []
    last = 0
    for segment in _DROPPED.finditer(text):  # the marked text goes whole; invisible ones around it
        out += _INVISIBLE.finditer(text, last, segment.start())
        out.append(segment)
        last = segment.end()
    out += _INVISIBLE.finditer(text, last)
    return out


def _reason(mark: str) -> str:
    index = ord(mark) - _OPEN_BASE
    return HIDDEN_REASONS[index] if 0 <= index < len(HIDDEN_REASONS) else "hidden"


def _emoji_flag(text: str, start: int, end: int) -> bool:
    return start > 0 and text[start - 1] == _FLAG_EMOJI and end - start <= 7 and text[end - 1] == "\U000e007f"


def _invisible_flags(text: str, found: Sequence[tuple[int, str, int]]) -> list[TextFlag]:
    """One flag per word the invisible code points were removed from, with their counts."""
    words: dict[tuple[int, int], dict[str, int]] = {}
    for at, what, count in found:
        start = at  # the word, looked for at most WORD_REACH characters each way (a blob has no end)
        while start > max(0, at - WORD_REACH) and not text[start - 1].isspace():
            start -= 1
        end = at
        while end < min(len(text), at + WORD_REACH) and not text[end].isspace():
            end += 1
        counts = words.setdefault((start, end), {})
        counts[what] = counts.get(what, 0) + count
    return [
        TextFlag(kind="invisible_characters", start=start, end=end,
                 reason="removed: " + ", ".join(f"{count} {what}" for what, count in counts.items()))
        for (start, end), counts in words.items()
    ]
