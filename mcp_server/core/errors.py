"""The server's one exception tree. Every error a user can cause maps to a stable ``code``.

    MCPServerError                code INTERNAL_ERROR  (never shown with details to clients)
    ├── RateLimitError            code RATE_LIMITED    (+ retry_after seconds)
    ├── ValidationError           code VALIDATION_ERROR
    ├── DownloadError             code DOWNLOAD_ERROR
    ├── ProcessingError           code PROCESSING_ERROR
    │   └── UnsupportedFormatError          (same code, message "unsupported format ...")
    ├── ModelLoadError            code MODEL_LOAD_ERROR
    └── ToolTimeoutError          code TIMEOUT

Library exceptions are translated where they enter (downloader, processors, models); tools
never raise to the client: the guard in ``middleware/guard.py`` turns these into
``{"error", "code", "request_id"}`` results.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DownloadError",
    "MCPServerError",
    "ModelLoadError",
    "ProcessingError",
    "RateLimitError",
    "ServerBusyError",
    "ToolTimeoutError",
    "UnsupportedFormatError",
    "ValidationError",
]


class MCPServerError(Exception):
    """Base of every error the server raises on purpose."""

    code: str = "INTERNAL_ERROR"
    default_message: str = "Internal server error"

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.message = message or self.default_message
        # Extra JSON-safe fields for the client (e.g. retry_after, argument, limit).
        self.details: dict[str, Any] = details
        super().__init__(self.message)

    def __reduce__(self) -> tuple[Any, ...]:
        # Parser workers send errors back pickled; the default Exception pickling replays only
        # ``args`` and would drop ``details`` (and break keyword-only ones like retry_after).
        return (_rebuild_error, (type(self), self.message, self.details))

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.code, **self.details}


class RateLimitError(MCPServerError):
    code = "RATE_LIMITED"
    default_message = "Rate limit exceeded"

    def __init__(self, message: str | None = None, *, retry_after: float, **details: Any) -> None:
        super().__init__(message, retry_after=round(max(retry_after, 0.0), 3), **details)


class ServerBusyError(MCPServerError):
    """Retryable: the memory budget is taken by other documents' index builds for now."""

    code = "SERVER_BUSY"
    default_message = "The server is indexing other large documents; retry shortly"

    def __init__(self, message: str | None = None, *, retry_after: float, **details: Any) -> None:
        super().__init__(message, retry_after=round(max(retry_after, 0.0), 3), **details)


class ValidationError(MCPServerError):
    code = "VALIDATION_ERROR"
    default_message = "Invalid argument"


class DownloadError(MCPServerError):
    code = "DOWNLOAD_ERROR"
    default_message = "Download failed"


class ProcessingError(MCPServerError):
    code = "PROCESSING_ERROR"
    default_message = "Document could not be processed"


class UnsupportedFormatError(ProcessingError):
    default_message = "unsupported format"


class ModelLoadError(MCPServerError):
    code = "MODEL_LOAD_ERROR"
    default_message = "Model could not be loaded"


class ToolTimeoutError(MCPServerError):
    code = "TIMEOUT"
    default_message = "The operation timed out"


def _rebuild_error(cls: type[MCPServerError], message: str, details: dict[str, Any]) -> MCPServerError:
    """Unpickle without calling ``__init__`` (subclasses may require keyword arguments)."""
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.message = message
    error.details = dict(details)
    return error
