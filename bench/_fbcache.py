"""On-disk caches that make re-runs of ``bench/financebench.py`` fast (under bench/results/cache).

* processed documents per (PDF sha256, processing fingerprint): the fingerprint hashes the
  source of every module under ``mcp_server/processors`` and ``core/models.py``, the service's
  ``PROCESSING_VERSION``, the processing options and the PyMuPDF version, so any change to
  parsing re-parses and nothing else does;
* chunks per (document, processing fingerprint, source of ``chunking/`` and ``core/``, chunk
  parameters, models): a change to ranking alone re-chunks nothing;
* embeddings per (model id, sha256 of the text) in SQLite: ``CachedEmbedder`` wraps the
  server's embedder at ``embed_batch``, below the server's own batching and caching logic,
  so a ranking or chunking change re-embeds only texts the model has never seen.

Nothing here re-implements the pipeline; it only remembers the results of its slow stages.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcp_server.encoders.embedders import Embedder

__all__ = ["CachedEmbedder", "EmbeddingStore", "PickleCache", "chunking_fingerprint", "processing_fingerprint"]


def source_fingerprint(*parts: str, extra: str = "") -> str:
    """Hash of the source of the imported ``mcp_server`` below ``parts`` (folders or files)."""
    import mcp_server

    package = Path(mcp_server.__file__).parent  # the code actually imported (see --code)
    digest = hashlib.sha256()
    for part in parts:
        root = package / part
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(extra.encode())
    return digest.hexdigest()[:16]


def processing_fingerprint(options: Any) -> str:
    import pymupdf

    from mcp_server.pipeline.service import PROCESSING_VERSION

    return source_fingerprint("processors", "core/models.py",
                              extra=f"{PROCESSING_VERSION}|{options!r}|{pymupdf.VersionBind}")


def chunking_fingerprint(processing: str, params: Any, model_key: str) -> str:
    """Chunks depend on the processed document, the chunker (and core) source, the parameters
    and the tokenizer (the models' ids)."""
    return source_fingerprint("chunking", "core", extra=f"{processing}|{params!r}|{model_key}")


class PickleCache:
    """One pickle per key under ``root/name``; written atomically (parallel runs share it)."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root / name

    def _path(self, key: str) -> Path:
        return self.root / f"{key}.pkl"

    def get(self, key: str) -> Any | None:
        path = self._path(key)
        if not path.exists():
            return None
        with path.open("rb") as fh:
            return pickle.load(fh)  # noqa: S301 - our own file, keyed by content and code hashes

    def put(self, key: str, value: Any) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        path = self._path(key)
        tmp = path.with_suffix(f".tmp{os.getpid()}-{threading.get_ident()}")
        with tmp.open("wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)  # atomic: a parallel run never reads half a file


class EmbeddingStore:
    """Vectors by (model id, sha256 of text) in one SQLite file; safe for parallel runs (WAL)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=120, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS emb (model TEXT, key BLOB, vec BLOB, "
                         "PRIMARY KEY (model, key)) WITHOUT ROWID")
        self._lock = threading.Lock()

    def get_many(self, model: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                part = list(keys[start : start + 500])
                rows = self._db.execute(
                    f"SELECT key, vec FROM emb WHERE model = ? AND key IN ({','.join('?' * len(part))})",
                    [model, *part],
                )
                found.update((key, np.frombuffer(vec, dtype=np.float32)) for key, vec in rows)
        return found

    def put_many(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        with self._lock, self._db:
            self._db.executemany("INSERT OR IGNORE INTO emb VALUES (?, ?, ?)",
                                 [(model, key, np.asarray(vec, dtype=np.float32).tobytes()) for key, vec in items])

    def close(self) -> None:
        self._db.close()


class CachedEmbedder(Embedder):
    """The server's embedder with a disk memory under ``embed_batch``: the base class's sorting,
    batching, normalising and in-memory cache run unchanged; only texts new to the disk store
    reach the model. Anything else is delegated to the wrapped embedder."""

    def __init__(self, inner: Embedder, store: EmbeddingStore) -> None:
        super().__init__()
        self.inner = inner
        self.store = store
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.max_tokens = inner.max_tokens
        self.batch_size = inner.batch_size
        self.query_prefix = inner.query_prefix
        self.model_calls = 0  # texts this wrapper sent to the model
        self.disk_hits = 0  # texts whose vectors came from the store

    def __getattr__(self, name: str) -> Any:  # only called for attributes this class lacks
        return getattr(self.__dict__["inner"], name)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def embed(self, texts: Sequence[str], **kwargs: Any) -> np.ndarray:
        """Known texts come from the store in one query; only the rest go through the server's
        ``embed`` (which would otherwise tokenize every text just to sort the batches)."""
        keys = [_digest(text) for text in texts]
        found = self.store.get_many(self.model_id, list(dict.fromkeys(keys)))
        self.disk_hits += sum(key in found for key in keys)
        todo = [i for i, key in enumerate(keys) if key not in found]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, key in enumerate(keys):
            if key in found:
                out[i] = found[key]
        if todo:
            out[todo] = super().embed([texts[i] for i in todo], **kwargs)
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries through the embedder's own query path (``bench/embedding_variants.py --serve-documents``
        embeds them with another graph than the documents); few and not stored."""
        return self.inner.embed_queries(texts)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        keys = [_digest(text) for text in texts]
        found = self.store.get_many(self.model_id, keys)  # query vectors arrive here (embed_query)
        todo = [i for i, key in enumerate(keys) if key not in found]
        if todo:
            vectors = _unit(np.asarray(self.inner.embed_batch([texts[i] for i in todo]), dtype=np.float32))
            self.model_calls += len(todo)
            fresh = [(keys[i], vec) for i, vec in zip(todo, vectors, strict=True)]
            self.store.put_many(self.model_id, fresh)
            found.update(fresh)
        return np.stack([found[key] for key in keys]) if keys else np.zeros((0, self.dimension), np.float32)


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms
