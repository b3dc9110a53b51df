"""CSV -> one Markdown section (named after the file), via ``tabular``.

Bytes are decoded by BOM, then strict UTF-8, then the declared charset, then
charset-normalizer (Shift_JIS, cp1252, ...). The delimiter is sniffed among ``, ; TAB |``.
Rows are read with the stdlib ``csv`` reader rather than ``pandas.read_csv``: ragged rows
(more fields than the header) must keep their extra fields, which pandas drops or refuses.
Row numbers are 1-based record numbers. Compressed input (gzip, zip, bz2, xz, 7z) is refused,
never unpacked (SECURITY P6); the byte cap is the download cap.
"""

from __future__ import annotations

import codecs
import csv
import io
from typing import ClassVar

import charset_normalizer

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.tabular import RawSheet, analyse, build_document

__all__ = ["CsvProcessor", "decode_text", "read_csv"]

EXTENSIONS = (".csv", ".tsv")
MIME_TYPES = ("text/csv", "text/tab-separated-values", "application/csv")

_DELIMITERS = ",;\t|"
_SNIFF_CHARS = 64 * 1024
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)
_WEB_SINGLE_BYTE = ("cp1252", "cp1250", "cp1251", "latin_1", "iso8859_15")
_CHAOS_TIE = 0.05
_ARCHIVES = (b"\x1f\x8b", b"PK\x03\x04", b"BZh", b"\xfd7zXZ\x00", b"7z\xbc\xaf\x27\x1c")


class CsvProcessor:
    doc_type: ClassVar[str] = "csv"
    extensions: ClassVar[tuple[str, ...]] = EXTENSIONS
    mime_types: ClassVar[tuple[str, ...]] = MIME_TYPES
    description: ClassVar[str] = "CSV/TSV: encoding and delimiter detection, header detection, column types"

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        sheet, encoding, delimiter = read_csv(doc)
        return build_document([analyse(sheet)], doc_type="csv", max_rows=options.max_rows_per_sheet,
                              metadata={"encoding": encoding, "delimiter": delimiter})


def read_csv(doc: DocumentInput) -> tuple[RawSheet, str, str]:
    """The file's rows as one sheet named after the file, plus the encoding and delimiter used."""
    if doc.data.startswith(_ARCHIVES):
        raise ProcessingError("compressed or archived CSV is not supported (archives are not unpacked)")
    text, encoding = decode_text(doc.data, doc.charset)
    if "\x00" in text:
        raise ProcessingError("the CSV file holds binary data (NUL characters)")
    delimiter = _sniff_delimiter(text[:_SNIFF_CHARS])
    try:
        rows = [list(r) for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)]
    except csv.Error as exc:  # e.g. a field over csv.field_size_limit()
        raise ProcessingError(f"the CSV file could not be parsed: {exc}") from exc
    name = doc.filename.rsplit("/", 1)[-1] or "csv"
    return RawSheet(name=name, rows=rows), encoding, delimiter


def decode_text(data: bytes, declared: str | None = None) -> tuple[str, str]:
    """Text and the encoding it was read with; never raises on undecodable bytes."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data.decode(encoding, errors="replace"), encoding
    candidates = ["utf-8"] + ([declared] if declared else [])
    for encoding in candidates:
        try:
            return data.decode(encoding), encoding
        except (UnicodeDecodeError, LookupError):
            continue
    matches = list(charset_normalizer.from_bytes(data))
    if matches:
        best = min(matches, key=lambda m: m.chaos)
        # Small samples score DOS/Mac code pages as well as windows-125x; on the web the
        # windows pages are far more likely, so they win a near tie.
        near = {m.encoding: m for m in matches if m.chaos <= best.chaos + _CHAOS_TIE}
        preferred = next((near[e] for e in _WEB_SINGLE_BYTE if e in near), None)
        best = preferred or best
        return str(best), best.encoding
    return data.decode("cp1252", errors="replace"), "cp1252"


def _sniff_delimiter(sample: str) -> str:
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS).delimiter
    except csv.Error:
        # The sniffer gives up on small or irregular samples: take the most frequent candidate.
        counts = {d: sample.count(d) for d in _DELIMITERS}
        best = max(counts, key=lambda d: counts[d])
        return best if counts[best] else ","
