"""Quote verification over one document's text: is this quote there, where, and in those words?

``QuoteIndex.build(content)`` makes, once per document, a *normalised* copy of the text with a map
back to the original offsets, and a sorted array of word-bigram codes; ``find(quote)`` then answers
in milliseconds on a 250-page filing (no scan of the text per call):

- ``exact``: the quote equals a stretch of the document after normalising only whitespace
  (any run -> one space), hyphenation (a hyphen between two letters is dropped, at a line end or
  not: "self-\\npublishing" reads "selfpublishing", as does the quote's "self-publishing") and
  typographic quotes and dashes (to ' " -). A plain substring search of the normalised text,
  which must start and end at word boundaries and never cut a number.
- ``close``: the best-aligned stretch of the document (its start found by bigram votes, its ends
  by trying a few words either way) reaches ``CLOSE_SIMILARITY`` (rapidfuzz's normalised Indel
  similarity of the two normalised texts), ``WORD_AGREEMENT`` of its words agree, *and* it holds
  the same numbers in the same order: "30,583" is never close to "30,538".
- ``none`` otherwise; the nearest wording is still reported when only its numbers differ.

Pure and synchronous: the caller runs it off the event loop and caches the index per document.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
from rapidfuzz import fuzz

__all__ = ["CLOSE_SIMILARITY", "NormalisedText", "QuoteIndex", "QuoteMatch", "normalise"]

CLOSE_SIMILARITY = 0.80  # below it a stretch of text is not "close" to the quote ...
WORD_AGREEMENT = 0.75  # ... nor when fewer of its words agree (short quotes: one word of three differs)
_CANDIDATES = 6  # alignment starts tried for a close match, best voted first
_SLACK = 3  # words tried either way of a candidate's ends
_REFINED = 12  # best spans whose punctuation variants are tried
_COMMON = 5000  # a bigram or word with more occurrences than this votes for nothing (too common)

_TYPOGRAPHIC = str.maketrans(
    {**{c: "'" for c in "\u2018\u2019\u201a\u201b\u2032"},
     **{c: '"' for c in "\u201c\u201d\u201e\u201f\u2033"},
     **{c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"}, "\x00": "\ufffd"}
)
_WORD = re.compile(r"\S+")
_TERM = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")

Kind = Literal["exact", "close", "none"]


@dataclass(frozen=True, kw_only=True, slots=True)
class QuoteMatch:
    match: Kind
    similarity: float  # 0..1; 1.0 for exact
    start: int | None = None  # span in the original content (None: nothing near enough)
    end: int | None = None
    wording: str | None = None  # the document's own words there, whitespace collapsed
    differences: tuple[tuple[str, str], ...] = ()  # (quote's words, document's words) that differ
    occurrences: int = 0  # exact: how many places hold the quote
    reason: str = ""


# a word of parts joined across line-end hyphens: [(original start, text), ...]
_Word = list[tuple[int, str]]


def _words(text: str) -> list[_Word]:
    """The whitespace-delimited words, quotes and dashes made plain, each word ending in a hyphen at
    a line end joined with the next word (its continuation)."""
    out: list[_Word] = []
    pending_join = False
    for m in _WORD.finditer(text):
        word = m.group().translate(_TYPOGRAPHIC)
        if pending_join and out and word[:1].isalpha():
            out[-1].append((m.start(), word))
        else:
            out.append([(m.start(), word)])
        pending_join = len(word) > 1 and word[-1] == "-" and word[-2].isalpha() and _newline_follows(text, m.end())
    return out


def _newline_follows(text: str, at: int) -> bool:
    """The whitespace after position ``at`` holds a line break (a hyphen there ends a line)."""
    i = at
    while i < len(text) and text[i].isspace():
        if text[i] == "\n":
            return True
        i += 1
    return False


def _pieces(word: _Word) -> list[tuple[int, str]]:
    """The word's normalised text as (original start, text) runs: hyphens between two letters are
    dropped, so "self-\npublishing", "self-publishing" and "selfpublishing" all read "selfpublishing"
    and "hyphen-\nation" reads "hyphenation" (a hyphen between digits stays: numbers are exact)."""
    if len(word) == 1 and "-" not in word[0][1]:
        return word
    chars = [(start + i, ch) for start, text in word for i, ch in enumerate(text)]
    kept = [c for k, c in enumerate(chars)
            if not (c[1] == "-" and 0 < k < len(chars) - 1 and chars[k - 1][1].isalpha() and chars[k + 1][1].isalpha())]
    runs: list[tuple[int, str]] = []
    for offset, ch in kept:
        if runs and runs[-1][0] + len(runs[-1][1]) == offset:
            runs[-1] = (runs[-1][0], runs[-1][1] + ch)
        else:
            runs.append((offset, ch))
    return runs


def normalise(text: str) -> str:
    """The form ``exact`` compares: whitespace collapsed, hyphenation joined, quotes and dashes plain."""
    return " ".join("".join(piece for _, piece in _pieces(word)) for word in _words(text))


class NormalisedText:
    """One document's text in the form a quote is compared in (``normalise``), with the map back to
    the original: where each piece of a word starts in both."""

    def __init__(self, content: str, norm: str, seg_norm: np.ndarray, seg_orig: np.ndarray,
                 seg_len: np.ndarray) -> None:
        self.content, self.norm = content, norm
        self._seg_norm, self._seg_orig, self._seg_len = seg_norm, seg_orig, seg_len

    @classmethod
    def of(cls, content: str) -> NormalisedText:
        parts: list[str] = []
        seg_norm: list[int] = []  # where each piece of a word starts in the normalised text
        seg_orig: list[int] = []  # ... and in the original
        seg_len: list[int] = []
        position = 0
        for word in _words(content):
            if parts:
                parts.append(" ")
                position += 1
            for orig, piece in _pieces(word):
                seg_norm.append(position)
                seg_orig.append(orig)
                seg_len.append(len(piece))
                parts.append(piece)
                position += len(piece)
        # numpy, not lists: a 250-page filing has ~150k words, and Python ints would weigh ~16 MB
        return cls(content, "".join(parts), np.asarray(seg_norm, dtype=np.int64),
                   np.asarray(seg_orig, dtype=np.int64), np.asarray(seg_len, dtype=np.int64))

    @property
    def size(self) -> int:
        """Rough bytes held: the normalised text and the map."""
        return len(self.norm) * 2 + sum(int(a.nbytes) for a in (self._seg_norm, self._seg_orig, self._seg_len))

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the normalised span [start, end)."""
        return self._orig_at(start, first=True), self._orig_at(end - 1, first=False) + 1

    def _orig_at(self, n: int, *, first: bool) -> int:
        i = max(int(np.searchsorted(self._seg_norm, n, side="right")) - 1, 0)
        offset = n - int(self._seg_norm[i])
        length = int(self._seg_len[i])
        if offset >= length:  # a space between words: the next word's start, or this one's end
            if first and i + 1 < len(self._seg_norm):
                return int(self._seg_orig[i + 1])
            return int(self._seg_orig[i]) + max(length - 1, 0)
        return int(self._seg_orig[i]) + offset

    def bounded(self, start: int, end: int) -> bool:
        """The normalised span starts and ends at word boundaries and cuts no number ("30,58" is not
        in "30,583")."""
        text = self.norm
        if start > 0 and text[start - 1].isalnum() and text[start].isalnum():
            return False
        if end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
            return False
        if text[start].isdigit() and start >= 2 and text[start - 1] in ".," and text[start - 2].isdigit():
            return False
        return not (text[end - 1].isdigit() and end + 1 < len(text) and text[end] in ".,"
                    and text[end + 1].isdigit())

    def word_start(self, at: int) -> int:
        space = self.norm.rfind(" ", 0, at)
        return space + 1

    def word_end(self, at: int) -> int:
        space = self.norm.find(" ", at)
        return len(self.norm) if space < 0 else space

    def wording(self, start: int, end: int) -> str:
        """The original text of [start, end), whitespace collapsed."""
        return " ".join(self.content[start:end].split())


