"""When a download is tried again, and how long to wait first (tenacity does the looping)."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from email.utils import parsedate_to_datetime
from typing import TypeVar

import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from mcp_server.core.settings import Settings

__all__ = ["Retryable", "parse_retry_after", "with_retries"]

logger = logging.getLogger(__name__)
T = TypeVar("T")


class Retryable(Exception):  # noqa: N818 - internal signal, never leaves the package
    """A failure worth another attempt: connect errors, timeouts, HTTP 5xx and 429."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date); None if absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max((when - dt.datetime.now(dt.UTC)).total_seconds(), 0.0)


def _wait_for(settings: Settings) -> Callable[[RetryCallState], float]:
    backoff = list(settings.retry_backoff) or [0.0]

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, Retryable) and error.retry_after is not None:
            return min(error.retry_after, settings.retry_after_cap)
        # The n-th wait is backoff[n-1]; the last value repeats if attempts outnumber it.
        return backoff[min(state.attempt_number - 1, len(backoff) - 1)]

    return wait


def _log_retry(display: str) -> Callable[[RetryCallState], None]:
    def log(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        logger.warning("fetch.retry", extra={"attempt": state.attempt_number, "wait": wait, "url": display,
                                             "error": str(error)})

    return log


async def with_retries(settings: Settings, display: str, attempt: Callable[[], Awaitable[T]]) -> T:
    """Run ``attempt`` up to ``download_attempts`` times while it raises Retryable.

    The last Retryable propagates; the caller turns it into a DownloadError.
    """
    retrying = AsyncRetrying(
        stop=stop_after_attempt(settings.download_attempts),
        wait=_wait_for(settings),
        retry=retry_if_exception_type(Retryable),
        before_sleep=_log_retry(display),
        sleep=anyio.sleep,  # cancellable by the caller's anyio deadline
        reraise=True,
    )
    return await retrying(attempt)
