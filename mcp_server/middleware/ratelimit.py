"""Rate limiting: a token bucket per client plus a global bucket (5x by default).

The ``limits`` library offers fixed and moving windows but no token bucket, and the contract
here is burst-then-refill with a retry-after, so the in-process bucket is written out (it is
a dozen lines). A shared store for several workers plugs in behind the same ``RateLimiter``
interface.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mcp_server import metrics
from mcp_server.core.errors import RateLimitError
from mcp_server.core.settings import Settings

__all__ = ["InProcessRateLimiter", "RateLimiter", "TokenBucket"]


class RateLimiter(Protocol):
    async def check(self, client: str, cost: int = 1) -> None:
        """Take ``cost`` tokens for ``client`` (one per request; a multi-document search takes one
        more per extra document); raise RateLimitError (with retry_after) when there are fewer.
        A cost above the bucket's capacity takes the whole (full) bucket."""

    def stats(self) -> dict[str, object]: ...


@dataclass(slots=True)
class TokenBucket:
    capacity: float
    rate: float  # tokens per second
    tokens: float
    updated: float

    def take(self, now: float, cost: float = 1.0) -> float:
        """Take ``cost`` tokens; return 0.0 on success, else the seconds until they are available."""
        cost = min(cost, self.capacity)  # else a large cost could never be paid
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= cost:
            self.tokens -= cost
            return 0.0
        return (cost - self.tokens) / self.rate

    def give_back(self, cost: float = 1.0) -> None:
        self.tokens = min(self.capacity, self.tokens + min(cost, self.capacity))


class InProcessRateLimiter:
    """Per-client buckets (oldest evicted beyond ``max_clients``) and one global bucket."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self._rpm = float(settings.rate_limit_rpm)
        self._global_rpm = self._rpm * settings.global_rate_multiplier
        self._max_clients = settings.rate_limit_max_clients
        self._clock = clock
        now = clock()
        self._global = TokenBucket(self._global_rpm, self._global_rpm / 60.0, self._global_rpm, now)
        self._clients: OrderedDict[str, TokenBucket] = OrderedDict()
        self._lock = threading.Lock()
        self.rejected = 0

    def _bucket(self, client: str, now: float) -> TokenBucket:
        bucket = self._clients.get(client)
        if bucket is None:
            bucket = TokenBucket(self._rpm, self._rpm / 60.0, self._rpm, now)
            self._clients[client] = bucket
            while len(self._clients) > self._max_clients:
                self._clients.popitem(last=False)
        else:
            self._clients.move_to_end(client)
        return bucket

    async def check(self, client: str, cost: int = 1) -> None:
        with self._lock:
            now = self._clock()
            wait = self._bucket(client, now).take(now, cost)
            if wait:
                self.rejected += 1
                metrics.rate_limited("client")
                raise RateLimitError(
                    f"Rate limit exceeded: {int(self._rpm)} requests per minute per client",
                    retry_after=wait,
                )
            global_wait = self._global.take(now, cost)
            if global_wait:
                self._clients[client].give_back(cost)  # the client's tokens were not used
                self.rejected += 1
                metrics.rate_limited("global")
                raise RateLimitError(
                    f"Server busy: global limit of {int(self._global_rpm)} requests per minute reached",
                    retry_after=global_wait,
                )

    def stats(self) -> dict[str, object]:
        with self._lock:
            return {
                "backend": "memory",
                "per_client_rpm": self._rpm,
                "global_rpm": self._global_rpm,
                "tracked_clients": len(self._clients),
                "rejected": self.rejected,
            }
