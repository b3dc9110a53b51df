"""Cache layers in Redis, shared by every worker: same TTL, entry cap and byte cap as ``MemoryLayer``.

Layout under ``rag:<namespace>:cache:<layer>:v1:`` — ``e:<hash>`` one value per entry (SET PX ttl),
``order`` a sorted set of entries by insertion time (oldest evicted first), ``sizes`` their byte
counts and ``stats`` a hash of hits, misses, evictions and total bytes, so every worker reports the
same numbers. Put, get, stats and clear are Lua scripts: each is one atomic step, no read-modify-
write races between workers. Values are JSON (documents) or a JSON header line plus the raw bytes
(downloads) — never pickle, so a shared store cannot smuggle code into a worker.

The layer is synchronous like ``CacheLayer``; the service calls it from worker threads. When Redis
fails, an in-process ``MemoryLayer`` answers until the retry interval has passed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Generic, Protocol, TypeVar

import redis

from mcp_server import metrics
from mcp_server.caches.layers import CacheLayer
from mcp_server.caches.registry import layer_bounds, memory_layer
from mcp_server.core.models import (
    ExtractedImage,
    ExtractedTable,
    ExtractedURL,
    FetchedDocument,
    Location,
    ProcessedDocument,
    TextFlag,
)
from mcp_server.core.settings import Settings
from mcp_server.redis.store import REDIS_ERRORS, Outage, key_prefix

__all__ = ["Codec", "DocumentCodec", "DownloadCodec", "RedisLayer", "redis_layers", "redis_uploads"]

logger = logging.getLogger(__name__)

V = TypeVar("V")
CODEC_VERSION = "v1"  # part of every key: a format change never meets old values


class Codec(Protocol[V]):
    def encode(self, value: V) -> bytes: ...

    def decode(self, data: bytes) -> V: ...


class DownloadCodec:
    """A JSON header line, then the document bytes untouched (no base64 inflation)."""

    def encode(self, value: FetchedDocument) -> bytes:
        header: dict[str, Any] = {"url": value.url, "final_url": value.final_url, "content_type": value.content_type,
                                  "charset": value.charset, "filename": value.filename,
                                  "fetched_at": round(value.fetched_at, 3)}
        # validators and a later confirmation only when there are any: the header stays small
        header.update({name: getattr(value, name) for name in ("etag", "last_modified") if getattr(value, name)})
        if value.validated_at != value.fetched_at:
            header["validated_at"] = round(value.validated_at, 3)
        return json.dumps(header, ensure_ascii=True, separators=(",", ":")).encode() + b"\n" + value.data

    def decode(self, data: bytes) -> FetchedDocument:
        header, _, body = data.partition(b"\n")
        # an entry written before fetched_at existed decodes as fetched at 0: stale, so revalidated
        return FetchedDocument(data=body, **{"fetched_at": 0.0, **json.loads(header)})


class DocumentCodec:
    def encode(self, value: ProcessedDocument) -> bytes:
        return json.dumps(asdict(value), ensure_ascii=False, allow_nan=False).encode()

    def decode(self, data: bytes) -> ProcessedDocument:
        raw: dict[str, Any] = json.loads(data)
        return ProcessedDocument(
            content=raw["content"], doc_type=raw["doc_type"], metadata=raw.get("metadata") or {},
            tables=tuple(ExtractedTable(**t) for t in raw.get("tables", ())),
            images=tuple(ExtractedImage(**i) for i in raw.get("images", ())),
            extracted_urls=tuple(ExtractedURL(**u) for u in raw.get("extracted_urls", ())),
            detected_language=raw.get("detected_language", "en"),
            locations=tuple(Location(**{**loc, "heading_path": tuple(loc.get("heading_path") or ())})
                            for loc in raw.get("locations", ())),
            flags=tuple(TextFlag(**f) for f in raw.get("flags", ())),
        )


# Shared by the scripts: drop one entry and its bookkeeping. KEYS: order, sizes, stats.
_DROP = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function drop(prefix, m)
  local size = tonumber(redis.call('HGET', KEYS[2], m) or '0')
  redis.call('DEL', prefix .. m)
  redis.call('HDEL', KEYS[2], m)
  redis.call('ZREM', KEYS[1], m)
  if size ~= 0 then redis.call('HINCRBY', KEYS[3], 'bytes', -size) end
end
local function expire(prefix, ttl)
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms() - ttl)) do drop(prefix, m) end
end
"""

