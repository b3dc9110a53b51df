"""Uploaded documents (POST /documents): content-addressed, kept for ``upload_ttl``, read back
by their ``upload://<sha256>`` document URL.

``UploadStore`` is the small interface; ``DiskUploads`` keeps them in ``upload_dir``, shared by
every worker process of one host (one file per upload, written to a temp file and renamed into
place, so a reader never sees half a file). With ``REDIS_URL`` the lifespan puts a Redis layer
in front (``redis/``), shared by every host. Keys are checked against ``UPLOAD_URL`` before any
path is built from them: a document URL can never name a file outside the folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Protocol

from mcp_server.core.models import FetchedDocument
from mcp_server.core.settings import Settings

__all__ = ["DiskUploads", "UploadStore", "is_upload", "store_upload", "upload_key", "upload_url"]

logger = logging.getLogger(__name__)

UPLOAD_SCHEME = "upload://"
UPLOAD_URL = re.compile(r"upload://([0-9a-f]{64})")
_SUFFIX = ".upload"


def is_upload(url: str) -> bool:
    return url[:len(UPLOAD_SCHEME)].lower() == UPLOAD_SCHEME


def upload_url(sha256: str) -> str:
    return f"{UPLOAD_SCHEME}{sha256}"


def upload_key(url: str) -> str | None:
    """The content hash an upload URL names, or None when it is not a well-formed one."""
    match = UPLOAD_URL.fullmatch(url.strip())
    return match.group(1) if match else None


class UploadStore(Protocol):
    """Uploaded documents by content hash (the CacheLayer shape: a Redis layer fits it too)."""

    def get(self, key: str) -> FetchedDocument | None: ...

    def put(self, key: str, value: FetchedDocument) -> None: ...

    def delete(self, key: str) -> bool: ...

    def clear(self) -> int: ...

    def stats(self) -> dict[str, object]: ...


def store_upload(store: UploadStore, body: bytes, filename: str, content_type: str) -> FetchedDocument:
    """Hash (twice: the URL names the hash, the document hashes itself), then store (blocking)."""
    url = upload_url(hashlib.sha256(body).hexdigest())
    document = FetchedDocument(data=body, url=url, final_url=url, filename=filename, content_type=content_type,
                               fetched_at=time.time())
    store.put(document.sha256, document)
    return document


def encode(document: FetchedDocument) -> bytes:
    """A JSON header line, then the bytes untouched (the Redis download codec's layout)."""
    header = {"content_type": document.content_type, "filename": document.filename,
              "fetched_at": document.fetched_at}
    return json.dumps(header, ensure_ascii=True).encode() + b"\n" + document.data


def decode(key: str, data: bytes) -> FetchedDocument:
    header, _, body = data.partition(b"\n")
    meta = json.loads(header)
    url = upload_url(key)
    return FetchedDocument(data=body, url=url, final_url=url, content_type=str(meta.get("content_type", "")),
                           filename=str(meta.get("filename", "")), fetched_at=float(meta.get("fetched_at", 0)))


class DiskUploads:
    """Uploads as files ``<sha256>.upload`` in one folder; expired by modification time."""

    name = "upload"

    def __init__(self, settings: Settings) -> None:
        self.folder = Path(settings.upload_dir)
        self.ttl = settings.upload_ttl
        self.max_bytes = settings.upload_store_max_bytes
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{64}", key):
            raise ValueError("an upload key is a SHA-256 in hex")
        return self.folder / f"{key}{_SUFFIX}"

    def get(self, key: str) -> FetchedDocument | None:
        path = self._path(key)
        data: bytes | None = None
        try:
            with open(path, "rb") as handle:
                if time.time() - os.fstat(handle.fileno()).st_mtime <= self.ttl:
                    data = handle.read()
        except FileNotFoundError:
            return None
        if data is None:  # expired
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return None
        try:
            return decode(key, data)
        except (ValueError, TypeError):
            logger.warning("upload.undecodable", extra={"upload": key[:16]})
            return None

    def put(self, key: str, value: FetchedDocument) -> None:
        path = self._path(key)
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._lock:
            self._sweep(incoming=len(value.data))
        fd, temp = tempfile.mkstemp(dir=self.folder, prefix=".incoming-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(encode(value))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, path)  # a reader sees the old file or the whole new one
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise

    def _entries(self) -> list[tuple[float, int, Path]]:
        entries = []
        for path in self.folder.glob(f"*{_SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):  # another worker removed it
                info = path.stat()
                entries.append((info.st_mtime, info.st_size, path))
        return sorted(entries)

    def _sweep(self, incoming: int) -> None:
        """Expired uploads go; then the oldest until ``incoming`` more bytes fit the cap."""
        now = time.time()
        kept = []
        for mtime, size, path in self._entries():
            if now - mtime > self.ttl:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            else:
                kept.append((mtime, size, path))
        total = sum(size for _, size, _ in kept)
        for _, size, path in kept:
            if total + incoming <= self.max_bytes:
                break
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            total -= size
            logger.info("upload.evicted", extra={"upload": path.stem[:16], "bytes": size})

    def delete(self, key: str) -> bool:
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            return False
        return True

    def clear(self) -> int:
        removed = 0
        for _, _, path in self._entries():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
        return removed

    def stats(self) -> dict[str, object]:
        entries = [entry for entry in self._entries() if time.time() - entry[0] <= self.ttl] \
            if self.folder.is_dir() else []
        return {"backend": "disk", "entries": len(entries), "bytes": sum(size for _, size, _ in entries),
                "max_bytes": self.max_bytes, "ttl_s": self.ttl}
