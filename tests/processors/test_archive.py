"""ZIP archives: members read by their own processors and located by their paths; zip bombs,
archives nested too deep, too many members and encrypted members give clear answers."""

from __future__ import annotations

import io
import zipfile

import pytest

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors import DocumentInput, ProcessOptions, detect_type, process_document
from tests.conftest import DOCS
from tests.security._bombs import zip_of_zeros

OPTIONS = ProcessOptions(detect_language=False)


def read(data: bytes, options: ProcessOptions = OPTIONS) -> ProcessedDocument:
    return process_document(DocumentInput(data=data, doc_type=detect_type(data, "", "a.zip"), filename="a.zip"),
                            options)


def zipped(**members: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name.replace("__", "/"), data)
    return out.getvalue()


def test_every_member_is_read_by_its_processor_and_located_by_its_path() -> None:
    doc = read((DOCS / "zip" / "corpus-members.zip").read_bytes())
    assert doc.doc_type == "zip" and doc.metadata["file_count"] == 4 and doc.metadata["not_read"] == {}
    at = doc.content.index("This is a sample Microsoft Word Document")
    path = next(loc.heading_path for loc in doc.locations if loc.start <= at < loc.end)
    assert path[0] == "docx/testWORD.docx"
    assert "| Stanley" in doc.content or "Stanley" in doc.content  # the CSV, as a table
    assert "$.key3[1]: list_value2" in doc.content  # the JSON, with its key paths
    assert "## eml/test.eml" in doc.content and "## test.txt" in doc.content  # a message and its attachment
    starts = [loc.start for loc in doc.locations]
    assert starts == sorted(starts)
    assert all(a.end <= b.start for a, b in zip(doc.locations, doc.locations[1:], strict=False))


def test_a_zip_bomb_is_refused_from_its_directory_before_anything_is_inflated() -> None:
    bomb = zip_of_zeros("zeros.txt", gibibytes=1)
    assert len(bomb) < 2_000_000
    with pytest.raises(ProcessingError, match="expands") as info:
        read(bomb)
    assert info.value.details["limit"] == "zip_max_ratio" and info.value.details["reason"] == "bomb"


def test_archives_nested_deeper_than_the_limit_are_a_clear_error() -> None:
    data = zipped(**{"deep.txt": b"the bottom"})
    for level in range(5):
        data = zipped(**{f"level{level}.zip": data})
    with pytest.raises(ProcessingError, match="archives nested more than 3 deep") as info:
        read(data)
    assert info.value.details["limit"] == "archive_max_depth"
    shallow = zipped(**{"inner.zip": zipped(**{"deep.txt": b"the bottom"})})
    assert "the bottom" in read(shallow).content


def test_more_members_than_the_limit_are_a_clear_error() -> None:
    data = zipped(**{f"f{n}.txt": b"x" for n in range(6)})
    with pytest.raises(ProcessingError, match="6 files in the archive, more than the limit archive_max_members=5"):
        read(data, ProcessOptions(archive_max_members=5, detect_language=False))


def test_an_encrypted_or_broken_member_is_named_with_its_reason_and_the_rest_is_read() -> None:
    data = bytearray(zipped(**{"secret.txt": b"hidden words", "open.txt": b"plain words", "bad.docx": b"PK\x03\x04x"}))
    # set the "encrypted" flag of secret.txt in its local and central headers
    for header in (b"PK\x03\x04", b"PK\x01\x02"):
        at = data.index(header)
        offset = 6 if header == b"PK\x03\x04" else 8
        data[at + offset] |= 0x01
    doc = read(bytes(data))
    assert "plain words" in doc.content and "hidden words" not in doc.content
    assert doc.metadata["not_read"]["secret.txt"] == "encrypted (password required)"
    assert "truncated or corrupt" in doc.metadata["not_read"]["bad.docx"]


def test_a_zip_bomb_attached_to_an_email_is_named_not_inflated() -> None:
    from email.message import EmailMessage

    message = EmailMessage()
    message["From"], message["Subject"] = "a@example.com", "archive"
    message.set_content("see attachment")
    message.add_attachment(zip_of_zeros("zeros.txt"), maintype="application", subtype="zip", filename="bomb.zip")
    doc = process_document(DocumentInput(data=message.as_bytes(), doc_type="eml"), OPTIONS)
    assert "## bomb.zip\n\n(not read: zip member 'zeros.txt' expands" in doc.content


def test_a_corrupt_zip_is_a_clear_error() -> None:
    with pytest.raises(ProcessingError, match="not a valid zip"):
        process_document(DocumentInput(data=b"PK\x03\x04" + b"\x00" * 40, doc_type="zip"), OPTIONS)
