"""More documents that hide the payload, where the hiding comes from somewhere other than the text's
own direct formatting: style sheets, Word styles, cell formats, speaker notes, shapes drawn on top,
a scan's OCR layer, and the formats read through another (e-mail and EPUB through HTML, RTF and
ODF through Word). Each with a clean twin or a legitimate case a reader sees. Built here, like
``_hidden_documents``.
"""

from __future__ import annotations

import io
import zipfile

import docx
import pymupdf
from docx.enum.style import WD_STYLE_TYPE
from docx.shared import Pt, RGBColor
from openpyxl.styles import Font, PatternFill
from pptx import Presentation
from pptx.dml.color import RGBColor as PptxColour
from pptx.enum.shapes import MSO_SHAPE
from pptx.util import Inches

from tests.tools._hidden_documents import (
    PAYLOAD,
    VISIBLE,
    _page,
    harvest_book,
    saved,
    scanned_pdf_with_ocr_layer,
    shaded,
)

# --- HTML: the page's own style sheet -----------------------------------------------------------
SHEET_HIDDEN: dict[str, bytes] = {
    "sheet-class-display-none.html": _page(f'<div class="note"><p>{PAYLOAD}</p></div>',
                                           "<style>.note { display: none }</style>"),
    "sheet-id-visibility.html": _page(f'<p id="aside">{PAYLOAD}</p>', "<style>#aside{visibility:hidden}</style>"),
    "sheet-descendant-font-size.html": _page(f'<section class="fine"><p><span>{PAYLOAD}</span></p></section>',
                                             "<style>.fine span { font-size: 0 }</style>"),
    "sheet-opacity.html": _page(f'<p class="ghost">{PAYLOAD}</p>', "<style>p.ghost{opacity:0}</style>"),
    "sheet-white-on-white.html": _page(f'<p class="quiet">{PAYLOAD}</p>', "<style>.quiet{color:#ffffff}</style>"),
    "sheet-same-colour.html": _page(f'<div class="box"><p>{PAYLOAD}</p></div>',
                                    "<style>.box{background-color:#336699} .box p{color:#336699}</style>"),
    "sheet-off-screen.html": _page(f'<div class="away">{PAYLOAD}</div>',
                                   "<style>@media screen { .away { position:absolute; left:-10000px } }</style>"),
}
# A reader sees these: a rule for a state of the page (hover), for print, overridden by a more
# specific rule, and white text on a box the sheet paints dark.
SHEET_CLEAN: dict[str, bytes] = {
    "sheet-visible.html": _page(
        f'<div class="card"><p class="lead">{PAYLOAD}</p></div>',
        "<style>.lead:hover { display:none } @media print { .lead { display:none } } .card p { display:none }"
        " .card p.lead { display:block } .card { background:#1b1b1b } .card .lead { color:#fafafa }</style>"),
}


# --- e-mail and EPUB: HTML bodies read by the HTML rules -----------------------------------------
def _mail(html: str) -> bytes:
    return ("From: grower@example.org\r\nTo: board@example.org\r\nSubject: Orchard report\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
            f"<html><body>{''.join(f'<p>{line}</p>' for line in VISIBLE)}{html}</body></html>\r\n").encode()


def _epub(body: str, css: str = "") -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        book.writestr("mimetype", "application/epub+zip")
        book.writestr("META-INF/container.xml", '<?xml version="1.0"?><container version="1.0" '
                      'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile '
                      'full-path="OPS/book.opf" media-type="application/oebps-package+xml"/></rootfiles></container>')
        book.writestr("OPS/book.opf", '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" '
                      'version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Orchards'
                      '</dc:title></metadata><manifest><item id="c1" href="c1.xhtml" media-type="application/'
                      'xhtml+xml"/><item id="css" href="book.css" media-type="text/css"/></manifest><spine>'
                      '<itemref idref="c1"/></spine></package>')
        book.writestr("OPS/book.css", css)
        paragraphs = "".join(f"<p>{line}</p>" for line in VISIBLE)
        book.writestr("OPS/c1.xhtml", '<html><head><title>Harvest</title><link rel="stylesheet" href="book.css"/>'
                      f"</head><body><h1>Harvest</h1>{paragraphs}{body}</body></html>")
    return out.getvalue()


WRAPPED_HIDDEN: dict[str, bytes] = {
    "white-text.eml": _mail(f'<p style="color:#ffffff">{PAYLOAD}</p>'),
    "sheet-class.eml": _mail(f'<style>.pre{{font-size:0}}</style><p class="pre">{PAYLOAD}</p>'),
    "inline-hidden.epub": _epub(f'<p style="font-size:0px">{PAYLOAD}</p>'),
    "sheet-hidden.epub": _epub(f'<p class="aside">{PAYLOAD}</p>', ".aside { display: none }"),
}
WRAPPED_CLEAN: dict[str, bytes] = {"clean.eml": _mail(""), "clean.epub": _epub("", ".note { color: #222 }")}


