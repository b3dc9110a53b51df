"""The SSRF guard: which addresses may be fetched, and pinning a URL to one checked address.

Every hop of a download goes through ``AddressPolicy.pin``: the host is resolved once (numeric
forms such as ``2130706433`` or ``0x7f.1`` are decoded here, never handed to a resolver), every
answer is checked, and the returned ``Target`` connects to the checked address while keeping
the original name for the Host header and TLS (SNI + certificate check).

Blocked unless allowlisted: loopback, 0/8, RFC 1918, 100.64/10, link-local (cloud metadata),
multicast, reserved, documentation and benchmark ranges, unique/site-local IPv6, and IPv6 forms
that embed one of those IPv4 addresses (mapped, NAT64, 6to4).
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from dataclasses import dataclass

import httpx

from mcp_server.core.errors import DownloadError
from mcp_server.core.settings import Settings

from ._resolver import IPAddress, Resolver

__all__ = ["AddressPolicy", "Target", "display_url", "is_blocked", "literal_address"]

logger = logging.getLogger(__name__)

# Listed explicitly (not only via ipaddress flags) because those flags change between Python
# releases and do not cover multicast as "not global".
_BLOCKED_NETWORKS = tuple(
    ipaddress.ip_network(cidr)
    for cidr in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16",
        "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
        "255.255.255.255/32",
        "::/128", "::1/128", "::/96", "100::/64", "2001::/32", "2001:db8::/32", "64:ff9b:1::/48",
        "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Characters of the numeric IPv4 spellings inet_aton accepts: 127.1, 2130706433, 0x7f.1, 0177.0.0.1.
_NUMERIC_HOST = re.compile(r"[0-9a-fA-FxX.]+")


def _unmapped(address: IPAddress) -> IPAddress:
    """``::ffff:a.b.c.d`` is the IPv4 address a.b.c.d on a dual-stack socket."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_blocked(address: IPAddress) -> bool:
    """True when ``address`` is not a public unicast address (before any allowlist)."""
    address = _unmapped(address)
    if isinstance(address, ipaddress.IPv6Address):
        if address in _NAT64:  # a translated IPv4 address: its verdict is the IPv4 one
            return is_blocked(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        if address.sixtofour is not None and is_blocked(address.sixtofour):
            return True
        if address.is_site_local:
            return True
    if any(address in network for network in _BLOCKED_NETWORKS):
        return True
    return (
        not address.is_global
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or address.is_loopback
        or address.is_link_local
    )


def literal_address(host: str) -> IPAddress | None:
    """The address a numeric host stands for (as getaddrinfo would read it), else None."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not _NUMERIC_HOST.fullmatch(host):
            return None
        try:
            # inet_aton is the parser getaddrinfo uses for the shorthand IPv4 forms.
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return _unmapped(address)


def display_url(url: httpx.URL) -> str:
    """The URL for messages and logs: without user:password."""
    return str(url.copy_with(userinfo=b"")) if url.userinfo else str(url)


@dataclass(frozen=True, slots=True)
class Target:
    """One hop, pinned: ``url`` has the checked address as host; the name stays for Host/SNI."""

    url: httpx.URL
    host: str
    host_header: str
    address: IPAddress
    display: str

    @property
    def extensions(self) -> dict[str, str]:
        # httpcore verifies the certificate against sni_hostname, not the address in the URL.
        return {"sni_hostname": self.host} if self.url.scheme == "https" else {}


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class AddressPolicy:
    """Applies the scheme, port and address rules of one Settings object."""

    def __init__(self, settings: Settings) -> None:
        self._names: set[str] = set()
        self._networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in settings.fetch_allowlist:
            try:
                self._networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                self._names.add(entry.lower().rstrip("."))
        try:
            self._ports = {int(port) for port in settings.allowed_ports}
        except ValueError:
            raise DownloadError(f"allowed_ports must be integers, got {settings.allowed_ports}") from None

    def allows(self, host: str, address: IPAddress) -> bool:
        """True when ``address`` may be fetched: public, or named by the allowlist."""
        if not is_blocked(address):
            return True
        if host.lower().rstrip(".") in self._names:
            return True
        return any(address.version == net.version and address in net for net in self._networks)

    async def pin(self, url: httpx.URL, resolver: Resolver) -> Target:
        """Check one hop and return where to connect; DownloadError when it is refused."""
        display = display_url(url)
        if url.scheme not in ("http", "https"):
            raise DownloadError(f"refusing to fetch {display}: only http and https URLs are fetched")
        host = url.raw_host.decode("ascii")
        if not host:
            raise DownloadError(f"refusing to fetch {display}: the URL has no host")
        port = url.port or (443 if url.scheme == "https" else 80)
        if self._ports and port not in self._ports:
            raise DownloadError(f"refusing to fetch {display}: port {port} is not in allowed_ports")
        literal = literal_address(host)
        if literal is not None:
            answers = [literal]
        else:
            answers = [_unmapped(answer) for answer in await resolver.resolve(host, port)]
        if not answers:
            raise DownloadError(f"could not resolve host {host!r}")
        # Every answer must pass: checking only the first would let a second, private answer win
        # whenever the client library retried the connection on it.
        for answer in answers:
            if not self.allows(host, answer):
                logger.warning("fetch.blocked_address", extra={"url": display, "address": str(answer)})
                raise DownloadError(
                    f"refusing to fetch {display}: the host resolves to a private, loopback, "
                    "link-local or reserved address (an operator may add it to fetch_allowlist)"
                )
        address = answers[0]
        host_header = _bracketed(host) if url.port is None else f"{_bracketed(host)}:{url.port}"
        return Target(
            url=url.copy_with(host=str(address)),
            host=host,
            host_header=host_header,
            address=address,
            display=display,
        )
