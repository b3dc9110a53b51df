"""The download stage: a URL's bytes from the download cache, revalidated when stale, else fetched.

A cached download older than ``revalidate_after_s`` (by its ``validated_at``, wall-clock time, so
every worker and host sharing the Redis layer agrees on its age) is checked with a conditional GET
before use: a 304 keeps the bytes; new bytes are a new content key. Uploads are content-addressed:
never revalidated.

Each URL's last download is also remembered without its bytes (``Known``: its content key, sniffed
type and validators): a URL whose bytes have left the download cache still leads to its index, with
no download while it is fresh, and with a conditional request once it is stale (a 304 confirms it).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass

from cachetools import LRUCache

from mcp_server import metrics
from mcp_server.caches.layers import CacheLayer, cache_clear, cache_delete, cache_get, cache_put
from mcp_server.core.concurrency import KeyedLock
from mcp_server.core.models import FetchedDocument
from mcp_server.fetch import Fetcher, is_immutable, is_remote

__all__ = ["Downloads", "Known"]

logger = logging.getLogger(__name__)

KNOWN_ENTRIES = 4096  # URLs remembered without their bytes (~300 bytes each)


@dataclass(frozen=True, kw_only=True, slots=True)
class Known:
    """What a URL's last download said, without its bytes: enough to find its document's index."""

    content_key: str  # under the view it was asked for
    doc_type: str  # sniffed
    sha256: str
    fetched_at: float
    validated_at: float
    etag: str = ""
    last_modified: str = ""


class Downloads:
    """Downloads through ``layer`` (cache layers may be remote: their calls run off the loop); the
    fetcher is the caller's (``DocumentService.fetcher``, which tests may replace)."""

    def __init__(self, layer: CacheLayer[FetchedDocument], revalidate_after_s: float) -> None:
        self.layer = layer
        self.revalidate_after_s = revalidate_after_s
        self._locks = KeyedLock()  # concurrent calls for one stale URL revalidate it once
        self._known: LRUCache[tuple[str, str], Known] = LRUCache(maxsize=KNOWN_ENTRIES)  # by (URL, view)

    def _fresh(self, url: str, cached: FetchedDocument | Known) -> bool:
        return is_immutable(url) or time.time() - cached.validated_at < self.revalidate_after_s

    def learn(self, url: str, view: str, fetched: FetchedDocument, content_key: str, doc_type: str) -> None:
        """Remember what ``url`` answered (``fetched``, its content key under ``view``)."""
        self._known[(url, view)] = Known(
            content_key=content_key, doc_type=doc_type, sha256=fetched.sha256, fetched_at=fetched.fetched_at,
            validated_at=fetched.validated_at, etag=fetched.etag, last_modified=fetched.last_modified)

    async def drop(self, url: str) -> bool:
        """Forget ``url``'s download and what it answered; whether a download was cached."""
        for key in [key for key in self._known if key[0] == url]:
            self._known.pop(key, None)
        return await cache_delete(self.layer, url)

    def stats(self) -> dict[str, object]:
        return self.layer.stats()

    async def clear(self) -> int:
        """Forget every download and what every URL answered; the downloads forgotten."""
        self._known.clear()
        return await cache_clear(self.layer)

    async def known(self, fetcher: Fetcher, url: str, view: str) -> Known | FetchedDocument | None:
        """What ``url`` answered last under ``view``, fresh or confirmed now by a conditional
        request (a 304; the bytes are not downloaded); the bytes the request brought instead
        (also in the download cache); None when it is unknown or stale without validators."""
        known = self._known.get((url, view))
        if known is None or self._fresh(url, known):
            return known
        if not is_remote(url) or not (known.etag or known.last_modified):
            return None
        async with self._locks.hold(url):
            known = self._known.get((url, view))  # another call may have confirmed it meanwhile
            if known is None or self._fresh(url, known):
                return known
            # validators only: a 304 answers this empty copy, marked as confirmed now
            stub = FetchedDocument(data=b"", url=url, final_url=url, etag=known.etag,
                                   last_modified=known.last_modified)
            fetched = await fetcher.fetch(url, cached=stub)
            if fetched.fetched_at == stub.fetched_at and not fetched.data:
                metrics.download_revalidated("not_modified")
                confirmed = dataclasses.replace(known, validated_at=fetched.validated_at,
                                                etag=fetched.etag, last_modified=fetched.last_modified)
                self._known[(url, view)] = confirmed
                return confirmed
            metrics.download_revalidated("changed" if fetched.sha256 != known.sha256 else "unchanged")
            await cache_put(self.layer, url, fetched)
            return fetched

    async def fetch(self, fetcher: Fetcher, url: str) -> FetchedDocument:
        cached = await cache_get(self.layer, url)
        if cached is not None and self._fresh(url, cached):
            return cached
        async with self._locks.hold(url):
            # another call may have fetched or confirmed it meanwhile: one download, not ten
            cached = await cache_get(self.layer, url)
            if cached is not None and self._fresh(url, cached):
                return cached
            # a stale copy of an http(s) document is revalidated (a conditional GET when it has
            # validators); a local file is read again (its bytes decide the content key anyway)
            fetched = await fetcher.fetch(url, cached=cached if is_remote(url) else None)
            if cached is not None:
                _revalidated(cached, fetched)
            await cache_put(self.layer, url, fetched)
            return fetched


def _revalidated(cached: FetchedDocument, fetched: FetchedDocument) -> None:
    if fetched.sha256 != cached.sha256:
        metrics.download_revalidated("changed")
        logger.info("fetch.changed", extra={"url": fetched.final_url, "old": cached.sha256[:16],
                                            "new": fetched.sha256[:16]})
    elif fetched.fetched_at == cached.fetched_at:  # a 304 keeps the copy's download time
        metrics.download_revalidated("not_modified")
    else:
        metrics.download_revalidated("unchanged")  # downloaded again (no validators, or ignored)
