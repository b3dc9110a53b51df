"""Files beside a stored index, outside its manifest: the lexical analysis (``lexical.py``) and the
instruction detector's scores (``instructions.py``).

Each is a pair: ``<kind>.<16 hex of the chunks' digest>.npz`` and a pointer file (``<kind>.json``)
that names it with its checksum, the ``chunks.json`` checksum it was made from and the versions it was
made by. Read: trusted only when it is this index's, current and intact (a stale pair is skipped
quietly, a damaged one with a warning); never quarantines the index. Written: best effort, atomic
renames without fsync (a pair cut short by a crash fails its checksum and is written again).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["read_sidecar", "sidecar_name", "store_sidecar", "write_sidecar"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def read_sidecar(folder: Path, manifest: Mapping[str, Any], kind: str, versions: Mapping[str, Any],
                 decode: Callable[[bytes, dict[str, Any], int], T]) -> T | None:
    """What ``<kind>.json`` names beside the index ``manifest`` describes, decoded by ``decode(data,
    pointer, chunk_count)``, if the pair is that index's chunks', of ``versions``, and intact."""
    try:
        pointer = json.loads((folder / f"{kind}.json").read_bytes())
    except (OSError, ValueError):
        return None
    try:
        chunks_digest = manifest["sha256"]["chunks.json"]
        if {k: pointer.get(k) for k in versions} != dict(versions) or pointer.get("chunks_sha256") != chunks_digest:
            return None  # written for other chunks or by another version: written again after this load
        name = pointer["file"]
        if not isinstance(name, str) or name != sidecar_name(kind, chunks_digest):
            raise ValueError("unexpected file name")
        data = (folder / name).read_bytes()
        if hashlib.sha256(data).hexdigest() != pointer.get("sha256"):
            raise ValueError("checksum mismatch")
        return decode(data, pointer, int(manifest["chunk_count"]))
    except Exception as exc:  # noqa: BLE001 - any damage means: do without it, never trust it
        reason = f"{type(exc).__name__}: {exc}"
        log.warning("index.sidecar_unreadable", extra={"kind": kind, "folder": folder.name, "reason": reason})
        return None


def store_sidecar(folder: Path, manifest: Mapping[str, Any], kind: str, fields: Mapping[str, Any],
                  encode: Callable[[], bytes]) -> None:
    """Write ``encode()`` beside the index ``manifest`` describes, and ``<kind>.json`` naming it with
    ``fields`` (best effort: a failure leaves the index as it was, logged)."""
    try:
        chunks_digest = manifest["sha256"]["chunks.json"]
        data = encode()
        name = sidecar_name(kind, chunks_digest)
        write_sidecar(folder / name, data)
        pointer = {**fields, "chunks_sha256": chunks_digest, "file": name, "sha256": hashlib.sha256(data).hexdigest()}
        write_sidecar(folder / f"{kind}.json", json.dumps(pointer, indent=1).encode())
    except (OSError, KeyError, ValueError) as exc:  # e.g. the folder was evicted meanwhile, or the disk is full
        reason = f"{type(exc).__name__}: {exc}"
        log.info("index.sidecar_not_stored", extra={"kind": kind, "folder": folder.name, "reason": reason})


def sidecar_name(kind: str, chunks_digest: str) -> str:
    """The file beside an index that holds ``kind`` for the chunks of ``chunks_digest``."""
    if not isinstance(chunks_digest, str) or len(chunks_digest) < 16 or not chunks_digest.isalnum():
        raise ValueError("bad chunks digest")
    return f"{kind}.{chunks_digest[:16]}.npz"


def write_sidecar(path: Path, data: bytes) -> None:
    """Atomically (a rename), without fsync: a file cut short by a crash fails its checksum."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
