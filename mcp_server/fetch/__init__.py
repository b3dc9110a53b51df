"""The safe downloader: http(s) with an SSRF guard, limits and retries; local files under roots.

    fetcher = Fetcher(settings)                # one per server lifespan
    doc = await fetcher.fetch("https://...")   # -> core.models.FetchedDocument
    await fetcher.aclose()

``validate_url`` is the cheap syntactic check tools run before any work.
"""

from ._addresses import is_blocked
from ._fetcher import Fetcher
from ._resolver import IPAddress, Resolver, StaticResolver, SystemResolver
from ._validate import validate_url

__all__ = [
    "Fetcher",
    "IPAddress",
    "Resolver",
    "StaticResolver",
    "SystemResolver",
    "is_blocked",
    "validate_url",
]
