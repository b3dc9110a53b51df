"""The cheap, syntactic check tools run on ``document_url`` before any work starts."""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp_server.core.errors import ValidationError
from mcp_server.core.settings import Settings

from ._uploads import is_upload, upload_key

__all__ = ["is_local", "validate_url"]

_SCHEMES = ("http", "https", "file", "upload")


def is_local(url: str) -> bool:
    """A ``file:`` URL or a plain absolute path (the tools accept both for local documents)."""
    return url.startswith("/") or urlsplit(url).scheme.lower() == "file"


def _invalid(why: str, argument: str = "document_url") -> ValidationError:
    return ValidationError(f"{argument} {why}", argument=argument)


def validate_url(url: str, settings: Settings, *, argument: str = "document_url") -> str:
    """Return ``url`` stripped of surrounding blanks, or raise ValidationError naming why.

    Accepts http(s) URLs with a host, file: URLs, plain absolute paths and the ``upload://<sha256>``
    URLs POST /documents answers. Whether the target
    may actually be fetched (addresses, document roots) is decided by the Fetcher.
    """
    if not isinstance(url, str):
        raise _invalid(f"must be a string, not {type(url).__name__}", argument)
    url = url.strip()
    if not url:
        raise _invalid("must not be empty", argument)
    if len(url) > settings.max_url_length:
        raise _invalid(f"is {len(url)} characters long; the limit is {settings.max_url_length}", argument)
    if any(ord(char) < 32 or ord(char) == 127 for char in url):
        raise _invalid("must not contain control characters", argument)
    if url.startswith("/"):
        return url
    if is_upload(url):
        if upload_key(url) is None:
            raise _invalid("is not an upload URL as POST /documents answers it (upload:// and 64 hex digits)",
                           argument)
        return url
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - urlsplit checks the port only when it is read
    except ValueError as exc:
        raise _invalid(f"is not a valid URL ({exc})", argument) from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        shown = f"scheme {scheme!r}" if scheme else "no scheme"
        raise _invalid(f"has {shown}; use an http(s):// or file:// URL, an absolute path or an upload:// URL", argument)
    if scheme != "file" and not parts.hostname:
        raise _invalid("has no host", argument)
    return url
