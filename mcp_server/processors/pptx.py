"""PPTX -> Markdown with python-pptx: one ``--- Slide N ---`` section per slide.

Each slide gives its title as ``# Title``, then its shapes top-to-bottom, left-to-right (group
shapes recursed): text with bullet levels (``"  " * level + "- "`` for placeholder bodies),
tables as Markdown (a merged cell's text repeated in every position it covers), chart title,
categories and series names, picture alt text, and speaker notes as ``Notes: ...``. Run
hyperlinks and click actions go to ``metadata["hyperlinks"]`` and into the text as
``text (url)``. One ``Location`` per slide.

A shape that python-pptx cannot read (e.g. a placeholder whose layout counterpart is missing)
is skipped and named in ``metadata["shape_errors"]``; the rest of the slide still comes out.

The reading itself is in ``_pptx_read`` (python-pptx), imported by the parser workers only: the
server processes, which import this module for the declaration, never load python-pptx.
"""

from __future__ import annotations

from typing import ClassVar

from mcp_server.core.errors import MCPServerError, ProcessingError
from mcp_server.core.markup import SLIDES
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.formats import Chunking, Format
from mcp_server.processors.ooxml import guard_ooxml

__all__ = ["PptxProcessor"]


class PptxProcessor:
    format: ClassVar[Format] = Format(
        doc_type="pptx",
        description="PowerPoint (python-pptx): slides, bullets, tables, charts, notes, links",
        extensions=(".pptx", ".pptm", ".potx", ".ppsx"),
        mime_types=(
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            "application/vnd.ms-powerpoint.presentation.macroenabled.12",
            "application/vnd.openxmlformats-officedocument.presentationml.template",
            "application/vnd.openxmlformats-officedocument.presentationml.slideshow",
        ),
        zip_member="ppt/",
        chunking=Chunking(size=800, overlap=150, breaks=SLIDES),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        guard_ooxml(doc.data, options, kind="PPTX")
        from mcp_server.processors import _pptx_read  # python-pptx: parser workers only

        try:
            return _pptx_read.read(doc.data)
        except MCPServerError:
            raise
        except Exception as exc:  # python-pptx/lxml/KeyError on broken packages
            raise ProcessingError(f"the PPTX file could not be parsed: {type(exc).__name__}",
                                  reason="corrupt") from exc
