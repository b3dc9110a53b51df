"""CSV -> one Markdown section (named after the file), via ``tabular``.

Bytes are decoded by the shared text decoder (``processors/encoding.py``: BOM, strict UTF-8,
the declared charset, then detection), exactly as a ``.txt`` of the same bytes would be. The
delimiter is sniffed among ``, ; TAB |``.
Rows are read with the stdlib ``csv`` reader rather than ``pandas.read_csv``: ragged rows
(more fields than the header) must keep their extra fields, which pandas drops or refuses.
Row numbers are 1-based record numbers. Compressed input (gzip, zip, bz2, xz, 7z) is refused,
never unpacked (SECURITY P6); the byte cap is the download cap.
"""

from __future__ import annotations

import csv
import io
from typing import ClassVar

from mcp_server.core.errors import ProcessingError
from mcp_server.core.markup import SHEETS
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.encoding import decode_bytes, decode_sample
from mcp_server.processors.formats import Chunking, Format, Likelihood
from mcp_server.processors.tabular import RawSheet, analyse, build_document

__all__ = ["CsvProcessor", "looks_like_csv", "read_csv"]

_DELIMITERS = ",;\t|"
_SNIFF_CHARS = 64 * 1024
_SNIFF_BYTES = 65536  # CSV rows can be long (370 columns): a few whole records are needed
_ARCHIVES = (b"\x1f\x8b", b"PK\x03\x04", b"BZh", b"\xfd7zXZ\x00", b"7z\xbc\xaf\x27\x1c")


def looks_like_csv(data: bytes) -> Likelihood | None:
    """At least 3 records that split into the same number (> 1) of fields on one delimiter."""
    text = decode_sample(data[:_SNIFF_BYTES])
    lines = text.splitlines()
    if len(text) >= _SNIFF_BYTES // 2 and len(lines) > 1:
        lines = lines[:-1]  # the last sampled line may be cut
    lines = [line for line in lines[:50] if line.strip()]
    if len(lines) < 3:
        return None
    for delimiter in _DELIMITERS:
        # csv.reader, not str.count: quoted fields may hold the delimiter.
        widths = [len(row) for row in csv.reader(lines, delimiter=delimiter)]
        if widths and widths[0] > 1 and widths.count(widths[0]) >= 0.8 * len(widths):
            return Likelihood.POSSIBLE  # plain prose with commas can look like this too
    return None


class CsvProcessor:
    format: ClassVar[Format] = Format(
        doc_type="csv",
        description="CSV/TSV: encoding and delimiter detection, header detection, column types",
        extensions=(".csv", ".tsv"),
        mime_types=("text/csv", "text/tab-separated-values", "application/csv"),
        text=True,
        looks_like=looks_like_csv,
        chunking=Chunking(size=1200, overlap=200, breaks=SHEETS, headings=False),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        sheet, encoding, delimiter = read_csv(doc)
        return build_document([analyse(sheet)], doc_type="csv", max_rows=options.max_rows_per_sheet,
                              metadata={"encoding": encoding, "delimiter": delimiter})


def read_csv(doc: DocumentInput) -> tuple[RawSheet, str, str]:
    """The file's rows as one sheet named after the file, plus the encoding and delimiter used."""
    if doc.data.startswith(_ARCHIVES):
        raise ProcessingError("compressed or archived CSV is not supported (archives are not unpacked)",
                              reason="unsupported_format")
    text, encoding = decode_bytes(doc.data, doc.charset)
    if "\x00" in text:
        raise ProcessingError("the CSV file holds binary data (NUL characters)", reason="unsupported_format")
    delimiter = _sniff_delimiter(text[:_SNIFF_CHARS])
    try:
        rows = [list(r) for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)]
    except csv.Error as exc:  # e.g. a field over csv.field_size_limit()
        raise ProcessingError(f"the CSV file could not be parsed: {exc}") from exc
    name = doc.filename.rsplit("/", 1)[-1] or "csv"
    return RawSheet(name=name, rows=rows), encoding, delimiter


def _sniff_delimiter(sample: str) -> str:
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS).delimiter
    except csv.Error:
        # The sniffer gives up on small or irregular samples: take the most frequent candidate.
        counts = {d: sample.count(d) for d in _DELIMITERS}
        best = max(counts, key=lambda d: counts[d])
        return best if counts[best] else ","
