"""The private redis-server fixtures of tests/multiworker (one copy of that helper)."""

from tests.multiworker.conftest import module_redis, redis_server

__all__ = ["module_redis", "redis_server"]
