"""E-mail (.eml with the stdlib, .msg with extract-msg): headers as metadata and a header block,
the body decoded (plain preferred, HTML converted), attachments read by their own processors and
located by file name, nested messages, and the depth and attachment-count limits."""

from __future__ import annotations

import re
from email.message import EmailMessage
from email.policy import default

import pytest

from mcp_server.core.errors import ProcessingError
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors import DocumentInput, ProcessOptions, detect_type, process_document
from mcp_server.processors.eml import html_to_text
from mcp_server.processors.msg import decode_html_body
from tests.conftest import DOCS

OPTIONS = ProcessOptions(detect_language=False)


def read(data: bytes, name: str = "mail.eml", options: ProcessOptions = OPTIONS) -> ProcessedDocument:
    return process_document(DocumentInput(data=data, doc_type=detect_type(data, "", name), filename=name), options)


def located(doc: ProcessedDocument, text: str) -> tuple[str, ...]:
    at = doc.content.index(text)
    return next(loc.heading_path for loc in doc.locations if loc.start <= at < loc.end)


def test_an_eml_gives_its_headers_as_metadata_and_a_header_block_and_reads_its_attachment() -> None:
    doc = read((DOCS / "eml" / "test.eml").read_bytes(), "test.eml")
    assert doc.doc_type == "eml"
    assert doc.metadata["from"] == "John Doe <john.doe@example.com>"
    assert doc.metadata["subject"] == "Test Email Document"
    assert doc.metadata["attachments"] == ["test.txt"]
    assert doc.content.startswith("# Test Email Document\n\nFrom: John Doe <john.doe@example.com>\nTo: Jane Smith")
    assert "Cc: cc.person@example.com" in doc.content and "Content-Type" not in doc.content
    assert "## test.txt" in doc.content


def _message(subject: str = "Quarterly figures", body: str = "See the attached report.") -> EmailMessage:
    message = EmailMessage(policy=default)
    message["From"] = "Zoë Müller <zoe@example.com>"
    message["To"] = "team@example.com"
    message["Subject"] = subject
    message["Date"] = "Tue, 03 Dec 2024 09:30:00 +0100"
    message.set_content(body, charset="iso-8859-1", cte="quoted-printable")
    return message


def test_encoded_headers_bodies_and_a_base64_office_attachment_are_decoded_and_read_by_their_processor() -> None:
    message = _message(subject="Prüfbericht für Zoë", body="Grüße aus Köln, see the report.")
    docx = (DOCS / "docx" / "testWORD.docx").read_bytes()
    message.add_attachment(docx, maintype="application", subtype="octet-stream", filename="Bericht Q4.docx")
    raw = message.as_bytes()
    assert b"Pr=C3=BCfbericht" in raw or b"=?utf-8?" in raw  # really encoded on the wire
    doc = read(raw)
    assert doc.metadata["subject"] == "Prüfbericht für Zoë" and "Grüße aus Köln" in doc.content
    assert "This is a sample Microsoft Word Document" in doc.content
    assert located(doc, "This is a sample Microsoft Word Document")[:2] == ("Prüfbericht für Zoë", "Bericht Q4.docx")


def test_a_text_attachment_is_decoded_with_its_declared_charset() -> None:
    message = _message()
    message.add_attachment("Straße, Größe, Übermaß".encode("cp1252"), maintype="text", subtype="plain",
                           filename="notes.txt", params={"charset": "windows-1252"})
    assert "Straße, Größe, Übermaß" in read(message.as_bytes()).content


def test_an_html_only_body_is_converted_as_the_html_processor_reads_it() -> None:
    message = _message()
    message.set_content("<html><body><h1>Agenda</h1><p>Budget <b>review</b> at noon.</p></body></html>",
                        subtype="html")
    doc = read(message.as_bytes())
    assert "Budget review at noon." in doc.content and "<b>" not in doc.content


def test_a_forwarded_message_is_read_under_its_own_subject() -> None:
    inner = _message(subject="Original report", body="The inner message text.")
    outer = _message(subject="Fwd: report", body="Forwarding this.")
    outer.add_attachment(inner, filename="original.eml")
    doc = read(outer.as_bytes())
    assert "The inner message text." in doc.content
    assert located(doc, "The inner message text.")[-1] == "Original report"


def _nested(depth: int) -> bytes:
    message = _message(subject=f"level {depth}", body="innermost")
    for level in range(depth - 1, 0, -1):
        outer = _message(subject=f"level {level}", body=f"body {level}")
        outer.add_attachment(message, filename=f"level{level + 1}.eml")
        message = outer
    return message.as_bytes()


def test_an_email_nested_50_deep_is_a_clear_error() -> None:
    with pytest.raises(ProcessingError, match="nested more than 3 deep") as info:
        read(_nested(50))
    assert info.value.details["limit"] == "archive_max_depth"


