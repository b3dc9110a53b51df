"""Everything that touches python-pptx: slides, shapes, tables, charts and notes into Markdown,
as ``pptx.py`` describes the format's output. Imported only inside parser workers (``pptx.py``
imports it lazily), so the server processes never load python-pptx.
"""

from __future__ import annotations

import io
from typing import Any

import pptx
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER

from mcp_server.core.markup import slide_marker
from mcp_server.core.models import ExtractedTable, Location, ProcessedDocument
from mcp_server.core.visibility import hidden
from mcp_server.processors._markdown import markdown_table
from mcp_server.processors._pptx_hidden import behind, covered_shapes, run_reason, slide_background

__all__ = ["read"]


_TITLE_TYPES = {PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE}
_BULLET_TYPES = {PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT, PP_PLACEHOLDER.VERTICAL_BODY,
                 PP_PLACEHOLDER.VERTICAL_OBJECT}
_MAX_GROUP_DEPTH = 32


def read(data: bytes) -> ProcessedDocument:
    """The document in ``data`` converted; python-pptx's own exceptions pass through."""
    return _Converter().convert(pptx.Presentation(io.BytesIO(data)))


class _Converter:
    def __init__(self) -> None:
        self.hyperlinks: list[dict[str, Any]] = []
        self.shape_errors: list[dict[str, Any]] = []
        self.tables: list[ExtractedTable] = []
        self.slide_no = 0
        self.slide_size: tuple[int, int] | None = None  # EMU; None when the presentation does not say
        self.background: Any = None  # what is behind the slide's text boxes (``_pptx_hidden``)
        self.under: Any = None  # what is behind the text frame being read

    def convert(self, presentation: Any) -> ProcessedDocument:
        width, height = presentation.slide_width, presentation.slide_height
        self.slide_size = (int(width), int(height)) if width and height else None
        sections: list[str] = []
        locations: list[Location] = []
        offset = 0
        notes_count = 0
        for number, slide in enumerate(presentation.slides, start=1):
            self.slide_no = number
            self.background = slide_background(slide)
            body = self._shapes(slide.shapes, depth=0)
            notes = self._notes(slide)
            if notes:
                notes_count += 1
                body.append(hidden(f"Notes: {notes}", "speaker notes"))  # the presenter's, not on the slide
            if slide._element.get("show") in ("0", "false"):  # skipped by the slide show
                body = [hidden(part, "hidden slide") for part in body]
            lines = [slide_marker(number), *body]
            text = "\n\n".join(lines)
            if sections:
                offset += 2
            locations.append(Location(start=offset, end=offset + len(text), slide=number))
            offset += len(text)
            sections.append(text)
        metadata: dict[str, Any] = {
            "slide_count": len(sections),
            "slides_with_notes": notes_count,
            "table_count": len(self.tables),
            "hyperlinks": self.hyperlinks,
        }
        if self.shape_errors:
            metadata["shape_errors"] = self.shape_errors
        title = presentation.core_properties.title
        if title:
            metadata["title"] = title
        return ProcessedDocument(
            content="\n\n".join(sections),
            doc_type="pptx",
            metadata=metadata,
            tables=tuple(self.tables),
            locations=tuple(locations),
        )

    def _shapes(self, shapes: Any, depth: int) -> list[str]:
        out: list[str] = []
        covered = covered_shapes(shapes) if depth == 0 else set()
        for shape in _reading_order(shapes):
            try:
                parts = self._shape(shape, depth)
                if depth == 0 and parts and self._off_slide(shape):
                    parts = [hidden(part, "outside the slide") for part in parts]
                elif parts and shape.shape_id in covered:
                    parts = [hidden(part, "covered by a shape") for part in parts]
                out.extend(parts)
            except Exception as exc:  # one broken shape must not lose the slide
                self.shape_errors.append(
                    {"slide": self.slide_no, "shape": _safe_name(shape), "error": type(exc).__name__}
                )
        return out

    def _off_slide(self, shape: Any) -> bool:
        """Whether the shape lies wholly outside the slide (a slide show never shows it)."""
        if self.slide_size is None or shape.left is None or shape.top is None:
            return False
        left, top = int(shape.left), int(shape.top)
        right, bottom = left + int(shape.width or 0), top + int(shape.height or 0)
        width, height = self.slide_size
        return left >= width or top >= height or right <= 0 or bottom <= 0

    def _shape(self, shape: Any, depth: int) -> list[str]:
        out: list[str] = []
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            if depth < _MAX_GROUP_DEPTH:
                out.extend(self._shapes(shape.shapes, depth + 1))
            return out
        if getattr(shape, "has_table", False) and shape.has_table:
            markdown = markdown_table(_table_grid(shape.table))
            if markdown:
                out.append(markdown)
                self.tables.append(
                    ExtractedTable(content=markdown, location=f"slide {self.slide_no}",
                                   metadata={"slide": self.slide_no})
                )
        if getattr(shape, "has_chart", False) and shape.has_chart:
            out.append(_chart_text(shape.chart))
        if shape.has_text_frame:
            text = self._text_frame(shape)
            if text:
                out.append(text)
        if shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
            alt = shape._element._nvXxPr.cNvPr.get("descr")
            if alt:
                out.append(f"[Image: {alt.strip()}]")
        link = self._click_link(shape)
        if link:
            out.append(link)
        return [part for part in out if part.strip()]

    def _text_frame(self, shape: Any) -> str:
        kind = shape.placeholder_format.type if shape.is_placeholder else None
        self.under = behind(shape, self.background)
        if kind in _TITLE_TYPES:
            paragraphs = shape.text_frame.paragraphs
            title = " ".join(" ".join(self._paragraph_text(p, links=False) for p in paragraphs).split())
            return f"# {title}" if title else ""
        bullets = kind in _BULLET_TYPES
        lines = []
        for paragraph in shape.text_frame.paragraphs:
            text = self._paragraph_text(paragraph).strip()
            if not text:
                continue
            level = paragraph.level
            if bullets:
                lines.append("  " * level + "- " + text)
            else:
                lines.append("  " * level + text)
        return "\n".join(lines)

    def _paragraph_text(self, paragraph: Any, links: bool = True) -> str:
        parts = []
        for run in paragraph.runs:
            text = run.text
            address = _run_address(run) if links else None
            if address and text.strip():
                self.hyperlinks.append({"slide": self.slide_no, "text": text.strip(), "url": address})
                text = text if text.strip() == address else f"{text} ({address})"
            why = run_reason(run._r, self.under) if text.strip() else None
            parts.append(hidden(text, why) if why is not None else text)
        if not paragraph.runs:
            return str(paragraph.text)
        return "".join(parts).replace("\v", "\n")

    def _click_link(self, shape: Any) -> str:
        try:
            address = shape.click_action.hyperlink.address
        except Exception:  # shapes without cNvPr (graphic frames of some kinds) have no action
            return ""
        if not address:
            return ""
        self.hyperlinks.append({"slide": self.slide_no, "text": _safe_name(shape), "url": address})
        return f"Link: {address}"

    def _notes(self, slide: Any) -> str:
        if not slide.has_notes_slide:
            return ""
        try:
            frame = slide.notes_slide.notes_text_frame
        except Exception:  # a notes slide without its body placeholder
            return ""
        return " ".join(frame.text.split()) if frame is not None else ""