class QuoteIndex:
    """A document's ``NormalisedText`` and the codes of its words and word bigrams, sorted: where a
    quote stands, exact, close or not at all (``find``)."""

    def __init__(self, text: NormalisedText, term_starts: np.ndarray, term_ends: np.ndarray, codes: np.ndarray,
                 code_terms: np.ndarray, vocabulary: dict[str, int]) -> None:
        self.text, self.content, self.norm = text, text.content, text.norm
        self._term_starts, self._term_ends = term_starts, term_ends
        self._codes, self._code_terms = codes, code_terms
        self._vocabulary = vocabulary

    @classmethod
    def build(cls, content: str) -> QuoteIndex:
        text = NormalisedText.of(content)
        terms = [(m.start(), m.end(), m.group()) for m in _TERM.finditer(text.norm.lower())]
        vocabulary: dict[str, int] = {}
        ids = np.fromiter((vocabulary.setdefault(t, len(vocabulary)) for _, _, t in terms), dtype=np.int64,
                          count=len(terms))
        starts = np.fromiter((s for s, _, _ in terms), dtype=np.int64, count=len(terms))
        ends = np.fromiter((e for _, e, _ in terms), dtype=np.int64, count=len(terms))
        codes = np.concatenate([(ids[:-1] << 32) | ids[1:], ids | (np.int64(1) << 62)]) if len(ids) else ids
        positions = np.concatenate([np.arange(len(ids) - 1), np.arange(len(ids))]) if len(ids) else ids
        order = np.argsort(codes, kind="stable")
        return cls(text, starts, ends, codes[order], positions[order], vocabulary)

    @property
    def size(self) -> int:
        """Rough bytes held (the cache's accounting): the normalised text, the arrays, the vocabulary."""
        arrays = (self._term_starts, self._term_ends, self._codes, self._code_terms)
        return self.text.size + sum(int(a.nbytes) for a in arrays) + len(self._vocabulary) * 120

    # --- matching -------------------------------------------------------------------------------
    def find(self, quote: str) -> QuoteMatch:
        wanted = normalise(quote)
        if not wanted:
            return QuoteMatch(match="none", similarity=0.0, reason="the quote holds no words")
        exact = self._exact(wanted)
        if exact is not None:
            return exact
        return self._close(wanted)

    def _exact(self, wanted: str) -> QuoteMatch | None:
        hits: list[int] = []
        at = self.norm.find(wanted)
        while at >= 0:
            if self.text.bounded(at, at + len(wanted)):
                hits.append(at)
            at = self.norm.find(wanted, at + 1)
        if not hits:
            return None
        start, end = self.text.original(hits[0], hits[0] + len(wanted))
        return QuoteMatch(match="exact", similarity=1.0, start=start, end=end, wording=self.text.wording(start, end),
                          occurrences=len(hits))

    def _close(self, wanted: str) -> QuoteMatch:
        terms = [m.group() for m in _TERM.finditer(wanted.lower())]
        starts = self._vote(terms)
        numbers = _NUMBER.findall(wanted)
        spans = sorted((span for start_term in starts for span in self._spans(wanted, start_term, len(terms))),
                       reverse=True)[:_REFINED]
        spans += [refined for span in spans for refined in self._with_punctuation(wanted, span)]
        best: tuple[float, int, int] | None = max(spans, default=None)  # (similarity, normalised start, end)
        # the best whose numbers agree
        best_numbered = max((span for span in spans if _NUMBER.findall(self.norm[span[1]:span[2]]) == numbers),
                            default=None)
        if best_numbered is not None and best_numbered[0] >= CLOSE_SIMILARITY:
            agreement = _word_agreement(terms, self.norm[best_numbered[1]:best_numbered[2]])
            if agreement >= WORD_AGREEMENT:
                return self._report("close", wanted, best_numbered)
            return self._near_miss(wanted, best_numbered, f"too few of the quote's words stand there "
                                   f"(agreement {agreement:.2f} < {WORD_AGREEMENT})")
        if best is not None and best[0] >= CLOSE_SIMILARITY:  # close in words, but other numbers
            return self._near_miss(wanted, best, "the nearest wording holds other numbers; numbers must match "
                                   "exactly")
        similarity = round(best[0], 4) if best is not None else 0.0
        return QuoteMatch(match="none", similarity=similarity,
                          reason=f"no stretch of the document reaches similarity {CLOSE_SIMILARITY}")

    def _near_miss(self, wanted: str, span: tuple[float, int, int], reason: str) -> QuoteMatch:
        """``none``, with the nearest wording and what differs, so the quote can be corrected."""
        found = self._report("none", wanted, span)
        return QuoteMatch(match="none", similarity=found.similarity, start=found.start, end=found.end,
                          wording=found.wording, differences=found.differences, reason=reason)

    def _report(self, kind: Kind, wanted: str, found: tuple[float, int, int]) -> QuoteMatch:
        score, lo, hi = found
        start, end = self.text.original(lo, hi)
        return QuoteMatch(match=kind, similarity=round(score, 4), start=start, end=end,
                          wording=self.text.wording(start, end), differences=_differences(wanted, self.norm[lo:hi]))

    def _vote(self, terms: list[str]) -> list[int]:
        """The document term positions where the quote most likely starts, best first."""
        ids = [self._vocabulary.get(t, -1) for t in terms]
        keys: list[tuple[int, int]] = []  # (code, the key's position in the quote)
        for i in range(len(ids) - 1):
            if ids[i] >= 0 and ids[i + 1] >= 0:
                keys.append(((ids[i] << 32) | ids[i + 1], i))
        for i, term_id in enumerate(ids):
            if term_id >= 0:
                keys.append((term_id | (1 << 62), i))
        votes: dict[int, float] = {}
        for code, i in keys:
            lo = int(np.searchsorted(self._codes, code, side="left"))
            hi = int(np.searchsorted(self._codes, code, side="right"))
            if hi == lo or hi - lo > _COMMON:
                continue
            weight = 1.0 / (hi - lo) ** 0.5  # rare keys say more about where the quote stands
            for position in self._code_terms[lo:hi].tolist():
                start = position - i
                votes[start] = votes.get(start, 0.0) + weight
        ranked = sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))
        chosen: list[int] = []
        for start, _ in ranked:
            if all(abs(start - other) > _SLACK for other in chosen):
                chosen.append(start)
            if len(chosen) == _CANDIDATES:
                break
        return chosen

    def _spans(self, wanted: str, start_term: int, length: int) -> list[tuple[float, int, int]]:
        """Similarity of the quote to the stretches around a candidate start, its ends moved by up
        to ``_SLACK`` words."""
        count = len(self._term_starts)
        if count == 0:
            return []
        out: list[tuple[float, int, int]] = []
        for a in range(-_SLACK, _SLACK + 1):
            first = min(max(start_term + a, 0), count - 1)
            lo = int(self._term_starts[first])
            for b in range(-_SLACK, _SLACK + 1):
                last = min(max(start_term + length - 1 + b, first), count - 1)
                hi = int(self._term_ends[last])
                out.append((fuzz.ratio(wanted, self.norm[lo:hi]) / 100.0, lo, hi))
        return out

    def _with_punctuation(self, wanted: str, span: tuple[float, int, int]) -> list[tuple[float, int, int]]:
        """The span with the punctuation that clings to its end words (quotes, commas, a full stop)."""
        _, lo, hi = span
        out = []
        for start in {lo, self.text.word_start(lo)}:
            for end in {hi, self.text.word_end(hi)}:
                if (start, end) != (lo, hi):
                    out.append((fuzz.ratio(wanted, self.norm[start:end]) / 100.0, start, end))
        return out


def _word_agreement(terms: list[str], found: str) -> float:
    """How many of the words agree (2M/T over the two word lists, case and punctuation aside):
    the characters of "Total net sales" and "Total net lease" are 0.87 alike, their words 0.67."""
    theirs = [m.group() for m in _TERM.finditer(found.lower())]
    return difflib.SequenceMatcher(None, terms, theirs, autojunk=False).ratio()


def _differences(wanted: str, found: str) -> tuple[tuple[str, str], ...]:
    """Word runs that differ between the quote and the document's wording, in order."""
    ours, theirs = wanted.split(), found.split()
    matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
    return tuple((" ".join(ours[i1:i2]), " ".join(theirs[j1:j2]))
                 for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal")
