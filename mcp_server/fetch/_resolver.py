"""Name resolution behind a one-method interface, so tests can pin answers without DNS.

The downloader resolves each hop exactly once through a ``Resolver``, checks every answer and
then connects to the checked address; it never lets httpx/httpcore resolve a name itself.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Mapping
from typing import Protocol

import anyio

from mcp_server.core.errors import DownloadError

__all__ = ["IPAddress", "Resolver", "StaticResolver", "SystemResolver"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Resolver(Protocol):
    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        """Every address ``host`` resolves to (raises DownloadError when it does not resolve)."""
        ...


def _unique(addresses: Iterable[IPAddress]) -> list[IPAddress]:
    return list(dict.fromkeys(addresses))


class SystemResolver:
    """The operating system's resolver (getaddrinfo) in a worker thread, off the event loop."""

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        try:
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise DownloadError(f"could not resolve host {host!r}: {exc}") from None
        # IPv6 link-local answers carry a zone ("fe80::1%eth0"); the zone does not change the verdict.
        answers = _unique(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos)
        if not answers:
            raise DownloadError(f"could not resolve host {host!r}: no addresses")
        return answers


class StaticResolver:
    """A fake resolver answering from a dict (tests); unknown names do not resolve.

    ``calls`` counts lookups so tests can prove a hop was resolved exactly once.
    """

    def __init__(self, answers: Mapping[str, str | Iterable[str]]) -> None:
        self._answers: dict[str, list[IPAddress]] = {}
        for name, value in answers.items():
            values = [value] if isinstance(value, str) else list(value)
            self._answers[name.lower()] = [ipaddress.ip_address(v) for v in values]
        self.calls: list[str] = []

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        self.calls.append(host)
        try:
            return list(self._answers[host.lower()])
        except KeyError:
            raise DownloadError(f"could not resolve host {host!r}") from None
