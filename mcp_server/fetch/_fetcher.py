"""The downloader: one pooled httpx client, pinned addresses, hand-followed redirects,
retries, an overall deadline and a cap on decoded bytes; conditional GETs for cached copies,
the configured headers of private hosts (``_credentials``), and uploaded documents (``_uploads``).

Every failure leaves as ``DownloadError`` (or ``ValidationError`` for a malformed URL); httpx and
OS exceptions are translated in ``_translate`` and never escape.
"""

from __future__ import annotations

import functools
import logging
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

import anyio
import httpx

from mcp_server import metrics
from mcp_server.core.concurrency import off_loop
from mcp_server.core.errors import DownloadError, ValidationError
from mcp_server.core.models import FetchedDocument
from mcp_server.core.settings import Settings

from ._addresses import AddressPolicy, Target, display_url
from ._credentials import HostHeaders
from ._document import build_document, too_large
from ._local import read_local
from ._resolver import Resolver, SystemResolver
from ._retry import Retryable, parse_retry_after, with_retries
from ._uploads import DiskUploads, UploadStore, is_upload, store_upload, upload_key
from ._validate import is_local, validate_url

__all__ = ["Fetcher"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Everything httpx (or a transport) may raise while sending or streaming one request.
_LIBRARY_ERRORS = (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, httpx.CookieConflict, OSError)


@dataclass(frozen=True, slots=True)
class _Redirect:
    location: str


@dataclass(frozen=True, slots=True)
class _Body:
    data: bytes
    headers: httpx.Headers


@dataclass(frozen=True, slots=True)
class _NotModified:
    headers: httpx.Headers


def _conditional(cached: FetchedDocument | None) -> dict[str, str]:
    """The validators of a cached copy as request headers (RFC 9110 13.1); none, none sent."""
    headers: dict[str, str] = {}
    if cached is not None and cached.etag:
        headers["If-None-Match"] = cached.etag
    if cached is not None and cached.last_modified:
        headers["If-Modified-Since"] = cached.last_modified
    return headers


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _translate(exc: Exception, target: Target) -> Exception:
    """A library exception as Retryable (worth another attempt) or DownloadError (final)."""
    where = target.display
    detail = str(exc) or type(exc).__name__
    if _caused_by(exc, ssl.SSLCertVerificationError):
        return DownloadError(f"the TLS certificate of {target.host} could not be verified ({where})")
    if isinstance(exc, httpx.TimeoutException):
        return Retryable(f"timed out fetching {where} ({type(exc).__name__})")
    if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError | OSError):
        return Retryable(f"connection to {where} failed: {detail}")
    if isinstance(exc, httpx.DecodingError):
        return DownloadError(f"the response from {where} could not be decoded: {detail}")
    return DownloadError(f"fetching {where} failed: {type(exc).__name__}: {detail}")