def test_a_message_with_10000_attachments_is_refused_before_it_is_parsed() -> None:
    boundary = "BOUNDARY"
    parts = "".join(f"--{boundary}\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; "
                    f"filename=a{i}.txt\r\n\r\nattachment {i}\r\n" for i in range(10_000))
    raw = (f"From: a@example.com\r\nTo: b@example.com\r\nSubject: many\r\nMIME-Version: 1.0\r\n"
           f"Content-Type: multipart/mixed; boundary={boundary}\r\n\r\n{parts}--{boundary}--\r\n").encode()
    with pytest.raises(ProcessingError, match="archive_max_members=500") as info:
        read(raw)
    assert info.value.details["limit"] == "archive_max_members"


def test_attachments_over_the_member_limit_are_a_clear_error_after_parsing() -> None:
    message = _message()
    for number in range(6):
        message.add_attachment(f"note {number}".encode(), maintype="text", subtype="plain", filename=f"n{number}.txt")
    with pytest.raises(ProcessingError, match="6 attachments, more than the limit archive_max_members=5"):
        read(message.as_bytes(), options=ProcessOptions(archive_max_members=5, detect_language=False))


def test_an_attachment_that_fails_is_named_with_its_reason_and_the_rest_is_read() -> None:
    message = _message(body="The body survives.")
    message.add_attachment(b"PK\x03\x04broken", maintype="application", subtype="octet-stream", filename="broken.docx")
    message.add_attachment(b"\x00\x01\x02\x03" * 10, maintype="application", subtype="octet-stream",
                           filename="blob.bin")
    doc = read(message.as_bytes())
    assert "The body survives." in doc.content
    assert "## broken.docx\n\n(not read: the file is truncated or corrupt" in doc.content
    assert "## blob.bin\n\n(not read: no format this server reads)" in doc.content


def test_an_eml_is_recognised_from_its_headers_without_a_name() -> None:
    data = (DOCS / "eml" / "test.eml").read_bytes()
    assert detect_type(data, "application/octet-stream", "download") == "eml"
    assert detect_type(b"From the desk of the editor: a letter.\n\nDear reader,\n", "", "letter") == "txt"


def test_an_outlook_msg_gives_the_same_header_block_and_its_body() -> None:
    doc = read((DOCS / "msg" / "test_outlook_msg.msg").read_bytes(), "test_outlook_msg.msg")
    assert doc.doc_type == "msg"
    assert doc.metadata["subject"] == "Test Email Message" and "muratcan.kurtulus@gmail.com" in doc.metadata["from"]
    assert doc.content.startswith("# Test Email Message\n\nFrom: M. C. Kurtuluş <muratcan.kurtulus@gmail.com>")
    assert "This is the body of the test email message" in doc.content
    assert "Cc:" not in doc.content  # an empty recipient list is left out


def words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"\w+", text)}


def test_an_outlook_msg_and_its_eml_twin_give_the_same_text() -> None:
    # The twin was written from the .msg by msgconvert (Perl's Email::Outlook::Message), a reader
    # independent of extract-msg; its multipart/alternative holds the plain body and the RTF one.
    msg = read((DOCS / "msg" / "test_outlook_msg.msg").read_bytes(), "test_outlook_msg.msg")
    eml = read((DOCS / "eml" / "test_outlook_msg.eml").read_bytes(), "test_outlook_msg.eml")
    assert (msg.doc_type, eml.doc_type) == ("msg", "eml")
    theirs = words(eml.content)
    assert len(words(msg.content) & theirs) >= 0.85 * len(theirs)
    assert {k: msg.metadata[k] for k in ("subject", "attachment_count")} == {
        k: eml.metadata[k] for k in ("subject", "attachment_count")}
    body = "This is the body of the test email message"
    assert msg.content.split("\n\n")[-1] == eml.content.split("\n\n")[-1] == body
    assert "rtf" not in eml.content.lower()  # the RTF alternative is not read as an attachment


def test_a_truncated_msg_is_a_clear_error() -> None:
    data = (DOCS / "msg" / "test_outlook_msg.msg").read_bytes()
    with pytest.raises(ProcessingError):
        process_document(DocumentInput(data=data[:3000], doc_type="msg"), OPTIONS)


@pytest.mark.parametrize(("code_page", "encoded"), [
    ("cp1251", "<html><body><p>Привет, мир: отчёт за квартал</p></body></html>".encode("cp1251") + b"\0\0"),
    ("koi8_r", "<html><body><p>Привет, мир: отчёт за квартал</p></body></html>".encode("koi8_r")),
    ("utf-8", "<html><body><p>Привет, мир: отчёт за квартал</p></body></html>".encode()),
])
def test_an_outlook_html_body_stored_as_bytes_is_decoded_by_the_messages_code_page(
    code_page: str, encoded: bytes,
) -> None:
    # PR_HTML is binary: Outlook stores it in the code page PR_INTERNET_CPID names (1251: Cyrillic).
    text = html_to_text(decode_html_body(encoded, code_page))
    assert "Привет, мир: отчёт за квартал" in text and "\ufffd" not in text
