"""The in-process token buckets: per client, global at 5x, eviction beyond max clients."""

from __future__ import annotations

import pytest

from mcp_server.core.errors import RateLimitError
from mcp_server.middleware.ratelimit import InProcessRateLimiter
from tests.mcp_harness import make_settings

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_client_gets_its_burst_then_waits_for_the_refill() -> None:
    clock = Clock()
    limiter = InProcessRateLimiter(make_settings(rate_limit_rpm=3), clock=clock)
    for _ in range(3):
        await limiter.check("ip:1")
    with pytest.raises(RateLimitError) as caught:
        await limiter.check("ip:1")
    assert caught.value.details["retry_after"] == pytest.approx(20.0)
    clock.now += 20.0  # one token per 20 s at 3 per minute
    await limiter.check("ip:1")


async def test_clients_have_separate_buckets() -> None:
    limiter = InProcessRateLimiter(make_settings(rate_limit_rpm=1), clock=Clock())
    await limiter.check("ip:1")
    await limiter.check("ip:2")
    with pytest.raises(RateLimitError):
        await limiter.check("ip:1")


async def test_the_global_bucket_caps_all_clients_at_five_times_the_rate() -> None:
    limiter = InProcessRateLimiter(make_settings(rate_limit_rpm=2), clock=Clock())
    admitted = 0
    for n in range(30):
        try:
            await limiter.check(f"ip:{n}")
            await limiter.check(f"ip:{n}")
            admitted += 2
        except RateLimitError as exc:
            assert "global" in exc.message
            break
    assert admitted == 10


async def test_a_global_rejection_does_not_spend_the_clients_token() -> None:
    # Global bucket: 2 tokens, refilling 2 per minute; each client: 1 token, refilling 1 per minute.
    clock = Clock()
    limiter = InProcessRateLimiter(make_settings(rate_limit_rpm=1, global_rate_multiplier=2.0), clock=clock)
    await limiter.check("ip:a")
    await limiter.check("ip:c")  # the global bucket is now empty
    with pytest.raises(RateLimitError, match="global"):
        await limiter.check("ip:b")
    # 30 s refill one global token but only half a client token: b passes only if its own token
    # was given back after the global rejection.
    clock.now += 30.0
    await limiter.check("ip:b")


async def test_buckets_beyond_the_client_cap_are_evicted_oldest_first() -> None:
    limiter = InProcessRateLimiter(make_settings(rate_limit_rpm=1, rate_limit_max_clients=3,
                                                 global_rate_multiplier=100), clock=Clock())
    for client in ("a", "b", "c", "d"):
        await limiter.check(client)
    assert limiter.stats()["tracked_clients"] == 3
    await limiter.check("a")  # "a" was evicted, so it starts with a fresh bucket
    with pytest.raises(RateLimitError):
        await limiter.check("d")


async def test_a_call_can_cost_several_tokens_at_once() -> None:
    clock = Clock()
    limiter = InProcessRateLimiter(make_settings(rate_limit_rpm=5), clock=clock)
    await limiter.check("ip:1", cost=3)
    with pytest.raises(RateLimitError) as caught:
        await limiter.check("ip:1", cost=3)  # two left
    assert caught.value.details["retry_after"] == pytest.approx(12.0)  # one more token at 5 per minute
    await limiter.check("ip:1", cost=2)  # the refused call took nothing


async def test_a_cost_above_the_bucket_takes_the_whole_bucket() -> None:
    clock = Clock()
    limiter = InProcessRateLimiter(make_settings(rate_limit_rpm=2), clock=clock)
    await limiter.check("ip:1", cost=20)
    with pytest.raises(RateLimitError):
        await limiter.check("ip:1")
    clock.now += 60.0
    await limiter.check("ip:1", cost=20)  # payable again once the bucket is full
