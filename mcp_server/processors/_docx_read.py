"""Everything that touches python-docx: the body walked in document order into Markdown, as
``docx.py`` describes the format's output. Imported only inside parser workers (``docx.py``
imports it lazily), so the server processes never load python-docx.

Paragraphs are read at the XML level with a style table built once: going through
``Paragraph.style`` resolves the style per paragraph and made large documents slow.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

from docx.document import Document
from docx.opc.constants import CONTENT_TYPE as CT
from docx.opc.part import PartFactory
from docx.oxml.ns import qn
from docx.oxml.text.run import CT_R
from docx.package import Package
from docx.parts.document import DocumentPart

from mcp_server.core.markup import heading_line
from mcp_server.core.models import ExtractedTable, Location, ProcessedDocument
from mcp_server.processors._docx_hidden import RunStyles, mark_run
from mcp_server.processors._markdown import markdown_table

__all__ = ["read"]


_P, _TBL, _SDT, _SDT_CONTENT = qn("w:p"), qn("w:tbl"), qn("w:sdt"), qn("w:sdtContent")
_R, _HYPERLINK, _TR, _TC = qn("w:r"), qn("w:hyperlink"), qn("w:tr"), qn("w:tc")
_R_ID = qn("r:id")
_SHD, _HIGHLIGHT, _BACKGROUND = qn("w:shd"), qn("w:highlight"), qn("w:background")
# A run's text children, as python-docx's ``CT_R.text`` selects them; read here by tag, since that property
# evaluates an XPath per run (a quarter of an 872-page document's parse) for the same children in the same order
_RUN_TEXT = frozenset(qn(f"w:{name}") for name in ("br", "cr", "noBreakHyphen", "ptab", "t", "tab"))
# Run containers whose text belongs to the paragraph (tracked insertions, smart tags, fields).
_RUN_WRAPPERS = {qn(t) for t in ("w:ins", "w:smartTag", "w:customXml", "w:fldSimple", "w:moveTo")}
_HEADING_NAME = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_LIST_STYLE = re.compile(r"^list", re.IGNORECASE)
_HEADER_FOOTERS = (
    "header", "first_page_header", "even_page_header", "footer", "first_page_footer", "even_page_footer",
)


def read(data: bytes) -> ProcessedDocument:
    """The document in ``data`` converted; python-docx's own exceptions pass through."""
    return _Converter(_open(data)).convert()


# The main part of a macro-enabled document (.docm) or a template (.dotx, .dotm) is the same
# WordprocessingML as a .docx's under another content type; python-docx's ``Document()`` accepts
# only the .docx one. Macros (``word/vbaProject.bin``) are never read, run or returned.
_WORD_MAIN_TYPES = (
    CT.WML_DOCUMENT_MAIN,
    "application/vnd.ms-word.document.macroEnabled.main+xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
)


def _open(data: bytes) -> Document:
    # python-docx picks a part's class by content type from this table; the macro-enabled and
    # template main parts get the .docx one (idempotent; only parser workers import this module).
    for content_type in _WORD_MAIN_TYPES:
        PartFactory.part_type_for.setdefault(content_type, DocumentPart)
    part = Package.open(io.BytesIO(data)).main_document_part
    if not isinstance(part, DocumentPart):
        raise ValueError(f"not a Word document: its main part is {part.content_type!r}")
    return part.document