# ARGV: prefix, member, value, ttl ms, max entries, max bytes (0 = no byte cap). Returns the evictions.
_PUT = _DROP + """
local prefix, member, value = ARGV[1], ARGV[2], ARGV[3]
local ttl, max_entries, max_bytes = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
expire(prefix, ttl)
drop(prefix, member)
local size = string.len(value)
local evicted = 0
while redis.call('ZCARD', KEYS[1]) >= max_entries
    or (max_bytes > 0 and tonumber(redis.call('HGET', KEYS[3], 'bytes') or '0') + size > max_bytes) do
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0)
  if #oldest == 0 then break end
  drop(prefix, oldest[1])
  redis.call('HINCRBY', KEYS[3], 'evictions', 1)
  evicted = evicted + 1
end
redis.call('SET', prefix .. member, value, 'PX', ttl)
redis.call('ZADD', KEYS[1], now_ms(), member)
redis.call('HSET', KEYS[2], member, size)
redis.call('HINCRBY', KEYS[3], 'bytes', size)
return evicted
"""

# ARGV: prefix, member. Returns 1 when the entry was there.
_DELETE = _DROP + """
local there = redis.call('EXISTS', ARGV[1] .. ARGV[2])
drop(ARGV[1], ARGV[2])
return there
"""

# ARGV: prefix, member. Returns the value or false, counting a hit or a miss.
_GET = """
local value = redis.call('GET', ARGV[1] .. ARGV[2])
redis.call('HINCRBY', KEYS[3], value and 'hits' or 'misses', 1)
return value
"""

# ARGV: prefix, ttl ms. Returns entries, bytes, hits, misses, evictions.
_STATS = _DROP + """
expire(ARGV[1], tonumber(ARGV[2]))
local s = redis.call('HMGET', KEYS[3], 'bytes', 'hits', 'misses', 'evictions')
return {redis.call('ZCARD', KEYS[1]), s[1] or 0, s[2] or 0, s[3] or 0, s[4] or 0}
"""

# ARGV: prefix. Deletes this layer's entries (only this namespace); counters are kept.
_CLEAR = """
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, m in ipairs(members) do redis.call('DEL', ARGV[1] .. m) end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[3], 'bytes', 0)
return #members
"""

# A miss in Redis, never an error for the caller: a value that no longer decodes is a stale format.
_DECODE_ERRORS = (ValueError, TypeError, KeyError)


