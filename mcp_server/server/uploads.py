"""POST /documents: a file's bytes in, ``{"document_url": "upload://<sha256>"}`` out.

The body is the file itself (raw, any Content-Type; ``?filename=`` or a Content-Disposition header
names it) or a multipart/form-data form with one file field (curl -F). The bytes are counted as
they arrive and refused beyond ``max_download_bytes`` (413), as a download would be; Content-Length
is not trusted. API keys are checked by the HTTP guard (``/documents`` is a keyed path), the rate
limiter counts an upload as one request of its caller. The stored upload is content-addressed: the
same bytes get the same URL, from any worker or host sharing the store.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from email.message import Message

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.types import Message as ASGIMessage

from mcp_server import metrics
from mcp_server.core.errors import RateLimitError
from mcp_server.middleware.http import client_identity
from mcp_server.tools.context import AppContext

__all__ = ["UPLOAD_PATH", "upload_endpoint"]

logger = logging.getLogger(__name__)

UPLOAD_PATH = "/documents"
# A multipart form carries boundaries and part headers besides the file; its file is checked again.
_FORM_OVERHEAD = 64 * 1024
_GENERIC_TYPES = ("application/octet-stream", "application/x-www-form-urlencoded", "")


def _error(status: int, code: str, message: str, **extra: object) -> JSONResponse:
    return JSONResponse({"error": message, "code": code, **extra}, status_code=status)


def _media_type(value: str | None) -> str:
    message = Message()
    message["content-type"] = value or ""
    return message.get_content_type().lower() if value else ""


def _disposition_name(value: str | None) -> str:
    if not value:
        return ""
    message = Message()
    message["content-disposition"] = value
    return message.get_filename() or ""


class _TooLarge(Exception):
    pass


async def _capped_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def _form_file(request: Request, body: bytes) -> tuple[bytes, str, str] | None:
    """(bytes, filename, content type) of the form's file field; None when it has none."""
    sent = False

    async def replay() -> ASGIMessage:  # the body was read (and counted) already
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    form = await Request(request.scope, replay).form(max_files=1, max_fields=16)
    try:
        for _, value in form.multi_items():
            if isinstance(value, UploadFile):
                return await value.read(), value.filename or "", value.content_type or ""
        return None
    finally:
        await form.close()


def upload_endpoint(context_of: Callable[[], AppContext | None]) -> Callable[[Request], Awaitable[JSONResponse]]:
    """The route handler; ``context_of`` answers the process's AppContext once the lifespan made it."""

    async def upload(request: Request) -> JSONResponse:
        context = context_of()
        if context is None:
            return _error(503, "STARTING", "the server is starting; try again in a moment")
        settings = context.settings
        try:
            await context.limiter.check(client_identity(request, settings))
        except RateLimitError as exc:
            metrics.upload_answered("refused")
            return JSONResponse(exc.to_dict(), status_code=429,
                                headers={"Retry-After": str(max(1, round(exc.details["retry_after"])))})
        # the download cap; and never more than the whole store holds (a larger upload could not be kept)
        limit = min(settings.max_download_bytes, settings.upload_store_max_bytes)
        setting = "max_download_bytes" if limit == settings.max_download_bytes else "upload_store_max_bytes"

        def too_large() -> JSONResponse:
            metrics.upload_answered("too_large")
            return _error(413, "TOO_LARGE", f"the document is larger than the upload limit of {limit} bytes "
                                            f"({setting})", limit=limit)
        media_type = _media_type(request.headers.get("content-type"))
        multipart = media_type == "multipart/form-data"
        try:
            body = await _capped_body(request, limit + (_FORM_OVERHEAD if multipart else 0))
        except _TooLarge:
            return too_large()
        except ClientDisconnect:
            return _error(400, "VALIDATION_ERROR", "the upload was cut off")
        filename = request.query_params.get("filename", "") or _disposition_name(
            request.headers.get("content-disposition"))
        if multipart:
            try:
                found = await _form_file(request, body)
            except (MultiPartException, HTTPException) as exc:  # a malformed form (the parser's own message)
                detail = exc.detail if isinstance(exc, HTTPException) else exc.message
                return _error(400, "VALIDATION_ERROR", f"the multipart form could not be read: {detail}")
            if found is None:
                return _error(400, "VALIDATION_ERROR", "the multipart form has no file field (curl -F file=@path)")
            body, part_name, media_type = found[0], found[1], _media_type(found[2])
            filename = filename or part_name
            if len(body) > limit:
                return too_large()
        if not body:
            return _error(400, "VALIDATION_ERROR", "the upload is empty: send the file's bytes as the body")
        name = filename.replace("\\", "/").rsplit("/", 1)[-1].strip()  # a name, never a path
        kind = "" if media_type in _GENERIC_TYPES else media_type
        try:
            document = await context.service.fetcher.store_upload(body, name, kind)
        except OSError as exc:  # the upload folder is full or not writable: the operator's problem, logged
            logger.error("upload.store_failed", extra={"error": f"{type(exc).__name__}: {exc.strerror or exc}"})
            return _error(503, "STORAGE_ERROR", "the upload could not be stored; try again later")
        metrics.upload_answered("stored")
        logger.info("upload.stored", extra={"upload": document.sha256[:16], "bytes": len(body),
                                            "client": client_identity(request, settings)})
        expires = datetime.fromtimestamp(document.fetched_at + settings.upload_ttl, UTC)
        return JSONResponse({
            "document_url": document.url, "content_sha256": document.sha256, "bytes": len(body),
            "filename": document.filename, "expires_at": expires.isoformat(timespec="seconds").replace("+00:00", "Z"),
        }, status_code=201)

    return upload
