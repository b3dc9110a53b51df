"""A web page's linked style sheets, fetched when the page is parsed, so that hidden-text marking
reads the rules that hide (``display:none`` on a class, ``visibility:hidden``, off-screen boxes) and
knows the backgrounds it judges colours on.

Only sheets of the page's own origin (scheme, host and port of the address that answered), at
most ``MAX_SHEETS`` of them, each through the same Fetcher as any download (the address policy,
the allowlist, redirects re-checked) with a cap of ``SHEET_BYTES`` and all of them within
``SHEETS_DEADLINE`` seconds; a sheet that fails, is too big or comes late is left out, and the page
is then read as one whose linked sheet is unknown (colour decides nothing, as before). Sheets are
fetched on a parse only (a cached document keeps the sheets it was parsed with until it expires);
``@import`` inside a sheet is not followed.
"""

from __future__ import annotations

import dataclasses
import logging
from urllib.parse import urljoin, urlsplit

import anyio

from mcp_server.core.concurrency import off_loop
from mcp_server.core.errors import MCPServerError
from mcp_server.fetch import Fetcher
from mcp_server.processors import DocumentInput
from mcp_server.processors._html_hidden import style_sheet_links
from mcp_server.processors.encoding import decode_bytes

__all__ = ["MAX_SHEETS", "SHEETS_DEADLINE", "SHEET_BYTES", "with_style_sheets"]

logger = logging.getLogger(__name__)

MAX_SHEETS = 4
SHEET_BYTES = 256 * 1024
SHEETS_DEADLINE = 3.0  # seconds for all of a page's sheets together


def _origin(url: str) -> tuple[str, str, int | None] | None:
    """Scheme, host and port of an http(s) URL; None for anything else or a malformed port."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return (parts.scheme, (parts.hostname or "").lower(), port or default) if default and parts.hostname else None


async def with_style_sheets(fetcher: Fetcher, inp: DocumentInput, page_url: str) -> DocumentInput:
    """``inp`` with its page's same-origin linked style sheets (unchanged for anything but a web page)."""
    if inp.doc_type != "html" or not page_url.startswith(("http://", "https://")):
        return inp
    hrefs = await off_loop(style_sheet_links, inp.data)
    if not hrefs:
        return inp
    origin = _origin(page_url)
    urls = [url for url in (urljoin(page_url, href) for href in hrefs) if origin and _origin(url) == origin]
    found: dict[int, str] = {}

    async def one(i: int, url: str) -> None:
        try:
            fetched = await fetcher.fetch(url, max_bytes=SHEET_BYTES)
        except MCPServerError as exc:  # a sheet is a hint: the page is read without it
            logger.info("style_sheet.skipped", extra={"url": url, "error": exc.message})
            return
        except Exception:  # never the page's parse undone by a sheet (cancellation is no Exception)
            logger.warning("style_sheet.failed", extra={"url": url}, exc_info=True)
            return
        found[i] = decode_bytes(fetched.data, fetched.charset)[0]

    with anyio.move_on_after(SHEETS_DEADLINE):  # side by side: a page waits for its slowest sheet only
        async with anyio.create_task_group() as group:
            for i, url in enumerate(urls[:MAX_SHEETS]):
                group.start_soon(one, i, url)
    sheets = tuple(found[i] for i in sorted(found))  # link order: the cascade's order
    return dataclasses.replace(inp, style_sheets=sheets, style_sheets_complete=len(sheets) == len(hrefs))
