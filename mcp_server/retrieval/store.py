"""Indexes on disk: ``<index_dir>/<key>/{index.faiss, chunks.json, sentences.json, manifest.json}``.

Every file is written atomically (temp file in the same folder, fsync, ``os.replace``, folder
fsync) and the manifest goes last, so it is the commit marker: a folder whose files do not match
their manifest checksums (a SIGKILL mid-write, a truncated copy, bit rot) is never loaded — it
is moved aside to ``<key>.corrupt-<ts>`` and the caller rebuilds. No pickle: FAISS's own
serialisation for vectors (one per sentence), JSON for chunk metadata and for the sentence ->
chunk map; BM25 is rebuilt from the texts on load (a few milliseconds, one format less to
trust). One writer per key across processes: a file lock in ``<index_dir>/.locks/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from filelock import FileLock, Timeout

from mcp_server.core.models import Chunk, ChunkLocation
from mcp_server.retrieval.index import DocumentIndex

__all__ = ["FORMAT_VERSION", "IndexStore", "Manifest"]

log = logging.getLogger(__name__)

# 2: one vector per sentence plus sentences.json; a format-1 folder (one vector per chunk) is
# quarantined and rebuilt, never read as sentences.
FORMAT_VERSION = 2
INDEX_FILE, CHUNKS_FILE, SENTENCES_FILE, MANIFEST_FILE = "index.faiss", "chunks.json", "sentences.json", "manifest.json"

Manifest = dict[str, Any]
# Given a manifest, return None if acceptable, else the reason it is not.
ManifestCheck = Callable[[Manifest], str | None]


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems refuse fsync on folders; best effort
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def write_atomic_with(path: Path, write: Callable[[str], None]) -> str:
    """Like ``write_atomic`` for a writer that takes a file name (FAISS writes its index itself,
    so the vectors are never held twice in memory); returns the file's SHA-256, read back."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
    return digest


def _file_sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _chunk_to_json(chunk: Chunk) -> dict[str, Any]:
    return asdict(chunk)


def _chunk_from_json(data: dict[str, Any]) -> Chunk:
    loc = dict(data["location"])
    loc["pages"] = tuple(loc.get("pages") or ())
    loc["heading_path"] = tuple(loc.get("heading_path") or ())
    return Chunk(**{**data, "location": ChunkLocation(**loc)})


