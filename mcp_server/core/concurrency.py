"""Keeping blocking work off the event loop."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread

__all__ = ["run_sync"]

T = TypeVar("T")


async def run_sync(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking function in a worker thread (the thread finishes even if we are cancelled)."""
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs), abandon_on_cancel=True)
