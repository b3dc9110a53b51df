"""Indexes on disk: ``<index_dir>/<key>/manifest.json`` naming one version of the files
``index.<v>.faiss``, ``chunks.<v>.json`` and ``sentences.<v>.json`` with their checksums.

A save writes the new version's files under new names (temp file in the same folder, fsync,
``os.replace``, folder fsync), then replaces ``manifest.json`` — the one atomic switch — and only
then deletes the previous version's files. A reader therefore sees the old index or the new one,
never a mix and never nothing, whenever a writer is killed. A folder whose manifest does not match
its files (a truncated copy, bit rot, an edited file) is never loaded: it is moved aside to
``<key>.corrupt-<ts>`` and the caller rebuilds; a folder without a manifest holds no committed
index (a first save was interrupted) and counts as absent. No pickle: FAISS's own serialisation for
vectors (one per sentence), JSON for chunk metadata and for the sentence -> chunk map; BM25 is
built on load from the chunks' tokens stored beside the index (``lexical.py``, outside the manifest), and
the instruction detector's scores of its chunks are read from beside it too (``instructions.py``).
One writer per key across processes: a file lock in ``<index_dir>/.locks/``; readers take no lock
(but write that analysis beside an index that has none).

``export``/``write`` move an index's files as bytes, for a shared store in front of which this
folder is the host's cache (``indexes.shared``).
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from filelock import FileLock, Timeout

from mcp_server.core.models import Chunk, ChunkLocation, TextFlag
from mcp_server.indexes.instructions import read_instructions, store_instructions
from mcp_server.indexes.lexical import read_lexical, store_lexical
from mcp_server.retrieval.index import DocumentIndex

__all__ = [
    "FILES", "FORMAT_VERSION", "IndexFolder", "IndexStore", "Manifest", "stored_file", "try_acquire", "verify_files",
]

log = logging.getLogger(__name__)

# 2: one vector per sentence plus sentences.json; a format-1 folder (one vector per chunk) is
# quarantined and rebuilt, never read as sentences. The versioned file names (the manifest's
# "files") are optional within format 2: a folder without them is read under the fixed names.
FORMAT_VERSION = 2
INDEX_FILE, CHUNKS_FILE, SENTENCES_FILE, MANIFEST_FILE = "index.faiss", "chunks.json", "sentences.json", "manifest.json"
FILES = (INDEX_FILE, CHUNKS_FILE, SENTENCES_FILE)  # the logical names, as exported and shared
READ_ATTEMPTS = 3  # a reader that loses a race with a version switch reads the new manifest

Manifest = dict[str, Any]
# Given a manifest, return None if acceptable, else the reason it is not.
ManifestCheck = Callable[[Manifest], str | None]
# Writes one file's content to the (temporary) path it is given.
FileWriter = Callable[[str], None]


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems refuse fsync on folders; best effort
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: Path, write: FileWriter) -> str:
    """Write through ``write(temp name)`` (FAISS writes its index itself, so the vectors are never
    held twice in memory), fsync, rename over ``path``; returns the file's SHA-256, read back."""
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


def _bytes(data: bytes) -> FileWriter:
    def write(tmp: str) -> None:
        Path(tmp).write_bytes(data)

    return write


def _file_sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _versioned(name: str, version: str) -> str:
    stem, _, suffix = name.partition(".")
    return f"{stem}.{version}.{suffix}"


def _names(manifest: Manifest) -> dict[str, str]:
    """Logical name -> file name in the folder (fixed names in a folder written before versions)."""
    files = manifest.get("files") or {name: name for name in FILES}
    if set(files) != set(FILES) or not all(isinstance(v, str) and "/" not in v and v != MANIFEST_FILE
                                            for v in files.values()):
        raise ValueError("manifest names unexpected files")
    return dict(files)


def stored_file(folder: Path, name: str) -> Path:
    """Where the current version of the logical file ``name`` (e.g. ``index.faiss``) is in ``folder``."""
    return folder / _names(json.loads((folder / MANIFEST_FILE).read_bytes()))[name]


