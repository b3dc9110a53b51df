"""Rate limits shared by every worker: the token buckets of ``InProcessRateLimiter`` kept in Redis.

``limits`` (already a dependency) has fixed and moving windows in Redis but no token bucket, and
the contract is burst-then-refill with a retry-after, so the bucket is one Lua script: it reads
the Redis clock (``TIME``), refills and takes from the client and the global bucket in one atomic
step — a global rejection leaves the client's token alone, and no two workers ever race on a
read-modify-write. Buckets expire once they would be full again, so idle clients cost nothing.

Redis failing (at start or mid-run) switches to the in-process limiter of this worker, with one
warning per outage; health reports ``memory (redis unavailable)`` until Redis answers again.
"""

from __future__ import annotations

import redis.asyncio

from mcp_server import metrics
from mcp_server.core.errors import RateLimitError
from mcp_server.core.settings import Settings
from mcp_server.middleware.ratelimit import InProcessRateLimiter
from mcp_server.redis.store import REDIS_ERRORS, Outage, key_prefix

__all__ = ["RedisRateLimiter"]

# KEYS: client bucket, global bucket, stats hash. ARGV: client capacity, client tokens/s, global
# capacity, global tokens/s, cost (tokens to take; at most a full bucket).
# Returns {0} or {1 (client) | 2 (global), seconds to wait, rejected}.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local function level(key, cap, rate)
  local v = redis.call('HMGET', key, 'tokens', 'ts')
  local tokens, ts = tonumber(v[1]), tonumber(v[2])
  if tokens == nil or ts == nil then return cap end
  return math.min(cap, tokens + math.max(0, now - ts) * rate)
end
local function take(key, tokens, cap, rate, cost)
  tokens = tokens - cost
  redis.call('HSET', key, 'tokens', string.format('%.6f', tokens), 'ts', string.format('%.6f', now))
  redis.call('PEXPIRE', key, math.ceil((cap - tokens) / rate * 1000) + 1000)
end
local ccap, crate = tonumber(ARGV[1]), tonumber(ARGV[2])
local gcap, grate = tonumber(ARGV[3]), tonumber(ARGV[4])
local ccost, gcost = math.min(tonumber(ARGV[5]), ccap), math.min(tonumber(ARGV[5]), gcap)
local client = level(KEYS[1], ccap, crate)
if client < ccost then
  return {1, string.format('%.6f', (ccost - client) / crate), redis.call('HINCRBY', KEYS[3], 'rejected', 1)}
end
local global = level(KEYS[2], gcap, grate)
if global < gcost then
  return {2, string.format('%.6f', (gcost - global) / grate), redis.call('HINCRBY', KEYS[3], 'rejected', 1)}
end
take(KEYS[1], client, ccap, crate, ccost)
take(KEYS[2], global, gcap, grate, gcost)
return {0}
"""


class RedisRateLimiter:
    """``RateLimiter`` whose buckets live in Redis; ``fallback`` decides while Redis is down."""

    def __init__(self, settings: Settings, client: redis.asyncio.Redis,
                 fallback: InProcessRateLimiter | None = None, outage: Outage | None = None) -> None:
        self._rpm = float(settings.rate_limit_rpm)
        self._global_rpm = self._rpm * settings.global_rate_multiplier
        prefix = key_prefix(settings) + "ratelimit:"
        self._client_prefix = prefix + "client:"
        self._global_key, self._stats_key = prefix + "global", prefix + "stats"
        self._args = [self._rpm, self._rpm / 60.0, self._global_rpm, self._global_rpm / 60.0]
        self._script = client.register_script(_TAKE)
        self.fallback = fallback or InProcessRateLimiter(settings)
        self.outage = outage or Outage("rate_limit", settings.redis_retry_interval)
        self.rejected = 0
        self.rejected_all_workers = 0  # the shared count, as of this worker's last rejection

    @property
    def backend(self) -> str:
        return self.outage.backend

    async def check(self, client: str, cost: int = 1) -> None:
        if not self.outage.should_try():
            return await self.fallback.check(client, cost)
        keys = [self._client_prefix + client, self._global_key, self._stats_key]
        try:
            answer = await self._script(keys=keys, args=[*self._args, cost])
        except REDIS_ERRORS as exc:
            self.outage.failed(exc)
            return await self.fallback.check(client, cost)
        self.outage.succeeded()
        if int(answer[0]) == 0:
            return
        self.rejected += 1
        metrics.rate_limited("client" if int(answer[0]) == 1 else "global")
        self.rejected_all_workers = int(answer[2])
        wait = float(answer[1])
        if int(answer[0]) == 1:
            raise RateLimitError(f"Rate limit exceeded: {int(self._rpm)} requests per minute per client",
                                 retry_after=wait)
        raise RateLimitError(
            f"Server busy: global limit of {int(self._global_rpm)} requests per minute reached",
            retry_after=wait,
        )

    def stats(self) -> dict[str, object]:
        out: dict[str, object] = {
            "backend": self.backend,
            "shared": not self.outage.down,
            "per_client_rpm": self._rpm,
            "global_rpm": self._global_rpm,
            "rejected": self.rejected + self.fallback.rejected,  # by this worker
            "rejected_all_workers": self.rejected_all_workers,
            "redis_failures": self.outage.failures,
        }
        if self.outage.down:
            out["fallback"] = self.fallback.stats()
        return out
