"""XLSX -> one Markdown section per sheet, via pandas (openpyxl engine) and ``tabular``.

The bytes pass the OOXML guard first; pandas only ever receives a ``BytesIO``. Every worksheet
is read with ``header=None`` (chartsheets have no cells and are skipped) so row ``i`` of a frame
is source row ``i + 1``; header detection and typing are ``tabular``'s. Formulas give their
cached values (openpyxl ``data_only``); external links are not followed. A workbook whose
stylesheet openpyxl cannot read (alternate content, a nameless named style: files written by
other suites than Excel) is read again with its styles plainer (``_plain_styles``).
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
import zipfile
from typing import TYPE_CHECKING, Any, ClassVar

from mcp_server.core.errors import MCPServerError, ProcessingError
from mcp_server.core.markup import SHEETS
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._xlsx_hidden import mark_hidden_cells
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.formats import Chunking, Format
from mcp_server.processors.ooxml import guard_ooxml
from mcp_server.processors.tabular import RawSheet, analyse, build_document

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["XlsxProcessor", "read_xlsx"]



class XlsxProcessor:
    format: ClassVar[Format] = Format(
        doc_type="xlsx",
        description="Excel workbooks (pandas + openpyxl): every sheet, header and column types",
        extensions=(".xlsx", ".xlsm", ".xltx"),
        mime_types=(
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "application/vnd.ms-excel.sheet.macroenabled.12",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.template",
        ),
        zip_member="xl/",
        chunking=Chunking(size=1200, overlap=200, breaks=SHEETS, headings=False),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        raws = mark_hidden_cells(doc.data, read_xlsx(doc.data, options))  # hidden sheets, rows, columns
        sheets = [analyse(raw) for raw in raws]
        return build_document(sheets, doc_type="xlsx", max_rows=options.max_rows_per_sheet)


def read_xlsx(data: bytes, options: ProcessOptions) -> list[RawSheet]:
    """Every worksheet's cells as plain Python values; raises ``ProcessingError``."""
    guard_ooxml(data, options, kind="XLSX")
    try:
        return _read(data)
    except MCPServerError:
        raise
    except Exception as exc:  # openpyxl/pandas/zipfile/lxml errors on broken workbooks
        with contextlib.suppress(Exception):  # a damaged package fails here too: the first error is named
            repaired = _plain_styles(data)
            if repaired is not None:
                return _read(repaired)
        raise ProcessingError(f"the XLSX file could not be parsed: {type(exc).__name__}", reason="corrupt") from exc


def _read(data: bytes) -> list[RawSheet]:
    import pandas as pd  # here: ~26 MB that the server processes never need (parsers preload it)

    # openpyxl warns about unsupported extensions, data validation, default styles...
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pd.ExcelFile(io.BytesIO(data), engine="openpyxl") as book:
            names = [ws.title for ws in book.book.worksheets]
            return [RawSheet(name=name, rows=_rows(book.parse(name, header=None))) for name in names]


# Markup compatibility (ECMA-376 part 3): a reader that does not know a Choice's namespace takes
# the Fallback. openpyxl knows neither and drops the whole element (then a cell's style index
# points past the list); a named cell style without a name (builtin "Normal") is a TypeError.
_ALTERNATE = re.compile(rb"<(?:\w+:)?AlternateContent\b[^>]*>(?:(?!</?(?:\w+:)?AlternateContent\b).)*?"
                        rb"<(?:\w+:)?Fallback>(.*?)</(?:\w+:)?Fallback>\s*</(?:\w+:)?AlternateContent>", re.DOTALL)
_CELL_STYLES = re.compile(rb"<(\w+:)?cellStyles\b[^>]*/>|<(\w+:)?cellStyles\b.*?</(?:\w+:)?cellStyles>", re.DOTALL)
_STYLES = "xl/styles.xml"


def _plain_styles(data: bytes) -> bytes | None:
    """The workbook with its stylesheet's alternate content resolved to the fallbacks and its named
    styles dropped (they only format); None when there is nothing to change. Values and number
    formats (dates) are untouched."""
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        try:
            styles = source.read(_STYLES)
        except KeyError:
            return None
        plain = _CELL_STYLES.sub(b"", _ALTERNATE.sub(lambda m: m.group(1), styles))
        if plain == styles:
            return None
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
            for info in source.infolist():
                package.writestr(info.filename, plain if info.filename == _STYLES else source.read(info))
    return out.getvalue()


def _rows(frame: pd.DataFrame) -> list[list[Any]]:
    return [list(row) for row in frame.astype(object).itertuples(index=False, name=None)]
