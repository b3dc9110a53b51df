"""What a format declares (the registry of the processors that declared one is in ``base.py``).

A processor module states everything about its format in one ``Format`` at the top of its
class: the type name, extensions, MIME types, how its bytes are recognised (magic bytes at
fixed offsets, a zip member folder, or for text formats how sure the content looks like it)
and how its text is chunked. The sniffer, the chunker's parameters, ``rag://supported-formats``,
the health report and the table in docs/formats.md are all generated from these declarations.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp_server.core.markup import PLAIN, Breaks

__all__ = ["Chunking", "Format", "Likelihood", "Magic"]


class Likelihood(enum.IntEnum):
    """How sure a text format is that some text is its own.

    ``CERTAIN`` beats the transport's hint (``<!DOCTYPE html>`` served as text/plain is HTML);
    the others only decide when the hint names no text format.
    """

    POSSIBLE = 1
    LIKELY = 2
    CERTAIN = 3


@dataclass(frozen=True, kw_only=True, slots=True)
class Magic:
    """Bytes that identify a format: every ``(offset, bytes)`` part must match."""

    parts: tuple[tuple[int, bytes], ...]

    @classmethod
    def prefix(cls, head: bytes) -> Magic:
        return cls(parts=((0, head),))

    def matches(self, data: bytes) -> bool:
        return all(data[offset : offset + len(head)] == head for offset, head in self.parts)


@dataclass(frozen=True, kw_only=True, slots=True)
class Chunking:
    """A format's base chunk size and overlap (characters) and where its structure may be cut."""

    size: int = 1200
    overlap: int = 250
    breaks: Breaks = PLAIN
    headings: bool = True  # False: a line starting with "# " is data (a spreadsheet cell)


@dataclass(frozen=True, kw_only=True, slots=True)
class Format:
    """Everything the server knows about one format, declared by its processor.

    Binary formats are recognised by ``magic`` (any one matches) or ``detect`` (for signatures
    not at a fixed offset, like PDF's), zip packages by a member under ``zip_member``. Text
    formats (``text=True``) are reached only when the bytes read as text; ``looks_like`` says
    how sure the content is, else the Content-Type or extension decides. ``generic`` formats
    (HTML, plain text) are tried and listed after the specific ones.
    """

    doc_type: str
    description: str  # one line for rag://supported-formats and docs/formats.md
    extensions: tuple[str, ...] = ()
    mime_types: tuple[str, ...] = ()
    magic: tuple[Magic, ...] = ()
    detect: Callable[[bytes], bool] | None = None
    zip_member: str | None = None  # "word/": an OOXML package whose parts live there; "": any zip
    text: bool = False
    looks_like: Callable[[bytes], Likelihood | None] | None = None
    generic: bool = False
    chunking: Chunking = field(default_factory=Chunking)

    def recognises(self, data: bytes) -> bool:
        """True when the bytes alone identify this (binary) format."""
        return any(magic.matches(data) for magic in self.magic) or (self.detect is not None and self.detect(data))

    def describe(self) -> dict[str, object]:
        """The JSON shape of ``rag://supported-formats`` and the health report."""
        return {
            "doc_type": self.doc_type,
            "extensions": list(self.extensions),
            "mime_types": list(self.mime_types),
            "description": self.description,
        }
