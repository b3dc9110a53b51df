"""Turning what a transport said about some bytes into a ``FetchedDocument``."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from email.message import Message
from urllib.parse import unquote, urlsplit

from mcp_server.core.errors import DownloadError
from mcp_server.core.models import FetchedDocument

__all__ = ["build_document", "too_large"]


def too_large(display: str, limit: int) -> DownloadError:
    return DownloadError(
        f"{display} is larger than the download limit of {limit} bytes (max_download_bytes)",
        limit=limit,
    )


def _header(name: str, value: str) -> Message:
    # email.message parses MIME parameters (quoting, RFC 2231 filename*=) the way mail does.
    message = Message()
    message[name] = value
    return message


def _content_type(value: str | None) -> tuple[str, str | None]:
    if not value:
        return "", None
    message = _header("content-type", value)
    charset = message.get_content_charset()
    return message.get_content_type().lower(), charset


def _safe_name(name: str) -> str:
    # Only the last segment: a "../../x" or "C:\\x" filename is metadata, never a path.
    return posixpath.basename(name.replace("\\", "/")).strip()


def _filename(disposition: str | None, final_url: str) -> str:
    if disposition:
        name = _header("content-disposition", disposition).get_filename()
        if name and _safe_name(name):
            return _safe_name(name)
    return _safe_name(unquote(urlsplit(final_url).path))


def build_document(
    *, data: bytes, url: str, final_url: str, headers: Mapping[str, str] | None = None,
    content_type: str | None = None,
) -> FetchedDocument:
    """``headers`` are the response's (case-insensitive mapping); ``content_type`` overrides them."""
    headers = headers or {}
    media_type, charset = _content_type(content_type or headers.get("content-type"))
    return FetchedDocument(
        data=data,
        url=url,
        final_url=final_url,
        content_type=media_type,
        charset=charset,
        filename=_filename(headers.get("content-disposition"), final_url),
        etag=headers.get("etag") or "",
        last_modified=headers.get("last-modified") or "",
    )
