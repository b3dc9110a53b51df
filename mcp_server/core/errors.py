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

A ``PROCESSING_ERROR`` always carries one of the stable ``REASONS`` as ``reason`` (docs/formats.md
lists them): the raise site names it; else an error with a ``limit`` is ``too_large``, an
unsupported format ``unsupported_format`` and anything else ``corrupt``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "REASONS",
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


# Why a document was refused: a few stable codes a caller can act on (docs/formats.md, "Refusals").
REASONS: dict[str, str] = {
    "encrypted": "password required: the document is encrypted",
    "corrupt": "truncated, damaged or not the format it claims (fuzzer-made files land here)",
    "unsupported_format": "a format the server does not read (binary data, an unknown container)",
    "legacy_format": "an OLE container of no format the server reads (kept from before the list)",
    "too_large": "over a size or count limit (pages, pixels, bytes, entries, members, values)",
    "too_deep": "nested deeper than a limit (archives in archives, markup, recursion)",
    "bomb": "expands far beyond its size (a zip bomb, XML entity expansion)",
    "unsafe_xml": "XML that refers outside itself (external or parameter entities)",
    "timeout": "parsing or OCR took longer than its limit",
    "crashed": "the parser crashed on this document (it runs in a worker; the server is unharmed)",
    "out_of_memory": "the parser ran out of its memory limit on this document",
    "converter_missing": "LibreOffice, needed for this format, is not installed",
    "converter_timeout": "the LibreOffice conversion took longer than its limit",
    "converter_crashed": "LibreOffice crashed on this document",
    "ocr_missing": "Tesseract, needed to read this image, is not installed",
    "unavailable": "the parser pool was stopped or the call cancelled (retry)",
}


class ProcessingError(MCPServerError):
    code = "PROCESSING_ERROR"
    default_message = "Document could not be processed"
    default_reason = "corrupt"

    def __init__(self, message: str | None = None, **details: Any) -> None:
        if "reason" not in details:
            details["reason"] = "too_large" if "limit" in details else self.default_reason
        super().__init__(message, **details)


class UnsupportedFormatError(ProcessingError):
    default_message = "unsupported format"
    default_reason = "unsupported_format"


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