class _Converter:
    """One pass over a document, collecting blocks, locations, tables and links."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.heading_levels, self.list_styles = _style_tables(document)
        root = document.element
        # any shading, highlight or page colour: the first found ends the walk (an XPath over the whole tree did not)
        shaded = root.find(_BACKGROUND) is not None or next(root.iter(_SHD, _HIGHLIGHT), None) is not None
        self.run_styles = RunStyles(document.styles.element, shaded=shaded)  # hidden, white or tiny by a style
        self.blocks: list[str] = []
        self.length = 0  # len("\n\n".join(self.blocks)) kept incrementally (no O(n^2) joins)
        self.locations: list[Location] = []
        self.span_start = 0
        self.path: tuple[str, ...] = ()
        self.tables: list[ExtractedTable] = []
        self.hyperlinks: list[dict[str, str]] = []
        self.heading_count = 0
        self.last_was_list = False

    def convert(self) -> ProcessedDocument:
        body = self.document.element.body
        rels = _rels(self.document.part)
        for kind, element in _iter_blocks(body):
            if kind == "p":
                self._paragraph(element, rels)
            else:
                self._table(element, rels)
        self._headers_footers()
        self._close_span()
        content = "\n\n".join(self.blocks)
        metadata: dict[str, Any] = {
            "heading_count": self.heading_count,
            "table_count": len(self.tables),
            "hyperlinks": self.hyperlinks,
        }
        props = self.document.core_properties
        for name in ("title", "author", "subject"):
            value = getattr(props, name, None)
            if value:
                metadata[name] = value
        return ProcessedDocument(
            content=content,
            doc_type="docx",
            metadata=metadata,
            tables=tuple(self.tables),
            locations=tuple(self.locations),
        )

    # --- blocks -------------------------------------------------------------------------
    def _add(self, text: str, *, list_item: bool = False) -> None:
        if not text.strip():
            return
        if list_item and self.last_was_list:
            # Consecutive list items stay one block, one line each.
            self.blocks[-1] += "\n" + text
            self.length += 1 + len(text)
            return
        self.last_was_list = list_item
        if self.blocks:
            self.length += 2
        self.blocks.append(text)
        self.length += len(text)

    def _paragraph(self, p: Any, rels: dict[str, str]) -> None:
        text = _paragraph_text(p, rels, self.hyperlinks, self.run_styles).strip()
        if not text:
            return
        pPr = p.pPr  # read once: each python-docx child property is a lookup of its own
        style_id = pPr.style if pPr is not None else None
        level = self.heading_levels.get(style_id) if style_id else None
        if level is None:
            level = _outline_level(pPr)
        if level is not None:
            self._heading(level, text)
            return
        ilvl = _list_level(pPr, style_id in self.list_styles if style_id else False)
        if ilvl is not None:
            self._add("  " * ilvl + "- " + text.replace("\n", " "), list_item=True)
            return
        self._add(text)

    def _heading(self, level: int, text: str) -> None:
        text = " ".join(text.split())
        self._close_span()
        self.path = (*self.path[: level - 1], text)
        self.heading_count += 1
        self._add(heading_line(level, text))

    def _table(self, tbl: Any, rels: dict[str, str]) -> None:
        grid = _table_grid(tbl, rels, self.hyperlinks, self.run_styles)
        markdown = markdown_table(grid)
        if not markdown:
            return
        self._add(markdown)
        self.tables.append(
            ExtractedTable(
                content=markdown,
                table_type="markdown",
                location=" > ".join(self.path) or "body",
                metadata={"rows": len(grid), "columns": max((len(r) for r in grid), default=0)},
            )
        )

    def _headers_footers(self) -> None:
        seen: set[str] = set()
        texts: list[str] = []
        for section in self.document.sections:
            for name in _HEADER_FOOTERS:
                part = getattr(section, name)
                # A linked header repeats the previous section's; reading it would add a part.
                if part.is_linked_to_previous:
                    continue
                rels = _rels(part.part)
                lines = []
                for kind, element in _iter_blocks(part._element):
                    if kind == "p":
                        lines.append(_paragraph_text(element, rels, self.hyperlinks, self.run_styles).strip())
                    else:
                        lines.append(markdown_table(_table_grid(element, rels, self.hyperlinks, self.run_styles)))
                text = "\n".join(line for line in lines if line)
                if text and text not in seen:
                    seen.add(text)
                    texts.append(text)
        if texts:
            self._close_span()
            self.path = ()
            self._add("Headers and footers:\n" + "\n".join(texts))

    def _close_span(self) -> None:
        """End the span of the current heading path at the current end of the content."""
        if self.length > self.span_start:
            self.locations.append(Location(start=self.span_start, end=self.length, heading_path=self.path))
        # The next block starts after the "\n\n" separator.
        self.span_start = self.length + 2 if self.blocks else 0


# --- XML helpers --------------------------------------------------------------------------
def _iter_blocks(container: Any) -> Iterator[tuple[str, Any]]:
    """Paragraphs and tables of a body/cell/header in document order, through content controls."""
    for child in container.iterchildren():
        tag = child.tag
        if tag == _P:
            yield "p", child
        elif tag == _TBL:
            yield "tbl", child
        elif tag == _SDT:
            content = child.find(_SDT_CONTENT)
            if content is not None:
                yield from _iter_blocks(content)


def _paragraph_text(p: Any, rels: dict[str, str], links: list[dict[str, str]], styles: RunStyles) -> str:
    return "".join(_inline_text(p, rels, links, styles))


def _inline_text(parent: Any, rels: dict[str, str], links: list[dict[str, str]], styles: RunStyles) -> Iterator[str]:
    for child in parent.iterchildren():
        tag = child.tag
        if tag == _R and isinstance(child, CT_R):
            yield mark_run(child, "".join(str(part) for part in child if part.tag in _RUN_TEXT), styles)
        elif tag == _HYPERLINK:
            text = "".join(_inline_text(child, rels, links, styles))
            url = rels.get(child.get(_R_ID) or "", "")
            if url and text.strip():
                links.append({"text": text.strip(), "url": url})
                yield text if text.strip() == url else f"{text} ({url})"
            else:
                yield text
        elif tag in _RUN_WRAPPERS or tag == _SDT_CONTENT:
            yield from _inline_text(child, rels, links, styles)
        elif tag == _SDT:
            content = child.find(_SDT_CONTENT)
            if content is not None:
                yield from _inline_text(content, rels, links, styles)


def _rels(part: Any) -> dict[str, str]:
    """rId -> URL of the part's external relationships (hyperlinks)."""
    return {rid: rel.target_ref for rid, rel in part.rels.items() if rel.is_external}


