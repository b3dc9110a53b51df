"""Reading ``file:`` URLs and absolute paths, only under the configured document roots."""

from __future__ import annotations

import mimetypes
import os
import stat
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mcp_server.core.errors import DownloadError
from mcp_server.core.models import FetchedDocument
from mcp_server.core.settings import Settings

from ._document import build_document, too_large

__all__ = ["read_local"]


def _path_of(url: str) -> str:
    if url.startswith("/"):
        return url
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise DownloadError(f"refusing to read {url}: file URLs must name a local path (file:///...)")
    path = unquote(parts.path)
    if not path.startswith("/"):
        raise DownloadError(f"refusing to read {url}: the path must be absolute")
    return path


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def _read(url: str, path: str, roots: list[str], limit: int) -> FetchedDocument:
    # realpath first: ".." and symlinks are resolved before the roots are compared.
    real = os.path.realpath(path)
    real_roots = [os.path.realpath(root) for root in roots]
    if not any(_inside(real, root) for root in real_roots):
        raise DownloadError(f"refusing to read {path}: it is outside DOCUMENT_ROOTS")
    try:
        # O_NOFOLLOW: the checked path must not be swapped for a symlink between check and open;
        # O_NONBLOCK: opening a FIFO must not hang the worker thread.
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise DownloadError(f"file not found: {path}") from None
    except OSError as exc:
        raise DownloadError(f"could not open {path}: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DownloadError(f"refusing to read {path}: not a regular file")
        raise too_large(path, limit)
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(limit + 1)  # the file may have grown since fstat
        except OSError as exc:
            raise DownloadError(f"could not read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise too_large(path, limit)
    return build_document(
        data=data,
        url=url,
        final_url=Path(real).as_uri(),
        content_type=mimetypes.guess_type(real)[0] or "",
    )


def read_local(url: str, settings: Settings) -> FetchedDocument:
    """The bytes of a local document (DownloadError when refused, missing or too large); blocking."""
    if not settings.document_roots:
        raise DownloadError(
            f"refusing to read {url}: local files are disabled; set DOCUMENT_ROOTS "
            "(or MCP_DOCUMENT_ROOTS) to the folders that may be read"
        )
    path = _path_of(url)
    return _read(url, path, list(settings.document_roots), settings.max_download_bytes)
