"""Minimal readers that turn corpus files into ProcessedDocuments with the processors' markers.

The chunker is tested on its own contract (markers in, locations out), independent of how the
processors evolve; locations are left empty so the chunker reads the markers itself.
"""

from __future__ import annotations

from pathlib import Path

import docx
import openpyxl
import pptx
import pymupdf

from mcp_server.core.models import ProcessedDocument


def pdf_document(path: Path) -> ProcessedDocument:
    with pymupdf.open(path) as pdf:
        pages = [f"--- Page {n} ---\n{page.get_text().strip()}" for n, page in enumerate(pdf, start=1)]
    return ProcessedDocument(content="\n\n".join(pages), doc_type="pdf")


def pptx_document(path: Path) -> ProcessedDocument:
    slides = []
    for number, slide in enumerate(pptx.Presentation(str(path)).slides, start=1):
        texts = [shape.text_frame.text for shape in slide.shapes if shape.has_text_frame]
        slides.append("\n".join([f"--- Slide {number} ---", *texts]))
    return ProcessedDocument(content="\n\n".join(slides), doc_type="pptx")


def xlsx_document(path: Path) -> ProcessedDocument:
    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    sheets = []
    for sheet in book.worksheets:
        rows = [["" if v is None else str(v) for v in row] for row in sheet.iter_rows(values_only=True)]
        rows = [row for row in rows if any(cell.strip() for cell in row)]
        lines = [f"=== Sheet: {sheet.title} ==="]
        if rows:
            width = max(len(row) for row in rows)
            rows = [row + [""] * (width - len(row)) for row in rows]
            lines.append("| " + " | ".join(rows[0]) + " |")
            lines.append("|" + "---|" * width)
            lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
        sheets.append("\n".join(lines))
    book.close()
    return ProcessedDocument(content="\n\n".join(sheets), doc_type="xlsx")


def docx_document(path: Path) -> ProcessedDocument:
    parts = []
    for paragraph in docx.Document(str(path)).paragraphs:
        text = paragraph.text.strip()
        if not text:
            continue
        style = paragraph.style.name if paragraph.style is not None else ""
        if style.startswith("Heading ") and style[8:].isdigit():
            text = "#" * int(style[8:]) + " " + text
        parts.append(text)
    return ProcessedDocument(content="\n\n".join(parts), doc_type="docx")
