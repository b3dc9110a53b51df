"""Documents inside documents (e-mail attachments, archive members): each read by its own processor.

A container format (``eml``, ``msg``, ``zip``) hands every member's bytes and name to
``read_member``, which sniffs the member as a download would be sniffed (bytes first, then its
Content-Type and file name) and runs that format's processor with ``nesting`` one deeper. A
member that fails to parse, or has no format, is named in the text with the reason instead of
failing the whole container; limits (depth, member count) fail it with a clear error.

``Parts`` joins the container's own text and its members' into one content whose locations carry
each member's name as the outermost heading, so a hit in an attachment says which one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from mcp_server.core.errors import MCPServerError, ProcessingError
from mcp_server.core.models import ExtractedTable, Location, ProcessedDocument
from mcp_server.processors.base import DocumentInput, ProcessOptions, get_processor
from mcp_server.processors.sniff import UNKNOWN, detect_type

__all__ = ["Parts", "check_count", "deeper", "read_member"]


def deeper(options: ProcessOptions, what: str) -> ProcessOptions:
    """The options of a member one level down; a clear error past ``archive_max_depth``."""
    if options.nesting >= options.archive_max_depth:
        raise ProcessingError(
            f"{what} nested more than {options.archive_max_depth} deep (the limit archive_max_depth)",
            reason="too_deep", limit="archive_max_depth",
        )
    return dataclasses.replace(options, nesting=options.nesting + 1)


def check_count(count: int, options: ProcessOptions, what: str) -> None:
    if count > options.archive_max_members:
        raise ProcessingError(
            f"{count} {what}, more than the limit archive_max_members={options.archive_max_members}",
            limit="archive_max_members",
        )


def read_member(data: bytes, name: str, options: ProcessOptions, *, content_type: str = "",
                charset: str | None = None) -> ProcessedDocument | str:
    """The member read by its format's processor, or why it was not read (a short phrase).

    ``options`` are the member's own (``deeper(...)``). Limit errors of nested containers
    propagate: a bomb inside an attachment fails the whole document.
    """
    if not data:
        return "empty"
    doc_type = detect_type(data, content_type, name)
    processor = get_processor(doc_type) if doc_type != UNKNOWN else None
    if processor is None:
        return "no format this server reads"
    try:
        return processor.process(DocumentInput(data=data, doc_type=doc_type, filename=name,
                                               content_type=content_type, charset=charset), options)
    except ProcessingError as exc:
        if exc.details.get("limit") in ("archive_max_depth", "archive_max_members"):
            raise
        return str(exc)
    except MCPServerError as exc:
        return str(exc)
    except RecursionError:
        return "nested too deeply to parse"


@dataclass(kw_only=True, slots=True)
class Parts:
    """Text sections joined by blank lines, with their locations and the members' tables."""

    blocks: list[str] = field(default_factory=list)
    locations: list[Location] = field(default_factory=list)
    tables: list[ExtractedTable] = field(default_factory=list)
    length: int = 0

    def add(self, text: str, path: tuple[str, ...], inner: tuple[Location, ...] = ()) -> None:
        """One section; ``inner``: the member's own locations (shifted, its path under ``path``)."""
        if not text:
            return
        start = self.length + (2 if self.blocks else 0)
        self.blocks.append(text)
        self.length = start + len(text)
        spans = sorted(inner, key=lambda loc: loc.start)
        at, first = start, len(self.locations)
        for loc in spans:
            lo, hi = start + loc.start, min(start + loc.end, self.length)
            if lo < at or hi <= lo:
                continue
            if lo > at and len(self.locations) > first:  # the blank lines between two spans
                self.locations[-1] = dataclasses.replace(self.locations[-1], end=lo)
            elif lo > at:
                self.locations.append(Location(start=at, end=lo, heading_path=path))
            self.locations.append(dataclasses.replace(loc, start=lo, end=hi, heading_path=path + loc.heading_path))
            at = hi
        if at < self.length and len(self.locations) > first:
            self.locations[-1] = dataclasses.replace(self.locations[-1], end=self.length)
        elif at < self.length:
            self.locations.append(Location(start=at, end=self.length, heading_path=path))

    def add_member(self, name: str, result: ProcessedDocument | str, path: tuple[str, ...]) -> None:
        """A member under a ``## name`` heading line, or a line saying why it was not read."""
        title = f"## {name}"
        if isinstance(result, str):
            self.add(f"{title}\n\n(not read: {result})", (*path, name))
            return
        heading = f"{title}\n\n"
        shifted = tuple(dataclasses.replace(loc, start=loc.start + len(heading), end=loc.end + len(heading))
                        for loc in result.locations)
        self.add(heading + result.content, (*path, name), shifted)
        for table in result.tables:
            where = f"{name}, {table.location}" if table.location else name
            self.tables.append(dataclasses.replace(table, location=where))

    @property
    def content(self) -> str:
        return "\n\n".join(self.blocks)
