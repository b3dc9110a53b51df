"""Headers for private hosts (``fetch_headers``): which hop gets which headers.

A rule's key is ``host``, ``host:port`` or ``*.suffix`` (any subdomain of suffix, not suffix
itself), each with an optional port; the most specific matching rule wins: an exact host with the
hop's port, then the exact host, then the longest suffix (with the port before without). Headers
are looked up per hop, so a redirect to another host never carries the first host's headers (as
curl drops credentials); once a redirect chain has gone from https to http none are sent at all,
so a token never travels in clear text because a server redirected it there. The values are secrets: this
module hands them only to the request it builds; nothing here logs them.
"""

from __future__ import annotations

import httpx
from pydantic import SecretStr

from mcp_server.core.settings import Settings

__all__ = ["HostHeaders"]


class HostHeaders:
    def __init__(self, settings: Settings) -> None:
        self._exact: dict[str, dict[str, SecretStr]] = {}
        self._suffixes: list[tuple[str, dict[str, SecretStr]]] = []
        for key, headers in settings.fetch_headers.items():
            if key.startswith("*."):
                self._suffixes.append((key[1:], headers))  # ".example.com" or ".example.com:8443"
            else:
                self._exact[key] = headers
        self._suffixes.sort(key=lambda rule: len(rule[0]), reverse=True)

    def __bool__(self) -> bool:
        return bool(self._exact or self._suffixes)

    def __repr__(self) -> str:
        return f"HostHeaders({len(self._exact) + len(self._suffixes)} rules)"

    def _rule(self, host: str, port: int) -> dict[str, SecretStr] | None:
        for candidate in (f"{host}:{port}", host):
            if candidate in self._exact:
                return self._exact[candidate]
        for suffix, headers in self._suffixes:
            pattern, _, rule_port = suffix.partition(":")
            if host.endswith(pattern) and len(host) > len(pattern) and rule_port in ("", str(port)):
                return headers
        return None

    def for_hop(self, url: httpx.URL, *, downgraded: bool = False) -> dict[str, str]:
        """The headers for a request to ``url``; ``downgraded``: the redirect chain went from https to
        http at some hop before or at this one (then nothing, to any host, for the rest of the chain)."""
        if downgraded:
            return {}
        host = url.raw_host.decode("ascii").lower().rstrip(".")
        if ":" in host:
            host = f"[{host}]"
        port = url.port or (443 if url.scheme == "https" else 80)
        rule = self._rule(host, port)
        if rule is None:
            return {}
        return {name: value.get_secret_value() for name, value in rule.items()}
