"""Failed parses, remembered for a while so that a document that fails stays failed.

A parse that times out after two minutes (or crashes, or meets a corrupt file) gives the same
answer on the same bytes; ``FailedParse`` keeps that answer per content key in a cache layer
with a short TTL (in process, or in Redis next to the other layers), and ``error()`` replays it
at once with the same code and message, saying that it is a cached failure and when the
document will be parsed again.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from mcp_server.core.errors import ProcessingError, UnsupportedFormatError

__all__ = ["FailedParse", "FailureCodec"]

# The classes a failure is replayed as; anything else replays as its nearest listed base.
_KINDS: dict[str, type[ProcessingError]] = {
    "ProcessingError": ProcessingError,
    "UnsupportedFormatError": UnsupportedFormatError,
}


@dataclass(frozen=True, kw_only=True, slots=True)
class FailedParse:
    kind: str
    message: str
    details: dict[str, Any]
    failed_at: float  # epoch seconds
    retry_at: float  # epoch seconds: the entry's TTL ends here

    @classmethod
    def of(cls, error: ProcessingError, ttl: float, now: float | None = None) -> FailedParse:
        now = time.time() if now is None else now
        kind = next((name for name, kind in _KINDS.items() if type(error) is kind), "ProcessingError")
        return cls(kind=kind, message=error.message, details=dict(error.details), failed_at=now, retry_at=now + ttl)

    def error(self, now: float | None = None) -> ProcessingError:
        """The original error, its message saying it is cached and when it will be retried."""
        now = time.time() if now is None else now
        wait = max(0.0, self.retry_at - now)
        retry = time.strftime("%H:%M:%S UTC", time.gmtime(self.retry_at))
        message = (f"{self.message} (a cached failure from {max(0.0, now - self.failed_at):.0f} s ago: "
                   f"this document is parsed again after {retry}, in {wait:.0f} s)")
        return _KINDS.get(self.kind, ProcessingError)(
            message, **{**self.details, "cached_failure": True, "retry_after": round(wait, 1)}
        )


class FailureCodec:
    """JSON, as every value in the shared store (never pickle)."""

    def encode(self, value: FailedParse) -> bytes:
        return json.dumps(asdict(value), allow_nan=False).encode()

    def decode(self, data: bytes) -> FailedParse:
        raw = json.loads(data)
        return FailedParse(kind=str(raw["kind"]), message=str(raw["message"]), details=dict(raw["details"]),
                           failed_at=float(raw["failed_at"]), retry_at=float(raw["retry_at"]))