def verify_files(manifest: Manifest, blobs: Mapping[str, bytes], check: ManifestCheck | None = None) -> None:
    """Raise ValueError unless ``blobs`` (by logical name) are the files ``manifest`` describes."""
    if manifest.get("format") != FORMAT_VERSION:
        raise ValueError(f"format {manifest.get('format')} != {FORMAT_VERSION}")
    if check is not None and (reason := check(manifest)):
        raise ValueError(reason)
    digests = manifest.get("sha256")
    if not isinstance(digests, dict) or set(blobs) != set(FILES):
        raise ValueError("files or checksums missing")
    for name, data in blobs.items():
        if hashlib.sha256(data).hexdigest() != digests.get(name):
            raise ValueError(f"{name} checksum mismatch")


def _chunk_to_json(chunk: Chunk) -> dict[str, Any]:
    return asdict(chunk)


def _chunk_from_json(data: dict[str, Any]) -> Chunk:
    loc = dict(data["location"])
    loc["pages"] = tuple(loc.get("pages") or ())
    loc["heading_path"] = tuple(loc.get("heading_path") or ())
    flags = tuple(TextFlag(**flag) for flag in data.get("flags", ()))
    return Chunk(**{**data, "location": ChunkLocation(**loc), "flags": flags})


class _Switched(Exception):
    """A file the manifest named is gone because a writer switched versions meanwhile."""