class RedisLayer(Generic[V]):
    """``CacheLayer`` in Redis; ``fallback`` (in-process, or the host's upload folder) answers while Redis
    is unavailable."""

    def __init__(
        self, name: str, client: redis.Redis, codec: Codec[V], *, prefix: str, max_entries: int,
        ttl: float, fallback: CacheLayer[V], outage: Outage, max_bytes: int | None = None,
        size_of: Callable[[V], int] | None = None,
    ) -> None:
        self.name = name
        self.max_entries, self.max_bytes, self.ttl = max_entries, max_bytes, ttl
        self._client, self._codec, self._size_of = client, codec, size_of
        self._fallback, self.outage = fallback, outage
        self._prefix = f"{prefix}cache:{name}:{CODEC_VERSION}:"
        self._keys = [self._prefix + "order", self._prefix + "sizes", self._prefix + "stats"]
        self._entry_prefix = self._prefix + "e:"
        self._ttl_ms = max(1, int(ttl * 1000))
        self._put = client.register_script(_PUT)
        self._get = client.register_script(_GET)
        self._stats = client.register_script(_STATS)
        self._clear = client.register_script(_CLEAR)
        self._delete = client.register_script(_DELETE)

    @property
    def backend(self) -> str:
        return self.outage.backend

    @staticmethod
    def _member(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()[:40]

    def _redis(self) -> bool:
        return self.outage.should_try()

    def get(self, key: str) -> V | None:
        if not self._redis():
            return self._fallback.get(key)
        try:
            data = self._get(keys=self._keys, args=[self._entry_prefix, self._member(key)])
        except REDIS_ERRORS as exc:
            self.outage.failed(exc)
            return self._fallback.get(key)
        self.outage.succeeded()
        metrics.cache_lookup(self.name, "redis", data is not None)
        if data is None:
            return None
        try:
            return self._codec.decode(data)
        except _DECODE_ERRORS as exc:
            logger.warning("cache.undecodable", extra={"layer": self.name, "error": str(exc)})
            return None

    def put(self, key: str, value: V) -> None:
        if self.max_bytes is not None and self._size_of is not None and self._size_of(value) > self.max_bytes:
            return  # larger than the whole layer: not cached (as MemoryLayer)
        if not self._redis():
            self._fallback.put(key, value)
            return
        try:
            data = self._codec.encode(value)
        except (TypeError, ValueError) as exc:  # metadata that JSON cannot carry: not shared
            logger.info("cache.unencodable", extra={"layer": self.name, "error": str(exc)})
            return
        try:
            evicted = self._put(keys=self._keys, args=[self._entry_prefix, self._member(key), data,
                                                       self._ttl_ms, self.max_entries, self.max_bytes or 0])
        except REDIS_ERRORS as exc:
            self.outage.failed(exc)
            self._fallback.put(key, value)
            return
        self.outage.succeeded()
        metrics.cache_evicted(self.name, "redis", int(evicted))

    def delete(self, key: str) -> bool:
        removed = self._fallback.delete(key)
        if not self._redis():
            return removed
        try:
            there = int(self._delete(keys=self._keys, args=[self._entry_prefix, self._member(key)]))
        except REDIS_ERRORS as exc:
            self.outage.failed(exc)
            return removed
        self.outage.succeeded()
        return bool(there) or removed

    def clear(self) -> int:
        removed = self._fallback.clear()
        if not self._redis():
            return removed
        try:
            removed = int(self._clear(keys=self._keys, args=[self._entry_prefix]))
        except REDIS_ERRORS as exc:
            self.outage.failed(exc)
            return removed
        self.outage.succeeded()
        return removed

    def stats(self) -> dict[str, object]:
        if self._redis():
            try:
                raw = self._stats(keys=self._keys, args=[self._entry_prefix, self._ttl_ms])
            except REDIS_ERRORS as exc:
                self.outage.failed(exc)
            else:
                self.outage.succeeded()
                entries, size, hits, misses, evictions = (int(v) for v in raw)
                total = hits + misses
                out: dict[str, object] = {
                    "backend": "redis", "entries": entries, "max_entries": self.max_entries, "hits": hits,
                    "misses": misses, "hit_rate": round(hits / total, 3) if total else 0.0,
                    "evictions": evictions, "ttl_s": self.ttl,
                }
                if self.max_bytes is not None:
                    out["bytes"], out["max_bytes"] = size, self.max_bytes
                return out
        return {**self._fallback.stats(), "backend": self.backend}


def redis_layers(
    settings: Settings, client: redis.Redis,
) -> tuple[RedisLayer[FetchedDocument], RedisLayer[ProcessedDocument]]:
    """The download and processed-document layers, with the bounds of the in-process ones
    (``caches/registry.py``), which also serve as their fallbacks."""
    prefix = key_prefix(settings)
    outage = Outage("cache", settings.redis_retry_interval)
    bounds = layer_bounds(settings)
    downloads = RedisLayer(
        "download", client, DownloadCodec(), prefix=prefix, max_entries=bounds["download"].max_entries,
        ttl=bounds["download"].ttl, max_bytes=bounds["download"].max_bytes, size_of=bounds["download"].size_of,
        outage=outage, fallback=memory_layer("download", settings),
    )
    documents = RedisLayer(
        "document", client, DocumentCodec(), prefix=prefix, max_entries=bounds["document"].max_entries,
        ttl=bounds["document"].ttl, outage=outage, fallback=memory_layer("document", settings),
    )
    return downloads, documents


UPLOAD_ENTRIES = 100_000  # uploads are bounded by bytes (upload_store_max_bytes); this only caps the count


def redis_uploads(
    settings: Settings, client: redis.Redis, outage: Outage, fallback: CacheLayer[FetchedDocument],
) -> RedisLayer[FetchedDocument]:
    """Uploaded documents for every host: kept upload_ttl, oldest removed beyond upload_store_max_bytes;
    the host's upload folder answers while Redis is down."""
    return RedisLayer(
        "upload", client, DownloadCodec(), prefix=key_prefix(settings), max_entries=UPLOAD_ENTRIES,
        ttl=settings.upload_ttl, max_bytes=settings.upload_store_max_bytes, size_of=lambda d: len(d.data),
        outage=outage, fallback=fallback,
    )
