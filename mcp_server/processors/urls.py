"""URLs mentioned in a document's text, with context and a rough kind.

A plain regex (``https?://...`` or ``www....``) with the trailing punctuation a
sentence adds trimmed off; each URL once, in order of first appearance.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from mcp_server.core.models import ExtractedURL

__all__ = ["extract_urls", "url_type"]

_CONTEXT = 100
_MAX_URLS = 1000  # a link farm must not produce an unbounded result
_CONFIDENCE = 0.9

_URL = re.compile(r"""(?:https?://[^\s<>"'`]+|www\.[^\s<>"'`]+\.[^\s<>"'`]+)""", re.IGNORECASE)
_TRAILING = ".,;:!?*'\""
_BRACKETS = {")": "(", "]": "[", "}": "{"}

_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".ico", ".tif", ".tiff")
_API_MARKERS = re.compile(r"(?:/api(?:/|$|\?)|/v\d+(?:/|$)|/graphql|/rest/|\.json(?:$|\?)|/openapi|/swagger)")


def extract_urls(text: str, *, base_url: str = "", source_location: str = "") -> tuple[ExtractedURL, ...]:
    """Every distinct URL in ``text``; ``base_url`` (the document's own) marks same-site links."""
    base_host = _host(base_url)
    seen: set[str] = set()
    found: list[ExtractedURL] = []
    for match in _URL.finditer(text):
        url = _trim(match.group(0))
        if url in seen or len(url) < 8:
            continue
        seen.add(url)
        start, end = match.start(), match.start() + len(url)
        context = text[max(0, start - _CONTEXT) : end + _CONTEXT].strip()
        found.append(
            ExtractedURL(
                url=url,
                context=context,
                source_location=source_location,
                confidence=_CONFIDENCE,
                url_type=url_type(url, base_host=base_host),
            )
        )
        if len(found) >= _MAX_URLS:
            break
    return tuple(found)


def url_type(url: str, *, base_host: str = "") -> str:
    """api_endpoint | image | navigation | general (a URL urlsplit refuses, as an unbalanced bracket in
    its host: general)."""
    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
    except ValueError:  # "Invalid IPv6 URL": markdown's "[http://a.example](a.example)" is one match
        return "general"
    path = parts.path.lower()
    if path.endswith(_IMAGE_SUFFIXES):
        return "image"
    if _API_MARKERS.search(path) or parts.netloc.lower().startswith("api."):
        return "api_endpoint"
    host = (parts.hostname or "").removeprefix("www.")
    if base_host and host == base_host:
        return "navigation"
    if parts.fragment and path in ("", "/"):
        return "navigation"
    return "general"


def _host(url: str) -> str:
    if not url:
        return ""
    try:
        return (urlsplit(url).hostname or "").removeprefix("www.")
    except ValueError:
        return ""


def _trim(url: str) -> str:
    """Drop sentence punctuation and unbalanced closing brackets from the end."""
    while url:
        last = url[-1]
        if last in _TRAILING or last in _BRACKETS and url.count(last) > url.count(_BRACKETS[last]):
            url = url[:-1]
        else:
            break
    return url
