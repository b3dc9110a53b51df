"""Outlook messages (.msg) with extract-msg: read like an .eml (``eml.py``).

The same header block (From, To, Cc, Date, Subject, also as metadata), the body (plain text
preferred; an HTML-only body through the HTML processor, decoded by the message's code page), then
each attachment under a ``## name`` heading, read by its own processor (``_members``); an attached
.msg is read the same way one level deeper. Limits as for .eml: ``archive_max_depth`` and ``archive_max_members``.
Recognised by the ``__properties_version1.0`` stream inside the OLE container.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
from typing import Any, ClassVar

from mcp_server.core.errors import MCPServerError, ProcessingError, UnsupportedFormatError
from mcp_server.core.markup import HEADINGS
from mcp_server.core.models import ProcessedDocument
from mcp_server.processors._members import Parts, check_count, deeper, read_member
from mcp_server.processors.base import DocumentInput, ProcessOptions
from mcp_server.processors.eml import HEADERS, header_block, html_to_text
from mcp_server.processors.encoding import decode_bytes
from mcp_server.processors.formats import Chunking, Format
from mcp_server.processors.ooxml import ole_kind

__all__ = ["MsgProcessor"]

# extract-msg logs every property it does not know at WARNING; a parser worker's stderr is not the place.
logging.getLogger("extract_msg").setLevel(logging.ERROR)


class MsgProcessor:
    format: ClassVar[Format] = Format(
        doc_type="msg",
        description="Outlook messages (.msg, extract-msg): headers, body, attachments read by their own processors",
        extensions=(".msg",),
        mime_types=("application/vnd.ms-outlook",),
        detect=lambda data: ole_kind(data) == "msg",
        chunking=Chunking(size=1500, overlap=300, breaks=HEADINGS),
    )

    def process(self, doc: DocumentInput, options: ProcessOptions) -> ProcessedDocument:
        parts = Parts()
        metadata = _read(doc.data, parts, options, path=())
        return ProcessedDocument(content=parts.content, doc_type="msg", metadata=metadata,
                                 tables=tuple(parts.tables), locations=tuple(parts.locations))


def _read(data: bytes, parts: Parts, options: ProcessOptions, *, path: tuple[str, ...]) -> dict[str, Any]:
    import extract_msg  # here: ~13 MB that the server processes never need (parsers preload it)

    try:
        message = extract_msg.openMsg(data, delayAttachments=False)
    except MCPServerError:
        raise
    except Exception as exc:  # extract-msg and olefile raise their own errors on junk
        raise ProcessingError(f"the Outlook message could not be parsed: {type(exc).__name__}",
                              reason="corrupt") from exc
    try:
        return _message(message, parts, options, path=path)
    finally:
        message.close()


def _message(message: Any, parts: Parts, options: ProcessOptions, *, path: tuple[str, ...]) -> dict[str, Any]:
    headers = {name.lower(): _field(message, name.lower()) for name in HEADERS}
    headers["from"] = _field(message, "sender")
    headers = {name: value for name, value in headers.items() if value}
    title = headers.get("subject") or "(no subject)"
    here = (*path, title)
    parts.add(header_block(title, headers), here)
    parts.add(_body(message), here)
    attachments = list(getattr(message, "attachments", ()) or ())
    check_count(len(attachments), options, "attachments")
    inner = deeper(options, "messages") if attachments else options
    names: list[str] = []
    for number, attachment in enumerate(attachments, 1):
        name = (getattr(attachment, "longFilename", None) or getattr(attachment, "shortFilename", None)
                or getattr(attachment, "displayName", None) or f"attachment-{number}")
        names.append(name)
        payload = getattr(attachment, "data", None)
        if isinstance(payload, bytes):
            parts.add_member(name, read_member(payload, name, inner, content_type=_mime(attachment)), here)
        elif payload is not None and hasattr(payload, "subject"):  # an attached message, already opened
            parts.add(f"## {name}", (*here, name))
            _message(payload, parts, inner, path=(*here, name))
        else:
            parts.add_member(name, "no data (a link or an OLE object)", here)
    return {**headers, "attachments": names, "attachment_count": len(names)}


def _field(message: Any, name: str) -> str:
    try:
        value = getattr(message, name, None)
    except Exception:  # noqa: BLE001 - a broken property is left out, not fatal
        return ""
    if value is None:
        return ""
    if hasattr(value, "strftime"):
        return str(value.strftime("%a, %d %b %Y %H:%M:%S %z"))
    text = " ".join(str(value).split())
    return "" if text in ("<>", "\"\"") else text


def _body(message: Any) -> str:
    body = _safe(message, "body")
    if isinstance(body, str) and body.strip():
        return body.replace("\r\n", "\n").strip()
    html = _safe(message, "htmlBody")
    if isinstance(html, bytes) and html.strip():
        return html_to_text(decode_html_body(html, _code_page(message)))
    return ""


# Windows code page numbers whose Python codec is not simply "cp<number>".
_CODE_PAGES = {65001: "utf-8", 20127: "ascii", 20866: "koi8_r", 21866: "koi8_u", 50220: "iso2022_jp",
               50221: "iso2022_jp", 50222: "iso2022_jp", 51932: "euc_jp", 51949: "euc_kr", 52936: "hz",
               54936: "gb18030", 1200: "utf-16-le", 1201: "utf-16-be",
               **{28590 + n: f"iso8859_{n}" for n in range(1, 16)}}


def _code_page(message: Any) -> str | None:
    """The HTML body's code page (PR_INTERNET_CPID, else the message's PR_MESSAGE_CODEPAGE) as a
    Python codec name; None when neither is set or known."""
    for tag in ("3FDE0003", "3FFD0003"):
        try:
            number = message.getPropertyVal(tag)
        except Exception:  # noqa: BLE001 - a damaged property table: no code page
            number = None
        if isinstance(number, int) and number > 0:
            codec = _CODE_PAGES.get(number, f"cp{number}")
            with contextlib.suppress(LookupError):
                return codecs.lookup(codec).name
    return None


def decode_html_body(html: bytes, code_page: str | None) -> str:
    """An HTML body stored as bytes (PR_HTML is binary): a BOM, UTF-8, the message's code page, then
    detection (``decode_bytes``); never fails (a body that is no text in any of them is read with
    replacement characters)."""
    html = html.rstrip(b"\0")
    try:
        return decode_bytes(html, code_page)[0]
    except UnsupportedFormatError:
        return html.decode(code_page or "utf-8", "replace")


def _safe(message: Any, name: str) -> Any:
    try:
        return getattr(message, name, None)
    except Exception:  # noqa: BLE001 - RTF-only or damaged bodies raise from the property
        return None


def _mime(attachment: Any) -> str:
    value = _safe(attachment, "mimetype")
    return value if isinstance(value, str) else ""
