"""Where a complete index comes from: this host's folder, else the deployment's shared store, else
one build per key — one per host through the file lock, one per deployment through the shared lease.

``find`` never builds (a miss costs one local read and, with a shared store, one EXISTS). ``claim``
is entered before building: under the key's file lock it looks again (another worker may have
saved it, another host may have shared it), then takes the key's lease in the shared store; while
another host holds the lease it polls until that host's index appears (it is copied into the local
folder and loaded) or the lease lapses (that host died: take it and build). The holder renews the
lease from a thread while it builds and releases it after ``save``. With the shared store down,
``claim`` lets this host build on its own (the file lock still keeps its workers to one build).
Every blocking call runs in a worker thread (``_off_loop``, one step per hop); waits are polls on
the loop, so a cancelled caller leaves no thread holding a lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

import anyio

from mcp_server import metrics
from mcp_server.core.concurrency import off_loop, start_thread
from mcp_server.indexes.shared import SharedIndexStore, new_token
from mcp_server.indexes.store import IndexStore, Manifest, ManifestCheck, try_acquire, verify_files
from mcp_server.retrieval.index import DocumentIndex

__all__ = ["Found", "IndexSaver", "IndexTiers"]

log = logging.getLogger(__name__)

Found = Literal["disk", "shared", "miss"]
Turn = Literal["done", "build", "wait", "unshared"]
T = TypeVar("T")
COUNTERS = ("shared_hits", "shared_published", "shared_too_large", "lease_waits", "unshared_builds", "save_failures",
            "disk_evictions")  # the stats' order
POLL = 0.25  # seconds between looks while another worker or host builds (builds take seconds to minutes)


class IndexSaver:
    """A built index saved where it lasts: this host's folder, kept within its size bound, then the
    deployment's shared store when it fits (``max_bytes``); a failed save leaves the folder as it
    was and the index answering from memory."""

    def __init__(self, local: IndexStore, shared: SharedIndexStore | None, *, max_bytes: int,
                 local_max_bytes: int | None) -> None:
        self.local, self.shared, self.max_bytes, self.local_max_bytes = local, shared, max_bytes, local_max_bytes
        self.counters = {"shared_published": 0, "shared_too_large": 0, "save_failures": 0, "disk_evictions": 0}

    def save(self, key: str, index: DocumentIndex, chunker_version: str) -> None:
        """Into the local folder (then kept within its bound), then into the shared store if it fits
        (blocks: the tiers call it off the loop)."""
        try:
            self.local.save(key, index, chunker_version=chunker_version)
        except OSError as exc:
            self.save_failed(key, exc)  # the built index still answers, from memory
            return
        self.make_room(key)
        if self.shared is None:
            return
        exported = self.local.export(key)
        if exported is None:
            return
        manifest, blobs = exported
        size = sum(map(len, blobs.values()))
        if size > self.max_bytes:
            self.counters["shared_too_large"] += 1
            # over MCP_INDEX_STORE_MAX_BYTES: the index stays on this host
            log.warning("index.not_shared", extra={"key": key, "bytes": size, "max_bytes": self.max_bytes})
            return
        if self.shared.put(key, manifest, blobs):
            self.counters["shared_published"] += 1
            log.info("index.shared", extra={"key": key, "bytes": size})

    def save_failed(self, key: str, exc: OSError) -> None:
        """Nothing half-written stays (``IndexStore._commit``); the next call builds again."""
        self.counters["save_failures"] += 1
        log.error("index.save_failed", extra={
            "key": key, "error": exc.strerror or str(exc), "errno": exc.errno,
            "action": "served from memory, not persisted; the folder keeps its previous state"})

    def make_room(self, key: str) -> None:
        """Keep the folder within its bound: least recently used indexes go whole (never ``key``)."""
        size, evicted = self.local.make_room(self.local_max_bytes, keep=key)
        self.counters["disk_evictions"] += evicted
        metrics.cache_evicted("index", "disk", evicted)
        metrics.index_dir_bytes(size)


class IndexTiers:
    def __init__(
        self, local: IndexStore, shared: SharedIndexStore | None = None, *, lease_seconds: float = 30.0,
        max_bytes: int = 256 * 2**20, poll: float = POLL, local_max_bytes: int | None = None,
    ) -> None:
        self.local, self.shared = local, shared
        self.lease_seconds, self.max_bytes, self.poll = lease_seconds, max_bytes, poll
        self.local_max_bytes = local_max_bytes  # the folder's bound (MCP_INDEX_DIR_MAX_MB); None = unbounded
        self.counters = {"shared_hits": 0, "lease_waits": 0, "unshared_builds": 0}
        self.saver = IndexSaver(local, shared, max_bytes=max_bytes, local_max_bytes=local_max_bytes)

    @property
    def backend(self) -> str:
        if self.shared is None:
            return "disk (shared by workers: file lock per key)"
        if "unavailable" in self.shared.backend:
            return "disk (shared store unavailable: each host builds its own)"
        return f"{self.shared.backend} (shared by hosts: one lease per key; disk cache per host)"

    async def find(self, key: str, check: ManifestCheck) -> tuple[DocumentIndex | None, Found]:
        index, found = await self._off_loop(self._find_here, key, check)
        if found != "shared":
            return index, found
        async with self.locked(key):  # the shared store has it: copy it in under the key's file lock
            return await self._off_loop(self._look, key, check)

    @asynccontextmanager
    async def locked(self, key: str) -> AsyncIterator[None]:
        """This key's file lock, polled from the loop: a thread blocked on it could not be
        abandoned safely (it would take the lock after its caller had gone)."""
        lock = self.local.file_lock(key)
        while not await self._off_loop(try_acquire, lock, shield=True):  # a try that succeeds is never lost
            await anyio.sleep(self.poll)
        try:
            yield
        finally:
            lock.release()

    @asynccontextmanager
    async def claim(self, key: str, check: ManifestCheck) -> AsyncIterator[tuple[DocumentIndex | None, Found]]:
        """(index, where) when it is stored by now: do not build. (None, "miss"): this host
        builds; call ``save`` before leaving."""
        async with self.locked(key):
            token, index, found = await self._wait_for_turn(key, check)
            if index is not None or token is None:
                yield index, found
                return
            stop = threading.Event()
            start_thread(self._renew, key, token, stop, name=f"lease-{key[:8]}")
            try:
                yield None, "miss"
            finally:
                stop.set()
                assert self.shared is not None
                await self._off_loop(self.shared.release, key, token, shield=True)

    async def _wait_for_turn(self, key: str, check: ManifestCheck) -> tuple[str | None, DocumentIndex | None, Found]:
        """(lease token or None, found index, where): one ``_turn`` in a worker thread per poll."""
        waited = False
        while True:
            token, index, found, turn = await self._off_loop(self._turn, key, check)
            if turn != "wait":
                if turn == "unshared":
                    self.counters["unshared_builds"] += 1
                    # the shared store is down: this host builds on its own
                    log.warning("index.lease_unavailable", extra={"key": key, "action": "build here"})
                return token, index, found
            if not waited:
                waited = True
                self.counters["lease_waits"] += 1
                log.info("index.lease_wait", extra={"key": key})  # another host builds it
            await anyio.sleep(self.poll)

    def _find_here(self, key: str, check: ManifestCheck) -> tuple[DocumentIndex | None, Found]:
        """The local folder's index; else "shared" (without the index) when the shared store has
        one, else "miss". No lock: a miss costs one local read and at most one EXISTS."""
        index = self.local.load(key, check)
        if index is not None:
            return index, "disk"
        if self.shared is None or not self.shared.exists(key):
            return None, "miss"
        return None, "shared"

    def _turn(self, key: str, check: ManifestCheck) -> tuple[str | None, DocumentIndex | None, Found, Turn]:
        """One look under the key's file lock, then: "done" (stored by now, or no shared store
        whose lease to wait for), "build" (the lease taken: its token), "wait" (another host holds
        it), "unshared" (the shared store is down: build here)."""
        index, found = self._look(key, check)
        if index is not None or self.shared is None:
            return None, index, found, "done"
        token = new_token()
        taken = self.shared.acquire(key, token, self.lease_seconds)
        if taken is None:
            return None, None, "miss", "unshared"
        if not taken:
            return None, None, "miss", "wait"
        # another host may have published and released between the look and the lease
        index, found = self._look(key, check)
        if index is None:
            return token, None, "miss", "build"
        self.shared.release(key, token)
        return None, index, found, "done"

    def _renew(self, key: str, token: str, stop: threading.Event) -> None:
        assert self.shared is not None
        while not stop.wait(self.lease_seconds / 3):
            if not self.shared.renew(key, token, self.lease_seconds) and not stop.is_set():
                log.warning("index.lease_lost", extra={"key": key})  # expired or store down: the build goes on

    def _look(self, key: str, check: ManifestCheck) -> tuple[DocumentIndex | None, Found]:
        """Local folder, then shared store (copied into the folder); under the key's file lock."""
        index = self.local.load(key, check)
        if index is not None:
            return index, "disk"
        entry = self.shared.get(key) if self.shared is not None else None
        if entry is None:
            return None, "miss"
        assert self.shared is not None
        manifest, blobs = entry
        try:
            verify_files(manifest, blobs, check)
        except ValueError as exc:
            self.shared.quarantine(key, str(exc))
            return None, "miss"
        try:
            self.local.write(key, manifest, blobs)
        except OSError as exc:  # e.g. the disk is full: serve the shared copy from memory
            self.saver.save_failed(key, exc)
            return self._decoded(key, manifest, blobs)
        self.saver.make_room(key)
        index = self.local.load(key, check)
        if index is None:  # the files do not decode: the shared copy is as bad as the local one
            self.shared.quarantine(key, "stored files do not decode")
            return None, "miss"
        self.counters["shared_hits"] += 1
        log.info("index.loaded_from_shared", extra={"key": key, "bytes": sum(map(len, blobs.values()))})
        return index, "shared"

    async def save(self, key: str, index: DocumentIndex, chunker_version: str) -> None:
        """Into the local folder, then (if it fits) into the shared store; call inside ``claim``.
        A save that started completes (it is atomic anyway)."""
        await self._off_loop(self.saver.save, key, index, chunker_version, shield=True)

    @staticmethod
    def _decoded(key: str, manifest: Manifest, blobs: Mapping[str, bytes]) -> tuple[DocumentIndex | None, Found]:
        """An index from verified files that could not be written to the folder."""
        try:
            index = IndexStore.decode_blobs(manifest, blobs, key)
        except Exception:  # noqa: BLE001 - undecodable: build here
            return None, "miss"
        return index, "shared"

    def stats(self) -> dict[str, object]:
        counters = {**self.counters, **self.saver.counters}
        return {**{name: counters[name] for name in COUNTERS}, "backend": self.backend,
                "max_bytes": self.max_bytes if self.shared else None, "local_max_bytes": self.local_max_bytes}

    async def clear(self) -> dict[str, int]:
        """Every index in the local folder and, with a shared store, every host's copies there."""
        return await self._off_loop(self._clear)

    def _clear(self) -> dict[str, int]:
        cleared = {"disk": self.local.clear()}
        if self.shared is not None:  # every host's copies: this is the deployment's cache
            cleared["shared"] = self.shared.clear()
        return cleared

    @staticmethod
    async def _off_loop(fn: Callable[..., T], *args: Any, shield: bool = False) -> T:
        """The tiers' one thread hop: every folder, file-lock and shared-store call runs through it;
        ``shield``: a step that started completes even if the caller is cancelled."""
        return await off_loop(fn, *args, shield=shield)