# --- DOCX: formatting from a style ----------------------------------------------------------------
def _styled_docx(kind: str | None) -> bytes:
    document = docx.Document()
    for line in VISIBLE:
        document.add_paragraph(line)
    if kind in ("paragraph-vanish", "paragraph-tiny"):
        style = document.styles.add_style("Fine print", WD_STYLE_TYPE.PARAGRAPH)
        style.base_style = document.styles["Normal"]
        if kind == "paragraph-vanish":
            style.font.hidden = True
        else:
            style.font.size = Pt(1)
        document.add_paragraph(PAYLOAD, style="Fine print")
    elif kind in ("character-white", "white-on-dark"):
        style = document.styles.add_style("Quiet", WD_STYLE_TYPE.CHARACTER)
        style.font.color.rgb = RGBColor(0xFF, 0xFF, 0xFF)
        paragraph = document.add_paragraph()
        paragraph.add_run(PAYLOAD, style="Quiet")
        if kind == "white-on-dark":
            shaded(paragraph._p.get_or_add_pPr(), "1F1F1F")
    elif kind == "cell-shading":
        cell = document.add_table(rows=1, cols=2).cell(0, 1)
        cell.paragraphs[0].add_run(PAYLOAD).font.color.rgb = RGBColor(0xC0, 0x00, 0x00)
        shaded(cell._tc.get_or_add_tcPr(), "C00000")
    return saved(document)


DOCX_STYLED_HIDDEN = {f"style-{kind}.docx": _styled_docx(kind)
                      for kind in ("paragraph-vanish", "paragraph-tiny", "character-white", "cell-shading")}
DOCX_STYLED_CLEAN = {"style-white-on-dark.docx": _styled_docx("white-on-dark")}


# --- RTF and ODT: read through Word ---------------------------------------------------------------
def _rtf(hidden_group: str) -> bytes:
    paragraphs = "".join(f"{line}\\par\n" for line in VISIBLE)
    return ("{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Arial;}}{\\colortbl;\\red255\\green255\\blue255;}\n"
            f"\\f0\\fs20 {paragraphs}{hidden_group}\\par\n}}").encode()


_ODF = "urn:oasis:names:tc:opendocument:xmlns"


