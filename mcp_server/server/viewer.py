"""The citation viewer: an MCP App (``io.modelcontextprotocol/ui``) that hosts render beside the results
of ``retrieve_chunks``, ``search_documents`` and ``get_passage``.

The ``ui://`` resource is ``app_ui/citations.html`` with the MCP Apps SDK's browser bundle
(``app_ui/ext_apps_app.js``, vendored by scripts/vendor_ext_apps.py) inlined, so it loads nothing from
anywhere. Those three tools name it in ``_meta.ui.resourceUri``; their results are the same for every
client, so a client without Apps sees exactly what it saw before. The SDK's ``Apps`` extension serves
the resource as ``text/html;profile=mcp-app`` and advertises the extension.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from mcp.server.apps import Apps

__all__ = ["VIEWER_TOOLS", "VIEWER_URI", "citation_viewer", "viewer_html", "viewer_meta"]

VIEWER_URI = "ui://rag-document-server/citations.html"
VIEWER_TOOLS = frozenset({"retrieve_chunks", "search_documents", "get_passage"})
_FILES = Path(__file__).parent / "app_ui"
_BUNDLE_SLOT = "/*EXT_APPS_BUNDLE*/"


@functools.cache
def viewer_html() -> str:
    """The viewer as one HTML document: the page with the Apps SDK bundle in its first script."""
    page = (_FILES / "citations.html").read_text(encoding="utf-8")
    bundle = (_FILES / "ext_apps_app.js").read_text(encoding="utf-8")
    if _BUNDLE_SLOT not in page or "</script" in bundle.lower():
        raise RuntimeError("app_ui/citations.html has no bundle slot, or the bundle would end its script early")
    return page.replace(_BUNDLE_SLOT, bundle, 1)


def citation_viewer() -> Apps:
    """The Apps extension carrying the viewer resource (the tools are registered by the server)."""
    apps = Apps()
    apps.add_html_resource(
        VIEWER_URI, viewer_html(), name="citation-viewer", title="Citation viewer",
        description="Each passage with where it came from: on its PDF page, highlighted, or in its section; "
                    "previous/next passage; the document's name, page and link.",
        prefers_border=True,
    )
    return apps


def viewer_meta(tool: str) -> dict[str, Any] | None:
    """The ``_meta`` naming the viewer, for the tools whose results it shows."""
    return {"ui": {"resourceUri": VIEWER_URI}} if tool in VIEWER_TOOLS else None
