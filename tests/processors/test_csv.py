"""CSV: encodings, delimiters, ragged and wide rows, header detection, refused archives."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.csv import CsvProcessor

# (file, must_include, must_not_include)
VECTORS = [
    ("stanley-cups.csv", ["=== Sheet: stanley-cups.csv ===", "Stanley Cups\n",
                          "| Team | Location | Stanley Cups |", "| Maple Leafs | TOR | 13 |"], []),
    ("stanley-cups-utf-16.csv", ["| Team | Location | Stanley Cups |", "| Blues | STL | 1 |"],
     ["\x00", "\ufeff"]),
    ("semicolon-delimited.csv", ["| Lorem, ipsum | dolor sit | amet |", "| sed, do | eiusmod |"], []),
    ("csv-tab.csv", ["| Index | Customer Id | First Name |", "| 1 | DD37Cf93aecA6Dc | Sheryl |"], ["\t"]),
    ("csv-comma.csv", ["| 2 | 1Ef7b82A4CAAD10 | Preston | Lozano, Dr |"], []),
    ("csv-too-many-columns.csv", ["| a | b | c | d | e |"], []),
    ("csv-with-long-lines.csv", ["Columns: 370", "SpearmanCorrelationCoefficient"], []),
    ("test_mskanji.csv", ["| 名前 | 年齢 | 住所 |", "| 佐藤太郎 | 30 | 東京 |"], ["\ufffd"]),
    ("test-columnar.csv", ["| Record Number |", "This is row 10 of 10"], []),
    ("table-multi-row-column-cells-actual.csv", ["Disability Category", "| Blind | 5 | 1 | 4 |"], []),
]


def _process(data: bytes, filename: str = "data.csv", charset: str | None = None) -> ProcessedDocument:
    inp = DocumentInput(data=data, doc_type="csv", filename=filename, charset=charset)
    return CsvProcessor().process(inp, ProcessOptions())


def _corpus(corpus_dir: Path, name: str) -> ProcessedDocument:
    return _process((corpus_dir / "docs" / "csv" / name).read_bytes(), filename=name)


@pytest.mark.parametrize(("name", "must_include", "must_not_include"), VECTORS, ids=[v[0] for v in VECTORS])
def test_csv_corpus_files_give_their_expected_text(
    corpus_dir: Path, name: str, must_include: list[str], must_not_include: list[str]
) -> None:
    doc = _corpus(corpus_dir, name)
    assert doc.doc_type == "csv"
    for fragment in must_include:
        assert fragment in doc.content, fragment
    for fragment in must_not_include:
        assert fragment not in doc.content, fragment


@pytest.mark.parametrize(
    ("name", "encoding", "delimiter"),
    [("stanley-cups-utf-16.csv", "utf-16-be", ","), ("test_mskanji.csv", "cp932", ","),
     ("csv-tab.csv", "utf-8", "\t"), ("semicolon-delimited.csv", "utf-8", ";")],
)
def test_encoding_and_delimiter_are_detected(
    corpus_dir: Path, name: str, encoding: str, delimiter: str
) -> None:
    doc = _corpus(corpus_dir, name)
    assert (doc.metadata["encoding"], doc.metadata["delimiter"]) == (encoding, delimiter)


def test_windows_1252_text_is_decoded_without_replacement_characters() -> None:
    data = "Name;Price\nCafé crème;3,50 €\nBäckerei „Müller“;2,10 €\n".encode("cp1252")
    doc = _process(data)
    assert "| Café crème | 3,50 € |" in doc.content
    assert "\ufffd" not in doc.content


def test_the_csv_has_one_table_with_column_analysis(corpus_dir: Path) -> None:
    doc = _corpus(corpus_dir, "test-columnar.csv")
    (table,) = doc.tables
    assert table.metadata["rows"] == 11
    assert table.metadata["column_types"]["Record Number"] == "numeric"
    assert table.metadata["column_types"]["date"] == "datetime"
    assert table.metadata["column_types"]["Description of the Row"] == "text"
    assert doc.locations[0].sheet == "test-columnar.csv"
    assert (doc.locations[0].row_start, doc.locations[0].row_end) == (2, 12)


def test_a_compressed_csv_is_refused_not_unpacked() -> None:
    with pytest.raises(ProcessingError, match="not unpacked"):
        _process(gzip.compress(b"a,b\n1,2\n" * 1000))


def test_binary_bytes_are_refused() -> None:
    with pytest.raises(ProcessingError, match="binary"):
        _process(b"a,b\n\x00\x01\x02,\x00\n")


def test_an_empty_csv_gives_an_empty_sheet() -> None:
    doc = _process(b"")
    assert "(empty sheet)" in doc.content
