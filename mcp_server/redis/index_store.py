"""``SharedIndexStore`` in Redis: the deployment's shared index store (see ``indexes.shared``).

An entry is one hash ``rag:<ns>:index:v1:e:<key>`` (fields ``manifest`` and the logical file names)
with an expiry refreshed on every read; the lease is ``rag:<ns>:index:v1:lease:<key>``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import redis

from mcp_server.indexes.shared import MANIFEST_FIELD, SharedEntry, decoded
from mcp_server.indexes.store import Manifest
from mcp_server.redis.store import REDIS_ERRORS, Outage

__all__ = ["RedisIndexStore"]

log = logging.getLogger(__name__)

CORRUPT_KEEP_S = 3600  # a quarantined shared entry stays readable this long for a post-mortem


# Only the holder renews or releases (a lease that expired and was taken over is not theirs).
# Not redis-py's Lock: the lease here is addressed by (key, token) from any thread, answers None
# during an outage instead of raising, and has an in-process fake with the same three calls.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisIndexStore:
    """``SharedIndexStore`` in Redis. Failures are outages (logged once, health says so): reads
    miss, writes are skipped, ``acquire`` answers None; Redis is tried again after the interval."""

    def __init__(self, client: redis.Redis, *, prefix: str, ttl: float, outage: Outage) -> None:
        self._client, self.outage = client, outage
        self._prefix = f"{prefix}index:v1:"
        self._ttl_ms = max(1, int(ttl * 1000))
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    @property
    def backend(self) -> str:
        return self.outage.backend

    def _entry(self, key: str) -> str:
        return f"{self._prefix}e:{key}"

    def _lease(self, key: str) -> str:
        return f"{self._prefix}lease:{key}"

    def _call(self, fn: Callable[[], Any], failed: Any) -> Any:
        if not self.outage.should_try():
            return failed
        try:
            result = fn()
        except REDIS_ERRORS as exc:
            self.outage.failed(exc)
            return failed
        self.outage.succeeded()
        return result

    def get(self, key: str) -> SharedEntry | None:
        def read() -> dict[bytes, bytes]:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.hgetall(self._entry(key))
                pipe.pexpire(self._entry(key), self._ttl_ms)  # read = recently used: kept longer
                fields, _ = pipe.execute()
            return dict(fields)

        return decoded(self, key, self._call(read, None))

    def exists(self, key: str) -> bool:
        return bool(self._call(lambda: self._client.exists(self._entry(key)), False))

    def put(self, key: str, manifest: Manifest, blobs: Mapping[str, bytes]) -> bool:
        mapping = {MANIFEST_FIELD: json.dumps(manifest).encode(), **{name: bytes(data) for name, data in blobs.items()}}

        def write() -> bool:
            with self._client.pipeline(transaction=True) as pipe:  # MULTI/EXEC: readers see old or new
                pipe.delete(self._entry(key))
                pipe.hset(self._entry(key), mapping=mapping)  # type: ignore[arg-type]
                pipe.pexpire(self._entry(key), self._ttl_ms)
                pipe.execute()
            return True

        return bool(self._call(write, False))

    def quarantine(self, key: str, reason: str) -> None:
        target = f"{self._prefix}corrupt:{key}:{int(time.time())}"

        def move() -> bool:
            try:
                with self._client.pipeline(transaction=True) as pipe:
                    pipe.rename(self._entry(key), target)
                    pipe.expire(target, CORRUPT_KEEP_S)
                    pipe.execute()
            except redis.ResponseError:  # no such key: already moved by another host
                return False
            return True

        if self._call(move, False):
            log.warning("index.shared_quarantined", extra={"key": key, "moved_to": target, "reason": reason})

    def acquire(self, key: str, token: str, seconds: float) -> bool | None:
        ms = max(1, int(seconds * 1000))
        return self._call(lambda: bool(self._client.set(self._lease(key), token, nx=True, px=ms)), None)

    def renew(self, key: str, token: str, seconds: float) -> bool:
        ms = max(1, int(seconds * 1000))
        return bool(self._call(lambda: self._renew(keys=[self._lease(key)], args=[token, ms]), False))

    def release(self, key: str, token: str) -> None:
        self._call(lambda: self._release(keys=[self._lease(key)], args=[token]), None)

    def clear(self) -> int:
        """Delete every shared entry of this namespace (leases stay: their builds are running)."""

        def delete() -> int:
            removed = 0
            for pattern, counted in ((f"{self._prefix}e:*", True), (f"{self._prefix}corrupt:*", False)):
                for name in self._client.scan_iter(match=pattern, count=500):
                    gone = int(self._client.delete(name))
                    removed += gone if counted else 0
            return removed

        return int(self._call(delete, 0))