class IndexStore:
    def __init__(self, index_dir: Path | str) -> None:
        self.root = Path(index_dir)
        self.quarantined = 0

    def path(self, key: str) -> Path:
        if not key or "/" in key or key.startswith("."):
            raise ValueError(f"bad index key {key!r}")
        return self.root / key

    @contextlib.contextmanager
    def lock(self, key: str, timeout: float = -1) -> Iterator[None]:
        """Exclusive per-key lock shared by every process using this folder."""
        with self.file_lock(key, timeout=timeout):
            yield

    def file_lock(self, key: str, timeout: float = -1) -> FileLock:
        """The per-key lock as an object; not tied to a thread, so an async caller may take it
        in one worker thread (``try_acquire``) and release it from another or from the loop."""
        locks = self.root / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        return FileLock(str(locks / f"{self.path(key).name}.lock"), timeout=timeout, thread_local=False)

    @staticmethod
    def try_acquire(lock: FileLock) -> bool:
        try:
            lock.acquire(blocking=False)
        except Timeout:
            return False
        return True

    # --- write ----------------------------------------------------------------------------
    def save(
        self, key: str, index: DocumentIndex, *, chunker_version: str, extra: Manifest | None = None
    ) -> None:
        """Persist atomically; call under ``lock(key)``. Only a complete index is stored."""
        if index.coverage < 1.0:
            raise ValueError(f"index {key} covers {index.coverage:.0%} of its chunks; only complete ones are stored")
        folder = self.path(key)
        folder.mkdir(parents=True, exist_ok=True)
        _fsync_dir(self.root)
        digests = {INDEX_FILE: write_atomic_with(folder / INDEX_FILE, lambda tmp: faiss.write_index(index.faiss, tmp))}
        chunks = json.dumps([_chunk_to_json(c) for c in index.chunks], ensure_ascii=False).encode()
        owners = json.dumps(index.owners.tolist(), separators=(",", ":")).encode()
        for name, data in {CHUNKS_FILE: chunks, SENTENCES_FILE: owners}.items():
            write_atomic(folder / name, data)
            digests[name] = hashlib.sha256(data).hexdigest()
        manifest = {
            "format": FORMAT_VERSION,
            "key": key,
            "model_id": index.model_id,
            "chunker_version": chunker_version,
            "chunk_count": len(index),
            "vector_count": index.faiss.ntotal,
            "dimension": index.dimension,
            "sha256": digests,
            "created": time.time(),
            **(extra or {}),
        }
        write_atomic(folder / MANIFEST_FILE, json.dumps(manifest, indent=1).encode())

    # --- read -----------------------------------------------------------------------------
    def load(self, key: str, check: ManifestCheck | None = None) -> DocumentIndex | None:
        """The stored index, or None if absent; anything unreadable or mismatching is
        quarantined (and None returned) so the caller rebuilds."""
        folder = self.path(key)
        if not folder.exists():
            return None
        try:
            index = self._read(folder, check)
        except Exception as exc:  # json, faiss, OS and format errors all mean: do not trust it
            self.quarantine(key, f"{type(exc).__name__}: {exc}")
            return None
        index.key = key
        return index

    def _read(self, folder: Path, check: ManifestCheck | None) -> DocumentIndex:
        manifest = json.loads((folder / MANIFEST_FILE).read_bytes())
        if manifest.get("format") != FORMAT_VERSION:
            raise ValueError(f"format {manifest.get('format')} != {FORMAT_VERSION}")
        if check is not None and (reason := check(manifest)):
            raise ValueError(reason)
        # the vectors are checked by streaming the file, then read by FAISS itself: one copy in
        # memory, not three (bytes, numpy view, index); writers hold this key's lock meanwhile
        if _file_sha256(folder / INDEX_FILE) != manifest["sha256"][INDEX_FILE]:
            raise ValueError(f"{INDEX_FILE} checksum mismatch")
        files = {name: (folder / name).read_bytes() for name in (CHUNKS_FILE, SENTENCES_FILE)}
        for name, data in files.items():
            if hashlib.sha256(data).hexdigest() != manifest["sha256"][name]:
                raise ValueError(f"{name} checksum mismatch")
        index = faiss.read_index(str(folder / INDEX_FILE))
        chunks = [_chunk_from_json(c) for c in json.loads(files[CHUNKS_FILE])]
        owners = json.loads(files[SENTENCES_FILE])
        if not isinstance(owners, list) or not all(type(o) is int for o in owners):
            raise ValueError("sentence map is not a list of integers")
        if index.ntotal != manifest["vector_count"] or len(owners) != index.ntotal:
            raise ValueError("vector count mismatch")
        if len(chunks) != manifest["chunk_count"]:
            raise ValueError("chunk count mismatch")
        if index.d != manifest["dimension"]:
            raise ValueError("dimension mismatch")
        # the constructor rejects a map that runs out of order; only complete indexes are stored
        loaded = DocumentIndex(chunks, index, model_id=manifest["model_id"], owners=np.asarray(owners, dtype=np.int64))
        if loaded.coverage < 1.0:
            raise ValueError("sentence map misses a chunk")
        return loaded

    def quarantine(self, key: str, reason: str) -> Path | None:
        folder = self.path(key)
        target = folder.with_name(f"{key}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        try:
            os.replace(folder, target)
        except OSError:  # already moved by another worker, or gone
            return None
        self.quarantined += 1
        log.warning("index.quarantined key=%s moved_to=%s reason=%s", key, target.name, reason)
        return target

    # --- housekeeping ---------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        count = size = corrupt = 0
        if self.root.is_dir():
            for entry in self.root.iterdir():
                if entry.name.startswith(".") or not entry.is_dir():
                    continue
                if ".corrupt-" in entry.name:
                    corrupt += 1
                    continue
                if (entry / MANIFEST_FILE).is_file():
                    count += 1
                    size += sum(f.stat().st_size for f in entry.iterdir() if f.is_file())
        return {"count": count, "bytes": size, "quarantined": corrupt, "path": str(self.root)}

    def clear(self) -> int:
        """Delete every stored and quarantined index; returns how many folders went."""
        removed = 0
        if self.root.is_dir():
            for entry in self.root.iterdir():
                if entry.is_dir() and not entry.name.startswith("."):
                    shutil.rmtree(entry, ignore_errors=True)
                    removed += 1
        return removed
