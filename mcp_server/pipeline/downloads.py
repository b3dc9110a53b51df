"""The download stage: a URL's bytes from the download cache, revalidated when stale, else fetched.

A cached download older than ``revalidate_after_s`` (by its ``validated_at``, wall-clock time, so
every worker and host sharing the Redis layer agrees on its age) is checked with a conditional GET
before use: a 304 keeps the bytes; new bytes are a new content key. Uploads are content-addressed:
never revalidated.
"""

from __future__ import annotations

import logging
import time

from mcp_server.core import metrics
from mcp_server.core.cache import CacheLayer, cache_get, cache_put
from mcp_server.core.concurrency import KeyedLock
from mcp_server.core.models import FetchedDocument
from mcp_server.fetch import Fetcher, is_immutable, is_remote

__all__ = ["Downloads"]

logger = logging.getLogger(__name__)


class Downloads:
    """Downloads through ``layer`` (cache layers may be remote: their calls run off the loop); the
    fetcher is the caller's (``DocumentService.fetcher``, which tests may replace)."""

    def __init__(self, layer: CacheLayer[FetchedDocument], revalidate_after_s: float) -> None:
        self.layer = layer
        self.revalidate_after_s = revalidate_after_s
        self._locks = KeyedLock()  # concurrent calls for one stale URL revalidate it once

    def _fresh(self, url: str, cached: FetchedDocument) -> bool:
        return is_immutable(url) or time.time() - cached.validated_at < self.revalidate_after_s

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