class Fetcher:
    """Downloads documents safely; the server lifespan owns one and closes it.

    ``transport`` replaces the network (httpx.MockTransport in tests); ``resolver`` replaces DNS;
    ``uploads`` is where ``upload://`` documents are read (default: the ``upload_dir`` folder).
    """

    def __init__(
        self, settings: Settings, transport: httpx.AsyncBaseTransport | None = None,
        resolver: Resolver | None = None, uploads: UploadStore | None = None,
    ) -> None:
        self._settings = settings
        self._policy = AddressPolicy(settings)
        self._credentials = HostHeaders(settings)
        self.uploads: UploadStore = uploads or DiskUploads(settings)
        self._resolver: Resolver = resolver or SystemResolver()
        self._client = httpx.AsyncClient(
            transport=transport,
            trust_env=False,  # proxy variables must never route around the address pin (S6)
            follow_redirects=False,  # every hop is re-checked by hand
            # Requests go to the checked IP, so the pool is keyed by IP: a kept-alive TLS connection
            # verified for one hostname could serve another name on that IP unverified. Downloads
            # are cached, so a fresh connection per download costs little.
            limits=httpx.Limits(max_keepalive_connections=0),
            timeout=httpx.Timeout(
                connect=settings.connect_timeout, read=settings.read_timeout,
                write=settings.read_timeout, pool=settings.connect_timeout,
            ),
            headers={"User-Agent": settings.user_agent},
        )

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def store_upload(self, body: bytes, filename: str, content_type: str) -> FetchedDocument:
        """The bytes stored as an upload (``POST /documents``), read back by ``fetch`` as ``upload://``."""
        return await _off_loop(store_upload, self.uploads, body, filename, content_type)

    @metrics.timed("download")
    async def fetch(self, url: str, *, cached: FetchedDocument | None = None, max_bytes: int | None = None,
                    ) -> FetchedDocument:
        """The document at ``url`` (http/https, file:, an absolute path under DOCUMENT_ROOTS, or an
        upload). With ``cached`` (an earlier copy of an http(s) URL) the request is conditional:
        a 304 answers that copy, marked as confirmed now. ``max_bytes``: a tighter cap
        than ``max_download_bytes`` for this download (a web page's style sheet); never a looser one.

        Raises ValidationError for a malformed URL and DownloadError for everything else.
        """
        url = validate_url(url, self._settings)
        deadline = self._settings.download_deadline
        try:
            with anyio.fail_after(deadline):
                if is_upload(url):
                    return await self._uploaded(url)
                if is_local(url):
                    return await _off_loop(read_local, url, self._settings)
                limit = self._settings.max_download_bytes
                return await self._download(url, cached, min(max_bytes, limit) if max_bytes else limit)
        except TimeoutError:
            raise DownloadError(
                f"download of {url} did not finish within the {deadline:g} s deadline (download_deadline)",
                limit=deadline,
            ) from None

    async def _uploaded(self, url: str) -> FetchedDocument:
        key = upload_key(url)
        assert key is not None  # validate_url checked the form
        document = await _off_loop(self.uploads.get, key)
        if document is None:
            raise DownloadError(
                f"{url} is not stored: uploads are kept for {self._settings.upload_ttl:g} s (upload_ttl); "
                "upload the file again with POST /documents"
            )
        return document

    async def _download(self, url: str, cached: FetchedDocument | None, limit: int) -> FetchedDocument:
        try:
            current = httpx.URL(url).copy_with(fragment=None)
        except httpx.InvalidURL as exc:
            message = f"document_url is not a valid URL: {exc}"
            raise ValidationError(message, argument="document_url") from None
        seen = {str(current)}
        redirects = 0
        downgraded = False  # the chain went from https to http: no credentials from there on
        conditional = _conditional(cached)
        while True:
            target = await self._policy.pin(current, self._resolver)
            # per hop: a redirect to another host never carries this host's headers
            headers = {**self._credentials.for_hop(current, downgraded=downgraded), **conditional}
            try:
                result = await with_retries(
                    self._settings, target.display,
                    functools.partial(self._exchange, target, headers, bool(conditional), limit),
                )
            except Retryable as exc:
                attempts = self._settings.download_attempts
                raise DownloadError(f"{exc.message} (gave up after {attempts} attempts)") from exc
            if isinstance(result, _NotModified):
                assert cached is not None  # only a conditional request accepts a 304
                logger.info("fetch.not_modified", extra={"url": target.display})
                return cached.revalidated(at=time.time(), etag=result.headers.get("etag") or "",
                                          last_modified=result.headers.get("last-modified") or "")
            if isinstance(result, _Body):
                logger.info("fetch.complete", extra={"bytes": len(result.data), "url": target.display})
                metrics.bytes_downloaded(len(result.data))
                return build_document(
                    data=result.data, url=url, final_url=display_url(current), headers=result.headers
                )
            redirects += 1
            following = self._next_hop(current, result.location, seen, redirects)
            downgraded = downgraded or (current.scheme == "https" and following.scheme == "http")
            current = following

    def _next_hop(self, current: httpx.URL, location: str, seen: set[str], redirects: int) -> httpx.URL:
        where = display_url(current)
        limit = self._settings.max_redirects
        if redirects > limit:
            raise DownloadError(f"too many redirects from {where} (the limit is {limit}, max_redirects)")
        try:
            following = current.join(location).copy_with(fragment=None)
        except httpx.InvalidURL as exc:
            raise DownloadError(f"{where} redirected to an invalid URL: {exc}") from None
        if following.scheme not in ("http", "https"):
            raise DownloadError(f"refusing the redirect from {where} to a {following.scheme}: URL")
        if str(following) in seen:
            raise DownloadError(f"redirect loop: {where} leads back to {display_url(following)}")
        seen.add(str(following))
        return following

    async def _exchange(self, target: Target, headers: dict[str, str], conditional: bool, limit: int,
                        ) -> _Body | _Redirect | _NotModified:
        """One request to one pinned hop; ``headers`` may hold secrets: they go into the request only."""
        request = self._client.build_request(
            "GET", target.url, headers={**headers, "Host": target.host_header}, extensions=target.extensions
        )
        try:
            response = await self._client.send(request, stream=True)
        except _LIBRARY_ERRORS as exc:
            raise _translate(exc, target) from exc
        try:
            if conditional and response.status_code == 304:
                return _NotModified(response.headers)
            return await self._read(response, target, limit)
        except _LIBRARY_ERRORS as exc:
            raise _translate(exc, target) from exc
        finally:
            await response.aclose()

    async def _read(self, response: httpx.Response, target: Target, limit: int) -> _Body | _Redirect:
        status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        if response.is_redirect:
            if "location" not in response.headers:
                raise DownloadError(f"{status} for {target.display} without a Location header")
            return _Redirect(response.headers["location"])
        if response.status_code == 429 or response.status_code >= 500:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            raise Retryable(f"{status} for {target.display}", retry_after=retry_after)
        if not response.is_success:
            raise DownloadError(f"{status} for {target.display}", status=response.status_code)
        declared = response.headers.get("content-length", "")
        # Fail fast on an honest oversize body; the streamed count below is the real check.
        if declared.isdigit() and int(declared) > limit and "content-encoding" not in response.headers:
            raise too_large(target.display, limit)
        chunks: list[bytes] = []
        total = 0
        async for chunk in response.aiter_bytes():  # decoded: a gzip bomb is counted expanded
            total += len(chunk)
            if total > limit:
                raise too_large(target.display, limit)
            chunks.append(chunk)
        return _Body(b"".join(chunks), response.headers)


async def _off_loop(fn: Callable[..., T], *args: Any) -> T:
    """The fetcher's one thread hop: reading a local file, storing or reading an upload."""
    return await off_loop(fn, *args)