def _reading_order(shapes: Any) -> list[Any]:
    """Titles first, then top-to-bottom, left-to-right; shapes without a position keep their place."""

    def key(item: tuple[int, Any]) -> tuple[int, int, int, int]:
        index, shape = item
        try:
            is_title = shape.is_placeholder and shape.placeholder_format.type in _TITLE_TYPES
        except Exception:
            is_title = False
        try:
            top, left = int(shape.top or 0), int(shape.left or 0)
        except Exception:  # inherited position whose layout placeholder is missing
            top, left = 0, 0
        return (0 if is_title else 1, top, left, index)

    return [shape for _, shape in sorted(enumerate(shapes), key=key)]


def _run_address(run: Any) -> str | None:
    try:
        return run.hyperlink.address
    except KeyError:  # hlinkClick pointing at a relationship that is not there
        return None


def _safe_name(shape: Any) -> str:
    try:
        return str(shape.name)
    except Exception:
        return "?"


def _table_grid(table: Any) -> list[list[str]]:
    rows = list(table.rows)
    width = len(table.columns)
    grid = [["" for _ in range(width)] for _ in rows]
    for r, row in enumerate(rows):
        for c, cell in enumerate(list(row.cells)[:width]):
            if cell.is_spanned:
                continue  # filled from its merge origin below
            text = " ".join(cell.text.split())
            height = cell.span_height if cell.is_merge_origin else 1
            span = cell.span_width if cell.is_merge_origin else 1
            for dr in range(height):
                for dc in range(span):
                    if r + dr < len(grid) and c + dc < width:
                        grid[r + dr][c + dc] = text
    return [row for row in grid if any(row)]


def _chart_text(chart: Any) -> str:
    # Every part is optional: python-pptx does not know every chart type (e.g. chartex plots).
    title = ""
    try:
        if chart.has_title and chart.chart_title.has_text_frame:
            title = " ".join(chart.chart_title.text_frame.text.split())
    except Exception:
        title = ""
    lines = [f"Chart: {title}" if title else "Chart"]
    try:
        categories = [str(c) for c in chart.plots[0].categories if c is not None and str(c)]
    except Exception:
        categories = []
    try:
        series = [str(s.name) for s in chart.series]
    except Exception:
        series = []
    if categories:
        lines.append("Categories: " + ", ".join(categories))
    if series:
        lines.append("Series: " + ", ".join(series))
    return "\n".join(lines)
