"""Every tool once with good input and once with bad input, for the third-party clients.

``{corpus}`` in an argument is the loopback corpus server's base URL. A good call names a text
its result must contain; a bad call names the error code and a fragment of the message the
client must show. ``get_system_health`` takes no arguments, so it has no bad input: its error
case is RATE_LIMITED (see the Inspector tests).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Call:
    tool: str
    arguments: dict[str, Any]
    code: str | None  # None: the call succeeds
    expect: str  # in the result (success) or in the error message (failure)

    @property
    def id(self) -> str:
        return f"{self.tool}-{'ok' if self.code is None else self.code}"

    def bound(self, corpus: str) -> dict[str, Any]:
        return {key: value.replace("{corpus}", corpus) if isinstance(value, str) else value
                for key, value in self.arguments.items()}


def ok(tool: str, expect: str, **arguments: Any) -> Call:
    return Call(tool, arguments, None, expect)


def fails(tool: str, code: str, expect: str, **arguments: Any) -> Call:
    return Call(tool, arguments, code, expect)


DOCS = "{corpus}/docs"
BLOCKED = "http://169.254.169.254/latest"  # link-local cloud metadata address: refused before any connect
ENCRYPTED_PDF = f"{DOCS}/pdf/password.pdf"
MULTI_PAGE_PDF = f"{DOCS}/pdf/multi_page.pdf"
PAGE4_SENTENCE = ("Programs like Scrivener allowed authors to manage large projects, from novels to screenplays, "
                  "with features like chapter outlines and character notes.")

GOOD = [
    ok("process_document", "Hamburgers are delicious", document_url=f"{DOCS}/txt/fake-text.txt"),
    ok("chunk_document", "Jahresabschluss", document_url=f"{DOCS}/html/fake-html-lang-de.html"),
    ok("retrieve_chunks", "Dogs are the best", document_url=f"{DOCS}/txt/fake-text.txt",
       query="Which animals are the best?"),
    ok("query_spreadsheet", "TOR", document_url=f"{DOCS}/csv/stanley-cups.csv", search_value="Maple Leafs"),
    ok("extract_pdf_text", "Hello World", document_url=f"{DOCS}/pdf/testPDF_bom.pdf"),
    ok("extract_docx_text", "Sample Word Document", document_url=f"{DOCS}/docx/testWORD.docx"),
    ok("extract_pptx_text", "Test Table Slide", document_url=f"{DOCS}/pptx/powerpoint_sample.pptx"),
    ok("extract_xlsx_tables", "All human beings are born free", document_url=f"{DOCS}/xlsx/eng_spa.xlsx"),
    ok("extract_csv_tables", "Maple Leafs", document_url=f"{DOCS}/csv/stanley-cups.csv"),
    ok("extract_image_text", "OCR Testing", image_url=f"{DOCS}/jpg/testOCR.jpg"),
    ok("detect_language", "German", text="Der schnelle braune Fuchs springt über den faulen Hund."),
    ok("get_system_health", "RAG Document Server"),
    ok("manage_cache", "layers", action="stats"),
    ok("read_document", "--- Page 1 ---", document_url=MULTI_PAGE_PDF, max_tokens=200),
    ok("verify_quote", '"exact"', document_url=MULTI_PAGE_PDF, quote=PAGE4_SENTENCE),
    ok("get_page_image", "image/png", document_url=MULTI_PAGE_PDF, page=2),
]

BAD = [
    fails("process_document", "PROCESSING_ERROR", "password required", document_url=ENCRYPTED_PDF),
    fails("chunk_document", "VALIDATION_ERROR", "scheme 'ftp'", document_url="ftp://127.0.0.1/report.pdf"),
    fails("retrieve_chunks", "DOWNLOAD_ERROR", f"refusing to fetch {BLOCKED}", document_url=BLOCKED, query="keys"),
    fails("query_spreadsheet", "VALIDATION_ERROR", "needs an XLSX or CSV document",
          document_url=f"{DOCS}/pdf/testPDF_bom.pdf", search_value="x"),
    fails("extract_pdf_text", "PROCESSING_ERROR", "password required", document_url=ENCRYPTED_PDF),
    fails("extract_docx_text", "VALIDATION_ERROR", "needs a DOCX, DOC, ODT or RTF document",
          document_url=f"{DOCS}/pdf/testPDF_bom.pdf"),
    fails("extract_pptx_text", "DOWNLOAD_ERROR", "HTTP 404", document_url=f"{DOCS}/pptx/no-such-deck.pptx"),
    fails("extract_xlsx_tables", "VALIDATION_ERROR", "argument 'document_url' is required"),
    fails("extract_csv_tables", "VALIDATION_ERROR", "argument 'document_url': Input should be a valid string",
          document_url=42),
    fails("extract_image_text", "VALIDATION_ERROR", "needs a IMAGE document", image_url=f"{DOCS}/txt/fake-text.txt"),
    fails("detect_language", "VALIDATION_ERROR", "argument 'text' must not be empty", text=""),
    fails("manage_cache", "VALIDATION_ERROR", "must be 'stats', 'clear' or 'drop', not 'explode'", action="explode"),
    fails("read_document", "VALIDATION_ERROR", "argument 'cursor': not a cursor of read_document",
          document_url=MULTI_PAGE_PDF, cursor="bogus"),
    fails("verify_quote", "VALIDATION_ERROR", "argument 'quote' must not be empty", document_url=MULTI_PAGE_PDF,
          quote="  "),
    fails("get_page_image", "VALIDATION_ERROR", "get_page_image needs a document with pages",
          document_url=f"{DOCS}/txt/fake-text.txt", page=1),
]

EVERY_CALL = GOOD + BAD


def error_body(text: str) -> dict[str, Any]:
    """The JSON error a tool returns as text content."""
    body = json.loads(text)
    assert isinstance(body, dict) and {"error", "code", "request_id"} <= set(body), text
    return body
