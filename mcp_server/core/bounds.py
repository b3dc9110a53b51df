"""Counts the tools accept loosely (top_k, neighbours) are clamped into their range, not refused."""

from __future__ import annotations

__all__ = ["clamp"]


def clamp(value: int, low: int, high: int) -> int:
    """``value`` moved into ``low..high`` (both included)."""
    return max(low, min(int(value), high))
