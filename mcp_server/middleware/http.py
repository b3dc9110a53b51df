"""HTTP-level guards around the ASGI app (SECURITY.md §2).

- Host/Origin validation against DNS rebinding on every bind address (the SDK enables it only
  for localhost binds): bad Host -> 421, bad Origin -> 403. The SDK's own validator serves /mcp;
  this middleware applies the same settings to the plain endpoints.
- Bearer API keys on /mcp, /metrics and /documents (uploads) (constant-time compare, every key compared); /health stays
  open; a key in the query string is ignored.
"""

from __future__ import annotations

import hashlib
import hmac
import json

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_server.core.settings import Settings

__all__ = ["HTTPGuardMiddleware", "client_identity", "transport_security_settings"]

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
MCP_PATH = "/mcp"
KEYED_PATHS = (MCP_PATH, "/metrics", "/documents")


def transport_security_settings(settings: Settings) -> TransportSecuritySettings:
    """Allowed Host/Origin values: loopback names, the bind address, and the configured extras."""
    hosts = [f"{name}:*" for name in _LOOPBACK_HOSTS] + list(_LOOPBACK_HOSTS)
    origins = [f"http://{name}:*" for name in _LOOPBACK_HOSTS] + [f"http://{name}" for name in _LOOPBACK_HOSTS]
    bind = settings.host
    if bind not in ("0.0.0.0", "::", "", *_LOOPBACK_HOSTS, "::1"):
        bracketed = f"[{bind}]" if ":" in bind else bind
        hosts += [bracketed, f"{bracketed}:*"]
        origins += [f"http://{bracketed}:*", f"https://{bracketed}:*", f"http://{bracketed}",
                    f"https://{bracketed}"]
    hosts += settings.allowed_hosts
    origins += settings.allowed_origins
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def _bearer(conn: HTTPConnection) -> str | None:
    header = conn.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def key_matches(token: str, keys: list[str]) -> bool:
    """Compare against every key so timing says nothing about which (or whether one) matched."""
    supplied = hashlib.sha256(token.encode()).digest()
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(supplied, hashlib.sha256(key.encode()).digest())
    return matched


def client_identity(conn: HTTPConnection | None, settings: Settings) -> str:
    """Who a request counts against for rate limits: the API key when auth is on, else the peer."""
    if conn is None:
        return "stdio"
    if settings.api_keys:
        token = _bearer(conn)
        if token:
            return "key:" + hashlib.sha256(token.encode()).hexdigest()[:16]
    peer = conn.client.host if conn.client else "unknown"
    return f"ip:{peer}"


def _json(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps({"error": message, "code": code})
    return Response(body, status_code=status, media_type="application/json", headers=headers)


class HTTPGuardMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.rebinding = TransportSecurityMiddleware(transport_security_settings(settings))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        conn = Request(scope)  # the SDK validator takes a Request; headers are all it reads
        # Validate Host/Origin for every path (the SDK re-checks /mcp with the same settings).
        rejected = await self.rebinding.validate_request(conn, is_post=False)
        if rejected is not None:
            code = "MISDIRECTED_HOST" if rejected.status_code == 421 else "FORBIDDEN_ORIGIN"
            await _json(rejected.status_code, code, bytes(rejected.body).decode())(scope, receive, send)
            return
        if self.settings.api_keys and conn.url.path.rstrip("/").startswith(KEYED_PATHS):
            token = _bearer(conn)
            if token is None or not key_matches(token, self.settings.api_keys):
                response = _json(401, "UNAUTHORIZED", "Missing or invalid bearer token",
                                 headers={"WWW-Authenticate": 'Bearer realm="mcp"'})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
