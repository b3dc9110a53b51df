"""Documents that hide the payload by techniques read since the fifth processing version: HTML clipping,
scaling, collapsed boxes, tiny and faint text (inline and by a style sheet); Word ``w:specVanish``
and theme colours; cells of 1 pt or under a ``;;;`` number format; slide runs of 1 pt, transparent or
coloured like their shape's fill or the slide's background. Each with what a reader does see (a box of
height 0 that lets its text overflow, white on a dark theme colour, a 9 pt cell, white text on a dark
panel, a padded box). Built here, like ``_hidden_documents``.
"""

from __future__ import annotations

import io

import docx
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from openpyxl.styles import Font
from pptx import Presentation
from pptx.dml.color import RGBColor as PptxColour
from pptx.util import Inches, Pt

from tests.tools._hidden_documents import PAYLOAD, VISIBLE, _page, harvest_book, saved, shaded

# --- HTML ------------------------------------------------------------------------------------------
_INLINE = {
    "clip-rect": "position:absolute; clip:rect(0 0 0 0)",
    "clip-path-inset": "clip-path: inset(50%)",
    "scale-zero": "transform: scale(0)",
    "collapsed-box": "height:0; overflow:hidden",
    "one-pixel-font": "font-size:1px",
    "faint": "opacity:0.02",
}
GAP_HTML_HIDDEN: dict[str, bytes] = {
    **{f"inline-{name}.html": _page(f'<div style="{style}"><p>{PAYLOAD}</p></div>') for name, style in _INLINE.items()},
    **{f"sheet-{name}.html": _page(f'<div class="x"><p>{PAYLOAD}</p></div>', f"<style>.x {{ {style} }}</style>")
       for name, style in _INLINE.items()},
    "sheet-split-collapsed-box.html": _page(f'<div class="menu closed"><p>{PAYLOAD}</p></div>',
                                            "<style>.menu { overflow: hidden } .closed { height: 0 }</style>"),
}
GAP_HTML_CLEAN: dict[str, bytes] = {
    "zero-height-overflowing.html": _page(f'<div style="height:0"><p>{PAYLOAD}</p></div>'),
    "padded-collapsed-box.html": _page(f'<div style="height:0; overflow:hidden; padding-bottom:56%"><p>{PAYLOAD}</p>'
                                       "</div>"),
    "small-but-readable.html": _page(f'<p style="font-size:0.8em; opacity:0.6; transform:scale(0.9)">{PAYLOAD}</p>'),
}


# --- DOCX ------------------------------------------------------------------------------------------
def _word(kind: str | None) -> bytes:
    document = docx.Document()
    for line in VISIBLE:
        document.add_paragraph(line)
    if kind is not None:
        paragraph = document.add_paragraph()
        properties = paragraph.add_run(PAYLOAD)._r.get_or_add_rPr()
        if kind == "spec-vanish":
            properties.append(OxmlElement("w:specVanish"))
        else:
            colour = OxmlElement("w:color")
            colour.set(qn("w:val"), "000000")  # Word draws the theme colour, not this one
            colour.set(qn("w:themeColor"), "background1")
            properties.append(colour)
            if kind == "theme-white-on-dark":
                shaded(paragraph._p.get_or_add_pPr(), "1F1F1F")
    return saved(document)


GAP_DOCX_HIDDEN = {"spec-vanish.docx": _word("spec-vanish"), "theme-background-colour.docx": _word("theme-white")}
GAP_DOCX_CLEAN = {"theme-white-on-dark.docx": _word("theme-white-on-dark")}


# --- XLSX ------------------------------------------------------------------------------------------
def _book(kind: str) -> bytes:
    book, sheet = harvest_book()
    sheet["B6"] = PAYLOAD
    if kind == "tiny":
        sheet["B6"].font = Font(size=1)
    elif kind == "blank-format":
        sheet["B6"].number_format = ";;;"
    elif kind == "small":
        sheet["B6"].font = Font(size=9)
    return saved(book)


GAP_XLSX_HIDDEN = {"one-point-cell.xlsx": _book("tiny"), "blank-number-format.xlsx": _book("blank-format")}
GAP_XLSX_CLEAN = {"nine-point-cell.xlsx": _book("small")}


# --- PPTX ------------------------------------------------------------------------------------------
def _slides(kind: str) -> bytes:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Orchard report"
    box = slide.shapes.add_textbox(Inches(0.5), Inches(2), Inches(9), Inches(2))
    box.text_frame.text = " ".join(VISIBLE)
    other = slide.shapes.add_textbox(Inches(0.5), Inches(4.5), Inches(9), Inches(1))
    run = other.text_frame.paragraphs[0].add_run()
    run.text = PAYLOAD
    if kind == "tiny":
        run.font.size = Pt(1)
    elif kind in ("white", "transparent"):
        run.font.color.rgb = PptxColour(0xFF, 0xFF, 0xFF)
        if kind == "transparent":
            colour = run.font.color._color._xClr
            alpha = colour.makeelement(qn("a:alpha"), {"val": "0"})
            colour.append(alpha)  # the fill stays solid, fully transparent
    elif kind in ("fill-colour", "white-on-panel"):
        other.fill.solid()
        other.fill.fore_color.rgb = PptxColour(0x33, 0x66, 0x99) if kind == "fill-colour" else PptxColour(0, 0, 0x40)
        run.font.color.rgb = PptxColour(0x33, 0x66, 0x99) if kind == "fill-colour" else PptxColour(0xFF, 0xFF, 0xFF)
    elif kind == "dark-slide":
        slide.background.fill.solid()
        slide.background.fill.fore_color.rgb = PptxColour(0x10, 0x10, 0x10)
        run.font.color.rgb = PptxColour(0xFF, 0xFF, 0xFF)
    elif kind == "slide-colour":
        slide.background.fill.solid()
        slide.background.fill.fore_color.rgb = PptxColour(0x10, 0x40, 0x10)
        run.font.color.rgb = PptxColour(0x10, 0x40, 0x10)
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


GAP_PPTX_HIDDEN = {"one-point-run.pptx": _slides("tiny"), "white-run.pptx": _slides("white"),
                   "transparent-run.pptx": _slides("transparent"), "run-like-its-fill.pptx": _slides("fill-colour"),
                   "run-like-the-slide.pptx": _slides("slide-colour")}
GAP_PPTX_CLEAN = {"white-run-on-dark-panel.pptx": _slides("white-on-panel"),
                  "white-run-on-dark-slide.pptx": _slides("dark-slide")}


GAP_HIDDEN: dict[str, bytes] = {**GAP_HTML_HIDDEN, **GAP_DOCX_HIDDEN, **GAP_XLSX_HIDDEN, **GAP_PPTX_HIDDEN}
GAP_CLEAN: dict[str, bytes] = {**GAP_HTML_CLEAN, **GAP_DOCX_CLEAN, **GAP_XLSX_CLEAN, **GAP_PPTX_CLEAN}