def _outline_level(pPr: Any) -> int | None:
    """A direct ``w:outlineLvl`` on a paragraph (its ``w:pPr``) makes it a heading too (0-based in the XML)."""
    node = pPr.find(qn("w:outlineLvl")) if pPr is not None else None
    if node is None:
        return None
    try:
        value = int(node.get(qn("w:val")))
    except (TypeError, ValueError):
        return None
    return value + 1 if 0 <= value < 6 else None


def _list_level(pPr: Any, list_style: bool) -> int | None:
    numPr = pPr.numPr if pPr is not None else None
    if numPr is not None:
        numId = numPr.numId
        if numId is not None and numId.val == 0:  # numId 0 switches numbering off
            return None
        ilvl = numPr.ilvl
        return min(ilvl.val if ilvl is not None else 0, 8)
    return 0 if list_style else None


def _style_tables(document: Document) -> tuple[dict[str, int], set[str]]:
    """styleId -> heading level (following basedOn), and the ids of list paragraph styles."""
    styles = document.styles.element
    by_id: dict[str, Any] = {s.styleId: s for s in styles.style_lst if s.styleId}
    levels: dict[str, int] = {}
    lists: set[str] = set()

    def level_of(style_id: str, depth: int = 0) -> int | None:
        style = by_id.get(style_id)
        if style is None or depth > 20:
            return None
        name = style.name_val or ""
        if name.lower() == "title":
            return 1
        match = _HEADING_NAME.match(name)
        if match:
            return int(match.group(1))
        based_on = style.basedOn_val
        return level_of(based_on, depth + 1) if based_on else None

    for style_id, style in by_id.items():
        level = level_of(style_id)
        if level is not None:
            levels[style_id] = level
        elif _LIST_STYLE.match(style.name_val or ""):
            lists.add(style_id)
    return levels, lists


# --- tables -------------------------------------------------------------------------------
def _table_grid(tbl: Any, rels: dict[str, str], links: list[dict[str, str]], styles: RunStyles) -> list[list[str]]:
    """Rows of cell texts on the table's grid; merged cells repeat their text in each position."""
    grid: list[list[str]] = []
    for tr in tbl.iterchildren(_TR):
        row: list[str] = [""] * _grid_before(tr)
        for tc in _iter_cells(tr):
            span = max(1, min(_int_attr(tc.tcPr, "w:gridSpan"), 64)) if tc.tcPr is not None else 1
            col = len(row)
            if tc.vMerge == "continue" and grid and col < len(grid[-1]):
                text = grid[-1][col]
            else:
                text = _cell_text(tc, rels, links, styles)
            row.extend([text] * span)
        grid.append(row)
    return [row for row in grid if any(cell for cell in row)]


def _iter_cells(tr: Any) -> Iterator[Any]:
    for child in tr.iterchildren():
        if child.tag == _TC:
            yield child
        elif child.tag == _SDT:
            content = child.find(_SDT_CONTENT)
            if content is not None:
                yield from content.iterchildren(_TC)


def _grid_before(tr: Any) -> int:
    trPr = tr.trPr
    return min(_int_attr(trPr, "w:gridBefore"), 64) if trPr is not None else 0


def _int_attr(props: Any, tag: str) -> int:
    node = props.find(qn(tag)) if props is not None else None
    try:
        return int(node.get(qn("w:val"))) if node is not None else 0
    except (TypeError, ValueError):
        return 0


def _cell_text(tc: Any, rels: dict[str, str], links: list[dict[str, str]], styles: RunStyles) -> str:
    parts: list[str] = []
    for kind, element in _iter_blocks(tc):
        if kind == "p":
            text = _paragraph_text(element, rels, links, styles).strip()
            if text and element.pPr is not None and element.pPr.numPr is not None:
                text = "- " + text
        else:
            # A nested table is flattened: cells joined by ", ", rows by "; ".
            text = "; ".join(", ".join(c for c in row if c) for row in _table_grid(element, rels, links, styles))
        if text:
            parts.append(text)
    return "<br>".join(parts)
