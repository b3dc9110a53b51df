"""The safe downloader: http(s) with an SSRF guard, limits and retries; local files under roots.

    fetcher = Fetcher(settings)                # one per server lifespan
    doc = await fetcher.fetch("https://...")   # -> core.models.FetchedDocument
    await fetcher.aclose()

``validate_url`` is the cheap syntactic check tools run before any work. Uploaded documents
(POST /documents) live in an ``UploadStore`` and are read back through ``upload://<sha256>`` URLs.
"""

from ._addresses import is_blocked
from ._fetcher import Fetcher
from ._resolver import IPAddress, Resolver, StaticResolver, SystemResolver
from ._uploads import DiskUploads, UploadStore, is_upload, upload_url
from ._uploads import decode as decode_upload
from ._uploads import encode as encode_upload
from ._validate import is_local, validate_url


def is_immutable(url: str) -> bool:
    """Content-addressed (an upload): a cached copy never needs revalidating."""
    return is_upload(url)


def is_remote(url: str) -> bool:
    """An http(s) document (the kind a conditional GET can revalidate)."""
    return not is_upload(url) and not is_local(url)


__all__ = [
    "DiskUploads",
    "Fetcher",
    "IPAddress",
    "Resolver",
    "StaticResolver",
    "SystemResolver",
    "UploadStore",
    "decode_upload",
    "encode_upload",
    "is_blocked",
    "is_immutable",
    "is_remote",
    "is_upload",
    "upload_url",
    "validate_url",
]