def _odt(automatic_style: str) -> bytes:
    paragraphs = "".join(f"<text:p>{line}</text:p>" for line in VISIBLE)
    payload = f'<text:p><text:span text:style-name="T1">{PAYLOAD}</text:span></text:p>' if automatic_style else ""
    content = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="{_ODF}:office:1.0" '
               f'xmlns:style="{_ODF}:style:1.0" xmlns:text="{_ODF}:text:1.0" xmlns:fo="{_ODF}:xsl-fo-compatible:1.0" '
               'office:version="1.3"><office:automatic-styles>'
               f'<style:style style:name="T1" style:family="text"><style:text-properties {automatic_style}/>'
               f"</style:style></office:automatic-styles><office:body><office:text>{paragraphs}{payload}"
               "</office:text></office:body></office:document-content>")
    manifest = ('<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:'
                'opendocument:xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry manifest:full-path="/" '
                'manifest:media-type="application/vnd.oasis.opendocument.text"/><manifest:file-entry '
                'manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr(zipfile.ZipInfo("mimetype"), "application/vnd.oasis.opendocument.text")
        package.writestr("META-INF/manifest.xml", manifest, compress_type=zipfile.ZIP_DEFLATED)
        package.writestr("content.xml", content, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


CONVERTED_HIDDEN: dict[str, bytes] = {
    "hidden.rtf": _rtf(f"{{\\v {PAYLOAD}}}"),
    "white.rtf": _rtf(f"{{\\cf1 {PAYLOAD}}}"),
    "hidden.odt": _odt('text:display="none"'),
    "white.odt": _odt('fo:color="#ffffff"'),
}
CONVERTED_CLEAN: dict[str, bytes] = {"clean.rtf": _rtf(""), "clean.odt": _odt("")}


# --- XLSX: the cell's font the colour of its fill --------------------------------------------------
def _coloured_xlsx(font: str | None, fill: str | None) -> bytes:
    book, sheet = harvest_book()
    if font is not None:
        sheet["B6"] = PAYLOAD
        sheet["B6"].font = Font(color=font)
        if fill is not None:
            sheet["B6"].fill = PatternFill(fill_type="solid", fgColor=fill)
    return saved(book)


XLSX_COLOUR_HIDDEN = {"white-text.xlsx": _coloured_xlsx("FFFFFFFF", None),
                      "fill-colour-text.xlsx": _coloured_xlsx("FF336699", "FF336699")}
XLSX_COLOUR_CLEAN = {"white-on-dark.xlsx": _coloured_xlsx("FFFFFFFF", "FF1F1F1F")}


# --- PPTX: speaker notes, a shape on top -----------------------------------------------------------
def _deck(kind: str | None) -> bytes:
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Orchard report"
    if kind == "behind":  # a filled panel drawn first: the text stands on it
        panel = slide.shapes.add_shape(MSO_SHAPE.RECTANGLE, Inches(0.3), Inches(1.8), Inches(9.4), Inches(4))
        panel.fill.solid()
        panel.fill.fore_color.rgb = PptxColour(0x20, 0x20, 0x20)
    box = slide.shapes.add_textbox(Inches(0.5), Inches(2), Inches(9), Inches(2))
    box.text_frame.text = " ".join(VISIBLE)
    if kind == "notes":
        slide.notes_slide.notes_text_frame.text = PAYLOAD
    elif kind in ("covered", "behind"):
        under = slide.shapes.add_textbox(Inches(0.5), Inches(4.5), Inches(9), Inches(1))
        under.text_frame.text = PAYLOAD
        if kind == "covered":
            lid = slide.shapes.add_shape(MSO_SHAPE.RECTANGLE, Inches(0.4), Inches(4.4), Inches(9.2), Inches(1.2))
            lid.fill.solid()
            lid.fill.fore_color.rgb = PptxColour(0xFF, 0xFF, 0xFF)
            lid.line.fill.background()
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


PPTX_MORE_HIDDEN = {"speaker-notes.pptx": _deck("notes"), "covered-by-shape.pptx": _deck("covered")}
PPTX_MORE_CLEAN = {"text-on-panel.pptx": _deck("behind")}


# --- PDF: an OCR layer that says more than its scan; text clipped out of view -----------------------
def clipped_pdf() -> bytes:
    """The visible text, and the payload drawn inside a clip of one point square: never painted."""
    pdf = pymupdf.open()
    page = pdf.new_page()
    for i, line in enumerate(VISIBLE):
        page.insert_text((50, 80 + 20 * i), line, fontsize=10)
    xref = page.get_contents()[-1]
    stream = pdf.xref_stream(xref) + (
        f"\nq 0 0 1 1 re W n BT /helv 10 Tf 1 0 0 1 50 500 Tm ({PAYLOAD}) Tj ET Q\n").encode()
    pdf.update_stream(xref, stream)
    return bytes(pdf.tobytes())


def covered_pdf(kind: str) -> bytes:
    """The visible text and the payload, with a filled shape drawn after the payload (over it: ``white``,
    ``navy``; a strike-through bar, ``struck``; a translucent highlight, ``translucent``) or before it
    (``shaded``: a table cell's background)."""
    pdf = pymupdf.open()
    page = pdf.new_page()
    for i, line in enumerate(VISIBLE):
        page.insert_text((50, 80 + 20 * i), line, fontsize=10)
    box = pymupdf.Rect(45, 188, 560, 204)
    if kind == "shaded":
        page.draw_rect(box, color=None, fill=(0.85, 0.85, 0.85))
    page.insert_text((50, 200), PAYLOAD, fontsize=10)
    if kind in ("white", "navy"):
        page.draw_rect(box, color=None, fill=(1, 1, 1) if kind == "white" else (0.1, 0.1, 0.4))
    elif kind == "struck":
        page.draw_rect(pymupdf.Rect(45, 195, 560, 197), color=None, fill=(0, 0, 0))
    elif kind == "translucent":
        page.draw_rect(box, color=None, fill=(1, 1, 0), fill_opacity=0.35)
    page.insert_text((50, 240), "A line drawn after the shape stays visible.", fontsize=10)
    return bytes(pdf.tobytes())


PDF_MORE_HIDDEN = {"ocr-layer-says-more.pdf": scanned_pdf_with_ocr_layer(PAYLOAD),
                   "under-a-white-box.pdf": covered_pdf("white"), "under-a-navy-box.pdf": covered_pdf("navy")}
PDF_MORE_CLEAN = {"on-a-shaded-cell.pdf": covered_pdf("shaded"), "struck-through.pdf": covered_pdf("struck"),
                  "under-a-translucent-highlight.pdf": covered_pdf("translucent")}

MORE_HIDDEN: dict[str, bytes] = {**SHEET_HIDDEN, **WRAPPED_HIDDEN, **DOCX_STYLED_HIDDEN, **CONVERTED_HIDDEN,
                                 **XLSX_COLOUR_HIDDEN, **PPTX_MORE_HIDDEN, **PDF_MORE_HIDDEN}
MORE_CLEAN: dict[str, bytes] = {**SHEET_CLEAN, **WRAPPED_CLEAN, **DOCX_STYLED_CLEAN, **CONVERTED_CLEAN,
                                **XLSX_COLOUR_CLEAN, **PPTX_MORE_CLEAN, **PDF_MORE_CLEAN}