class IndexFolder:
    """Where the indexes of one folder live and how the folder is kept: a key's folder and its lock
    across processes, a damaged folder moved aside, the least recently used indexes deleted whole
    to keep the folder within its size bound, the census and the clearing. What a folder holds is
    ``IndexStore``'s."""

    def __init__(self, index_dir: Path | str) -> None:
        self.root = Path(index_dir)
        self.quarantined = 0
        self.evicted = 0

    def path(self, key: str) -> Path:
        if not key or "/" in key or key.startswith("."):
            raise ValueError(f"bad index key {key!r}")
        return self.root / key

    def exists(self, key: str) -> bool:
        return (self.path(key) / MANIFEST_FILE).is_file()

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

    def quarantine(self, key: str, reason: str) -> Path | None:
        folder = self.path(key)
        target = folder.with_name(f"{key}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        try:
            os.replace(folder, target)
        except OSError:  # already moved by another worker, or gone
            return None
        self.quarantined += 1
        log.warning("index.quarantined", extra={"key": key, "moved_to": target.name, "reason": reason})
        return target

    # --- size bound ---------------------------------------------------------------------
    def make_room(self, max_bytes: int | None, *, keep: str) -> tuple[int, int]:
        """Delete the least recently used indexes whole until the folder holds at most ``max_bytes``,
        never ``keep`` (just saved) nor an index whose lock another writer holds; (bytes now, evicted)."""
        for leftover in self.root.glob(".evicted-*"):  # a deleter killed midway
            shutil.rmtree(leftover, ignore_errors=True)
        entries = sorted(_entries(self.root), key=lambda entry: entry[0])
        total = sum(size for _, size, _ in entries)
        evicted = 0
        for _, size, folder in entries:
            if max_bytes is None or total <= max_bytes:
                break
            if folder.name == keep or not self._evict(folder):
                continue
            total -= size
            evicted += 1
        self.evicted += evicted
        return total, evicted

    def _evict(self, folder: Path) -> bool:
        """Rename the folder away under its key's lock (readers then find the index absent, never
        half of it), then delete it. False when a writer holds the lock or it is already gone."""
        corrupt = ".corrupt-" in folder.name
        lock = None if corrupt else self.file_lock(folder.name)
        if lock is not None and not try_acquire(lock):
            return False
        try:
            gone = self.root / f".evicted-{folder.name}-{os.getpid()}-{time.time_ns():x}"
            try:
                os.replace(folder, gone)
            except OSError:
                return False
        finally:
            if lock is not None:
                lock.release()
        shutil.rmtree(gone, ignore_errors=True)
        log.info("index.evicted", extra={"key": folder.name, "reason": "index folder over its size bound"})
        return True

    # --- housekeeping ---------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        count, size, corrupt = _census(self.root)
        return {"count": count, "bytes": size, "quarantined": corrupt, "evicted": self.evicted, "path": str(self.root)}

    def clear(self) -> int:
        """Delete every stored and quarantined index; returns how many folders went."""
        removed = 0
        if self.root.is_dir():
            for entry in self.root.iterdir():
                if entry.is_dir() and not entry.name.startswith("."):
                    shutil.rmtree(entry, ignore_errors=True)
                    removed += 1
        return removed


class IndexStore(IndexFolder):
    """The indexes of one folder as versions: each written whole and switched to atomically, read
    back checked against its manifest (a damaged one quarantined), exported and imported as bytes."""

    # --- write (under lock(key)) -------------------------------------------------------------
    def save(self, key: str, index: DocumentIndex, *, chunker_version: str) -> Manifest:
        """Persist a complete index as a new version of ``key``; returns its manifest."""
        if index.coverage < 1.0:
            raise ValueError(f"index {key} covers {index.coverage:.0%} of its chunks; only complete ones are stored")
        chunks = json.dumps([_chunk_to_json(c) for c in index.chunks], ensure_ascii=False).encode()
        owners = json.dumps(index.owners.tolist(), separators=(",", ":")).encode()
        header = {
            "format": FORMAT_VERSION,
            "key": key,
            "model_id": index.model_id,
            "chunker_version": chunker_version,
            "chunk_count": len(index),
            "vector_count": index.faiss.ntotal,
            "dimension": index.dimension,
            "languages": index.languages,
            "created": time.time(),
        }
        writers = {INDEX_FILE: lambda tmp: faiss.write_index(index.faiss, tmp), CHUNKS_FILE: _bytes(chunks),
                   SENTENCES_FILE: _bytes(owners)}
        manifest = store_lexical(self.path(key), self._commit(key, header, writers), index)
        return store_instructions(self.path(key), manifest, index)

    def write(self, key: str, manifest: Manifest, blobs: Mapping[str, bytes]) -> Manifest:
        """Store files exported by another host's ``export`` (checked with ``verify_files`` first)."""
        verify_files(manifest, blobs)
        header = {name: value for name, value in manifest.items() if name not in ("sha256", "files")}
        committed = self._commit(key, header, {name: _bytes(data) for name, data in blobs.items()})
        if committed["sha256"] != manifest["sha256"]:  # the disk did not keep what was written
            raise ValueError("written files do not match their checksums")
        return committed

    def _commit(self, key: str, header: Manifest, writers: Mapping[str, FileWriter]) -> Manifest:
        folder = self.path(key)
        folder.mkdir(parents=True, exist_ok=True)
        _fsync_dir(self.root)
        version = f"{time.time_ns():x}"
        names = {name: _versioned(name, version) for name in writers}
        try:
            digests = {name: write_atomic(folder / names[name], write) for name, write in writers.items()}
            manifest = {**header, "sha256": digests, "files": names}
            write_atomic(folder / MANIFEST_FILE, _bytes(json.dumps(manifest, indent=1).encode()))  # the switch
        except BaseException:  # e.g. the disk is full: the new version's files go, the old version stays
            for file in names.values():
                with contextlib.suppress(OSError):
                    (folder / file).unlink()
            with contextlib.suppress(OSError):
                folder.rmdir()  # only if empty: a first save leaves no folder behind
            raise
        keep = {MANIFEST_FILE, *names.values()}
        for entry in folder.iterdir():  # the previous version, and temp files of a killed writer
            if entry.name not in keep:
                with contextlib.suppress(OSError):
                    entry.unlink()
        return manifest

    # --- read (no lock) ----------------------------------------------------------------------
    def load(self, key: str, check: ManifestCheck | None = None) -> DocumentIndex | None:
        """The stored index, or None if absent; anything unreadable or mismatching is
        quarantined (and None returned) so the caller rebuilds."""
        folder = self.path(key)
        for _ in range(READ_ATTEMPTS):
            try:
                raw = (folder / MANIFEST_FILE).read_bytes()
            except FileNotFoundError:  # nothing committed (absent, or a first save was cut short)
                return None
            try:
                index = self._read(folder, raw, check, key)
            except _Switched:
                continue
            except Exception as exc:  # json, faiss, OS and format errors all mean: do not trust it
                self.quarantine(key, f"{type(exc).__name__}: {exc}")
                return None
            _mark_used(folder)
            return index
        # versions kept switching under this reader: the caller looks again under the lock
        log.info("index.read_raced", extra={"key": key})
        return None

    def _read(self, folder: Path, raw: bytes, check: ManifestCheck | None, key: str) -> DocumentIndex:
        manifest = json.loads(raw)
        if manifest.get("format") != FORMAT_VERSION:
            raise ValueError(f"format {manifest.get('format')} != {FORMAT_VERSION}")
        if check is not None and (reason := check(manifest)):
            raise ValueError(reason)
        paths = {name: folder / file for name, file in _names(manifest).items()}
        try:
            # the vectors are checked by streaming the file, then read by FAISS itself: one copy
            # in memory, not three (bytes, numpy view, index)
            if _file_sha256(paths[INDEX_FILE]) != manifest["sha256"][INDEX_FILE]:
                raise ValueError(f"{INDEX_FILE} checksum mismatch")
            files = {name: paths[name].read_bytes() for name in (CHUNKS_FILE, SENTENCES_FILE)}
            for name, data in files.items():
                if hashlib.sha256(data).hexdigest() != manifest["sha256"][name]:
                    raise ValueError(f"{name} checksum mismatch")
            index = faiss.read_index(str(paths[INDEX_FILE]))
        except (FileNotFoundError, ValueError, RuntimeError):
            try:
                current: bytes | None = (folder / MANIFEST_FILE).read_bytes()
            except FileNotFoundError:  # evicted or quarantined meanwhile: absent, not damaged
                current = None
            except OSError:
                current = raw
            if current != raw:
                raise _Switched from None  # a writer replaced the version we were reading, or it went
            raise
        return _decode(manifest, index, files, key, folder)

    @staticmethod
    def decode_blobs(manifest: Manifest, blobs: Mapping[str, bytes], key: str) -> DocumentIndex:
        """The index stored under ``key`` from exported files (checked with ``verify_files`` first),
        without the folder."""
        verify_files(manifest, blobs)
        index = faiss.deserialize_index(np.frombuffer(blobs[INDEX_FILE], dtype=np.uint8))
        return _decode(manifest, index, blobs, key)

    def export(self, key: str) -> tuple[Manifest, dict[str, bytes]] | None:
        """The current version's manifest (without local file names) and files by logical name,
        checked against their checksums; None if absent or damaged (``load`` quarantines)."""
        folder = self.path(key)
        try:
            manifest = json.loads((folder / MANIFEST_FILE).read_bytes())
            blobs = {name: (folder / file).read_bytes() for name, file in _names(manifest).items()}
            verify_files(manifest, blobs)
        except (OSError, ValueError) as exc:
            log.warning("index.export_failed", extra={"key": key, "reason": str(exc)})
            return None
        return {k: v for k, v in manifest.items() if k != "files"}, blobs


def try_acquire(lock: FileLock) -> bool:
    try:
        lock.acquire(blocking=False)
    except Timeout:
        return False
    return True


def _decode(manifest: Manifest, index: Any, files: Mapping[str, bytes], key: str,
            folder: Path | None = None) -> DocumentIndex:
    """The index the files hold, stored under ``key``; from a folder, with the analysis stored beside
    it (``lexical.py``), which a folder without one gets now."""
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
    stored = read_lexical(folder, manifest) if folder is not None else None
    loaded = DocumentIndex(chunks, index, model_id=manifest["model_id"], owners=np.asarray(owners, dtype=np.int64),
                           stored=stored, key=key)
    if loaded.coverage < 1.0:
        raise ValueError("sentence map misses a chunk")
    if folder is not None and stored is None:
        store_lexical(folder, manifest, loaded)
    if folder is not None:
        loaded.instructions = read_instructions(folder, manifest)
    return loaded


def _mark_used(folder: Path) -> None:
    """Mark the index as used now (its manifest's mtime is its place in the eviction order)."""
    with contextlib.suppress(OSError):
        os.utime(folder / MANIFEST_FILE)


def _entries(root: Path) -> list[tuple[float, int, Path]]:
    """(last use, bytes, folder) of every index folder; quarantined ones count as never used."""
    out: list[tuple[float, int, Path]] = []
    if not root.is_dir():
        return out
    for entry in root.iterdir():
        if entry.name.startswith("."):
            continue
        try:
            files = [f.stat() for f in entry.iterdir()]
            used = 0.0 if ".corrupt-" in entry.name else (entry / MANIFEST_FILE).stat().st_mtime
        except OSError:  # no manifest: a first save is under way (or was cut short): not ours to delete
            continue
        out.append((used, sum(f.st_size for f in files), entry))
    return out


def _census(root: Path) -> tuple[int, int, int]:
    """(stored indexes, their bytes, quarantined folders) under ``root``."""
    count = size = corrupt = 0
    if root.is_dir():
        for entry in root.iterdir():
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            if ".corrupt-" in entry.name:
                corrupt += 1
                continue
            if (entry / MANIFEST_FILE).is_file():
                count += 1
                size += sum(f.stat().st_size for f in entry.iterdir() if f.is_file())
    return count, size, corrupt
