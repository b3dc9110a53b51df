"""The deployment's shared index store: the files of every complete index, and one build lease per key.

Hosts behind one load balancer each keep their ``IndexStore`` folder as a cache; this store is what
they share. An entry holds the same files as a folder (FAISS bytes, chunks JSON, sentence map JSON)
and the manifest with their checksums, written in one step and read in one step (never a mix of two
versions); a reader verifies the checksums before anything is decoded, and never unpickles.

The lease says which host builds a key: ``acquire`` is SET NX with an expiry, the builder renews it
while it embeds and releases it at the end; a builder that dies stops renewing, its lease expires
and another host takes over. Every method is blocking and short: callers run them in worker threads.
``None`` from ``acquire`` means the store cannot be asked now (Redis down): build locally.

``SharedIndexStore`` is the interface ``IndexManager`` depends on; its Redis implementation is
``mcp_server.redis.index_store.RedisIndexStore`` (plugged in by the server's lifespan) and
``MemoryIndexStore`` is its in-process fake for tests.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from mcp_server.indexes.store import FILES, Manifest

__all__ = ["MANIFEST_FIELD", "MemoryIndexStore", "SharedEntry", "SharedIndexStore", "decoded", "new_token"]

log = logging.getLogger(__name__)

SharedEntry = tuple[Manifest, dict[str, bytes]]  # manifest (with sha256 by logical name), files by logical name
MANIFEST_FIELD = "manifest"


def new_token() -> str:
    return secrets.token_hex(16)


class SharedIndexStore(Protocol):
    @property
    def backend(self) -> str: ...

    def get(self, key: str) -> SharedEntry | None: ...

    def exists(self, key: str) -> bool: ...

    def put(self, key: str, manifest: Manifest, blobs: Mapping[str, bytes]) -> bool: ...

    def quarantine(self, key: str, reason: str) -> None: ...

    def acquire(self, key: str, token: str, seconds: float) -> bool | None: ...

    def renew(self, key: str, token: str, seconds: float) -> bool: ...

    def release(self, key: str, token: str) -> None: ...

    def clear(self) -> int: ...


def _decode(fields: Mapping[bytes, bytes]) -> SharedEntry:
    manifest = json.loads(fields[MANIFEST_FIELD.encode()])
    if not isinstance(manifest, dict):
        raise ValueError("manifest is not an object")
    return manifest, {name: fields[name.encode()] for name in FILES}


def decoded(store: SharedIndexStore, key: str, fields: Mapping[bytes, bytes] | None) -> SharedEntry | None:
    """The entry read from ``fields``; None when absent, and when damaged (then quarantined)."""
    if not fields:
        return None
    try:
        return _decode(fields)
    except (KeyError, ValueError) as exc:
        store.quarantine(key, f"{type(exc).__name__}: {exc}")
        return None


class MemoryIndexStore:
    """The fake: one dict of entries and one of leases (with expiry on ``clock``), shared by the
    ``IndexManager``s of a test standing for several hosts; ``down = True`` plays an outage."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.entries: dict[str, dict[bytes, bytes]] = {}
        self.leases: dict[str, tuple[str, float]] = {}
        self.quarantined: list[str] = []
        self.down = False
        self._lock = threading.Lock()

    @property
    def backend(self) -> str:
        return "memory (unavailable)" if self.down else "memory"

    def get(self, key: str) -> SharedEntry | None:
        return decoded(self, key, None if self.down else self.entries.get(key))

    def exists(self, key: str) -> bool:
        return not self.down and key in self.entries

    def put(self, key: str, manifest: Manifest, blobs: Mapping[str, bytes]) -> bool:
        if self.down:
            return False
        self.entries[key] = {MANIFEST_FIELD.encode(): json.dumps(manifest).encode(),
                             **{name.encode(): bytes(data) for name, data in blobs.items()}}
        return True

    def quarantine(self, key: str, reason: str) -> None:
        if self.entries.pop(key, None) is not None:
            self.quarantined.append(key)
            log.warning("index.shared_quarantined", extra={"key": key, "reason": reason})

    def acquire(self, key: str, token: str, seconds: float) -> bool | None:
        if self.down:
            return None
        with self._lock:
            holder = self.leases.get(key)
            if holder is not None and holder[1] > self._clock():
                return False
            self.leases[key] = (token, self._clock() + seconds)
            return True

    def renew(self, key: str, token: str, seconds: float) -> bool:
        with self._lock:
            holder = self.leases.get(key)
            if self.down or holder is None or holder[0] != token or holder[1] <= self._clock():
                return False
            self.leases[key] = (token, self._clock() + seconds)
            return True

    def release(self, key: str, token: str) -> None:
        with self._lock:
            if not self.down and self.leases.get(key, ("",))[0] == token:
                del self.leases[key]

    def clear(self) -> int:
        removed = len(self.entries)
        self.entries.clear()
        return removed
